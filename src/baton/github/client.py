"""GitHub App clients: the App's credentials, per-installation clients, and who-is-who.

Each `GitHubApp` has its own githubkit cache strategy (the default one is process-global and would
share tokens between apps and tests) and keeps every client it builds in a variable, since githubkit's
`.rest` holds only a weak reference to its client. Retries are off inside calls: the caller decides
(the webhook inbox fails the hook, the outbox reschedules a write) instead of sleeping in a request.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import RequestFailed

from baton.domain.model import Access, Permission
from baton.environment import tls
from baton.environment.settings import Settings, SettingsError

from .routes import operation

log = logging.getLogger("baton.github")


@dataclass(frozen=True)
class AppCredentials:
    app_id: int
    private_key: RSAPrivateKey  # loaded once: loading checks the key, which costs more than signing with it

    def __repr__(self) -> str:
        return f"AppCredentials(app_id={self.app_id}, private_key=<hidden>)"


def app_credentials(settings: Settings) -> AppCredentials | None:
    """The App's credentials from the settings, checked now, so a bad key fails at start, not at a webhook.

    None when no App is configured at all (a local run without GitHub).
    """
    key = settings.private_key.get_secret_value() if settings.private_key else None
    if key is None and settings.private_key_path:
        path = Path(settings.private_key_path)
        if not path.is_file():
            raise SettingsError(f"BATON_PRIVATE_KEY_PATH={path} is not a readable file.")
        try:
            key = path.read_text(encoding="utf-8")
        except OSError as error:
            raise SettingsError(f"BATON_PRIVATE_KEY_PATH={path} cannot be read: {error.strerror or error}.") from None
        except UnicodeDecodeError:
            raise SettingsError(
                f"BATON_PRIVATE_KEY_PATH={path} is not a PEM key (it is not text): download a new key from the App's "
                "settings."
            ) from None
    if settings.app_id is None and key is None:
        return None
    if settings.app_id is None:
        raise SettingsError("A private key is set but BATON_APP_ID is not: set the App's numeric id.")
    if key is None:
        raise SettingsError(
            "BATON_APP_ID is set but no private key is: set BATON_PRIVATE_KEY (the PEM text) or "
            "BATON_PRIVATE_KEY_PATH (a .pem file downloaded from the App's settings)."
        )
    key = key.replace("\\n", "\n").strip() + "\n"  # a PEM pasted into one env line keeps its newlines
    try:
        loaded = _loaded(key)
        jwt.encode({"iss": str(settings.app_id)}, loaded, algorithm="RS256")
    except Exception as error:  # whatever the library says, the answer for the user is the same
        raise SettingsError(
            f"The App's private key is not a usable RSA PEM key ({type(error).__name__}). Download a new key "
            "from the App's settings and set BATON_PRIVATE_KEY or BATON_PRIVATE_KEY_PATH."
        ) from None
    return AppCredentials(settings.app_id, loaded)


@functools.lru_cache(maxsize=4)
def _loaded(pem: str) -> RSAPrivateKey:
    """The key, loaded and checked once per process (the check costs tens of milliseconds)."""
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise TypeError("not an RSA key")
    return key


TIMEOUT = 10.0  # seconds a call to GitHub may take (setting `BATON_GITHUB_TIMEOUT`)


class WouldWait(BaseException):
    """Raised in place of a call to GitHub on a thread that must not wait for one (`not_waiting`), before anything
    is sent. A BaseException, as asyncio's CancelledError is, so that no `except Exception` on the way takes it for
    GitHub failing: it reaches the code that said not to wait, which does the work in a thread instead."""


_HERE = threading.local()


@contextmanager
def not_waiting() -> Iterator[None]:
    """While inside, a call to GitHub from this thread raises `WouldWait` instead of being made (a permission,
    settings file or token not known yet): the event loop deciding agent calls at hand (`web/agent_api.py`)."""
    before = getattr(_HERE, "not_waiting", False)
    _HERE.not_waiting = True
    try:
        yield
    finally:
        _HERE.not_waiting = before


def _may_wait(name: str) -> None:
    if getattr(_HERE, "not_waiting", False):
        raise WouldWait(name)


class _Timed(httpx.HTTPTransport):
    """The one transport of every githubkit client of the process: its connections are kept for the next
    request (githubkit opens and closes a client per request, and closing one must not close the connections
    other threads are using), and every request gets the timeout, also those githubkit's HTTP cache rebuilds
    without it (hishel drops the request's timeout, and a call to a GitHub that hangs would wait for ever)."""

    def __init__(self, timeout: float, **options: Any) -> None:
        super().__init__(**options)
        self._timeout = httpx.Timeout(timeout).as_dict()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.extensions.setdefault("timeout", self._timeout)
        return super().handle_request(request)

    def close(self) -> None:
        """Kept open: the clients that close come and go, the connections stay for the process."""

    def __exit__(self, *exc: object) -> None:
        self.close()


class Watch(Protocol):
    """What hears of every call to GitHub (`baton.process.metrics.Metrics`)."""

    def github_call(self, account: str, operation: str, status: str, limit: tuple[int, int] | None) -> None:
        """`account`: the installation's id, or "app" for the App's own calls; `status`: the HTTP status, or
        "error" when no answer came; `limit`: (x-ratelimit-remaining, x-ratelimit-reset) as GitHub sent them."""


_MINT = "POST /app/installations/{installation_id}/access_tokens"


class _Minted:
    """A token minting under way, and GitHub's answer to it once it came (None: it failed)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: tuple[int, str, bytes] | None = None  # status, content type, body


class _Watched(httpx.BaseTransport):
    """One installation's (or the App's) view of the shared transport: each call is named by its route
    (`baton.github.routes`), counted, and logged at DEBUG with its status and duration, never its headers.

    An installation's token is minted once at a time: githubkit mints one in each call that finds none kept, and
    calls made side by side (the permission lookups of a race, the settings file beside them, the writers) would
    each mint their own when the token runs out, every hour. A call that needs a token while another mints one
    waits for that answer and takes the same token; if that minting fails, it mints its own."""

    def __init__(self, shared: httpx.BaseTransport, base_path: str, account: str, watch: Watch | None) -> None:
        self._shared = shared
        self._base = base_path.rstrip("/")
        self._account = account
        self._watch = watch
        self._lock = threading.Lock()
        self._minting: _Minted | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix(self._base) or "/"
        name = operation(request.method, path)
        _may_wait(name)  # before waiting on another thread's minting, too
        if name != _MINT:
            return self._send(request, path, name)
        with self._lock:
            minted, mine = self._minting, self._minting is None
            if minted is None:
                minted = self._minting = _Minted()
        if not mine:
            minted.done.wait()
            if minted.answer is None:  # that one failed: this call tries for itself
                return self._send(request, path, name)
            status, kind, body = minted.answer
            return httpx.Response(status, headers={"content-type": kind}, content=body, request=request)
        try:
            response = self._send(request, path, name)
            body = response.read()
            if response.status_code == 201:
                minted.answer = (201, response.headers.get("content-type", "application/json"), body)
            return response
        finally:
            with self._lock:
                self._minting = None
            minted.done.set()

    def _send(self, request: httpx.Request, path: str, name: str) -> httpx.Response:
        # The token minting of an installation's client is the App's call, on the App's rate limit.
        account = "app" if path.startswith("/app/") else self._account
        began = time.perf_counter()
        status = "error"
        limit: tuple[int, int] | None = None
        try:
            response = self._shared.handle_request(request)
            status = str(response.status_code)
            remaining, reset = response.headers.get("x-ratelimit-remaining"), response.headers.get("x-ratelimit-reset")
            if remaining is not None and remaining.isdigit():
                limit = (int(remaining), int(reset) if reset is not None and reset.isdigit() else 0)
            return response
        finally:
            took = time.perf_counter() - began
            if self._watch is not None:
                self._watch.github_call(account, name, status, limit)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("GitHub %s: %s in %.1f ms", name, status, took * 1000,
                          extra={"operation": name, "status": status, "duration_ms": round(took * 1000, 1),
                                 "installation": account})  # fmt: skip

    def close(self) -> None:
        """The shared transport stays open (`_Timed.close`)."""


class GitHubApp:
    """The App, and a client per installation that mints and renews its own installation tokens. `watch`
    hears of every call (its route, status and the rate limit GitHub reports)."""

    def __init__(
        self, credentials: AppCredentials, base_url: str, timeout: float | None = None, watch: Watch | None = None
    ) -> None:
        timeout = TIMEOUT if timeout is None else timeout
        self._transport = _Timed(timeout, verify=tls.context())
        self._base_path = httpx.URL(base_url).path
        self._watch = watch
        self.app = GitHub(
            # githubkit hands the key to PyJWT, which takes a loaded key as well as PEM text
            AppAuthStrategy(str(credentials.app_id), cast(str, credentials.private_key)),
            base_url=base_url.rstrip("/") + "/",
            cache_strategy=MemCacheStrategy(),
            # No HTTP cache of GitHub's answers: githubkit's (hishel, an SQLite database in memory) keeps every
            # answer to a GET for the life of the process, a new copy each time, and its bookkeeping cost more
            # CPU than the rest of the call. Baton keeps what it needs to (permissions, settings files) itself.
            http_cache=False,
            auto_retry=False,
            timeout=timeout,
            # githubkit opens a client per request; built each time, the TLS context (loading the CA
            # certificates) cost more than the request itself, so one transport holds it for all of them.
            transport=_Watched(self._transport, self._base_path, "app", watch),
        )
        self._installations: dict[int, GitHub[Any]] = {}
        self._lock = threading.Lock()

    def login(self) -> str:
        """The App's own login on GitHub, `<slug>[bot]`, from the App's `GET /app`: the sender of every webhook
        that reports what Baton itself did."""
        answer: Any = self.app.rest.apps.get_authenticated().json()
        slug = answer.get("slug") if isinstance(answer, dict) else None
        if not isinstance(slug, str) or not slug:
            raise ValueError("GitHub's GET /app answered without the App's slug")
        return f"{slug}[bot]"

    def prepare(self) -> None:
        """githubkit loads an operation's models the first time the process calls it, and builds the checks of a
        request body the first time one is sent: 25 to 50 ms for the first call, 1 to 5 ms for each operation after
        it, on a two-core machine. The operations a decision may wait for (a settings file, a permission, the
        collaborator check, a team membership) and those the write lane makes (an issue read before its labels and
        assignees, the 👍, the reply and status comment, the labels, the check run) are loaded here, before the
        first race, without anything being sent: each call stops where it would reach GitHub (`not_waiting`).
        Otherwise the first race pays for them, and the write lane's first writes hold the interpreter while the
        event loop decides the next races."""
        # An installation's client (of no installation): the App's own refuses these operations before sending.
        client = self.app.with_auth(self.app.auth.as_installation(0))
        rest = client.rest
        check: Any = {
            "status": "completed",
            "conclusion": "success",
            "output": {"title": "t", "summary": ""},
        }
        created: Any = {**check, "name": "name", "head_sha": "0" * 40}
        calls: tuple[Callable[[], object], ...] = (
            lambda: rest.repos.get_content("owner", "name", "path"),
            lambda: rest.repos.get_collaborator_permission_level("owner", "name", "login"),
            lambda: rest.repos.check_collaborator("owner", "name", "login"),
            lambda: rest.repos.list_collaborators("owner", "name", affiliation="all", per_page=LISTED_PAGE),
            lambda: rest.teams.get_membership_for_user_in_org("owner", "team", "login"),
            lambda: rest.issues.get("owner", "name", 1),
            lambda: rest.issues.add_labels("owner", "name", 1, data={"labels": ["label"]}),
            lambda: rest.issues.remove_label("owner", "name", 1, "label"),
            lambda: rest.issues.get_label("owner", "name", "label"),
            lambda: rest.issues.create_label(
                "owner", "name", data={"name": "label", "color": "ffffff", "description": "d"}
            ),
            lambda: rest.issues.add_assignees("owner", "name", 1, data={"assignees": ["login"]}),
            lambda: rest.issues.remove_assignees("owner", "name", 1, data={"assignees": ["login"]}),
            lambda: rest.issues.list_comments("owner", "name", 1, per_page=100, page=1),
            lambda: rest.issues.get_comment("owner", "name", 1),
            lambda: rest.issues.create_comment("owner", "name", 1, data={"body": "body"}),
            lambda: rest.issues.update_comment("owner", "name", 1, data={"body": "body"}),
            lambda: rest.reactions.create_for_issue("owner", "name", 1, data={"content": "+1"}),
            lambda: rest.reactions.create_for_issue_comment("owner", "name", 1, data={"content": "+1"}),
            lambda: rest.checks.list_for_ref("owner", "name", "0" * 40, check_name="name", per_page=100),
            lambda: rest.checks.create("owner", "name", data=created),
            lambda: rest.checks.update("owner", "name", 1, data=check),
        )
        with not_waiting():
            for call in calls:
                try:
                    call()
                except WouldWait:
                    continue
                except Exception as error:  # only a warm-up: the call itself is made, and answered, when needed
                    log.debug("preparing a GitHub operation failed: %s", type(error).__name__)

    def installation(self, installation_id: int) -> GitHub[Any]:
        """The client of one installation. On a thread that must not wait for GitHub (`not_waiting`), raises
        `WouldWait` before githubkit builds anything: each caller goes on to call GitHub, and the first call of an
        operation costs milliseconds before it would reach GitHub (`prepare`)."""
        _may_wait("a call to GitHub")
        with self._lock:
            client = self._installations.get(installation_id)
            if client is None:
                client = self.app.with_auth(self.app.auth.as_installation(installation_id))
                watched = _Watched(self._transport, self._base_path, str(installation_id), self._watch)
                client.config = dataclasses.replace(client.config, transport=watched)
                self._installations[installation_id] = client
            return client


_ROLES = {
    "admin": Permission.ADMIN,
    "maintain": Permission.MAINTAIN,
    "write": Permission.WRITE,
    "triage": Permission.TRIAGE,
    "read": Permission.READ,
    "none": Permission.NONE,
}
# A custom role's base level, from the `user.permissions` flags GitHub answers with, highest first.
_FLAGS = (
    ("admin", Permission.ADMIN),
    ("maintain", Permission.MAINTAIN),
    ("push", Permission.WRITE),
    ("triage", Permission.TRIAGE),
    ("pull", Permission.READ),
)


def _person(installation_id: int, repository: str, login: str) -> tuple[int, str, str]:
    """How `GitHubDirectory` keeps a person's access: by installation, repository and login, in any case."""
    return installation_id, repository.lower(), login.lower()


