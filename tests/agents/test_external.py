"""`ExternalAgent` (`caligo.agents.external`) and its engine process: an external engine
(tests/play/fake_engine.py, the play tests' fake, standard library only, written from
docs/protocol.md) plays full games through the referee; every kind of misbehaviour gets a clear
logged reason, the game is decided by the rules of issue 8 (illegal answer, crash or missed
deadline loses), and the next game still runs.

Expected outcomes come from issue 8's rules ("an illegal answer, a crash or a missed deadline
loses with a logged reason") and docs/design.md, "The referee" (unknown fields and types are
ignored).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from caligo.agents import engine_process as external
from caligo.agents.base import TimeControl
from caligo.agents.engine_process import STDERR_LINE_CHARS, STDERR_TAIL_LINES, _StderrTail
from caligo.agents.external import (
    EngineProtocolError,
    EngineTimeout,
    ExternalAgent,
    ExternalSettings,
    SkipKind,
    SkipLog,
)
from caligo.agents.random_agent import RandomAgent
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig

FAKE = str(Path(__file__).parents[1] / "play" / "fake_engine.py")


def fake(mode: str, *args: str) -> ExternalAgent:
    return ExternalAgent(
        [sys.executable, FAKE, mode, *args], settings=ExternalSettings(ready_timeout_s=1.0)
    )


def play(
    agent: ExternalAgent,
    color: int = 0,
    tc: str = "none",
    seed: int = 1,
    move_timeout_ms: int = 2_000,
) -> GameSession:
    tcs = (TimeControl.parse(tc), TimeControl.parse("none"))
    if color == 1:
        tcs = (tcs[1], tcs[0])
    config = SessionConfig(
        f"t-{seed}", seeds=(seed, seed + 1), time_controls=tcs, move_timeout_ms=move_timeout_ms
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


# --- hostile engines ---------------------------------------------------------------------------


def _own_moves(session: GameSession, color: int) -> int:
    return sum(1 for p in session.plies if p.mover == color)


def test_referee_skips_unparseable_engine_lines_and_counts_them() -> None:
    """Lines no JSON parser should trust (deep nesting, a 5,000-digit integer, Infinity, 1e400,
    NaN) are skipped and counted like any malformed line: the game is decided by the moves.
    Before, the first of them escaped the decoder as RecursionError/ValueError and lost the
    game as an engine crash."""
    with fake("hostile", "5") as agent:
        session = play(agent)
        end = session.end
        assert end is not None
        assert end.reason not in (EndReason.CRASH, EndReason.TIME_FORFEIT), end.detail
        # the fake engine writes 5 hostile lines before each of its moves (fake_engine.py)
        answered = _own_moves(session, 0)
        assert agent.process.skips.by_kind[SkipKind.MALFORMED] == 5 * answered
        assert agent.process.skips.total == 5 * answered
        assert agent.restarts == 0


def test_skipped_lines_are_logged_a_few_times_then_summarised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    skips = SkipLog(lambda: "chatty", first=3, interval_s=30.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING)
    for i in range(1000):
        skips.skip(SkipKind.MALFORMED if i % 2 else SkipKind.OVERSIZED, f"line {i}")
    assert [r.getMessage() for r in caplog.records] == [
        "engine chatty: skipped line 0",
        "engine chatty: skipped line 1",
        "engine chatty: skipped line 2 (further skipped lines are counted and summarised "
        "every 30 s)",
    ]
    now[0] = 31.0
    skips.skip(SkipKind.UNKNOWN_TYPE, "line 1000")  # the interval passed: one summary
    assert caplog.records[-1].getMessage() == (
        "engine chatty: skipped 998 more lines in 31 s "
        "(499 malformed, 498 oversized, 1 unknown type; 1001 in all)"
    )
    skips.skip(SkipKind.UNKNOWN_TYPE, "line 1001")
    skips.flush()  # at stop: whatever is left
    assert caplog.records[-1].getMessage().startswith("engine chatty: skipped 1 more lines")
    assert len(caplog.records) == 5
    assert skips.total == 1002 and skips.by_kind[SkipKind.UNKNOWN_TYPE] == 2


def test_a_flood_of_bad_lines_costs_a_bounded_number_of_log_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="caligo.agents.external")
    with fake("hostile", "100") as agent:
        session = play(agent)
    skipped = 100 * _own_moves(session, 0)
    assert agent.process.skips.total == skipped
    lines = [r.getMessage() for r in caplog.records if r.name == "caligo.agents.external"]
    first = agent.process.skips.first
    assert len([m for m in lines if "skipped a bad line" in m]) == first
    # the rest is counted: summaries (at most one per interval, and one at stop) add up to it
    summaries = [m for m in lines if "more lines in" in m]
    assert summaries and summaries[-1].endswith(f"; {skipped} in all)")
    counted = sum(int(m.split("skipped ")[1].split(" more")[0]) for m in summaries)
    assert counted == skipped - first


def _gone(pid: int) -> bool:
    """True when `pid` no longer runs (exited, or a zombie waiting for its new parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, polls: int = 3000) -> bool:
    for _ in range(polls):  # SIGKILL is delivered asynchronously; bounded, no timing claim
        if _gone(pid):
            return True
        time.sleep(0.01)
    return False


