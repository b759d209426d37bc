"""The board, the ticket page and the charts in a real Chromium (Debian's `chromium`, driven by Playwright), after the
reference story was played through a real Baton against the stand-in GitHub: at a phone's width and a laptop's,
they render with no sideways scrolling, every card shows its three rails, nothing loads from another origin,
and axe-core finds no serious or critical accessibility violation. Screenshots are kept in test-output/screenshots/
(BATON_TEST_OUTPUT names another folder), which the run prints at its end.
Signing in with GitHub goes through the stand-in's pages, and shows the person only what they may read.

Without /usr/bin/chromium these tests skip and say so; BATON_REQUIRE_BROWSER=1 (as in CI) makes them fail."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from baton.demo.stage import Stage
from github_standin.contract import corpus_root
from support.board_scene import OTHER, SECRET, TASK, TOKEN, VAULT, played
from support.corpus import missing

CHROMIUM = Path("/usr/bin/chromium")
AXE = corpus_root() / "axe-core/axe.min.js"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
SIZES = {"phone": (390, 844), "laptop": (1280, 800)}
# Where the run keeps what it shows a person: the screenshots, one folder for the whole run.
OUTPUT = Path(os.environ.get("BATON_TEST_OUTPUT") or Path(__file__).resolve().parents[2] / "test-output")
SHOTS = OUTPUT / "screenshots"


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
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


@pytest.fixture(scope="module")
def stage(browser: Any, tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_file: Path) -> Iterator[Stage]:
    with played(tmp_path_factory.mktemp("board-browser"), migrated_sqlite_file) as opened:
        yield opened


def _violations(page: Any) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run()).violations.map(v => [v.id, v.impact, v.nodes.length])")
    return [f"{rule} ({impact}, {nodes} nodes)" for rule, impact, nodes in found if impact in ("serious", "critical")]


def _tab_through(page: Any, presses: int = 60) -> list[str]:
    """What Tab focuses, from the top of the page on, as `tag:id-or-text`; each must show a focus ring."""
    page.evaluate("document.activeElement.blur()")
    reached: list[str] = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        found = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
            return [e.tagName.toLowerCase(), e.id || e.textContent.trim(), s.outlineStyle, s.outlineWidth]; }""")
        tag, name, style, width = found
        if tag == "body" or (reached and reached[0] == f"{tag}:{name}"):
            break  # past the last, or round to the first again
        assert style == "solid" and width != "0px", f"{tag}:{name} shows no focus ring"
        reached.append(f"{tag}:{name}")
    return reached


@pytest.mark.parametrize("size", SIZES)
def test_the_board_and_a_ticket_in_chromium(
    browser: Any, stage: Stage, size: str, shots: Path, record_property: Any
) -> None:
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
            page.screenshot(path=str(shots / f"{name}-{size}.png"), full_page=True)
            record_property("screenshot", str(shots / f"{name}-{size}.png"))
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
        assert len(rails) == 3 and all(all(words) for words in rails), rails  # octo/vault#1's too
        assert page.get_by_role("heading", name="Accepted (1)").is_visible()

        # the keyboard reaches every control and link in the page's order, and shows where focus is
        reached = _tab_through(page)
        assert reached[0] == "a:Baton"
        controls = ["input:f-repo", "input:f-runner", "select:f-state", "input:f-stale", "button:Show"]
        assert [r for r in reached if r in controls] == controls
        cards = page.evaluate("[...document.querySelectorAll('li.card h3 a')].map(a => 'a:' + a.textContent)")
        assert cards and [r for r in reached if r in cards] == cards
        assert reached.index("button:Show") < reached.index(cards[0])

        # the filters are a form the browser sends as a GET
        page.get_by_label("State").select_option("claimed")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url(f"{stage.baton_url}/?repo=&runner=&state=claimed")
        assert page.locator("li.card").count() == 1
    finally:
        context.close()
    # the runners' screenshots are the only things a page asked another origin for
    assert set(elsewhere) <= {"https://example.test/billing-390.png", "https://example.test/billing-1280.png"}
    for name in ("board", f"t-octo-shop-{TASK}", f"t-octo-shop-{OTHER}", "charts"):
        assert (shots / f"{name}-{size}.png").stat().st_size > 1000


