"""The records a replay publishes, keyed as the monitor expects (`README.md`, "Replays").

- A ranked query: a ranking event (schema version 1) whose `event_id` is
  `<replay_id>/<query_id>` (a replay re-sent after a crash is deduplicated, never counted
  twice), whose `documents` hold what the ranker said of each document for its judges
  (`replay.ranker.fields`), whose `event_time` is the replay's start (every record of a
  replay is in the same windows, however long it takes) and whose `replay` object holds `id`.
- A failed query: the same `event_id`, `query_id` and `segment`, no `ranking`, and `replay`
  holding `id`, `outcome` (`error` or `timeout`) and `reason`.
- The start of a replay: on every partition of the topic, before its first query, `replay`
  holding `id`, `start: true` and `started` (epoch ms), and `segment`: an open replay holds
  its windows open at the monitor while other replayers end (`monitor.windows.replay_ends`).
- The end of a replay: on every partition of the topic, `replay` holding `id`, `end: true`,
  `events` (how many of the replay's records that partition got before it), `queries` and
  `outcomes` (the whole replay's), `started` and `ended` (epoch ms), `aborted` (why its
  circuit breaker ended it) when it did, and `stopped: true` when a stop (SIGTERM, SIGINT)
  cancelled some of its queries; and `segment`, the replay's static labels. A cancelled query
  has no record: it is no failure of the ranker.

Failed queries and markers carry no `ranking`: the monitor counts them as
`outcome="replay_notice"`, never as invalid input; the windows count each failed query as
the replay's failure (`WindowSummary.failed_queries`, the `replay_errors` alert condition).
The markers are sent after every other record of the replay was stored, so a partition's
marker is behind all of the replay on it: once the monitor has read the marker on each
partition it owns, it closes the replay's windows at its next tick.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from monitor.replay.ranker import Answer
from monitor.replay.topics import Query

__all__ = ["end_marker", "query_event", "start_marker"]


def query_event(
    replay_id: str,
    query: Query,
    answer: Answer,
    segment: Mapping[str, str],
    event_time_ms: int,
) -> tuple[bytes, bytes]:
    """(key, value) of one query's record: its ranking, or its failure."""
    event: dict[str, object] = {
        "schema_version": 1,
        "event_id": f"{replay_id}/{query.query_id}",
        "query_id": query.query_id,
        "event_time": event_time_ms,
        "segment": {**segment, **dict(answer.labels)},
    }
    if answer.outcome == "ranked":
        event["ranking"] = list(answer.ids)
        event["replay"] = {"id": replay_id}
        if answer.documents:
            event["documents"] = answer.documents
    else:
        event["replay"] = {"id": replay_id, "outcome": answer.outcome, "reason": answer.reason}
    return query.query_id.encode(), orjson.dumps(event)


def start_marker(
    replay_id: str, *, started_ms: int, segment: Mapping[str, str] | None = None
) -> tuple[bytes, bytes]:
    """(key, value) of the start-of-replay marker every partition gets before the replay's
    first query: the monitor then holds the replay's windows open until its end markers
    came, whatever other replayers end meanwhile."""
    marker = {
        "schema_version": 1,
        "event_time": started_ms,
        "segment": dict(segment or {}),
        "replay": {"id": replay_id, "start": True, "started": started_ms},
    }
    return replay_id.encode(), orjson.dumps(marker)


def end_marker(
    replay_id: str,
    *,
    events: int,
    queries: int,
    outcomes: Mapping[str, int],
    started_ms: int,
    ended_ms: int,
    segment: Mapping[str, str] | None = None,
    aborted: str = "",
    stopped: bool = False,
) -> tuple[bytes, bytes]:
    """(key, value) of the end-of-replay marker one partition gets; `segment`: the
    replay's static labels (`replay.segment`), which name the windows it is in."""
    replay: dict[str, object] = {
        "id": replay_id,
        "end": True,
        "events": events,
        "queries": queries,
        "outcomes": dict(outcomes),
        "started": started_ms,
        "ended": ended_ms,
    }
    if aborted:
        replay["aborted"] = aborted
    if stopped:
        replay["stopped"] = True
    marker = {
        "schema_version": 1,
        "event_time": ended_ms,
        "segment": dict(segment or {}),
        "replay": replay,
    }
    return replay_id.encode(), orjson.dumps(marker)
