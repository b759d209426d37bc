"""Webhook payloads of the evidence events, shaped like GitHub's and carrying only what a test varies.

`Repo` names the repository and installation every payload carries; the builders take the rest. Times
are minutes after 10:00 on 2024-05-01, so a test orders facts by choosing minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HEAD = "1a2b3c4" + "d" * 33
NEWER = "5e6f7a8" + "b" * 33
OLDER = "0c0ffee" + "a" * 33
MERGE = "9f8e7d6" + "c" * 33
LATER = "7777777" + "e" * 33


def at(minute: int) -> str:
    hour, minute = divmod(minute, 60)
    return f"2024-05-01T{10 + hour:02d}:{minute:02d}:00Z"


@dataclass(frozen=True)
class Repo:
    installation: int = 99
    repository_id: int = 7
    name: str = "octo/shop"

    def base(self, action: str | None = None, sender: str = "agent-a") -> dict[str, Any]:
        payload: dict[str, Any] = {
            "repository": {"id": self.repository_id, "full_name": self.name},
            "installation": {"id": self.installation},
            "sender": {"login": sender, "type": "User"},
        }
        if action is not None:
            payload["action"] = action
        return payload

    def pull_request(
        self,
        action: str,
        number: int = 57,
        *,
        body: str | None = "Fixes #42",
        ref: str = "42-empty-state",
        sha: str = HEAD,
        minute: int = 1,
        state: str = "open",
        merged: bool = False,
        merge_sha: str | None = None,
        draft: bool = False,
        mergeable_state: str | None = "clean",
        fork: bool = False,
    ) -> dict[str, Any]:
        pull = {
            "number": number,
            "body": body,
            "state": "closed" if merged else state,
            "draft": draft,
            "merged": merged,
            "merged_at": at(minute) if merged else None,
            "merge_commit_sha": merge_sha or (MERGE if merged else "f" * 40),
            "mergeable_state": mergeable_state,
            "updated_at": at(minute),
            "head": {"ref": ref, "sha": sha, "repo": {"id": 4242 if fork else self.repository_id}},
            "base": {"ref": "main", "sha": "0" * 39 + "1", "repo": {"id": self.repository_id}},
        }
        return {**self.base(action), "number": number, "pull_request": pull}

    def review(self, body: str | None, number: int = 57, *, pr_body: str = "Fixes #42", minute: int = 2,
               sender: str = "maria", review_id: int = 77) -> dict[str, Any]:  # fmt: skip
        pull = self.pull_request("opened", number, body=pr_body, minute=minute)["pull_request"]
        del pull["merged"], pull["mergeable_state"]  # a review's pull request carries neither
        return {**self.base("submitted", sender), "review": {"id": review_id, "body": body,
                "user": {"login": sender}}, "pull_request": pull}  # fmt: skip

    def push(self, branch: str = "42-empty-state", sha: str | None = HEAD, minute: int = 1) -> dict[str, Any]:
        deleted = sha is None
        payload = {**self.base(), "ref": f"refs/heads/{branch}", "before": OLDER, "after": sha or "0" * 40,
                   "created": False, "deleted": deleted, "forced": False}  # fmt: skip
        payload["head_commit"] = None if deleted else {"id": sha, "timestamp": at(minute)}
        return payload

    def tag_push(self, tag: str = "v1.42") -> dict[str, Any]:
        return {**self.base(), "ref": f"refs/tags/{tag}", "after": HEAD, "deleted": False,
                "head_commit": {"id": HEAD, "timestamp": at(1)}}  # fmt: skip

    def ref(self, name: str, ref_type: str = "branch") -> dict[str, Any]:
        """A `create` or `delete` payload (they have the same shape)."""
        return {**self.base(), "ref": name, "ref_type": ref_type, "master_branch": "main", "pusher_type": "user"}

    def check_run(self, name: str = "build", conclusion: str | None = "failure", sha: str = HEAD, minute: int = 2,
                  pulls: tuple[int, ...] = (57,), branch: str = "42-empty-state",
                  action: str = "completed") -> dict[str, Any]:  # fmt: skip
        run = {
            "id": 5000 + minute, "name": name, "head_sha": sha, "external_id": "",
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion,
            "started_at": at(minute), "completed_at": at(minute) if conclusion else None,
            "pull_requests": [{"number": n} for n in pulls],
            "check_suite": {"id": 1, "head_branch": branch, "head_sha": sha},
            "app": {"id": 15368, "name": "GitHub Actions"},
        }  # fmt: skip
        return {**self.base(action), "check_run": run}

    def check_suite(self, app_id: int = 15368, app: str = "GitHub Actions", conclusion: str = "failure",
                    sha: str = HEAD, minute: int = 3) -> dict[str, Any]:  # fmt: skip
        suite = {"id": 9, "head_branch": "42-empty-state", "head_sha": sha, "status": "completed",
                 "conclusion": conclusion, "pull_requests": [{"number": 57}], "updated_at": at(minute),
                 "app": {"id": app_id, "name": app, "slug": app.lower()}}  # fmt: skip
        return {**self.base("completed"), "check_suite": suite}

    def deployment(self, ident: int = 1, sha: str = MERGE, environment: str = "production", minute: int = 10,
                   transient: bool = False) -> dict[str, Any]:  # fmt: skip
        deployment = {"id": ident, "sha": sha, "ref": "main", "environment": environment, "created_at": at(minute),
                      "transient_environment": transient}  # fmt: skip
        return {**self.base("created"), "deployment": deployment}

    def deployment_status(self, state: str, ident: int = 1, sha: str = MERGE, environment: str = "production",
                          minute: int = 11) -> dict[str, Any]:  # fmt: skip
        payload = self.deployment(ident, sha, environment, minute=10)
        payload["deployment_status"] = {"id": 700 + minute, "state": state, "environment": environment,
                                        "created_at": at(minute)}  # fmt: skip
        return payload

    def issue(self, action: str, number: int = 42, sender: str = "octocat") -> dict[str, Any]:
        return {**self.base(action, sender), "issue": {"number": number, "id": 5000 + number, "body": "",
                "state": "closed" if action == "closed" else "open", "state_reason": "completed",
                "closed_at": at(30) if action == "closed" else None, "updated_at": at(31),
                "user": {"login": "olivia"}}}  # fmt: skip

    def comment(self, login: str, body: str, *, number: int = 42, comment_id: int = 1) -> dict[str, Any]:
        return {**self.base("created", login), "issue": {"number": number, "id": 5000 + number,
                "user": {"login": "olivia"}, "body": ""},
                "comment": {"id": comment_id, "body": body, "user": {"login": login, "type": "User"}}}  # fmt: skip
