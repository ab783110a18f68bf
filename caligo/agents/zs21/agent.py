"""`ZS21Agent`: the ZS21 dark chess agent (Zhang & Sandholm 2021, appendix D) for FoW chess.

Per game: a `FowSearchGame` (the position store), a `FowBelief` (the exact set P, memory cap
`BeliefConfig.max_positions`), a `ZS21Search` (the trunk) and a leaf evaluator (Stockfish depth 1
through `StockfishPool`, tanh(cp / 600), Zhang & Sandholm 2021, appendix D.1; or the built-in
`SimpleEvaluator`). Per ply, `observe` updates P (exact; not counted in the move's time, as in
Obscuro, appendix D footnote 20) and our observation-sequence key. Per move, `act` turns the
referee's clock into a budget, runs one `ZS21Search.decide` (subgame from the previous trunk plus
particles, deepening with exact LP solves, the Maxmargin/Resolve switch), samples the move from the
exact strategy at our infoset, and reports diagnostics in `Decision.info`.

Budget from the clock (`Clock`):

    iterations N      a deterministic budget of N leaf expansions
    move time T       0.8 T - 30 ms
    clock R + I       min(R / 30 + 0.75 I, 0.2 R), then as a move time
    none              the config's budget (default 1 s)

and never more than 0.8 (0.8 of the referee's deadline) - 30 ms, whatever the budget. From a
time budget the agent subtracts what its earlier moves spent past theirs (a decaying maximum,
Stockfish's "move overhead" learnt on the fly): the construction (particles, about 200 Stockfish
calls), the final LP and a loaded machine's stalls. The belief update is not part of the move
(it happens in `observe`).

Registered as `zs21` (options: budget=mt=1|iters=N|none, evaluator=auto|stockfish|simple,
seed=N, particles=L, penalty=text|algorithm|off, max_nodes=N, max_positions=N).
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision, TcKind, TimeControl, TimeControlError
from caligo.agents.fow_search import FowBelief, FowEvaluator, FowSearchGame, compact_arena
from caligo.agents.zs21.config import Penalty, ZS21Budget, ZS21Config, ZS21ConfigError
from caligo.agents.zs21.search import ZS21Search
from caligo.agents.zs21.tree import decision_seed
from caligo.fow.belief import BeliefConfig
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.search.construct import start_key
from caligo.search.game import KeyMode
from caligo.search.intern import mix_key

__all__ = ["EvaluatorChoice", "ZS21Agent", "budget_for"]

log = logging.getLogger(__name__)

MOVES_TO_GO = 30
"""Moves a clock's remaining time is spread over (FoW games last about 58 moves a side, Obscuro,
appendix D; the increment pays for the rest)."""


class EvaluatorChoice(enum.Enum):
    """The leaf evaluator."""

    AUTO = "auto"  # Stockfish when it is installed, else the built-in evaluator
    STOCKFISH = "stockfish"  # Zhang & Sandholm 2021, appendix D.1
    SIMPLE = "simple"  # material plus visible squares (Obscuro, ablation 6)


def budget_for(clock: Clock | None, default: ZS21Budget) -> ZS21Budget:
    """The budget of one move under `clock` (module docstring)."""
    if clock is None:
        return default
    budget = default
    if clock.kind is TcKind.ITERATIONS and clock.iterations:
        budget = ZS21Budget(seconds=None, expansions=int(clock.iterations))
    elif clock.kind is TcKind.MOVETIME and clock.movetime_ms:
        budget = ZS21Budget(seconds=_usable(clock.movetime_ms / 1000.0), expansions=None)
    elif clock.kind is TcKind.CLOCK and clock.remaining_ms is not None:
        rem = max(clock.remaining_ms, 0) / 1000.0
        inc = clock.increment_ms / 1000.0
        seconds = min(rem / MOVES_TO_GO + 0.75 * inc, 0.2 * rem)
        budget = ZS21Budget(seconds=_usable(seconds), expansions=None)
    if clock.deadline_ms is not None:
        cap = _usable(0.8 * clock.deadline_ms / 1000.0)
        if budget.seconds is None or budget.seconds > cap:
            budget = replace(budget, seconds=cap)
    return budget


def _usable(seconds: float) -> float:
    """The part of a move's time the search may spend (the rest is overhead and margin)."""
    return max(0.8 * seconds - 0.03, 0.01)


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


