"""End to end in Debian's chromium (Playwright 1.64.1) against `caligo web serve` in a subprocess.

A player's whole game as White by clicking and as Black by dragging; every WebSocket frame the
page receives is recorded. Expected values and their sources:
- the true game: the PGN downloaded from the page, read back with `caligo.fow.notation.read_pgn`
  and replayed; what each side may see is `caligo.fow.observation.observe` of those positions,
  and its legal moves `caligo.fow.movegen.legal_moves` of them (the referee's move generator,
  itself checked against Stockfish perft in tests/fow);
- the reveal's true board: python-chess's reading of the FEN of the replayed position;
- clocks: the wall clock of this test.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import chess
import pytest

from caligo.fow.movegen import legal_moves
from caligo.fow.notation import read_pgn
from caligo.fow.observation import observe
from caligo.fow.position import BLACK, WHITE, move_to_uci, to_fen
from caligo.fow.transcript import Transcript
from caligo.fow.view import view_data
from tests.web.conftest import Server
from tests.web.helpers import check_state_keys, holds_picture, replay_pgn

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1280, "height": 860}


class Player:
    """Drives the page like a person: picks a move, clicks (or drags) it, checks what it sees."""

    def __init__(self, page: Any, color: str, rng: random.Random, drag: bool) -> None:
        self.page, self.color, self.rng, self.drag = page, color, rng, drag
        self.highlights: list[tuple[int, str, list[str]]] = []
        self.fog_checked = 0
        self.promotions = 0

    def wait_turn(self) -> dict[str, Any]:
        wait_until(
            self.page,
            "live && live.state && !live.pending && "
            "(live.state.your_turn || live.state.status === 'over')",
        )
        return self.page.evaluate("live.state")  # type: ignore[no-any-return]

    def choose(self, state: dict[str, Any]) -> str:
        legal = state["view"]["legal_moves"]
        pieces = state["view"]["pieces"]
        king = "k" if self.color == "white" else "K"
        kill = [m for m in legal if pieces.get(m[2:4]) == king]
        if kill:
            return kill[0]
        promos = [m for m in legal if len(m) == 5]
        if promos:
            return self.rng.choice(promos)
        caps = [m for m in legal if m[2:4] in pieces]
        if caps and self.rng.random() < 0.6:
            return self.rng.choice(caps)
        return self.rng.choice(legal)

    def center(self, square: str) -> tuple[float, float]:
        box = self.page.locator(f"#board [data-square={square}]").bounding_box()
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    def dom(self, selector: str) -> list[str]:
        return self.page.eval_on_selector_all(  # type: ignore[no-any-return]
            selector, "els => els.map(e => e.dataset.square).sort()"
        )

    def move(self, state: dict[str, Any], uci: str) -> None:
        frm, to = uci[0:2], uci[2:4]
        fog = self.dom("#board .sq.fog")
        assert fog == sorted(state["view"]["fog"])  # the board draws the frame's fog exactly
        assert self.dom("#board .sq.fog.last") == []  # a fogged square is never tinted as seen
        hint = state["view"]["hints"]["own_last_move"]
        fogged_last = sorted({hint[0:2], hint[2:4]} & set(fog)) if hint else []
        assert self.dom("#board .sq.last-fog") == fogged_last
        self.fog_checked += 1
        if self.drag:
            x, y = self.center(frm)
            self.page.mouse.move(x, y)
            self.page.mouse.down()
            self.page.mouse.move(x + 8, y + 5, steps=2)
        else:
            self.page.click(f"#board [data-square={frm}]")
        dests = self.dom("#board .sq.dest")
        self.highlights.append((state["ply"], frm, dests))
        if self.drag:
            tx, ty = self.center(to)
            self.page.mouse.move(tx, ty, steps=6)
            assert self.dom("#board .sq.dragging") == [frm]
            self.page.mouse.up()
        else:
            self.page.click(f"#board [data-square={to}]")
        if len(uci) == 5:
            self.page.wait_for_selector("#promotion:not([hidden])")
            self.page.click(f"#promotion button[data-piece={uci[4]}]")
            self.promotions += 1

    def screenshot(self, state: dict[str, Any], path: Path) -> None:
        """The board with a piece selected (its legal destinations shown)."""
        square = self.choose(state)[0:2]
        self.page.click(f"#board [data-square={square}]")
        self.page.screenshot(path=str(path))
        self.page.click(f"#board [data-square={square}]")

    def play(self, until_ply: int | None = None) -> dict[str, Any]:
        while True:
            state = self.wait_turn()
            if state["status"] == "over" or (until_ply is not None and state["ply"] >= until_ply):
                return state
            uci = self.choose(state)
            self.move(state, uci)


def wait_until(page: Any, expression: str, timeout_s: float = 30.0) -> Any:
    """Poll `expression` in the page until it is truthy, and return it.

    Not Playwright's `wait_for_function`: it evaluates its predicate with `eval`, which the
    page's Content-Security-Policy forbids (no 'unsafe-eval'); `evaluate` goes through the
    DevTools protocol, which a page's CSP does not govern. So every browser test runs under
    the real policy.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        assert time.monotonic() < deadline, f"not true after {timeout_s:g} s: {expression}"
        time.sleep(0.05)


