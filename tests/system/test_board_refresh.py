"""The board's refresh is conditional: `/board` tags the columns it answers with (`ETag`), and answers `304 Not
Modified`, with no body, to the page's script sending that tag (`If-None-Match`) while nothing it shows has
changed; a new ticket, a state, the time a ticket has been in its state change the columns, and the answer is
200 with the new ones. A tag is the viewer's: one made for a view of other repositories never validates theirs.
After the reference story, through a real Baton against the stand-in GitHub (tests/support/board_scene.py);
the page's own script doing it in Chromium: tests/system/test_board_browser.py."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from baton.demo.stage import Stage
from support.board_scene import OTHER, TASK, VAULT, call, github_session, played, session


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_file: Path) -> Iterator[Stage]:
    with played(tmp_path_factory.mktemp("board-refresh"), migrated_sqlite_file) as opened:
        yield opened


def _asked(stage: Stage, cookie: str, path: str, tag: str | None = None) -> httpx.Response:
    return call(stage.baton_url, "GET", path, cookie, headers={"If-None-Match": tag} if tag else None)


def _changed(stage: Stage, cookie: str, path: str, tag: str) -> httpx.Response:
    """The first answer to the tag that is not 304, asked again until the change reaches the board."""
    deadline = time.monotonic() + 30
    while (answer := _asked(stage, cookie, path, tag)).status_code == 304:
        assert answer.content == b""
        assert time.monotonic() < deadline, "the change never reached the board"
        time.sleep(0.05)
    return answer


def test_an_unchanged_view_is_304_and_a_change_is_200_with_the_new_columns(stage: Stage) -> None:
    operator = session(stage.baton_url)
    first = _asked(stage, operator, "/board?state=all")
    tag = first.headers["etag"]
    assert first.status_code == 200 and re.fullmatch(r'"[0-9a-f]{32}"', tag) and f"octo/shop#{OTHER}" in first.text
    # the page carries the tag of the columns it was served with, so its first refresh is already a 304
    home = call(stage.baton_url, "GET", "/?state=all", operator)
    carried = re.search(r'<div id="board" [^>]*data-etag="([^"]+)"', home.text)
    assert carried is not None and html.unescape(carried[1]) == tag

    same = _asked(stage, operator, "/board?state=all", tag)
    assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == tag
    assert "content-length" not in same.headers or same.headers["content-length"] == "0"
    assert _asked(stage, operator, "/board?state=all", f'"other", W/{tag}').status_code == 304  # a list, weakly
    assert _asked(stage, operator, "/board?state=all", '"other"').status_code == 200
    assert _asked(stage, operator, "/board?state=claimed", tag).status_code == 200  # another view, another tag

    # a new ticket
    vera = stage.hub.person("vera")
    number = vera.open_issue(VAULT, "Renew the vault's certificate")
    opened = _changed(stage, operator, "/board?state=all", tag)
    assert opened.status_code == 200 and f"{VAULT}#{number}" in opened.text and opened.headers["etag"] != tag
    tag = opened.headers["etag"]
    assert _asked(stage, operator, "/board?state=all", tag).status_code == 304

    # a ticket's state
    vera.comment(VAULT, number, "/withdraw Not needed after all.")
    withdrawn = _changed(stage, operator, "/board?state=all", tag)
    assert withdrawn.status_code == 200 and withdrawn.headers["etag"] != tag
    assert re.search(rf'id="col-withdrawn".*data-ticket="{VAULT}#{number}"', withdrawn.text, re.DOTALL)
    tag = withdrawn.headers["etag"]

    # nothing stored changes, but two minutes pass: the withdrawn card's time in its state reads differently
    before = re.findall(r"<time [^>]*>([^<]+)</time>", withdrawn.text)
    assert _asked(stage, operator, "/board?state=all", tag).status_code == 304
    stage.app.state.board.clock.advance(timedelta(minutes=2))
    later = _asked(stage, operator, "/board?state=all", tag)
    assert later.status_code == 200 and later.headers["etag"] != tag
    after = re.findall(r"<time [^>]*>([^<]+)</time>", later.text)
    assert "under a minute" in before and "2 minutes" in after and len(after) == len(before)


def test_a_tag_never_validates_another_viewer_s_view(stage: Stage) -> None:
    maria, vera, operator = github_session(stage, "maria"), github_session(stage, "vera"), session(stage.baton_url)
    # @maria may not read octo/vault, @vera may: filtered to octo/shop, the two see the very same columns
    path = "/board?repo=octo/shop&state=all"
    hers, its = _asked(stage, maria, path), _asked(stage, vera, path)
    assert hers.status_code == its.status_code == 200 and hers.text == its.text and f"octo/shop#{TASK}" in hers.text
    assert hers.headers["etag"] != its.headers["etag"]
    # yet a tag made for one is never answered 304 for the other, nor for the read token, which sees everything
    assert _asked(stage, maria, path, its.headers["etag"]).status_code == 200
    assert _asked(stage, vera, path, hers.headers["etag"]).status_code == 200
    assert _asked(stage, operator, path, its.headers["etag"]).status_code == 200
    assert _asked(stage, maria, path, hers.headers["etag"]).status_code == 304
    assert _asked(stage, vera, path, its.headers["etag"]).status_code == 304
    # and the whole board: @vera's shows octo/vault, @maria's does not
    whole = _asked(stage, vera, "/board?state=all")
    assert VAULT in whole.text and _asked(stage, maria, "/board?state=all", whole.headers["etag"]).status_code == 200
    assert (
        _asked(stage, maria, "/board?state=all").status_code == 200
        and call(stage.baton_url, "GET", "/board", headers={"If-None-Match": whole.headers["etag"]}).status_code == 401
    )  # no session: no 304 either
