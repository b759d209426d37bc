"""A stored hook with its payload parsed once, and the fields every handler asks for."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from baton.domain import RepositoryKey, TicketKey
from baton.domain.evidence import Repository
from baton.github.webhooks import Unreadable, full_name, login, number, read_json, text
from baton.store.inbox import Hook


@dataclass(frozen=True)
class Envelope:
    """Where a hook happened (installation, repository) and who caused it (the sender), read leniently:
    a field GitHub left out is None or "", and each handler decides what it cannot do without."""

    hook: Hook
    payload: dict[str, Any]
    installation_id: int | None
    repository_id: int | None
    repository: str  # "owner/name"
    sender: str  # the login of whoever caused the event
    sender_is_bot: bool

    @classmethod
    def open(cls, hook: Hook, parsed: Parsed | None = None) -> Envelope | None:
        """The hook's envelope; None when its payload is not a JSON object. `Unreadable` when the payload
        is not JSON Baton reads, or its installation, repository or sender is none GitHub can send. `parsed`:
        what the webhook route of this process parsed already."""
        kept = parsed.take(hook.id, hook.payload) if parsed is not None else None
        try:
            payload = read_json(hook.payload) if kept is None else kept
        except (ValueError, RecursionError) as error:  # stored before the webhook endpoint checked as it does now
            raise Unreadable(f"the payload is not JSON Baton reads: {type(error).__name__}") from None
        if not isinstance(payload, dict):
            return None
        return cls(
            hook,
            payload,
            number(payload, "installation", "id"),
            number(payload, "repository", "id"),
            full_name(payload, "repository", "full_name"),
            login(payload, "sender", "login"),
            text(payload, "sender", "type") == "Bot",
        )

    @property
    def action(self) -> str:
        return text(self.payload, "action")

    def ticket(self, number: int | None) -> TicketKey | None:
        """The key of issue `number` in this hook's repository; None when any part is missing."""
        if self.installation_id is None or self.repository_id is None or number is None:
            return None
        return TicketKey(self.installation_id, self.repository_id, number)

    def place(self) -> Repository | None:
        """The repository as evidence keys it (its installation, id and name); None when a part is missing."""
        if self.installation_id is None or self.repository_id is None or not self.repository:
            return None
        return Repository(RepositoryKey(self.installation_id, self.repository_id), self.repository)

    def operation(self, what: str, index: int) -> str:
        """The id of the `index`-th command of `what` (a comment, an issue body, a review): the same on every
        redelivery, so a command is never applied twice."""
        return f"{self.installation_id}:{what}:{index}"


class Parsed:
    """Payloads the webhook route parsed (to check them) kept a moment for the decide lane of the same process,
    which would parse each again: a GitHub payload is some 10 KB, about 30 µs to parse. A payload is given once,
    and only for the very text it was parsed from; at most `most` are kept, the oldest forgotten first (parsed
    again when their turn comes). Only a hook stored new is kept: its stored payload is that very text (a payload
    is written once), so the decide lane need not read it back either (`text`)."""

    def __init__(self, most: int = 256) -> None:
        self.most = most
        self._kept: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, hook_id: str, text: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self._kept[hook_id] = (text, payload)
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)

    def text(self, hook_id: str) -> str | None:
        """The text of the payload kept for `hook_id`, still kept (what `Inbox.take_pending` need not read back)."""
        with self._lock:
            kept = self._kept.get(hook_id)
        return kept[0] if kept is not None else None

    def take(self, hook_id: str, text: str) -> dict[str, Any] | None:
        with self._lock:
            kept = self._kept.pop(hook_id, None)
        return kept[1] if kept is not None and kept[0] == text else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
