"""The worker: drains the outbox onto GitHub.

For each due issue it first asks GitHub what the evidence rail cannot verify from webhooks (the reported
branch and pull request, the comparisons a deployment needs, which failing checks are required) and records
the answers as facts. Then it shows the ticket's three rails (labels, assignee, status comment), answers the
commands queued for it (a 👍 on each applied command's comment, and one reply for all refusals and /help
answers, each line mentioning its author; refusals of one race arrive within the coalescing delay and leave
in that single reply), and last sets the `baton/acceptance` check run on the head of each pull request the
ticket links.

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

from baton.domain.evidence import EvidenceRail, pull_request_head
from baton.domain.model import TicketKey
from baton.domain.status import Acceptance, CheckView, acceptance_check, view
from baton.evidence import EvidenceService, Repository
from baton.github.projection import GitHubProjector
from baton.github.verify import Verifier
from baton.store.outbox import Due, Item, Outbox

log = logging.getLogger("baton.worker")

# GitHub refusing a check run for good (no `checks` permission on this installation, a head it does not
# know): the check is left out, and the rest of the issue is still shown.
CHECK_REFUSALS = frozenset({403, 404, 422})


class CheckBusy(Exception):
    """Another worker is creating the check run on this head right now; try the issue again shortly."""


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
    evidence: EvidenceService | None = None
    verifier: Verifier | None = None

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
        except CheckBusy:
            self.outbox.retry(due, 2.0, "the check run is being created by another worker")
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
        rail: EvidenceRail | None = None
        where = Repository(key.installation_id, key.repository_id, repository)
        if stored is not None:
            rail = self._verified(where, key.number)
            comment_id = self.projector.show(
                key.installation_id, repository, key.number, view(stored.ticket, review, rail), past_runners,
                self.outbox.status_comment(key),
            )  # fmt: skip
            self.outbox.remember_status_comment(key, comment_id)
        self._answer(due)
        if rail is not None:
            self._checks(where, rail)

    def _verified(self, where: Repository, number: int) -> EvidenceRail | None:
        """The ticket's rail, after recording what GitHub answers about what it cannot verify yet."""
        if self.evidence is None:
            return None
        key = TicketKey(where.installation_id, where.repository_id, number)
        rail = self.evidence.rail(key)
        if self.verifier is not None:
            answers = self.verifier.answers(where, rail)
            if answers and self.evidence.record(where, answers, "github-api"):
                rail = self.evidence.rail(key)
        return rail

    def _answer(self, due: Due) -> None:
        key, repository = due.key, due.repository
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

    # -- the baton/acceptance check run --------------------------------------------------------------

    def _checks(self, where: Repository, rail: EvidenceRail) -> None:
        """The check on the head of each pull request the ticket links: created on open ones, and kept up
        to date on merged or closed ones that already have it."""
        heads: dict[str, list[int]] = {}
        opened: set[str] = set()
        for pr in rail.linked_pull_requests():
            head, _ = pull_request_head(rail, pr)
            heads.setdefault(head, []).append(pr.number)
            if pr.open:
                opened.add(head)
        for head, numbers in sorted(heads.items()):
            if head not in opened and self.outbox.check_run(where.installation_id, where.repository_id, head) is None:
                continue
            wanted = acceptance_check(head, self._acceptances(where, numbers))
            try:
                self._check(where, head, wanted)
            except RequestFailed as error:
                if error.response.status_code not in CHECK_REFUSALS:
                    raise
                log.warning("%s: GitHub refused the check run on %s (%s)", where.name, head[:7],
                            error.response.status_code)  # fmt: skip

    def _acceptances(self, where: Repository, numbers: list[int]) -> list[Acceptance]:
        """Every tracked ticket the pull requests at one head link: the check passes only when all of them
        are accepted."""
        assert self.evidence is not None
        found: dict[TicketKey, EvidenceRail] = {}
        for number in numbers:
            for key, rail in self.evidence.holding(where, f"pr:{number}"):
                if any(pr.number in numbers for pr in rail.linked_pull_requests()):
                    found[key] = rail
        parts = []
        for key in sorted(found, key=lambda k: k.number):
            stored, review, _ = self.outbox.ticket(key)
            if stored is not None:
                parts.append(Acceptance(stored.ticket, review, self.outbox.accepted_heads(stored.id)))
        return parts

    def _check(self, where: Repository, head: str, wanted: CheckView) -> None:
        """Write only what differs. A completed run that must wait again is followed by a new run (GitHub
        reads the newest run of a name); the right to create one is taken in the database first, so a
        crash or a second worker never leaves two runs where one belongs."""
        installation_id, repository_id = where.installation_id, where.repository_id
        known = self.outbox.check_run(installation_id, repository_id, head)
        if known is not None and known.check_run_id is not None and known.shown is not None:
            if known.shown == wanted:
                return
            if not (known.shown.status == "completed" and wanted.status != "completed"):
                self.projector.update_check_run(installation_id, where.name, known.check_run_id, wanted)
                self.outbox.record_check_run(installation_id, repository_id, head, known.check_run_id, wanted)
                return
        replacing = known.check_run_id if known is not None else None
        claim = self.outbox.claim_check_creation(installation_id, repository_id, head, replacing)
        if claim is None:
            raise CheckBusy(head)
        if claim == "recover":
            found = self.projector.find_check_run(installation_id, where.name, head)
            if found is not None and not (found[1].status == "completed" and wanted.status != "completed"):
                run_id, shown = found
                if shown != wanted:
                    self.projector.update_check_run(installation_id, where.name, run_id, wanted)
                self.outbox.record_check_run(installation_id, repository_id, head, run_id, wanted)
                return
        run_id = self.projector.create_check_run(installation_id, where.name, head, wanted)
        self.outbox.record_check_run(installation_id, repository_id, head, run_id, wanted)


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
