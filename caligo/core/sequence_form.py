"""The sequence form of a game (Ha 2016, chapter E; Zhang & Sandholm 2021, section 2).

The payoff matrix A over (player-0 sequence, player-1 sequence) has x^T A y = u(x, y), with
A[s0(z), s1(z)] += p(z) u(z) over terminals z. Each player's treeplex is {x >= 0 : E x = e}: row 0
says x(empty) = 1, and the row of infoset I says sum_a x(Ia) - x(parent(I)) = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from caligo.core.tree import GameTree


@dataclass(frozen=True)
class SequenceForm:
    """Payoff matrix and both players' constraint systems."""

    A: sp.csr_matrix
    E: sp.csr_matrix  # player 0: rows = 1 + #infosets of player 0
    e: np.ndarray
    F: sp.csr_matrix  # player 1
    f: np.ndarray


def payoff_matrix(tree: GameTree) -> sp.csr_matrix:
    """A with x^T A y = expected utility of player 0 (duplicates summed)."""
    z = tree.terminals()
    vals = tree.chance_reach[z] * tree.utility[z]
    return sp.csr_matrix(
        (vals, (tree.seq[z, 0], tree.seq[z, 1])),
        shape=(tree.num_sequences[0], tree.num_sequences[1]),
    )


def constraint_matrix(tree: GameTree, player: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """(E, e) with the player's realization plans = {x >= 0 : E x = e}."""
    infosets = tree.infosets_of(player)
    rows = [0]
    cols = [0]
    vals = [1.0]
    for r, g in enumerate(infosets, start=1):
        rows.append(r)
        cols.append(int(tree.infoset_parent_seq[g]))
        vals.append(-1.0)
        first = int(tree.infoset_seq[g])
        for a in range(int(tree.infoset_num_actions[g])):
            rows.append(r)
            cols.append(first + a)
            vals.append(1.0)
    E = sp.csr_matrix((vals, (rows, cols)), shape=(1 + len(infosets), tree.num_sequences[player]))
    e = np.zeros(1 + len(infosets))
    e[0] = 1.0
    return E, e


def sequence_form(tree: GameTree) -> SequenceForm:
    """All sequence-form matrices of the tree (cached on the tree)."""
    cached = tree._cache.get("sequence_form")
    if cached is None:
        E, e = constraint_matrix(tree, 0)
        F, f = constraint_matrix(tree, 1)
        cached = SequenceForm(payoff_matrix(tree), E, e, F, f)
        tree._cache["sequence_form"] = cached
    return cached  # type: ignore[return-value]
