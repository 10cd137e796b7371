"""Why did it drop: the change of a measure between two windows, query by query, with the
rankings behind the queries that lost most; as JSON beside /metrics and as a web page.

Enters: finalized summaries (`ExplainStore.add`), one sampled ranking per query, segment
and pane from the intake (`RankingSamples`), the evaluation set's grades.
Leaves: `/api/v1/segments`, `/api/v1/windows`, `/api/v1/explain` (`api.ExplainApi`), the
page at `/` and `/explain` (`page.ExplainPages`), and the page's path for an alert
(`page.explain_path`).
"""

from monitor.explain.api import ApiError, ExplainApi, parse_segment
from monitor.explain.change import Change, QueryChange, explain_change
from monitor.explain.page import AlertView, ExplainPages, explain_path
from monitor.explain.rankings import RankingChange, ranking_change
from monitor.explain.settings import ExplainConfig
from monitor.explain.store import ExplainStore, KeptWindow
from monitor.windows.samples import RankingSamples

__all__ = [
    "AlertView",
    "ApiError",
    "Change",
    "ExplainApi",
    "ExplainConfig",
    "ExplainPages",
    "ExplainStore",
    "KeptWindow",
    "QueryChange",
    "RankingChange",
    "RankingSamples",
    "explain_change",
    "explain_path",
    "parse_segment",
    "ranking_change",
]
