"""`ZS21Agent`: the ZS21 dark chess agent (Zhang & Sandholm 2021, appendix D) for FoW chess.

Per game: a `FowSearchGame` (the position store), a `FowBelief` (the exact set P, memory cap
`BeliefConfig.max_positions`), a `ZS21Search` (the trunk) and a leaf evaluator (Stockfish depth 1
through `SlotPool`, tanh(cp / 600), Zhang & Sandholm 2021, appendix D.1; or the built-in
`SimpleEvaluator`). Per ply, `observe` updates P (exact; not counted in the move's time, as in
Obscuro, appendix D footnote 20) and our observation-sequence key. Per move, `act` turns the
referee's clock into a budget, runs one `ZS21Search.decide` (subgame from the previous trunk plus
particles, deepening with exact LP solves, the Maxmargin/Resolve switch), samples the move from the
exact strategy at our infoset, and reports diagnostics in `Decision.info`.

Time (`caligo.agents.timing`, policy `ZS21`): the move starts when the opponent's move is
observed; the referee's clock becomes the move's plan (R / 30 + 0.75 I for a clock, at most
0.2 R; a move time as given; an iteration count is a deterministic budget of leaf expansions),
the P update of the opponent's ply runs in its share of it, the particles' evaluation up to
the construction's share, the deepening loop to the soft instant and HiGHS never past the hard
one. The overhead past the plan (the final LP, a loaded machine's stalls) is learned by the
`MoveTimer`, as every engine's is; a timed move's work runs on the agent's watchdog thread
(`caligo.limits.Watchdog`), and a stall past the plan's answer instant is answered with the
emergency move while the work ends on the opponent's time.

Registered as `zs21` (options: budget=mt=1|iters=N|none (the agent's own budget: an iteration
count replaces the referee's, a move time is used inside the game clock), evaluator=auto|
stockfish|simple, seed=N, particles=L, penalty=text|algorithm|off, max_nodes=N,
max_positions=N).
"""

from __future__ import annotations

import functools
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
from caligo.agents.options import EvalChoice, OptionError, OptionReader
from caligo.agents.resources import EngineResources
from caligo.agents.timing import (
    UNTIMED,
    MovePlan,
    MoveTimer,
    TcKind,
    TimeControl,
    TimeControlError,
    collect_garbage,
)
from caligo.agents.timing import ZS21 as ZS21_POLICY
from caligo.agents.zs21.config import Penalty, ZS21Budget, ZS21Config, ZS21ConfigError
from caligo.agents.zs21.search import ZS21Search
from caligo.agents.zs21.tree import decision_seed
from caligo.fow.belief import BeliefConfig
from caligo.fow.belief_kernels import load_rare_kernels
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator, decided
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.fow.stockfish import fen_bytes
from caligo.limits import Deadline, Overdue, Watchdog
from caligo.search.construct import start_key
from caligo.search.game import KeyMode
from caligo.search.intern import mix_key

__all__ = ["EvaluatorChoice", "ZS21Agent", "own_budget"]

log = logging.getLogger(__name__)

EvaluatorChoice = EvalChoice
"""The leaf evaluator: the one choice of every engine (`caligo.agents.options.EvalChoice`)."""


def own_budget(budget: ZS21Budget) -> TimeControl:
    """The agent's own budget for a configuration's `ZS21Budget`: a leaf-expansion count with
    no time limit is an iteration budget (deterministic); anything else leaves the referee's
    clock in charge (`ZS21Budget.seconds` is then the move time when the referee gives none)."""
    if budget.seconds is None and budget.expansions is not None:
        return TimeControl(TcKind.ITERATIONS, iterations=max(1, int(budget.expansions)))
    return UNTIMED


