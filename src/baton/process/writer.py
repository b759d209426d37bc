"""The writer: shows the database's state on GitHub, one installation at a time per writer, most urgent first.

A writer holds an installation (`Budgets.hold`: one writer at a time across every process) and works through
its due issues, a 👍 waiting first. For each issue it sends, in this order: the 👍 on each applied command's
comment (the agent's signal); the one reply for all refusals and /help answers once their coalescing window
has closed (a race's refusals arrive within it and leave together, each line mentioning its author); the
ticket's three rails (labels, assignee, status comment, after asking GitHub what the evidence rail cannot
verify from webhooks, once per ticket what its issue's timeline names, and coming back 1, 3 and 7 seconds
after the first answer for a reported branch, commit or pull request GitHub did not find); last the
`baton/acceptance` check run on the head of each pull request it links.

Every write waits at the `Gate` for the installation's budget, shared through the database. While it waits,
a 👍 due on another issue of the installation goes first: the issue being written is put back and taken
again after it. A budget spent for longer than a moment (the per-minute or per-hour limit, a pause after a
rate limit) ends the writer's turn on the installation, and others are served meanwhile.

Issues only being offered come last (the outbox's lowest tier) and yield to any other issue due. Their
writes are held to offering's share of the budget (`Budgets.slot`): when it is spent, they wait until it
allows one again, and the writer goes on with everything else. Such an issue shows only its label: its
status comment comes once somebody acts on it (`comment_due`), carrying what they did.

GitHub failing is expected. A rate limit pauses the installation for every process as long as GitHub
says (`Retry-After`, or the reset time) and puts the issue back until then. 5xx, timeouts and lost
connections put the issue back after 1, 2, 4 … seconds and then every five minutes, for a day
(`MAX_ATTEMPTS` tries, `TRY_FOR`): an outage shorter than that loses no answer. Then the issue waits for its
next change. A write GitHub refuses for good (any other 4xx; a 404 or 410 for a comment or issue that is
gone) is never tried again: a refused 👍 or reply is dropped with the reason on its row (as is one that failed
on the issue's last try), and the issue's other writes go on; a refused label, assignee or status comment
leaves the reason on the issue's row until its next change, when everything is tried afresh. Each refusal is
logged once, with the operation and GitHub's answer.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from githubkit.exception import RequestError, RequestFailed

from baton.domain.evidence import EvidenceRail, Repository, Subject, pull_request_head
from baton.domain.model import TicketKey, WorkState
from baton.domain.status import Acceptance, BriefChange, CheckView, acceptance_check, comment_due, view
from baton.github.projection import GitHubProjector, WriteRefused
from baton.github.refusals import describe, failure, rate_limit, refused
from baton.github.verify import Verifier
from baton.service.evidence import EvidenceService
from baton.store import StoredTicket
from baton.store.budget import Budgets
from baton.store.issue_states import issue_state_of
from baton.store.outbox.marking import OFFERING, ORDINARY, URGENT
from baton.store.outbox.writing import MAX_ATTEMPTS, TRY_FOR, Due, Item, Outbox, backoff

log = logging.getLogger("baton.writer")

LOOK_BACK_AGAIN = 60.0  # seconds after GitHub failed to give an issue's timeline, it is asked again
LOOK_BACK_TRIES = 3


class CheckBusy(Exception):
    """Another writer is creating the check run on this head right now; try the issue again shortly."""


class Preempted(Exception):
    """A 👍 is due on another issue of the installation: it takes this write's place."""


class Stopping(Preempted):
    """The process is stopping while the write waits for its turn: it stays due, for this process after a restart
    or for another one."""


class AnswerFailed(Exception):
    """Writing the answers `item_ids` (a 👍, a reply) failed for a passing reason, raised from GitHub's error."""

    def __init__(self, item_ids: list[int], error: RequestError[Exception]) -> None:
        super().__init__(f"answers {item_ids} not sent")
        self.item_ids = item_ids
        self.error = error


class Spent(Exception):
    """The installation's budget allows no write before `until`."""

    def __init__(self, until: datetime) -> None:
        super().__init__(f"no GitHub write before {until.isoformat()}")
        self.until = until


class ShareSpent(Spent):
    """Offering's share of the installation's budget allows no offering write before `until`; other writes may
    go on."""


@dataclass
class _Turn:
    key: TicketKey
    urgency: int


