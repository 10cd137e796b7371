"""Measure keys, and trec_eval's names for them.

A `MeasureKey` names one measure as rankmon computes it; its `str()` is the key used in window
summaries, alert rules and Prometheus labels:

| key              | trec_eval      | meaning                                      |
|------------------|----------------|----------------------------------------------|
| `ndcg@10:linear` | `ndcg_cut_10`  | nDCG cut at 10 with the named gain           |
| `ndcg:exp`       | `ndcg`         | nDCG without cutoff                          |
| `ndcg_condensed@10:linear` | -    | nDCG@10 of the ranking without its unjudged documents |
| `ndcg_lower@10:linear` | -        | the least nDCG@10 any grading of its unjudged top 10 gives |
| `ndcg_upper@10:linear` | -        | the most nDCG@10 any grading of its unjudged top 10 gives |
| `dcg@10:linear`  | -              | DCG cut at 10                                |
| `precision@5`    | `P_5`          | precision at 5                               |
| `recall@10`      | `recall_10`    | recall at 10                                 |
| `judged@10`      | -              | share of the top 10 that is judged           |
| `mrr`            | `recip_rank`   | reciprocal rank (its mean is the MRR)        |
| `map`            | `map`          | average precision (its mean is the MAP)      |
| `map_cut@10`     | `map_cut_10`   | average precision of the first 10            |
| `success@10`     | `success_10`   | 1 if a relevant document is in the top 10    |
| `rprec`          | `Rprec`        | precision at rank R (R: relevant documents)  |
| `num_ret`, `num_rel`, `num_rel_ret` | same | counts; trec_eval sums them over queries |

trec_eval's `-m` names are parsed by `monitor.trec.table` (the one parser of measure names on
the command line, rankmon's names included); `TREC_FAMILY_KINDS` says which kind computes
each trec_eval family.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from monitor.errors import MeasureError
from monitor.scoring.columns import (
    Columns,
    IdcgZero,
    IdealSpec,
    TopSpec,
    average_precision,
    average_precision_cut,
    dcg,
    expected_reciprocal_rank,
    judged,
    ndcg,
    ndcg_condensed,
    ndcg_lower,
    ndcg_upper,
    num_rel,
    num_rel_ret,
    num_ret,
    precision,
    r_precision,
    rank_biased_precision,
    rbp_residual,
    recall,
    reciprocal_rank,
    success,
)
from monitor.scoring.gain import LINEAR, Gain
from monitor.scoring.providers import Numbers, family_columns

__all__ = [
    "EXPORTED_KINDS",
    "KINDS",
    "KIND_TABLE",
    "MEASURE_NAMES",
    "OWN_FAMILY_KINDS",
    "TREC_DEFAULT_CUTOFFS",
    "TREC_FAMILY_KINDS",
    "IdcgZero",
    "MeasureKey",
    "MeasureKind",
    "Param",
    "head_depth",
    "ideal_specs",
    "kind_named",
    "lookup_depth",
    "measure_names",
    "monitor_keys",
    "reads_counts",
    "resolve_key",
    "top_spec",
]


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter a measure kind declares besides its cutoff and gain (RBP's persistence
    `p`): its default, the closed range it must lie in, and what it means. A key carries every
    parameter of its kind, the default where none was written; its name prints each
    (`rbp@10:p=0.8`) and its series carries each as a label."""

    name: str
    default: float
    low: float
    high: float
    doc: str

    def check(self, value: float, kind: str) -> float:
        if not self.low <= value <= self.high:
            raise MeasureError(
                f"measure {kind!r}: {self.name} must be in [{self.low:g}, {self.high:g}] "
                f"({self.doc}), got {value:g}"
            )
        return float(value)