class ZS21Agent(AgentBase):
    """The ZS21 agent for FoW chess (module docstring)."""

    def __init__(self, config: ZS21Config | None = None,
                 evaluator: EvaluatorChoice = EvaluatorChoice.AUTO,
                 belief: BeliefConfig | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ZS21Config()
        if not isinstance(evaluator, EvaluatorChoice):
            raise ZS21ConfigError(f"evaluator must be an EvaluatorChoice, got {evaluator!r}")
        self.evaluator_choice = evaluator
        self.belief_config = belief if belief is not None else BeliefConfig()
        self.leaf: LeafEvaluator | None = None
        self.game: FowSearchGame | None = None
        self.belief: FowBelief | None = None
        self.search: ZS21Search | None = None
        self.key = 0
        self.ply = 0
        self.overhead = 0.0  # seconds a move spends past its search budget, decaying maximum
        self.last_info: dict[str, Any] = {}
        warm_up()  # once per process

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ZS21Agent:
        """Build from registry options (module docstring); ValueError names a bad one."""
        known = {"budget", "evaluator", "seed", "particles", "penalty", "max_nodes",
                 "max_positions"}
        unknown = set(options) - known
        if unknown:
            raise ValueError(f"unknown option(s) for zs21: {sorted(unknown)!r} "
                             f"(known: {', '.join(sorted(known))})")
        cfg = ZS21Config()
        changes: dict[str, Any] = {}
        try:
            if "budget" in options:
                tc = TimeControl.parse(options["budget"])
                if tc.kind is TcKind.ITERATIONS:
                    changes["budget"] = ZS21Budget(seconds=None, expansions=tc.iterations)
                elif tc.kind is TcKind.MOVETIME:
                    changes["budget"] = ZS21Budget(seconds=tc.movetime_ms / 1000.0,
                                                   expansions=None)
                elif tc.kind is not TcKind.NONE:
                    raise ValueError(f"zs21: budget must be mt=SECONDS, iters=N or none, got "
                                     f"{options['budget']!r}")
            for name in ("seed", "particles", "max_nodes"):
                if name in options:
                    changes[name] = int(options[name])
            if "penalty" in options:
                changes["penalty"] = Penalty(options["penalty"])
            belief = BeliefConfig(max_positions=int(options.get("max_positions", "2000000")))
            evaluator = EvaluatorChoice(options.get("evaluator", "auto"))
            return cls(replace(cfg, **changes), evaluator, belief)
        except (TimeControlError, ZS21ConfigError) as exc:
            raise ValueError(str(exc)) from None
        except ValueError as exc:
            raise ValueError(f"zs21: invalid option value ({exc})") from None

    # --- life cycle --------------------------------------------------------------------------

    def _leaf(self) -> LeafEvaluator:
        if self.leaf is None:
            choice = self.evaluator_choice
            if choice is not EvaluatorChoice.SIMPLE:
                from caligo.fow.stockfish import (
                    StockfishNotFoundError,
                    StockfishPool,
                    find_stockfish,
                )

                try:
                    find_stockfish()
                    self.leaf = StockfishPool()
                except StockfishNotFoundError:
                    if choice is EvaluatorChoice.STOCKFISH:
                        raise
                    log.warning("zs21: Stockfish not found, using the built-in evaluator")
            if self.leaf is None:
                self.leaf = SimpleEvaluator()
        return self.leaf

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start a game: P = {start}, the trunk = the start node (Algorithm 15 lines 2-4)."""
        super().new_game(color, start_fen, time_control, seed)
        if self.game is None:
            self.game = FowSearchGame(start_fen)
        else:
            self.game.reset(start_fen)
        game = self.game
        cfg = replace(self.config, seed=decision_seed(self.config.seed, int(seed)))
        if self.search is None or self.search.searcher != self.color:
            self.search = ZS21Search(game, FowEvaluator(game, self._leaf()), cfg, self.color)
        else:
            self.search.config = cfg
        self.search.start(game.start_state())
        self.belief = FowBelief(game, self.color, self.belief_config)
        obs = int(game.describe(np.array([game.start_state()])).obs[0, self.color])
        self.key = start_key(obs, KeyMode.INCREMENTAL)
        self.ply = 0

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Update P and our observation-sequence key."""
        super().observe(observation, own_move)
        assert self.belief is not None, "observe before new_game"
        self.belief.update(observation, own_move)
        act = -1 if own_move is None else int(own_move)
        self.key = int(mix_key(np.uint64(self.key), np.int64(act),
                               np.uint64(observation_key(observation))))
        self.ply += 1

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Search within the clock's budget and sample the move (module docstring)."""
        search, belief, game = self.search, self.belief, self.game
        assert search is not None and belief is not None and game is not None, "act before new_game"
        t_act = time.perf_counter()
        budget = budget_for(clock, self.config.budget)
        if budget.seconds is not None:  # what earlier moves spent past their budget
            budget = replace(budget, seconds=max(budget.seconds - self.overhead,
                                                 0.25 * budget.seconds))
        seed = decision_seed(search.config.seed, self.ply, self.key)
        rng = np.random.default_rng(seed)
        res = search.decide(belief, self.key, rng, budget, seed)
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
        }
        self.last_info = info
        if budget.seconds is not None:
            spent = time.perf_counter() - t_act
            self.overhead = max(0.8 * self.overhead, spent - budget.seconds)
        if game.size > 4 * search.arena.n_nodes + 200_000:
            compact_arena(game, search.arena)  # the store only needs the trunk's positions
        return Decision(move, policy=policy, value=value, info=info)

    def close(self) -> None:
        """Stop the Stockfish processes, if any."""
        if self.leaf is not None:
            self.leaf.close()
            self.leaf = None
        self.search = None
