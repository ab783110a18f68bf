"""The player's page at desktop and phone widths, and the habits of chess.com and lichess.

Playwright 1.64.1 drives Debian's chromium against `caligo web serve` in a subprocess, as in
test_browser.py. Expected values and their sources:
- "no sideways scroll": the document's scroll width against the window's width (the CSSOM's
  `scrollingElement.scrollWidth` and `innerWidth`); "in view": an element's bounding box
  against `innerWidth` and `innerHeight`;
- board coordinates: each square's own name (`data-square`, the square the board draws there,
  checked against the true position in test_browser.py) and where the square is on the screen
  (left column: its rank, bottom row: its file; a8 top left for White, h1 for Black);
- the engine's evaluation: the value the reveal stores for that ply, as (1 + value) / 2;
- moves the player meant: the UCI typed or clicked, read back from the frames the page sent and
  from the moves the server recorded.
The engine is tests/web/analysis_engine.py (random moves with an analysis shaped like
Obscuro's, never taking a king it sees, optionally slow), so a game lasts as long as a test
needs; the first-move test uses the random agent.
"""

from __future__ import annotations

import random
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import Server
from tests.web.test_browser import (
    Player,
    check_nothing_before_end,
    check_reveal_after_end,
    check_sent,
    record_events,
    start_game,
    wait_until,
)

pytestmark = pytest.mark.browser

ENGINE = Path(__file__).with_name("analysis_engine.py")
SIZES = {"desktop": (1280, 860), "phone": (390, 844), "small-phone": (360, 640)}
PLIES = {"desktop": 40, "phone": 40, "small-phone": 12}
"""Plies played before the checks of the end: a 40-ply game at 1280 and 390 px."""
BOARDS = ("board-truth", "board-belief", "board-white", "board-black")


def engine_spec(delay_ms: int = 0) -> str:
    return f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(ENGINE))} {delay_ms}"


def open_page(browser: Any, size: str) -> Any:
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def fits(page: Any, what: str) -> None:
    """Nothing sticks out sideways: the page cannot be scrolled horizontally."""
    scroll, width = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    assert scroll <= width, (what, scroll, width)


def in_view(page: Any, selector: str) -> None:
    box = page.locator(selector).bounding_box()
    width, height = page.evaluate("[innerWidth, innerHeight]")
    assert box is not None, selector
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box, width)
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, (selector, box, height)


def check_coordinates(page: Any, board: str, orientation: str) -> None:
    """The left column names its ranks and the bottom row its files, on every square."""
    cells = page.eval_on_selector_all(
        f"#{board} .sq",
        """els => els.map(e => {
            const r = e.getBoundingClientRect();
            return [e.dataset.square, r.left, r.top, e.querySelector('.coord.rank').textContent,
                    e.querySelector('.coord.file').textContent];
        })""",
    )
    assert len(cells) == 64
    left = min(c[1] for c in cells)
    bottom = max(c[2] for c in cells)
    top_left = min(cells, key=lambda c: (round(c[2]), round(c[1])))[0]
    assert top_left == ("a8" if orientation == "white" else "h1"), (board, top_left)
    for name, x, y, rank, file in cells:
        assert rank == (name[1] if abs(x - left) < 1 else ""), (board, name, rank)
        assert file == (name[0] if abs(y - bottom) < 1 else ""), (board, name, file)


class Mover(Player):
    """Plays random moves that keep its own king at home and never take a king: with an engine
    that spares kings, the game lasts as long as the test needs."""

    def choose(self, state: dict[str, Any]) -> str:
        pieces = state["view"]["pieces"]
        own_king = "K" if self.color == "white" else "k"
        legal = state["view"]["legal_moves"]
        quiet = [
            m
            for m in legal
            if pieces.get(m[0:2]) != own_king and pieces.get(m[2:4]) not in ("K", "k")
        ]
        return self.rng.choice(quiet or legal)


