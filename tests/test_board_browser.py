"""The board, the ticket page and the charts in a real Chromium (Debian's `chromium`, driven by Playwright), after the
reference story was played through a real Baton against the stand-in GitHub: at a phone's width and a laptop's,
they render with no sideways scrolling, every card shows its three rails, nothing loads from another origin,
and axe-core finds no serious or critical accessibility violation. Screenshots are kept in the test's folder.

Without /usr/bin/chromium these tests skip and say so; BATON_REQUIRE_BROWSER=1 (as in CI) makes them fail."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from baton.demo.stage import Stage
from board_scene import OTHER, TASK, TOKEN, played
from corpus import missing

CHROMIUM = Path("/usr/bin/chromium")
AXE = Path(__file__).parent / "node_modules/axe-core/axe.min.js"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
SIZES = {"phone": (390, 844), "laptop": (1280, 800)}


def _no_browser(reason: str) -> None:
    if os.environ.get("BATON_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (BATON_REQUIRE_BROWSER=1 makes the browser tests mandatory)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _no_browser(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    if not AXE.exists():
        missing("axe-core is not installed: npm ci --prefix tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def stage(browser: Any, tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_file: Path) -> Iterator[Stage]:
    with played(tmp_path_factory.mktemp("board-browser"), migrated_sqlite_file) as opened:
        yield opened


def _violations(page: Any) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run()).violations.map(v => [v.id, v.impact, v.nodes.length])")
    return [f"{rule} ({impact}, {nodes} nodes)" for rule, impact, nodes in found if impact in ("serious", "critical")]


@pytest.mark.parametrize("size", SIZES)
def test_the_board_and_a_ticket_in_chromium(browser: Any, stage: Stage, size: str, tmp_path: Path) -> None:
    width, height = SIZES[size]
    # axe is injected as a script of the test's own, which the pages' policy would otherwise refuse
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    elsewhere: list[str] = []

    def route(call: Any) -> None:
        if urlparse(call.request.url).netloc == urlparse(stage.baton_url).netloc:
            call.continue_()
        else:
            elsewhere.append(call.request.url)
            call.abort()

    context.route("**/*", route)
    page = context.new_page()
    try:
        page.goto(f"{stage.baton_url}/")
        assert page.title() == "Baton — sign in"
        page.get_by_label("Read token").fill(TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{stage.baton_url}/")
        assert page.title() == "Baton — board"

        for path in ("/", f"/t/octo/shop/{TASK}", f"/t/octo/shop/{OTHER}", "/charts"):
            page.goto(f"{stage.baton_url}{path}")
            # the charts' tables are folded: open, so they are measured and checked too
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            name = path.strip("/").replace("/", "-") or "board"
            page.screenshot(path=str(tmp_path / f"{name}-{size}.png"), full_page=True)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (
                f"{path} scrolls sideways"
            )
            assert _violations(page) == [], path

        # three pictures, each an image with a name, as far as the browser's accessibility tree says
        page.goto(f"{stage.baton_url}/charts")
        assert page.get_by_role("img", name="Tasks accepted per week").is_visible()
        assert page.get_by_role("img").count() == 3
        sizes = page.evaluate("[...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().right)")
        assert len(sizes) == 3 and all(right <= width for right in sizes), sizes

        page.goto(f"{stage.baton_url}/")
        rails = page.evaluate("""() => [...document.querySelectorAll('li.card')].map(card =>
            ['work', 'repository', 'deployment'].map(r => card.querySelector(`dd[data-rail=${r}]`)?.innerText))""")
        assert len(rails) == 2 and all(all(words) for words in rails), rails
        assert page.get_by_role("heading", name="Accepted (1)").is_visible()

        # the keyboard reaches the board's links, and focus is visible there
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Baton"
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline == "solid"

        # the filters are a form the browser sends as a GET
        page.get_by_label("State").select_option("claimed")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url(f"{stage.baton_url}/?repo=&runner=&state=claimed")
        assert page.locator("li.card").count() == 1
    finally:
        context.close()
    # the runners' screenshots are the only things a page asked another origin for
    assert set(elsewhere) <= {"https://example.test/billing-390.png", "https://example.test/billing-1280.png"}
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        f"{n}-{size}.png" for n in ("board", f"t-octo-shop-{TASK}", f"t-octo-shop-{OTHER}", "charts"))  # fmt: skip
