"""Baton's own settings, from `BATON_*` environment variables and an optional `.env` (docs/design.md §7).

"Settings" are the service's; a repository's `.github/baton.yml` is its "config" (`baton.reading.config`, whose
errors are `ConfigError`). Nothing is read at import time: `Settings()` is built by whoever starts a
process.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

# A duration setting as `.github/baton.yml` writes durations (`baton.reading.config`): a whole number and a unit.
_DURATION = re.compile(r"(\d+)\s*(s|m|h|d|w)")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
REDELIVERY_WINDOW = 3 * 86400.0  # seconds GitHub redelivers a hook for


class SettingsError(ValueError):
    """A setting that makes Baton unable to work; its message says which and how to fix it."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_", env_file=".env", extra="ignore")

    database_url: str = "sqlite:///./baton.db"
    webhook_secret: SecretStr | None = None
    app_id: int | None = None
    private_key: SecretStr | None = None
    private_key_path: str | None = None
    # The App's OAuth client, written by `baton setup`, for signing in with GitHub.
    client_id: str | None = None
    client_secret: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    github_timeout: float = Field(10.0, gt=0)  # seconds a call to GitHub may take before it is given up and tried later
    api_token: SecretStr | None = None  # the read API answers 403 while this is unset
    # GitHub Actions OIDC tokens are taken as an agent's credential where their audience is this (Baton's public
    # URL, as the workflow asks for it); unset: they are not, and a JWT is taken as any other token.
    oidc_audience: str | None = None
    oidc_issuer: str = "https://token.actions.githubusercontent.com"  # GHES: https://HOST/_services/token
    api_requests_per_minute: int = Field(600, ge=1)  # requests per login, a tenth at once (then 429, Retry-After)
    worker: Literal["inprocess", "external"] = "inprocess"  # external: `baton worker` processes do the work
    answer_delay: float = Field(2.0, ge=0)  # seconds answers on one issue wait, so a race's refusals share one reply
    # One write budget per installation, shared by every process (GitHub's secondary rate limits).
    write_interval: float = Field(1.0, ge=0)  # seconds between two GitHub writes
    writes_per_minute: int = Field(80, ge=1)
    writes_per_hour: int = Field(500, ge=1)
    writers: int = Field(4, ge=1)  # threads writing to GitHub per process, each for one installation at a time
    # Seconds between sweeps of GitHub's webhook delivery log for missed hooks (`baton serve`); 0: off.
    redeliver_every: float = Field(300.0, ge=0)
    # Seconds between sweeps of the App's installations and their repositories (`baton serve` and `baton worker`,
    # one process at a time; each also sweeps as it starts); 0: off.
    installations_every: float = Field(3600.0, ge=0)
    spool_dir: str = "./baton-spool"  # hooks received while the database is unreachable wait here
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)  # 0: any free port
    # Addresses whose X-Forwarded-Proto and X-Forwarded-For Baton believes (the reverse proxy's); `*`: any.
    forwarded_allow_ips: str = "127.0.0.1"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"  # Baton's own loggers (and uvicorn's)
    log_format: Literal["text", "json"] = "text"  # json: one object per line, the fields as keys
    # `baton worker` serves /metrics on BATON_HOST:this port (unset: none; 0: any free port)
    metrics_port: int | None = Field(None, ge=0, le=65535)
    # How long a processed hook keeps its payload, and its row (docs/operations.md, "Storage"): a
    # duration (`14d`, `36h`, `2w`) or seconds. Rows are kept at least GitHub's three days of redeliveries.
    keep_payloads: float = Field(14 * 86400.0, ge=0)
    keep_deliveries: float = 90 * 86400.0  # at least REDELIVERY_WINDOW

    @field_validator("keep_payloads", "keep_deliveries", mode="before")
    @classmethod
    def _duration(cls, value: object, info: ValidationInfo) -> object:
        """`14d`, `36h`, `2w` as seconds; seconds as they are. A hook's row is kept at least GitHub's window
        of redeliveries, or a redelivery of it would be decided again."""
        seconds = value
        if isinstance(value, str) and value.strip() and not value.strip().replace(".", "", 1).isdigit():
            found = _DURATION.fullmatch(value.strip())
            if found is None:
                raise PydanticCustomError("duration", "Input should be a duration such as 14d, 36h or 2w, or seconds")
            seconds = float(found.group(1)) * _UNIT_SECONDS[found.group(2)]
        try:
            short = info.field_name == "keep_deliveries" and float(seconds) < REDELIVERY_WINDOW  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return seconds  # not a number: refused as such
        if short:
            raise PydanticCustomError("too_short", "Input should be at least 3d, GitHub's window of redeliveries")
        return seconds

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _any_case(cls, value: object, info: ValidationInfo) -> object:
        """`debug` is DEBUG, `JSON` is json: the choices are the same words in any case."""
        if not isinstance(value, str):
            return value
        return value.upper() if info.field_name == "log_level" else value.lower()
