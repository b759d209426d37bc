"""The App's credentials, installation tokens and repository permissions, with respx standing in for GitHub."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import respx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from githubkit.exception import RequestFailed
from pydantic import SecretStr

from baton.cli import main
from baton.domain import Access, Permission
from baton.environment.settings import Settings, SettingsError
from baton.github.client import (
    GitHubApp,
    GitHubDirectory,
    TeamsHidden,
    WouldWait,
    app_credentials,
    not_waiting,
)
from baton.github.configs import GitHubConfigs
from support.keys import app_key, app_private_key

API = "https://github.example.test/api/v3"
APP_ID = 4711
INSTALLATION = 99


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return app_private_key()


@pytest.fixture(scope="module")
def pem() -> str:
    return app_key()


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


# -- credentials ---------------------------------------------------------------------------------


def test_no_app_configured_is_a_local_run() -> None:
    assert app_credentials(settings()) is None


def test_an_app_id_without_a_key_is_named(pem: str) -> None:
    with pytest.raises(SettingsError, match="BATON_APP_ID is set but no private key is"):
        app_credentials(settings(app_id=APP_ID))
    with pytest.raises(SettingsError, match="BATON_APP_ID is not"):
        app_credentials(settings(private_key=SecretStr(pem)))


def test_a_malformed_key_is_refused_without_echoing_it() -> None:
    secret = "-----BEGIN RSA PRIVATE KEY-----\nnot-a-key-at-all-SECRETSECRET\n-----END RSA PRIVATE KEY-----"
    with pytest.raises(SettingsError) as raised:
        app_credentials(settings(app_id=APP_ID, private_key=SecretStr(secret)))
    assert "not a usable RSA PEM key" in str(raised.value)
    assert "SECRETSECRET" not in str(raised.value)


def _loaded(pem: str) -> RSAPrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(key, RSAPrivateKey)
    return key


def test_a_key_in_one_line_and_a_key_file_both_work(pem: str, tmp_path: Path) -> None:
    one_line = pem.strip().replace("\n", "\\n")
    credentials = app_credentials(settings(app_id=APP_ID, private_key=SecretStr(one_line)))
    assert credentials is not None and credentials.app_id == APP_ID
    assert credentials.private_key.private_numbers() == _loaded(pem).private_numbers()
    assert "BEGIN" not in repr(credentials)
    (tmp_path / "app.pem").write_text(pem)
    from_file = app_credentials(settings(app_id=APP_ID, private_key_path=str(tmp_path / "app.pem")))
    assert from_file is not None and from_file.app_id == APP_ID
    assert from_file.private_key.private_numbers() == credentials.private_key.private_numbers()
    with pytest.raises(SettingsError, match="is not a readable file"):
        app_credentials(settings(app_id=APP_ID, private_key_path=str(tmp_path / "missing.pem")))


def test_serve_stops_at_start_with_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("BATON_DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    monkeypatch.setenv("BATON_APP_ID", str(APP_ID))
    monkeypatch.setenv("BATON_PRIVATE_KEY", "garbage")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("baton: The App's private key is not a usable RSA PEM key")
    assert "garbage" not in err and "Traceback" not in err

    monkeypatch.delenv("BATON_APP_ID")
    monkeypatch.delenv("BATON_PRIVATE_KEY")
    monkeypatch.setenv("BATON_WEBHOOK_SECRET", "s3cret")
    assert main(["serve"]) == 2
    assert "BATON_WEBHOOK_SECRET is set but the App is not" in capsys.readouterr().err

    monkeypatch.delenv("BATON_WEBHOOK_SECRET")  # the App without its webhook secret
    monkeypatch.setenv("BATON_APP_ID", str(APP_ID))
    monkeypatch.setenv("BATON_PRIVATE_KEY_PATH", str(tmp_path / "app.pem"))
    (tmp_path / "app.pem").write_text(app_key())
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("baton: the App is set but BATON_WEBHOOK_SECRET is not") and "\n" not in err


# -- tokens and permissions ----------------------------------------------------------------------


@pytest.fixture
def github() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=API, assert_all_called=False) as router:
        router.post(f"/app/installations/{INSTALLATION}/access_tokens").respond(
            201,
            json={
                "token": "ghs_installation_token",
                "expires_at": (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"issues": "write"},
                "repository_selection": "all",
            },
        )
        yield router


def permission_route(router: respx.MockRouter, login: str) -> respx.Route:
    return router.get(f"/repos/octo/shop/collaborators/{login}/permission")


def directory(pem: str) -> GitHubDirectory:
    credentials = app_credentials(settings(app_id=APP_ID, private_key=SecretStr(pem)))
    assert credentials is not None
    return GitHubDirectory(GitHubApp(credentials, API))


def answer(permission: str, role_name: str) -> dict[str, object]:
    return {"permission": permission, "role_name": role_name, "user": {"login": "maria", "id": 1}}


def test_permission_is_read_with_an_installation_token_minted_by_the_apps_jwt(
    github: respx.MockRouter, pem: str, key: rsa.RSAPrivateKey
) -> None:
    route = permission_route(github, "maria").respond(200, json=answer("write", "maintain"))
    assert directory(pem).permission(INSTALLATION, "octo/shop", "maria") is Permission.MAINTAIN

    minting = github.calls[0].request
    scheme, token = minting.headers["authorization"].split(" ", 1)
    assert scheme.lower() == "bearer"
    claims = jwt.decode(token, key.public_key(), algorithms=["RS256"])
    assert claims["iss"] == str(APP_ID)
    assert route.calls.last.request.headers["authorization"] == "token ghs_installation_token"


@pytest.mark.parametrize(
    ("permission", "role_name", "expected"),
    [("admin", "admin", Permission.ADMIN), ("write", "write", Permission.WRITE),
     ("read", "triage", Permission.TRIAGE), ("read", "read", Permission.READ),
     ("none", "none", Permission.NONE), ("write", "custom-role", Permission.WRITE)],
)  # fmt: skip
def test_roles_map_to_permissions(
    github: respx.MockRouter, pem: str, permission: str, role_name: str, expected: Permission
) -> None:
    permission_route(github, "maria").respond(200, json=answer(permission, role_name))
    github.get("/repos/octo/shop/collaborators/maria").respond(204)
    assert directory(pem).permission(INSTALLATION, "octo/shop", "maria") is expected


@pytest.mark.parametrize(("status", "collaborator"), [(204, True), (404, False)])
def test_read_access_asks_the_collaborator_check_and_keeps_its_answer(
    github: respx.MockRouter, pem: str, status: int, collaborator: bool
) -> None:
    permission_route(github, "otto").respond(200, json=answer("read", "read"))
    check = github.get("/repos/octo/shop/collaborators/otto").respond(status)
    people = directory(pem)
    assert people.access(INSTALLATION, "octo/shop", "otto") == Access(Permission.READ, "read", collaborator)
    assert people.access(INSTALLATION, "octo/shop", "otto").collaborator is collaborator
    assert check.call_count == 1


def test_more_than_read_is_a_collaborator_without_asking_and_none_is_none(github: respx.MockRouter, pem: str) -> None:
    permission_route(github, "tia").respond(200, json=answer("read", "triage"))
    permission_route(github, "nobody").respond(200, json=answer("none", "none"))
    check = github.get(path__regex=r"/repos/octo/shop/collaborators/[^/]+$").respond(204)
    people = directory(pem)
    assert people.access(INSTALLATION, "octo/shop", "tia") == Access(Permission.TRIAGE, "triage", True)
    assert people.access(INSTALLATION, "octo/shop", "nobody") == Access(Permission.NONE, "none", False)
    assert check.call_count == 0


def test_a_failing_collaborator_check_raises_and_is_asked_again(github: respx.MockRouter, pem: str) -> None:
    permission_route(github, "otto").respond(200, json=answer("read", "read"))
    check = github.get("/repos/octo/shop/collaborators/otto")
    check.side_effect = [httpx.Response(502), httpx.Response(204)]
    people = directory(pem)
    with pytest.raises(RequestFailed):
        people.access(INSTALLATION, "octo/shop", "otto")
    assert people.access(INSTALLATION, "octo/shop", "otto").collaborator is True


@pytest.mark.parametrize(
    ("flags", "expected"),
    [({"pull": True, "triage": True, "push": True, "maintain": True, "admin": False}, Permission.MAINTAIN),
     ({"pull": True, "triage": True, "push": False, "maintain": False, "admin": False}, Permission.TRIAGE)],
)  # fmt: skip
def test_a_custom_role_counts_as_its_base_level_and_keeps_its_name(
    github: respx.MockRouter, pem: str, flags: dict[str, bool], expected: Permission
) -> None:
    # GitHub folds a custom role into `permission` (write or read); the user's flags show the level it is based on
    data = {**answer("write" if flags["push"] else "read", "release-manager")}
    data["user"] = {"login": "maria", "id": 1, "permissions": flags}
    permission_route(github, "maria").respond(200, json=data)
    github.get("/repos/octo/shop/collaborators/maria").respond(204)
    assert directory(pem).access(INSTALLATION, "octo/shop", "maria") == Access(expected, "release-manager", True)


def membership_route(router: respx.MockRouter, team: str, login: str) -> respx.Route:
    return router.get(f"/orgs/octo/teams/{team}/memberships/{login}")


@pytest.mark.parametrize(
    ("status", "state", "expected"), [(200, "active", True), (200, "pending", False), (404, None, False)]
)
def test_team_membership_is_read_from_github_and_cached(
    github: respx.MockRouter, pem: str, status: int, state: str | None, expected: bool
) -> None:
    body = {"url": "https://api.github.com/x", "role": "member", "state": state} if state else {"message": "Not Found"}
    route = membership_route(github, "reviewers", "tess").respond(status, json=body)
    people = directory(pem)
    assert people.member(INSTALLATION, "octo/reviewers", "tess") is expected
    assert people.member(INSTALLATION, "Octo/Reviewers", "TESS") is expected
    assert route.call_count == 1


def test_a_team_github_will_not_show_is_reported_not_guessed(github: respx.MockRouter, pem: str) -> None:
    message = {"message": "Resource not accessible by integration"}
    route = membership_route(github, "reviewers", "tess").respond(403, json=message)
    people = directory(pem)
    for _ in range(2):
        with pytest.raises(TeamsHidden) as raised:
            people.member(INSTALLATION, "octo/reviewers", "tess")
        assert raised.value.org == "octo"
    assert route.call_count == 1  # cached as briefly as an answer


def test_permissions_are_cached_briefly(github: respx.MockRouter, pem: str) -> None:
    route = permission_route(github, "maria").respond(200, json=answer("write", "write"))
    people = directory(pem)
    for repository, login in (("octo/shop", "maria"), ("Octo/Shop", "Maria"), ("octo/SHOP", "MARIA")):
        assert people.permission(INSTALLATION, repository, login) is Permission.WRITE
    assert route.call_count == 1
    people.ttl = 0
    people.permission(INSTALLATION, "octo/shop", "maria")
    assert route.call_count == 2


def test_every_read_asks_github_and_no_answer_is_kept_for_later(github: respx.MockRouter, pem: str) -> None:
    # GitHub marks its answers cacheable for a minute, with a validator: an HTTP cache would keep each one (for the
    # life of the process, githubkit's) and send the validator back on the next read. Here: the settings file, read
    # again each time its five minutes (here: none) have run out.
    cacheable = {"Cache-Control": "private, max-age=60, s-maxage=60", "ETag": 'W/"first"',
                 "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP"}  # fmt: skip
    file = {"type": "file", "encoding": "base64", "content": base64.b64encode(b"max_active_claims: 2\n").decode()}
    route = github.get("/repos/octo/shop/contents/.github/baton.yml").respond(200, json=file, headers=cacheable)
    settings = GitHubConfigs(directory(pem).github, ttl=0)
    for _ in range(3):
        assert settings.load(INSTALLATION, "octo/shop").policy.max_active_claims == 2
    assert route.call_count == 3
    assert [call.request.headers.get("if-none-match") for call in route.calls] == [None, None, None]


def test_a_process_keeps_so_many_answers_and_forgets_the_oldest_first(github: respx.MockRouter, pem: str) -> None:
    routes = {login: permission_route(github, login).respond(200, json=answer("write", "write"))
              for login in ("ana", "ben", "cy", "dee", "eve")}  # fmt: skip
    people = directory(pem)
    people.most = 4
    for login in ("ana", "ben", "cy", "dee", "eve"):  # a fifth answer: the two oldest go, to keep three
        people.permission(INSTALLATION, "octo/shop", login)
    for login in ("cy", "dee", "eve", "ana", "ben"):  # kept, kept, kept, asked again, asked again
        people.permission(INSTALLATION, "octo/shop", login)
    assert {login: route.call_count for login, route in routes.items()} == {"ana": 2, "ben": 2, "cy": 1, "dee": 1,
                                                                             "eve": 1}  # fmt: skip


def test_a_permission_asked_again_carries_the_tag_github_gave_and_a_304_keeps_the_answer(
    github: respx.MockRouter, pem: str
) -> None:
    # GitHub answers a conditional request with 304 while nothing changed; its rate limit does not count those.
    given = {"tag": 'W/"one"', "answer": answer("write", "maintain")}

    def permission(request: httpx.Request) -> httpx.Response:
        if request.headers.get("if-none-match") == given["tag"]:
            return httpx.Response(304, headers={"ETag": given["tag"]})
        return httpx.Response(200, json=given["answer"], headers={"ETag": given["tag"]})

    route = permission_route(github, "maria").mock(side_effect=permission)
    people = directory(pem)
    people.ttl = 0  # every ask goes to GitHub
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.MAINTAIN
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.MAINTAIN  # 304: the answer kept
    given.update(tag='W/"two"', answer=answer("read", "read"))  # a maintainer took maria's role away
    github.get("/repos/octo/shop/collaborators/maria").respond(204)
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.READ
    assert [call.request.headers.get("if-none-match") for call in route.calls] == [None, 'W/"one"', 'W/"one"']
    assert [call.response.status_code for call in route.calls] == [200, 304, 200]


def test_unknown_permissions_are_looked_up_side_by_side_and_kept(github: respx.MockRouter, pem: str) -> None:
    import threading
    import time

    inside, most = 0, 0
    lock = threading.Lock()

    def slow(request: httpx.Request) -> httpx.Response:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.2)
        with lock:
            inside -= 1
        return httpx.Response(200, json=answer("write", "write"))

    logins = [f"agent-{n}" for n in range(6)]
    routes = [permission_route(github, login).mock(side_effect=slow) for login in logins]
    people = directory(pem)
    people.permission(INSTALLATION, "octo/shop", "agent-0")  # known already: not asked again
    began = time.monotonic()
    people.warm({(INSTALLATION, "octo/shop", login) for login in logins})
    assert time.monotonic() - began < 0.2 * 5 / 2  # side by side, not one after another
    assert most > 1
    assert [route.call_count for route in routes] == [1] * 6
    for login in logins:
        assert people.permission(INSTALLATION, "octo/shop", login) is Permission.WRITE
    assert [route.call_count for route in routes] == [1] * 6


def _minting(github: respx.MockRouter, *answers: int) -> tuple[respx.Route, list[str]]:
    """The installation's token route answering slowly, with `answers`' statuses in turn (then 201): what each
    token minted was."""
    import threading
    import time

    statuses, minted, lock = list(answers), [], threading.Lock()

    def mint(request: httpx.Request) -> httpx.Response:
        with lock:
            status = statuses.pop(0) if statuses else 201
            token = f"ghs_token_{len(minted)}"
            minted.append(token)
        time.sleep(0.2)  # long enough for every lookup to need it meanwhile
        if status != 201:
            return httpx.Response(status, json={"message": "oops"})
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return httpx.Response(201, json={"token": token, "expires_at": expires, "permissions": {},
                                         "repository_selection": "all"})  # fmt: skip

    return github.post(f"/app/installations/{INSTALLATION}/access_tokens").mock(side_effect=mint), minted


def test_calls_side_by_side_share_one_minted_installation_token(github: respx.MockRouter, pem: str) -> None:
    mint, minted = _minting(github)
    logins = [f"agent-{n}" for n in range(6)]
    routes = [permission_route(github, login).respond(200, json=answer("write", "write")) for login in logins]
    people = directory(pem)
    people.warm({(INSTALLATION, "octo/shop", login) for login in logins})  # six lookups at once, no token yet
    assert mint.call_count == 1
    assert [route.call_count for route in routes] == [1] * 6
    assert {route.calls[0].request.headers["authorization"] for route in routes} == {f"token {minted[0]}"}


def test_a_minting_that_fails_is_not_shared_the_others_mint_their_own(github: respx.MockRouter, pem: str) -> None:
    mint, minted = _minting(github, 502)
    logins = [f"agent-{n}" for n in range(4)]
    routes = [permission_route(github, login).respond(200, json=answer("write", "write")) for login in logins]
    people = directory(pem)
    people.warm({(INSTALLATION, "octo/shop", login) for login in logins})
    assert mint.call_count >= 2  # the first answered 502: the calls that waited on it asked again
    asked = [route.call_count for route in routes]
    assert sorted(asked) == [0, 1, 1, 1]  # the lookup whose minting failed was not made (it fails when asked again)
    assert all(route.calls[0].request.headers["authorization"] != f"token {minted[0]}" for route in routes
               if route.call_count)  # fmt: skip
    for login in logins:
        assert people.permission(INSTALLATION, "octo/shop", login) is Permission.WRITE


def listed(login: str, role_name: str, flags: tuple[bool, bool, bool, bool, bool]) -> dict[str, object]:
    """An item of the list-collaborators API; `flags`: pull, triage, push, maintain, admin."""
    names = ("pull", "triage", "push", "maintain", "admin")
    return {"login": login, "id": 1, "role_name": role_name, "permissions": dict(zip(names, flags, strict=True))}


def learned(people: GitHubDirectory, logins: list[str]) -> None:
    deadline = time.monotonic() + 5
    while not all(people.knows(INSTALLATION, "octo/shop", login) for login in logins):
        assert time.monotonic() < deadline, [login for login in logins if not people.knows(INSTALLATION, "octo/shop",
                                                                                             login)]  # fmt: skip
        time.sleep(0.01)


def test_three_people_or_more_of_a_repository_are_learned_from_one_page_of_its_collaborators(
    github: respx.MockRouter, pem: str
) -> None:
    # A race's losers, looked up after their refusals: one call lists the repository's collaborators with their roles
    # (what the permission API and the collaborator check would say of each); someone not on it is asked alone.
    page = github.get("/repos/octo/shop/collaborators").respond(200, json=[
        listed("Ana", "read", (True, False, False, False, False)),
        listed("ben", "write", (True, True, True, False, False)),
        listed("cy", "release-manager", (True, True, True, True, False)),
        listed("zed", "admin", (True, True, True, True, True)),
    ])  # fmt: skip
    one_by_one = github.get(path__regex=r"/repos/octo/shop/collaborators/(ana|ben|cy)(/permission)?$")
    permission_route(github, "otto").respond(200, json=answer("read", "read"))
    check = github.get("/repos/octo/shop/collaborators/otto").respond(404)
    people = directory(pem)
    people.learn({(INSTALLATION, "octo/shop", login) for login in ("ana", "Ben", "cy", "otto")})
    learned(people, ["ana", "ben", "cy", "otto"])
    assert page.call_count == 1
    assert dict(page.calls.last.request.url.params) == {"affiliation": "all", "per_page": "100"}
    assert one_by_one.call_count == 0
    assert people.access(INSTALLATION, "octo/shop", "ana") == Access(Permission.READ, "read", True)
    assert people.access(INSTALLATION, "octo/shop", "ben") == Access(Permission.WRITE, "write", True)
    assert people.access(INSTALLATION, "octo/shop", "cy") == Access(Permission.MAINTAIN, "release-manager", True)
    assert people.access(INSTALLATION, "octo/shop", "otto") == Access(Permission.READ, "read", False)
    assert check.call_count == 1
    assert not people.knows(INSTALLATION, "octo/shop", "zed")  # listed, not asked for: not kept


@pytest.mark.parametrize("failure", [502, 403, "not a list"])
def test_two_people_are_asked_one_by_one_and_a_listing_that_fails_asks_each_alone_refused_not_again_for_a_while(
    github: respx.MockRouter, pem: str, failure: int | str
) -> None:
    page = github.get("/repos/octo/shop/collaborators")
    if isinstance(failure, int):
        page.respond(failure)
    else:
        page.respond(200, json={"message": failure})
    routes = {login: permission_route(github, login).respond(200, json=answer("write", "write"))
              for login in ("ana", "ben", "cy")}  # fmt: skip
    people = directory(pem)
    people.learn({(INSTALLATION, "octo/shop", "ana"), (INSTALLATION, "octo/shop", "ben")})
    learned(people, ["ana", "ben"])
    assert page.call_count == 0
    people.learn({(INSTALLATION, "octo/shop", login) for login in ("ana", "ben", "cy")})  # one is not known yet
    learned(people, ["cy"])
    assert page.call_count == 0
    people.ttl = 0  # all three out of date: listed, and when that fails asked one by one
    people.learn({(INSTALLATION, "octo/shop", login) for login in ("ana", "ben", "cy")})
    deadline = time.monotonic() + 5
    while sum(route.call_count for route in routes.values()) < 6:
        assert time.monotonic() < deadline, {login: route.call_count for login, route in routes.items()}
        time.sleep(0.01)
    assert page.call_count == 1
    assert {login: route.call_count for login, route in routes.items()} == {"ana": 2, "ben": 2, "cy": 2}
    # Out of date again: a listing GitHub refused (4xx) is not asked for again for a while; one that failed is.
    people.learn({(INSTALLATION, "octo/shop", login) for login in ("ana", "ben", "cy")})
    while sum(route.call_count for route in routes.values()) < 9:
        assert time.monotonic() < deadline + 5, {login: route.call_count for login, route in routes.items()}
        time.sleep(0.01)
    assert page.call_count == (1 if failure == 403 else 2)
    people.ttl = 60
    assert people.access(INSTALLATION, "octo/shop", "cy") == Access(Permission.WRITE, "write", True)


def test_a_permission_asked_again_in_the_background_that_fails_leaves_the_answer_kept_until_its_time_is_up(
    github: respx.MockRouter, pem: str, caplog: pytest.LogCaptureFixture
) -> None:
    import time

    asked_before: list[httpx.Request] = []

    def permission(request: httpx.Request) -> httpx.Response:  # the first answer, then GitHub fails
        asked_before.append(request)
        return httpx.Response(200, json=answer("write", "write")) if len(asked_before) == 1 else httpx.Response(502)

    route = permission_route(github, "maria").mock(side_effect=permission)
    people = directory(pem)
    people.ttl, people.again_after = 1.0, 0.5
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE
    time.sleep(0.6)
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE  # kept; asked again meanwhile
    deadline = time.monotonic() + 5
    while route.call_count < 2 or "asking GitHub again" not in caplog.text:
        assert time.monotonic() < deadline, "not asked again"
        time.sleep(0.01)
    assert "asking GitHub again for maria's permission on octo/shop failed: RequestFailed" in caplog.text
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE  # still within its time
    time.sleep(0.45)
    asked = route.call_count
    with pytest.raises(RequestFailed):  # its time is up: the call asks, and GitHub's failure is the caller's
        people.permission(INSTALLATION, "octo/shop", "maria")
    assert route.call_count == asked + 1


def test_a_thread_that_must_not_wait_gets_would_wait_instead_of_a_call_and_the_answers_kept_still_serve(
    github: respx.MockRouter, pem: str
) -> None:
    """`not_waiting`: no request leaves (not even the token's minting); what is kept answers; outside, calls go."""
    route = permission_route(github, "maria").respond(200, json=answer("write", "write"))
    people = directory(pem)
    with not_waiting(), pytest.raises(WouldWait):
        people.permission(INSTALLATION, "octo/shop", "maria")
    assert github.calls.call_count == 0
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE  # minted, then asked
    with not_waiting():
        assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE  # kept: no call
        try:
            people.permission(INSTALLATION, "octo/shop", "someone-else")
        except Exception:  # what an `except Exception` on the way would do
            pytest.fail("WouldWait was taken for GitHub failing")
        except WouldWait:
            pass
    assert route.call_count == 1 and github.calls.call_count == 2


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every request githubkit builds, as `METHOD path` (the API's base path left out), whether it is sent or not."""
    requests: list[str] = []
    build = httpx.Client.build_request

    def recorded(client: httpx.Client, method: str, url: httpx.URL | str, **options: Any) -> httpx.Request:
        requests.append(f"{method} {httpx.URL(url).path.removeprefix(httpx.URL(API).path)}")
        return build(client, method, url, **options)

    monkeypatch.setattr(httpx.Client, "build_request", recorded)
    return requests


def test_a_thread_that_must_not_wait_is_stopped_before_githubkit_builds_a_request(
    github: respx.MockRouter, pem: str, built: list[str]
) -> None:
    """The first call of an operation costs githubkit milliseconds before it would reach GitHub: on the event loop
    that work would be thrown away with the `WouldWait` that follows, so the client is refused at once."""
    people = directory(pem)
    with not_waiting(), pytest.raises(WouldWait):
        people.github.installation(INSTALLATION)
    with not_waiting(), pytest.raises(WouldWait):
        GitHubConfigs(people.github).load(INSTALLATION, "octo/shop")
    assert built == [] and github.calls.call_count == 0


def test_prepare_loads_the_operations_of_decisions_and_writes_and_sends_nothing(
    github: respx.MockRouter, pem: str, built: list[str]
) -> None:
    people = directory(pem)
    people.github.prepare()
    assert github.calls.call_count == 0
    # each operation went as far as its request (its body checked), where it stopped: what a decision waits for ...
    assert {
        "GET /repos/owner/name/contents/path",
        "GET /repos/owner/name/collaborators/login/permission",
        "GET /repos/owner/name/collaborators/login",
        "GET /orgs/owner/teams/team/memberships/login",
    } <= set(built)
    # ... and what the write lane sends: the issue read before its labels, labels, assignees, comments, 👍, check run
    assert {"GET /repos/owner/name/issues/1", "POST /repos/owner/name/issues/1/labels",
            "POST /repos/owner/name/issues/1/assignees", "POST /repos/owner/name/issues/1/comments",
            "PATCH /repos/owner/name/issues/comments/1", "POST /repos/owner/name/issues/comments/1/reactions",
            "POST /repos/owner/name/check-runs", "PATCH /repos/owner/name/check-runs/1"} <= set(built)  # fmt: skip
    route = permission_route(github, "maria").respond(200, json=answer("write", "write"))
    assert people.permission(INSTALLATION, "octo/shop", "maria") is Permission.WRITE  # the App works as before
    assert route.call_count == 1


def test_someone_who_is_not_a_collaborator_has_no_permission(github: respx.MockRouter, pem: str) -> None:
    permission_route(github, "stranger").respond(404, json={"message": "Not Found"})
    assert directory(pem).permission(INSTALLATION, "octo/shop", "stranger") is Permission.NONE


@pytest.mark.parametrize("status", [500, 502, 403])
def test_github_failing_is_an_error_for_the_caller_not_a_guess(github: respx.MockRouter, pem: str, status: int) -> None:
    route = permission_route(github, "maria").respond(status, json={"message": "oops"})
    with pytest.raises(RequestFailed):
        directory(pem).permission(INSTALLATION, "octo/shop", "maria")
    assert route.call_count == 1  # no retry loop inside the request


def test_a_timeout_is_an_error_too(github: respx.MockRouter, pem: str) -> None:
    permission_route(github, "maria").mock(side_effect=httpx.ConnectTimeout("slow"))
    with pytest.raises(Exception) as raised:
        directory(pem).permission(INSTALLATION, "octo/shop", "maria")
    assert "timeout" in type(raised.value).__name__.lower() or "Timeout" in repr(raised.value)


def test_the_app_uses_github_for_permissions_when_configured(
    github: respx.MockRouter, pem: str, sqlite_url: str
) -> None:
    from fastapi.testclient import TestClient

    from baton.domain import TicketKey, WorkState
    from baton.github.webhooks import signature
    from baton.web import create_app

    permission_route(github, "maria").respond(200, json=answer("write", "maintain"))
    permission_route(github, "agent-a").respond(200, json=answer("write", "write"))
    github.get("/repos/octo/shop/contents/.github/baton.yml").respond(404, json={"message": "Not Found"})
    github.get("/repos/octo/.github/contents/.github/baton.yml").respond(404, json={"message": "Not Found"})
    app = create_app(
        settings(
            database_url=sqlite_url,
            webhook_secret=SecretStr("s"),
            app_id=APP_ID,
            private_key=SecretStr(pem),
            github_api_url=API,
        ),
        lanes=False,
    )

    def send(login: str, body: str, comment_id: int) -> None:
        payload = json.dumps({
            "action": "created",
            "issue": {"number": 42, "id": 1, "user": {"login": "olivia"}},
            "comment": {"id": comment_id, "body": body, "user": {"login": login}},
            "repository": {"id": 7, "full_name": "octo/shop"},
            "installation": {"id": INSTALLATION},
            "sender": {"login": login, "type": "User"},
        }).encode()  # fmt: skip
        headers = {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": f"d{comment_id}",
                   "X-Hub-Signature-256": signature(b"s", payload)}  # fmt: skip
        assert client.post("/webhooks/github", content=payload, headers=headers).status_code == 202

    with TestClient(app) as client:
        send("agent-a", "/claim", 1)
        send("agent-a", "/deliver done", 2)
        send("agent-a", "/accept", 3)  # write permission, to push: not a reviewer
        assert app.state.work.ticket(TicketKey(INSTALLATION, 7, 42)).state is WorkState.DELIVERED
        send("maria", "/accept", 4)
        assert app.state.work.ticket(TicketKey(INSTALLATION, 7, 42)).state is WorkState.ACCEPTED
    app.state.work.units.engine.dispose()
