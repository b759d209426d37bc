"""People on the stand-in GitHub: what users do there, and the webhooks GitHub sends Baton about it.

`Hub` owns the world, its REST side and the webhook line to Baton. `hub.person("agent-a")` acts as one
user: comments, opens issues and pull requests, pushes, merges, deploys, changes labels. Each action
changes the world as GitHub would and delivers the webhook GitHub would send, correctly signed, with
the payload GitHub's own schemas accept (checked when a contract is loaded). Deliveries leave one at a
time, in order, from one thread, like GitHub's; a person's action returns once Baton acknowledged it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import queue
import re
import secrets
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from . import shapes
from .actions import ISSUER_PATH
from .contract import Contract, ContractUnavailable, webhook_problems
from .hooks import Entry, HookLog
from .rendering import link_events, render_check_run, render_issue, render_pull_request
from .server import StandIn
from .world import CheckRun, Deployment, Issue, Repository, World, sha_of


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every hub's webhook client: building one loads the CA certificates (about 20 ms of
    CPU, which each test's hub would pay)."""
    return ssl.create_default_context()


@dataclass
class Delivery:
    id: str
    event: str
    body: bytes
    status: int | None = None  # Baton's answer
    answer: str = ""
    # where it goes and what signs it, for an App other than the hub's (one registered from a manifest)
    to: tuple[str | None, str] | None = field(default=None, repr=False)
    redelivery: bool = False


