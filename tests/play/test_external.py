"""Protocol robustness: an external engine process (tests/play/fake_engine.py, standard library
only, written from docs/protocol.md) plays full games; every kind of misbehaviour gets a clear
logged reason, the game is decided by the rules of issue 8 (illegal answer, crash or missed
deadline loses), and the next game still runs.

Expected outcomes come from issue 8's rules ("an illegal answer, a crash or a missed deadline
loses with a logged reason") and docs/design.md, "The referee" (unknown fields and types are
ignored).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from caligo.agents.base import TimeControl
from caligo.agents.external import (
    EngineProtocolError,
    EngineTimeout,
    ExternalAgent,
    ExternalSettings,
)
from caligo.agents.random_agent import RandomAgent
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig

FAKE = str(Path(__file__).with_name("fake_engine.py"))


def fake(mode: str, *args: str) -> ExternalAgent:
    return ExternalAgent(
        [sys.executable, FAKE, mode, *args], settings=ExternalSettings(ready_timeout_s=1.0)
    )


def play(agent: ExternalAgent, color: int = 0, tc: str = "none", seed: int = 1) -> GameSession:
    tcs = (TimeControl.parse(tc), TimeControl.parse("none"))
    if color == 1:
        tcs = (tcs[1], tcs[0])
    config = SessionConfig(
        f"t-{seed}", seeds=(seed, seed + 1), time_controls=tcs, move_timeout_ms=2_000
    )
    session = GameSession(config)
    opponent = RandomAgent(seed=seed)
    play_game(session, (agent, opponent) if color == 0 else (opponent, agent))
    return session


def test_external_engine_plays_full_games_with_diagnostics() -> None:
    with fake("good") as agent:
        for seed in range(3):
            session = play(agent, color=seed % 2, seed=seed)
            end = session.end
            assert end is not None
            assert end.reason in (
                EndReason.KING_CAPTURE,
                EndReason.THREEFOLD_REPETITION,
                EndReason.FIFTY_MOVES,
                EndReason.NO_MOVES,
            )
            own = [p for p in session.plies if p.mover == seed % 2]
            assert own and all(p.decision is not None for p in own)
            first = own[0].decision
            assert first is not None and first.info["nodes"] == len(first.policy)
        assert agent.restarts == 0
        assert agent.hello is not None and agent.hello.name == "fake-good"


def test_garbage_lines_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with fake("garbage") as agent:
        session = play(agent)
    end = session.end
    assert end is not None and end.reason not in (EndReason.CRASH, EndReason.TIME_FORFEIT)
    text = caplog.text
    assert "skipped a bad line: malformed JSON" in text
    assert "unknown message type 'telemetry'" in text
    assert "skipped a line longer than 65536 bytes" in text
    assert "while waiting for the move of ply 1" in text  # the stale move for ply 0
    assert "skipped ReadyOk" in text  # the out-of-order readyok


@pytest.mark.parametrize(
    ("mode", "reason", "logged"),
    [
        ("illegal", EndReason.ILLEGAL_MOVE, "answered 'e2e5', not a legal move"),
        ("crash", EndReason.CRASH, "exit code 3"),
        ("error", EndReason.CRASH, "reported an error at ply 1: 'out of ideas'"),
        ("hang", EndReason.TIME_FORFEIT, "no move for ply 1 within 300 ms"),
    ],
)
def test_failures_lose_with_a_reason_and_the_next_game_runs(
    mode: str, reason: EndReason, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with fake(mode, "1") as agent:
        session = play(agent, tc="mt=0.3")
        end = session.end
        assert end is not None and end.reason is reason
        assert end.winner == 1 and end.result == "0-1"
        assert logged in end.detail and logged in caplog.text
        if mode == "crash":
            assert "simulated crash" in end.detail  # stderr tail quoted
        # the match goes on: the next game starts (the engine is restarted when it died or
        # stopped answering) and is decided by the same rules again
        second = play(agent, color=1, tc="mt=0.3", seed=7)
        assert second.end is not None
        if mode in ("crash", "hang"):
            assert agent.restarts >= 1


def test_resignation() -> None:
    with fake("resign", "2") as agent:
        session = play(agent)
    end = session.end
    assert end is not None and end.reason is EndReason.RESIGNATION and end.result == "0-1"
    assert session.ply == 2  # one own move, one reply, then the resignation


def test_slow_engine_flags_on_the_clock() -> None:
    with fake("slow", "400") as agent:  # 400 ms per move on a 1 s + 0 clock: flags at move 3
        session = play(agent, tc="1+0")
    end = session.end
    assert end is not None and end.reason is EndReason.TIME_FORFEIT and end.winner == 1
    own = [p for p in session.plies if p.mover == 0]
    assert 1 <= len(own) <= 3


def test_handshake_failures_are_refused() -> None:
    with pytest.raises(EngineProtocolError, match="version 2"):
        fake("badversion")
    with pytest.raises(EngineTimeout):
        ExternalAgent(
            [sys.executable, FAKE, "silent"], settings=ExternalSettings(handshake_timeout_s=0.5)
        )


def test_caligo_engine_server_survives_bad_input() -> None:
    """`caligo engine` answers every bad line with an error and keeps serving."""
    lines = [
        '{"type":"hello","protocol":"caligo-fow","version":1}',
        "not json at all",
        '{"type":"mystery"}',
        '{"type":"observe","game":"g","ply":1,"observation":"8/8/8/8/8/8/8/8 w - -"}',
        "x" * 70_000,
        '{"type":"isready","id":5}',
        '{"type":"newgame","game":"g","color":"white","start":'
        '"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1","seed":3,'
        '"time_control":{"kind":"none"},'
        '"observation":"????????/????????/????????/????????/8/8/PPPPPPPP/RNBQKBNR w KQ -"}',
        '{"type":"go","game":"g","ply":4,"legal":["e2e4"],"clock":{"kind":"none"}}',
        '{"type":"go","game":"other","ply":1,"legal":["e2e4"],"clock":{"kind":"none"}}',
        '{"type":"go","game":"g","ply":1,"legal":["e2e4","d2d4"],"clock":{"kind":"none"}}',
        '{"type":"quit"}',
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "caligo.cli", "engine", "--agent", "random"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = [line for line in proc.stdout.splitlines() if line]
    assert out[0].startswith('{"type":"hello","protocol":"caligo-fow","version":1')
    errors = [line for line in out if '"type":"error"' in line]
    assert len(errors) == 6
    assert "malformed JSON" in errors[0]
    assert "unknown message type 'mystery'" in errors[1]
    assert "observe before newgame" in errors[2]
    assert "longer than 65536 bytes" in errors[3]
    assert "expected ply 1" in errors[4]
    assert "current game is 'g'" in errors[5]
    assert '{"type":"readyok","id":5}' in out
    assert out[-1].startswith('{"type":"move","game":"g","ply":1,"move":"')
