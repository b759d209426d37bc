"""Writing the database's view of an issue onto GitHub, changing only what differs: labels, assignee, the
status comment, answers to commands, and the `baton/acceptance` check run on pull request heads.

Every write goes through `_write`, which waits for the installation's write budget (GitHub's secondary rate
limits: about one content-creating request a second) and counts the writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from githubkit import GitHub
from githubkit.exception import RequestFailed

from baton.domain.status import CHECK_NAME, LABEL_PREFIX, LABELS, CheckView, View

from .client import GitHubApp
from .refusals import describe, refused

REPLY_MARKER = "<!-- baton:reply {} -->"  # the ids of the answers a reply carries
_REPLY = re.compile(r"<!-- baton:reply (\d+(?: \d+)*) -->")


class WriteRefused(Exception):
    """GitHub refused some of an issue's writes for good (`errors`); the others were made. `comment_id`:
    the status comment, when it was written."""

    def __init__(self, errors: list[RequestFailed], comment_id: int | None = None) -> None:
        super().__init__("; ".join(describe(error) for error in errors))
        self.errors = errors
        self.comment_id = comment_id


@contextmanager
def _or_refused(errors: list[RequestFailed]) -> Iterator[None]:
    """Run one part of a projection; a refusal for good is kept in `errors`, and the next part goes on."""
    try:
        yield
    except RequestFailed as error:
        if not refused(error):
            raise
        errors.append(error)


def _data(response: Any) -> Any:
    """A response's JSON, read as plain data: githubkit's typed views are stricter than GitHub."""
    return response.json()


class Pace(Protocol):
    """Where each write waits for its installation's budget (`baton.process.writer.Gate`)."""

    def wait(self, installation_id: int) -> None: ...


