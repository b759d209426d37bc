"""The App's webhook delivery log on GitHub: its pages (`GET /app/hook/deliveries`) and asking for a
redelivery (`POST /app/hook/deliveries/{id}/attempts`). Both are the App's own calls: they carry the App's
JWT, never an installation token.

GitHub lists the newest entries first and pages with a cursor it names in the `Link` header's `rel="next"`.
Entries are read leniently, field by field (an entry without a usable id or GUID is left out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from githubkit.utils import UNSET

from .client import GitHubApp
from .webhooks import text

PAGE = 100
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


@dataclass(frozen=True)
class Attempt:
    """One entry of GitHub's delivery log: one attempt to deliver the event `guid`."""

    id: int
    guid: str  # the `X-GitHub-Delivery` of the attempt, shared by every redelivery of the event
    delivered_at: datetime
    status_code: int  # Baton's answer; 0 when there was none (connection refused, timed out)
    event: str
    redelivery: bool = False

    @property
    def failed(self) -> bool:
        return not 200 <= self.status_code < 300


def attempt(data: Any) -> Attempt | None:
    """An entry of the log as GitHub lists it; None when it lacks what the sweep needs."""
    if not isinstance(data, dict):
        return None
    attempt_id, code, guid = data.get("id"), data.get("status_code"), text(data, "guid")
    if not isinstance(attempt_id, int) or isinstance(attempt_id, bool) or not guid:
        return None
    try:
        delivered = datetime.fromisoformat(text(data, "delivered_at").replace("Z", "+00:00"))
    except ValueError:
        return None
    delivered = delivered if delivered.tzinfo else delivered.replace(tzinfo=UTC)
    status_code = code if isinstance(code, int) and not isinstance(code, bool) else 0
    return Attempt(attempt_id, guid, delivered, status_code, text(data, "event"), data.get("redelivery") is True)


def next_cursor(link: str | None) -> str | None:
    """The cursor of the next page, from a `Link` header; None on the last page."""
    found = _NEXT.search(link or "")
    if found is None:
        return None
    cursors = parse_qs(urlsplit(found.group(1)).query).get("cursor")
    return cursors[0] if cursors else None


class GitHubHookDeliveries:
    def __init__(self, github: GitHubApp) -> None:
        self.github = github

    def page(self, cursor: str | None) -> tuple[list[Attempt], str | None]:
        """One page of the log, newest first, and the cursor of the next (None: this was the last).
        Raises githubkit's `RequestError` when GitHub fails, refuses or cannot be reached."""
        response = self.github.app.rest.apps.list_webhook_deliveries(per_page=PAGE, cursor=cursor or UNSET)
        data = response.json()
        entries = [found for item in (data if isinstance(data, list) else []) if (found := attempt(item))]
        return entries, next_cursor(response.headers.get("link"))

    def redeliver(self, attempt_id: int) -> None:
        """Ask GitHub to deliver the log's entry `attempt_id` again (with its GUID). Raises `RequestError`."""
        self.github.app.rest.apps.redeliver_webhook_delivery(attempt_id)