@pytest.mark.parametrize("size", list(SIZES))
def test_pages_fit_and_both_clocks_stay_in_view(
    browser: Any, tmp_path: Path, artifacts: Path, size: str
) -> None:
    server = Server(tmp_path / "games.sqlite", agent=engine_spec())
    try:
        page = open_page(browser, size)
        events = record_events(page)
        page.goto(server.url)
        page.wait_for_selector("#tc-choices button")
        fits(page, "lobby")
        page.screenshot(path=str(artifacts / f"lobby-{size}.png"), full_page=True)
        start_game(page, server.url, "white", "180+2")
        gid = page.evaluate("live.id")
        player = Mover(page, "white", random.Random(7), drag=False)
        while True:
            state = player.wait_turn()
            assert state["status"] == "playing", state["end"]
            in_view(page, "#clock-top")
            in_view(page, "#clock-bottom")
            fits(page, f"game at ply {state['ply']}")
            if state["ply"] >= PLIES[size]:
                break
            player.move(state, player.choose(state))
        page.screenshot(path=str(artifacts / f"game-{size}.png"))
        page.click("#flip")  # during play: the board and the player bars turn round
        check_coordinates(page, "board", "black")
        assert page.get_attribute("#clock-bottom", "data-color") == "black"
        in_view(page, "#clock-top")
        in_view(page, "#clock-bottom")
        page.click("#flip")
        check_coordinates(page, "board", "white")
        page.click("#resign")
        page.click("#resign")
        page.wait_for_selector("#result:not([hidden])")
        page.wait_for_selector("#stepper:not([hidden])")
        assert page.inner_text("#result-title") == "You lost"
        assert page.inner_text("#result-text") == "You resigned"
        fits(page, "end")
        page.screenshot(path=str(artifacts / f"end-{size}.png"))
        page.click("#result-close")
        page.keyboard.press("ArrowLeft")  # the moves step on the same page
        assert page.evaluate("live.cursor") == state["ply"] - 1
        fits(page, "end, stepping")
        assert check_reveal_after_end(events, gid) >= 1
        assert check_nothing_before_end(events, gid) >= state["ply"] // 2  # no belief picture
        assert check_sent(events) == state["ply"] // 2

        page.click("#after-review")
        page.wait_for_selector("#board-truth .sq[data-piece]")
        assert page.is_visible("#board-belief")  # the engine's pictures of its belief
        fits(page, "review")
        check_analysis(page, server, gid)
        page.click("#rv-diag details summary")
        fits(page, "review with the details open")
        page.screenshot(path=str(artifacts / f"review-{size}.png"), full_page=True)
        for board in BOARDS:
            check_coordinates(page, board, "white")
        page.click("#rv-flip")
        for board in BOARDS:  # right after Flip, on every square (issue: old labels stayed)
            check_coordinates(page, board, "black")
        page.keyboard.press("ArrowLeft")
        for board in BOARDS:
            check_coordinates(page, board, "black")
        page.click("#rv-flip")
        for board in BOARDS:
            check_coordinates(page, board, "white")

        page.goto(server.url + "#/games")
        page.wait_for_selector(f"#all-games tr[data-game='{gid}']")
        fits(page, "finished games")
        page.goto(server.url)
        page.wait_for_selector(f"#lobby-games tr[data-game='{gid}']")
        fits(page, "lobby with a finished game")
        assert page.errors == []
        page.context.close()
    finally:
        server.stop()


def check_analysis(page: Any, server: Server, gid: str) -> None:
    """The engine's last move in words: its evaluation for a named side, its top moves as bars,
    the belief and tree sizes and its think time; the raw keys only behind "Details"."""
    reveal = page.request.get(f"{server.url}api/games/{gid}").json()
    last = reveal["plies"][-1]
    assert last["mover"] == "black" and last["engine"] is not None
    page.keyboard.press("End")
    value = last["engine"]["value"]
    percent = round(max(0.0, min(1.0, (1 + value) / 2)) * 100)
    assert page.inner_text("#rv-diag .eval-text") == f"Caligo (Black): {percent}% to win"
    facts = page.inner_text("#rv-diag .facts")
    assert re.fullmatch(
        r"Caligo considered [\d,]+ possible positions? of the board it could not see, searched "
        r"[\d,]+ positions of the game tree and thought for [\d.]+ s\.",
        facts,
    ), facts
    rows = page.eval_on_selector_all(
        "#rv-diag .policy .prow", "els => els.map(e => e.getAttribute('title'))"
    )
    assert rows == [uci for uci, _, _ in last["engine"]["policy"]]
    assert not page.is_visible("#rv-diag dl.info")  # behind the toggle
    assert "t_half" not in page.inner_text("#rv-diag")


