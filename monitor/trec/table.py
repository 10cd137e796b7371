"""trec_eval's measures by name: their parameters, how each is printed, and `-m` parsing.

`TABLE` lists every measure `rankmon eval` knows in trec_eval 10.0's table order (measures.c),
which is the order trec_eval computes and prints them in, whatever order `-m` named them.
`-m NAME.PARAMS` splits at the first dot: `P.5,7,3`, `iprec_at_recall..10,.5`,
`ndcg.1=3,2=9`, `utility.2,-1,0,0`. What the parameters are depends on the measure:

| kind        | measures                            | parameters         | value names        |
|-------------|-------------------------------------|--------------------|--------------------|
| `cutoffs`   | P, recall, ndcg_cut, success, ...   | ranks, sorted      | `P_5`, `P_10`      |
| `fractions` | iprec_at_recall, Rprec_mult         | numbers, sorted    | `Rprec_mult_0.20`  |
| `numbers`   | utility, 11pt_avg, set_F, relstring | numbers, as given  | `utility_2,-1,0,0` |
| `pairs`     | ndcg, G, Rndcg, rbp, ...            | `level=gain`, `p=` | `ndcg_1=3,2=9`     |

A measure given without parameters takes trec_eval's defaults and its bare name (`utility`,
`ndcg`); with parameters the name carries them as typed. Ranks are read as C's `atol` reads
them (`23.4` is 23), numbers as `atof`. The groups `official`, `all_trec` and `set` are
trec_eval's; `all_rankmon` (rankmon's default) is every measure the streaming monitor also
computes. The preference and judgment-group measures need other judgment files (`-R
qrels_prefs`, `-R qrels_jg`) and are refused by name.

rankmon's own names, as alert rules, comparisons and the API write them (`ndcg@10`,
`precision@5`, `recall@10`, `mrr`, `rprec`: `monitor.scoring.catalog.MeasureKey`), name the
trec_eval measure they are (`ndcg_cut.10`, `P.5`, `recall.10`, `recip_rank`, `Rprec`); an
unknown name is refused with the closest known one suggested.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from monitor.errors import MeasureError
from monitor.scoring.catalog import KINDS, OWN_FAMILY_KINDS, TREC_FAMILY_KINDS, MeasureKey
from monitor.scoring.families import MIN_GEO_MEAN, Params, is_integer_name

__all__ = [
    "ALL_RANKMON",
    "GROUPS",
    "MIN_GEO_MEAN",
    "TABLE",
    "Params",
    "Requested",
    "TrecMeasure",
    "check_own_names",
    "is_integer_name",
    "rankmon_names",
    "request_measures",
    "trec_names",
]

ParamKind = Literal["none", "cutoffs", "fractions", "numbers", "pairs"]
# How the `all` line combines the queries: the mean, the total (counts), the geometric mean
# (gm_map, gm_bpref), or no summary line at all (relstring).
Summary = Literal["mean", "total", "geometric", "none"]
# "monitor": computed by the streaming monitor's engine (`monitor.scoring`); "trec": by
# `monitor.scoring.families`; "meta": runid and num_q.
Engine = Literal["monitor", "trec", "meta"]

ALL_RANKMON: Final = "all_rankmon"

_RANKS: Final = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# A cutoff is a rank: past int32 no run has it, and as a float it would no longer be exact.
MAX_CUTOFF: Final = 2**31 - 1
_TENTHS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class TrecMeasure:
    """One row of trec_eval's measure table.

    `engine`: "meta" for runid and num_q; otherwise "monitor" when a measure kind of
    `monitor.scoring.catalog.KIND_TABLE` computes it (its trec_eval family), else "trec"
    (`monitor.scoring.families`). Derived from the name, never written in a row.
    """

    name: str
    params: ParamKind = "none"
    defaults: tuple[float, ...] = ()
    summary: Summary = "mean"
    per_query: bool = True  # printed for each query with -q (gm_map, num_q: summary only)
    meta: bool = False
    count: bool = False  # an integer, printed as one (num_ret, num_nonrel_judged_ret, ...)
    keyed: bool = False  # a measure trec_eval lacks, named by its key (`rbp@10:p=0.8`)

    @property
    def engine(self) -> Engine:
        """Which engine computes it (the class docstring)."""
        if self.meta:
            return "meta"
        monitor = self.keyed or self.name in TREC_FAMILY_KINDS or self.name in OWN_FAMILY_KINDS
        return "monitor" if monitor else "trec"


def _cut(name: str, defaults: tuple[int, ...] = _RANKS) -> TrecMeasure:
    return TrecMeasure(name, "cutoffs", tuple(float(k) for k in defaults))


def _count(name: str) -> TrecMeasure:
    return TrecMeasure(name, summary="total", count=True)


def _pairs(name: str) -> TrecMeasure:
    return TrecMeasure(name, "pairs")


TABLE: Final[tuple[TrecMeasure, ...]] = (
    TrecMeasure("runid", summary="none", per_query=False, meta=True),
    TrecMeasure("num_q", summary="total", per_query=False, meta=True, count=True),
    _count("num_ret"),
    _count("num_rel"),
    _count("num_rel_ret"),
    TrecMeasure("map"),
    TrecMeasure("gm_map", summary="geometric", per_query=False),
    TrecMeasure("Rprec"),
    TrecMeasure("bpref"),
    TrecMeasure("recip_rank"),
    TrecMeasure("iprec_at_recall", "fractions", _TENTHS),
    _cut("P"),
    TrecMeasure("relstring", "numbers", (10.0,), summary="none"),
    _cut("recall"),
    TrecMeasure("infAP"),
    TrecMeasure("gm_bpref", summary="geometric", per_query=False),
    TrecMeasure("Rprec_mult", "fractions", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
    TrecMeasure("utility", "numbers", (1.0, -1.0, 0.0, 0.0)),
    TrecMeasure("11pt_avg", "numbers", _TENTHS),
    TrecMeasure("binG"),
    _pairs("G"),
    _pairs("dcg"),
    _pairs("ideal_dcg"),
    _pairs("ndcg"),
    _pairs("ndcg_rel"),
    _pairs("Rndcg"),
    _cut("ndcg_cut"),
    _cut("map_cut"),
    _cut("relative_P"),
    _cut("success", (1, 5, 10)),
    TrecMeasure("set_P"),
    TrecMeasure("set_relative_P"),
    TrecMeasure("set_recall"),
    TrecMeasure("set_map"),
    TrecMeasure("set_F", "numbers", (1.0,)),
    _count("num_nonrel_judged_ret"),
    TrecMeasure("yaap"),
    _pairs("rbp"),
    _pairs("rbp_resid"),
    _cut("unj", (5, 10, 20)),
    # rankmon's own, after trec_eval's: the bounds of nDCG@k for unjudged documents
    # (docs/metrics.md, "Bounds"), printed under their own names.
    *(_cut(name, (5, 10, 20)) for name in OWN_FAMILY_KINDS),
)
_BY_NAME: Final = {measure.name: measure for measure in TABLE}


def check_own_names(rows: Sequence[TrecMeasure]) -> None:
    """A `MeasureError` when two rows of the table share a name: a kind's own family
    (rankmon eval's name of a measure trec_eval lacks, appended to trec_eval's rows) that is
    a trec_eval measure's name would take that measure's place unseen (a contributor's `rbp`
    kind once shadowed trec_eval's rbp family, found only by four conformance failures)."""
    seen: set[str] = set()
    for row in rows:
        if row.name in seen:
            raise MeasureError(
                f"the measure {row.name!r} is named twice: a kind's own family is trec_eval's "
                f"measure of that name; give the kind's another"
            )
        seen.add(row.name)


check_own_names(TABLE)  # at import
_POSITION: Final = {measure.name: position for position, measure in enumerate(TABLE)}

# Every group starts with these (the order within a group does not matter: printing follows
# the table).
_HEAD: Final = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret")
_OFFICIAL: Final = (*_HEAD, "map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P")
_SET: Final = ("utility", "set_P", "set_recall", "set_relative_P", "set_map", "set_F")
GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "official": _OFFICIAL,
    "all_trec": (
        *_OFFICIAL,
        *("relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "11pt_avg"),
        *("ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel"),
        *("Rndcg", "binG", "G", *_SET, "num_nonrel_judged_ret"),
    ),
    "set": (*_HEAD, *_SET),
    ALL_RANKMON: (*_HEAD, *TREC_FAMILY_KINDS),
}
# trec_eval measures and groups that read judgments rankmon does not (-R qrels_prefs, qrels_jg).
_OTHER_JUDGMENTS: Final = re.compile(r"prefs_\w+|all_prefs|prefs|qrels_jg|\w+_avgjg")
_LEADING_INTEGER: Final = re.compile(r"\s*[+-]?[0-9]*")
_LEADING_NUMBER: Final = re.compile(
    r"\s*[+-]?(?:inf(?:inity)?|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)?",
    re.IGNORECASE,
)
_UNDERSCORE_CUTOFFS: Final = re.compile(r"(?P<name>[A-Za-z_]+?)_(?P<params>[0-9][0-9,]*)")


@dataclass(frozen=True)
class Requested:
    """One measure to compute, with its parameters and the names of its values."""

    measure: TrecMeasure
    params: Params
    value_names: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.measure.name


def trec_names() -> list[str]:
    """trec_eval's measure names, in its table order, runid and num_q last."""
    return [m.name for m in TABLE if not m.meta] + [m.name for m in reversed(TABLE) if m.meta]


def rankmon_names() -> list[str]:
    """rankmon's names of the trec_eval measures its kinds compute, each with an example
    cutoff and, where it differs, trec_eval's name: `ndcg@10 (ndcg_cut.10)`, `mrr
    (recip_rank)`."""
    names = []
    for kind in KINDS.values():
        if kind.trec_family is not None and kind.cutoff is not False:
            same = kind.trec_family == kind.name
            names.append(f"{kind.name}@10" + ("" if same else f" ({kind.trec_family}.10)"))
        elif kind.trec_whole is not None:
            same = kind.trec_whole == kind.name
            names.append(kind.name + ("" if same else f" ({kind.trec_whole})"))
    for family, kind_name in OWN_FAMILY_KINDS.items():
        names.append(f"{kind_name}@10 ({family}.10, rankmon's own)")
    return names


def request_measures(arguments: Sequence[str]) -> tuple[Requested, ...]:
    """Parse `-m` arguments into the measures to compute, in trec_eval's table order.

    A measure named twice is computed once, with the parameters of the first `-m` that gave
    any (as trec_eval does); rankmon's names add their cutoffs to them (`-m ndcg@5 -m
    ndcg@10`, `-m P.5 -m precision@10`). Unknown names and bad parameters raise
    `MeasureError`.
    """
    marked: set[str] = set()
    given: dict[str, str] = {}
    cutoffs: dict[str, list[str]] = {}  # rankmon's names: `-m ndcg@5 -m ndcg@10` asks for both
    keyed: dict[str, None] = {}  # measures trec_eval lacks, by their keys (`rbp@10:p=0.8`)
    for argument in map(_trec_argument, arguments):
        key = _stream_only_key(argument.strip())
        if key is not None:
            keyed.setdefault(key)
            continue
        named = _rankmon_name(argument.strip())
        name, params = named if named is not None else _split(argument)
        names = _names_of(name, params, argument)
        marked.update(names)
        if named is not None and params is not None:
            if params not in cutoffs.setdefault(name, []):
                cutoffs[name].append(params)
        elif params is not None and len(names) == 1:
            given.setdefault(names[0], params)
    for name, ks in cutoffs.items():
        trec = given.get(name)
        written = [] if trec is None else [trec]
        more = [k for k in ks if trec is None or k not in trec.split(",")]
        given[name] = ",".join([*written, *more])
    ordered = sorted(marked, key=_POSITION.__getitem__)
    requested = [_requested(_BY_NAME[name], given.get(name)) for name in ordered]
    # After trec_eval's, in the order given: printed under their keys.
    requested += [Requested(TrecMeasure(key, keyed=True), Params(), (key,)) for key in keyed]
    return tuple(requested)


def _trec_argument(argument: str) -> str:
    """A key of a kind trec_eval's family provides (`set_F:beta=0.5`, `relative_P@10`) as
    trec_eval's `-m` argument (`set_F.0.5`, `relative_P.10`): computed by the family with
    trec_eval's every convention (`-c`, `-J`, `-N`), printed under trec_eval's names; any
    other argument as given."""
    text = argument.strip()
    name = text.partition(":")[0]
    kind = KINDS.get(name.partition("@")[0])
    if kind is None or kind.family is None or not {"@", ":"} & set(text) or "." in name:
        return argument  # trec_eval's own form: `set_F`, `set_F.0.5`, `relative_P_5`
    return MeasureKey.parse(argument).trec_argument or argument


def _stream_only_key(text: str) -> str | None:
    """The key of a measure only rankmon's table has, with no trec_eval name (`rbp@10`,
    `rbp@10:p=0.8`, `err@20`), named as the stream names it; None for any other name."""
    head = text.partition(":")[0]
    name = head.partition("@")[0]
    kind = KINDS.get(name)
    if kind is None or kind.trec_family or kind.trec_whole or kind.own_family:
        return None
    if head == name and ":" not in text and name in _BY_NAME:
        return None  # trec_eval's measure of that name (`dcg`: its gain-pairs family)
    return str(MeasureKey.parse(text))


def _split(argument: str) -> tuple[str, str | None]:
    text = argument.strip()
    name, dot, params = text.partition(".")
    if dot:
        if not params:
            raise MeasureError(f"measure {argument!r}: nothing after the '.'")
        return name, params
    underscored = _UNDERSCORE_CUTOFFS.fullmatch(text)  # rankmon also reads P_5, ndcg_cut_10
    if underscored and _BY_NAME.get(underscored["name"], _BY_NAME["runid"]).params == "cutoffs":
        return underscored["name"], underscored["params"]
    return text, None


def _rankmon_name(text: str) -> tuple[str, str | None] | None:
    """rankmon's name of a measure (`ndcg@10`, `mrr`) as trec_eval's name and parameters
    (`ndcg_cut`, `10`; `recip_rank`, None); None when `text` is no rankmon name other than a
    trec_eval one (`map`, `ndcg` and `num_ret` are both)."""
    name, at, k = text.partition("@")
    kind = KINDS.get(name.partition(":")[0])
    if kind is None or (not at and ":" not in text and name in _BY_NAME):
        return None
    if ":" in text:
        bare = text.partition(":")[0]
        raise MeasureError(
            f"measure {text!r}: the gain is the --gain option's (-m {bare} --gain "
            f"{text.partition(':')[2]})"
        )
    if at:
        family = kind.trec_family or kind.own_family
        if family is None:
            raise MeasureError(f"measure {text!r} is rankmon's own: trec_eval has no such measure")
        if not k.isdigit():
            raise MeasureError(f"measure {text!r}: the cutoff after '@' must be a whole number")
        return family, k
    if kind.trec_whole is None:
        example = f"{name}@10" if kind.trec_family is not None else None
        needs = f"needs a cutoff, e.g. {example}" if example else "has no trec_eval measure"
        raise MeasureError(f"measure {text!r} {needs}")
    return kind.trec_whole, None


def _names_of(name: str, params: str | None, argument: str) -> tuple[str, ...]:
    if name in GROUPS:
        if params is not None:
            raise MeasureError(f"measure group {name!r} takes no parameters (got {argument!r})")
        return GROUPS[name]
    if name in _BY_NAME:
        if params is not None and _BY_NAME[name].params == "none":
            raise MeasureError(f"trec_eval measure {name!r} takes no parameters")
        return (name,)
    if _OTHER_JUDGMENTS.fullmatch(name):
        raise MeasureError(
            f"measure {name!r} needs preference or judgment-group files (trec_eval -R "
            "qrels_prefs / qrels_jg), which rankmon does not read"
        )
    close = difflib.get_close_matches(name, [*GROUPS, *_BY_NAME, *KINDS], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    known = ", ".join([*GROUPS, *_BY_NAME])
    raise MeasureError(
        f"unknown measure {argument!r}{hint} (rankmon's names work too: ndcg@10, "
        f"precision@5, recall@10, mrr, map, rprec): known are {known}"
    )


def _requested(measure: TrecMeasure, text: str | None) -> Requested:
    try:
        return _with_params(measure, text)
    except MeasureError as error:
        shown = measure.name if text is None else f"{measure.name}.{text}"
        raise MeasureError(f"-m {shown}: {error}") from None


def _with_params(measure: TrecMeasure, text: str | None) -> Requested:
    kind = measure.params
    if kind == "none":
        return Requested(measure, Params(), (measure.name,))
    if text is None:
        params = Params(measure.defaults)
    elif kind == "pairs":
        params = Params(pairs=_pairs_of(measure.name, text), text=text)
    else:
        read = _atol if kind == "cutoffs" else _atof
        params = Params(tuple(read(part) for part in text.split(",")), text=text)
    if kind == "cutoffs":
        numbers = _sorted_unique(measure.name, params.numbers)
        if numbers[0] <= 0 or numbers[-1] > MAX_CUTOFF:
            raise MeasureError(f"cutoffs must be whole numbers from 1 to {MAX_CUTOFF}")
        params = Params(numbers, text=params.text)
        return Requested(measure, params, tuple(f"{measure.name}_{int(k)}" for k in numbers))
    if kind == "fractions":
        numbers = _sorted_unique(measure.name, params.numbers)
        params = Params(numbers, text=params.text)
        return Requested(measure, params, tuple(f"{measure.name}_{v:3.2f}" for v in numbers))
    _check_numbers(measure.name, params)
    shown = measure.name if params.text is None else f"{measure.name}_{params.text}"
    return Requested(measure, params, (shown,))


def _sorted_unique(name: str, numbers: tuple[float, ...]) -> tuple[float, ...]:
    ordered = tuple(sorted(numbers))
    if len(set(ordered)) != len(ordered):
        raise MeasureError("a cutoff is given twice")
    return ordered


def _check_numbers(name: str, params: Params) -> None:
    if name == "utility" and len(params.numbers) != 4:
        raise MeasureError(f"utility takes 4 coefficients, got {len(params.numbers)}")
    if name == "11pt_avg" and not params.numbers:
        raise MeasureError("11pt_avg needs at least one recall level")


def _pairs_of(name: str, text: str) -> tuple[tuple[str, float], ...]:
    pairs: list[tuple[str, float]] = []
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals or not key or "=" in value:
            raise MeasureError(f"{name}'s parameters are name=value pairs, e.g. 1=3,2=9")
        pairs.append((key, _atof(value)))
    return tuple(pairs)


def _atol(text: str) -> float:
    """C's atol: the leading integer of `text`, 0 if none (trec_eval reads 23.4 as 23)."""
    digits = _LEADING_INTEGER.match(text)
    body = digits.group().strip() if digits else ""
    return float(int(body)) if body.lstrip("+-") else 0.0


def _atof(text: str) -> float:
    """C's atof: the leading decimal number of `text`, 0.0 if none."""
    number = _LEADING_NUMBER.match(text)
    body = number.group().strip() if number else ""
    try:
        return float(body) if body.lstrip("+-") else 0.0
    except ValueError:
        return 0.0
