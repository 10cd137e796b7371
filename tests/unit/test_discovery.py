"""Regression or discovery: a drop of nDCG@k that its condensed list (the judged documents
alone) does not show comes from documents nobody judged yet entering the top k. The drop rule
holds it with `unjudged: hold` (no page) and a `discovery` rule notifies it, naming the
queries; a drop the condensed list shows too is a regression and pages; `unjudged: page`, the
default, pages on the measure alone."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from monitor.alerting import AlertEngine, Status
from monitor.alerting.conditions import Discovery, Drop, WindowTrack, evaluate_window
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Evidence
from monitor.config.alerts import parse_alerting_config, render_alerts
from monitor.errors import ConfigError
from monitor.stats.judges import JudgeReading
from monitor.windows.summary import WindowSummary
from tests.unit.test_alert_conditions import NDCG, spread, window

UPPER = "ndcg_upper@10:linear"
CONDENSED = "ndcg_condensed@10:linear"
SETTINGS = {"relative": 0.05, "baseline_windows": 4, "significance": 0.01, "min_queries": 10}


def bounded(
    index: int, lower: dict[str, float], condensed: float, unjudged: int = 0
) -> WindowSummary:
    """A window whose queries score `lower`, with the headline's condensed list `condensed`
    (and an upper bound above it); the first `unjudged` queries have 4 of their top 10
    unjudged (judged@10 = 0.6)."""
    base = window(index, lower)
    judged = {q: 0.6 if n < unjudged else 1.0 for n, q in enumerate(lower)}
    return replace(
        base,
        means={**base.means, CONDENSED: condensed, UPPER: min(1.0, condensed + 0.1)},
        query_means={q: {NDCG: v, "judged@10": judged[q]} for q, v in lower.items()},
    )


def judge(condition: Drop, windows: list[WindowSummary]) -> list[tuple[Evidence, str]]:
    rule = AlertRule("r", 0, "warning", NDCG, condition, None, 1, 0, None)
    track = WindowTrack.for_rule(rule)
    verdicts = []
    for summary in windows:
        verdict = evaluate_window(rule, summary, track)
        track.remember(rule, summary)
        verdicts.append((verdict.evidence, verdict.note))
    return verdicts


def history() -> list[WindowSummary]:
    return [bounded(i, spread(0.7), 0.72) for i in range(4)]  # condensed 0.72


def test_a_drop_its_condensed_list_does_not_show_is_held_by_drop_and_notified_as_discovery() -> (
    None
):
    surfacing = bounded(4, spread(0.5), condensed=0.71, unjudged=12)  # new documents, unjudged
    hold = Drop(0.05, None, 4, 0.01, 10, None, unjudged="hold")
    *_, (held, why) = judge(hold, [*history(), surfacing])
    assert held is Evidence.UNKNOWN
    assert why.startswith("held: a discovery, not a regression: ndcg@10:linear fell under")
    *_, (found, note) = judge(Discovery(0.05, None, 4, 0.01, 10, None), [*history(), surfacing])
    assert found is Evidence.BAD
    # 12 queries with 4 unjudged documents each in the top 10: 48, the least judged named
    assert "about 48 documents nobody judged are in the top 10 of 12 queries (q0, q1, q10" in note


def test_a_drop_its_condensed_list_shows_too_is_a_regression_that_pages() -> None:
    worse = bounded(4, spread(0.5), condensed=0.52, unjudged=12)
    hold = Drop(0.05, None, 4, 0.01, 10, None, unjudged="hold")
    *_, (paged, _) = judge(hold, [*history(), worse])
    assert paged is Evidence.BAD
    *_, (quiet, note) = judge(Discovery(0.05, None, 4, 0.01, 10, None), [*history(), worse])
    assert quiet is Evidence.GOOD and note.startswith("a regression, not a discovery")


def test_unjudged_page_the_default_pages_on_the_measure_alone() -> None:
    surfacing = bounded(4, spread(0.5), condensed=0.71, unjudged=12)
    drop = Drop(0.05, None, 4, 0.01, 10, None)
    *_, (paged, _) = judge(drop, [*history(), surfacing])
    assert paged is Evidence.BAD


def test_a_discovery_rule_is_info_by_default_watches_ndcg_only_and_drop_says_unjudged() -> None:
    rules = [
        {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05}},
        {"name": "found", "measure": "ndcg@10", "discovery": SETTINGS},
    ]
    config = parse_alerting_config(
        {"rules": rules}, cutoffs=(10,), gains=("linear",), segment_keys=(), window="5m"
    )
    drop, found = config.rules
    assert (drop.severity, found.severity) == ("warning", "info")
    rendered = render_alerts(config)["rules"]
    assert rendered[0]["drop"]["unjudged"] == "page"
    assert "unjudged" not in rendered[1]["discovery"]
    with pytest.raises(ConfigError, match="discovery rules watch an ndcg@k"):
        parse_alerting_config(
            {"rules": [{"name": "p", "measure": "precision@10", "discovery": SETTINGS}]},
            cutoffs=(10,), gains=("linear",), segment_keys=(), window="5m",
        )  # fmt: skip


def hold_engine(max_hold: int) -> AlertEngine:
    drop = {"name": "drop", "measure": "ndcg@10", "drop": {**SETTINGS, "unjudged": "hold",
            "max_hold": max_hold}}  # fmt: skip
    judge_rule = {"name": "judge-drift", "judge": {"min_kappa": 0.4, "min_pairs": 10}}
    rules = {"rules": [drop, judge_rule], "log": False}
    alerts = parse_alerting_config(
        rules, cutoffs=[10], gains=["linear"], segment_keys=["model"], window="5m", judging=True
    )
    return AlertEngine(alerts, start_ms=0)


def statuses(engine: AlertEngine, summaries: list[WindowSummary]) -> list[Status]:
    """The drop alert's status after each window."""
    seen = []
    for summary in summaries:
        engine.observe([summary], summary.end_ms)
        alert = engine.find("drop", summary.segment)
        assert alert is not None
        seen.append(alert.status)
    return seen