def record_frames(page: Any) -> list[str]:
    frames: list[str] = []

    def on_socket(ws: Any) -> None:
        ws.on("framereceived", lambda payload: frames.append(payload))

    page.on("websocket", on_socket)
    return frames


def record_events(page: Any) -> list[tuple[str, Any]]:
    """Everything the page exchanges, in order: ("recv", frame), ("sent", frame), ("get", url),
    ("resp", (url, method, status, body)) for the answers of the API (the body read at once:
    Chromium forgets it when the page navigates)."""
    events: list[tuple[str, Any]] = []

    def on_socket(ws: Any) -> None:
        ws.on("framereceived", lambda payload: events.append(("recv", payload)))
        ws.on("framesent", lambda payload: events.append(("sent", payload)))

    def on_response(response: Any) -> None:
        if "/api/" in response.url:
            body = response.body().decode("utf-8", "replace")
            events.append(("resp", (response.url, response.request.method, response.status, body)))

    page.on("websocket", on_socket)
    page.on("request", lambda request: events.append(("get", request.url)))
    page.on("response", on_response)
    return events


def check_nothing_before_end(events: list[tuple[str, Any]], gid: str) -> int:
    """No frame and no API answer the page received before the frame that ended the game holds
    anything of the engine's belief pictures, and any reveal it got then was refused (409);
    return how many frames and answers were checked."""
    checked = 0
    for kind, payload in events:
        if kind == "recv":
            if json.loads(payload).get("status") == "over":
                return checked
            assert not holds_picture(payload), payload[:200]
            checked += 1
        elif kind == "resp":
            url, method, status, body = payload
            assert not holds_picture(body, frame=False), (url, body[:200])
            if f"/api/games/{gid}" in url and method == "GET":
                assert status == 409, url
            checked += 1
    raise AssertionError("no frame ended the game")


def check_reveal_after_end(events: list[tuple[str, Any]], gid: str) -> int:
    """The page asks for the true game (the reveal, the PGN) only after a frame said the game
    is over; return how many such requests it made."""
    over = False
    asked = 0
    for kind, payload in events:
        if kind == "recv" and json.loads(payload).get("status") == "over":
            over = True
        if kind == "get" and f"/api/games/{gid}" in payload:
            assert over, payload
            asked += 1
    return asked


def check_sent(events: list[tuple[str, Any]]) -> int:
    """Every frame the page sends is a plain request; a move is sent only on the player's turn,
    for the ply of the last frame received (a premove leaves the page as nothing else); return
    how many moves were sent."""
    last: dict[str, Any] | None = None
    moves = 0
    for kind, payload in events:
        if kind == "recv":
            frame = json.loads(payload)
            if frame["type"] == "state":
                last = frame
        elif kind == "sent":
            msg = json.loads(payload)
            assert msg["type"] in ("move", "sync", "resign", "abort"), msg
            if msg["type"] == "move":
                assert set(msg) == {"type", "uci", "ply"}, msg
                assert last is not None and last["your_turn"] and last["status"] == "playing"
                assert msg["ply"] == last["ply"] and msg["uci"] in last["view"]["legal_moves"]
                moves += 1
            else:
                assert set(msg) == {"type"}, msg
    return moves


def new_page(browser: Any) -> Any:
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def start_game(page: Any, url: str, color: str, tc: str) -> None:
    page.goto(url)
    page.wait_for_selector("#tc-choices button")
    page.click(f"#color-choices [data-color={color}]")
    page.click(f"#tc-choices [data-tc='{tc}']")
    if page.is_visible("#strength-field"):  # not offered against a random mover
        page.click("#strength-choices [data-strength='mt=0.2']")
    page.click("#start")
    page.wait_for_selector("#board .sq[data-piece]")