def test_premove_and_keyboard_entry_play_the_intended_move(browser: Any, tmp_path: Path) -> None:
    """Keyboard entry in UCI and SAN; a premove queued during the engine's turn is played on
    the player's turn, a cancelled one is not, an illegal one is dropped; nothing leaves the
    page but ordinary moves on the player's own turns."""
    server = Server(tmp_path / "games.sqlite", agent=engine_spec(delay_ms=1500))
    try:
        page = open_page(browser, "desktop")
        events = record_events(page)
        start_game(page, server.url, "white", "none")
        player = Mover(page, "white", random.Random(1), drag=False)
        state = player.wait_turn()
        page.fill("#move-input", "e2e4")  # UCI
        page.press("#move-input", "Enter")
        wait_until(page, "live.state.ply === 1")  # the engine thinks for 1.5 s
        page.click("#board [data-square=g1]")
        dests = page.eval_on_selector_all(
            "#board .sq.dest.pre-dest", "els => els.map(e => e.dataset.square).sort()"
        )
        assert dests == ["e2", "f3", "h3"]  # the knight's geometry (e2 was emptied by e4)
        page.click("#board [data-square=f3]")
        assert page.evaluate("live.premove") == "g1f3"
        premoved = page.eval_on_selector_all(
            "#board .sq.premove", "els => els.map(e => e.dataset.square).sort()"
        )
        assert premoved == ["f3", "g1"]
        assert check_sent(events) == 1  # nothing was sent for the premove
        wait_until(page, "live.state.ply >= 3")  # played as soon as the turn came
        state = player.wait_turn()
        assert [m["uci"] for m in state["moves"]][:3] == ["e2e4", None, "g1f3"]
        page.fill("#move-input", "Nc3")  # SAN
        page.press("#move-input", "Enter")
        wait_until(page, "live.state.ply === 5")
        page.fill("#move-input", "d2d4")  # typed during the engine's turn: a premove
        page.press("#move-input", "Enter")
        assert page.evaluate("live.premove") == "d2d4"
        page.click("#board [data-square=d2]", button="right")  # cancelled
        assert page.evaluate("live.premove") is None
        wait_until(page, "live.state.ply === 6 && live.state.your_turn")
        assert page.evaluate("live.pending") is not True  # nothing was played for it
        page.fill("#move-input", "a3")
        page.press("#move-input", "Enter")
        wait_until(page, "live.state.ply === 7")
        page.fill("#move-input", "f3d2")  # onto its own pawn: illegal when the turn comes
        page.press("#move-input", "Enter")
        assert page.evaluate("live.premove") == "f3d2"
        wait_until(page, "live.state.ply === 8 && live.state.your_turn")
        assert page.evaluate("live.premove") is None and page.evaluate("live.pending") is not True
        assert "cancelled" in page.inner_text("#toast")
        page.fill("#move-input", "Nz9")  # nonsense is refused on the page
        page.press("#move-input", "Enter")
        assert "No such move" in page.inner_text("#toast")
        state = page.evaluate("live.state")
        own = [m["uci"] for m in state["moves"] if m["uci"]]
        assert own == ["e2e4", "g1f3", "b1c3", "a2a3"]
        assert check_sent(events) == 4
        assert page.errors == []
        page.context.close()
    finally:
        server.stop()


def test_no_first_move_aborts_and_rematch_swaps_colours(
    browser: Any, tmp_path: Path, artifacts: Path
) -> None:
    """Each side's clock starts after its own first move; a player who never makes one has
    the game aborted (not lost on time); Rematch starts the same game with colours swapped."""
    server = Server(tmp_path / "games.sqlite", first_move_seconds=1.5)
    try:
        page = open_page(browser, "phone")
        start_game(page, server.url, "white", "180+2")
        page.wait_for_selector("#status.turn")
        assert "first move" in page.inner_text("#status")
        assert page.inner_text("#clock-bottom") == page.inner_text("#clock-top") == "3:00"
        page.wait_for_selector("#result:not([hidden])", timeout=30_000)
        assert page.inner_text("#result-title") == "Game aborted"
        assert page.inner_text("#result-text") == "You did not make your first move in time"
        assert page.inner_text("#clock-bottom") == "3:00"  # the clock never ran
        page.screenshot(path=str(artifacts / "aborted-phone.png"))
        old = page.evaluate("live.id")
        opponent = page.evaluate("live.state.opponent")
        reveal = page.request.get(f"{server.url}api/games/{old}").json()
        assert (reveal["result"], reveal["termination"]) == ("*", "aborted")
        page.click("#result-rematch")
        wait_until(page, f"live && live.id !== '{old}' && live.state")
        state = page.evaluate("live.state")
        assert state["color"] == "black" and state["tc"] == "180+2"
        assert state["opponent"] == opponent
        assert page.get_attribute("#clock-bottom", "data-color") == "black"
        assert page.errors == []
        page.context.close()
    finally:
        server.stop()
