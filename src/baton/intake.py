"""From a stored webhook delivery to commands applied and evidence recorded: the routing table and its handlers.

A command handler reads the few fields it needs from the payload (leniently), works out who the actor is,
and hands each command to the work service with an operation id derived from the comment or issue, so
processing a delivery twice (a redelivery after a failure) never applies anything twice.

An evidence handler (branches, pull requests, checks, deployments, an issue closed or reopened) turns the
payload into facts and hands them to the evidence service, which has no path to the work state. Facts are
joins, so processing one twice changes nothing either.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from githubkit.exception import RequestError, RequestFailed
from sqlalchemy.exc import DBAPIError, IntegrityError

from baton.commands import parse
from baton.domain import Actor, Permission, Policy, TicketKey
from baton.domain.evidence import stamp
from baton.evidence import EvidenceService
from baton.github.configs import DefaultConfigs, Loaded
from baton.github.facts import EVIDENCE_EVENTS, observe, repository_of
from baton.github.webhooks import dig, number, text
from baton.linking import linked_issues
from baton.service import Issue, Outcome, Request, Source, WorkService
from baton.store.inbox import Delivery, Inbox
from baton.store.installations import Installations

log = logging.getLogger("baton.intake")


class Directory(Protocol):
    """Who a GitHub user is in a repository. The GitHub-backed one asks the collaborator API."""

    def permission(self, installation_id: int, repository: str, login: str) -> Permission: ...


class Configs(Protocol):
    """A repository's settings (`.github/baton.yml`)."""

    def load(self, installation_id: int, repository: str) -> Loaded: ...


class DirectoryUnavailable(RuntimeError):
    """Permissions cannot be read; the delivery fails and a redelivery can process it later."""


class NoDirectory:
    def permission(self, installation_id: int, repository: str, login: str) -> Permission:
        raise DirectoryUnavailable(
            "repository permissions cannot be read: set BATON_APP_ID and BATON_PRIVATE_KEY "
            "(or BATON_PRIVATE_KEY_PATH) so Baton can ask GitHub"
        )


Handler = Callable[["Intake", dict[str, Any], Delivery], tuple[Outcome, ...]]


@dataclass
class Intake:
    work: WorkService
    directory: Directory
    configs: Configs = field(default_factory=DefaultConfigs)
    app_id: int | None = None
    installations: Installations | None = None
    evidence: EvidenceService | None = None

    def _active(self, payload: dict[str, Any]) -> bool:
        """An uninstalled or suspended installation's commands stop; its history stays."""
        installation_id = number(payload, "installation", "id")
        return self.installations is None or installation_id is None or self.installations.active(installation_id)

    def handle(self, delivery: Delivery) -> tuple[str, tuple[Outcome, ...]]:
        """`("done", outcomes)` or `("ignored", ())` for events and actions Baton does not act on."""
        handler = HANDLERS.get((delivery.event, delivery.action or ""))
        if handler is None:
            return "ignored", ()
        payload = json.loads(delivery.payload)
        if not isinstance(payload, dict):
            return "ignored", ()
        return "done", handler(self, payload, delivery)

    def warm(self, deliveries: Sequence[Delivery]) -> None:
        """Find out, all at once, who the authors of the commands among `deliveries` are, where the
        directory can (GitHub's answers arrive side by side instead of one after another)."""
        warm = getattr(self.directory, "warm", None)
        if warm is None:
            return
        wanted: set[tuple[int, str, str]] = set()
        for delivery in deliveries:
            if (delivery.event, delivery.action or "") not in COMMAND_READERS or "/" not in delivery.payload:
                continue
            try:
                payload = json.loads(delivery.payload)
            except ValueError:
                continue
            installation_id = number(payload, "installation", "id")
            repository, login = text(payload, "repository", "full_name"), text(payload, "sender", "login")
            if installation_id is not None and repository and login:
                wanted.add((installation_id, repository, login))
        warm(wanted)

    def requests(self, delivery: Delivery) -> list[Request] | None:
        """The commands of a delivery that carries nothing but commands on one issue (a comment on an issue,
        a new issue's body), to be decided together with others on the same ticket; None for any other
        delivery, which `handle` processes by itself."""
        reader = COMMAND_READERS.get((delivery.event, delivery.action or ""))
        if reader is None:
            return None
        payload = json.loads(delivery.payload)
        if not isinstance(payload, dict):
            return []
        return reader(self, payload)

    def _from_baton(self, payload: dict[str, Any], where: str) -> bool:
        """Baton's own comments carry its App id; other bots are ordinary actors."""
        return self.app_id is not None and number(payload, where, "performed_via_github_app", "id") == self.app_id

    def policy(self, installation_id: int, repository: str, where: TicketKey, login: str) -> Policy:
        """The repository's settings. An invalid settings file is explained once, on the issue where
        it was first met, while the last good settings stay in force."""
        loaded = self.configs.load(installation_id, repository)
        if loaded.problems:
            problems = "; ".join(loaded.problems)
            digest = hashlib.sha256(f"{repository}\n{problems}".encode()).hexdigest()[:16]
            self.work.reply(
                where,
                repository,
                login,
                f"Baton cannot use `.github/baton.yml`: {problems}. Until it is fixed, the settings from "
                f"{loaded.source} stay in force.",
                f"{installation_id}:config:{digest}",
            )
        return loaded.policy

    def _requests(self, payload: dict[str, Any], body: str, operation: str, source: Source) -> list[Request]:
        installation_id = number(payload, "installation", "id")
        repository_id = number(payload, "repository", "id")
        issue_number = number(payload, "issue", "number")
        repository = text(payload, "repository", "full_name")
        commands = parse(body)
        if not commands or None in (installation_id, repository_id, issue_number) or not repository:
            return []
        if not self._active(payload):
            return []
        assert installation_id is not None and repository_id is not None and issue_number is not None
        issue = Issue(TicketKey(installation_id, repository_id, issue_number), repository,
                      text(payload, "issue", "user", "login"))  # fmt: skip
        login = text(payload, "sender", "login")
        actor = Actor(
            login,
            self.directory.permission(installation_id, repository, login),
            is_bot=text(payload, "sender", "type") == "Bot",
        )
        policy = self.policy(installation_id, repository, issue.key, login)
        return [
            Request(issue, command, actor, f"{installation_id}:{operation}:{index}", policy, source)
            for index, command in enumerate(commands)
        ]


