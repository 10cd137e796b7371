"""The change of a headline between two windows, query by query: the contributions add up
to the headline change exactly, split into what the common queries did and the mix."""

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
    common = [r.contribution for r in change.rows if r.status == "common"]
    assert common == sorted(common)
    assert [r.status == "common" for r in change.rows] == sorted(
        (r.status == "common" for r in change.rows), reverse=True
    )  # the common queries first
    assert abs(math.fsum(common) - change.common_change) <= 1e-12
    assert abs(change.common_change + change.mix_change - expected) <= 1e-12


def test_common_queries_that_lost_carry_the_drop_not_the_queries_that_were_not_served() -> None:
    # A new user's drop alert: 20 common queries each lost 0.56, and 34 queries served only
    # before scored high. Weighing each query by 1/n of its side made the common losers look
    # positive and put the drop on the unserved ones.
    before = {f"c{i}": 0.9 for i in range(20)} | {f"gone{i}": 0.95 for i in range(34)}
    after = {f"c{i}": 0.34 for i in range(20)}
    change = explain_change(before, after)
    assert abs(change.common_change + 0.56) < 1e-12
    common = [r for r in change.rows if r.status == "common"]
    assert all(r.contribution < 0 for r in common)
    assert change.rows[0].status == "common"
    assert abs(change.mix_change - (change.change + 0.56)) < 1e-12


def test_queries_on_one_side_only_are_marked_and_counted() -> None:
    change = explain_change({"a": 0.5, "gone": 0.9}, {"a": 0.5, "new": 0.1})
    status = {r.query: r.status for r in change.rows}
    assert status == {"a": "common", "gone": "only_before", "new": "only_after"}
    contribution = {r.query: r.contribution for r in change.rows}
    # mix: each one-side query against the common queries' mean on its side (0.5)
    assert contribution["gone"] == -(0.9 - 0.5) / 2 and contribution["new"] == (0.1 - 0.5) / 2
    assert contribution["a"] == 0.0 and change.common_change == 0.0
    assert change.rows[0].query == "a"  # the common queries first


def test_nan_values_are_left_out_of_both_sides() -> None:
    change = explain_change({"a": math.nan, "b": 0.4}, {"a": 0.2, "b": 0.4})
    assert change.before_queries == 1 and change.after_queries == 2
