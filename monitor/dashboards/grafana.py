"""Provisioning through Grafana's HTTP API: a folder, then every dashboard into it.

Requests (Grafana's dashboard API, via grafana-client's `GrafanaApi`, formerly `GrafanaFace`):
`GET /api/folders` to find the folder by title, `POST /api/folders` to create it when missing,
then `POST /api/dashboards/db` with `{dashboard, folderUid, overwrite: true}` per dashboard.
Stable dashboard uids make a second push overwrite, never duplicate. The token goes only into
the `Authorization: Bearer` header: no message, log line or error carries it.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from typing import Any

import niquests
from grafana_client.api import GrafanaApi
from grafana_client.client import GrafanaException

from monitor.dashboards.model import Dashboard
from monitor.errors import RankmonError, one_line
from monitor.values import mask_url

__all__ = ["GrafanaTarget", "folder_uid"]

TIMEOUT_SECONDS = 10.0


def folder_uid(title: str) -> str:
    """The uid given to a folder rankmon creates: its title as a slug (`Ranking quality` ->
    `ranking-quality`), so that re-running push finds the same folder."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:40] or "rankmon"


class GrafanaTarget:
    """One Grafana instance, reached with a service-account token."""

    def __init__(self, url: str, token: str) -> None:
        if not token:
            raise RankmonError("the Grafana token is empty")
        self.url = mask_url(url)
        # grafana-client's methods are unannotated; `Any` keeps mypy's strict mode honest
        # about that instead of pretending they are typed.
        self._api: Any = GrafanaApi.from_url(url, credential=token, timeout=TIMEOUT_SECONDS)

    def ensure_folder(self, title: str) -> str:
        """The uid of the folder titled `title`, created when Grafana has none."""
        folders = self._call(self._api.folder.get_all_folders)
        for folder in folders or []:
            if isinstance(folder, dict) and folder.get("title") == title:
                return str(folder["uid"])
        created = self._call(self._api.folder.create_folder, title, uid=folder_uid(title))
        return str(created["uid"])

    def push(self, dashboards: Sequence[Dashboard], folder: str) -> list[str]:
        """Provision the folder and the dashboards; returns each dashboard's Grafana URL path."""
        uid = self.ensure_folder(folder)
        paths: list[str] = []
        for dashboard in dashboards:
            body = {"dashboard": dashboard.to_dict(), "folderUid": uid, "overwrite": True}
            answer = self._call(self._api.dashboard.update_dashboard, body)
            paths.append(str(answer.get("url", dashboard.uid)) if isinstance(answer, dict) else "")
        return paths

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except GrafanaException as error:
            status = f"HTTP {error.status_code}: " if error.status_code else ""
            raise RankmonError(f"Grafana at {self.url}: {status}{_one_line(error)}") from error
        except niquests.exceptions.RequestException as error:
            reason = _network_reason(error)
            raise RankmonError(f"cannot reach Grafana at {self.url}: {reason}") from error


def _one_line(error: BaseException) -> str:
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return one_line(" ".join(str(message).split()))


def _network_reason(error: BaseException) -> str:
    """What the system said, from the bottom of the HTTP client's chain of wrapped errors
    (`ConnectionError(MaxRetryError(NewConnectionError(<object at 0x...>: ...)))`)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and not any(current is s for s in seen):
        seen.append(current)
        reason = getattr(current, "reason", None)
        wrapped = [a for a in current.args if isinstance(a, BaseException)]
        current = current.__cause__ or (
            reason if isinstance(reason, BaseException) else (wrapped[0] if wrapped else None)
        )
    for cause in reversed(seen):
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host ({cause.strerror or cause})"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        if isinstance(cause, TimeoutError | niquests.exceptions.Timeout):
            return f"no answer within {TIMEOUT_SECONDS:g} s"
    return _one_line(seen[-1])
