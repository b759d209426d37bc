"""The App's webhook delivery log, as GitHub keeps it: one entry per attempt to deliver a webhook (a
redelivery is an entry of its own, with the event's GUID), and the two App operations on it:

- `GET /app/hook/deliveries`: newest first, `per_page` (at most 100, 30 by default), a `cursor` the `Link`
  header names with `rel="next"` while older entries remain, `status` (`success`: a `status_code` of 200 to
  399, `failure`: 400 to 599);
- `POST /app/hook/deliveries/{delivery_id}/attempts`: 202, and the entry's webhook is sent again (same
  GUID, event and body) after those waiting; 404 for an id the log does not have.

Both want the App's JWT, as GitHub does (the server checks it before they run).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

Json = Any


@dataclass
class Entry:
    """One attempt, with GitHub's fields (`fields()`); `body` is what was sent, for a redelivery."""

    id: int
    guid: str
    delivered_at: datetime
    redelivery: bool
    duration: float
    status: str
    status_code: int
    event: str
    action: str | None
    installation_id: int | None
    repository_id: int | None
    body: bytes

    @property
    def failed(self) -> bool:
        return not 200 <= self.status_code < 300

    def fields(self) -> Json:
        return {
            "id": self.id, "guid": self.guid, "delivered_at": self.delivered_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "redelivery": self.redelivery, "duration": round(self.duration, 2), "status": self.status,
            "status_code": self.status_code, "event": self.event, "action": self.action,
            "installation_id": self.installation_id, "repository_id": self.repository_id, "throttled_at": None,
        }  # fmt: skip


def outcome(status_code: int | None, error: BaseException | None) -> tuple[str, int]:
    """GitHub's `status` and `status_code` for an attempt: Baton's answer, or why there was none."""
    if status_code is not None:
        return ("OK" if 200 <= status_code < 300 else f"Invalid HTTP Response: {status_code}"), status_code
    timed_out = error is not None and "timeout" in type(error).__name__.lower()
    return ("timed out" if timed_out else "failed to connect"), 0


class HookLog:
    """The log. `resend(entry)` is how the hub sends an entry's webhook again (set by the hub)."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self.entries: list[Entry] = []  # oldest first
        self.resend: Callable[[Entry], None] | None = None
        self._ids = itertools.count(70_000_000_001)

    def record(
        self,
        guid: str,
        event: str,
        body: bytes,
        delivered_at: datetime,
        duration: float,
        answered: int | None,
        error: BaseException | None,
        *,
        redelivery: bool = False,
    ) -> Entry:
        """An attempt to deliver `body`: Baton `answered` with that status, or not at all (`error`)."""
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        status, status_code = outcome(answered, error)
        with self.lock:
            entry = Entry(next(self._ids), guid, delivered_at, redelivery, duration, status, status_code, event,
                          _field(payload, "action"), _field(payload, "installation", "id"),
                          _field(payload, "repository", "id"), body)  # fmt: skip
            self.entries.append(entry)
            return entry

    def failed(self) -> list[Entry]:
        with self.lock:
            return [entry for entry in self.entries if entry.failed]

    def page(self, base: str, query: dict[str, str]) -> tuple[Json, dict[str, str]]:
        """A page of the log, newest first, and the `Link` header that names the next."""
        per_page = max(1, min(100, int(query.get("per_page") or 30)))
        newest_first = list(reversed(self.entries))
        kept = {"success": range(200, 400), "failure": range(400, 600)}.get(query.get("status", ""))
        if kept is not None:  # GitHub's outcome classes, by `status_code`
            newest_first = [entry for entry in newest_first if entry.status_code in kept]
        start = 0
        cursor = query.get("cursor")
        if cursor:
            # GitHub's cursors are opaque; this one names the first entry of the page.
            start = next((n for n, entry in enumerate(newest_first) if f"v1_{entry.id}" == cursor), len(newest_first))
        shown = newest_first[start : start + per_page]
        headers: dict[str, str] = {}
        if start + per_page < len(newest_first):
            following = f"v1_{newest_first[start + per_page].id}"
            headers["link"] = f'<{base}/app/hook/deliveries?per_page={per_page}&cursor={following}>; rel="next"'
        return [entry.fields() for entry in shown], headers

    def answer(self, base: str, method: str, path: str, query: dict[str, str]) -> tuple[int, Json, dict[str, str]]:
        """GitHub's answer to an operation on the log (its caller checked the App's JWT): status, body, headers."""
        if method == "GET" and path == "/app/hook/deliveries":
            page, link = self.page(base, query)
            return 200, page, link
        again = re.fullmatch(r"/app/hook/deliveries/([0-9]+)/attempts", path)
        if method == "POST" and again is not None and self.redeliver(int(again.group(1))):
            return 202, {}, {}
        return 404, None, {}

    def redeliver(self, delivery_id: int) -> bool:
        """Send entry `delivery_id` again; False when the log has no such entry."""
        entry = next((entry for entry in self.entries if entry.id == delivery_id), None)
        if entry is None or self.resend is None:
            return False
        self.resend(entry)
        return True


def _field(payload: Any, *path: str) -> Any:
    """`payload[a][b]…`, or None where the path breaks."""
    for key in path:
        payload = payload.get(key) if isinstance(payload, dict) else None
    return payload