@dataclass(frozen=True, slots=True)
class MeasureKind:
    """One measure kind: the one row every path derives from (see `KIND_TABLE`).

    `cutoff`: True needs one (`precision@5`), False takes none (`mrr`), None either (`ndcg`
    and `ndcg@10` are both trec_eval measures). `gain`: takes a gain rule (nDCG, DCG).
    `columns`: its function in the numpy engine (`monitor.scoring.columns`), which every kind
    has. `code`: its number in the C kernel's enum (`monitor/scoring/measure_kernel.h`,
    checked by tests/unit/test_measure_kinds.py); None: no C case, the numpy function computes it
    on the C path too. `trec_family`: trec_eval's name of the measure with a cutoff
    (`ndcg_cut`: `ndcg_cut_10`), `trec_whole`: without one (`ndcg`, `recip_rank`); a kind
    with either computes those trec_eval measures in `rankmon eval`. `own_family`: the name
    `rankmon eval` gives a measure trec_eval does not have, with a cutoff, in trec_eval's
    style (`ndcg_upper`: `-m ndcg_upper.10`, printed `ndcg_upper_10`).
    `ideal`: divides by the query's ideal DCG at its gain and cutoff. `top`: reads the
    query's k highest gains (`QueryIdeals.top`: for an ideal that depends on the ranking).
    `full_ranking`: without
    a cutoff its value depends on documents below the deepest cutoff; `past_cutoff`: even
    with one (a condensed list skips unjudged documents): both make the fast path look at the
    whole ranking. `stream`: the monitor computes it for every event (per configured gain and
    cutoff where it takes them). `gauge`: exported as `rankmon_<name>` (and
    `rankmon_<name>_sum_of_query_means`) with this help text; None: window summaries only.
    `quality`: alert rules (below, drop, trend) may watch it. `headline`: in the log line of
    each finalized window. `family`: trec_eval's family that computes it (below).
    """

    name: str
    cutoff: bool | None
    gain: bool
    columns: Columns
    code: int | None = None
    trec_family: str | None = None
    trec_whole: str | None = None
    own_family: str | None = None
    ideal: bool = False
    top: bool = False
    full_ranking: bool = False
    past_cutoff: bool = False
    stream: bool = False
    gauge: str | None = None
    quality: bool = False
    headline: bool = False
    params: tuple[Param, ...] = ()
    # For a kind with `params`: the numpy module's function making its columns for given
    # values (`columns` is what it makes of the defaults).
    make_columns: Callable[[Mapping[str, float]], Columns] | None = None
    # trec_eval's family that provides it (`monitor.scoring.providers`): its name is the
    # family's, and it reads each query's grade counts (`QueryIdeals.counts`).
    family: str | None = None
    # Its key's parameters -> the family's numbers (what `-m FAMILY.NUMBERS` gives it).
    family_numbers: Numbers | None = None

    @property
    def metric(self) -> str:
        """Its name in series names (`rankmon_<metric>`, `job:rankmon_<metric>:mean`):
        trec_eval's names are mixed case (`infAP`, `set_P`), Prometheus' are lower case."""
        return self.name.lower()

    def columns_for(self, params: Mapping[str, float]) -> Columns:
        """The numpy function computing this kind with `params` (the key's)."""
        if self.make_columns is None or not params:
            return self.columns
        return self.make_columns(params)


_MEAN = "of the latest finalized window (mean of per-query means)."
_TENTHS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _provided(
    name: str,
    cutoff: bool,
    meaning: str,
    params: tuple[Param, ...] = (),
    numbers: Numbers | None = None,
    *,
    quality: bool = True,
) -> MeasureKind:
    """A kind trec_eval's family `name` computes (`monitor.scoring.providers`), named as
    trec_eval names it; streamed when `metrics.measures` names it."""
    make = family_columns(name, numbers)
    return MeasureKind(
        name, cutoff, False, make({p.name: p.default for p in params}),
        params=params, make_columns=make if params else None, family=name,
        family_numbers=numbers if params else None,
        full_ranking=True, past_cutoff=True, quality=quality,
        gauge=f"{meaning} (trec_eval's {name}) {_MEAN}",
    )  # fmt: skip


def _param(name: str, default: float, low: float, high: float, doc: str) -> Param:
    return Param(name, default, low, high, doc)