def test_a_drop_held_past_max_hold_windows_in_a_row_pages_on_the_next() -> None:
    # Documents nobody judges stay in the top k: the drop stays a discovery for ever, and
    # used to be held for ever, however real it was.
    engine = hold_engine(max_hold=2)
    low = [bounded(4 + n, spread(0.6), 0.72) for n in range(3)]
    seen = statuses(engine, [*history(), *low])
    assert seen[4:] == [Status.INACTIVE, Status.INACTIVE, Status.FIRING]
    alert = engine.find("drop", low[0].segment)
    assert alert is not None and alert.verdict is not None
    assert "held 3 windows in a row, past max_hold 2: paging on the measure" in alert.verdict.note


def test_while_a_judge_rule_fires_a_window_that_no_longer_shows_the_drop_does_not_release_it() -> (
    None
):
    # The model judge's grades moved (kappa 0.1 against the people): once they score the
    # held discovery, the drop may read as gone because they lifted it. Without the judge
    # rule firing the same windows release the hold, and nothing pages.
    held = [bounded(4 + n, spread(0.6), 0.72) for n in range(2)]
    fixed = [bounded(6 + n, spread(0.7), 0.72) for n in range(3)]
    released = statuses(hold_engine(max_hold=3), [*history(), *held, *fixed])
    assert Status.FIRING not in released
    engine = hold_engine(max_hold=3)
    moved = JudgeReading("llm:judge@v1", 40, 40, 0.1, 1.0, 0, math.nan, math.nan, (),
                         kappa_stderr=0.01)  # fmt: skip
    engine.observe_judges([moved], 0)
    judge_alert = engine.find("judge-drift", ())
    assert judge_alert is not None and judge_alert.status is Status.FIRING
    seen = statuses(engine, [*history(), *held, *fixed])
    assert seen[4:] == [Status.INACTIVE] * 3 + [Status.FIRING] * 2  # the 4th held window
    alert = engine.find("drop", held[0].segment)
    assert alert is not None and alert.verdict is not None
    assert "past max_hold 3" in alert.verdict.note and "a judge rule fires" in alert.verdict.note


def corrected_engine(estimate: float, audited: int) -> AlertEngine:
    """`hold_engine` whose windows have a corrected headline: model judges graded them."""
    engine = hold_engine(max_hold=3)

    def corrected(segment: object, start_ms: int) -> dict[str, float | str]:
        return {"measure": NDCG, "estimate": estimate, "lower": estimate - 0.02,
                "upper": estimate + 0.02, "audited": float(audited)}  # fmt: skip

    engine.corrected = corrected
    return engine


@pytest.mark.parametrize(
    ("estimate", "audited", "after"),
    [
        (0.6, 60, [Status.FIRING]),  # the people's grades still show the drop: it pages
        (0.7, 60, [Status.INACTIVE]),  # they do not: released
        # too few audited: still held, until max_hold (3) pages it
        (math.nan, 12, [Status.INACTIVE, Status.FIRING]),
    ],
)
def test_a_held_drop_is_released_on_the_audit_corrected_value_not_the_model_judges_grades(
    estimate: float, audited: int, after: list[Status]
) -> None:
    # The demo's LLM judge grades junk one grade up: once its grades score the held
    # discovery the measure reads half the drop, under the gate, and released the hold; a
    # true -6.7 % regression never paged.
    held = [bounded(4 + n, spread(0.6), 0.72) for n in range(2)]
    lifted = [bounded(6 + n, spread(0.7), 0.72) for n in range(len(after))]
    engine = corrected_engine(estimate, audited)
    seen = statuses(engine, [*history(), *held, *lifted])
    assert seen[6:] == after
    alert = engine.find("drop", held[0].segment)
    assert alert is not None and alert.verdict is not None
    said = alert.verdict.note
    if after == [Status.FIRING]:
        assert "audit-corrected ndcg@10:linear 0.6000" in said and "under the drop's floor" in said
    elif after == [Status.INACTIVE]:
        assert said.startswith("released on the audit-corrected ndcg@10:linear 0.7000")
    else:
        assert "past max_hold 3" in said and "only 12 queries are audited" in said


def test_without_a_model_judge_the_peoples_grades_release_a_held_drop() -> None:
    held = [bounded(4 + n, spread(0.6), 0.72) for n in range(2)]
    fixed = [bounded(6, spread(0.7), 0.72)]
    engine = hold_engine(max_hold=3)
    engine.corrected = lambda segment, start_ms: None  # no model graded a pair
    assert statuses(engine, [*history(), *held, *fixed])[6:] == [Status.INACTIVE]
    alert = engine.find("drop", held[0].segment)
    assert alert is not None and alert.held_windows == 0
