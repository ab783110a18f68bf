"""Numba kernels of the core against slow, obviously-correct references on random games.

The references enumerate pure strategies and walk the tree recursively; nothing in them shares
code with the sequence-form kernels they check.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from caligo.core.best_response import best_response, expected_value
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.games import load_game
from caligo.core.strategy import normalize_per_infoset, realization_plan
from caligo.core.tree import GameTree


def _walk_value(tree: GameTree, s: np.ndarray, h: int = 0) -> float:
    """Expected utility below h by plain recursion over behavioral probabilities."""
    if tree.player[h] == TERMINAL:
        return float(tree.utility[h])
    total = 0.0
    for i in range(tree.num_children[h]):
        c = tree.first_child[h] + i
        if tree.player[h] == CHANCE:
            w = tree.chance_prob[c]
        else:
            w = s[tree.infoset_offset[tree.infoset[h]] + i]
        total += w * _walk_value(tree, s, c)
    return total


def _pure_strategies(tree: GameTree, player: int) -> list[np.ndarray]:
    infosets = tree.infosets_of(player)
    choices = [range(int(tree.infoset_num_actions[g])) for g in infosets]
    out = []
    for combo in itertools.product(*choices):
        v = np.zeros(tree.num_slots)
        for g, a in zip(infosets, combo, strict=True):
            v[tree.infoset_offset[g] + a] = 1.0
        out.append(v)
    return out


def _with_part(tree: GameTree, base: np.ndarray, part: np.ndarray, player: int) -> np.ndarray:
    out = base.copy()
    mine = np.isin(tree.slot_infoset(), tree.infosets_of(player))
    out[mine] = part[mine]
    return out


def _small_tree(seed: int) -> GameTree:
    return load_game(f"random_game(seed={seed})")


def _num_pure(tree: GameTree, player: int) -> int:
    return int(np.prod(tree.infoset_num_actions[tree.infosets_of(player)], dtype=np.float64))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), strat_seed=st.integers(0, 1000))
def test_expected_value_and_realization(seed: int, strat_seed: int) -> None:
    tree = _small_tree(seed)
    s = normalize_per_infoset(tree, np.random.default_rng(strat_seed).random(tree.num_slots))
    assert abs(expected_value(tree, s) - _walk_value(tree, s)) < 1e-12
    for p in (0, 1):
        x = realization_plan(tree, s, p)
        # x(seq) = product of the player's own action probabilities on the path, per node
        for h in range(tree.num_nodes):
            prob, node = 1.0, h
            while tree.parent[node] >= 0:
                par = tree.parent[node]
                if tree.player[par] == p:
                    prob *= s[tree.infoset_offset[tree.infoset[par]] + node - tree.first_child[par]]
                node = par
            assert abs(x[tree.seq[h, p]] - prob) < 1e-12


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), strat_seed=st.integers(0, 1000), responder=st.integers(0, 1))
def test_best_response_against_enumeration(seed: int, strat_seed: int, responder: int) -> None:
    tree = _small_tree(seed)
    if _num_pure(tree, responder) > 2000:
        return
    s = normalize_per_infoset(tree, np.random.default_rng(strat_seed).random(tree.num_slots))
    sign = 1.0 if responder == 0 else -1.0
    values = [
        _walk_value(tree, _with_part(tree, s, pure, responder))
        for pure in _pure_strategies(tree, responder)
    ]
    best = max(values) if responder == 0 else min(values)
    br = best_response(tree, s, responder)
    assert abs(br.value - best) < 1e-12
    # the returned pure response achieves it
    assert abs(_walk_value(tree, br.strategy) - best) < 1e-12
    # unnormalized sequence values: V(Ia) = best over pure y with y(Ia) = 1 of the utility of
    # the terminals at or below Ia
    fixed = 1 - responder
    x = realization_plan(tree, s, fixed)
    z = tree.terminals()
    for seq_id in range(1, tree.num_sequences[responder]):
        below = [t for t in z if _extends(tree, responder, int(tree.seq[t, responder]), seq_id)]
        best_v = -np.inf
        for pure in _pure_strategies(tree, responder):
            y = realization_plan(tree, pure, responder)
            if y[seq_id] != 1.0:
                continue
            v = sum(
                tree.chance_reach[t]
                * x[tree.seq[t, fixed]]
                * y[tree.seq[t, responder]]
                * tree.utility[t]
                * sign
                for t in below
            )
            best_v = max(best_v, v)
        assert abs(br.sequence_values[seq_id] * sign - best_v) < 1e-12


def _extends(tree: GameTree, player: int, seq_id: int, prefix: int) -> bool:
    """Whether the player's sequence `seq_id` extends `prefix` (walk up parent sequences)."""
    while seq_id > 0:
        if seq_id == prefix:
            return True
        seq_id = int(tree.infoset_parent_seq[tree.seq_infoset[player][seq_id]])
    return prefix == 0