def access_of(data: Any) -> Access:
    """An answer of the collaborator-permission API read into the level the rules use and the role's name.
    `role_name` tells maintain and triage apart where `permission` folds them into write and read; a custom
    role's name is none of the built-in ones, and its base level shows in the user's permission flags."""
    data = data if isinstance(data, dict) else {}
    role = str(data.get("role_name") or "")
    if role in _ROLES:
        return Access(_ROLES[role], role)
    user = data.get("user")
    flags = user.get("permissions") if isinstance(user, dict) else None
    if isinstance(flags, dict):
        base = next((level for flag, level in _FLAGS if flags.get(flag) is True), None)
        if base is not None:
            return Access(base, role)
    return Access(_ROLES.get(str(data.get("permission")), Permission.NONE), role)


def collaborators(data: Any) -> dict[str, Access]:
    """A page of the list-collaborators API read into each one's access, by login in lower case: the role as the
    collaborator-permission API gives it (`access_of`), and a collaborator, since the list holds those the
    collaborator check answers 204 for."""
    found: dict[str, Access] = {}
    for entry in data if isinstance(data, list) else ():
        login = entry.get("login") if isinstance(entry, dict) else None
        if isinstance(login, str):
            shown = access_of({"role_name": entry.get("role_name"), "user": {"permissions": entry.get("permissions")}})
            if shown.permission is not Permission.NONE:  # never listed so; asked one by one, should it be
                found[login.lower()] = dataclasses.replace(shown, collaborator=True)
    return found