class Gate:
    """Where each GitHub write waits for its installation's budget. A write that would wait longer than
    `patience` seconds raises `Spent` (`ShareSpent` when only offering's share is spent); one that is not a
    👍 raises `Preempted` when a 👍 is due elsewhere in the installation, and one that only offers an issue
    when anything else is."""

    def __init__(self, budgets: Budgets, outbox: Outbox, patience: float) -> None:
        self.budgets = budgets
        self.outbox = outbox
        self.patience = patience
        self._local = threading.local()
        self._stopping = threading.Event()

    def stop(self) -> None:
        """The process is stopping: a write waiting for its turn gives it up at once (`Stopping`)."""
        self._stopping.set()

    @contextmanager
    def turn(self, key: TicketKey) -> Iterator[_Turn]:
        """The writes made inside are about `key`, at the urgency the caller sets on the turn."""
        self._local.turn = turn = _Turn(key, URGENT)
        try:
            yield turn
        finally:
            self._local.turn = None

    def wait(self, installation_id: int) -> None:
        turn: _Turn | None = getattr(self._local, "turn", None)
        offering = turn is not None and turn.urgency >= OFFERING
        while True:
            now = self.budgets.clock.now()  # the budgets' time: the one their windows are kept in
            slot = self.budgets.slot(installation_id, now, offering=offering)
            if slot > now + timedelta(seconds=self.patience):
                if not offering:
                    raise Spent(slot)
                # the whole budget spent, or only offering's share of it (the rest stays for the answers)
                plain = self.budgets.slot(installation_id, now)
                raise ShareSpent(slot) if plain <= now + timedelta(seconds=self.patience) else Spent(plain)
            if (
                turn is not None
                and turn.urgency != URGENT
                and self.outbox.urgent_elsewhere(turn.key, now, below=turn.urgency)
            ):
                raise Preempted()
            if slot <= now:
                break
            if self._stopping.wait((slot - now).total_seconds()):
                raise Stopping()
        self.budgets.spend(installation_id, offering=offering)


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


