"""The ranking-quality dashboard: what the ranker's users get, per segment and cutoff.

Rows, top to bottom: the config's alert rules with their thresholds drawn (only when rendered
with `--config`), quality over time (nDCG, precision, recall per cutoff; MRR, MAP), the drop
versus a trailing baseline, the evaluation set's coverage and judged@k, and the alerts firing
(rankmon's own, and Prometheus's from the rules `rankmon rules render` writes).
"""

from __future__ import annotations

from typing import Final

from monitor.dashboards.model import Annotation, Dashboard, Panel, Query, Row
from monitor.dashboards.model import ThresholdStep as Step
from monitor.dashboards.queries import (
    INSTANCE_LABELS,
    merged,
    merged_mean,
    normal_band,
    segment_legend,
    segment_matchers,
    selector,
    trailing_median,
)
from monitor.dashboards.rules import rule_rows
from monitor.dashboards.spec import DashboardSpec
from monitor.dashboards.variables import quality_variables

__all__ = ["QUALITY_UID", "prometheus_alerts", "quality_dashboard"]

QUALITY_UID: Final = "rankmon-quality"
_WINDOW: Final = 'window="$window"'
_FIRING: Final = "max by (alert, severity) (rankmon_alert_firing) > 0"


def quality_dashboard(spec: DashboardSpec) -> Dashboard:
    """The quality dashboard for the segment keys and alert rules of `spec`."""
    return Dashboard(
        uid=QUALITY_UID,
        title="rankmon: ranking quality",
        description=(
            "Windowed nDCG@k and companions of the production ranker against the fixed "
            "evaluation set (trec_eval conventions), merged across rankmon instances."
        ),
        rows=(
            *rule_rows(spec),
            _quality_row(spec),
            _drop_row(spec),
            _evaluation_set_row(spec),
            _alerts_row(spec),
        ),
        variables=quality_variables(spec),
        annotations=(_firing_annotation(),),
    )


def _per_k(spec: DashboardSpec, family: str, title: str, with_gain: bool = False) -> Panel:
    common = [_WINDOW, *segment_matchers(spec.segment_keys)]
    own = ['k=~"$k"', 'gain=~"$gain"'] if with_gain else ['k=~"$k"']
    legend = segment_legend(spec.segment_keys) + (" {{gain}}" if with_gain else "")
    measure = f"{family}@${{__field.labels.k}}" + (":${__field.labels.gain}" if with_gain else "")
    return Panel(
        "timeseries",
        f"{title}@$k",
        (Query(merged_mean(family, common, own), legend), *_band(family, common, own, legend)),
        description=f"Mean over queries of each query's mean {title}@k in the latest window"
        + _BAND_TEXT,
        unit="percentunit",
        minimum=0,
        maximum=1,
        width=8,
        repeat="k",
        links=_explain_links(spec, measure),
    )


def _bounds(spec: DashboardSpec) -> Panel:
    """nDCG@k between its bounds for documents nobody judged (docs/metrics.md, "Bounds")."""
    common = [_WINDOW, *segment_matchers(spec.segment_keys)]
    own = ['k=~"$k"', 'gain=~"$gain"']
    legend = segment_legend(spec.segment_keys) + " {{gain}}"
    return Panel(
        "timeseries",
        "nDCG@$k and its bounds for unjudged documents",
        (
            Query(merged_mean("ndcg", common, own), f"{legend} nDCG (unjudged gain 0)"),
            Query(merged_mean("ndcg_condensed", common, own), f"{legend} condensed"),
            Query(merged_mean("ndcg_lower", common, own), f"{legend} lower", bound=True),
            Query(merged_mean("ndcg_upper", common, own), f"{legend} upper", bound=True),
            *_corrected(spec, common, own, legend),
        ),
        description=(
            "nDCG@k counts a document nobody judged as a miss. The bounds (dashed) are the "
            "least and the most nDCG@k can be once the unjudged documents of the top k are "
            "judged, whatever grades of the evaluation set they get; the condensed list leaves "
            "them out. A drop that the upper bound and the condensed list do not share comes "
            "from unjudged documents entering the top k: judge them before calling it a "
            "regression. With the judging loop and a model "
            "judge, 'corrected by the audit' (drawn when judging.enabled) is nDCG@k corrected "
            "by the people's audit of the judge (PPI++; each instance's share of the queries, "
            "averaged)."
        ),
        unit="percentunit",
        minimum=0,
        maximum=1,
        width=8,
        repeat="k",
    )


def _corrected(
    spec: DashboardSpec, common: list[str], own: list[str], legend: str
) -> tuple[Query, ...]:
    """With the judging loop: nDCG@k corrected by the people's audit of the model judge."""
    if not spec.judging:
        return ()
    series = selector("rankmon_ndcg_corrected", [*common, *own])
    return (
        Query(f"avg without ({INSTANCE_LABELS}) ({series})", f"{legend} corrected by the audit"),
    )


def _explain_links(spec: DashboardSpec, measure: str) -> tuple[tuple[str, str], ...]:
    """A data link from each point to rankmon's explanation of the window it shows (the
    newest one finalized by then) against its baseline."""
    if spec.external_url is None:
        return ()
    segment = "%2C".join(f"{key}%3D${{__field.labels.{key}}}" for key in spec.segment_keys)
    url = (
        f"{spec.external_url}/explain?segment={segment or 'all'}&measure={measure}"
        "&at=${__value.time}&against=baseline"
    )
    return (("Why did it change? (rankmon)", url),)


_BAND_TEXT: Final = (
    ", with its between-query 95 % band dashed (mean -/+ 1.96 standard errors over the "
    "window's queries, merged across instances): the uncertainty about the population of "
    "queries the window's queries stand for. A replayed fixed set has none of its own from "
    "window to window; its replay noise is the comparisons' replay_stderr."
)