def _on_pull_request(
    intake: Intake, payload: dict[str, Any], body: str, pull: dict[str, Any], source: Source, operation: str
) -> tuple[Outcome, ...]:
    """Commands on a pull request act on the issue its description links with a closing keyword;
    `/accept #42` names one when it links several. Answers go on the pull request."""
    installation_id = number(payload, "installation", "id")
    repository_id = number(payload, "repository", "id")
    pr_number = number(pull, "number")
    repository = text(payload, "repository", "full_name")
    commands = parse(body)
    if not commands or None in (installation_id, repository_id, pr_number) or not repository:
        return ()
    if not intake._active(payload):
        return ()
    assert installation_id is not None and repository_id is not None and pr_number is not None
    login = text(payload, "sender", "login")
    links = linked_issues(text(pull, "body"), repository)
    answer_on = TicketKey(installation_id, repository_id, pr_number)
    outcomes = []
    actor: Actor | None = None
    for index, command in enumerate(commands):
        op = f"{installation_id}:{operation}:{index}"
        target = _target(links, command.issue)
        key = TicketKey(installation_id, repository_id, target) if isinstance(target, int) else None
        if key is not None and intake.work.ticket(key) is None:
            target = f"#{key.number} is not tracked by Baton yet: comment on the issue itself first."
        if isinstance(target, str):
            intake.work.reply(answer_on, repository, login, f"/{command.name}: {target}", op)
            continue
        assert key is not None
        if actor is None:
            permission = intake.directory.permission(installation_id, repository, login)
            actor = Actor(login, permission, is_bot=text(payload, "sender", "type") == "Bot")
        policy = intake.policy(installation_id, repository, answer_on, login)
        issue = Issue(key, repository, "")
        outcomes.append(intake.work.apply(issue, command, actor, op, policy, replace(source, number=pr_number)))
    return tuple(outcomes)


def _target(links: list[int], named: int | None) -> int | str:
    """The linked issue a command acts on, or why there is none."""
    listed = ", ".join(f"#{n}" for n in links)
    if not links:
        return "this pull request links no issue. Add `Fixes #N` to its description, or comment on the issue."
    if named is not None:
        return named if named in links else f"#{named} is not linked from this pull request (it links {listed})."
    if len(links) == 1:
        return links[0]
    return f"this pull request links {listed}: say which, as in `/accept #{links[0]}`."