_COEFFICIENT = 1e9  # utility's coefficients: any the float of a rule may hold
_UTILITY: Final = tuple(
    _param(name, default, -_COEFFICIENT, _COEFFICIENT, f"utility's coefficient of {what}")
    for name, default, what in (
        ("rel_ret", 1.0, "relevant retrieved documents"),
        ("nonrel_ret", -1.0, "nonrelevant retrieved documents"),
        ("rel_missed", 0.0, "relevant documents not retrieved"),
        ("nonrel_missed", 0.0, "nonrelevant documents not retrieved (the collection size is 0)"),
    )
)
_PERSISTENCE: Final = Param("p", 0.8, 0.0, 1.0, "RBP's persistence: the chance a reader goes on")
_MAX_GRADE: Final = Param(
    "max_grade", 4.0, 1.0, 30.0, "ERR's highest grade: a document of it stops the reader"
)

# The measure kinds, in the order the stream computes and exports them. Adding one: a row
# here and its numpy function in `columns.py` (docs/ARCHITECTURE.md, "Add a measure").
KIND_TABLE: Final = (
    MeasureKind(
        "ndcg", None, True, ndcg, code=0, trec_family="ndcg_cut", trec_whole="ndcg",
        ideal=True, full_ranking=True, stream=True, quality=True, headline=True,
        gauge="nDCG@k of the latest finalized window: mean over queries of each query's mean.",
    ),
    MeasureKind("dcg", True, True, dcg, code=1),
    MeasureKind(
        "precision", True, False, precision, code=2, trec_family="P",
        stream=True, quality=True, gauge=f"Precision@k {_MEAN}",
    ),
    MeasureKind(
        "recall", True, False, recall, code=3, trec_family="recall",
        stream=True, quality=True, gauge=f"Recall@k {_MEAN}",
    ),
    MeasureKind(
        "judged", True, False, judged, code=4, stream=True,
        gauge="Share of the top k judged in the latest finalized window (mean over queries).",
    ),
    MeasureKind(
        "mrr", False, False, reciprocal_rank, code=5, trec_whole="recip_rank",
        full_ranking=True, stream=True, quality=True, headline=True,
        gauge=f"Mean reciprocal rank {_MEAN}",
    ),
    MeasureKind(
        "map", False, False, average_precision, code=6, trec_whole="map",
        full_ranking=True, stream=True, quality=True, headline=True,
        gauge=f"Mean average precision {_MEAN}",
    ),
    MeasureKind("num_ret", False, False, num_ret, code=7, trec_whole="num_ret"),
    MeasureKind("num_rel", False, False, num_rel, code=8, trec_whole="num_rel"),
    MeasureKind(
        "num_rel_ret", False, False, num_rel_ret, code=9, trec_whole="num_rel_ret",
        full_ranking=True,
    ),
    MeasureKind(
        "success", True, False, success, code=10, trec_family="success",
        stream=True, quality=True,
        gauge=f"Success@k (1 if a relevant document is in the top k) {_MEAN}",
    ),
    MeasureKind(
        "rprec", False, False, r_precision, code=11, trec_whole="Rprec",
        full_ranking=True, stream=True, quality=True,
        gauge=f"R-precision (precision at rank R, R the relevant documents) {_MEAN}",
    ),
    # Average precision of the first k; `rankmon eval`'s map_cut (the stream exports map).
    MeasureKind(
        "map_cut", True, False, average_precision_cut, code=12, trec_family="map_cut"
    ),
    # nDCG of the ranking without its unjudged documents (Sakai's nDCG'): beside nDCG@k, which
    # counts an unjudged document as a miss, it tells a drop from documents nobody judged yet.
    MeasureKind(
        "ndcg_condensed", None, True, ndcg_condensed, code=13, own_family="ndcg_condensed",
        ideal=True, full_ranking=True, past_cutoff=True, stream=True, quality=True,
        gauge=f"Condensed-list nDCG@k (unjudged documents removed, Sakai's nDCG') {_MEAN}",
    ),
    # The bounds of nDCG@k: its least and its most over every grading of the unjudged
    # documents of the top k with the evaluation set's grades (monitor.scoring.bounds).
    # Lower, condensed and upper together say how much of a change the unjudged documents
    # could explain.
    MeasureKind(
        "ndcg_upper", True, True, ndcg_upper, code=14, own_family="ndcg_upper", top=True,
        stream=True, quality=True,
        gauge=f"Upper bound of nDCG@k (the most any grading of the unjudged documents of the "
        f"top k gives) {_MEAN}",
    ),
    MeasureKind(
        "ndcg_lower", True, True, ndcg_lower, code=15, own_family="ndcg_lower", top=True,
        stream=True, quality=True,
        gauge=f"Lower bound of nDCG@k (the least any grading of the unjudged documents of the "
        f"top k gives) {_MEAN}",
    ),
    # Rank-biased precision and its residual (Moffat and Zobel 2008), as trec_eval's rbp and
    # rbp_resid take them on the ranking cut at k; streamed when `metrics.measures` names
    # them. RBP@k plus its residual bounds what the unjudged documents of the top k could
    # make of it, as the nDCG bounds do for nDCG@k.
    MeasureKind(
        "rbp", True, False, rank_biased_precision({"p": _PERSISTENCE.default}),
        params=(_PERSISTENCE,), make_columns=rank_biased_precision,
        top=True, quality=True,
        gauge=f"Rank-biased precision@k with persistence p (Moffat and Zobel) {_MEAN}",
    ),
    MeasureKind(
        "rbp_residual", True, False, rbp_residual({"p": _PERSISTENCE.default}),
        params=(_PERSISTENCE,), make_columns=rbp_residual,
        gauge="What the unjudged documents of the top k could still add to RBP@k (its "
        f"residual, trec_eval's rbp_resid) {_MEAN}",
    ),
    # Expected reciprocal rank (Chapelle et al. 2009), graded: where a reader stops, as
    # gdeval.pl computes it; streamed when `metrics.measures` names it.
    MeasureKind(
        "err", True, False, expected_reciprocal_rank({"max_grade": _MAX_GRADE.default}),
        params=(_MAX_GRADE,), make_columns=expected_reciprocal_rank, quality=True,
        gauge=f"Expected reciprocal rank@k (Chapelle et al.; graded, gdeval's) {_MEAN}",
    ),
    # trec_eval's other measures, provided by its families (`monitor.scoring.families`) in
    # its table's order; streamed when `metrics.measures` names them. Left out: gm_map and
    # gm_bpref (a geometric mean over queries, which a window's mean of query means is not),
    # relstring (text), and the families a kind above computes (ndcg and dcg with gain
    # pairs, rbp and rbp_resid of the whole ranking: `rankmon eval` only).
    _provided("bpref", False, "Binary preference (relevant above judged nonrelevant)"),
    _provided(
        "iprec_at_recall", False, "Interpolated precision at a recall level",
        (_param("recall", 0.0, 0.0, 1.0, "the recall level"),),
        lambda params: (params["recall"],),
    ),
    _provided("infAP", False, "Inferred average precision (Yilmaz and Aslam)"),
    _provided(
        "Rprec_mult", False, "Precision at a multiple of rank R (R: the relevant documents)",
        (_param("multiple", 1.0, 0.0, 1000.0, "the multiple of R"),),
        lambda params: (params["multiple"],),
    ),
    _provided(
        "utility", False, "Utility: the documents of each kind, weighted by its coefficient",
        _UTILITY, lambda params: tuple(params[param.name] for param in _UTILITY),
    ),
    _provided(
        "11pt_avg", False, "Mean interpolated precision at the 11 recall levels 0, 0.1, ... 1",
        numbers=lambda _: _TENTHS,
    ),
    _provided("binG", False, "Binary G (gain 1 discounted by the nonrelevant above)"),
    _provided("G", False, "G (graded gain discounted by the cost so far; gains: the grades)"),
    _provided("ideal_dcg", False, "DCG of the ideal ranking (the grades as gains)", quality=False),
    _provided("ndcg_rel", False, "Mean over relevant documents of nDCG at their rank"),
    _provided("Rndcg", False, "Mean nDCG where the ideal ranking's gain changes"),
    _provided("relative_P", True, "Precision@k relative to the most k relevant documents allow"),
    _provided("set_P", False, "Precision of the whole ranking"),
    _provided("set_relative_P", False, "Relevant retrieved / min(retrieved, relevant)"),
    _provided("set_recall", False, "Recall of the whole ranking"),
    _provided("set_map", False, "Set MAP: precision times recall of the whole ranking"),
    _provided(
        "set_F", False, "F-measure of the whole ranking",
        (_param("beta", 1.0, 0.0, 1000.0, "set_F's weight of recall against precision"),),
        lambda params: (params["beta"],),
    ),
    _provided(
        "num_nonrel_judged_ret", False, "Judged nonrelevant documents retrieved", quality=False
    ),
    _provided("yaap", False, "Yet another average precision: log((1 + sum) / (1 + R - sum))"),
    _provided("unj", True, "Share of the top k that is unjudged", quality=False),
)  # fmt: skip


