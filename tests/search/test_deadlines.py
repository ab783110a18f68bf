"""Every loop of a search honours its deadline, on an injected clock.

The solver and the expanders of the threaded schedule, the deterministic schedule's guard and
the solve of a fully expanded tree are given 50 ms of `time.process_time` (another process's
load does not advance it, so these hold on a busy machine) and must return within 50 ms plus
a stated tolerance; the subgame's root sampling runs on a fake clock that an evaluator moves on
as Stockfish's calls take time. The expected behaviour is the limits' contract
(`caligo.limits`), not a timing of ours.
"""

from __future__ import annotations

import time

import numpy as np

from caligo.core.games import load_game
from caligo.limits import Deadline, Limits
from caligo.search.config import Expansion, Iterations, Schedule, SearchConfig
from caligo.search.construct import ROOT_BATCH, evaluate_until
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.game import TreeGame
from tests.clocks import Ticker
from tests.search.conftest import util_scale

CPU = time.process_time
TOLERANCE_S = 0.03
"""Past the deadline: the iteration batch in flight (sized to about 1 ms), the expanders'
batch in flight and their join, and committing what they queued."""


def _engine(schedule: Schedule, expansion: Expansion = Expansion.ONE_SIDED
            ) -> GrowingTreeSearch:
    tree = load_game("leduc_poker")
    cfg = SearchConfig(budget=Iterations(10), expansions=None, expand_ratio=0.25,
                       schedule=schedule, expanders=1, expansion=expansion)
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0,
                            evaluator_factory=lambda: PerfectInfoEvaluator(tree),
                            capacity=3 * tree.num_nodes + 600, util_scale=util_scale(tree))
    eng.start(0)
    return eng


def _timed(eng: GrowingTreeSearch, limits: Limits) -> float:
    t0 = CPU()
    eng.run(1, limits)
    return CPU() - t0


def test_a_threaded_search_stops_at_its_deadline() -> None:
    eng = _engine(Schedule.THREADED)
    spent = _timed(eng, Limits(deadline=Deadline.within(0.05, now=CPU)))
    assert eng.arena.iteration > 0
    assert spent <= 0.05 + TOLERANCE_S, spent


def test_an_iteration_count_stops_at_its_guard() -> None:
    """A count far too large for the time (10^9 iterations) with a 50 ms guard: the
    deterministic schedule stops at the guard."""
    eng = _engine(Schedule.DETERMINISTIC)
    spent = _timed(eng, Limits(iterations=10**9, deadline=Deadline.within(0.05, now=CPU)))
    assert 0 < eng.arena.iteration < 10**9
    assert spent <= 0.05 + TOLERANCE_S, spent


def test_a_fully_expanded_solve_stops_at_its_deadline() -> None:
    eng = _engine(Schedule.DETERMINISTIC, Expansion.FULL)
    eng.expand_full()  # the expansion is not the part under test
    for limits in (Limits(deadline=Deadline.within(0.05, now=CPU)),
                   Limits(iterations=10**9, deadline=Deadline.within(0.05, now=CPU))):
        spent = _timed(eng, limits)
        assert spent <= 0.05 + TOLERANCE_S, spent


class SlowEvaluator:
    """A leaf evaluator that, like a Stockfish call, takes 1 ms per state (on a fake clock)."""

    def __init__(self, clock: Ticker) -> None:
        self.clock = clock
        self.calls = 0

    def states(self, states: np.ndarray) -> np.ndarray:
        self.clock.t += 1e-3 * len(states)
        self.calls += len(states)
        return np.zeros(len(states))


def test_root_sampling_stops_at_its_deadline() -> None:
    """256 sampled roots at 1 ms each, given 50 ms: the evaluation stops after the batch that
    reaches the deadline (16 roots a batch), and keeps at least the roots it must."""
    clock = Ticker()
    ev = SlowEvaluator(clock)
    states = np.arange(256, dtype=np.int64)
    vals = evaluate_until(ev, states, Deadline(0.05, 0.05, clock))  # type: ignore[arg-type]
    assert vals.size == ev.calls and 50 <= vals.size < 50 + ROOT_BATCH
    assert clock.t <= 0.05 + ROOT_BATCH * 1e-3
    clock.t = 10.0  # already past: only the roots it must keep
    ev.calls = 0
    vals = evaluate_until(ev, states, Deadline(1.0, 1.0, clock), keep_min=1)  # type: ignore[arg-type]
    assert vals.size == ROOT_BATCH  # one batch holds the root it must keep
    # no deadline: every root
    assert evaluate_until(ev, states, None).size == 256  # type: ignore[arg-type]
