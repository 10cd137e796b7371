"""Grafana dashboards as code: built from a `DashboardSpec`, rendered to deterministic JSON.

```python
from monitor.dashboards import build_dashboards, load_spec
for dashboard in build_dashboards(load_spec(Path("rankmon.yaml"))):
    Path(f"dashboards/{dashboard.uid}.json").write_text(dashboard.to_json())
```

Every PromQL expression names only series rankmon exports (`series.EXPORTED_SERIES`) or
Prometheus's own `ALERTS` (`series.PROMETHEUS_SERIES`); `build_dashboards` raises `ValueError`
otherwise, so a renamed metric cannot ship silently.
"""

from __future__ import annotations

from collections.abc import Iterator

from monitor.dashboards.model import Dashboard
from monitor.dashboards.pipeline import PIPELINE_UID, pipeline_dashboard
from monitor.dashboards.quality import QUALITY_UID, quality_dashboard
from monitor.dashboards.series import (
    EXPORTED_SERIES,
    PROMETHEUS_SERIES,
    label_values_selector,
    unknown_series,
)
from monitor.dashboards.spec import DEFAULT_SPEC, DashboardSpec, load_spec

__all__ = [
    "DEFAULT_SPEC",
    "EXPORTED_SERIES",
    "PIPELINE_UID",
    "PROMETHEUS_SERIES",
    "QUALITY_UID",
    "Dashboard",
    "DashboardSpec",
    "build_dashboards",
    "expressions",
    "load_spec",
]


def build_dashboards(spec: DashboardSpec = DEFAULT_SPEC) -> tuple[Dashboard, ...]:
    """The quality and pipeline dashboards; raises `ValueError` on a series rankmon lacks."""
    dashboards = (quality_dashboard(spec), pipeline_dashboard())
    for dashboard in dashboards:
        unknown = unknown_series(expressions(dashboard))
        if unknown:
            raise ValueError(f"dashboard {dashboard.uid} names unknown series {sorted(unknown)}")
    return dashboards


def expressions(dashboard: Dashboard) -> Iterator[str]:
    """Every PromQL expression of a dashboard: targets, annotations, variable selectors."""
    for panel in dashboard.panels():
        for query in panel.queries:
            yield query.expr
    for annotation in dashboard.annotations:
        yield annotation.expr
    for variable in dashboard.variables:
        if variable.kind == "query":
            selector = label_values_selector(variable.query)
            if selector is None:
                raise ValueError(f"variable {variable.name}: not a label_values query")
            yield selector
