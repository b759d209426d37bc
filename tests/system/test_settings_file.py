"""`.github/baton.yml` read from GitHub (the stand-in, on a real port): the repository's file before the
organisation's, then the defaults; cached until a push forgets it; the last good settings kept when the file
turns invalid."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from baton.domain import Policy
from baton.github.client import AppCredentials, GitHubApp
from baton.github.configs import GitHubConfigs, Loaded
from github_standin.server import StandIn
from github_standin.serving import Served
from github_standin.world import Repository, World
from support.keys import app_private_key, app_public_key

APP_ID = 4711
FILE = ".github/baton.yml"
REPO_FILE = f"/repos/octo/shop/contents/{FILE}"
ORG_FILE = f"/repos/octo/.github/contents/{FILE}"


@dataclass
class GitHub:
    """The stand-in with installation 1 on `octo`, holding octo/shop and the organisation's octo/.github."""

    rest: StandIn
    app: GitHubApp
    shop: Repository
    org: Repository

    def reads(self, path: str) -> int:
        """How many times Baton asked GitHub for the file at `path`."""
        return sum(1 for call in self.rest.calls if call.method == "GET" and call.path == path)


@pytest.fixture
def github() -> Iterator[GitHub]:
    world = World(APP_ID, app_public_key())
    with world.lock:
        installation = world.install("octo", id=1)
        shop = world.add_repository(installation, "shop")
        org = world.add_repository(installation, ".github")
    rest = StandIn(world)
    with Served(rest.app) as served:
        yield GitHub(rest, GitHubApp(AppCredentials(APP_ID, app_private_key()), served.url), shop, org)


def test_the_repositorys_file_wins(github: GitHub) -> None:
    github.shop.files[FILE] = "max_active_claims: 1\n"
    github.org.files[FILE] = "max_active_claims: 5\n"
    loaded = GitHubConfigs(github.app).load(1, "octo/shop")
    assert loaded == Loaded(Policy(max_active_claims=1), "octo/shop:.github/baton.yml")
    assert github.reads(REPO_FILE) == 1
    assert github.reads(ORG_FILE) == 0


def test_the_organisations_file_is_the_fallback_then_the_defaults(github: GitHub) -> None:
    github.org.files[FILE] = "allow_self_review: true\n"
    assert GitHubConfigs(github.app).load(1, "octo/shop") == Loaded(
        Policy(allow_self_review=True), "octo/.github:.github/baton.yml"
    )
    del github.org.files[FILE]
    assert GitHubConfigs(github.app).load(1, "octo/shop") == Loaded(Policy(), "defaults")


def test_settings_are_cached_and_forgotten_on_demand(github: GitHub) -> None:
    github.shop.files[FILE] = "max_active_claims: 1\n"
    configs = GitHubConfigs(github.app)
    configs.load(1, "octo/shop")
    configs.load(1, "Octo/Shop")
    assert github.reads(REPO_FILE) == 1
    configs.forget(1, "octo/shop")
    configs.load(1, "octo/shop")
    assert github.reads(REPO_FILE) == 2


class PushedWhileRead(dict[str, str]):
    """A repository's files where a push (`then`) arrives while GitHub reads the file to answer."""

    def __init__(self, files: dict[str, str], then: Any) -> None:
        super().__init__(files)
        self.then = then

    def get(self, key: str, default: Any = None) -> Any:
        self.then()
        return super().get(key, default)


def test_a_read_under_way_when_the_settings_are_pushed_is_not_kept(github: GitHub) -> None:
    """A push (`forget`) arriving while a command reads the file: that read may have the old file, so it
    serves its command but the next `load` reads again."""
    configs = GitHubConfigs(github.app)
    github.shop.files = PushedWhileRead({FILE: "max_active_claims: 1\n"}, lambda: configs.forget(1, "octo/shop"))
    assert configs.load(1, "octo/shop").policy.max_active_claims == 1
    github.shop.files = {FILE: "max_active_claims: 2\n"}
    assert configs.load(1, "octo/shop").policy.max_active_claims == 2  # read again
    github.shop.files[FILE] = "max_active_claims: 3\n"
    assert configs.load(1, "octo/shop").policy.max_active_claims == 2  # that read is kept


def test_an_invalid_file_keeps_the_last_good_settings_and_says_why(github: GitHub) -> None:
    github.shop.files[FILE] = "max_active_claims: 1\n"
    configs = GitHubConfigs(github.app)
    assert configs.load(1, "octo/shop").policy.max_active_claims == 1
    github.shop.files[FILE] = "max_active_claims: lots\n"
    configs.forget(1, "octo/shop")
    loaded = configs.load(1, "octo/shop")
    assert loaded.policy == Policy(max_active_claims=1)
    assert loaded.problems == ("`max_active_claims` must be a whole number from 1 to 100, not 'lots'",)


def test_an_invalid_file_with_nothing_good_before_runs_on_the_defaults(github: GitHub) -> None:
    github.shop.files[FILE] = "offer: sometimes\n"
    loaded = GitHubConfigs(github.app).load(1, "octo/shop")
    assert (loaded.policy, loaded.source) == (Policy(), "defaults")
    assert loaded.problems == ("`offer` must be `all` or `labeled`, not 'sometimes'",)
