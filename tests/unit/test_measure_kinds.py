"""One table of measure kinds (`monitor.scoring.catalog.KIND_TABLE`), and every path agrees.

The C kernel numbers its kinds in an enum, the numpy engine keys its groups by name, the
exporter, the window log, the rendered rules and the dashboards list what they show: each of
those is read here against the table, so a kind added to one and not the others fails.
"""

from __future__ import annotations

import re
from pathlib import Path

from monitor.alerting.conditions.base import RANKED_MEASURES, UNRANKED_MEASURES
from monitor.alerting.render import MEASURE_KINDS
from monitor.dashboards.series import EXPORTED_SERIES, QUALITY_MEASURES
from monitor.export.window_log import HEADLINE_KINDS
from monitor.scoring import columns
from monitor.scoring.catalog import EXPORTED_KINDS, KIND_TABLE, KINDS, MeasureKey
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


def test_every_kind_names_a_numpy_function_of_the_columns_module() -> None:
    for kind in KIND_TABLE:
        assert getattr(columns, kind.columns.__name__) is kind.columns, kind.name
        assert kind.columns.__name__ in columns.__all__


def test_the_oracle_defines_every_kind() -> None:
    for kind in KIND_TABLE:
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
    assert {f"rankmon_{name}" for name in gauges} <= EXPORTED_SERIES


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