def measure_names(table: Sequence[MeasureKind]) -> dict[str, str]:
    """Every name a measure goes by (its kind's, trec_eval's family or whole-list name,
    rankmon eval's own family) -> its kind; a `MeasureError` when one name is given to two
    kinds (a new kind whose `own_family` was an existing family silently took its place)."""
    names: dict[str, str] = {}
    for kind in table:
        for name in dict.fromkeys(
            n
            for n in (kind.name, kind.trec_family, kind.trec_whole, kind.own_family, kind.family)
            if n
        ):
            if names.setdefault(name, kind.name) != kind.name:
                raise MeasureError(
                    f"the measure name {name!r} is given to two kinds, {names[name]!r} and "
                    f"{kind.name!r}"
                )
    series: dict[str, str] = {}
    for kind in table:
        if series.setdefault(kind.metric, kind.name) != kind.name:
            raise MeasureError(
                f"the kinds {series[kind.metric]!r} and {kind.name!r} would export the same "
                f"series, rankmon_{kind.metric}"
            )
    return names


MEASURE_NAMES: Final = measure_names(KIND_TABLE)  # at import: no name given twice
KINDS: Final[dict[str, MeasureKind]] = {kind.name: kind for kind in KIND_TABLE}
EXPORTED_KINDS: Final = tuple(kind for kind in KIND_TABLE if kind.gauge is not None)

