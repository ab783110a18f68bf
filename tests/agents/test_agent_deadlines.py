"""The engines' own loops honour their deadlines, and a cold engine starts before its clock.

- ZS21's trunk LP given 50 ms of CPU (`time.process_time`: another process's load does not
  advance it) returns within 50 ms + 40 ms in the least of three tries, with a solution or the
  `LPError` that keeps the last one (HiGHS stops at its wall-clock limit, which CPU time never
  passes on one thread; the tolerance covers HiGHS's start and the model's set-up).
- A cold `caligo engine` process (fresh, nothing compiled or started) at mt=0.3 through the
  referee: its start-up is done before its clock starts (the referee records it apart), so
  its first move is measured from `go` alone and is far shorter than the start-up. The
  real-time figure (first move / move time) is `caligo bench timing`'s.
"""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from caligo.agents.external import ExternalAgent
from caligo.agents.fow_belief import FowBelief
from caligo.agents.fow_search import FowEvaluator, FowSearchGame
from caligo.agents.random_agent import RandomAgent
from caligo.agents.timing import TimeControl
from caligo.agents.zs21 import ZS21Budget, ZS21Config, ZS21Search, trunk_lp
from caligo.core.lp import LPError
from caligo.fow.evaluate import SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.limits import Deadline
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig
from caligo.search.construct import start_key
from caligo.search.export import export_trunk
from caligo.search.game import KeyMode
from caligo.search.intern import mix_key
from tests.clocks import Ticker

CPU = time.process_time


def _black_after_e4(game: FowSearchGame, evaluator: object
                    ) -> tuple[ZS21Search, FowBelief, int]:
    """A fresh ZS21 search for Black, Black's P and observation key after 1. e4."""
    search = ZS21Search(game, evaluator, ZS21Config(particles=16, max_nodes=400_000),  # type: ignore[arg-type]
                        1)
    search.start(0)
    belief = FowBelief(game, 1)
    truth = Game()
    truth.push_uci("e2e4")
    obs = observe(truth.position, 1)
    belief.update(obs, None)
    key = start_key(int(game.describe(np.array([0])).obs[0, 1]), KeyMode.INCREMENTAL)
    key = int(mix_key(np.uint64(key), np.int64(-1), np.uint64(observation_key(obs))))
    return search, belief, key


def _grown_trunk(expansions: int) -> ZS21Search:
    """A ZS21 trunk after one decision of `expansions` leaf expansions (Black after 1. e4)."""
    game = FowSearchGame()
    search, belief, key = _black_after_e4(game, FowEvaluator(game, SimpleEvaluator()))
    search.decide(belief, key, np.random.default_rng(0),
                  ZS21Budget(seconds=None, expansions=expansions), 0)
    return search


def test_a_zs21_lp_stops_at_its_time_limit() -> None:
    """A 10 ms limit on a trunk whose whole LP takes a quarter of a second: the solve stops
    with HiGHS's "time limit" and spends well under half of the whole solve's CPU time.
    Measured against the whole solve on the same machine, not against a fixed bound: HiGHS
    stops some 25 ms past its limit and scipy's wrapper adds 15 ms outside it (a fixed
    0.05 + 0.04 s bound failed on every try on one machine, at 93 to 118 ms)."""
    search = _grown_trunk(2500)
    assert search.arena.n_nodes > 50_000
    trunk = export_trunk(search.arena, search.layer, search.searcher, search.penalty)

    def timed_solve(limit: float | None) -> float:
        t0 = CPU()
        try:
            trunk_lp.solve(trunk, search.arena, time_limit=limit)
        except LPError as exc:
            assert limit is not None and "time limit" in str(exc).lower()
        return CPU() - t0

    whole = timed_solve(None)
    # the least of three tries: a burst of other processes' load can inflate one try's CPU
    # time; an LP that ignored its limit would take the whole solve's time in all three
    spent = min(timed_solve(0.01) for _ in range(3))
    assert spent < 0.5 * whole, (spent, whole)