def clock_seconds(text: str) -> float:
    m = re.match(r"^(\d+):(\d+(?:\.\d)?)$", text.strip())
    assert m, text
    return int(m.group(1)) * 60 + float(m.group(2))


def dom_pieces(page: Any, board: str) -> dict[str, str]:
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        f"#{board} .sq[data-piece]",
        "els => Object.fromEntries(els.map(e => [e.dataset.square, e.dataset.piece]))",
    )


def chess_pieces(fen: str) -> dict[str, str]:
    board = chess.Board(fen)
    return {
        chess.square_name(sq): ("w" if p.color else "b") + p.symbol().upper()
        for sq, p in board.piece_map().items()
    }


def check_wire(frames: list[str], color: str, positions: list[Any], moves: list[str]) -> int:
    """Every frame before the end: only whitelisted keys, exactly the seat's true observation,
    its own moves only, no FEN of the true position. Return how many frames were checked."""
    side = WHITE if color == "white" else BLACK
    boards = {to_fen(p).split()[0] for p in positions}
    checked = 0
    for text in frames:
        frame = json.loads(text)
        assert frame["type"] in ("state", "error"), frame
        if frame["type"] != "state":
            continue
        if frame["status"] == "over":
            break
        check_state_keys(frame)
        ply = frame["ply"]
        truth = view_data(observe(positions[ply], side))
        assert frame["view"]["pieces"] == truth["pieces"], ply
        assert frame["view"]["fog"] == truth["fog"], ply
        for entry in frame["moves"]:
            own = (entry["ply"] % 2 == 1) == (side == WHITE)
            assert entry["uci"] == (moves[entry["ply"] - 1] if own else None)
        assert not any(board in text for board in boards)
        assert not holds_picture(text)  # nothing of the engine's belief
        checked += 1
    return checked


def check_end_board(
    page: Any, state: dict[str, Any], positions: list[Any], moves: list[str], color: str
) -> None:
    """The end screen: the whole true board (python-chess's reading of the replayed FEN), the
    king's capture marked on its from/to squares, a readable message; then the moves stepped
    with the arrow keys on the same page."""
    n = len(moves)
    assert dom_pieces(page, "board") == chess_pieces(to_fen(positions[n]))
    assert page.eval_on_selector_all("#board .sq.fog", "els => els.length") == 0
    end = state["end"]
    text = page.inner_text("#result-text")
    if end["termination"] == "king capture":
        marked = [
            page.eval_on_selector_all(f"#board .sq.{cls}", "els => els.map(e => e.dataset.square)")
            for cls in ("capture-from", "capture-to")
        ]
        assert marked == [[moves[-1][0:2]], [moves[-1][2:4]]]
        loser = "black" if end["winner"] == "white" else "white"
        expected = (
            "Your king was captured"
            if loser == color
            else f"You captured {loser.capitalize()}'s king"
        )
        assert text.startswith(expected), text
    assert not re.search(r"\d ms\b", text) and "flagged" not in text
    page.click("#result-close")
    page.keyboard.press("ArrowLeft")
    assert dom_pieces(page, "board") == chess_pieces(to_fen(positions[n - 1]))
    page.click("#st-first")
    assert dom_pieces(page, "board") == chess_pieces(to_fen(positions[0]))
    page.keyboard.press("End")
    assert dom_pieces(page, "board") == chess_pieces(to_fen(positions[n]))
    page.click("#st-view")  # what the player saw at the end
    side = WHITE if color == "white" else BLACK
    fog = page.eval_on_selector_all("#board .sq.fog", "els => els.map(e => e.dataset.square)")
    assert sorted(fog) == sorted(view_data(observe(positions[n], side))["fog"])
    page.click("#st-view")


def check_highlights(player: Player, positions: list[Any]) -> None:
    """The destinations shown on select are the true legal moves of the selected piece."""
    for ply, frm, dests in player.highlights:
        true = {move_to_uci(m) for m in legal_moves(positions[ply])}
        assert dests == sorted({u[2:4] for u in true if u[0:2] == frm}), (ply, frm)