# trec_eval's defaults for `-m ndcg_cut`, `-m P`, `-m recall` without parameters.
TREC_DEFAULT_CUTOFFS: Final = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

# trec_eval family -> the kind that computes it (rankmon eval's engine choice reads this).
TREC_FAMILY_KINDS: Final = {
    name: kind.name
    for kind in KIND_TABLE
    for name in (kind.trec_family, kind.trec_whole)
    if name is not None
}
# rankmon eval's name of a measure of rankmon's own -> its kind (`ndcg_upper.10`).
OWN_FAMILY_KINDS: Final = {
    kind.own_family: kind.name for kind in KIND_TABLE if kind.own_family is not None
}

# One measure's name: rankmon's (`ndcg@10`, `precision@5`, `rbp@10`) or trec_eval's
# (`ndcg_cut_10`, `P_5`, `P@5`, `recall_100`, `recip_rank`), then `:`-separated parts: a gain
# (`exp`) and parameters (`p=0.8`).
_NAME = re.compile(r"(?P<name>[A-Za-z0-9_]+?)(?:(?:@|_)(?P<k>[0-9]+))?")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# trec_eval's measures that are no row of the table, and what to name instead: `rankmon eval`
# computes each; the stream's windows are means of query means.
_EVAL_ONLY: Final = {
    "gm_map": "a geometric mean over queries, which a window's mean of query means is not "
    "(stream map; rankmon eval -m gm_map computes it)",
    "gm_bpref": "a geometric mean over queries, which a window's mean of query means is not "
    "(stream bpref; rankmon eval -m gm_bpref computes it)",
    "relstring": "text, not a number (rankmon eval -m relstring prints it)",
    "rbp_resid": "trec_eval's residual of the whole ranking: stream rbp_residual@k:p=P",
}


def kind_named(name: str) -> str | None:
    """The kind a measure name stands for: its own, trec_eval's family or whole-list name,
    or rankmon eval's name of its own families; None: no kind."""
    if name in KINDS:
        return name
    return TREC_FAMILY_KINDS.get(name) or OWN_FAMILY_KINDS.get(name)


