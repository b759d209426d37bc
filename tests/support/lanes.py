"""Baton and the stand-in GitHub with the lanes running, as the lane tests open them, and waiting for what they do."""

from __future__ import annotations

import time
from typing import Any

from baton.demo.stage import Stage
from github_standin.contract import Contract, ContractUnavailable
from support.corpus import missing
from support.keys import app_key, app_public_key
from support.local_http import HTTP

TOKEN = "lanes-read-token"
SHOP = "octo/shop"


def open_stage(database_url: str, **settings: Any) -> Any:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    return Stage.open(database_url, key=(app_key(), app_public_key()), api_token=TOKEN, **settings)


def ticket(stage: Stage, number: int) -> dict[str, Any]:
    answer = HTTP.get(f"{stage.baton_url}/api/v1/repos/{SHOP}/issues/{number}",
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)  # fmt: skip
    return dict(answer.json()) if answer.status_code == 200 else {}


def until(check: Any, timeout: float, what: str) -> float:
    """Wait for `check()` to hold; returns the seconds it took."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.02)
    return time.monotonic() - began
