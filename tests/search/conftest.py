"""Shared builders for the search tests."""

from __future__ import annotations

import numpy as np

from caligo.core.strategy import realization_plan, uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.agent import TreeGameBelief
from caligo.search.arena import Arena
from caligo.search.config import Expansion, Iterations, SearchConfig, SubgameKind
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator, ZeroEvaluator
from caligo.search.export import strategy_on_tree
from caligo.search.game import TreeGame
from caligo.search.materialize import BuildInfo


def util_scale(tree: GameTree) -> float:
    return float(max(abs(tree.utility.min()), abs(tree.utility.max()), 1e-9))


def full_search(tree: GameTree, iterations: int, searcher: int = 0, **overrides: object,
                ) -> GrowingTreeSearch:
    """A plain search from the true start, fully expanded, after `iterations` iterations."""
    cfg = SearchConfig(budget=Iterations(max(iterations, 1)), expansion=Expansion.FULL,
                       **overrides)  # type: ignore[arg-type]
    eng = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(), cfg, searcher,
                            capacity=4 * tree.num_nodes + 64, util_scale=util_scale(tree))
    eng.start(0)
    eng.expand_full()
    if iterations:
        eng.iterate(iterations)
    return eng


def gtcfr_search(tree: GameTree, iterations: int, expansions: int, searcher: int = 0,
                 seed: int = 0, **overrides: object) -> GrowingTreeSearch:
    """A plain search from the true start grown by one-sided GT-CFR (deterministic)."""
    cfg = SearchConfig(budget=Iterations(iterations), expansions=expansions, seed=seed,
                       **overrides)  # type: ignore[arg-type]
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, searcher,
                            capacity=4 * tree.num_nodes + 64, util_scale=util_scale(tree))
    eng.start(0)
    eng.run(seed)
    return eng


def belief_at(tree: GameTree, infoset: int) -> tuple[TreeGameBelief, int]:
    """The exact belief of the infoset's player at a decision infoset, and its key."""
    p = int(tree.infoset_player[infoset])
    key = int(tree.infoset_kinfo[infoset])
    bel = TreeGameBelief(TreeGame(tree), p)
    bel.update(key)
    return bel, key


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def reroots(tree: GameTree, eng: GrowingTreeSearch, limit: int = 6,
            ) -> list[tuple[Arena, Arena, BuildInfo]]:
    """(the search's arena before, the re-rooted arena, the build info) at player 0's infosets
    below its first decision that the search's blueprint reaches; each re-root starts from a
    fresh copy of the same tree."""
    bp = strategy_on_tree(eng.arena, tree, uniform_strategy(tree))
    x = realization_plan(tree, bp, 0)
    base = eng.arena.copy()
    out = []
    for g in tree.infosets_of(0):
        ps = int(tree.infoset_parent_seq[g])
        if ps == 0 or x[ps] <= 0:
            continue
        eng.arena = base.copy()
        eng._spare = None
        bel, key = belief_at(tree, int(g))
        info = eng.reroot(bel, key, rng())
        out.append((base, eng.arena, info))
        if len(out) == limit:
            break
    assert out, f"{tree.name}: no infoset below player 0's first decision is reached"
    return out


def rerooted(tree: GameTree, limit: int = 6, **overrides: object) -> list[Arena]:
    """Subgames (KLUSS unless `overrides` say otherwise) re-rooted as `reroots` does after 25
    iterations of a full search: arenas with a root gadget."""
    overrides.setdefault("subgame", SubgameKind.KLUSS)
    eng = full_search(tree, 25, **overrides)  # type: ignore[arg-type]
    out = [new for _, new, _ in reroots(tree, eng, limit)]
    assert all(a.has_gadget for a in out)
    return out
