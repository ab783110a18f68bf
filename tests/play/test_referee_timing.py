"""The referee charges every agent only for its own work (on an injected clock).

What is timed, from `caligo.play.referee.play_game`'s docstring: start-up (`new_game`) apart
from the moves; an agent's work after its own move (its own move's observation) on nobody's
clock; the mover's observation of the opponent's move and its answer on the mover's clock. The
agents below advance a fake clock by a known amount in each call, so every expected time is a
sum of those amounts, with no wall time in the test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from caligo.agents.base import Clock, Decision, TimeControl
from caligo.agents.external import ExternalAgent, ExternalSettings
from caligo.agents.random_agent import RandomAgent
from caligo.fow.observation import Observation
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig
from tests.clocks import Ticker

FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")


class Costly(RandomAgent):
    """A random mover whose every call costs a known time on the fake clock (seconds)."""

    def __init__(self, clock: Ticker, *, startup: float = 0.0, after_own: float = 0.0,
                 after_theirs: float = 0.0, think: float = 0.0, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.clock = clock
        self.costs = (startup, after_own, after_theirs, think)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl,
                 seed: int) -> None:
        super().new_game(color, start_fen, time_control, seed)
        self.clock.t += self.costs[0]

    def observe(self, observation: Observation, own_move: int | None) -> None:
        super().observe(observation, own_move)
        self.clock.t += self.costs[1] if own_move is not None else self.costs[2]

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        self.clock.t += self.costs[3]
        return super().act(legal, clock)


def _game(agents: tuple[Costly, Costly], clock: Ticker, tc: str = "none",
          margin_ms: int = 0, startup_limit_s: float = 120.0) -> GameSession:
    t = TimeControl.parse(tc)
    session = GameSession(SessionConfig("timing", time_controls=(t, t), seeds=(1, 2),
                                        timemargin_ms=margin_ms), now=clock)
    play_game(session, agents, clock=clock, startup_limit_s=startup_limit_s)
    return session


def test_work_after_an_own_move_is_not_charged_to_the_opponent() -> None:
    """White spends 0.5 s observing its own moves (a belief update) and 0.1 s thinking; Black
    spends 0.2 s observing White's moves and 0.05 s thinking. Black's measured moves are 0.25
    s (its observation of White's move and its answer), never White's 0.5 s; White's are its
    0.1 s of thinking (it spends nothing observing Black's moves)."""
    clock = Ticker()
    white = Costly(clock, after_own=0.5, think=0.1, seed=1)
    black = Costly(clock, after_theirs=0.2, think=0.05, seed=2)
    session = _game((white, black), clock)
    plies = session.plies
    assert len(plies) > 4
    for p in plies:
        expected = 100.0 if p.mover == 0 else 250.0
        assert abs(p.elapsed_ms - expected) < 1e-6, (p.ply, p.mover, p.elapsed_ms)


def test_an_opponents_clock_starts_after_every_in_process_observation() -> None:
    """On a clock: White's 2 s of work after each of its moves would flag a Black with 1 s a
    move if it were charged to Black; it is not."""
    clock = Ticker()
    white = Costly(clock, after_own=2.0, think=0.01, seed=3)
    black = Costly(clock, think=0.01, seed=4)
    session = _game((white, black), clock, "mt=1")
    assert session.end is not None and session.end.reason is not EndReason.TIME_FORFEIT
    assert all(p.elapsed_ms <= 10.0 + 1e-6 for p in session.plies)


def test_the_belief_update_of_the_opponents_move_is_part_of_the_move() -> None:
    """A mover that spends 0.4 s observing the opponent's move and 0.7 s thinking takes 1.1 s:
    at mt=1 it loses on time (the update is its own work, as it would be in an engine
    process, whose clock runs from the observation it is sent)."""
    clock = Ticker()
    white = Costly(clock, think=0.01, seed=5)
    black = Costly(clock, after_theirs=0.4, think=0.7, seed=6)
    session = _game((white, black), clock, "mt=1")
    end = session.end
    assert end is not None and end.reason is EndReason.TIME_FORFEIT and end.winner == 0
    assert "1100" in end.detail


def test_start_up_is_timed_apart_from_the_first_move() -> None:
    """A 5 s start-up (processes, memory, kernels) does not count against a 0.3 s first
    move; the session records it."""
    clock = Ticker()
    white = Costly(clock, startup=5.0, think=0.2, seed=7)
    black = Costly(clock, startup=1.0, think=0.2, seed=8)
    session = _game((white, black), clock, "mt=0.3")
    assert session.end is not None and session.end.reason is not EndReason.TIME_FORFEIT
    assert session.startup_ms == (5000.0, 1000.0)
    assert abs(session.plies[0].elapsed_ms - 200.0) < 1e-6


def test_an_overlong_start_up_loses_as_a_crash() -> None:
    clock = Ticker()
    white = Costly(clock, startup=10.0, seed=9)
    black = Costly(clock, seed=10)
    session = _game((white, black), clock, "mt=0.3", startup_limit_s=5.0)
    end = session.end
    assert end is not None and end.reason is EndReason.CRASH and end.winner == 1
    assert "start-up took 10000 ms" in end.detail and session.ply == 0


def test_an_engine_process_is_ready_before_its_clock_starts() -> None:
    """An engine that needs 1.5 s after `newgame` (it answers `readyok` only then): the
    referee waits for it inside `new_game`, before any clock runs, so its start-up is
    recorded apart and its first move is measured from its `go` alone."""
    cmd = [sys.executable, str(FAKE_ENGINE), "slowstart", "1500"]
    with ExternalAgent(cmd, settings=ExternalSettings(startup_timeout_s=60.0)) as engine:
        t = TimeControl.parse("mt=2")
        session = GameSession(SessionConfig("slow-start", time_controls=(t, t), seeds=(1, 2),
                                            timemargin_ms=0))
        play_game(session, (engine, RandomAgent(seed=3)))
    startup = session.startup_ms[0]
    assert startup is not None and startup >= 1500.0
    first = session.plies[0]
    assert first.mover == 0 and first.elapsed_ms < startup  # not charged to move 1
    assert session.end is not None and session.end.reason is not EndReason.TIME_FORFEIT


class Stamped(RandomAgent):
    """A random mover that notes the wall time at which it is asked to move."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.asked: list[float] = []

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        self.asked.append(time.time())
        return super().act(legal, clock)


def test_an_engine_process_settles_its_own_move_before_the_opponents_clock_starts(
    tmp_path: Path,
) -> None:
    """An engine process that works 0.3 s after each of its own moves (it notes when it is
    done): the referee asks the opponent to move only after that (the engine answers
    `isready` once it has taken its move in), so the work is on nobody's clock, as an
    in-process agent's `observe` is; and the engine's own moves do not include it (the
    referee's times are compared with the 0.3 s sleep, an ordering of events, not a
    deadline)."""
    stamps = tmp_path / "settled.txt"
    cmd = [sys.executable, str(FAKE_ENGINE), "slowsettle", "300", str(stamps)]
    opponent = Stamped(seed=4)
    with ExternalAgent(cmd) as engine:
        session = GameSession(SessionConfig("settle", seeds=(1, 2)))

        def stop(s: GameSession) -> None:
            if s.ply >= 12 and s.end is None:
                s.abort("enough")

        play_game(session, (engine, opponent), on_ply=stop)
    settled = [float(x) for x in stamps.read_text().split()]
    assert len(settled) >= 5 and len(opponent.asked) >= 5
    # the k-th settling (after White's k-th move) ends before Black is asked for its k-th move
    for done, asked in zip(settled, opponent.asked, strict=False):
        assert done <= asked
