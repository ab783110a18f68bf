"""The engine's belief in the review, in Debian's chromium (Playwright 1.64.1), at 1280 and 390 px.

A whole game against Obscuro (fixed iterations, built-in evaluation: it pictures its set P at
every move), then the review. Expected values and their sources:
- the picture on the belief board: the reveal's pictures (`caligo.agents.belief_map`; checked
  against an independent replay of the engine's P in tests/web/test_api.py), summed over the
  chosen piece kinds, as each square's `data-count` over the board's `data-sample`;
- the ringed squares: python-chess's reading of the true position's FEN (the player's pieces
  of the chosen kind);
- |P| in words: the picture's size, written with thousands separators;
- leaks: no frame the page received before the end holds a word of a picture, the page asked
  for the reveal only after the frame that ended the game, and the server refused the reveal
  (HTTP 409) while the game ran;
- "no sideways scroll": `scrollingElement.scrollWidth <= innerWidth`, as in test_page.py.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import chess
import pytest

from caligo.fow.notation import read_pgn
from caligo.fow.position import move_to_uci
from tests.web.conftest import Server
from tests.web.helpers import holds_picture, replay_pgn
from tests.web.test_browser import (
    Player,
    check_nothing_before_end,
    check_reveal_after_end,
    check_sent,
    check_wire,
    record_events,
    record_frames,
    start_game,
)
from tests.web.test_page import check_coordinates, fits, open_page

pytestmark = pytest.mark.browser

ENGINE = "obscuro:budget=iters=20,eval=simple"
KINDS = "pnbrqk"


def belief_dom(page: Any) -> tuple[dict[str, int], list[str], str]:
    """The belief board: count per square (squares with a count), ringed squares, sample."""
    counts = page.eval_on_selector_all(
        "#board-belief .sq[data-count]",
        "els => Object.fromEntries(els.map(e => [e.dataset.square, Number(e.dataset.count)]))",
    )
    rings = page.eval_on_selector_all(
        "#board-belief .sq.truth", "els => els.map(e => e.dataset.square).sort()"
    )
    sample = page.get_attribute("#board-belief", "data-sample") or ""
    return {sq: n for sq, n in counts.items() if n}, rings, sample


def expected(picture: dict[str, Any] | None, fen: str, kind: str) -> tuple[dict, list, str]:
    """What the board must show for `kind` ("all" or a letter) at the position `fen`."""
    kinds = KINDS if kind == "all" else kind
    board = chess.Board(fen)
    player = chess.WHITE  # the test plays White: the engine's picture is of White's pieces
    rings = sorted(
        chess.square_name(sq)
        for sq, piece in board.piece_map().items()
        if piece.color == player and piece.symbol().lower() in kinds
    )
    counts: dict[str, int] = {}
    if picture is not None:
        for k in kinds:
            for sq, n in picture["counts"][k].items():
                counts[sq] = counts.get(sq, 0) + n
    return counts, rings, str(picture["sample"]) if picture else ""


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_review_shows_the_engine_belief(
    browser: Any, tmp_path: Path, artifacts: Path, size: str
) -> None:
    server = Server(tmp_path / "games.sqlite", agent=ENGINE)
    try:
        page = open_page(browser, size)
        frames = record_frames(page)
        events = record_events(page)
        start_game(page, server.url, "white", "none")
        gid = page.evaluate("live.id")
        player = Player(page, "white", random.Random(3 if size == "desktop" else 4), drag=False)
        state = player.play(until_ply=4)
        for path in ("", "/pgn", "/transcript/black"):  # nothing is revealed while it runs
            refused = page.request.get(f"{server.url}api/games/{gid}{path}")
            assert refused.status == 409 and not holds_picture(refused.text(), frame=False), path
        state = player.play()
        assert state["status"] == "over"
        page.wait_for_selector("#stepper:not([hidden])")
        # nothing of the pictures reached the page before the end, over the socket or HTTP
        assert check_nothing_before_end(events, gid) >= 2
        assert check_reveal_after_end(events, gid) >= 1
        pgn = page.request.get(f"{server.url}api/games/{gid}/pgn").text()
        positions = replay_pgn(pgn)
        moves = [move_to_uci(m) for m in read_pgn(pgn).moves]
        assert check_wire(frames, "white", positions, moves) >= 2
        assert check_sent(events) == len([m for m in state["moves"] if m["uci"]])

        reveal = page.request.get(f"{server.url}api/games/{gid}").json()
        fens = [reveal["initial"]["fen"]] + [p["fen"] for p in reveal["plies"]]
        pictures = [reveal["initial"]["beliefs"]] + [p["beliefs"] for p in reveal["plies"]]
        pictures = [about.get("black") for about in pictures]
        n = len(reveal["plies"])
        assert n >= 6 and sum(p is not None for p in pictures) >= n - 2
        page.click("#after-review")
        page.wait_for_selector("#belief-fig:not([hidden]) #board-belief .sq")
        fits(page, "review with the belief")
        page.keyboard.press("Home")
        # the position where the engine was least sure (largest P), and a few others
        widest = max(range(n + 1), key=lambda i: pictures[i]["size"] if pictures[i] else 0)
        plies = sorted({0, 1, 2, 3, widest, n - 1, n})
        at = 0
        for target in plies:
            while at < target:
                page.keyboard.press("ArrowRight")
                at += 1
            for kind in ("all", "p", "n", "k"):
                page.click(f"#belief-kinds button[data-kind={kind}]")
                assert page.get_attribute(
                    f"#belief-kinds button[data-kind={kind}]", "aria-pressed"
                ) == "true"
                assert belief_dom(page) == expected(pictures[at], fens[at], kind), (at, kind)
            picture = pictures[at]
            words = page.inner_text("#belief-size")
            if picture is not None:
                assert f"|P| = {picture['size']:,} possible position" in words, words
                if picture["sample"] < picture["size"]:
                    assert f"a uniform sample of {picture['sample']:,} of them" in words
            else:
                assert words == ""
            page.click("#belief-kinds button[data-kind=all]")
            if target == widest:
                fits(page, f"review at ply {at}")
                page.screenshot(path=str(artifacts / f"belief-{size}.png"), full_page=True)
                page.locator("#belief-fig").screenshot(
                    path=str(artifacts / f"belief-board-{size}.png")
                )
        check_coordinates(page, "board-belief", "white")
        page.click("#rv-flip")
        check_coordinates(page, "board-belief", "black")
        assert belief_dom(page) == expected(pictures[at], fens[at], "all")
        assert page.errors == []
        page.context.close()
    finally:
        server.stop()