def _read_pid(path: Path) -> int:
    return int(path.read_text())


def _cleanup(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("watch", ["pidfd", "polling"])
def test_dead_engine_with_a_child_holding_stdout_is_a_crash_not_a_time_forfeit(
    tmp_path: Path, watch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine exits at its first go, but a child it started keeps its stdout open, so no
    EOF ever comes. The referee watches the process itself: the game is lost as a crash with
    the exit code, not as a time forfeit after the move timeout (30 s here; had the referee
    waited for it, the outcome would be TIME_FORFEIT), and the child is killed with it. Both
    ways of watching: a pidfd, and polling where the OS has none."""
    if watch == "polling":
        monkeypatch.setattr(external, "_pidfd_open", lambda pid: None)
    else:
        fd = external._pidfd_open(os.getpid())
        if fd is None:
            pytest.skip("no os.pidfd_open on this system (Linux 5.3+); the polling case runs")
        os.close(fd)
    pidfile = tmp_path / "child.pid"
    agent = ExternalAgent(
        [sys.executable, FAKE, "orphan", "1", str(pidfile)],
        settings=ExternalSettings(ready_timeout_s=5.0),
    )
    try:
        session = play(agent, move_timeout_ms=30_000)
        end = session.end
        assert end is not None and end.reason is EndReason.CRASH, end
        assert "exit code 5" in end.detail and end.winner == 1
        child = _read_pid(pidfile)
        assert _wait_gone(child)  # the rest of its process group went with it
        # the next game runs on a restarted engine
        second = play(agent, color=1, seed=5, move_timeout_ms=30_000)
        assert second.end is not None and agent.restarts == 1
    finally:
        agent.close()
        if pidfile.exists():
            _cleanup(_read_pid(pidfile))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_children_of_a_stopped_engine_are_killed(tmp_path: Path) -> None:
    """The engine starts a child and, on quit, exits by itself leaving the child behind; stop
    kills the engine's whole process group all the same (before, only an engine that did not
    exit on quit had its group killed)."""
    pidfile = tmp_path / "child.pid"
    agent = ExternalAgent([sys.executable, FAKE, "spawn", "1", str(pidfile)])
    child = _read_pid(pidfile)  # written before the engine said hello
    try:
        assert not _gone(child)
        engine = agent.process.pid
        assert engine is not None and os.getpgid(child) == engine  # its own group
        agent.close()
        assert _wait_gone(child)
    finally:
        _cleanup(child)


CHATTY_LINE = b"fake engine: thinking very loudly about nothing in particular....\n"
"""The line the fake engine's `chatty` mode repeats (fake_engine.py)."""


def test_chatty_stderr_does_not_slow_the_engine() -> None:
    """4 MiB of stderr in one burst before the first move is drained in large reads (before:
    one read per byte, ~0.8 MB/s, so a chatty engine lost on time); the kept tail is bounded."""
    kib = 4096
    with fake("chatty", str(kib)) as agent:
        session = play(agent)
        assert session.end is not None and session.end.reason is not EndReason.CRASH
    tail = agent.process.stderr
    written = kib * 1024 // len(CHATTY_LINE) * len(CHATTY_LINE)
    assert tail.bytes >= written
    assert tail.reads <= tail.bytes // 512  # at least 512 bytes a read on average
    assert len(tail.lines) == STDERR_TAIL_LINES
    assert tail.tail(1) == ["fake engine: thinking very loudly about nothing in particular...."]


def test_stderr_is_read_in_large_chunks_into_a_bounded_tail() -> None:
    """The drain reads what the pipe holds in one system call, and a line without an end (or a
    very long one) does not grow the tail: reads per MiB and memory are bounded."""
    tail = _StderrTail(lambda: "x")
    read_fd, write_fd = os.pipe()
    payload = (b"y" * 999 + b"\n") * 1024  # 1000 KiB in 1,024 lines
    writer = os.fdopen(write_fd, "wb")
    reader = os.fdopen(read_fd, "rb", buffering=0)
    drain = threading.Thread(target=tail.run, args=(reader,))
    drain.start()
    writer.write(payload)
    writer.write(b"z" * 5_000_000)  # no newline: an unfinished line of 5 MB
    writer.close()
    drain.join()
    assert tail.bytes == len(payload) + 5_000_000
    assert tail.reads <= (tail.bytes >> 20) * 2048 + 2048  # >= 512 bytes per read
    kept = tail.tail(STDERR_TAIL_LINES)
    assert len(kept) == STDERR_TAIL_LINES
    assert all(len(line) <= STDERR_LINE_CHARS for line in kept)
    assert kept[-1] == "z" * STDERR_LINE_CHARS  # the unfinished line, cut to size at the end
