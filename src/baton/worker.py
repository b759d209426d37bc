"""The worker: drains the outbox onto GitHub.

For each due issue it shows the ticket's state (labels, assignee, status comment), then answers the
commands queued for it: a 👍 on each applied command's comment, and one reply for all refusals and
/help answers, each line mentioning its author. Refusals of one race arrive within the coalescing
delay and leave in that single reply.

GitHub failing is expected: 5xx, timeouts and rate limits put the issue back with a delay (rate limits
say how long: `Retry-After` or the reset time); other 4xx are recorded on the row and retried with a
longer delay, up to a bound, so one broken issue never blocks the others.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from githubkit.exception import (
    PrimaryRateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
    SecondaryRateLimitExceeded,  # fmt: skip
)

from baton.domain.status import view
from baton.github.projection import GitHubProjector
from baton.store.outbox import Due, Item, Outbox

log = logging.getLogger("baton.worker")


def _backoff(attempts: int) -> float:
    return float(min(300, 2**attempts))


def reply_text(items: list[Item]) -> str:
    """One comment for many answers; identical messages share a line that mentions all their authors."""
    lines: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if item.author not in lines[item.message]:
            lines[item.message].append(item.author)
    return "\n\n".join(_mention(authors, message) for message, authors in lines.items())


def _mention(authors: list[str], message: str) -> str:
    """`@a @b message`, unless the message already begins by naming its one author."""
    if len(authors) == 1 and message.startswith(f"@{authors[0]} "):
        return message
    return " ".join(f"@{author}" for author in authors) + f" {message}"


@dataclass
class Worker:
    outbox: Outbox
    projector: GitHubProjector

    def drain(self, limit: int = 10) -> int:
        """Work through what is due now; returns how many issues were handled (done or put back)."""
        handled = 0
        while True:
            batch = self.outbox.take(limit)
            if not batch:
                return handled
            for due in batch:
                self.handle(due)
                handled += 1

    def idle(self, longest: float) -> float:
        """Seconds until the next issue is due (at most `longest`), so answers leave on time."""
        due = self.outbox.next_due()
        if due is None:
            return longest
        return max(0.01, min(longest, (due - datetime.now(UTC)).total_seconds()))

    def handle(self, due: Due) -> None:
        try:
            self._project(due)
        except (SecondaryRateLimitExceeded, PrimaryRateLimitExceeded) as error:
            wait = error.retry_after.total_seconds() if error.retry_after else _backoff(due.attempts + 1)
            self.outbox.retry(due, max(1.0, wait), f"rate limited: {type(error).__name__}")
        except (RequestTimeout, RequestError) as error:
            self.outbox.retry(due, _backoff(due.attempts), f"{type(error).__name__}: GitHub did not answer")
        except RequestFailed as error:
            status = error.response.status_code
            delay = _backoff(due.attempts) if status >= 500 else _backoff(due.attempts + 4)
            self.outbox.retry(due, delay, f"GitHub answered {status}")
            log.warning("%s#%s: GitHub answered %s", due.repository, due.key.number, status)
        else:
            self.outbox.done(due)

    def _project(self, due: Due) -> None:
        key, repository = due.key, due.repository
        stored, review, past_runners = self.outbox.ticket(key)
        if stored is not None:
            comment_id = self.projector.show(
                key.installation_id, repository, key.number, view(stored.ticket, review), past_runners,
                self.outbox.status_comment(key),
            )  # fmt: skip
            self.outbox.remember_status_comment(key, comment_id)
        items = self.outbox.items(key)
        for item in items:
            if item.kind == "reaction":
                self.projector.react(key.installation_id, repository, key.number, item.comment_id)
                self.outbox.sent([item.id])
        replies = [item for item in items if item.kind == "reply"]
        while replies:
            ids = [item.id for item in replies]
            found = self.projector.find_reply(key.installation_id, repository, key.number, ids[0])
            if found is None:
                posted = self.projector.post_reply(
                    key.installation_id, repository, key.number, ids, reply_text(replies)
                )
                self.outbox.sent(ids, posted)
                return
            # Posted before a crash and never recorded: record it, and post only what it did not carry.
            comment_id, carried = found
            self.outbox.sent([i for i in ids if i in carried], comment_id)
            replies = [item for item in replies if item.id not in carried]


class Background:
    """The in-process worker: a thread that runs `work` when woken and at least every `interval`
    seconds. `work` does one round and says how long to wait before the next."""

    def __init__(self, work: Callable[[], float], interval: float = 1.0) -> None:
        self.work = work
        self.interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="baton-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            wait = self.interval
            try:
                wait = self.work()
            except Exception:  # a database hiccup must not end the thread; the rows are still there
                log.exception("a worker round failed")
            self._wake.wait(wait)
