"""The change of a headline between two windows, query by query: the contributions add up
to the headline change exactly, queries seen on one side only included."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.explain.change import explain_change

values = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=3), st.floats(0.0, 1.0, allow_nan=False), max_size=60
)


@settings(max_examples=400, deadline=None)
@given(values, values)
def test_contributions_add_up_to_the_headline_change(
    before: dict[str, float], after: dict[str, float]
) -> None:
    change = explain_change(before, after)
    if not before or not after:
        return
    expected = math.fsum(after.values()) / len(after) - math.fsum(before.values()) / len(before)
    assert abs(math.fsum(r.contribution for r in change.rows) - expected) <= 1e-12
    assert abs(change.change - expected) <= 1e-12
    assert {r.query for r in change.rows} == before.keys() | after.keys()
    assert [r.contribution for r in change.rows] == sorted(r.contribution for r in change.rows)


def test_queries_on_one_side_only_are_marked_and_counted() -> None:
    change = explain_change({"a": 0.5, "gone": 0.9}, {"a": 0.5, "new": 0.1})
    status = {r.query: r.status for r in change.rows}
    assert status == {"a": "common", "gone": "only_before", "new": "only_after"}
    contribution = {r.query: r.contribution for r in change.rows}
    assert contribution["gone"] == -0.45 and contribution["new"] == 0.05
    assert contribution["a"] == 0.0
    assert change.rows[0].query == "gone"  # the largest loss first


def test_nan_values_are_left_out_of_both_sides() -> None:
    change = explain_change({"a": math.nan, "b": 0.4}, {"a": 0.2, "b": 0.4})
    assert change.before_queries == 1 and change.after_queries == 2