@dataclass
class Hub:
    """The stand-in GitHub: `world` (state), `rest` (the REST API to serve), and webhooks to `hook_url`."""

    world: World
    secret: str
    contract: Contract | None = None
    api_url: str = "http://127.0.0.1"  # where `rest` is served: the URLs in payloads point there
    hook_url: str | None = None  # Baton's `POST /webhooks/github`
    deliveries: list[Delivery] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # payloads GitHub's webhook schemas would not accept

    def __post_init__(self) -> None:
        # Every attempt to deliver a webhook, as GitHub logs it for the App (`GET /app/hook/deliveries`).
        self.hooks = HookLog(self.world.lock)
        self.hooks.resend = self._resend
        self.rest = StandIn(self.world, self.contract, self._send_later, hooks=self.hooks)
        self._http = httpx.Client(timeout=10, verify=_tls())  # one for every delivery
        self._line: queue.Queue[tuple[Delivery, threading.Event] | None] = queue.Queue()
        self._gathered: list[Delivery] | None = None  # set while `gathered`
        self._flowing = threading.Event()  # cleared while `held`
        self._flowing.set()
        self._sender = threading.Thread(target=self._send_all, name="stand-in-webhooks", daemon=True)
        self._sender.start()

    @classmethod
    def checked(cls, world: World, secret: str) -> Hub:
        """A hub that holds itself to GitHub's description when it is installed (tests), and runs
        unchecked otherwise (`baton demo` on a fresh machine)."""
        try:
            contract = Contract.load()
        except ContractUnavailable:
            contract = None
        return cls(world, secret, contract)

    def close(self) -> None:
        self._line.put(None)
        self._sender.join(timeout=10)
        self._http.close()

    def person(self, login: str, *, kind: str = "User") -> Person:
        with self.world.lock:
            return Person(self, self.world.account(login, kind))

    def ci(self, name: str = "GitHub Actions") -> CI:
        """Another App, named `name`, that reports check runs (made on first use)."""
        with self.world.lock:
            app = next((app for app in self.world.apps.values() if app.name == name), None)
            return CI(self, app or self.world.add_app(name))

    def join_team(self, team: str, login: str, *, state: str = "active") -> None:
        """`login` joins team `org/team-slug` of an organisation (`state="pending"`: invited only)."""
        org, _, slug = team.lstrip("@").partition("/")
        with self.world.lock:
            self.world.join_team(org, slug, login, state=state)

    def installed(self, installation_id: int, sender: str) -> Delivery:
        """GitHub tells the installation's App that `sender` installed it on the installation's repositories:
        `installation` created, to the App's own hook, signed with its own secret; returns once answered."""
        with self.world.lock:
            installation = self.world.installations[installation_id]
            app = self.world.app_of(installation.app_id)
            registered = self.world.registered.get(app.id)
            held = [self.repo(r) for r in self.world.repositories.values() if r.installation_id == installation_id]
            payload = shapes.installation_event(installation_id, app, installation.account, self.world.account(sender),
                                                held, api_url=self.api_url)  # fmt: skip
        to = (registered.hook_url, registered.webhook_secret) if registered is not None else None
        return self.deliver("installation", payload, to=to)

    def repo(self, repository: Repository) -> shapes.Repo:
        return repository.shape(self.api_url)

    def all_problems(self) -> list[str]:
        return self.rest.problems + self.problems

    # -- the webhook line ----------------------------------------------------------------------------

    def _record(self, event: str, payload: dict[str, Any]) -> Delivery:
        """A new delivery of `payload`, checked against GitHub's webhook schemas and kept in `deliveries`."""
        if self.contract is not None:
            self.problems.extend(f"{event} webhook: {problem}" for problem in webhook_problems(event, payload))
        delivery = Delivery(str(uuid.uuid4()), event, json.dumps(payload).encode())
        with self.world.lock:
            self.deliveries.append(delivery)
        return delivery

    def deliver(
        self, event: str, payload: dict[str, Any], *, wait: bool = True, to: tuple[str | None, str] | None = None
    ) -> Delivery:
        """Send Baton a webhook (after the ones before it); with `wait`, return once Baton answered. `to`: the
        hook URL and webhook secret of another App than the hub's."""
        delivery = self._record(event, payload)
        delivery.to = to
        if self._gathered is not None:  # kept back (`gathered`): sent when the block ends
            self._gathered.append(delivery)
            return delivery
        answered = threading.Event()
        self._line.put((delivery, answered))
        if wait:
            answered.wait(30)
        return delivery

    def deliver_now(self, event: str, payload: dict[str, Any], together: threading.Barrier) -> Delivery:
        """Send a webhook from the calling thread once `together` is complete, outside the line."""
        delivery = self._record(event, payload)
        together.wait()
        self._post(delivery)
        return delivery

    def redeliver(self, delivery: Delivery) -> Delivery:
        """GitHub's "Redeliver": the same delivery id and body, sent again."""
        again = Delivery(delivery.id, delivery.event, delivery.body, to=delivery.to, redelivery=True)
        answered = threading.Event()
        self._line.put((again, answered))
        answered.wait(30)
        return again

    def _resend(self, entry: Entry) -> None:
        # Asked for through the REST side (`POST /app/hook/deliveries/{id}/attempts`): never wait for Baton there.
        self._line.put((Delivery(entry.guid, entry.event, entry.body, redelivery=True), threading.Event()))

    @contextmanager
    def gathered(self) -> Iterator[list[Delivery]]:
        """Webhooks made while the block runs are kept back in the list it gives, and sent when it ends in the
        order the list then has (reverse it: GitHub delivering out of order); returns once each is answered."""
        gathered: list[Delivery] = []
        self._gathered = gathered
        try:
            yield gathered
        finally:
            self._gathered = None
        for delivery in gathered:
            answered = threading.Event()
            self._line.put((delivery, answered))
            answered.wait(30)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Webhooks wait in the line while the block runs (GitHub's queue backed up), then leave in order."""
        self._flowing.clear()
        try:
            yield
        finally:
            self._flowing.set()

    def _send_later(self, event: str, payload: dict[str, Any]) -> None:
        # Called by the REST side while it answers Baton: never wait for Baton there.
        self.deliver(event, payload, wait=False)

    def _send_all(self) -> None:
        while (item := self._line.get()) is not None:
            delivery, answered = item
            self._flowing.wait()
            try:
                self._post(delivery)
            finally:
                answered.set()

    def _post(self, delivery: Delivery) -> None:
        url, secret = delivery.to or (self.hook_url, self.secret)
        if url is None:
            return
        began = time.monotonic()
        failure: httpx.HTTPError | None = None
        try:
            response = self._http.post(url, content=delivery.body, headers={
                "X-GitHub-Event": delivery.event, "X-GitHub-Delivery": delivery.id,
                "X-Hub-Signature-256": _signed(secret, delivery.body),
                "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/stand-in",
            })  # fmt: skip
            delivery.status, delivery.answer = response.status_code, response.text
        except httpx.HTTPError as error:  # Baton is down: GitHub records the failure and moves on
            delivery.status, delivery.answer, failure = 0, f"{type(error).__name__}: {error}", error
        self._log(delivery, time.monotonic() - began, failure)

    def _log(self, delivery: Delivery, duration: float, failure: httpx.HTTPError | None) -> None:
        with self.world.lock:
            self.hooks.record(delivery.id, delivery.event, delivery.body, self.world.now(), duration,
                              delivery.status or None, failure, redelivery=delivery.redelivery)  # fmt: skip


@dataclass
class Person:
    """One user acting on the stand-in GitHub. Methods name the repository by `owner/name`."""

    hub: Hub
    account: shapes.Account

    @property
    def login(self) -> str:
        return self.account.login

    def token(self) -> str:
        """A new token of this person's own (a personal access token), for Baton's agent API."""
        with self.hub.world.lock:
            return self.hub.world.user_token(self.login)

    def actions_token(self, full_name: str, *, audience: str, **options: Any) -> str:
        """The OIDC token of a GitHub Actions run in `full_name` that this person started (its `actor`), as the
        runner hands it to a job with `id-token: write` asking for `audience`. `options`: `Issuer.token`'s
        (`workflow`, `run_id`, `expires_in`, `not_before`, `signed_with`, `kid`)."""
        issuer = f"{self.hub.api_url.rstrip('/')}{ISSUER_PATH}"
        return self.hub.world.issuer.token(issuer, full_name, self.login, audience=audience,
                                           actor_id=self.account.id, **options)  # fmt: skip

    def actions_job(self, full_name: str, **options: Any) -> dict[str, str]:
        """What a job of a run this person started in `full_name` finds in its environment to ask for the run's
        token (`ACTIONS_ID_TOKEN_REQUEST_URL`, `ACTIONS_ID_TOKEN_REQUEST_TOKEN`), as with `id-token: write`.
        `options`: `Issuer.token`'s (`workflow`, `run_id`, …)."""
        request = secrets.token_hex(16)
        with self.hub.world.lock:
            self.hub.world.issuer.jobs[request] = {"repository": full_name, "actor": self.login,
                                                   "actor_id": self.account.id, **options}  # fmt: skip
        return {"ACTIONS_ID_TOKEN_REQUEST_URL": f"{self.hub.api_url.rstrip('/')}{ISSUER_PATH}/idtoken?api-version=2.0",
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request}  # fmt: skip

    def _context(self, full_name: str) -> tuple[World, Repository, shapes.Repo]:
        world = self.hub.world
        repository = world.repository(full_name)
        if repository is None:
            raise KeyError(f"no repository {full_name}")
        return world, repository, self.hub.repo(repository)

    def _issue_json(self, repository: Repository, repo: shapes.Repo, issue: Issue) -> Any:
        # The REST rendering is the one the stand-in answers with; reuse it for payloads.
        return render_issue(self.hub.world, repository, repo, issue)

    # -- issues and comments -------------------------------------------------------------------------

    def open_issue(self, full_name: str, title: str, body: str = "") -> int:
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = world.add_issue(repository, title, self.account, body)
            payload = shapes.issues_event("opened", repo, self._issue_json(repository, repo, issue), self.account,
                                          installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)
        return issue.number

    def edit_issue(self, full_name: str, number: int, body: str | None = None, *, title: str | None = None) -> None:
        """Edit an issue's body, its title or both; GitHub sends `issues` `edited` with what they were before."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            changes: dict[str, dict[str, str]] = {}
            if body is not None:
                changes["body"] = {"from": issue.body}
                issue.body = body
            if title is not None:
                changes["title"] = {"from": issue.title}
                issue.title = title
            issue.updated_at = world.now()
            payload = shapes.issues_event("edited", repo, self._issue_json(repository, repo, issue), self.account,
                                          changes=changes, installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)

    def comment(self, full_name: str, number: int, body: str, *, together: threading.Barrier | None = None) -> int:
        """Comment on an issue or pull request. With `together`, the webhook leaves once every party to
        the barrier is ready, beside the others, not in the line: GitHub delivers concurrently too."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            comment = world.add_comment(repository, number, self.account, body)
            comment_json = shapes.issue_comment(
                repo, number, comment.id, body, self.account, created_at=shapes.timestamp(comment.created_at),
                on_pull_request=issue.pull_request,
            )  # fmt: skip
            payload = shapes.issue_comment_event(repo, self._issue_json(repository, repo, issue), comment_json,
                                                 self.account, installation_id=repository.installation_id)  # fmt: skip
        if together is None:
            self.hub.deliver("issue_comment", payload)
        else:
            self.hub.deliver_now("issue_comment", payload, together)
        return comment.id

    def delete_comment(self, full_name: str, comment_id: int) -> None:
        """Delete a comment (anyone's: as a maintainer may); GitHub sends `issue_comment` `deleted` with the
        comment as it was."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            comment = repository.comments.pop(comment_id)
            issue = repository.issues[comment.issue]
            app = world.app if comment.app_id == world.app_id else None
            comment_json = shapes.issue_comment(
                repo, comment.issue, comment.id, comment.body, comment.user,
                created_at=shapes.timestamp(comment.created_at), updated_at=shapes.timestamp(comment.updated_at),
                on_pull_request=issue.pull_request, app=app,
            )  # fmt: skip
            payload = shapes.issue_comment_event(repo, self._issue_json(repository, repo, issue), comment_json,
                                                 self.account, action="deleted",
                                                 installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issue_comment", payload)

    def label(self, full_name: str, number: int, name: str, *, add: bool) -> None:
        """Add or remove a label by hand."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            label = repository.label(name) or world.create_label(repository, name, "ededed", None)
            if add == (label.name in issue.labels):
                return
            if add:
                issue.labels.append(label.name)
            else:
                issue.labels.remove(label.name)
            issue.updated_at = world.now()
            label_json = shapes.label(repo, label.name, label.color, label.description, label.id)
            payload = shapes.issues_event("labeled" if add else "unlabeled", repo,
                                          self._issue_json(repository, repo, issue), self.account, label=label_json,
                                          installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)

    # -- dependencies ("blocked by") and sub-issues, as the issue's page makes them ------------------------

    def _issue(self, where: tuple[str, int]) -> tuple[Repository, Issue]:
        repository = self._context(where[0])[1]
        return repository, repository.issues[where[1]]

    def _tell_linked(self, event: str, done: str, first: tuple[Repository, Issue],
                     second: tuple[Repository, Issue]) -> None:  # fmt: skip
        with self.hub.world.lock:
            events = link_events(self.hub.world, self.hub.api_url, event, done, first, second, self.account)
        for name, payload in events:
            self.hub.deliver(name, payload)

    def block(self, full_name: str, number: int, by: tuple[str, int]) -> None:
        """Issue `number` is blocked by issue `by` (its repository's full name and its number) from now on:
        `issue_dependencies` blocked_by_added for the one, blocking_added for the other. `world.Refused` when
        GitHub would refuse it."""
        self._blocked_by(full_name, number, by, "added")

    def unblock(self, full_name: str, number: int, by: tuple[str, int]) -> None:
        self._blocked_by(full_name, number, by, "removed")

    def _blocked_by(self, full_name: str, number: int, by: tuple[str, int], done: str) -> None:
        """`block` (`done` "added") or `unblock` ("removed"), told to both issues' repositories."""
        with self.hub.world.lock:
            blocked, blocking = self._issue((full_name, number)), self._issue(by)
            change = self.hub.world.add_blocked_by if done == "added" else self.hub.world.remove_blocked_by
            change(blocked[1], blocking[1].id)
        self._tell_linked("issue_dependencies", done, blocked, blocking)

    def add_sub_issue(self, full_name: str, number: int, sub_issue: tuple[str, int], *,
                      replace_parent: bool = False) -> None:  # fmt: skip
        """Issue `sub_issue` becomes a sub-issue of issue `number`: `sub_issues` sub_issue_added for the parent,
        parent_issue_added for the sub-issue (after the removals from its old parent, with `replace_parent`)."""
        with self.hub.world.lock:
            parent, child = self._issue((full_name, number)), self._issue(sub_issue)
            _, _, before = self.hub.world.add_sub_issue(parent[1], parent[0].owner.login, child[1].id,
                                                        replace_parent=replace_parent)  # fmt: skip
        if before is not None:
            self._tell_linked("sub_issues", "removed", before, child)
        self._tell_linked("sub_issues", "added", parent, child)

    def remove_sub_issue(self, full_name: str, number: int, sub_issue: tuple[str, int]) -> None:
        with self.hub.world.lock:
            parent, child = self._issue((full_name, number)), self._issue(sub_issue)
            self.hub.world.remove_sub_issue(parent[1], child[1].id)
        self._tell_linked("sub_issues", "removed", parent, child)

    def close_issue(self, full_name: str, number: int, reason: str = "completed") -> None:
        world, repository, repo = self._context(full_name)
        with world.lock:
            payload = _close(self.hub, repository, repo, repository.issues[number], self.account, reason)
        self.hub.deliver("issues", payload)

    def reopen_issue(self, full_name: str, number: int) -> None:
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            issue.state, issue.state_reason, issue.closed_at, issue.updated_at = "open", "reopened", None, world.now()
            issue.changes.append(("reopened", self.account, world.now(), None, None))
            payload = shapes.issues_event("reopened", repo, self._issue_json(repository, repo, issue), self.account,
                                          installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)

    def delete_issue(self, full_name: str, number: int) -> None:
        """Delete an issue (as an admin may); GitHub sends `issues` `deleted` with the issue as it was."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            rendered = self._issue_json(repository, repo, repository.issues[number])
            del repository.issues[number]
            payload = shapes.issues_event("deleted", repo, rendered, self.account,
                                          installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)

    def transfer_issue(self, full_name: str, number: int, to: str) -> int:
        """Move an issue to another repository of the same owner; GitHub sends `issues` `transferred` about
        the old issue, naming the new one. Returns the new issue's number."""
        world, repository, repo = self._context(full_name)
        _, target, target_repo = self._context(to)
        with world.lock:
            old = repository.issues.pop(number)
            rendered = self._issue_json(repository, repo, old)
            new = world.add_issue(target, old.title, old.user, old.body)
            new_json = self._issue_json(target, target_repo, new)
            payload = shapes.issues_event("transferred", repo, rendered, self.account, moved_to=(target_repo, new_json),
                                          installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("issues", payload)
        return new.number

    # -- code ----------------------------------------------------------------------------------------

    def push(
        self,
        full_name: str,
        branch: str,
        message: str,
        *,
        base: str | None = None,
        sha: str | None = None,
        files: dict[str, str] | None = None,
    ) -> str:
        """Push one commit to `branch` (creating it from `base`, the default branch, if new); `sha` chooses
        the commit's id; `files` (path -> text) are what it adds or changes, which the repository's files then
        hold when the branch is the default one. Returns the commit."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            start = base or repository.default_branch
            before, sha = world.add_commit(repository, branch, message, sha=sha, base=start)
            created = before is None
            moment = shapes.timestamp(world.now())
            changed = dict(files or {})
            added = [path for path in changed if path not in repository.files]
            modified = [path for path in changed if path in repository.files]
            if branch == repository.default_branch:
                repository.files.update(changed)
            commit = shapes.push_commit(repo, sha, message, self.account, at=moment, added=added, modified=modified)
            pushed = shapes.push_event(repo, f"refs/heads/{branch}", before or "0" * 40, sha, [commit], self.account,
                                       created=created, installation_id=repository.installation_id)  # fmt: skip
            made = shapes.create_event(repo, branch, self.account, installation_id=repository.installation_id)
            updates = [
                (number, pull) for number, pull in repository.pulls.items()
                if pull.head == branch and repository.issues[number].state == "open"
            ]  # fmt: skip
            synchronized = []
            for number, pull in updates:
                previous, pull.head_sha = pull.head_sha, sha
                repository.issues[number].updated_at = world.now()
                rendered = render_pull_request(world, repository, repo, number)
                synchronized.append(shapes.pull_request_event("synchronize", repo, rendered, self.account,
                                                              before=previous, after=sha,
                                                              installation_id=repository.installation_id))  # fmt: skip
        if created:
            self.hub.deliver("create", made)
        self.hub.deliver("push", pushed)
        for payload in synchronized:
            self.hub.deliver("pull_request", payload)
        return sha

    def open_pull_request(self, full_name: str, branch: str, title: str, body: str = "", *, draft: bool = False) -> int:
        world, repository, repo = self._context(full_name)
        with world.lock:
            number = world.add_pull_request(repository, self.account, branch, title, body, draft=draft).number
            payload = shapes.pull_request_event("opened", repo, render_pull_request(world, repository, repo, number),
                                                self.account, installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("pull_request", payload)
        return number

    def edit_pull_request(self, full_name: str, number: int, body: str) -> None:
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            before, issue.body, issue.updated_at = issue.body, body, world.now()
            payload = shapes.pull_request_event("edited", repo, render_pull_request(world, repository, repo, number),
                                                self.account, changes={"body": {"from": before}},
                                                installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("pull_request", payload)

    def review(self, full_name: str, number: int, state: str, body: str) -> None:
        """Submit a review (`approved`, `changes_requested` or `commented`) whose body may carry commands."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            rendered = render_pull_request(world, repository, repo, number)
            payload = shapes.pull_request_review_event(repo, rendered, world.next_id(), self.account, state, body=body,
                                                       submitted_at=shapes.timestamp(world.now()),
                                                       installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("pull_request_review", payload)

    def merge(self, full_name: str, number: int, *, sha: str | None = None) -> str:
        """Merge a pull request: a merge commit (`sha` chooses its id) on the base branch; GitHub then closes
        the issues its body links with closing keywords. Returns the merge commit."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            pull, issue = repository.pulls[number], repository.issues[number]
            moment = world.now()
            merge_sha = sha or sha_of(full_name, "merge", number)
            repository.committed[merge_sha] = moment
            repository.branches[pull.base] = [*repository.commits(pull.base), *[
                sha for sha in repository.commits(pull.head) if sha not in repository.commits(pull.base)
            ], merge_sha]  # fmt: skip
            pull.merged, pull.merged_at, pull.merged_by, pull.merge_commit_sha = True, moment, self.login, merge_sha
            issue.state, issue.closed_at, issue.updated_at = "closed", moment, moment
            rendered = render_pull_request(world, repository, repo, number)
            payloads = [("pull_request", shapes.pull_request_event(
                "closed", repo, rendered, self.account, merge_commit_sha=merge_sha,
                installation_id=repository.installation_id))]  # fmt: skip
            for linked in closed_by(issue.body, repository.full_name):
                closing = repository.issues.get(linked)
                if closing is not None and closing.state == "open" and not closing.pull_request:
                    payloads.append(("issues", _close(self.hub, repository, repo, closing, self.account, "completed",
                                                      commit=merge_sha)))  # fmt: skip
        for event, payload in payloads:
            self.hub.deliver(event, payload)
        return merge_sha

    def close_pull_request(self, full_name: str, number: int) -> None:
        """Close a pull request without merging it."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            issue = repository.issues[number]
            moment = world.now()
            issue.state, issue.closed_at, issue.updated_at = "closed", moment, moment
            payload = shapes.pull_request_event("closed", repo, render_pull_request(world, repository, repo, number),
                                                self.account, installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("pull_request", payload)

    def deploy(
        self, full_name: str, sha: str, environment: str, states: tuple[str, ...] = ("in_progress", "success")
    ) -> int:
        """Create a deployment of `sha` and report its statuses in order."""
        world, repository, repo = self._context(full_name)
        with world.lock:
            moment = world.now()
            deployment = Deployment(world.next_id(), sha, repository.default_branch, environment, self.account, moment)
            repository.deployments[deployment.id] = deployment
            deployment_json = shapes.deployment(repo, deployment.id, sha, deployment.ref, environment, self.account,
                                                created_at=shapes.timestamp(moment))  # fmt: skip
            created = shapes.deployment_event(repo, deployment_json, self.account,
                                              installation_id=repository.installation_id)  # fmt: skip
            statuses = []
            for state in states:
                status_id = world.next_id()
                deployment.statuses.append((status_id, state, world.now()))
                statuses.append(shapes.deployment_status_event(
                    repo, deployment_json, status_id, state, self.account, created_at=shapes.timestamp(world.now()),
                    installation_id=repository.installation_id))  # fmt: skip
        self.hub.deliver("deployment", created)
        for payload in statuses:
            self.hub.deliver("deployment_status", payload)
        return deployment.id


@dataclass
class CI:
    """Another GitHub App on the repositories, reporting check runs on commits (a CI service). GitHub tells
    every App that may read checks, Baton too: a run created arrives as `check_run` `created`, a run
    completed as `check_run` `completed`, each naming the open pull requests whose head is its commit."""

    hub: Hub
    app: shapes.App

    @property
    def bot(self) -> shapes.Account:
        return self.hub.world.account(f"{self.app.slug}[bot]", "Bot")

    def check_run(self, full_name: str, name: str, sha: str, conclusion: str | None = None) -> int:
        """Start check run `name` on commit `sha`; with a `conclusion` it completes right after. Returns its id."""
        world = self.hub.world
        with world.lock:
            repository = world.repository(full_name)
            if repository is None:
                raise KeyError(f"no repository {full_name}")
            suite = next((run.suite_id for run in repository.check_runs.values()
                          if run.app_id == self.app.id and run.head_sha == sha), None)  # fmt: skip
            run = CheckRun(world.next_id(), name, sha, "in_progress", None, None, None, self.app.id, world.now(),
                           suite_id=suite or world.next_id())  # fmt: skip
            repository.check_runs[run.id] = run
        self._tell(repository, run, "created")
        if conclusion is not None:
            self.complete(full_name, run.id, conclusion)
        return run.id

    def complete(self, full_name: str, run_id: int, conclusion: str) -> None:
        world = self.hub.world
        with world.lock:
            repository = world.repository(full_name)
            assert repository is not None
            run = repository.check_runs[run_id]
            run.status, run.conclusion, run.completed_at = "completed", conclusion, world.now()
        self._tell(repository, run, "completed")

    def _tell(self, repository: Repository, run: CheckRun, action: str) -> None:
        world = self.hub.world
        with world.lock:
            repo = self.hub.repo(repository)
            branch = next((name for name, commits in repository.branches.items() if commits[-1] == run.head_sha),
                          None)  # fmt: skip
            payload = shapes.check_run_event(repo, render_check_run(world, repository, repo, run), self.bot,
                                             action=action, head_branch=branch,
                                             installation_id=repository.installation_id)  # fmt: skip
        self.hub.deliver("check_run", payload)


def _close(
    hub: Hub,
    repository: Repository,
    repo: shapes.Repo,
    issue: Issue,
    sender: shapes.Account,
    reason: str,
    commit: str | None = None,
) -> dict[str, Any]:
    """Close an issue (`commit`: the merge commit that closed it); the `issues` `closed` payload."""
    moment = hub.world.now()
    issue.state, issue.state_reason, issue.closed_at, issue.updated_at = "closed", reason, moment, moment
    issue.changes.append(("closed", sender, moment, commit, reason))
    rendered = render_issue(hub.world, repository, repo, issue)
    return shapes.issues_event("closed", repo, rendered, sender, installation_id=repository.installation_id)


def _signed(secret: str, body: bytes) -> str:
    """The `X-Hub-Signature-256` GitHub puts on a delivery: HMAC-SHA256 of the body under the hook's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# GitHub's closing keywords, then the issue: `#12`, `owner/repo#12` or the issue's URL.
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+"
    r"(?:(?P<repo>[\w.-]+/[\w.-]+)#|https://github\.com/(?P<url_repo>[\w.-]+/[\w.-]+)/issues/|#)(?P<number>\d+)\b",
    re.IGNORECASE,
)


def closed_by(body: str | None, full_name: str) -> list[int]:
    """The issues of `full_name` that merging a pull request with this body closes, each once, in order."""
    numbers: list[int] = []
    for match in _CLOSING.finditer(body or ""):
        named = match.group("repo") or match.group("url_repo")
        number = int(match.group("number"))
        if (named is None or named.lower() == full_name.lower()) and number not in numbers:
            numbers.append(number)
    return numbers
