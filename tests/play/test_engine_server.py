"""`caligo engine` under bad input: every hostile or inconsistent line gets an `error` reply,
nothing of it reaches the agent, the server keeps serving, and nothing is logged as a traceback.

Expected values: docs/protocol.md (bad input never stops the engine; `legal` is exactly the
engine's legal move set; `force` imposes one of its moves), Python's own `json` module for what
it cannot parse safely (RecursionError, the 4,300-digit integer limit, `inf` from `1e400`), and
python-chess (not ours) for the legal moves of the start position.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import chess
import pytest

from caligo.agents.base import Clock, Decision, TimeControl
from caligo.agents.external import ExternalAgent, ExternalSettings
from caligo.agents.protocol import ErrorReply, MoveReply, ReadyOk, decode_engine_message
from caligo.agents.random_agent import RandomAgent
from caligo.fow.observation import Observation
from caligo.fow.position import STARTING_FEN
from caligo.play.referee import AgentSeat, play_game
from caligo.play.server import EngineServer
from caligo.play.session import EndReason, GameSession, SessionConfig

WHITE_VIEW = "????????/????????/????????/????????/8/8/PPPPPPPP/RNBQKBNR w KQ -"
START_LEGAL = sorted(m.uci() for m in chess.Board().legal_moves)  # python-chess: 20 moves
HELLO = '{"type":"hello","protocol":"caligo-fow","version":1}'


def newgame(game: str = "g", **overrides: Any) -> str:
    msg: dict[str, Any] = {
        "type": "newgame",
        "game": game,
        "color": "white",
        "start": STARTING_FEN,
        "seed": 3,
        "time_control": {"kind": "none"},
        "observation": WHITE_VIEW,
    }
    msg.update(overrides)
    return json.dumps(msg)


def go(game: str = "g", ply: int = 1, legal: Sequence[str] = START_LEGAL, **extra: Any) -> str:
    msg: dict[str, Any] = {"type": "go", "game": game, "ply": ply, "legal": list(legal)}
    msg["clock"] = extra.pop("clock", {"kind": "none"})
    msg.update(extra)
    return json.dumps(msg)


CLOCK = {"kind": "clock", "own_ms": 60_000, "increment_ms": 0}

# (line, what the error names); sent after HELLO, before the valid newgame
HOSTILE_BEFORE_GAME = [
    ("[" * 500 + "]" * 500, "nested too deeply"),
    ('{"type":"isready","id":' + "1" * 5000 + "}", "integer too long"),
    ('{"type":"isready","id":1,"pad":' + "[" * 40 + "]" * 40 + "}", "nested too deeply"),
    (newgame(time_control={"kind": "clock", "initial_ms": 1e400}), "non-finite number"),
    (newgame().replace('"seed": 3', '"seed": NaN'), "non-finite number"),
    (newgame(time_control={"kind": "clock", "initial_ms": 1e300}), "time_control.initial_ms"),
    (newgame(time_control={"kind": "movetime", "movetime_ms": -1}), "time_control.movetime_ms"),
    (newgame(seed=-1), "'seed' must be in"),
    (newgame(start="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1"), "bad start"),
    (newgame(start="8/8/8/8/8/8/8/8 w - - 0 1"), "bad start"),  # no kings
    (newgame(observation=WHITE_VIEW.replace("PPPPPPPP", "PPPPPPP1")), "not the white view"),
    (go(), "current game is None"),
]
# sent after the valid newgame of game "g" (white to move at ply 1)
HOSTILE_IN_GAME = [
    (go(clock={"kind": "clock", "own_ms": "Infinity"}), "clock.own_ms must be a number"),
    (go().replace('"kind": "none"', '"kind": "clock", "own_ms": Infinity'), "non-finite"),
    (go(clock={**CLOCK, "own_ms": 1e400}), "non-finite"),
    (go(clock={**CLOCK, "increment_ms": 10**12}), "clock.increment_ms must be in"),
    (go(clock=CLOCK, deadline_ms=-5), "'deadline_ms' must be in"),
    (go(clock={**CLOCK, "own_ms": 0.5}), "whole number"),
    ('{"type":"force","game":"g","ply":1,"move":"e2e5"}', "not a legal move"),
    ('{"type":"force","game":"g","ply":1,"move":"e7e5"}', "not a legal move"),  # black's pawn
    (go(legal=START_LEGAL[:-1]), "'legal' is not the legal move set"),  # one missing
    (go(legal=[*START_LEGAL, "e2e5"]), "not legal: ['e2e5']"),  # one illegal added
    (go(legal=[*START_LEGAL, START_LEGAL[0]]), "1 repeated"),
    (go(legal=["e2e4"]), "missing"),
    (
        '{"type":"observe","game":"g","ply":1,"own_move":null,"observation":"' + WHITE_VIEW + '"}',
        "before go or force",
    ),
]


class SpyAgent(RandomAgent):
    """A random agent that records every call the server makes."""

    def __init__(self) -> None:
        super().__init__(seed=1)
        self.calls: list[str] = []

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        self.calls.append("new_game")
        super().new_game(color, start_fen, time_control, seed)

    def observe(self, observation: Observation, own_move: int | None) -> None:
        self.calls.append("observe")

    def force(self, move: int) -> None:
        self.calls.append("force")

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        self.calls.append("act")
        return super().act(legal, clock)


def _server() -> tuple[EngineServer, SpyAgent, list[str]]:
    out: list[str] = []
    server = EngineServer("random", out.append)
    spy = SpyAgent()
    server.agent = spy
    server.seat = AgentSeat(spy)
    return server, spy, out


def test_engine_server_answers_hostile_input_with_an_error_and_it_never_reaches_the_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    server, spy, out = _server()
    assert server.handle_line(HELLO.encode())
    out.clear()
    for line, named in HOSTILE_BEFORE_GAME:
        assert server.handle_line(line.encode()), line
        assert len(out) == 1, (line, out)
        reply = decode_engine_message(out.pop())
        assert isinstance(reply, ErrorReply) and named in reply.message, (named, reply)
    assert spy.calls == [] and server.game is None
    assert server.handle_line(newgame().encode()) and out == []
    assert spy.calls == ["new_game"]
    for line, named in HOSTILE_IN_GAME:
        assert server.handle_line(line.encode()), line
        reply = decode_engine_message(out.pop())
        assert out == [] and isinstance(reply, ErrorReply), (line, reply)
        assert named in reply.message, (named, reply.message)
    assert spy.calls == ["new_game"]  # no force, no act, no observe got through
    # and the game goes on from the state the engine really is in
    assert server.handle_line(go(clock=CLOCK, deadline_ms=60_000).encode())
    reply = decode_engine_message(out.pop())
    assert isinstance(reply, MoveReply) and reply.move in START_LEGAL and reply.ply == 1
    assert spy.calls == ["new_game", "act"]
    # an observe naming another move than the one played is refused too
    other = next(m for m in START_LEGAL if m != reply.move)
    wrong = {"type": "observe", "game": "g", "ply": 1, "own_move": other}
    assert server.handle_line(json.dumps({**wrong, "observation": WHITE_VIEW}).encode())
    err = decode_engine_message(out.pop())
    assert isinstance(err, ErrorReply) and f"this engine played {reply.move!r}" in err.message
    # a second go or a force at the ply already played was answered with another move
    for again in (go(clock=CLOCK, deadline_ms=60_000),
                  '{"type":"force","game":"g","ply":1,"move":"e2e4"}'):
        assert server.handle_line(again.encode())
        err = decode_engine_message(out.pop())
        assert isinstance(err, ErrorReply) and "already played" in err.message, err
    assert spy.calls == ["new_game", "act"]
    # one warning line per error, and no traceback
    assert all(r.exc_info is None for r in caplog.records)
    errors = len(HOSTILE_BEFORE_GAME) + len(HOSTILE_IN_GAME) + 3
    server_log = [r for r in caplog.records if r.name == "caligo.play.server"]
    assert [r.levelno for r in server_log] == [logging.WARNING] * errors


def test_engine_server_accepts_a_legal_force_and_the_observe_that_follows() -> None:
    server, spy, out = _server()
    for line in (HELLO, newgame(), '{"type":"force","game":"g","ply":1,"move":"e2e4"}'):
        assert server.handle_line(line.encode())
    assert [json.loads(x)["type"] for x in out] == ["hello"]
    view = "????????/????????/????????/????????/4P3/8/PPPP1PPP/RNBQKBNR b KQ -"
    observe = {"type": "observe", "game": "g", "ply": 1, "own_move": "e2e4", "observation": view}
    assert server.handle_line(json.dumps(observe).encode())
    assert len(out) == 1 and server.ply == 1
    assert spy.calls == ["new_game", "force", "observe"]
    # ply 2 is Black's: a go for it is refused, not searched from White's seat
    assert server.handle_line(go(ply=2, legal=["e2e4"]).encode())
    err = decode_engine_message(out.pop())
    assert isinstance(err, ErrorReply) and "the opponent's" in err.message, err
    assert spy.calls == ["new_game", "force", "observe"]


def test_engine_server_answers_deeply_nested_json_with_an_error_and_keeps_serving() -> None:
    """Through the real `caligo engine` process: each hostile line gets an error, then
    `isready` and a move still get their answers, and stderr carries no traceback."""
    lines = [HELLO]
    lines += [line for line, _ in HOSTILE_BEFORE_GAME]
    lines += [newgame()]
    lines += [line for line, _ in HOSTILE_IN_GAME]
    lines += ["not json at all", '{"type":"mystery"}', "x" * 70_000, '{"type":"isready","id":5}']
    lines += [go(ply=4), go(game="other"), go(), '{"type":"quit"}']
    proc = subprocess.run(
        [sys.executable, "-m", "caligo.cli", "engine", "--agent", "random"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines() if line]
    assert out[0]["type"] == "hello"
    errors = [m["message"] for m in out if m["type"] == "error"]
    expected = [named for _, named in HOSTILE_BEFORE_GAME + HOSTILE_IN_GAME]
    expected += ["malformed JSON", "unknown message type 'mystery'", "longer than 65536 bytes"]
    expected += ["expected ply 1", "current game is 'g'"]
    assert len(errors) == len(expected)
    for message, named in zip(errors, expected, strict=True):
        assert named in message, (named, message)
    assert {"type": "readyok", "id": 5} in out
    assert out[-1]["type"] == "move" and out[-1]["move"] in START_LEGAL
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "caligo engine:" in line]
    assert len(warnings) == len(expected)  # one log line per error reply


def test_caligo_engine_plays_a_normal_game_after_hostile_lines() -> None:
    """The referee's own `ExternalAgent` drives `caligo engine`: hostile lines (each answered
    with an error), then full games decided by the rules, on the same process."""
    agent = ExternalAgent(
        [sys.executable, "-m", "caligo.cli", "engine", "--agent", "random"],
        settings=ExternalSettings(handshake_timeout_s=120.0, ready_timeout_s=30.0),
    )
    try:
        pid = agent.process.pid
        hostile = [line for line, _ in HOSTILE_BEFORE_GAME] + [newgame("h")]
        hostile += [
            line.replace('"game": "g"', '"game": "h"').replace('"game":"g"', '"game":"h"')
            for line, _ in HOSTILE_IN_GAME
        ]
        hostile += ['{"type":"gameover","game":"h","result":"*","termination":"aborted"}']
        for line in hostile:
            agent.process.send_line(line)
        replies = []
        deadline = time.monotonic() + 120.0  # a bound for a broken engine, not a measurement
        agent.process.send_line('{"type":"isready","id":77}')
        while True:
            msg = agent.process.receive(deadline)
            if isinstance(msg, ReadyOk) and msg.id == 77:
                break
            replies.append(msg)
        assert len(replies) == len(HOSTILE_BEFORE_GAME) + len(HOSTILE_IN_GAME)
        assert all(isinstance(m, ErrorReply) for m in replies)
        for seed in (1, 2):
            config = SessionConfig(f"n-{seed}", seeds=(seed, seed + 1), move_timeout_ms=60_000)
            session = GameSession(config)
            opponent = RandomAgent(seed=seed)
            play_game(session, (agent, opponent) if seed == 1 else (opponent, agent))
            end = session.end
            assert end is not None
            assert end.reason not in (EndReason.CRASH, EndReason.TIME_FORFEIT), end.detail
            assert end.reason is not EndReason.ILLEGAL_MOVE
        assert agent.restarts == 0 and agent.process.pid == pid  # the same process throughout
    finally:
        agent.close()


def test_engine_server_refuses_an_observe_its_own_pieces_contradict() -> None:
    """An observe whose own pieces, side to move or castling rights cannot follow from the
    engine's previous observation and own move is refused; the consistent one is delivered.

    Expected values: the rules of chess (docs/protocol.md) — after 1. e4 White's pawn stands on
    e4, never e3; an opponent's move captures at most one piece and adds none of White's; the
    turn passes to the other player; castling rights are never regained."""
    server, spy, out = _server()
    for line in (HELLO, newgame(), '{"type":"force","game":"g","ply":1,"move":"e2e4"}'):
        assert server.handle_line(line.encode())
    out.clear()

    def observe(ply: int, view: str, own: str | None) -> str:
        message = {"type": "observe", "game": "g", "ply": ply, "own_move": own}
        assert server.handle_line(json.dumps({**message, "observation": view}).encode())
        if not out:
            return ""
        reply = decode_engine_message(out.pop())
        assert isinstance(reply, ErrorReply) and reply.ply == ply, reply
        return reply.message

    fog = "????????/????????/????????/????????"
    assert "not those after its move 'e2e4'" in observe(
        1, f"{fog}/8/4P3/PPPP1PPP/RNBQKBNR b KQ -", "e2e4")
    assert "white is still to move" in observe(1, f"{fog}/4P3/8/PPPP1PPP/RNBQKBNR w KQ -", "e2e4")
    assert spy.calls == ["new_game", "force"] and server.ply == 0
    assert observe(1, f"{fog}/4P3/8/PPPP1PPP/RNBQKBNR b KQ -", "e2e4") == ""
    assert spy.calls == ["new_game", "force", "observe"] and server.ply == 1

    # ply 2, Black's move: nothing of White's may appear, move, or vanish twice over
    assert "appeared or moved" in observe(2, f"{fog}/4P3/4N3/PPPP1PPP/RNBQKBNR w KQ -", None)
    assert "appeared or moved" in observe(2, f"{fog}/4P3/8/PPPP1PPP/RNBQKBRN w KQ -", None)
    assert "more than one piece" in observe(2, f"{fog}/4P3/8/2PP1PPP/RNBQKBNR w KQ -", None)
    assert spy.calls == ["new_game", "force", "observe"] and server.ply == 1
    assert observe(2, f"{fog}/4P3/8/1PPP1PPP/RNBQKBNR w KQ -", None) == ""  # a2 taken: one piece
    assert spy.calls == ["new_game", "force", "observe", "observe"] and server.ply == 2

    # a game that starts without White's queenside right cannot be given it back
    start = STARTING_FEN.replace(" KQkq ", " K ")
    for line in ('{"type":"gameover","game":"g","result":"*","termination":"aborted"}',
                 newgame("k", start=start, observation=WHITE_VIEW.replace(" KQ ", " K ")),
                 '{"type":"force","game":"k","ply":1,"move":"e2e4"}'):
        assert server.handle_line(line.encode())
    assert not out
    message = {"type": "observe", "game": "k", "ply": 1, "own_move": "e2e4",
               "observation": f"{fog}/4P3/8/PPPP1PPP/RNBQKBNR b KQ -"}
    assert server.handle_line(json.dumps(message).encode())
    err = decode_engine_message(out.pop())
    assert isinstance(err, ErrorReply) and "castling rights regained" in err.message, err