@dataclass(frozen=True)
class MeasureKey:
    """One measure: its kind, its cutoff (None: none), its gain (nDCG and DCG only) and the
    values of its kind's other parameters (`params`: every one, in the kind's order, the
    default where none was given)."""

    kind: str
    k: int | None = None
    gain: Gain | None = None
    params: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise MeasureError(f"unknown measure {self.kind!r}: known are {', '.join(KINDS)}")
        takes_cutoff, takes_gain = KINDS[self.kind].cutoff, KINDS[self.kind].gain
        if self.k is not None and takes_cutoff is False:
            raise MeasureError(f"measure {self.kind!r} takes no cutoff (got @{self.k})")
        if self.k is not None and self.k < 1:
            raise MeasureError(f"measure {self.kind!r}: the cutoff must be >= 1, got {self.k}")
        if self.k is None and takes_cutoff is True:
            raise MeasureError(f"measure {self.kind!r} needs a cutoff, e.g. {self.kind}@10")
        if takes_gain and self.gain is None:
            object.__setattr__(self, "gain", LINEAR)
        if not takes_gain and self.gain is not None:
            raise MeasureError(f"measure {self.kind!r} takes no gain")
        declared = KINDS[self.kind].params
        given = dict(self.params)
        for name in given:
            if name not in {param.name for param in declared}:
                takes = ", ".join(param.name for param in declared) or "none"
                raise MeasureError(
                    f"measure {self.kind!r} takes no parameter {name!r} (its parameters: {takes})"
                )
        values = tuple(
            (param.name, param.check(given.get(param.name, param.default), self.kind))
            for param in declared
        )
        object.__setattr__(self, "params", values)

    def __str__(self) -> str:
        text = self.kind if self.k is None else f"{self.kind}@{self.k}"
        if self.gain is not None:
            text = f"{text}:{self.gain}"
        return text + "".join(f":{name}={value:g}" for name, value in self.params)

    @classmethod
    def parse(cls, text: str) -> MeasureKey:
        """Parse a measure's name: `ndcg@10:exp`, `ndcg@10` (linear gain), `ndcg_cut_10`,
        `precision@5`, `P_5`, `P@5`, `recall_100`, `mrr`, `recip_rank`, `rbp@10:p=0.8`, ...
        every form naming one key, whose `str()` is its one canonical name."""
        head, *parts = text.strip().split(":")
        match = _NAME.fullmatch(head)
        kind = None if match is None else kind_named(match["name"])
        if match is not None and kind is None and match["name"] in _EVAL_ONLY:
            raise MeasureError(f"measure {text!r} cannot be streamed: {_EVAL_ONLY[match['name']]}")
        if match is None or kind is None:
            raise MeasureError(
                f"cannot parse measure {text!r}: expected e.g. ndcg@10:exp, P_5, rbp@10:p=0.8"
            )
        gain: Gain | None = None
        params: list[tuple[str, float]] = []
        for part in parts:
            name, equals, value = part.partition("=")
            if equals and _PARAM.fullmatch(name.strip()):  # `p=0.8`; a gain map is `1=1,2=3`
                try:
                    params.append((name.strip(), float(value)))
                except ValueError:
                    raise MeasureError(
                        f"measure {text!r}: {name.strip()} must be a number, got {value!r}"
                    ) from None
                continue
            if gain is not None:
                raise MeasureError(f"measure {text!r}: two gains")
            try:
                gain = Gain.parse(part)
            except ValueError as error:
                raise MeasureError(f"measure key {text!r}: {error}") from None
        k = match["k"]
        return cls(kind, None if k is None else int(k), gain, tuple(params))

    @property
    def trec_name(self) -> str | None:
        """trec_eval's name (`ndcg_cut_10`, `P_5`, `recip_rank`, ...), None if it has none.

        The gain is not part of it: `rankmon eval --gain exp` reports `ndcg_cut_10` too.
        """
        kind = KINDS[self.kind]
        if self.k is None:
            return kind.trec_whole
        return None if kind.trec_family is None else f"{kind.trec_family}_{self.k}"

    @property
    def trec_argument(self) -> str | None:
        """For a kind trec_eval's family provides, trec_eval's `-m` argument for the same
        measure (`set_F:beta=0.5` -> `set_F.0.5`, `relative_P@10` -> `relative_P.10`,
        `utility` -> `utility.1,-1,0,0`); None for any other kind."""
        kind = KINDS[self.kind]
        if kind.family is None:
            return None
        if self.k is not None:
            return f"{kind.family}.{self.k}"
        if kind.family_numbers is None:
            return kind.family
        numbers = kind.family_numbers(dict(self.params))
        return f"{kind.family}." + ",".join(f"{number:g}" for number in numbers)

    @property
    def is_count(self) -> bool:
        """True for num_ret, num_rel, num_rel_ret: trec_eval sums these over queries."""
        return self.kind.startswith("num_")


