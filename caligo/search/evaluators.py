"""Leaf evaluators for `TreeGame`s, the small games the search is measured on exactly.

- `ZeroEvaluator`: every non-terminal state is worth 0 (the free evaluator of the benchmark).
- `PerfectInfoEvaluator`: the perfect-information value of the subtree (both players see the
  state; chance by expectation; player 0 maximizes, player 1 minimizes): the analogue of
  Stockfish, which scores a position as if there were no fog.
- `ProfileValueEvaluator`: the subtree value u(sigma | h) under a full-game profile sigma, e.g.
  an equilibrium from the LP: the true game-theoretic value on the equilibrium's path (off it the
  value depends on the chosen equilibrium), the "true subtree value where defined".

All read one precomputed value per tree node; values are in the game's utility units, player
0's view.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import FloatArray, GameTree
from caligo.search.game import ChildBatch

I64 = np.ndarray


class _TableEvaluator:
    def __init__(self, values: FloatArray) -> None:
        self.values = np.ascontiguousarray(values, dtype=np.float64)

    def children(self, parents: I64, batch: ChildBatch) -> np.ndarray:
        out: np.ndarray = self.values[batch.state]
        return out

    def states(self, states: I64) -> np.ndarray:
        return self.values[np.asarray(states, dtype=np.int64)]


class ZeroEvaluator:
    """Every state is worth 0."""

    def children(self, parents: I64, batch: ChildBatch) -> np.ndarray:
        return np.zeros(batch.state.shape[0], dtype=np.float64)

    def states(self, states: I64) -> np.ndarray:
        return np.zeros(np.asarray(states).shape[0], dtype=np.float64)


@njit(cache=True, nogil=True)
def _minimax_kernel(
    player: np.ndarray, first_child: np.ndarray, num_children: np.ndarray,
    chance_prob: np.ndarray, utility: np.ndarray, out: np.ndarray,
) -> int:
    """Perfect-information values bottom-up (reverse node order: children after parents).

    player: int8[n]; first_child, num_children: int32[n]; chance_prob, utility: float64[n];
    out: float64[n]. Returns 0.
    """
    for h in range(player.shape[0] - 1, -1, -1):
        p = player[h]
        if p == TERMINAL:
            out[h] = utility[h]
            continue
        c0 = first_child[h]
        n = num_children[h]
        if p == CHANCE:
            acc = 0.0
            for c in range(c0, c0 + n):
                acc += chance_prob[c] * out[c]
            out[h] = acc
        elif p == 0:
            best = out[c0]
            for c in range(c0 + 1, c0 + n):
                if out[c] > best:
                    best = out[c]
            out[h] = best
        else:
            best = out[c0]
            for c in range(c0 + 1, c0 + n):
                if out[c] < best:
                    best = out[c]
            out[h] = best
    return 0


def perfect_information_values(tree: GameTree) -> FloatArray:
    """Every node's value when both players see the state (expectimax over chance)."""
    out = np.zeros(tree.num_nodes, dtype=np.float64)
    _minimax_kernel(tree.player, tree.first_child, tree.num_children, tree.chance_prob,
                    tree.utility, out)
    return out


def profile_values(tree: GameTree, strategy: FloatArray) -> FloatArray:
    """Every node's value u(sigma | h) under a full profile (player 0's utility)."""
    s = np.asarray(strategy, dtype=np.float64)
    out = np.zeros(tree.num_nodes, dtype=np.float64)
    for h in range(tree.num_nodes - 1, -1, -1):
        p = int(tree.player[h])
        if p == TERMINAL:
            out[h] = tree.utility[h]
            continue
        c0 = int(tree.first_child[h])
        n = int(tree.num_children[h])
        kids = out[c0 : c0 + n]
        if p == CHANCE:
            out[h] = float(np.dot(tree.chance_prob[c0 : c0 + n], kids))
        else:
            off = int(tree.infoset_offset[tree.infoset[h]])
            out[h] = float(np.dot(s[off : off + n], kids))
    return out


class PerfectInfoEvaluator(_TableEvaluator):
    """The perfect-information (minimax / expectimax) value of each state."""

    def __init__(self, tree: GameTree) -> None:
        super().__init__(perfect_information_values(tree))


class ProfileValueEvaluator(_TableEvaluator):
    """The value of each state under a fixed full-game profile (e.g. an LP equilibrium)."""

    def __init__(self, tree: GameTree, strategy: FloatArray) -> None:
        super().__init__(profile_values(tree, strategy))
