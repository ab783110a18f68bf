"""ZS21 on small games: `ZS21TreeAgent` over a compiled `GameTree`, its exact exploitability, and
the nested 1-KLSS reference it must equal.

The agent is a function of its infoset (docs/design.md, "Exact exploitability of the search agent"):
with a deterministic budget (no seconds) and every decision seeded from (seed, seat, infoset), its
state at an infoset depends only on the infosets and actions above it. `zs21_strategy` walks a
seat's treeplex depth first, one decision per infoset the agent reaches (snapshots of the agent for
each action it plays with positive probability), and assembles the behavioural strategy it plays;
`zs21_exploitability` measures it with `caligo.search.exploitability` (Zhang & Sandholm 2021's
exploitability per seat and NashConv / 2).

`nested_one_klss(tree, seat)` is the reference: nested 1-KLSS with Reach and transposition
merging (Maxmargin gadgets) built by `caligo.subgame` (`make_subgame` on `GameTree`s, chained
by `nested_solve`), from the full-game LP blueprint, every LP solved at the vertex of its optimal
face that minimizes `trunk_lp.canonical_weights` (keyed by the original infoset and action, so
both formulations pick the same point). With `FULL_TRUNK` (a fully expanded trunk solved from
the game's start, no particles, no information term, merging in a fixed order, canonical
vertices) ZS21 plays exactly that strategy; the tests hold it to this.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from caligo.agents.zs21 import trunk_lp
from caligo.agents.zs21.config import (
    Penalty,
    StartMode,
    ZS21Budget,
    ZS21Config,
    ZS21Error,
    ZS21Result,
)
from caligo.agents.zs21.search import ZS21Search
from caligo.core.lp import REACH_TOL, TieBreak, game_value, solve_player
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import FloatArray, GameTree
from caligo.search.agent import TreeGameBelief
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.exploitability import Exploitability, combine, exploitability_of
from caligo.search.game import Evaluator, TreeGame
from caligo.search.intern import mix_key

__all__ = ["FULL_TRUNK", "TreeStrategy", "ZS21TreeAgent", "nested_one_klss",
           "zs21_exploitability", "zs21_strategy"]

FULL_TRUNK = ZS21Config(start=StartMode.SOLVE_FROM_START, penalty=Penalty.OFF,
                        shuffle_merge=False, budget=ZS21Budget(expansions=10**9),
                        expand_all=True, canonical=True, particles=0)
"""ZS21 with a fully expanded trunk (module docstring): the setting where it equals
`nested_one_klss`."""


def decision_seed(*parts: int) -> int:
    """A 63-bit seed mixed from integers (the same parts give the same seed everywhere)."""
    x = np.uint64(0x6A09E667F3BCC908)
    for p in parts:
        x = mix_key(np.uint64(x), np.int64(-1), np.uint64(int(p) & 0xFFFFFFFFFFFFFFFF))
    return int(x & np.uint64(0x7FFFFFFFFFFFFFFF))


class ZS21TreeAgent:
    """ZS21 in one seat of a `GameTree` (observations are the seat's knowledge infoset ids)."""

    def __init__(self, tree: GameTree, config: ZS21Config, seat: int,
                 evaluator: Evaluator | None = None) -> None:
        if seat not in (0, 1):
            raise ZS21Error(f"seat must be 0 or 1, got {seat!r}")
        if config.budget.seconds is not None:
            raise ZS21Error("ZS21TreeAgent needs a deterministic budget (seconds=None)")
        self.tree = tree
        self.game = TreeGame(tree)
        self.config = config
        self.seat = seat
        scale = max(abs(float(tree.utility.min())), abs(float(tree.utility.max())), 1e-12)
        cap = min(config.max_nodes, 4 * tree.num_nodes + 4 * config.particles + 1024)
        self.search = ZS21Search(self.game, evaluator if evaluator is not None
                                 else PerfectInfoEvaluator(tree), config, seat,
                                 capacity=cap, util_scale=scale)
        self.belief = TreeGameBelief(self.game, seat)
        self.seed = config.seed
        self.key = int(tree.kinfo[0, seat])

    def new_game(self, seed: int | None = None) -> None:
        """Back to the start of the game."""
        self.seed = self.config.seed if seed is None else int(seed)
        self.belief.reset()
        self.search.start(0)
        self.key = int(self.tree.kinfo[0, self.seat])

    def observe(self, kinfo: int) -> None:
        """Our knowledge infoset after a step of the game."""
        self.belief.update(int(kinfo))
        self.key = int(kinfo)

    def act(self) -> ZS21Result:
        """Decide at the current infoset (the budget of the config)."""
        seed = decision_seed(self.seed, self.seat, self.key)
        return self.search.decide(self.belief, self.key, np.random.default_rng(seed),
                                  self.config.budget, seed)

    def snapshot(self) -> ZS21TreeAgent:
        """An independent copy."""
        out = copy.copy(self)
        out.search = self.search.snapshot()
        out.belief = copy.deepcopy(self.belief)
        return out


@dataclass(frozen=True)
class TreeStrategy:
    """The behavioural strategy a seat's agent plays (the other seat's slots uniform)."""

    strategy: FloatArray
    decisions: int
    seconds: float
    results: dict[int, ZS21Result]  # per infoset of the tree the agent decided at


def zs21_strategy(tree: GameTree, config: ZS21Config, seat: int, seed: int = 0,
                  evaluator: Evaluator | None = None) -> TreeStrategy:
    """Walk `seat`'s infosets with the agent and collect its strategy (module docstring)."""
    t0 = time.perf_counter()
    agent = ZS21TreeAgent(tree, config, seat, evaluator)
    agent.new_game(seed)
    agent.search.warm_start(config.budget, decision_seed(seed, seat))  # once, not per branch
    kids: dict[int, list[int]] = {}
    for g in tree.infosets_of(seat):
        kids.setdefault(int(tree.infoset_parent_seq[g]), []).append(int(g))
    out = uniform_strategy(tree)
    results: dict[int, ZS21Result] = {}

    def visit(base: ZS21TreeAgent, g: int) -> None:
        ag = base.snapshot()
        ag.observe(int(tree.infoset_kinfo[g]))
        res = ag.act()
        results[g] = res
        off, n = int(tree.infoset_offset[g]), int(tree.infoset_num_actions[g])
        want = tree.slot_action[off : off + n]
        pos = {int(a): i for i, a in enumerate(res.actions)}
        if sorted(pos) != sorted(int(a) for a in want):
            raise ZS21Error(f"the agent's actions {res.actions} at {tree.infoset_names[g]!r} are "
                            f"not the game's {want}")
        play = np.array([res.policy[pos[int(a)]] for a in want])
        out[off : off + n] = play
        for a in range(n):
            below = kids.get(int(tree.infoset_seq[g]) + a, [])
            if play[a] <= REACH_TOL or not below:  # LP noise is not a move the agent plays
                continue
            for g2 in below:
                visit(ag, g2)

    for g in kids.get(0, []):
        visit(agent, g)
    return TreeStrategy(out, len(results), time.perf_counter() - t0, results)


def zs21_exploitability(tree: GameTree, config: ZS21Config, seed: int = 0,
                        evaluator: Evaluator | None = None) -> Exploitability:
    """Exact exploitability of ZS21 in both seats (per seat, Zhang & Sandholm 2021; NashConv/2)."""
    s0 = zs21_strategy(tree, config, 0, seed, evaluator).strategy
    s1 = zs21_strategy(tree, config, 1, seed, evaluator).strategy
    return exploitability_of(tree, combine(tree, s0, s1), game_value(tree))


def _direction(t: GameTree, key_of: dict[int, int], origin: np.ndarray) -> trunk_lp._Direction:
    """Player 0's canonical LP objective on `t`; key_of maps original infoset -> key."""
    w = np.zeros(t.num_sequences[0])
    for g in t.infosets_of(0):
        o = int(origin[g])
        if o < 0:
            continue
        n, off, first = (int(t.infoset_num_actions[g]), int(t.infoset_offset[g]),
                         int(t.infoset_seq[g]))
        keys = np.full(n, key_of[o], dtype=np.uint64)
        w[first : first + n] = trunk_lp.canonical_weights(keys, t.slot_action[off : off + n])
    return trunk_lp._Direction(w)


def _nested_seat0(tree: GameTree, key_of: dict[int, int]) -> FloatArray:
    from caligo.subgame.gadget import GadgetKind, SubgameOptions, make_subgame
    from caligo.subgame.nested import GameState, NestedConfig, nested_solve

    opts = SubgameOptions(kind=GadgetKind.MAXMARGIN, k=1, reach=True, merge_transpositions=True)

    def step(state: GameState, infoset: int, config: NestedConfig, orig: GameTree) -> GameState:
        sub = make_subgame(state.tree, state.strategy, state.copy_of(infoset), opts,
                           B=state.extra)
        if sub.is_empty:
            return state
        loc = np.asarray(sub.infoset_map)
        origin = np.full(loc.size, -1, dtype=np.int32)
        origin[loc >= 0] = state.origin[loc[loc >= 0]]
        r = solve_player(sub.tree, 0, extra=sub.extra, tie_break=TieBreak.RANDOM,
                         rng=_direction(sub.tree, key_of, origin))  # type: ignore[arg-type]
        return GameState(sub.tree, sub.extra, r.strategy, origin)

    ident = np.arange(tree.num_infosets, dtype=np.int32)
    bp = solve_player(tree, 0, tie_break=TieBreak.RANDOM,
                      rng=_direction(tree, key_of, ident)).strategy  # type: ignore[arg-type]
    return nested_solve(tree, bp, NestedConfig(step=step)).strategy


def nested_one_klss(tree: GameTree, seat: int = 0) -> FloatArray:
    """The reference strategy of `seat` over `tree`'s slots (module docstring); the other
    seat's slots are uniform. Seat 1 is solved as player 0 of `swap_players(tree)`."""
    if seat == 0:
        return _nested_seat0(tree, {g: int(tree.infoset_kinfo[g])
                                    for g in range(tree.num_infosets)})
    from caligo.subgame.resolve import swap_players

    sw = swap_players(tree)
    by_name = tree.infoset_index()
    theirs = _nested_seat0(sw, {h: int(tree.infoset_kinfo[by_name[sw.infoset_names[h]]])
                                for h in range(sw.num_infosets)})
    out = uniform_strategy(tree)
    sw_idx = sw.infoset_index()
    for g in tree.infosets_of(1):
        off, n = int(tree.infoset_offset[g]), int(tree.infoset_num_actions[g])
        h = sw_idx[tree.infoset_names[g]]
        hoff = int(sw.infoset_offset[h])
        pos = {int(a): i for i, a in enumerate(sw.slot_action[hoff : hoff + n])}
        out[off : off + n] = [theirs[hoff + pos[int(a)]] for a in tree.slot_action[off : off + n]]
    return out
