"""The page under its security policy, and what it tells a player the server refused.

Playwright 1.64.1 drives Debian's chromium against `caligo web serve` in a subprocess, as in
test_browser.py. Expected values and their sources:
- CSP: Chromium reports every blocked script, style, image or connection as a
  `securitypolicyviolation` event (CSP Level 3, section 5.3) and a console error; a whole game,
  its end screen, the review and the game list must raise none. That the policy is enforced at
  all is shown by an inline script and an inline style the test adds: both are blocked, and a
  page of another origin that frames the game gets nothing (`frame-ancestors 'none'`);
- refusals: the server's status codes (429, 503) and Retry-After, as tests/web/test_admission.py
  checks them; the page must say in words what happened and when to try again.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import Server
from tests.web.test_browser import Player, start_game

pytestmark = pytest.mark.browser

WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + e.sample);
});
"""


def open_page(browser: Any) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_init_script(WATCH)
    page = context.new_page()
    page.console_errors = []
    page.errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return page


def violations(page: Any) -> list[str]:
    return page.evaluate("window.__violations")  # type: ignore[no-any-return]


def test_the_page_runs_under_its_csp_without_a_violation(
    browser: Any, tmp_path: Path, artifacts: Path
) -> None:
    server = Server(tmp_path / "games.sqlite")
    try:
        page = open_page(browser)
        response = page.goto(server.url)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_selector("#tc-choices button")
        page.screenshot(path=str(artifacts / "csp-lobby.png"), full_page=True)
        start_game(page, server.url, "white", "180+2")
        player = Player(page, "white", random.Random(2), drag=False)
        state = player.play(until_ply=6)
        page.screenshot(path=str(artifacts / "csp-game.png"))
        state = player.play()
        assert state["status"] == "over"
        page.wait_for_selector("#result:not([hidden])")
        page.screenshot(path=str(artifacts / "csp-end.png"))
        page.click("#result-review")
        page.wait_for_selector("#board-truth .sq[data-piece]")
        page.keyboard.press("ArrowLeft")
        if page.is_visible("#rv-diag details summary"):
            page.click("#rv-diag details summary")
        page.screenshot(path=str(artifacts / "csp-review.png"), full_page=True)
        page.goto(server.url + "#/games")
        page.wait_for_selector("#all-games tr[data-game]")
        assert violations(page) == [] and page.console_errors == [] and page.errors == []

        # the policy is enforced: an inline script and an inline style are blocked
        page.evaluate("""() => {
            const s = document.createElement("script");
            s.textContent = "window.__inline = 1";
            document.head.append(s);
            document.body.setAttribute("style", "background: red");
        }""")
        assert page.evaluate("window.__inline") is None
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"
        blocked = violations(page)
        assert any(v.startswith("script-src") for v in blocked), blocked
        assert any(v.startswith("style-src") for v in blocked), blocked

        # a page of another origin cannot frame it (clickjacking)
        other = page.context.new_page()
        other.set_content(f'<iframe id="f" src="{server.url}"></iframe>')
        other.wait_for_timeout(1000)
        framed = other.frames[1]
        assert framed.evaluate("document.querySelector('#tc-choices')") is None
        page.context.close()
    finally:
        server.stop()


def lobby_error(page: Any, url: str) -> str:
    page.goto(url + "#/")
    page.wait_for_selector("#tc-choices button")
    page.click("#tc-choices [data-tc='none']")
    page.click("#start")
    page.wait_for_selector("#lobby-error:not([hidden])")
    return page.inner_text("#lobby-error")  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--games-per-minute", "1"),
         r"Could not start a game: You started too many games in a short time\. Try again in "
         r"(1 minute|[1-5]?\d seconds)\."),  # 60 s after the first game, minus the time since
        (("--games-per-minute", "0", "--games-per-client", "1"),
         r"Could not start a game: You already have 1 game running \(at most 1 at once\): "
         r"finish, resign or close one first\."),
        (("--games-per-minute", "0", "--max-live-games", "1"),
         r"Could not start a game: The server is full: it is running as many games as it can\. "
         r"Try again in 1 minute\."),
    ],
    ids=["rate", "per-client", "full"],
)
def test_the_lobby_says_why_the_server_refused_a_new_game(
    browser: Any, tmp_path: Path, artifacts: Path, options: tuple[str, ...], expected: str
) -> None:
    server = Server(tmp_path / "games.sqlite", options=options)
    try:
        first = open_page(browser)
        start_game(first, server.url, "white", "none")  # a game in use in one tab
        page = open_page(browser)
        text = lobby_error(page, server.url)
        assert re.fullmatch(expected, text), text
        assert page.evaluate("location.hash") == "#/"  # still in the lobby, nothing started
        page.screenshot(path=str(artifacts / f"lobby-refused-{options[1]}-{len(options)}.png"))
        assert first.errors == [] and page.errors == []
        first.context.close()
        page.context.close()
    finally:
        server.stop()
