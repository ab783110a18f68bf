"""`ObscuroAgent`: the Obscuro engine of Zhang & Sandholm 2025 playing Fog of War chess.

One move, as Obscuro, Fig. 8 and docs/design.md, "One move of Obscuro's search" describe it:

1. **P update** (`observe`): the exact set P of positions consistent with the agent's
   observations (`caligo.fow.BeliefSet` through `FowBelief`), updated after every ply. Its memory
   cap (`ObscuroConfig.belief_cap` positions) is reported: past it P is a uniform subsample and
   the analysis says `belief_exact: false`.
2. **Subgame** (`act`): the KLUSS subgame of Fig. 9 from the previous tree, topped up with
   positions sampled from P (`caligo.search.construct.build_kluss`, run by `SearchAgent`).
3. **Search** with the move's budget: a fixed number of PCFR+ iterations (the deterministic
   schedule: machine-independent, bit-identical for a seed; for matches) or a time budget (one
   solver thread and `expanders` expander threads; the expanders stop first, section 3.4).
4. **Purify** (Fig. 8, C.8) and play.

The evaluator is Stockfish (`StockfishPool`, one depth-1 MultiPV call per expanded leaf, Obscuro,
appendix C.5) when the binary is found, the built-in `SimpleEvaluator` otherwise (`eval=auto`), or
either one on request. `Ablation` presets turn off one technique of Obscuro, section 4.1 each (or
all four, or swap in the simple evaluation).

**Time** (`caligo.agents.timing`): the move starts when the opponent's move is observed;
`MoveTimer.plan` turns the referee's clock (and the agent's own `budget` option) into the
move's limits, and every stage runs inside them: the P update of the opponent's ply in its
share (`belief_share`; cut short, P is the children of an evenly spread part of the parents,
completed after our move on the opponent's time, or reported as a subsample), the sampled
roots' evaluation up to the construction's share, then the search to the soft instant, never
past the hard one. Each move's analysis says how the time was split (`time_ms`) and what was
planned (`plan`). The move's work runs on the agent's watchdog thread (`caligo.limits.Watchdog`):
a stall that no poll can cut is answered at the plan's answer instant with the emergency move
(`overdue` in the analysis), and the work ends on the opponent's time.

P's memory cap: when the capped subsample loses every position consistent with an
observation, `FowBelief` (`caligo.agents.fow_belief`) replays the observations since the last
exact P with fresh sampling salts; if none survives, P is drawn afresh from the observation
(`caligo.fow.reseed`), and only if that fails too is it given up (the agent then plays its
emergency move, `caligo.agents.emergency`) rather than crashing. ZS21 shares the mechanism.

Stockfish processes: the search starts fresh expander threads at every move, and
`StockfishPool` binds an engine to a thread, so a plain pool would start new processes every
move. `SlotPool` (`caligo.fow.stockfish`) binds engines to expander *slots* instead (slot i of
every search reuses the same process); the agent's own calls (the subgame's roots) spread over
all `ObscuroConfig.slots` engines. The processes are started once per agent (its first game)
and get `ucinewgame` at every later one, so a game's scores are those of fresh processes and a
game starts without starting a process.

Options (`obscuro:key=value,...`, `ObscuroConfig.from_options`): see `OPTIONS_HELP`; the
settings live in `caligo.agents.obscuro_config`.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, belief_map
from caligo.agents.fow_belief import FowBelief
from caligo.agents.fow_search import (
    FowEvaluator,
    FowSearchGame,
    compact_arena,
    emergency_move,
    join_overdue,
    overdue_answer,
)
from caligo.agents.obscuro_config import (
    MIN_CAPACITY,
    MIN_TIMED_CAPACITY,
    NODES_PER_S_SIMPLE,
    NODES_PER_S_STOCKFISH,
    OPTIONS_HELP,
    Ablation,
    ObscuroConfig,
    ObscuroConfigError,
    parse_budget,
    stockfish_available,
)
from caligo.agents.obscuro_warm import warm_up
from caligo.agents.options import EvalChoice
from caligo.agents.resources import EngineResources
from caligo.agents.timing import (
    MovePlan,
    MoveTimer,
    TimeControl,
    collect_garbage,
)
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefConfig
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.fow.position import move_to_uci
from caligo.fow.stockfish import SlotPool, StockfishPool
from caligo.limits import Deadline, Limits, Overdue, Watchdog
from caligo.search.agent import SearchAgent
from caligo.search.config import Purification, SearchResult
from caligo.search.purify import purify

log = logging.getLogger(__name__)

__all__ = [
    "OPTIONS_HELP",
    "Ablation",
    "EvalChoice",
    "ObscuroAgent",
    "ObscuroConfig",
    "ObscuroConfigError",
    "SlotPool",
    "parse_budget",
    "stockfish_available",
]


class ObscuroSearchMismatch(CaligoError):
    """The searched infoset's moves differ from the referee's legal moves (a bug)."""


PONDER_MIN_MS = 200.0
"""After our move, a partial P update may go on for at least this long (the opponent's time),
and for twice our last move's planned time when that is longer; then the rest is given up."""


def _started(pool: SlotPool, slots: int) -> SlotPool:
    pool.start(slots)
    return pool


# --- the agent -------------------------------------------------------------------------------


def _first_half(plan: MovePlan) -> Limits:
    """The limits of the search from the true start before a game's first decision: an
    iteration count as it is, or half of the time left to the soft instant."""
    d = plan.deadline
    if plan.iterations is not None or d is None:
        return plan.limits
    now = d.now()
    mid = now + max(0.0, d.soft - now) / 2
    return Limits(deadline=d.capped(soft=mid, hard=mid))


def _mix_seed(*parts: int) -> int:
    seq = np.random.SeedSequence([p & 0xFFFFFFFF for p in parts])
    return int(seq.generate_state(1, dtype=np.uint64)[0] & np.uint64(0x7FFFFFFFFFFFFFFF))


class ObscuroAgent(AgentBase):
    """The Obscuro engine (module docstring). Build with `ObscuroAgent(config)` or, from the
    registry, `ObscuroAgent.from_options(options)`."""

    def __init__(self, config: ObscuroConfig | None = None, *,
                 clock: Callable[[], float] = time.perf_counter,
                 resources: EngineResources | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ObscuroConfig()
        self.timer = MoveTimer(self.config.time, self.config.budget, now=clock)
        self.resources = resources
        self._watchdog = Watchdog("obscuro-move")
        self._leaf: LeafEvaluator | None = None
        self._pool: SlotPool | None = None
        self._game: FowSearchGame | None = None
        self._belief: FowBelief | None = None
        self._search: SearchAgent | None = None
        self._reset_game(0)

    @classmethod
    def from_options(cls, options: Mapping[str, str],
                     resources: EngineResources | None = None) -> ObscuroAgent:
        """Build from registry options (`OPTIONS_HELP`); `resources`: a worker's shared
        Stockfish processes (`caligo.agents.resources`)."""
        return cls(ObscuroConfig.from_options(options), resources=resources)

    @property
    def evaluator_name(self) -> str:
        """"stockfish", "simple" or "simple-see": what the leaves are scored with."""
        leaf = self._leaf
        see = isinstance(leaf, SimpleEvaluator) and leaf.config.exchange
        return "stockfish" if isinstance(leaf, StockfishPool) else "simple-see" if see else "simple"

    # --- lifecycle -------------------------------------------------------------------------

    def _close_leaf(self) -> None:
        if self._leaf is not None and self.resources is None:  # a shared pool is the worker's
            self._leaf.close()
        self._leaf = None
        self._pool = None

    def _evaluator(self) -> LeafEvaluator:
        """The leaf evaluator: the Stockfish processes are started at the first game (or
        borrowed from the worker's shared resources) and given `ucinewgame` at each game (a
        game's scores are a fresh process's: a fixed-iteration game is a function of its seed)."""
        cfg = self.config
        if self._leaf is None:
            if cfg.uses_stockfish:
                if self.resources is not None:
                    self._pool = self.resources.get(
                        ("obscuro", cfg.stockfish, cfg.slots),
                        lambda: _started(SlotPool(cfg.stockfish), cfg.slots))
                else:
                    self._pool = _started(SlotPool(cfg.stockfish), cfg.slots)
                    self._leaf = self._pool
                    return self._leaf
                self._leaf = self._pool
            else:
                self._leaf = cfg.builtin.builtin_evaluator()
        return self._leaf

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start a game: P = {start}, no tree, the evaluator ready, the arenas allocated and
        every kernel loaded (all of it before the referee's clock runs)."""
        self._join_overdue()
        super().new_game(color, start_fen, time_control, seed)
        cfg = self.config
        leaf = self._evaluator()
        self.timer.new_game(time_control)
        game = FowSearchGame(start_fen)
        self._game = game
        self._belief = FowBelief(game, self.color, BeliefConfig(max_positions=cfg.belief_cap,
                                                               seed=seed & 0xFFFFFFFF,
                                                               threads=cfg.update_threads),
                                 last_seen=cfg.last_seen, weigh_roots=cfg.weigh_roots)
        slots = itertools.count()
        pool = self._pool

        def factory() -> FowEvaluator:  # called once in each expander thread of a search
            if pool is not None:
                pool.bind(next(slots) % cfg.expanders)
            return FowEvaluator(game, leaf)

        self._search = SearchAgent(game, self._belief, FowEvaluator(game, leaf),
                                   cfg.search_config(), evaluator_factory=factory,
                                   capacity=self._capacity(time_control))
        warm_up(self._pool)  # off the clock
        if self._pool is not None:
            self._pool.new_game()  # after the warm-up: this game starts as a fresh process
        game_seed = _mix_seed(cfg.seed, seed, self.color)
        self._search.new_game(self.color, game_seed)
        self._search.prepare()
        self._reset_game(game_seed)

    def _reset_game(self, game_seed: int) -> None:
        """The per-game state: the game's generator, counters, and no pending repair."""
        self._rng = np.random.default_rng(game_seed)
        self._late_rng = np.random.default_rng(game_seed ^ 0x5DEECE66D)
        self._late = 0
        self._overdue: Overdue[Decision] | None = None  # joined before any reset
        self._fallbacks = 0
        self._belief_ms = 0.0
        self._ponder_ms = 0.0
        self._ponder_done = True
        self._prev_map: dict[str, Any] | None = None
        self._picture: dict[str, Any] | None = None
        self._map_ms = 0.0

    def _capacity(self, tc: TimeControl) -> int:
        """Arena rows for this game's budget, at most `max_nodes`: an iteration count needs
        64 rows per expansion; a time budget four times the growth its longest move expects."""
        cfg = self.config
        iters = self.timer.iterations(tc)
        if iters is not None:
            need = 64 * cfg.expand_ratio * iters
            return int(min(cfg.max_nodes, max(MIN_CAPACITY, need + MIN_CAPACITY)))
        rate = NODES_PER_S_STOCKFISH if cfg.uses_stockfish else NODES_PER_S_SIMPLE
        need = 4.0 * rate * self.timer.expected_ms(tc) / 1000.0
        return int(min(cfg.max_nodes, need + MIN_TIMED_CAPACITY))

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """The opponent's ply starts our move (its P update is queued for `act`, inside the
        move's budget); after our own ply, a partial update is completed on the opponent's
        time, then P follows our move."""
        self._join_overdue()  # an overdue move's work ends first (off the clock)
        super().observe(observation, own_move)
        assert self._search is not None and self._belief is not None and self._game is not None
        if own_move is None:
            self.timer.start()
            self._belief.expect(observation)
            self._search.observe(observation_key(observation), None)  # queued: see act
            return
        t0 = time.perf_counter()
        self._ponder()
        self._belief.expect(observation)
        # P's update (`FowBelief`: a lost subsample is repaired or given up there)
        self._search.observe(observation_key(observation), own_move)
        if not self._belief.lost:  # off the clock: the belief the next analysis reports as "prev"
            self._prev_map = belief_map(self._belief.set)
            last = self.timer.last
            if last is not None and last.iterations is None:  # a timed update comes next
                self._belief.prepare()
        eng = self._search.engine
        if eng is not None:  # off the clock: drop store rows the tree no longer holds
            compact_arena(self._game, eng.arena)
        collect_garbage()  # off the clock too (caligo.agents.timing)
        self._ponder_ms += 1000.0 * (time.perf_counter() - t0)

    def _ponder(self) -> None:
        """Complete a partial P update after our move (the opponent's time), for at least
        `PONDER_MIN_MS` and twice our last planned move; past that, P keeps what it has and
        says so."""
        assert self._belief is not None
        if not self._belief.partial or self._belief.lost:
            return
        last = self.timer.last
        deadline = None
        if last is not None and last.iterations is None:
            deadline = Deadline.within(max(PONDER_MIN_MS, 2.0 * last.optimum_ms) / 1000.0,
                                       now=self.timer.now)
        self._ponder_done = self._belief.finish(deadline)

    def _settle_belief(self, plan: MovePlan) -> None:
        """The queued P update of the opponent's ply, inside the move's belief stage."""
        assert self._belief is not None
        if not self._belief.queued:
            return
        self._belief.settle(plan.belief_deadline, plan.iterations is None, plan.repair_deadline)

    def force(self, move: int) -> None:
        """Play `move` at this turn instead of searching."""
        assert self._search is not None
        self._join_overdue()
        self._search.force(int(move))

    def close(self) -> None:
        """Stop the Stockfish processes (after an overdue move's work has ended)."""
        self._join_overdue()
        self._watchdog.close()
        self._close_leaf()

    # --- deciding --------------------------------------------------------------------------

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Decide within the move's plan: P's update, the subgame, the search, purification
        (module docstring). A timed move's work runs under the watchdog
        (`caligo.limits.Watchdog`): if it is not done at the plan's answer instant, the agent
        answers with its emergency move and the work ends on the opponent's time."""
        assert self._search is not None and self._belief is not None
        if not legal:
            raise ValueError("act needs at least one legal move")
        self._join_overdue()
        plan = self.timer.plan(clock, len(legal), self._belief.size_hint())
        by = plan.answer_by
        if by is None:
            return self._finish(plan, self._decide(plan, legal))
        out = self._watchdog.run_by(lambda: self._decide(plan, legal), by, self.timer.now)
        if isinstance(out, Overdue):
            self._overdue = out
            self._late += 1
            answer = overdue_answer("obscuro", out, plan.answer_ms, self.history, self.color,
                                    legal, self._late_rng, self._late)
            return self._finish(plan, answer, overdue=True)
        return self._finish(plan, out)

    def _decide(self, plan: MovePlan, legal: Sequence[int]) -> Decision:
        """The move's work (on the watchdog's thread for a timed move)."""
        assert self._search is not None and self._belief is not None
        t0 = time.perf_counter()
        self._settle_belief(plan)
        t_belief = time.perf_counter()
        self._belief_ms = 1000.0 * (t_belief - t0)
        if self._belief.lost:
            return self._without_belief(legal)
        # the belief's picture for the review, before the search: its cost (about 1 ms at
        # |P| = 10^6) comes out of the search's time, never past the move's deadline
        self._picture = belief_map(self._belief.set)
        self._map_ms = 1000.0 * (time.perf_counter() - t_belief)
        sa = self._search
        warm_ms = 0.0
        try:
            if sa.engine is None and self.history and sa.wants_warm_start:
                # a first decision after the start searches the start first
                # (FirstDecision.TRUE_START); under a deadline that takes half the search
                tw = time.perf_counter()
                sa.warm_start(_first_half(plan))
                warm_ms = 1000.0 * (time.perf_counter() - tw)
            res = sa.act(plan.limits, construct=plan.construct_deadline).search
            move, play = self._choose(res, legal)
        except Exception as exc:
            # a failing search must not lose the game: play a legal move, log it, and let the
            # next decision sample its roots afresh (the tree may not match the game any more)
            log.exception("obscuro: search failed; playing a fallback move")
            return self._fallback(legal, exc)
        value = res.value if math.isfinite(res.value) else None
        policy = {int(a): float(p) for a, p in zip(res.actions.tolist(), play.tolist(),
                                                  strict=True) if p > 0.0}
        info = self._analysis(res, plan, warm_ms)
        return Decision(int(move), policy=policy, value=value, info=info)

    def _join_overdue(self) -> None:
        """Let an overdue move's work end (off the clock: called after our own ply and before
        anything touches P or the tree); its decision is dropped, the move played was the
        emergency one (the tree follows the played move: `observe` names it)."""
        out, self._overdue = self._overdue, None
        if out is None:
            return
        join_overdue("obscuro", out)
        self._picture = None  # the overdue work's, of a move answered without it
        self._map_ms = 0.0

    def _finish(self, plan: MovePlan, decision: Decision, overdue: bool = False) -> Decision:
        """End the move: learn from its time, and add the time split and the belief's
        pictures (`caligo.agents.belief_map`) to the analysis (not for an overdue move: its
        work is still running)."""
        info = dict(decision.info)
        if overdue:
            total_ms = self.timer.finish(plan)
            info["time_ms"] = {"total": round(total_ms, 1)}
            info["plan"] = plan.to_info()
            return replace(decision, info=info)
        if self._picture is not None:
            info[BELIEF_MAP] = self._picture
        if self._prev_map is not None:
            info[BELIEF_MAP_PREV] = self._prev_map
        self._picture = self._prev_map = None
        total_ms = self.timer.finish(plan)
        split = dict(info.get("time_ms", {}))
        split["belief"] = round(self._belief_ms, 1)
        split["belief_map"] = round(self._map_ms, 2)
        self._map_ms = 0.0
        split["total"] = round(total_ms, 1)
        if self._ponder_ms:
            split["after_move"] = round(self._ponder_ms, 1)  # on the opponent's time
        info["time_ms"] = split
        info["plan"] = plan.to_info()
        if self._belief is not None and self._belief.cut:
            info["belief_cut"] = self._belief.cut
        self._ponder_ms = 0.0
        return replace(decision, info=info)

    def _choose(self, res: SearchResult, legal: Sequence[int]) -> tuple[int, np.ndarray]:
        """Sample the move from the purified policy (or Obscuro's "purification off" one)."""
        assert self._search is not None
        if self.config.ablation.purifies:
            play = res.play
        else:  # mix over every stable action (and a*), whatever the gadget, no top-3 cut
            play = purify(res.policy, res.stable, 0.0, Purification.STABLE_TOP3,
                          max_support=max(1, res.policy.size))
        total = float(play.sum())
        if not total > 0.0 or not np.all(np.isfinite(play)):
            play = np.zeros_like(res.policy)
            play[int(np.argmax(res.policy))] = 1.0
            total = 1.0
        k = int(self._rng.choice(play.size, p=play / total))
        move = int(res.actions[k])
        legal_set = set(int(m) for m in legal)
        if move not in legal_set or set(res.actions.tolist()) != legal_set:
            raise ObscuroSearchMismatch(
                f"searched moves {sorted(res.actions.tolist())[:8]}... differ from the legal "
                f"moves {sorted(legal_set)[:8]}...")
        self._search.force(move)
        return move, play / total

    def _without_belief(self, legal: Sequence[int]) -> Decision:
        """P is unavailable: the emergency move, the tree dropped (a replayed P starts afresh)."""
        move = emergency_move(self.history, self.color, legal, self._rng)
        assert self._search is not None and self._belief is not None
        self._search.force(move)
        self._search.reset_tree()
        return Decision(move, info={"belief_lost": True, "repairs": self._belief.repairs})

    def _fallback(self, legal: Sequence[int], exc: BaseException) -> Decision:
        """The emergency move after a failed search; the tree is dropped (the next decisions
        sample their roots afresh)."""
        assert self._search is not None
        move = emergency_move(self.history, self.color, legal, self._rng)
        self._search.force(move)
        self._search.reset_tree()
        self._fallbacks += 1
        info = {"fallback": f"{type(exc).__name__}: {exc}"[:300], "fallbacks": self._fallbacks}
        return Decision(move, info=info)

    def _analysis(self, res: SearchResult, plan: MovePlan, warm_ms: float) -> dict[str, Any]:
        """The per-move analysis (`Decision.info`): belief, tree, search and time split."""
        assert self._belief is not None and self._search is not None
        eng = self._search.engine
        run_ms = 1000.0 * (res.time.solve + res.time.expand)
        elapsed_ms = 1000.0 * res.time.total + warm_ms
        bel = self._belief.set
        order = np.argsort(-res.policy, kind="stable")
        top = {move_to_uci(int(res.actions[i])): round(float(res.policy[i]), 4)
               for i in order[:8].tolist() if res.policy[i] >= 1e-3}
        t = res.time
        info: dict[str, Any] = {
            "belief": len(bel),
            "belief_exact": bool(bel.exact),
            "belief_seen": int(bel.size_seen),
            "belief_cap": self.config.belief_cap,
            "belief_mb": round(bel.nbytes / 2**20, 2),
            "nodes": res.nodes,
            "infosets": res.infosets,
            "carried_nodes": res.carried_nodes,
            "carried_infosets": res.carried_infosets,
            "roots": res.roots,
            "sampled": res.sampled,
            "depth": res.depth,
            "iterations": res.iterations,
            "expansions": res.expansions,
            "t_half": res.t_half,
            "value": round(res.value, 4) if math.isfinite(res.value) else None,
            "policy": top,
            "stable": int(res.stable.sum()),
            "gadget": res.gadget.value,
            "p_max": round(res.p_max, 4),
            "evaluator": self.evaluator_name,
            "ablation": self.config.ablation.value,
            "budget": (f"iters={plan.iterations}" if plan.iterations is not None
                       else f"{plan.optimum_ms:.0f}ms"),
            "ms": round(elapsed_ms, 1),
            "time_ms": {
                "belief": round(self._belief_ms, 1),
                "warm_start": round(warm_ms, 1),
                "construct": round(1000 * t.construct, 1),
                "solve": round(1000 * t.solve, 1),
                "expand": round(1000 * t.expand, 1),
                "solve_plus_expand": round(run_ms, 1),  # two threads: not wall time
                "search": round(1000 * (res.time.total - res.time.construct), 1),
                "search_total": round(elapsed_ms, 1),
            },
        }
        if plan.deadline is not None and plan.iterations is None and eng is not None:
            # > 0: the search ended after its soft instant
            info["late_ms"] = round(1000.0 * (eng.run_end - plan.deadline.soft), 1)
        if self._pool is not None:
            st = self._pool.stats()  # this game's calls (the pool is reset at each game)
            info["stockfish"] = {"leaf_calls": st.leaf_calls, "own_calls": st.own_calls,
                                 "restarts": st.restarts, "fallbacks": st.fallbacks,
                                 "capped": st.capped}
        if self._fallbacks:
            info["fallbacks"] = self._fallbacks
        if self._belief is not None:
            info.update(self._belief.report())
        return info
