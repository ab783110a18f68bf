"""ZS21 on small games: `ZS21TreeAgent` over a compiled `GameTree`, and its exact exploitability.

The agent is a function of its infoset (design/SEARCH.md section 6): with a deterministic
budget (no seconds) and every decision seeded from (seed, seat, infoset), its state at an
infoset depends only on the infosets and actions above it. `zs21_strategy` walks a seat's
treeplex depth first, one decision per infoset the agent reaches (snapshots of the agent for
each action it plays with positive probability), and assembles the behavioural strategy it
plays; `zs21_exploitability` measures it with `caligo.search.exploitability` (seed 000's
exploitability per seat and NashConv / 2).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from caligo.agents.zs21.config import ZS21Config, ZS21Error, ZS21Result
from caligo.agents.zs21.search import ZS21Search
from caligo.core.lp import REACH_TOL, game_value
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import FloatArray, GameTree
from caligo.search.agent import TreeGameBelief
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.exploitability import Exploitability, combine, exploitability_of
from caligo.search.game import Evaluator, TreeGame
from caligo.search.intern import mix_key

__all__ = ["TreeStrategy", "ZS21TreeAgent", "zs21_exploitability", "zs21_strategy"]


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
    """Exact exploitability of ZS21 in both seats (seed 000's per seat, and NashConv / 2)."""
    s0 = zs21_strategy(tree, config, 0, seed, evaluator).strategy
    s1 = zs21_strategy(tree, config, 1, seed, evaluator).strategy
    return exploitability_of(tree, combine(tree, s0, s1), game_value(tree))
