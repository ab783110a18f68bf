"""The Obscuro agent's warm-up: every compiled kernel a move can reach is loaded before the
first clock runs (numba loads a cached kernel at its first call while holding Python's lock,
10-60 ms each, which inside a timed move no watchdog can give back).

Once per process, off the clock: a few plies between two tiny searches with the built-in
evaluator in each schedule (so re-rooting, sampling, carrying and compaction all run), the
belief's rare paths (`load_rare_kernels`), and one Stockfish leaf and root evaluation through
the agent's own pool. The warm-up is no game: a search of it that fails with a `SearchError`
is logged with its reason and the rest of the warm-up goes on (a kernel only that game would
have reached then loads at its first use), so an engine process does not die of it before
its first move.
"""

from __future__ import annotations

import functools
import logging

import numpy as np

from caligo.agents.fow_belief import FowBelief
from caligo.agents.fow_search import FowEvaluator, FowSearchGame, compact_arena
from caligo.fow.belief_kernels import load_rare_kernels
from caligo.fow.evaluate import SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.stockfish import StockfishPool
from caligo.search.agent import SearchAgent
from caligo.search.config import Iterations, Schedule, SearchConfig, SearchError, Seconds

log = logging.getLogger(__name__)

WARMED: set[str] = set()
"""Which warm-ups this process has run."""

SCHEDULES = ((Schedule.DETERMINISTIC, Iterations(6)), (Schedule.THREADED, Seconds(0.005)))
"""The two tiny searches: each schedule once."""


def _same(ev: FowEvaluator) -> FowEvaluator:
    return ev


def warm_up(pool: StockfishPool | None) -> None:
    """Run the warm-up (module docstring) once per process: the searches, then Stockfish
    through `pool` (its caches are cleared after, by its `new_game`)."""
    if "search" not in WARMED:
        for schedule, budget in SCHEDULES:
            try:
                _play(schedule, budget)
            except SearchError as exc:
                log.warning("the warm-up's %s search failed (%s); warming up goes on, and a "
                            "kernel only it reaches loads at its first use", schedule.value,
                            exc)
        load_rare_kernels()  # the belief's paths six plies do not reach
        WARMED.add("search")
    if pool is not None and "stockfish" not in WARMED:
        game = FowSearchGame()
        batch = game.expand(np.array([0]))
        kids = game.positions(batch.state)
        pool.children(game.positions(np.array([0]))[0], kids, batch.action.astype(np.uint16))
        pool.evaluate(kids[:2])
        WARMED.add("stockfish")


def _play(schedule: Schedule, budget: Iterations | Seconds) -> None:
    """Six plies between two searches in `schedule` with `budget` a move."""
    from caligo.fow.game import Game
    from caligo.fow.observation import observe

    cfg = SearchConfig(budget=budget, schedule=schedule, max_nodes=8192, min_roots=4,
                       expansions=4 if schedule is Schedule.DETERMINISTIC else None)
    seats = []
    for seat in (0, 1):
        game = FowSearchGame()  # one store per player: compaction renumbers it
        ev = FowEvaluator(game, SimpleEvaluator())
        belief = FowBelief(game, seat)
        sa = SearchAgent(game, belief, ev, cfg, evaluator_factory=functools.partial(_same, ev))
        sa.new_game(seat, 0)
        seats.append((sa, belief, game))
    truth = Game()
    for _ in range(6):
        mover = truth.turn
        sa, _, game = seats[mover]
        move = int(sa.act().action)
        truth.push(move)
        for seat, (agent, belief, _) in enumerate(seats):
            obs = observe(truth.position, seat)
            belief.expect(obs)
            agent.observe(observation_key(obs), move if seat == mover else None)
        eng = sa._search
        if eng is not None:
            compact_arena(game, eng.arena)