def _comment_requests(intake: Intake, payload: dict[str, Any]) -> list[Request] | None:
    """The commands of a comment on an issue; None for a comment on a pull request (`_comment_created`)."""
    if intake._from_baton(payload, "comment"):
        return []
    if dig(payload, "issue", "pull_request") is not None:
        return None
    comment_id = number(payload, "comment", "id")
    return intake._requests(payload, text(payload, "comment", "body"), f"comment:{comment_id}", Source(comment_id))


def _body_requests(intake: Intake, payload: dict[str, Any]) -> list[Request] | None:
    """Commands in a new issue's body: `/claim` there creates the ticket already claimed by its author."""
    if intake._from_baton(payload, "issue"):
        return []
    body = text(payload, "issue", "body")
    return intake._requests(payload, body, f"issue:{number(payload, 'issue', 'id')}", Source(None))


def _comment_created(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    requests = _comment_requests(intake, payload)
    if requests is not None:
        return tuple(intake.work.apply_all(requests))
    # the issue is a pull request; its body is the PR's
    comment_id = number(payload, "comment", "id")
    body = text(payload, "comment", "body")
    return _on_pull_request(intake, payload, body, payload.get("issue") or {}, Source(comment_id),
                            f"comment:{comment_id}")  # fmt: skip


def _issue_opened(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    return tuple(intake.work.apply_all(_body_requests(intake, payload) or []))


def _label_changed(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    installation_id = number(payload, "installation", "id")
    repository_id = number(payload, "repository", "id")
    issue_number = number(payload, "issue", "number")
    label = text(payload, "label", "name")
    if installation_id is None or repository_id is None or issue_number is None or not label:
        return ()
    if not intake._active(payload):
        return ()
    issue = Issue(TicketKey(installation_id, repository_id, issue_number), text(payload, "repository", "full_name"),
                  text(payload, "issue", "user", "login"))  # fmt: skip
    intake.work.label_changed(issue, label, text(payload, "action") == "labeled", text(payload, "sender", "login"))
    return ()


_INSTALLATION_STATUS = {"created": "active", "unsuspend": "active", "suspend": "suspended", "deleted": "deleted"}


def _repositories(payload: dict[str, Any], key: str) -> list[tuple[int, str]]:
    found = []
    for repository in dig(payload, key, default=[]):
        repository_id, full_name = number(repository, "id"), text(repository, "full_name")
        if repository_id is not None and full_name:
            found.append((repository_id, full_name))
    return found


def _installation(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    installation_id = number(payload, "installation", "id")
    status = _INSTALLATION_STATUS.get(text(payload, "action"))
    if intake.installations is None or installation_id is None or status is None:
        return ()
    intake.installations.record(installation_id, text(payload, "installation", "account", "login"), status)
    if text(payload, "action") == "created":
        intake.installations.repositories(installation_id, _repositories(payload, "repositories"), True)
    return ()


def _installation_repositories(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    installation_id = number(payload, "installation", "id")
    if intake.installations is None or installation_id is None:
        return ()
    intake.installations.repositories(installation_id, _repositories(payload, "repositories_added"), True)
    intake.installations.repositories(installation_id, _repositories(payload, "repositories_removed"), False)
    return ()


def _review_submitted(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    """Commands in a review's body; GitHub has no reactions on reviews, so only replies answer them. The
    pull request it carries is evidence too."""
    review_id = number(payload, "review", "id")
    pull = payload.get("pull_request") if isinstance(payload.get("pull_request"), dict) else {}
    assert isinstance(pull, dict)
    body = text(payload, "review", "body")
    outcomes = _on_pull_request(intake, payload, body, pull, Source(None, reactable=False), f"review:{review_id}")
    _evidence(intake, payload, delivery)
    return outcomes


def _evidence(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    """Facts for the evidence rail of every tracked ticket they reach; no command runs and no work state moves."""
    repository = repository_of(payload)
    if intake.evidence is None or repository is None or not intake._active(payload):
        return ()
    if intake.app_id is not None and number(payload, "check_suite", "app", "id") == intake.app_id:
        return ()  # Baton's own suite is its own check run, which must not feed the rail it reports on
    sightings = observe(delivery.event, payload, repository, stamp(delivery.received_at))
    intake.evidence.record(repository, sightings, delivery.id)
    return ()


def _issue_state(intake: Intake, payload: dict[str, Any], delivery: Delivery) -> tuple[Outcome, ...]:
    """An issue closed or reopened on GitHub (by hand, or by a merged "Fixes #42") is evidence only."""
    repository = repository_of(payload)
    issue_number = number(payload, "issue", "number")
    if intake.evidence is None or repository is None or issue_number is None or not intake._active(payload):
        return ()
    key = TicketKey(repository.installation_id, repository.repository_id, issue_number)
    action = text(payload, "action")
    data = {
        "actor": text(payload, "sender", "login"),
        "at": text(payload, "issue", "closed_at" if action == "closed" else "updated_at") or None,
        "state_reason": text(payload, "issue", "state_reason") or None,
    }
    intake.evidence.issue_changed(key, action, data, delivery.id)
    return ()


HANDLERS: dict[tuple[str, str], Handler] = {
    **{(event, action): _evidence for event, evidence in EVIDENCE_EVENTS.items() for action in evidence.actions},
    ("pull_request_review", "submitted"): _review_submitted,
    ("issues", "closed"): _issue_state,
    ("issues", "reopened"): _issue_state,
    **{("installation", action): _installation for action in _INSTALLATION_STATUS},
    ("installation_repositories", "added"): _installation_repositories,
    ("installation_repositories", "removed"): _installation_repositories,
    ("issues", "labeled"): _label_changed,
    ("issues", "unlabeled"): _label_changed,
    ("issue_comment", "created"): _comment_created,
    ("issues", "opened"): _issue_opened,
}


# Deliveries that carry nothing but commands on one issue: read into requests, and decided with the others
# on the same ticket (`decide`).
CommandReader = Callable[[Intake, dict[str, Any]], "list[Request] | None"]
COMMAND_READERS: dict[tuple[str, str], CommandReader] = {
    ("issue_comment", "created"): _comment_requests,
    ("issues", "opened"): _body_requests,
}


def process(inbox: Inbox, intake: Intake, delivery_id: str) -> None:
    """Process one stored delivery (unless another process has taken it)."""
    delivery = inbox.take(delivery_id)
    if delivery is not None:
        decide(inbox, intake, [delivery])


# A delivery that failed for a passing reason is tried again after 2, 4, 8 … seconds (at most five minutes
# apart), this many times in all; then it ends `failed` with the reason, for `baton replay`.
MAX_DELIVERY_ATTEMPTS = 8


def passing(error: BaseException) -> bool:
    """GitHub or the database failing for a moment (5xx, a timeout, a rate limit, a lost connection), as
    opposed to a delivery that can never be processed."""
    if isinstance(error, RequestFailed):
        return error.response.status_code >= 500 or error.response.status_code == 429
    return isinstance(error, RequestError | DBAPIError | DirectoryUnavailable) and not isinstance(error, IntegrityError)


def retry_after(attempts: int) -> float:
    return float(min(300, 2**attempts))


def decide(inbox: Inbox, intake: Intake, deliveries: Sequence[Delivery]) -> None:
    """Process taken deliveries, in order. Runs of deliveries that carry only commands are decided
    together: the commands on one ticket in one transaction (`WorkService.apply_all`). A delivery that
    fails for a passing reason is put back to be tried again later; one that keeps failing, or fails for
    any other reason, ends `failed` with the reason."""
    finished: list[tuple[str, str]] = []
    waiting: list[tuple[Delivery, list[Request]]] = []
    if len(deliveries) > 1:
        intake.warm(deliveries)

    def failed(delivery: Delivery, error: BaseException) -> None:
        reason = f"{type(error).__name__}: {error}"[:2000]
        log.warning("delivery %s (%s) failed: %s", delivery.id, delivery.event, type(error).__name__)
        if passing(error) and delivery.attempts < MAX_DELIVERY_ATTEMPTS:
            inbox.retry(delivery.id, retry_after(delivery.attempts), reason)
        else:
            inbox.finish(delivery.id, "failed", reason)

    def flush() -> None:
        if not waiting:
            return
        try:
            outcomes = intake.work.apply_all([request for _, requests in waiting for request in requests])
        except Exception as error:  # every one is tried again: operation ids keep what was decided
            for delivery, _ in waiting:
                failed(delivery, error)
        else:
            finished.extend((delivery.id, "done") for delivery, _ in waiting)
            for outcome in outcomes:
                log.debug("/%s %s %s", outcome.command, outcome.kind, outcome.code or "")
        waiting.clear()

    for delivery in deliveries:
        try:
            requests = intake.requests(delivery)
        except Exception as error:
            failed(delivery, error)
            continue
        if requests is not None:
            waiting.append((delivery, requests))
            continue
        flush()
        try:
            status, _ = intake.handle(delivery)
        except Exception as error:
            failed(delivery, error)
        else:
            finished.append((delivery.id, status))
    flush()
    inbox.finish_all(finished)
