"""Shared helpers of the web tests: random games, twin histories, frame checks, test agents."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from caligo.agents import registry
from caligo.agents.base import Clock, Decision
from caligo.agents.random_agent import RandomAgent
from caligo.fow.game import Game
from caligo.fow.notation import read_pgn
from caligo.fow.observation import observe
from caligo.fow.position import move_to_uci

STATE_KEYS = {
    "type",
    "game",
    "color",
    "ply",
    "status",
    "your_turn",
    "view",
    "moves",
    "material",
    "time_control",
    "clocks",
    "end",
    "opponent",
    "tc",
    "engine_thinking",
    "detail",
}
"""Every key a `state` frame may hold: a frame with any other key fails the leak checks."""
VIEW_KEYS = {
    "player",
    "side_to_move",
    "your_turn",
    "pieces",
    "fog",
    "legal_moves",
    "castling",
    "en_passant",
    "hints",
}
CLOCK_KEYS = {"white", "black", "running", "increment_ms", "first_move_ms"}
PICTURE_KEYS = ("belief_map", "belief_map_prev", "beliefs", "counts", "size_kind")
"""The JSON keys of the engine's belief pictures (`caligo.agents.belief_map`) and of the
reveal's field that carries them: none may appear in anything sent before the game ends."""


def truth_pictures(session: Any, mover: int) -> dict[str, Any]:
    """The most telling belief pictures an engine could send with its move: those of P = {the
    true position} (so they show every one of the opponent's pieces where it really is), under
    both keys, with the shape `caligo.agents.belief_map` writes."""
    from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, belief_map
    from caligo.fow.belief import BeliefSet

    picture = belief_map(BeliefSet.initial(mover, session.game.fen()))
    return {BELIEF_MAP: picture, BELIEF_MAP_PREV: picture}


def holds_picture(text: str, frame: bool = True) -> bool:
    """True if `text` holds a JSON key of a belief picture; for a `frame`, also the word
    "belief" at all (no frame of a running game talks about the engine's belief; an HTTP
    answer such as /api/info may describe the engine in those words)."""
    return (frame and "belief" in text) or any(f'"{key}"' in text for key in PICTURE_KEYS)


def random_game(seed: int, max_plies: int = 160) -> list[str]:
    """A random FoW game (UCI moves) that prefers captures, so pieces are lost on both sides."""
    rng = random.Random(seed)
    game = Game()
    out: list[str] = []
    while not game.is_over() and len(out) < max_plies:
        moves = game.legal_moves()
        pos = game.position
        captures = [m for m in moves if _captures(pos, m)]
        move = rng.choice(captures) if captures and rng.random() < 0.5 else rng.choice(moves)
        game.push(move)
        out.append(move_to_uci(move))
    return out


def replay_pgn(pgn: str) -> list[Any]:
    """True positions before the first ply and after every ply of a PGN, read back with
    `caligo.fow.notation.read_pgn` and replayed with `caligo.fow.game.Game`."""
    parsed = read_pgn(pgn)
    game = Game(parsed.start_fen)
    out = [game.position]
    for move in parsed.moves:
        game.push(move)
        out.append(game.position)
    return out


def _captures(pos: Any, move: int) -> bool:
    to = (move >> 6) & 63
    return any((int(pos[code]) >> to) & 1 for code in range(12))


def observations(moves: Sequence[str], color: int) -> list[Any]:
    """`color`'s observation after every ply of `moves`."""
    game = Game()
    out = []
    for uci in moves:
        game.push_uci(uci)
        out.append(observe(game.position, color))
    return out


def twin_history(moves: list[str], color: int) -> list[str] | None:
    """Another game with the same transcript for `color`: one opponent move swapped for another
    that `color` observes identically, the rest replayed; None if this game has no such twin."""
    mine = observations(moves, color)
    game = Game()
    for i, uci in enumerate(moves):
        mover = game.turn
        if mover != color:
            for alt in game.legal_moves():
                alt_uci = move_to_uci(alt)
                if alt_uci == uci:
                    continue
                twin = [*moves[:i], alt_uci, *moves[i + 1 :]]
                if _replays(twin) and observations(twin, color) == mine:
                    return twin
        game.push_uci(uci)
    return None


def _replays(moves: Sequence[str]) -> bool:
    game = Game()
    try:
        for uci in moves:
            game.push_uci(uci)
    except Exception:
        return False
    return True


def walk_keys(frame: Any, path: str = "") -> list[str]:
    """Every dict key path in a JSON value (for key whitelists)."""
    out = []
    if isinstance(frame, dict):
        for k, v in frame.items():
            out.append(f"{path}.{k}")
            out.extend(walk_keys(v, f"{path}.{k}"))
    elif isinstance(frame, list):
        for v in frame:
            out.extend(walk_keys(v, path + "[]"))
    return out


def check_state_keys(frame: Mapping[str, Any]) -> None:
    """Assert a `state` frame holds only the whitelisted keys (no engine diagnostics, no FEN)."""
    assert set(frame) <= STATE_KEYS, set(frame) - STATE_KEYS
    assert set(frame["view"]) <= VIEW_KEYS, set(frame["view"]) - VIEW_KEYS
    assert set(frame["view"]["hints"]) == {"own_last_move", "lost"}
    if frame["clocks"] is not None:
        assert set(frame["clocks"]) == CLOCK_KEYS
    assert set(frame["material"]) == {"captured", "lost", "balance"}
    for entry in frame["moves"]:
        assert set(entry) == {"ply", "uci", "san"}


# --- test agents (registered under test-* names) -------------------------------------------


class SleepyAgent(RandomAgent):
    """A random agent that thinks for `delay` seconds (to catch out-of-turn moves)."""

    def __init__(self, delay: float) -> None:
        super().__init__(seed=0)
        self.delay = delay

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        time.sleep(self.delay)
        return super().act(legal, clock)


class CrashingAgent(RandomAgent):
    """A random agent that raises on its `after`-th move."""

    def __init__(self, after: int) -> None:
        super().__init__(seed=0)
        self.after = after
        self.count = 0

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        self.count += 1
        if self.count > self.after:
            raise RuntimeError("engine exploded")
        return super().act(legal, clock)


class CountingAgent(RandomAgent):
    """Records how many of its kind search at once (the server's admission cap), and the
    budgets it was asked with."""

    lock = threading.Lock()
    running = 0
    peak = 0
    clocks: list[Clock] = []  # noqa: RUF012 - shared on purpose, read by the tests

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        cls = CountingAgent
        with cls.lock:
            cls.running += 1
            cls.peak = max(cls.peak, cls.running)
            cls.clocks.append(clock)
        try:
            time.sleep(0.05)
            return super().act(legal, clock)
        finally:
            with cls.lock:
                cls.running -= 1


class DiagnosticAgent(RandomAgent):
    """A random agent that reports a value and diagnostics with every move."""

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        decision = super().act(legal, clock)
        info = {"belief": 17264, "nodes": 1070552, "secret_marker": "DIAG-7f3a"}
        return Decision(decision.move, decision.policy, value=0.123456, info=info)


def register_test_agents() -> None:
    """Register the agents above (idempotent)."""
    registry.register(
        "test-sleepy",
        lambda o: SleepyAgent(float(o.get("delay", "0.5"))),
        strength=-1,
        replace=True,
    )
    registry.register(
        "test-crash", lambda o: CrashingAgent(int(o.get("after", "2"))), strength=-1, replace=True
    )
    registry.register("test-counting", lambda o: CountingAgent(), strength=-1, replace=True)
    registry.register("test-diag", lambda o: DiagnosticAgent(), strength=-1, replace=True)
