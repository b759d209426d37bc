"""Repository settings read from GitHub: `.github/baton.yml` on the default branch, else the
organisation's `.github` repository, else the defaults. Cached; an invalid file keeps the last good
settings in force and is reported once per distinct problem."""

from __future__ import annotations

import base64
import logging
import threading
import time
from dataclasses import dataclass

from githubkit.exception import RequestFailed

from baton.domain import Policy
from baton.reading.config import PATH, ConfigError, parse

from .client import GitHubApp

log = logging.getLogger("baton.config")


@dataclass(frozen=True)
class Loaded:
    policy: Policy
    source: str  # "owner/repo:.github/baton.yml", "owner/.github:.github/baton.yml" or "defaults"
    problems: tuple[str, ...] = ()  # of the file that is not in force because it is invalid


class DefaultConfigs:
    """Without GitHub, every repository runs on the defaults."""

    def load(self, installation_id: int, repository: str) -> Loaded:
        return Loaded(Policy(), "defaults")

    def forget(self, installation_id: int, repository: str) -> None:
        return None


class GitHubConfigs:
    def __init__(self, github: GitHubApp, ttl: float = 300.0) -> None:
        self.github = github
        self.ttl = ttl
        self._cache: dict[tuple[int, str], tuple[float, Loaded]] = {}
        self._good: dict[tuple[int, str], Loaded] = {}
        self._forgotten = 0  # how many times `forget` ran: a read begun before it is not cached
        self._lock = threading.Lock()

    def fresh(self, installation_id: int, repository: str) -> bool:
        """Whether `load` answers from what it keeps, without asking GitHub."""
        with self._lock:
            cached = self._cache.get((installation_id, repository.lower()))
        return cached is not None and time.monotonic() - cached[0] < self.ttl

    def load(self, installation_id: int, repository: str) -> Loaded:
        key = (installation_id, repository.lower())
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
            forgotten = self._forgotten
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        owner = repository.partition("/")[0]
        loaded = Loaded(Policy(), "defaults")
        for source in (repository, f"{owner}/.github"):
            text = self._file(installation_id, source)
            if text is None:
                continue
            try:
                loaded = Loaded(parse(text), f"{source}:{PATH}")
            except ConfigError as error:
                with self._lock:
                    good = self._good.get(key, Loaded(Policy(), "defaults"))
                loaded = Loaded(good.policy, good.source, tuple(error.problems))
                log.warning("%s:%s is invalid, keeping %s: %s", source, PATH, good.source, error)
            break
        with self._lock:
            if forgotten == self._forgotten:  # else a push came while reading: what was read may be old
                if not loaded.problems:
                    self._good[key] = loaded
                self._cache[key] = (now, loaded)
        return loaded

    def forget(self, installation_id: int, repository: str) -> None:
        """Read the settings of `repository` again at the next `load` (all of the owner's repositories for a
        push to the organisation's `owner/.github`, their fallback). The last good settings stay known."""
        owner, _, name = repository.lower().partition("/")
        with self._lock:
            self._forgotten += 1
            for cached in list(self._cache):
                if cached[0] == installation_id and (
                    cached[1] == repository.lower() or (name == ".github" and cached[1].startswith(f"{owner}/"))
                ):
                    del self._cache[cached]

    def _file(self, installation_id: int, repository: str) -> str | None:
        owner, _, name = repository.partition("/")
        try:
            response = self.github.installation(installation_id).rest.repos.get_content(owner, name, PATH)
        except RequestFailed as error:
            if error.response.status_code == 404:
                return None
            raise
        data = response.json()
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        content = data.get("content")
        if not isinstance(content, str):
            return None
        return base64.b64decode(content).decode("utf-8", errors="replace")