def test_signing_in_with_github_in_chromium_shows_only_what_the_person_may_read(
    browser: Any, stage: Stage, shots: Path, record_property: Any
) -> None:
    with stage.hub.world.lock:
        stage.hub.world.web_login = "maria"  # who is signed in on the stand-in's pages
    context = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(f"{stage.baton_url}/t/octo/shop/{TASK}")
        assert page.title() == "Baton — sign in" and _violations(page) == []
        page.get_by_role("link", name="Sign in with GitHub").click()
        # to the stand-in's authorize page and back through Baton's callback, to the page asked for
        page.wait_for_url(f"{stage.baton_url}/t/octo/shop/{TASK}")
        assert page.get_by_text("Signed in as @maria").is_visible()
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["baton_session"]["httpOnly"] and cookies["baton_session"]["sameSite"] == "Lax"
        assert "baton_sign_in" not in cookies  # the sign-in's state is used up

        page.goto(f"{stage.baton_url}/?state=all")
        shown = page.evaluate("[...document.querySelectorAll('li.card')].map(c => c.dataset.ticket).sort()")
        assert shown == [f"octo/shop#{TASK}", f"octo/shop#{OTHER}"]
        page.screenshot(path=str(shots / "board-maria.png"), full_page=True)
        record_property("screenshot", str(shots / "board-maria.png"))
        assert _violations(page) == []
        # the page's own refresh asks for the same columns, and gets no more
        fragment = page.evaluate("async () => (await fetch('/board?state=all')).text()")
        assert "octo/vault" not in fragment and f"octo/shop#{OTHER}" in fragment
        answer = page.goto(f"{stage.baton_url}/t/{VAULT}/{SECRET}")
        assert answer is not None and answer.status == 404 and page.title() == "Baton — unknown ticket"
        page.goto(f"{stage.baton_url}/charts")
        counted = page.evaluate("""[...document.querySelectorAll('#t-to-delivery tr')].map(row =>
            Number(row.querySelectorAll('td')[1]?.textContent || 0)).reduce((a, b) => a + b, 0)""")
        assert counted == 2  # octo/shop#1's two deliveries; not octo/vault#1's

        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(f"{stage.baton_url}/")
        assert page.title() == "Baton — sign in"
        assert "baton_session" not in {c["name"] for c in context.cookies()}
    finally:
        context.close()


@pytest.mark.long
def test_the_board_follows_the_work_without_a_reload_under_its_own_policy(browser: Any, stage: Stage) -> None:
    """No policy bypass here: the page's own script, allowed by its nonce, brings a new ticket in and takes a
    withdrawn one out, and the browser reports no violation of the page's Content Security Policy. While nothing
    changes, its refreshes are answered 304 with no body: it sends the tag of the columns it shows."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script("""window.violations = [];
        document.addEventListener('securitypolicyviolation', e => window.violations.push(e.violatedDirective));""")
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    refreshes: list[tuple[int, str | None]] = []  # each refresh's status, and the If-None-Match it sent
    page.on("response", lambda answer: refreshes.append((answer.status, answer.request.headers.get("if-none-match")))
            if urlparse(answer.url).path == "/board" else None)  # fmt: skip
    try:
        page.goto(f"{stage.baton_url}/")
        page.get_by_label("Read token").fill(TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{stage.baton_url}/")
        page.evaluate("window.loadedOnce = true")  # gone if the page were loaded again
        deadline = time.monotonic() + 30
        while not refreshes:
            assert time.monotonic() < deadline, "the page never refreshed"
            page.wait_for_timeout(100)
        assert refreshes[0][0] == 304 and refreshes[0][1]  # its first: nothing changed since the page was served

        vera = stage.hub.person("vera")
        number = vera.open_issue(VAULT, "Renew the vault's certificate")
        ref = f"{VAULT}#{number}"
        page.wait_for_selector(f'#col-open ~ ol li.card[data-ticket="{ref}"]', timeout=30_000)
        assert page.get_by_role("heading", name="Open (1)").is_visible()
        vera.comment(VAULT, number, "/withdraw Not needed after all.")
        page.wait_for_selector(f'li.card[data-ticket="{ref}"]', state="detached", timeout=30_000)
        assert page.get_by_role("heading", name="Open (0)").is_visible()
        statuses = [status for status, _ in refreshes]
        assert set(statuses) == {200, 304} and statuses.count(200) >= 2  # the changes came with their columns
        assert all(sent for _, sent in refreshes)

        assert page.evaluate("window.loadedOnce === true")
        assert page.evaluate("window.violations") == []
        assert not [line for line in console if "Content Security Policy" in line], console
    finally:
        context.close()
