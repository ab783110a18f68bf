"""Shared builders for the search tests."""

from __future__ import annotations

import numpy as np

from caligo.core.tree import GameTree
from caligo.search.agent import TreeGameBelief
from caligo.search.config import Expansion, Iterations, SearchConfig
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator, ZeroEvaluator
from caligo.search.game import TreeGame


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