class GitHubProjector:
    def __init__(self, github: GitHubApp, pace: Pace) -> None:
        self.github = github
        self.pace = pace
        self.writes = 0
        self._labels_known: set[tuple[int, str, str]] = set()

    def _write(self, installation_id: int, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.pace.wait(installation_id)
        self.writes += 1
        return call(*args, **kwargs)

    # -- the issue's labels, assignee and status comment ---------------------------------------------

    def show(
        self, installation_id: int, repository: str, number: int, view: View, past_runners: list[str],
        status_comment_id: int | None, *, comment: bool = True,
    ) -> int | None:  # fmt: skip
        """Make the issue show `view`; returns the status comment's id (None: without `comment`, the status
        comment is neither looked for nor written). The label, the assignee and the status comment are
        written each on its own: one that GitHub refuses for good does not keep the others off, and is
        raised afterwards (`WriteRefused`)."""
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        issue = _data(client.rest.issues.get(owner, name, number))
        labels = {label["name"] for label in issue.get("labels") or [] if isinstance(label, dict)}
        assignees = {user["login"].lower() for user in issue.get("assignees") or [] if isinstance(user, dict)}
        errors: list[RequestFailed] = []
        with _or_refused(errors):
            self._labels(installation_id, client, owner, name, number, view, labels)
        with _or_refused(errors):
            self._assignees(installation_id, client, owner, name, number, view.assignee, past_runners, assignees)
        comment_id = None
        if comment:
            with _or_refused(errors):
                comment_id = self._status_comment(
                    installation_id, client, owner, name, number, view.comment, status_comment_id
                )
        if errors:
            raise WriteRefused(errors, comment_id)
        return comment_id

    def _labels(
        self, installation_id: int, client: GitHub[Any], owner: str, name: str, number: int, view: View,
        labels: set[str],
    ) -> None:  # fmt: skip
        wanted = [view.label, *view.extra_labels]
        for label in wanted:
            if label not in labels:
                self._ensure_label(installation_id, client, owner, name, label)
                self._write(
                    installation_id, client.rest.issues.add_labels, owner, name, number, data={"labels": [label]}
                )
        for old in sorted(labels):
            if old.startswith(LABEL_PREFIX) and old not in wanted and old in LABELS:
                self._write(installation_id, client.rest.issues.remove_label, owner, name, number, old)

    def _assignees(
        self, installation_id: int, client: GitHub[Any], owner: str, name: str, number: int, runner: str | None,
        past_runners: list[str], assignees: set[str],
    ) -> None:  # fmt: skip
        if runner and runner.lower() not in assignees:
            try:
                self._write(
                    installation_id, client.rest.issues.add_assignees, owner, name, number, data={"assignees": [runner]}
                )
            except RequestFailed as error:
                if error.response.status_code != 422:  # GitHub may refuse an assignee; the claim stands
                    raise
        leaving = [r for r in past_runners if r.lower() in assignees and r.lower() != (runner or "").lower()]
        if leaving:
            self._write(
                installation_id, client.rest.issues.remove_assignees, owner, name, number, data={"assignees": leaving}
            )

    def _ensure_label(self, installation_id: int, client: GitHub[Any], owner: str, name: str, label: str) -> None:
        known = (installation_id, f"{owner}/{name}".lower(), label)
        if known in self._labels_known:
            return
        try:
            client.rest.issues.get_label(owner, name, label)
        except RequestFailed as error:
            if error.response.status_code != 404:
                raise
            colour, description = LABELS[label]
            try:
                self._write(
                    installation_id,
                    client.rest.issues.create_label,
                    owner,
                    name,
                    data={"name": label, "color": colour, "description": description},
                )
            except RequestFailed as created:
                if created.response.status_code != 422:  # 422: someone created it meanwhile
                    raise
        self._labels_known.add(known)

    def _comments(self, client: GitHub[Any], owner: str, name: str, number: int) -> list[dict[str, Any]]:
        comments: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = _data(client.rest.issues.list_comments(owner, name, number, per_page=100, page=page))
            comments.extend(c for c in batch if isinstance(c, dict))
            if len(batch) < 100:
                return comments
            page += 1

    def _find(self, client: GitHub[Any], owner: str, name: str, number: int, marker: str) -> dict[str, Any] | None:
        for comment in self._comments(client, owner, name, number):
            if marker in (comment.get("body") or ""):
                return comment
        return None

    def _status_comment(
        self, installation_id: int, client: GitHub[Any], owner: str, name: str, number: int, body: str,
        known_id: int | None,
    ) -> int:  # fmt: skip
        marker = body.splitlines()[0]
        current: dict[str, Any] | None = None
        if known_id is not None:
            try:
                current = _data(client.rest.issues.get_comment(owner, name, known_id))
            except RequestFailed as error:
                if error.response.status_code != 404:  # deleted by someone: write a new one
                    raise
        if current is None:
            current = self._find(client, owner, name, number, marker)
        if current is None:
            created = _data(
                self._write(
                    installation_id, client.rest.issues.create_comment, owner, name, number, data={"body": body}
                )
            )
            return int(created["id"])
        if current.get("body") != body:
            self._write(
                installation_id, client.rest.issues.update_comment, owner, name, int(current["id"]), data={"body": body}
            )
        return int(current["id"])

    # -- answers to commands -------------------------------------------------------------------------

    def react(self, installation_id: int, repository: str, number: int, comment_id: int | None) -> None:
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        if comment_id is None:
            self._write(
                installation_id, client.rest.reactions.create_for_issue, owner, name, number, data={"content": "+1"}
            )
        else:
            self._write(
                installation_id,
                client.rest.reactions.create_for_issue_comment,
                owner,
                name,
                comment_id,
                data={"content": "+1"},
            )

    def find_reply(
        self, installation_id: int, repository: str, number: int, first_id: int
    ) -> tuple[int, list[int]] | None:
        """A reply already posted for answers starting at `first_id` (a crash before it was recorded)."""
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        for comment in self._comments(client, owner, name, number):
            found = _REPLY.search(comment.get("body") or "")
            if found is not None:
                ids = [int(part) for part in found.group(1).split()]
                if ids[0] == first_id:
                    return int(comment["id"]), ids
        return None

    def post_reply(self, installation_id: int, repository: str, number: int, item_ids: list[int], body: str) -> int:
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        marker = REPLY_MARKER.format(" ".join(str(i) for i in item_ids))
        created = _data(
            self._write(
                installation_id,
                client.rest.issues.create_comment,
                owner,
                name,
                number,
                data={"body": f"{body}\n\n{marker}"},
            )
        )
        return int(created["id"])

    # -- the baton/acceptance check run --------------------------------------------------------------

    def find_check_run(self, installation_id: int, repository: str, head_sha: str) -> tuple[int, CheckView] | None:
        """Baton's newest check run on a head, with what it shows (a crash between creating and recording)."""
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        answer = _data(client.rest.checks.list_for_ref(owner, name, head_sha, check_name=CHECK_NAME, per_page=100))
        runs = [
            run
            for run in answer.get("check_runs") or []
            if isinstance(run, dict) and run.get("external_id") == check_external_id(head_sha)
        ]
        if not runs:
            return None
        newest = max(runs, key=lambda run: int(run["id"]))
        output = newest.get("output") or {}
        shown = CheckView(
            str(newest.get("status")), newest.get("conclusion"), output.get("title") or "", output.get("summary") or ""
        )
        return int(newest["id"]), shown

    def create_check_run(self, installation_id: int, repository: str, head_sha: str, check: CheckView) -> int:
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        data = {"name": CHECK_NAME, "head_sha": head_sha, "external_id": check_external_id(head_sha), **_check(check)}
        created = _data(self._write(installation_id, client.rest.checks.create, owner, name, data=data))
        return int(created["id"])

    def update_check_run(self, installation_id: int, repository: str, check_run_id: int, check: CheckView) -> None:
        client = self.github.installation(installation_id)
        owner, _, name = repository.partition("/")
        self._write(installation_id, client.rest.checks.update, owner, name, check_run_id, data=_check(check))


def check_external_id(head_sha: str) -> str:
    """How Baton recognises its own check run on a head among every app's."""
    return f"baton-acceptance:{head_sha}"


def _check(check: CheckView) -> dict[str, Any]:
    data: dict[str, Any] = {"status": check.status, "output": {"title": check.title, "summary": check.summary}}
    if check.conclusion is not None:
        data["conclusion"] = check.conclusion
    return data
