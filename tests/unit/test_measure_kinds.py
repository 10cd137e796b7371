"""One table of measure kinds (`monitor.scoring.catalog.KIND_TABLE`), and every path agrees.

The C kernel numbers its kinds in an enum, the numpy engine keys its groups by name, the
exporter, the window log, the rendered rules and the dashboards list what they show: each of
those is read here against the table, so a kind added to one and not the others fails.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from monitor.alerting.conditions.base import RANKED_MEASURES, UNRANKED_MEASURES
from monitor.alerting.render import MEASURE_KINDS
from monitor.dashboards.series import EXPORTED_SERIES, QUALITY_MEASURES
from monitor.errors import MeasureError
from monitor.export.window_log import HEADLINE_KINDS
from monitor.scoring import columns
from monitor.scoring.catalog import (
    EXPORTED_KINDS,
    KIND_TABLE,
    KINDS,
    MEASURE_NAMES,
    OWN_FAMILY_KINDS,
    TREC_FAMILY_KINDS,
    MeasureKey,
    measure_names,
)
from monitor.scoring.families import FAMILIES
from monitor.trec.table import TABLE, TrecMeasure, check_own_names
from tests.support import oracle

KERNEL_HEADER = Path(__file__).resolve().parents[2] / "monitor/scoring/measure_kernel.h"


def kernel_enum() -> dict[str, int]:
    """`RM_NDCG = 0, ...` of measure_kernel.h, lower-cased, without the RM_KINDS count."""
    text = KERNEL_HEADER.read_text(encoding="utf-8")
    found = {name.lower(): int(value) for name, value in re.findall(r"RM_(\w+) = (\d+)", text)}
    assert found.pop("kinds") == len(found)
    return found


def test_the_c_kernel_numbers_each_kind_with_a_c_case_as_the_table_does() -> None:
    coded = {kind.name: kind.code for kind in KIND_TABLE if kind.code is not None}
    assert kernel_enum() == coded


def test_every_kind_names_a_numpy_function_of_the_columns_module_or_a_trec_eval_family() -> None:
    for kind in KIND_TABLE:
        assert bool(kind.params) == (kind.make_columns is not None), kind.name
        if kind.family is not None:  # provided: its family's function, as rankmon eval's
            assert kind.family in FAMILIES, kind.name
            continue
        # a kind with parameters names the function that makes its columns for their values
        function = kind.columns if kind.make_columns is None else kind.make_columns
        assert getattr(columns, function.__name__) is function, kind.name
        assert function.__name__ in columns.__all__


def test_the_oracle_defines_every_kind_no_trec_eval_family_provides() -> None:
    # A provided kind's reference is rankmon eval's value (tests/property/
    # test_provided_measures.py), which the conformance tests hold to trec_eval's.
    for kind in (kind for kind in KIND_TABLE if kind.family is None):
        key = MeasureKey(kind.name, 3 if kind.cutoff else None)
        value = oracle.value(
            kind.name, [2, None, 0, 1], [2, 1, 0], k=key.k, gain=key.gain, level=1,
            idcg_zero="zero",
        )  # fmt: skip
        assert isinstance(value, float), kind.name


def test_kind_names_and_c_codes_are_unique() -> None:
    assert len(KINDS) == len(KIND_TABLE)
    codes = sorted(kind.code for kind in KIND_TABLE if kind.code is not None)
    assert codes == list(range(len(codes)))


def test_what_is_exported_rendered_and_drawn_is_the_tables_gauges() -> None:
    gauges = tuple(kind.name for kind in KIND_TABLE if kind.gauge)
    assert tuple(kind.name for kind in EXPORTED_KINDS) == gauges
    assert MEASURE_KINDS == gauges == QUALITY_MEASURES
    assert {f"rankmon_{KINDS[name].metric}" for name in gauges} <= EXPORTED_SERIES


def test_alert_rules_watch_the_quality_kinds_with_and_without_a_cutoff() -> None:
    quality = {kind.name for kind in KIND_TABLE if kind.quality}
    assert set(RANKED_MEASURES) | set(UNRANKED_MEASURES) == quality
    assert all(KINDS[name].cutoff is not False for name in RANKED_MEASURES)
    assert all(KINDS[name].cutoff is False for name in UNRANKED_MEASURES)
    assert set(HEADLINE_KINDS) <= quality


def test_every_kind_parses_from_its_own_key_text() -> None:
    for kind in KIND_TABLE:
        key = MeasureKey(kind.name, 10 if kind.cutoff else None)
        assert MeasureKey.parse(str(key)) == key


def test_a_name_given_to_two_kinds_is_an_error_at_import() -> None:
    assert set(MEASURE_NAMES) >= set(KINDS) | set(TREC_FAMILY_KINDS) | set(OWN_FAMILY_KINDS)
    ndcg = KINDS["ndcg"]
    shadow = dataclasses.replace(KINDS["dcg"], own_family="ndcg_cut")  # nDCG's trec family
    with pytest.raises(MeasureError, match="'ndcg_cut' is given to two kinds"):
        measure_names([ndcg, shadow])
    # rankmon eval's own name of a kind may not be one of trec_eval's measures either
    shadowing = [*TABLE, TrecMeasure("rbp", "cutoffs", (10.0,))]  # an own family `rbp`
    with pytest.raises(MeasureError, match="'rbp' is named twice"):
        check_own_names(shadowing)
    check_own_names(TABLE)  # the table as it is: no name taken twice