def review_and_download(page: Any, gid: str, positions: list[Any], shot: Path) -> str:
    """Step through the reveal with the keyboard, check all three boards, download the files."""
    page.wait_for_selector("#board-truth .sq[data-piece]")
    n = len(positions) - 1
    assert page.input_value("#rv-range") == str(n)
    page.keyboard.press("Home")
    assert page.inner_text("#rv-label").startswith("Start")
    steps = sorted({1, 2, 7, n // 2, n})
    ply = 0
    for target in steps:
        while ply < target:
            page.keyboard.press("ArrowRight")
            ply += 1
        assert page.input_value("#rv-range") == str(ply)
        assert dom_pieces(page, "board-truth") == chess_pieces(to_fen(positions[ply]))
        for color, board in ((WHITE, "board-white"), (BLACK, "board-black")):
            fog = page.eval_on_selector_all(
                f"#{board} .sq.fog", "els => els.map(e => e.dataset.square).sort()"
            )
            assert fog == sorted(view_data(observe(positions[ply], color))["fog"])
        if target == 7:
            page.screenshot(path=str(shot), full_page=True)
    page.keyboard.press("ArrowLeft")
    assert page.input_value("#rv-range") == str(n - 1)
    with page.expect_download() as download:
        page.click("#dl-pgn")
    pgn = Path(download.value.path()).read_text()
    for name, side in (("white", WHITE), ("black", BLACK)):
        with page.expect_download() as download:
            page.click(f"#dl-{name}")
        transcript = Transcript.from_json(Path(download.value.path()).read_text())
        assert [e.observation for e in transcript.entries] == [
            observe(p, side) for p in positions[1:]
        ]
    return pgn


@pytest.mark.parametrize(
    ("color", "drag", "tc"),
    [("white", False, "300+0"), ("black", True, "180+2")],
    ids=["white-click", "black-drag"],
)
def test_a_whole_game_in_the_browser(
    browser: Any, server: Server, artifacts: Path, color: str, drag: bool, tc: str
) -> None:
    page = new_page(browser)
    frames = record_frames(page)
    events = record_events(page)
    start_game(page, server.url, color, tc)
    gid = page.evaluate("live.id")
    player = Player(page, color, random.Random(17 if drag else 5), drag)
    state = player.play(until_ply=6)
    assert state["status"] == "playing"
    player.screenshot(state, artifacts / f"board-midgame-{color}.png")
    # the own clock runs while it is the player's move, the opponent's does not
    own0 = clock_seconds(page.inner_text("#clock-bottom"))
    opp0 = clock_seconds(page.inner_text("#clock-top"))
    time.sleep(1.2)
    own1 = clock_seconds(page.inner_text("#clock-bottom"))
    assert 0.8 <= own0 - own1 <= 2.5
    assert clock_seconds(page.inner_text("#clock-top")) == opp0
    assert "running" in page.get_attribute("#clock-bottom", "class")
    assert page.inner_text("#status") == "Your move"
    state = player.play()
    assert state["status"] == "over"
    page.wait_for_selector("#result:not([hidden])")
    title = page.inner_text("#result-title")
    end = state["end"]
    expected = (
        "Draw" if end["winner"] is None else "You won" if end["winner"] == color else "You lost"
    )
    assert title == expected
    page.wait_for_selector("#stepper:not([hidden])")  # the reveal arrived after the end
    page.screenshot(path=str(artifacts / f"result-{color}.png"))
    gid_pgn = page.request.get(f"{server.url}api/games/{gid}/pgn").text()
    positions = replay_pgn(gid_pgn)
    moves = [move_to_uci(m) for m in read_pgn(gid_pgn).moves]
    assert len(positions) - 1 == state["ply"]
    assert check_wire(frames, color, positions, moves) >= player.fog_checked
    assert check_reveal_after_end(events, gid) >= 1
    assert check_nothing_before_end(events, gid) >= player.fog_checked
    assert check_sent(events) == len([m for m in state["moves"] if m["uci"]])
    check_highlights(player, positions)
    assert len(player.highlights) >= 3
    check_end_board(page, state, positions, moves, color)
    page.click("#after-review")
    pgn = review_and_download(page, gid, positions, artifacts / f"reveal-{color}.png")
    parsed = read_pgn(pgn)
    assert parsed.headers["Variant"] == "Fog of War"
    assert [move_to_uci(m) for m in parsed.moves] == moves
    assert parsed.result == end["result"]
    page.goto(server.url + "#/games")
    page.wait_for_selector(f"#all-games tr[data-game='{gid}']")
    assert page.errors == []
    page.context.close()


def test_a_game_survives_a_server_restart(browser: Any, server: Server, artifacts: Path) -> None:
    page = new_page(browser)
    start_game(page, server.url, "white", "none")
    player = Player(page, "white", random.Random(23), drag=False)
    before = player.play(until_ply=8)
    assert before["status"] == "playing"
    server.stop(kill=True)  # no shutdown hook runs: only what each ply committed survives
    wait_until(page, "document.querySelector('#status').textContent.includes('reconnect')")
    # a move while disconnected: it used to stay on the board, "Caligo is thinking…"
    shown = dom_pieces(page, "board")
    player.move(before, player.choose(before))
    wait_until(page, "document.querySelector('#toast').textContent.includes('nothing was sent')")
    assert dom_pieces(page, "board") == shown  # the piece went back
    assert page.evaluate("live.pending") is False
    page.screenshot(path=str(artifacts / "move-while-disconnected.png"))
    server.start()  # the same port and database
    wait_until(
        page,
        f"live.state && live.state.ply === {before['ply']} && "
        "!document.querySelector('#status').textContent.includes('reconnect')",
    )
    resumed = page.evaluate("live.state")
    for key in ("ply", "view", "moves", "material", "your_turn"):
        assert resumed[key] == before[key], key
    page.screenshot(path=str(artifacts / "resumed-after-restart.png"))
    end = player.play()
    assert end["status"] == "over"
    gid = page.evaluate("live.id")
    reveal = page.request.get(f"{server.url}api/games/{gid}").json()
    assert len(reveal["plies"]) == end["ply"]
    assert page.errors == []
    page.context.close()


def test_the_lobby_offers_every_game_still_running(
        browser: Any, server: Server, artifacts: Path) -> None:
    """The lobby remembered only the last game started, below the fold: an earlier game that
    still ran could not be found again. Now each running game has its button above Play,
    newest first, and one that ended is forgotten."""
    page = new_page(browser)
    start_game(page, server.url, "white", "none")
    first = page.evaluate("live.id")
    start_game(page, server.url, "black", "none")
    wait_until(page, f"live && live.id !== '{first}'")
    page.goto(server.url)
    wait_until(page, "document.querySelectorAll('#resume button').length === 2")
    labels = page.eval_on_selector_all("#resume button", "els => els.map(e => e.textContent)")
    assert "as Black against" in labels[0] and "as White against" in labels[1], labels
    assert page.locator("#resume").bounding_box()["y"] < page.locator("#start").bounding_box()["y"]
    page.screenshot(path=str(artifacts / "lobby-running-games.png"))
    page.click("#resume button >> nth=1")
    wait_until(page, f"live && live.id === '{first}' && live.state && live.state.your_turn")
    page.click("#resign")
    page.click("#resign")  # a second click confirms
    wait_until(page, "live.state.status === 'over'")
    page.goto(server.url)
    wait_until(page, "document.querySelectorAll('#resume button').length === 1")
    assert "as Black against" in page.text_content("#resume button")
    assert page.errors == []
    page.context.close()


def test_bad_input_on_the_real_server(server: Server) -> None:
    """uvicorn's own limit (64 KiB) closes the socket with 1009; smaller junk gets an error
    frame; neither changes the game, and the server goes on serving."""
    import httpx2
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    r = httpx2.post(server.url + "api/games", json={"color": "white", "tc": "none"})
    game = r.json()
    base = server.url.replace("http://", "ws://") + f"ws/games/{game['game']}"
    with connect(f"{base}?seat={game['seat']}") as ws:
        first = json.loads(ws.recv(timeout=10))
        ws.send(json.dumps({"type": "move", "uci": "e2e4", "junk": "x" * 10_000}))
        assert json.loads(ws.recv(timeout=10))["code"] == "too_large"
        ws.send("x" * 200_000)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(base) as ws:  # no token
        assert json.loads(ws.recv(timeout=10))["code"] == "forbidden"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    with connect(f"{base}?seat={game['seat']}") as ws:
        again = json.loads(ws.recv(timeout=10))
        assert again["ply"] == first["ply"] == 0 and again["view"] == first["view"]
        ws.send(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
        assert json.loads(ws.recv(timeout=10))["ply"] == 1
    assert httpx2.get(server.url + "api/info").status_code == 200