def holder_name() -> str:
    """Who holds an installation: this process and thread, unique across machines."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


@dataclass
class Writer:
    outbox: Outbox
    projector: GitHubProjector
    budgets: Budgets
    gate: Gate
    evidence: EvidenceService | None = None
    verifier: Verifier | None = None
    _look_back_failures: dict[TicketKey, int] = field(default_factory=dict, init=False, repr=False)

    def drain(self) -> int:
        """Write everything due now, on this thread; returns how many issues were handled. (Tests, and a
        process that has one thread for it.)"""
        handled = 0
        while True:
            progress = sum(self.turn(installation_id) for installation_id in self.free())
            if not progress:
                return handled
            handled += progress

    def free(self) -> list[int]:
        """Installations with issues due that no other writer holds and whose budget allows a write soon."""
        now = self.outbox.clock.now()
        return self.outbox.due_installations(now + timedelta(seconds=max(1.0, self.budgets.limits.interval)), now)

    def turn(self, installation_id: int, stopping: Callable[[], bool] = lambda: False) -> int:
        """Hold the installation and write its due issues, most urgent first, until none is due, its budget
        makes it wait, or the process is `stopping`. Returns how many issues were handled; 0 when another
        writer holds it."""
        holder = holder_name()
        if not self.budgets.hold(installation_id, holder):
            return 0
        handled = 0
        try:
            with self.budgets.kept(installation_id, holder):
                while not stopping() and (due := self.outbox.most_urgent(installation_id)) is not None:
                    if handled and not self.budgets.renew(installation_id, holder):
                        break
                    handled += 1
                    if not self.handle(due):
                        break
        finally:
            self.budgets.release(installation_id, holder)
        return handled

    def handle(self, due: Due) -> bool:
        """Write one issue. False when the installation must wait (its budget is spent, or GitHub asked
        to pause): the writer's turn on it ends."""
        installation_id = due.key.installation_id
        try:
            with self.gate.turn(due.key) as turn:
                after = self._project(due, turn)
        except Preempted:
            self.outbox.later(due, self.outbox.clock.now())
        except ShareSpent as spent:  # only offering waits; the rest of the installation goes on
            self.outbox.offer_later(installation_id, spent.until)
        except Spent as spent:
            self.budgets.defer(installation_id, spent.until)
            return False
        except CheckBusy:
            self.outbox.retry(due, 2.0, "the check run is being created by another writer")
        except AnswerFailed as failed:
            if due.attempts + 1 >= MAX_ATTEMPTS and rate_limit(failed.error) is None:
                # The issue's last try: the answer goes, so that the rest is not held behind it.
                hours = TRY_FOR.total_seconds() / 3600
                reason = f"not sent after {MAX_ATTEMPTS} tries in {hours:.0f} hours: {failure(failed.error)}"
                self._drop(due, failed.item_ids, reason)
                self.outbox.retry(due, backoff(0), reason, fresh=True)
                return True
            return self._failed(due, failed.error)
        except WriteRefused as refusal:
            self._refused(due, str(refusal))
        except RequestError as error:
            return self._failed(due, error)
        else:
            self.outbox.later(due, after)
        return True

    def _failed(self, due: Due, error: RequestError[Exception]) -> bool:
        """Put the issue back after GitHub failed it; False when the installation must wait."""
        installation_id, where = due.key.installation_id, f"{due.repository}#{due.key.number}"
        wait = rate_limit(error)
        if wait is not None:
            wait = max(1.0, wait)
            reason = f"rate limited for {wait:.0f} s: {failure(error)}"
            self.budgets.pause(installation_id, self.outbox.clock.now() + timedelta(seconds=wait), reason)
            self.outbox.retry(due, wait, reason, count=False)  # a rate limit is not the issue's fault
            log.warning("%s: %s", where, reason)
            return False
        if refused(error):
            assert isinstance(error, RequestFailed)
            self._refused(due, describe(error))
            return True
        reason = failure(error)
        if due.attempts + 1 >= MAX_ATTEMPTS:
            log.warning("%s: %s; given up after %s tries until the issue changes", where, reason, MAX_ATTEMPTS)
        else:
            log.warning("%s: %s; trying again", where, reason)
        self.outbox.retry(due, backoff(due.attempts), reason)
        return True

    def _refused(self, due: Due, reason: str) -> None:
        """GitHub refused a write about the issue itself for good: the reason stays on its row, and the
        issue waits for its next change."""
        log.warning("%s#%s: GitHub refused %s; not tried again until the issue changes",
                    due.repository, due.key.number, reason)  # fmt: skip
        self.outbox.park(due, f"refused: {reason}")

    def _drop(self, due: Due, item_ids: list[int], reason: str) -> None:
        log.warning("%s#%s: answers %s dropped: %s", due.repository, due.key.number, item_ids, reason)
        self.outbox.drop(item_ids, reason)

    @contextmanager
    def _answer(self, due: Due, items: list[Item]) -> Iterator[None]:
        """Write answers: one GitHub refuses for good is dropped with the reason, and the issue goes on."""
        ids = [item.id for item in items]
        try:
            yield
        except RequestError as error:
            if not refused(error):
                raise AnswerFailed(ids, error) from error
            assert isinstance(error, RequestFailed)
            self._drop(due, ids, f"refused: {describe(error)}")

    def _project(self, due: Due, turn: _Turn) -> datetime | None:
        """The issue's writes, most awaited first. Returns when the rest is due (a reply's coalescing window
        still open), or None when GitHub shows everything."""
        key, repository = due.key, due.repository
        items = self.outbox.items(key)
        for item in items:
            if item.kind == "reaction":
                with self._answer(due, [item]):
                    self.projector.react(key.installation_id, repository, key.number, item.comment_id)
                    self.outbox.sent([item.id])
        turn.urgency = max(ORDINARY, due.urgency)
        replies = [item for item in items if item.kind == "reply"]
        opens = min((item.due_at for item in replies if item.due_at is not None), default=None)
        if opens is not None and opens > self.outbox.clock.now():
            return opens  # more refusals may still join the reply; what follows it waits with it
        if replies:
            with self._answer(due, replies):
                self._reply(due, replies)
        stored, review, past_runners = self.outbox.ticket(key)
        if stored is None:
            return None
        where = Repository(key.repository_key, repository)
        rail, again = self._verified(where, key.number)
        refusal: WriteRefused | None = None
        issue = issue_state_of(self.outbox.engine, key)
        blockers = self.outbox.blockers(key) if stored.ticket.state is WorkState.OPEN else []
        shown = view(stored.ticket, review, rail, self.outbox.quiet(key), self._brief_changes(stored), issue, blockers)
        known = self.outbox.status_comment(key)
        # Until somebody acts on an offered issue, its label is all it costs (a backlog of hundreds); a link to an
        # issue it waits for is somebody acting on it, and the comment says which.
        answered = bool(items) or shown.blocked or self.outbox.answered(key)
        comment = known is not None or comment_due(stored.ticket, rail, answered)
        try:
            comment_id: int | None = self.projector.show(
                key.installation_id, repository, key.number, shown, past_runners, known, comment=comment,
            )  # fmt: skip
        except WriteRefused as refusing:  # the rest was written; the check runs are still due
            refusal, comment_id = refusing, refusing.comment_id
        if comment_id is not None:
            self.outbox.remember_status_comment(key, comment_id)
        if rail is not None:
            self._checks(where, rail)
        if refusal is not None:
            raise refusal
        return again  # a reported item GitHub did not find yet is asked about again shortly

    def _brief_changes(self, stored: StoredTicket) -> list[BriefChange]:
        """The brief's changes, read only while a runner works on the ticket (the status comment shows them then)."""
        if stored.ticket.state not in (WorkState.CLAIMED, WorkState.DELIVERED):
            return []
        return self.outbox.brief_changes(stored.id)

    def _verified(self, where: Repository, number: int) -> tuple[EvidenceRail | None, datetime | None]:
        """The ticket's rail, after recording what GitHub answers about what it cannot verify yet; and, while a
        reported item GitHub did not find is being asked about again, when."""
        if self.evidence is None:
            return None, None
        key = where.key.ticket(number)
        rail = self.evidence.rail(key)
        if self.verifier is None:
            return rail, None
        rail, back = self._looked_back(where, key, rail)
        answers = self.verifier.answers(where, rail)
        if answers.found and self.evidence.record(where, answers.found, "github-api"):
            rail = self.evidence.rail(key)
        return rail, min((at for at in (back, answers.again) if at is not None), default=None)

    def _looked_back(
        self, where: Repository, key: TicketKey, rail: EvidenceRail
    ) -> tuple[EvidenceRail, datetime | None]:
        """Once per ticket, the pull requests its issue's timeline on GitHub names, recorded as facts: work done
        before Baton was installed. GitHub failing to answer (but for a rate limit, which pauses the installation
        as any failure does) never holds the ticket back: it is shown, and comes back `LOOK_BACK_AGAIN` seconds
        later to ask again, `LOOK_BACK_TRIES` times at most in this process (then at its next change)."""
        assert self.evidence is not None and self.verifier is not None
        if self.evidence.looked_back(key):
            return rail, None
        try:
            found = self.verifier.timeline(where, rail)
        except RequestError as error:
            if rate_limit(error) is not None:
                raise
            tries = self._look_back_failures.get(key, 0) + 1
            self._look_back_failures[key] = tries
            log.warning("%s#%s: its timeline not read: %s", where.name, key.number, failure(error))
            if tries >= LOOK_BACK_TRIES:
                return rail, None
            return rail, self.outbox.clock.now() + timedelta(seconds=LOOK_BACK_AGAIN)
        self._look_back_failures.pop(key, None)
        if self.evidence.look_back(where, key.number, found, "github-api"):
            rail = self.evidence.rail(key)
        return rail, None

    def _reply(self, due: Due, replies: list[Item]) -> None:
        key, repository = due.key, due.repository
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
            if (
                head not in opened
                and self.outbox.check_run(where.key.installation_id, where.key.repository_id, head) is None
            ):
                continue
            wanted = acceptance_check(head, self._acceptances(where, numbers))
            try:
                self._check(where, head, wanted)
            except RequestFailed as error:
                # Refused for good (no `checks` permission on this installation, a head GitHub does not
                # know): the check is left out, and the rest of the issue is still shown.
                if not refused(error):
                    raise
                log.warning("%s: GitHub refused the check run on %s: %s", where.name, head[:7], describe(error))

    def _acceptances(self, where: Repository, numbers: list[int]) -> list[Acceptance]:
        """Every tracked ticket the pull requests at one head link: the check passes only when all of them
        are accepted."""
        assert self.evidence is not None
        found: dict[TicketKey, EvidenceRail] = {}
        for number in numbers:
            for key, rail in self.evidence.holding(where, Subject.pull_request(number)):
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
        crash or a second writer never leaves two runs where one belongs."""
        installation_id, repository_id = where.key.installation_id, where.key.repository_id
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