def _band(family: str, common: list[str], own: list[str] | tuple[()], legend: str) -> list[Query]:
    low, high = normal_band(family, common, own)
    return [
        Query(low, f"{legend} between-query 95% low", bound=True),
        Query(high, f"{legend} between-query 95% high", bound=True),
    ]


def _quality_row(spec: DashboardSpec) -> Row:
    common = [_WINDOW, *segment_matchers(spec.segment_keys)]
    legend = segment_legend(spec.segment_keys)
    flat = tuple(
        Panel(
            "timeseries",
            title,
            (Query(merged_mean(family, common), legend), *_band(family, common, (), legend)),
            description=f"Mean over queries of each query's mean {title} in the latest window"
            + _BAND_TEXT,
            links=_explain_links(spec, family),
            unit="percentunit",
            minimum=0,
            maximum=1,
        )
        for family, title in (("mrr", "MRR"), ("map", "MAP"))
    )
    return Row(
        "Quality over time (per segment and cutoff)",
        (
            _per_k(spec, "ndcg", "nDCG", with_gain=True),
            _bounds(spec),
            _per_k(spec, "precision", "Precision"),
            _per_k(spec, "recall", "Recall"),
            *flat,
        ),
    )


def _drop_row(spec: DashboardSpec) -> Row:
    common = [_WINDOW, *segment_matchers(spec.segment_keys)]
    ndcg = merged_mean("ndcg", common, ['k=~"$k"', 'gain=~"$gain"'])
    change = f"({ndcg}) / {trailing_median(ndcg, '$baseline', '$window')} - 1"
    panel = Panel(
        "timeseries",
        "nDCG@$k change versus the trailing median of $baseline",
        (Query(change, segment_legend(spec.segment_keys) + " {{gain}}"),),
        description=(
            "Relative change of the window's nDCG@k from the median of the windows in the "
            "$baseline before it; -0.05 is a 5 % drop."
        ),
        unit="percentunit",
        width=8,
        repeat="k",
    )
    return Row("Drop versus baseline", (panel,))


def _evaluation_set_row(spec: DashboardSpec) -> Row:
    common = [_WINDOW, *segment_matchers(spec.segment_keys)]
    legend = segment_legend(spec.segment_keys)
    # Queries are partitioned across instances, so per-instance coverages add up exactly.
    coverage = Query(merged("rankmon_coverage_ratio", common), legend)
    judged = Query(merged_mean("judged", common, ['k=~"$k"']), legend + " @{{k}}")
    counts = (
        Query(merged("rankmon_window_queries", common), f"queries {legend}"),
        Query(merged("rankmon_window_events", common), f"events {legend}"),
        Query(merged("rankmon_window_failed_queries", common), f"failed queries {legend}"),
    )
    return Row(
        "Evaluation set",
        (
            _share("Coverage", coverage, "Share of the evaluation set's queries in the window."),
            _share("Judged@k", judged, "Share of the top k with a judgment, mean over queries."),
            Panel(
                "timeseries",
                "Queries and events per window",
                counts,
                "Queries ranked and events scored per window; failed queries: those a replay "
                "asked that the ranker did not answer (errors, timeouts), not among the queries.",
                width=6,
            ),
            _VERSIONS,
        ),
    )


def _share(title: str, query: Query, description: str) -> Panel:
    unit, width = "percentunit", 6
    return Panel("timeseries", title, (query,), description, unit, width, minimum=0, maximum=1)


_VERSIONS: Final = Panel(
    "table",
    "Evaluation set version (instances)",
    (Query("count by (version) (rankmon_evaluation_set_info)", "{{version}}", True, True),),
    "Instances per evaluation-set version; more than one row means a rollout is in progress "
    "or an instance missed a reload.",
    width=6,
)


def prometheus_alerts(job: str) -> str:
    """The alerts Prometheus fires from `rankmon rules render`'s rules: all carry the job."""
    return f'ALERTS{{alertstate="firing",job="{job}"}}'


def _alerts_row(spec: DashboardSpec) -> Row:
    # Two sources: rankmon's own engine (per instance, drop alerts gated by the paired test)
    # and Prometheus evaluating the rendered rules (global means across instances, and
    # RankmonDown/RankmonAbsent, which a stopped or unscraped rankmon cannot report itself).
    prometheus = prometheus_alerts(spec.job)
    counts = (
        Query("count(rankmon_alert_firing > 0) or vector(0)", "rankmon", instant=True),
        Query(f"count({prometheus}) or vector(0)", "Prometheus rules", instant=True),
    )
    return Row(
        "Alerts",
        (
            Panel(
                "stat",
                "Alerts firing",
                counts,
                "Alerts firing in rankmon's own engine and in Prometheus "
                "(the rules of `rankmon rules render`).",
                width=6,
                height=6,
                thresholds=(Step(None, "green"), Step(1, "red")),
            ),
            Panel(
                "table",
                "Active alerts (rankmon)",
                (Query("rankmon_alert_firing > 0", instant=True, table=True),),
                "Every alert rankmon's own engine fires, with its "
                "labels (alert, severity, measure, window, segment).",
                width=9,
                height=6,
            ),
            Panel(
                "table",
                "Active alerts (Prometheus rules)",
                (Query(prometheus, instant=True, table=True),),
                "Every alert Prometheus fires from the rules of `rankmon rules render`: the "
                f'global means across instances, RankmonDown and RankmonAbsent (job="{spec.job}").',
                width=9,
                height=6,
            ),
        ),
    )


def _firing_annotation() -> Annotation:
    # Marks on every time series where an alert was firing: the drop and the alert line up.
    return Annotation("rankmon alerts firing", _FIRING, "red")