def lookup_depth(keys: Iterable[MeasureKey]) -> int | None:
    """How many leading documents of a ranking the keys read (the grade lookups a ranking
    needs); None: all of them (a `full_ranking` kind without cutoff, a `past_cutoff` kind)."""
    keys = list(keys)
    if any((k.k is None and KINDS[k.kind].full_ranking) or KINDS[k.kind].past_cutoff for k in keys):
        return None
    return max((k.k for k in keys if k.k is not None), default=0)


def reads_counts(keys: Iterable[MeasureKey]) -> bool:
    """Whether a key reads each query's grade counts (`QueryIdeals.counts`): a kind trec_eval's
    family provides."""
    return any(KINDS[key.kind].family is not None for key in keys)


def head_depth(keys: Iterable[MeasureKey]) -> int | None:
    """How many leading ranks the numpy engine's cutoff columns read; None: all (a kind that
    may go without a cutoff, such as nDCG, asked for without one)."""
    keys = list(keys)
    if any(key.k is None and KINDS[key.kind].cutoff is None for key in keys):
        return None
    return max((key.k for key in keys if key.k is not None), default=0)


def ideal_specs(keys: Iterable[MeasureKey]) -> tuple[IdealSpec, ...]:
    """The (gain, cutoff) of each ideal DCG the keys divide by, once each, in key order."""
    specs = [(k.gain, k.k) for k in keys if KINDS[k.kind].ideal and k.gain is not None]
    return tuple(dict.fromkeys(specs))


def top_spec(keys: Iterable[MeasureKey]) -> TopSpec:
    """Which of each query's highest gains the keys read (`QueryIdeals.top`): their gains,
    and how many (depth 0: none)."""
    tops = [k for k in keys if KINDS[k.kind].top]
    # A kind without a gain (RBP) reads each query's highest grade: the linear gain's first.
    gains = tuple(dict.fromkeys(k.gain or LINEAR for k in tops))
    return gains, max(((k.k or 0) if k.gain is not None else 1 for k in tops), default=0)


def monitor_keys(cutoffs: Sequence[int], gains: Sequence[Gain | str]) -> list[MeasureKey]:
    """The keys the streaming monitor computes for each event: the table's `stream` kinds.

    First those that take a cutoff, in table order, each for every gain (nDCG) and cutoff:
    nDCG@k, precision@k, recall@k, judged@k, success@k; then those without: mrr, map and
    R-precision. (`map_cut@k` is the engine's too, for `rankmon eval`; the stream exports
    map without a cutoff.)
    """
    parsed = [Gain.parse(g) for g in gains]
    streamed = [kind for kind in KIND_TABLE if kind.stream]
    keys: list[MeasureKey] = []
    for kind in (kind for kind in streamed if kind.cutoff is not False):
        for gain in parsed if kind.gain else [None]:
            keys.extend(MeasureKey(kind.name, k, gain) for k in cutoffs)
    keys.extend(MeasureKey(kind.name) for kind in streamed if kind.cutoff is False)
    return keys


def resolve_key(text: str, known: Sequence[str]) -> str | None:
    """The key of `known` that `text` names, None if none: `ndcg@10:exp` as written,
    `ndcg@10` (no gain written) the first nDCG@10 of `known` (the first configured gain).
    Raises `MeasureError` when `text` is no measure key at all."""
    key = str(MeasureKey.parse(text))
    if KINDS[MeasureKey.parse(text).kind].gain and ":" not in text:
        return next((m for m in known if m.startswith(text.strip() + ":")), None)
    return key if key in known else None