def test_a_zs21_lp_limit_counts_the_build_of_the_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """`trunk_lp.solve`'s limit is from its call: the sequence form and the sparse blocks it
    builds first come out of it, and HiGHS gets the rest (it had the whole limit, and a
    100,000-node trunk's build put ZS21's last LP some 40 ms past its move). On a fake
    clock the build takes 30 ms of a 50 ms limit: HiGHS is given 20 ms."""
    search = _grown_trunk(40)
    trunk = export_trunk(search.arena, search.layer, search.searcher, search.penalty)
    clock = Ticker(t=100.0)
    real_sf, real_lp = trunk_lp.sequence_form, trunk_lp.linprog
    given: list[float] = []

    def slow_sf(tree: Any) -> Any:
        clock.t += 0.03
        return real_sf(tree)

    def spy_lp(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs["options"]["time_limit"])
        return real_lp(*args, **{**kwargs, "options": {**kwargs["options"], "time_limit": 60}})

    monkeypatch.setattr(trunk_lp, "sequence_form", slow_sf)
    monkeypatch.setattr(trunk_lp, "linprog", spy_lp)
    monkeypatch.setattr(trunk_lp, "time", SimpleNamespace(perf_counter=clock))  # the module's
    trunk_lp.solve(trunk, search.arena, time_limit=0.05)
    assert given == [pytest.approx(0.02)]


def test_a_cold_engine_starts_before_its_clock() -> None:
    cmd = [sys.executable, "-m", "caligo.cli", "engine", "--agent", "obscuro:eval=simple"]
    with ExternalAgent(cmd) as engine:  # a fresh process: nothing loaded yet
        t = TimeControl.parse("mt=0.3")
        # grace: a busy machine may delay any answer; what is checked is what is timed
        session = GameSession(SessionConfig("cold", time_controls=(t, t), seeds=(1, 2),
                                            timemargin_ms=5000))
        first: list[float] = []

        def stop(s: GameSession) -> None:
            if s.ply == 1:
                first.append(s.plies[0].elapsed_ms)
                s.abort("first move measured")

        play_game(session, (engine, RandomAgent(seed=3)), on_ply=stop)
    startup = session.startup_ms[0]
    assert startup is not None and first
    assert session.end is not None and session.end.reason is EndReason.ABORTED
    assert first[0] < startup  # the start-up (kernels, arenas) was not charged to move 1


class _TickingEvaluator:
    """FoW's built-in evaluator that, like a Stockfish call, costs 1 ms per position on a fake
    clock (children and sampled roots alike)."""

    def __init__(self, inner: FowEvaluator, clock: Ticker) -> None:
        self.inner, self.clock = inner, clock

    def children(self, parents: np.ndarray, batch: object) -> np.ndarray:
        out = self.inner.children(parents, batch)  # type: ignore[arg-type]
        self.clock.t += 1e-3 * out.size
        return out

    def states(self, states: np.ndarray) -> np.ndarray:
        out = self.inner.states(states)
        self.clock.t += 1e-3 * out.size
        return out


def test_zs21_expansion_batches_end_by_the_deadline() -> None:
    """ZS21's deepening with every position costing 1 ms (fake clock; the LPs cost nothing on
    it): a batch's leaves are evaluated one at a time while the next fits at the measured
    pace, so the decision ends by the soft instant, not one batch of ~20 leaves x ~30
    children past it (the late moves the timing benchmark found at mt=0.1)."""
    clock = Ticker()
    game = FowSearchGame()
    search, belief, key = _black_after_e4(
        game, _TickingEvaluator(FowEvaluator(game, SimpleEvaluator()), clock))
    for budget_s in (0.1, 0.3):
        clock.t = 0.0
        d = Deadline(budget_s, budget_s, clock)
        out = search.decide(belief, key, np.random.default_rng(0),
                            ZS21Budget(seconds=None), 0, deadline=d)
        assert clock.t <= budget_s, (budget_s, clock.t)
        assert out.expansions > 0
