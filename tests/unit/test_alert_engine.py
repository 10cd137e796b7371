"""The engine on finalized windows: trust gating, stale on ticks, restore, metrics, messages."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from monitor.alerting import AlertEngine, Status
from monitor.alerting.delivery import AlertDelivery, RetryPolicy
from monitor.alerting.messages import AlertMessage
from monitor.alerting.render import render_rule_groups
from monitor.config.alerts import parse_alerting_config
from monitor.export.exporter import AlertSeries, Exporter
from monitor.scoring.catalog import KINDS, monitor_keys
from monitor.testing.alert_simulation import StreamModel, simulate_windows
from monitor.testing.clock import FakeClock
from monitor.windows.summary import Segment, WindowSummary

WINDOW_MS = 300_000
T0 = 1_700_000_000_000
NDCG = "ndcg@10:linear"
V42: Segment = (("model", "v42"),)


def config(*rules: dict[str, Any]) -> Any:
    return parse_alerting_config(
        {"rules": list(rules), "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="5m",
    )


def window(
    index: int,
    value: float,
    *,
    segment: Segment = V42,
    queries: int = 50,
    judged: float = 1.0,
    spread: float = 0.0,
) -> WindowSummary:
    """Window `index` of a segment whose queries score `value`, every one of them, or
    `value` +- `spread` alternately (a mean of `value` with a standard error)."""
    query_means = {
        f"q{i}": {NDCG: value + spread * (-1) ** i, "judged@10": judged} for i in range(queries)
    }
    return WindowSummary(
        window="5m",
        start_ms=T0 + index * WINDOW_MS,
        end_ms=T0 + (index + 1) * WINDOW_MS,
        segment=segment,
        evaluation_set_version="v1",
        events=queries * 2,
        queries=queries,
        evaluation_set_queries=100,
        means={NDCG: value, "judged@10": judged},
        sums={NDCG: value * queries},
        event_means={NDCG: value},
        query_means=query_means,
    )


class RecordingSink:
    """A sink that keeps what it was sent (delivery itself is tested on real servers)."""

    name = "recording"
    resends_firing = True

    def __init__(self) -> None:
        self.batches: list[list[AlertMessage]] = []

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        self.batches.append(list(alerts))


FLOOR = {"name": "floor", "measure": "ndcg@10", "severity": "critical", "below": 0.5}


def test_a_window_under_the_floor_fires_and_the_next_good_one_resolves() -> None:
    engine = AlertEngine(config(FLOOR), start_ms=T0)
    fired = engine.observe([window(0, 0.4)], T0 + WINDOW_MS)
    resolved = engine.observe([window(1, 0.6)], T0 + 2 * WINDOW_MS)
    assert [(t.rule.name, t.segment, t.change.after) for t in fired] == [
        ("floor", V42, Status.FIRING)
    ]
    assert fired[0].verdict.value == 0.4
    assert len(resolved) == 1 and resolved[0].change.resolved


def test_rules_apply_per_segment_unless_filtered() -> None:
    filtered = {**FLOOR, "name": "v42-floor", "segment": {"model": "v42"}}
    engine = AlertEngine(config(FLOOR, filtered), start_ms=T0)
    v43: Segment = (("model", "v43"),)
    transitions = engine.observe([window(0, 0.4), window(0, 0.4, segment=v43)], T0)
    fired = sorted((t.rule.name, t.segment) for t in transitions)
    assert fired == [("floor", V42), ("floor", v43), ("v42-floor", V42)]


def test_low_coverage_holds_quality_rules_and_says_why() -> None:
    coverage = {"name": "coverage", "severity": "warning", "coverage": {"min": 0.3}}
    uncertain = {"name": "uncertain", "measure": "ndcg@10", "stderr": {"max": 0.05}}
    engine = AlertEngine(config(FLOOR, coverage, uncertain), start_ms=T0)
    transitions = engine.observe([window(0, 0.1, queries=10)], T0)
    assert [t.rule.name for t in transitions] == ["coverage"]
    assert "untrustworthy" in transitions[0].verdict.note
    for name in ("floor", "uncertain"):
        held = engine.find(name, V42)
        assert held is not None and held.status is Status.INACTIVE
        assert held.verdict is not None and held.verdict.note.startswith("held: only 10 of 100")


def test_a_held_window_stays_out_of_the_drop_baseline() -> None:
    # Two trusted windows, then one held for low coverage: the drop rule still has only two
    # baseline windows, so the low window after them is unknown (had the held window
    # counted, it would fire). One more window in the baseline, and the next low one fires.
    coverage = {"name": "coverage", "severity": "warning", "coverage": {"min": 0.3}}
    drop = {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05, "min_queries": 10}}
    engine = AlertEngine(config(coverage, drop), start_ms=T0)
    engine.observe([window(0, 0.8), window(1, 0.8)], T0 + 2 * WINDOW_MS)
    (held,) = engine.observe([window(2, 0.1, queries=10)], T0 + 3 * WINDOW_MS)
    assert held.rule.name == "coverage"
    resolved = engine.observe([window(3, 0.4)], T0 + 4 * WINDOW_MS)
    assert [(t.rule.name, t.change.resolved) for t in resolved] == [("coverage", True)]
    alert = engine.find("drop", V42)
    assert alert is not None and alert.status is Status.INACTIVE
    (fired,) = engine.observe([window(4, 0.4)], T0 + 5 * WINDOW_MS)
    assert (fired.rule.name, fired.change.after) == ("drop", Status.FIRING)


def test_too_many_unjudged_documents_hold_quality_rules() -> None:
    judged = {"name": "judged", "severity": "warning", "judged": {"k": 10, "min": 0.8}}
    engine = AlertEngine(config(FLOOR, judged), start_ms=T0)
    transitions = engine.observe([window(0, 0.1, judged=0.5)], T0)
    assert [t.rule.name for t in transitions] == ["judged"]


def test_stale_fires_on_a_tick_after_the_silence_and_resolves_on_the_next_window() -> None:
    stale = {"name": "stale", "severity": "critical", "stale": {"after": "15m"}}
    clock = FakeClock(T0)
    engine = AlertEngine(config(stale), start_ms=clock.now_ms())
    clock.advance(15 * 60_000)
    assert engine.tick(clock.now_ms()) == []  # exactly `after`: not yet
    clock.advance(1000)
    (fired,) = engine.tick(clock.now_ms())
    assert fired.change.after is Status.FIRING
    clock.advance(1000)
    (resolved,) = engine.observe([window(0, 0.7)], clock.now_ms())
    assert resolved.change.resolved


def drop_config() -> Any:
    drop = {
        "name": "drop",
        "measure": "ndcg@10",
        "drop": {"relative": 0.05, "baseline_windows": 6, "significance": 0.01, "min_queries": 20},
    }
    return config(drop)


def test_restored_baselines_detect_a_drop_right_after_a_restart() -> None:
    model = StreamModel(queries=80, events_per_query=2.0, segment=V42)
    history = simulate_windows(model, 12, seed=3, drop_at=10, drop=0.15)
    live = AlertEngine(drop_config(), start_ms=T0)
    live_fired = [t for s in history for t in live.observe([s], s.end_ms)]
    restarted = AlertEngine(drop_config(), start_ms=T0)
    restarted.restore(history[:10])
    after_restart = restarted.observe(history[10:], history[-1].end_ms)
    assert [t.window for t in live_fired] == [t.window for t in after_restart]
    assert after_restart and after_restart[0].window == (history[10].start_ms, history[10].end_ms)


def test_a_window_seen_before_is_not_evaluated_twice() -> None:
    engine = AlertEngine(config({**FLOOR, "for": 2}), start_ms=T0)
    engine.observe([window(0, 0.4)], T0)
    assert engine.observe([window(0, 0.4)], T0) == []
    assert engine.active()[0].status is Status.PENDING


def test_firing_gauge_follows_each_rule_in_each_segment() -> None:
    registry = CollectorRegistry()
    metrics = AlertSeries(["model"], registry=registry)
    engine = AlertEngine(config(FLOOR), start_ms=T0, metrics=metrics)
    v42 = {"alert": "floor", "severity": "critical", "model": "v42"}
    v43 = {**v42, "model": "v43"}
    engine.observe([window(0, 0.4), window(0, 0.4, segment=(("model", "v43"),))], T0)
    assert registry.get_sample_value("rankmon_alert_firing", v42) == 1
    assert registry.get_sample_value("rankmon_alert_firing", v43) == 1
    engine.observe([window(1, 0.9)], T0)
    assert registry.get_sample_value("rankmon_alert_firing", v42) == 0
    assert registry.get_sample_value("rankmon_alert_firing", v43) == 1


def test_the_exporter_can_carry_the_alert_metrics() -> None:
    registry = CollectorRegistry()
    exporter = Exporter(registry, segment_keys=["model"], process_metrics=False)
    engine = AlertEngine(config(FLOOR), start_ms=T0, metrics=exporter)
    engine.observe([window(0, 0.4)], T0)
    labels = {"alert": "floor", "severity": "critical", "model": "v42"}
    assert registry.get_sample_value("rankmon_alert_firing", labels) == 1


def test_delivered_alert_carries_labels_and_annotations_and_resolves_by_ends_at() -> None:
    sink = RecordingSink()
    delivery = AlertDelivery([sink], RetryPolicy(), FakeClock(T0))
    drop = drop_config().rules[0]
    raw = {
        "name": drop.name,
        "measure": "ndcg@10",
        "runbook_url": "https://runbooks.example/ndcg",
        "drop": {"relative": 0.05, "baseline_windows": 6, "significance": 0.01, "min_queries": 20},
    }
    engine = AlertEngine(config(raw), start_ms=T0, delivery=delivery)
    model = StreamModel(queries=80, events_per_query=2.0, segment=V42)
    windows = simulate_windows(model, 10, seed=5, drop_at=6, drop=0.2)
    for summary in windows[:7]:
        engine.observe([summary], summary.end_ms)
    delivery.channels[0].deliver(windows[6].end_ms)
    (firing,) = sink.batches[-1]
    assert firing.labels == {
        "alertname": "drop",
        "severity": "warning",
        "measure": NDCG,
        "window": "5m",
        "model": "v42",
        "instance": socket.gethostname(),
    }
    notes = firing.annotations
    assert float(notes["value"]) < 0.95 * float(notes["baseline"])
    assert float(notes["p_value"]) < 0.01
    assert notes["worst_queries"].count("(-") == 5
    assert notes["runbook_url"] == "https://runbooks.example/ndcg"
    assert firing.firing and firing.starts_at_ms == windows[6].end_ms
    recovered = simulate_windows(model, 3, seed=5, start_ms=windows[6].end_ms)
    for summary in recovered:
        engine.observe([summary], summary.end_ms)
    delivery.channels[0].deliver(recovered[-1].end_ms)
    resolved = sink.batches[-1][-1]
    assert resolved.ends_at_ms is not None and not resolved.firing


def test_a_standing_alert_notifies_once_per_firing_and_once_per_resolution() -> None:
    sink = RecordingSink()
    delivery = AlertDelivery([sink], RetryPolicy(), FakeClock(T0))
    engine = AlertEngine(config(FLOOR), start_ms=T0, delivery=delivery)
    for index, value in enumerate([0.4, 0.3, 0.35, 0.8]):
        engine.observe([window(index, value)], T0 + (index + 1) * WINDOW_MS)
        delivery.channels[0].deliver(T0 + (index + 1) * WINDOW_MS)
    states = [[alert.firing for alert in batch] for batch in sink.batches]
    # Delivery re-sends every minute while firing; the 5-minute windows each see one resend,
    # never a new notification for a window that only confirms the alert.
    assert states == [[True], [True], [True], [False]]
    assert {batch[0].annotations["value"] for batch in sink.batches[:3]} == {"0.4000"}


def test_instances_judging_different_shares_send_alerts_told_apart_by_instance() -> None:
    # Two instances of one group see different partitions' queries: one share stays under
    # the floor, the other recovers. With one label set, Alertmanager would take the
    # resolution and the re-sent firing as one alert flapping; `instance` keeps them two.
    sent: dict[str, list[AlertMessage]] = {}
    for name, values in (("rankmon-a", [0.4, 0.3]), ("rankmon-b", [0.4, 0.8])):
        sink = RecordingSink()
        delivery = AlertDelivery([sink], RetryPolicy(), FakeClock(T0))
        raw = {"rules": [FLOOR], "log": False, "instance": name}
        alerting = parse_alerting_config(
            raw, cutoffs=[10], gains=["linear"], segment_keys=["model"], window="5m"
        )
        engine = AlertEngine(alerting, start_ms=T0, delivery=delivery)
        for index, value in enumerate(values):
            engine.observe([window(index, value)], T0 + (index + 1) * WINDOW_MS)
            delivery.channels[0].deliver(T0 + (index + 1) * WINDOW_MS)
        sent[name] = sink.batches[-1]
    ((still_firing,), (resolved,)) = sent["rankmon-a"], sent["rankmon-b"]
    assert still_firing.firing and not resolved.firing
    assert (still_firing.labels["instance"], resolved.labels["instance"]) == (
        "rankmon-a",
        "rankmon-b",
    )
    assert still_firing.fingerprint != resolved.fingerprint
    rest = {k: v for k, v in still_firing.labels.items() if k != "instance"}
    assert rest == {k: v for k, v in resolved.labels.items() if k != "instance"}


def test_rendered_prometheus_rules_carry_no_instance_label() -> None:
    # They alert on the instances' combined series: one alert for the whole group.
    groups = render_rule_groups(config(FLOOR))
    rules = [rule for group in groups["groups"] for rule in group["rules"]]
    (alert,) = [rule for rule in rules if rule.get("alert") == "floor"]
    assert "instance" not in alert["labels"]


def test_restore_hands_alerts_still_firing_to_delivery() -> None:
    sink = RecordingSink()
    delivery = AlertDelivery([sink], RetryPolicy(), FakeClock(T0))
    engine = AlertEngine(config(FLOOR), start_ms=T0, delivery=delivery)
    engine.restore([window(0, 0.7), window(1, 0.3)])
    delivery.channels[0].deliver(T0 + 2 * WINDOW_MS)
    ((restored,),) = sink.batches
    assert restored.firing and restored.annotations["value"] == "0.3000"


def test_a_new_evaluation_set_version_restarts_the_baseline_instead_of_alarming() -> None:
    model = StreamModel(queries=80, events_per_query=2.0, segment=V42)
    before = simulate_windows(model, 8, seed=11)
    # New judgments lower every query's score by 20%: an edit of the yardstick, not a drop.
    after = [
        replace(s, evaluation_set_version="v2")
        for s in simulate_windows(model, 16, seed=11, drop_at=0, drop=0.2)[8:]
    ]
    engine = AlertEngine(drop_config(), start_ms=T0)
    transitions = [t for s in before + after for t in engine.observe([s], s.end_ms)]
    assert transitions == []
    alert = engine.find("drop", V42)
    assert alert is not None and alert.track.history is not None
    assert len(alert.track.history) == 6  # v2 windows only, up to baseline_windows


def test_a_slow_slide_fires_the_trend_rule_and_settling_resolves_it() -> None:
    trend = {
        "name": "slide",
        "measure": "ndcg@10",
        "trend": {"min_windows": 5},
        # While the slide goes on, Page-Hinkley re-detects every ~sqrt(4 h / s) + a few
        # windows (h 7.2 and s a third of a standard error: 13): keep firing through that.
        "keep_firing_for": 16,
    }
    engine = AlertEngine(config(trend), start_ms=T0)
    # Queries 0.1 either side of the mean (standard error 0.014): flat, then 0.005 (a third
    # of a standard error) lower per window for 20 windows, then flat at the new level.
    values = [0.6] * 10 + [0.6 - 0.005 * i for i in range(1, 21)] + [0.5] * 40
    changes = [
        (index, t.change.after)
        for index, value in enumerate(values)
        for t in engine.observe([window(index, value, spread=0.1)], T0 + (index + 1) * WINDOW_MS)
    ]
    assert [after for _, after in changes] == [Status.FIRING, Status.INACTIVE]
    fired, resolved = changes[0][0], changes[1][0]
    assert 10 < fired < 30  # during the slide
    assert resolved >= 30  # once the series settled


def test_a_flat_series_never_fires_the_trend_rule() -> None:
    trend = {"name": "slide", "measure": "ndcg@10", "trend": {}}
    engine = AlertEngine(config(trend), start_ms=T0)
    values = [0.6, 0.61, 0.59, 0.6] * 15
    transitions = [
        t
        for index, value in enumerate(values)
        for t in engine.observe([window(index, value, spread=0.1)], T0 + (index + 1) * WINDOW_MS)
    ]
    assert transitions == []


def test_a_trend_rule_without_a_standard_error_says_so_and_does_not_fire() -> None:
    trend = {"name": "slide", "measure": "ndcg@10", "trend": {"min_windows": 2}}
    engine = AlertEngine(config(trend), start_ms=T0)
    for index, value in enumerate([0.6, 0.6, 0.3, 0.3]):
        assert engine.observe([window(index, value, queries=20)], T0 + index * WINDOW_MS) == []
    alert = engine.find("slide", V42)
    assert alert is not None and alert.verdict is not None
    assert "no standard error" in alert.verdict.note


def test_a_below_rule_on_every_measure_an_alert_may_watch_can_fire() -> None:
    # A rule on ndcg_upper@10 or ndcg_condensed@10 read its measure without its gain, a key
    # the windows never carry: it could never fire. Over the whole measure table.
    keys = [str(key) for key in monitor_keys([10], ["linear"]) if KINDS[key.kind].quality]
    rules = [
        {"name": f"low-{i}", "measure": key.split(":")[0], "below": 0.9, "for": 1}
        for i, key in enumerate(keys)
    ]
    engine = AlertEngine(config(*rules), start_ms=0)
    query_means = {f"q{i}": dict.fromkeys(keys, 0.5) for i in range(50)}
    summary = replace(window(0, 0.5), means=dict.fromkeys(keys, 0.5), query_means=query_means)
    engine.observe([summary], T0 + WINDOW_MS)
    firing = {a.rule.measure for a in engine.active() if a.status is Status.FIRING}
    assert firing == set(keys), sorted(set(keys) - firing)
    assert {"ndcg_upper@10:linear", "ndcg_condensed@10:linear"} <= firing


def test_with_a_false_page_budget_the_rules_outside_it_are_named_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The budget held the drop rules only; a trend rule beside them paged 5.7 times a day on
    # stable streams, and nothing said it was not in the budget. Now only a rule whose
    # threshold is set by hand stays outside it.
    drop = {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05}}
    trend = {"name": "slide", "measure": "ndcg@10", "severity": "critical",
             "trend": {"min_windows": 6, "threshold": 8}}  # fmt: skip
    note = {"name": "low", "measure": "ndcg@10", "severity": "info", "below": 0.5}
    raw = {"rules": [drop, trend, note], "log": False, "false_pages_per_day": 0.5}
    budgeted = parse_alerting_config(
        raw, cutoffs=[10], gains=["linear"], segment_keys=["model"], window="5m"
    )
    with caplog.at_level("WARNING", logger="monitor.alerting.engine"):
        AlertEngine(budgeted, start_ms=T0)
    [warning] = [r for r in caplog.records if "false_pages_per_day" in r.getMessage()]
    assert warning.__dict__["fields"]["rules"] == [
        "slide (trend: its threshold 8 is set by hand (null derives it from the budget))"
    ]  # not the info one
    caplog.clear()
    with caplog.at_level("WARNING", logger="monitor.alerting.engine"):
        AlertEngine(config(drop, trend), start_ms=T0)  # no budget: nothing to say
    assert not caplog.records