class TeamsHidden(RuntimeError):
    """GitHub refused to show an organisation's team memberships: the App lacks the organisation `members:
    read` permission (or is not installed on that organisation)."""

    def __init__(self, org: str) -> None:
        super().__init__(f"team memberships of {org} are not readable")
        self.org = org


LISTED_FROM = 3  # people of one repository to look up at once (`learn`) from a page of its collaborators
LISTED_PAGE = 100  # the most GitHub lists in one page
KEPT = 20_000  # permissions (and, apart, team memberships) a process keeps at once
AGAIN_AFTER = 0.75  # of its `ttl`: a permission used after this share of its time is asked again, in the background


class GitHubDirectory:
    """Repository permissions from the collaborator-permission API (with, for read access, the collaborator
    check), or for several people learned at once from the list of collaborators, and team memberships from the
    team-membership API, each cached for `ttl` seconds.

    A permission used in the last quarter of its time (`again_after`) is asked again at once, in a thread of the
    directory's own, while the call that used it goes on with the answer kept: someone who keeps calling never
    waits for GitHub once known, and no answer used is older than `ttl`."""

    def __init__(self, github: GitHubApp, ttl: float = 120.0, most: int = KEPT) -> None:
        self.github = github
        self.ttl = ttl
        self.again_after = AGAIN_AFTER
        self.most = most  # answers of each kind kept at once: a process that runs for months meets many people
        # Oldest first: an answer is put at the end each time it is kept (`_keep`).
        self._cache: dict[tuple[int, str, str], tuple[float, Access, str | None]] = {}  # when, what, GitHub's tag
        self._teams: dict[tuple[int, str, str], tuple[float, bool | None]] = {}  # None: hidden from the App
        self._lock = threading.Lock()
        # to ask again, in the thread: one person, or several from a page of the repository's collaborators (`_listed`)
        self._again: queue.SimpleQueue[tuple[int, str, str | tuple[str, ...]]] = queue.SimpleQueue()
        self._asking_again: set[tuple[int, str, str]] = set()  # keys on the queue or being asked
        # repositories whose collaborators GitHub refused to list (a 4xx), and when: their people are asked one by one
        # for `unlisted_for` seconds (as long as an answer is kept, by default)
        self._unlisted: dict[tuple[int, str], float] = {}
        self.unlisted_for = ttl
        self._thread: threading.Thread | None = None

    def _keep(self, kept: dict[Any, Any], key: Hashable, answer: Any) -> None:
        """`answer` kept under `key` (with the lock held); past `most`, the oldest quarter is forgotten (those
        out of date first, as they are the oldest), to be asked again when needed."""
        kept.pop(key, None)
        kept[key] = answer
        if len(kept) > self.most:
            for old in list(itertools.islice(kept, len(kept) - self.most * 3 // 4)):
                del kept[old]

    def warm(self, wanted: set[tuple[int, str, str]], at_once: int = 8) -> None:
        """Look up, side by side, the permissions not known yet among `wanted` (installation, repository,
        login): the first race on a repository would otherwise wait for twenty lookups one after another.
        A lookup that fails here is made again, and fails properly, when the permission is asked for."""
        missing = [key for key in wanted if not self.knows(*key)]
        if len(missing) < 2:
            return
        _may_wait("warm")  # its threads would ask GitHub while this one waits for them
        with ThreadPoolExecutor(max_workers=min(at_once, len(missing)), thread_name_prefix="baton-who") as pool:
            for future in [pool.submit(self.access, *key) for key in missing]:
                with suppress(Exception):
                    future.result()

    def knows(self, installation_id: int, repository: str, login: str) -> bool:
        """Whether `login`'s access to `repository` is kept, and not out of date."""
        with self._lock:
            cached = self._cache.get(_person(installation_id, repository, login))
        return cached is not None and time.monotonic() - cached[0] < self.ttl

    def learn(self, wanted: set[tuple[int, str, str]]) -> None:
        """Look up, in the directory's own thread, the permissions not known yet among `wanted` (installation,
        repository, login), without waiting for them: people whose commands were decided without their access.
        `LISTED_FROM` or more of one repository are looked up with one page of its collaborators (`_listed`), unless
        GitHub refused to list them (a 4xx) within the last `unlisted_for` seconds."""
        places: dict[tuple[int, str], tuple[str, list[str]]] = {}
        for installation_id, repository, login in wanted:
            if not self.knows(installation_id, repository, login):
                places.setdefault((installation_id, repository.lower()), (repository, []))[1].append(login)
        for (installation_id, place), (repository, logins) in places.items():
            with self._lock:
                refused = self._unlisted.get((installation_id, place))
            if len(logins) < LISTED_FROM or (refused is not None and time.monotonic() - refused < self.unlisted_for):
                for login in logins:
                    self._ask_again(installation_id, repository, login, _person(installation_id, repository, login))
                continue
            keys = {login: _person(installation_id, repository, login) for login in logins}
            with self._lock:
                fresh = tuple(sorted(login for login, key in keys.items() if key not in self._asking_again))
                self._asking_again.update(keys[login] for login in fresh)
            if fresh:
                self._start()
                self._again.put((installation_id, repository, fresh))

    def permission(self, installation_id: int, repository: str, login: str) -> Permission:
        return self.access(installation_id, repository, login).permission

    def access(self, installation_id: int, repository: str, login: str) -> Access:
        key = _person(installation_id, repository, login)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            if now - cached[0] >= self.ttl * self.again_after:
                self._ask_again(installation_id, repository, login, key)
            return cached[1]
        return self._ask(installation_id, repository, login, key, cached, now)

    def _ask_again(self, installation_id: int, repository: str, login: str, key: tuple[int, str, str]) -> None:
        """`login`'s permission asked again in the directory's thread (started the first time), once at a time."""
        with self._lock:
            if key in self._asking_again:
                return
            self._asking_again.add(key)
        self._start()
        self._again.put((installation_id, repository, login))

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._asking, name="baton-who-again", daemon=True)
                self._thread.start()

    def _asking(self) -> None:
        while True:
            installation_id, repository, who = self._again.get()
            if isinstance(who, tuple):
                self._listed(installation_id, repository, who)
                continue
            self._asked_again(installation_id, repository, who)

    def _asked_again(self, installation_id: int, repository: str, login: str) -> None:
        key = _person(installation_id, repository, login)
        try:
            with self._lock:
                cached = self._cache.get(key)
            self._ask(installation_id, repository, login, key, cached, time.monotonic())
        except Exception as error:  # the answer kept holds until its time is up; a call then asks, and fails
            log.warning("asking GitHub again for %s's permission on %s failed: %s", login, repository,
                        type(error).__name__)  # fmt: skip
        finally:
            with self._lock:
                self._asking_again.discard(key)

    def _listed(self, installation_id: int, repository: str, logins: tuple[str, ...]) -> None:
        """`logins`' access to `repository` from the first page of its collaborators: one call instead of one or two
        each. Those not on it (no collaborators, or on a later page), or all when the listing fails, are asked one
        by one, as `learn` asks fewer."""
        owner, _, name = repository.partition("/")
        now = time.monotonic()
        try:
            listed = collaborators(self.github.installation(installation_id).rest.repos.list_collaborators(
                owner, name, affiliation="all", per_page=LISTED_PAGE
            ).json())  # fmt: skip
        except Exception as error:
            log.warning("listing the collaborators of %s failed: %s", repository, type(error).__name__)
            listed = {}
            if isinstance(error, RequestFailed) and 400 <= error.response.status_code < 500:
                with self._lock:  # refused, not failing: not asked again for a while
                    self._keep(self._unlisted, (installation_id, repository.lower()), now)
        keys = [_person(installation_id, repository, login) for login in logins]
        try:
            for login, key in zip(logins, keys, strict=True):
                access = listed.get(login.lower())
                if access is None:
                    self._asked_again(installation_id, repository, login)
                    continue
                with self._lock:
                    self._keep(self._cache, key, (now, access, None))
        finally:
            with self._lock:
                self._asking_again.difference_update(keys)

    def _ask(
        self, installation_id: int, repository: str, login: str, key: tuple[int, str, str],
        cached: tuple[float, Access, str | None] | None, now: float,
    ) -> Access:  # fmt: skip
        """`login`'s permission as GitHub says it now, kept from `now` on."""
        owner, _, name = repository.partition("/")
        # Asked again with the tag of the answer kept: while the permission has not changed GitHub answers 304,
        # which its rate limit does not count (Baton keeps no HTTP cache, `GitHubApp`).
        tag = cached[2] if cached is not None else None
        try:
            response = self.github.installation(installation_id).rest.repos.get_collaborator_permission_level(
                owner, name, login, headers={"If-None-Match": tag} if tag else None
            )
        except RequestFailed as error:
            if error.response.status_code != 404:
                raise
            access, tag = Access(Permission.NONE, ""), None  # not a collaborator, or no such user
        else:
            if response.status_code == 304 and cached is not None:
                access = cached[1]
            else:
                access, tag = access_of(response.json()), response.headers.get("etag")
        if access.permission is Permission.READ:
            # everybody reads a public repository: only the collaborator check tells a collaborator with the read
            # role (or an organisation member reading through a team) from an outsider
            access = dataclasses.replace(access, collaborator=self._collaborator(installation_id, owner, name, login))
        elif access.permission is not Permission.NONE:
            access = dataclasses.replace(access, collaborator=True)  # triage or more is given, never public
        with self._lock:
            self._keep(self._cache, key, (now, access, tag))
        return access

    def _collaborator(self, installation_id: int, owner: str, name: str, login: str) -> bool:
        """GitHub's collaborator check: 204 for a collaborator, 404 for anyone else. Any other answer (a 5xx)
        raises: a claim waits for GitHub rather than being refused."""
        try:
            self.github.installation(installation_id).rest.repos.check_collaborator(owner, name, login)
        except RequestFailed as error:
            if error.response.status_code != 404:
                raise
            return False
        return True

    def member(self, installation_id: int, team: str, login: str) -> bool:
        """Whether `login` is an active member of `team` ("org/team-slug"). Raises `TeamsHidden` when GitHub
        refuses to say for lack of permission (403)."""
        org, _, slug = team.partition("/")
        key = (installation_id, team.lower(), login.lower())
        now = time.monotonic()
        with self._lock:
            cached = self._teams.get(key)
        if cached is None or now - cached[0] >= self.ttl:
            try:
                response = self.github.installation(installation_id).rest.teams.get_membership_for_user_in_org(
                    org, slug, login
                )
            except RequestFailed as error:
                if error.response.status_code not in (403, 404):
                    raise
                found: bool | None = None if error.response.status_code == 403 else False
            else:
                data = response.json()
                found = isinstance(data, dict) and data.get("state") == "active"
            cached = (now, found)
            with self._lock:
                self._keep(self._teams, key, cached)
        if cached[1] is None:
            raise TeamsHidden(org)
        return cached[1]