@functools.cache
def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel a decision uses, before a clock runs.

    A first decision without numba's cache compiles for 15 to 40 s, which would lose a timed
    game on move one; building the agent is not timed (the web server and `caligo engine` build
    it at start-up), so the first agent of a process does it: a few tiny searches as Black with
    the built-in evaluator (0.5 s once the cache is written).
    """
    from caligo.fow.game import Game
    from caligo.fow.observation import observe

    game = FowSearchGame()
    search = ZS21Search(game, FowEvaluator(game, SimpleEvaluator()),
                        ZS21Config(particles=8, max_nodes=2000), 1)
    search.start(0)
    belief = FowBelief(game, 1)
    truth = Game()
    key = start_key(int(game.describe(np.array([0])).obs[0, 1]), KeyMode.INCREMENTAL)
    for uci in ("e2e4", "e7e5", "d2d4"):
        truth.push_uci(uci)
        obs = observe(truth.position, 1)
        own = truth.moves[-1] if truth.ply % 2 == 0 else None
        belief.update(obs, own)
        key = int(mix_key(np.uint64(key), np.int64(-1 if own is None else own),
                          np.uint64(observation_key(obs))))
        if truth.ply % 2 == 1:
            search.decide(belief, key, np.random.default_rng(0),
                          ZS21Budget(seconds=None, expansions=6), 0)
    states = search.arena.nodes.state[:2].astype(np.int64)
    game.forcing(states, states, search.arena.nodes.action[:2])
    compact_arena(game, search.arena)
    # what the searches above did not reach: the Stockfish leaf's FEN, the decided codes of
    # its root positions, and the belief's rare paths
    positions = game.positions(np.array([0]))
    fen_bytes(positions[0])
    decided(positions)
    load_rare_kernels()


class ZS21Agent(AgentBase):
    """The ZS21 agent for FoW chess (module docstring)."""

    def __init__(self, config: ZS21Config | None = None,
                 evaluator: EvaluatorChoice = EvaluatorChoice.AUTO,
                 belief: BeliefConfig | None = None, *,
                 clock: Callable[[], float] = time.perf_counter,
                 resources: EngineResources | None = None,
                 stockfish: str | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ZS21Config()
        if not isinstance(evaluator, EvaluatorChoice):
            raise ZS21ConfigError(f"evaluator must be an EvaluatorChoice, got {evaluator!r}")
        self.evaluator_choice = evaluator
        self.stockfish_path = stockfish  # None: found on PATH or in /usr/games
        self.belief_config = belief if belief is not None else BeliefConfig()
        self.leaf: LeafEvaluator | None = None
        self.game: FowSearchGame | None = None
        self.belief: FowBelief | None = None
        self.search: ZS21Search | None = None
        self.key = 0
        self.ply = 0
        untimed = self.config.budget.seconds
        policy = ZS21_POLICY if untimed is None else replace(ZS21_POLICY,
                                                              untimed_ms=1000.0 * untimed)
        self.timer = MoveTimer(policy, own_budget(self.config.budget), now=clock)
        self.last_info: dict[str, Any] = {}
        self.resources = resources
        self._prev_map: dict[str, Any] | None = None
        self._watchdog = Watchdog("zs21-move")
        self._overdue: Overdue[Decision] | None = None
        self._late = 0
        self._late_rng = np.random.default_rng(0)
        warm_up()  # once per process

    @classmethod
    def from_options(cls, options: Mapping[str, str],
                     resources: EngineResources | None = None) -> ZS21Agent:
        """Build from registry options (module docstring); ValueError names a bad one."""
        opts = OptionReader("zs21", options, (
            "budget", "eval", "seed", "particles", "penalty", "nodes", "belief", "stockfish"),
            aliases={"evaluator": "eval", "max_nodes": "nodes", "max_positions": "belief"})
        changes: dict[str, Any] = {}
        try:
            if "budget" in opts:
                tc = TimeControl.parse(opts.text("budget"))
                if tc.kind is TcKind.ITERATIONS:
                    changes["budget"] = ZS21Budget(seconds=None, expansions=tc.iterations)
                elif tc.kind is TcKind.MOVETIME:
                    changes["budget"] = ZS21Budget(seconds=tc.movetime_ms / 1000.0,
                                                   expansions=None)
                elif tc.kind is not TcKind.NONE:
                    raise ValueError(f"zs21: budget must be mt=SECONDS, iters=N or none, got "
                                     f"{opts.text('budget')!r}")
            for key, name, least in (("seed", "seed", None), ("particles", "particles", 1),
                                     ("nodes", "max_nodes", None)):
                if key in opts:  # particles=0: no root once nothing is carried
                    changes[name] = opts.integer(key, least)
            if "penalty" in opts:
                changes["penalty"] = opts.choice("penalty", Penalty)
            belief = BeliefConfig(max_positions=opts.integer("belief", 1) if "belief" in opts
                                  else BeliefConfig().max_positions)
            evaluator = opts.choice("eval", EvalChoice) if "eval" in opts else EvalChoice.AUTO
            path = opts.text("stockfish") if "stockfish" in opts else None
            if path is not None and not evaluator.builtin:  # not AUTO's built-in fallback
                from caligo.fow.stockfish import StockfishNotFoundError, find_stockfish

                try:
                    find_stockfish(path)
                except StockfishNotFoundError as exc:
                    raise ValueError(f"{exc} (option stockfish)") from None
            return cls(replace(ZS21Config(), **changes), evaluator, belief,
                       resources=resources, stockfish=path)
        except OptionError:
            raise
        except (TimeControlError, ZS21ConfigError) as exc:
            raise ValueError(str(exc)) from None
        except ValueError as exc:
            raise ValueError(f"zs21: invalid option value ({exc})") from None

    # --- life cycle --------------------------------------------------------------------------

    def _leaf(self) -> LeafEvaluator:
        if self.leaf is None:
            choice = self.evaluator_choice
            if not choice.builtin:
                from caligo.fow.stockfish import (
                    SlotPool,
                    StockfishConfig,
                    StockfishNotFoundError,
                    find_stockfish,
                )

                path = self.stockfish_path

                def pool() -> SlotPool:  # one process, whichever thread asks (the move's
                    # work runs on the watchdog's thread, the game's set-up on the caller's)
                    return SlotPool(StockfishConfig(path=path))

                try:
                    find_stockfish(path)
                    self.leaf = (pool() if self.resources is None else
                                 self.resources.get(("zs21", path), pool))
                    if self.resources is not None:
                        self.leaf.new_game()
                except StockfishNotFoundError:
                    if choice is EvaluatorChoice.STOCKFISH:
                        raise
                    log.warning("zs21: Stockfish not found, using the built-in evaluator")
            if self.leaf is None:
                self.leaf = choice.builtin_evaluator()
        elif hasattr(self.leaf, "new_game"):
            self.leaf.new_game()  # a Stockfish pool: ucinewgame, empty caches
        return self.leaf

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start a game: P = {start}, the trunk = the start node (Algorithm 15 lines 2-4)."""
        self._join_overdue()
        super().new_game(color, start_fen, time_control, seed)
        self.timer.new_game(time_control)
        if self.game is None:
            self.game = FowSearchGame(start_fen)
        else:
            self.game.reset(start_fen)
        game = self.game
        cfg = replace(self.config, seed=decision_seed(self.config.seed, int(seed)))
        self._late_rng = np.random.default_rng(cfg.seed ^ 0x5DEECE66D)
        self._late = 0
        leaf = self._leaf()
        if self.search is None or self.search.searcher != self.color:
            self.search = ZS21Search(game, FowEvaluator(game, leaf), cfg, self.color)
        else:
            self.search.config = cfg
        self.search.start(game.start_state())
        self.belief = FowBelief(game, self.color, self.belief_config)
        obs = int(game.describe(np.array([game.start_state()])).obs[0, self.color])
        self.key = start_key(obs, KeyMode.INCREMENTAL)
        self.ply = 0
        self._prev_map = None

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Update our observation-sequence key; the opponent's ply starts our move (its P
        update is queued for `act`); after our own ply a partial update is completed on the
        opponent's time, then P follows our move."""
        self._join_overdue()  # an overdue move's work ends first (off the clock)
        super().observe(observation, own_move)
        assert self.belief is not None, "observe before new_game"
        if own_move is None:
            self.timer.start()
        else:
            last = self.timer.last
            deadline = None
            if last is not None and last.iterations is None:
                deadline = Deadline.within(max(0.2, 0.002 * last.optimum_ms),
                                           now=self.timer.now)
            self.belief.finish(deadline)
        self.belief.update(observation, own_move)
        if own_move is not None:  # off the clock: the belief the next analysis reports as "prev"
            self._prev_map = belief_map(self.belief.set)
            last = self.timer.last
            if last is not None and last.iterations is None:  # a timed update comes next
                self.belief.prepare()
            collect_garbage()  # and the process's garbage (caligo.agents.timing)
        act = -1 if own_move is None else int(own_move)
        self.key = int(mix_key(np.uint64(self.key), np.int64(act),
                               np.uint64(observation_key(observation))))
        self.ply += 1

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Search within the move's plan and sample the move (module docstring). A timed
        move's work runs under the watchdog (`caligo.limits.Watchdog`): past the plan's answer
        instant the agent plays its emergency move and the work ends on the opponent's time."""
        assert self.belief is not None, "act before new_game"
        if not legal:
            raise ValueError("act needs at least one legal move")
        self._join_overdue()
        plan = self.timer.plan(clock, len(legal), self.belief.size_hint())
        by = plan.answer_by
        out = self._decide(plan, legal) if by is None else self._watchdog.run_by(
            lambda: self._decide(plan, legal), by, self.timer.now)
        if isinstance(out, Overdue):
            self._overdue = out
            self._late += 1
            out = overdue_answer("zs21", out, plan.answer_ms, self.history, self.color, legal,
                                 self._late_rng, self._late)
        total_ms = self.timer.finish(plan)
        info = dict(out.info)
        info["time_ms"] = {**info.get("time_ms", {}), "total": round(total_ms, 1)}
        info["plan"] = plan.to_info()
        if not info.get("overdue"):
            self.last_info = info
        return replace(out, info=info)

    def _join_overdue(self) -> None:
        """Let an overdue move's work end (off the clock: after our own ply, before anything
        touches P or the trunk); its decision is dropped."""
        out, self._overdue = self._overdue, None
        join_overdue("zs21", out)

    def _decide(self, plan: MovePlan, legal: Sequence[int]) -> Decision:
        """The move's work (on the watchdog's thread for a timed move)."""
        search, belief, game = self.search, self.belief, self.game
        assert search is not None and belief is not None and game is not None, "act before new_game"
        t0 = time.perf_counter()
        belief.settle(plan.belief_deadline, spread=plan.iterations is None,
                      repair_by=plan.repair_deadline)
        belief_ms = 1000.0 * (time.perf_counter() - t0)
        if belief.lost:  # the capped subsample of P lost the truth and no replay found it
            move = emergency_move(self.history, self.color, legal, self._late_rng)
            return Decision(move, info={"belief_lost": True, "repairs": belief.repairs,
                                        "time_ms": {"belief": round(belief_ms, 1)}})
        # the belief's picture for the review (`caligo.agents.belief_map`), before the search:
        # its cost comes out of the search's time, never past the move's deadline
        t_map = time.perf_counter()
        pictures = {BELIEF_MAP: belief_map(belief.set)}
        if self._prev_map is not None:
            pictures[BELIEF_MAP_PREV] = self._prev_map
            self._prev_map = None
        map_ms = 1000.0 * (time.perf_counter() - t_map)
        if plan.iterations is not None:
            budget = ZS21Budget(seconds=None, expansions=plan.iterations)
        else:
            assert plan.deadline is not None
            budget = ZS21Budget(seconds=max(plan.deadline.soft_left(), 1e-3), expansions=None)
        seed = decision_seed(search.config.seed, self.ply, self.key)
        rng = np.random.default_rng(seed)
        res = search.decide(belief, self.key, rng, budget, seed, deadline=plan.deadline,
                            construct=plan.construct_deadline)
        p = np.clip(res.policy, 0.0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
        move = int(res.actions[int(rng.choice(p.size, p=p))])
        legal_set = {int(m) for m in legal}
        if move not in legal_set:  # never seen: our infoset's moves are the observed ones
            log.warning("zs21: searched move %d is not legal; playing the best legal one", move)
            ranked = sorted(zip(p.tolist(), res.actions.tolist(), strict=True), reverse=True)
            move = next((int(a) for _, a in ranked if int(a) in legal_set), int(legal[0]))
        policy = {int(a): float(q) for a, q in zip(res.actions, p, strict=True)
                  if int(a) in legal_set and q > 0}
        value = res.infoset_value if math.isfinite(res.infoset_value) else None
        if value is not None:
            value = float(min(max(value, -1.0), 1.0))
        if game.size > 4 * search.arena.n_nodes + 200_000:
            compact_arena(game, search.arena)  # the store only needs the trunk's positions
        info = {
            "belief_size": belief.size(), "belief_exact": belief.exact,
            "belief_mb": round(belief.nbytes / 1e6, 3),
            "belief_cap": self.belief_config.max_positions,
            "trunk_nodes": res.nodes, "infosets": res.infosets, "depth": res.depth,
            "roots": res.roots, "particles": res.particles, "carried_nodes": res.carried_nodes,
            "merged": res.merged, "iterations": res.iterations, "expansions": res.expansions,
            "lp_solves": res.lp_solves, "lp_seconds": round(res.lp_seconds, 4),
            "gadget": res.gadget.value, "switches": res.switches,
            "gadget_value": round(res.value, 6) if math.isfinite(res.value) else None,
            "penalty_max": float(np.abs(res.penalty).max()) if res.penalty.size else 0.0,
            "construct_s": round(res.construct_seconds, 4),
            "expand_s": round(res.expand_seconds, 4),
            "budget_s": budget.seconds, "elapsed": round(res.seconds, 4),
            "time_ms": {
                "belief": round(belief_ms, 1),
                "construct": round(1000 * res.construct_seconds, 1),
                "search": round(1000 * (res.lp_seconds + res.expand_seconds), 1),
                "belief_map": round(map_ms, 2),
            },
            **pictures,
        }
        if belief.cut:
            info["belief_cut"] = belief.cut
        info.update(belief.report())
        return Decision(move, policy=policy, value=value, info=info)

    def close(self) -> None:
        """Stop the Stockfish processes, if any (a worker's shared pool stays), after an
        overdue move's work has ended."""
        self._join_overdue()
        self._watchdog.close()
        if self.leaf is not None:
            if self.resources is None:
                self.leaf.close()
            self.leaf = None
        self.search = None
