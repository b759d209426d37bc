"""Permissions for GitHub's example payloads: one login maintains the repository, everyone else reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.domain import Access, Permission

SECRET = "It's a Secret to Everybody"

WRITER = "octocat"  # the one login who maintains the repository; everyone else reads


@dataclass
class FakeDirectory:
    asked: list[str] = field(default_factory=list)

    def access(self, installation_id: int, repository: str, login: str) -> Access:
        self.asked.append(login)
        if login == WRITER:
            return Access(Permission.MAINTAIN, "maintain", True)
        return Access(Permission.READ, "read", collaborator=True)

    def member(self, installation_id: int, team: str, login: str) -> bool:
        return False
