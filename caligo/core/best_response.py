"""Best response, counterfactual best-response values, exploitability and NashConv.

Zhang & Sandholm 2021, section 2 defines the counterfactual best-response value of the responder
after Ia as the best value against the fixed strategy once Ia is played, normalized by the
counterfactual reach sum_{h in I} p(h) x(h). We compute it in the sequence form: with g = the
responder's payoff vector against the fixed player's realization plan (scattered from the
terminals), a bottom-up pass over the responder's treeplex in reverse infoset id order gives

    V(Ia) = g(Ia) + sum over the responder's infosets J below Ia of V(J),   V(J) = best_a V(Ja),

unnormalized. `BestResponse` keeps V per sequence and per infoset, and the reach to normalize.
All values are reported in **player 0's utility** (the seeds' convention: u*(x|I) is ⊕'s value
when ⊖ best-responds).

Definitions kept apart (docs/design.md): `player_exploitability(tree, s, player)` is v* minus the
best response value of that player's strategy (Zhang & Sandholm 2021); `nash_conv` is the sum of
both players' best-response gains; `openspiel_exploitability` is NashConv / 2, as
`pyspiel.exploitability`.

Every public function validates its strategy with `caligo.core.strategy.check_strategy` (shape,
finite, nonnegative, summing to 1 at every infoset) and raises `StrategyError` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from caligo.core.game import ArgumentError
from caligo.core.strategy import check_strategy, realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray


@dataclass(frozen=True)
class BestResponse:
    """A best response of `responder` to the other player's strategy.

    value: player 0's expected utility when `responder` best-responds.
    sequence_values: float64[num_sequences[responder]], unnormalized V(s) in player 0's utility.
    infoset_values: float64[num_infosets], unnormalized V(I) for the responder's infosets
        (NaN at the other player's infosets).
    infoset_reach: float64[num_infosets], sum_{h in I} p(h) x(h) (counterfactual reach of the
        responder's infosets; NaN at the other player's).
    strategy: the input profile with the responder's slots replaced by the pure best response.
    """

    responder: int
    value: float
    sequence_values: FloatArray
    infoset_values: FloatArray
    infoset_reach: FloatArray
    strategy: FloatArray

    def __repr__(self) -> str:
        return f"<BestResponse of player {self.responder}: value {self.value:.9g}>"

    def counterfactual_infoset_values(self) -> FloatArray:
        """u*(x|I) = V(I) / reach(I); NaN where the reach is 0 or I is not the responder's."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.infoset_reach > 0, self.infoset_values / self.infoset_reach,
                            np.nan)

    def counterfactual_sequence_values(self, tree: GameTree) -> FloatArray:
        """u*(x|Ia) per responder sequence = V(Ia) / reach(I); NaN at the empty sequence."""
        owner = tree.seq_infoset[self.responder]
        reach = np.full(owner.shape, np.nan)
        reach[1:] = self.infoset_reach[owner[1:]]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(reach > 0, self.sequence_values / reach, np.nan)


@njit(cache=True, nogil=True)
def _best_response_kernel(
    infosets_desc: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    seq_values: np.ndarray,
    infoset_values: np.ndarray,
    best_slot: np.ndarray,
) -> int:
    """Bottom-up best response over one player's treeplex, in the responder's own utility.

    infosets_desc: int32[k], the responder's infosets in descending id (children first).
    offset, num_actions, first_seq, parent_seq: int32[num_infosets].
    seq_values: float64[num_sequences], holds g on entry and V on exit.
    infoset_values: float64[num_infosets] out; best_slot: int32[num_infosets] out (first argmax).
    """
    for i in range(infosets_desc.shape[0]):
        g = infosets_desc[i]
        first = first_seq[g]
        best = seq_values[first]
        arg = 0
        for a in range(1, num_actions[g]):
            v = seq_values[first + a]
            if v > best:
                best = v
                arg = a
        infoset_values[g] = best
        best_slot[g] = offset[g] + arg
        seq_values[parent_seq[g]] += best
    return 0


def _responder_nodes(tree: GameTree, responder: int) -> IntArray:
    key = f"decision_nodes_{responder}"
    cached = tree._cache.get(key)
    if cached is None:
        cached = np.flatnonzero(tree.player == responder).astype(np.int32)
        tree._cache[key] = cached
    return cached  # type: ignore[return-value]


def _infosets_desc(tree: GameTree, player: int) -> IntArray:
    key = f"infosets_desc_{player}"
    cached = tree._cache.get(key)
    if cached is None:
        cached = np.ascontiguousarray(tree.infosets_of(player)[::-1])
        tree._cache[key] = cached
    return cached  # type: ignore[return-value]


def best_response(
    tree: GameTree,
    strategy: FloatArray,
    responder: int,
    extra: sp.spmatrix | None = None,
    plan: FloatArray | None = None,
) -> BestResponse:
    """Best response of `responder` to the other player's part of `strategy`.

    `extra` is an optional additional payoff matrix B over (player-0 sequence, player-1 sequence)
    added to the game's payoff, as the gadgets of `caligo.subgame` use (Zhang & Sandholm 2021,
    appendix C). `plan`: the other player's realization plan of `strategy`, when the caller
    has it already (a gadget's builder does).
    """
    if responder not in (0, 1):
        raise ArgumentError(f"responder must be 0 or 1, got {responder!r}")
    fixed = 1 - responder
    s = np.ascontiguousarray(check_strategy(tree, strategy))
    x = realization_plan(tree, s, fixed) if plan is None else plan
    z = tree.terminals()
    sign = 1.0 if responder == 0 else -1.0  # responder's own utility
    w = tree.chance_reach[z] * tree.utility[z] * x[tree.seq[z, fixed]] * sign
    g: FloatArray = np.bincount(
        tree.seq[z, responder], weights=w, minlength=tree.num_sequences[responder]
    ).astype(np.float64)
    if extra is not None:
        contrib = extra.T @ x if responder == 1 else extra @ x
        g = g + sign * np.asarray(contrib, dtype=np.float64).ravel()
    seq_values = np.ascontiguousarray(g, dtype=np.float64)
    infoset_values = np.full(tree.num_infosets, np.nan)
    best_slot = np.full(tree.num_infosets, -1, dtype=np.int32)
    _best_response_kernel(
        _infosets_desc(tree, responder),
        tree.infoset_offset,
        tree.infoset_num_actions,
        tree.infoset_seq,
        tree.infoset_parent_seq,
        seq_values,
        infoset_values,
        best_slot,
    )
    nodes = _responder_nodes(tree, responder)
    reach = np.full(tree.num_infosets, np.nan)
    mine = tree.infoset_player == responder
    r = np.bincount(
        tree.infoset[nodes],
        weights=tree.chance_reach[nodes] * x[tree.seq[nodes, fixed]],
        minlength=tree.num_infosets,
    )
    reach[mine] = r[mine]
    out = s.copy()
    my = tree.infosets_of(responder)
    for g_id in my:
        off = tree.infoset_offset[g_id]
        out[off : off + tree.infoset_num_actions[g_id]] = 0.0
    out[best_slot[my]] = 1.0
    return BestResponse(
        responder=responder,
        value=float(seq_values[0] * sign),
        sequence_values=seq_values * sign,
        infoset_values=infoset_values * sign,
        infoset_reach=reach,
        strategy=out,
    )


def best_response_value(tree: GameTree, strategy: FloatArray, responder: int) -> float:
    """Player 0's utility when `responder` best-responds to the other player's strategy."""
    return best_response(tree, strategy, responder).value


def expected_value(tree: GameTree, strategy: FloatArray) -> float:
    """u(x, y): player 0's expected utility of the profile."""
    strategy = check_strategy(tree, strategy)
    x = realization_plan(tree, strategy, 0)
    y = realization_plan(tree, strategy, 1)
    z = tree.terminals()
    return float(
        np.sum(tree.chance_reach[z] * tree.utility[z] * x[tree.seq[z, 0]] * y[tree.seq[z, 1]])
    )


def nash_conv(tree: GameTree, strategy: FloatArray) -> float:
    """Sum of both players' best-response gains: max_x u(x, y) - min_y u(x, y)."""
    return best_response_value(tree, strategy, 0) - best_response_value(tree, strategy, 1)


def openspiel_exploitability(tree: GameTree, strategy: FloatArray) -> float:
    """NashConv / 2, the quantity `pyspiel.exploitability` reports."""
    return 0.5 * nash_conv(tree, strategy)


def player_exploitability(tree: GameTree, strategy: FloatArray, player: int = 0) -> float:
    """Zhang & Sandholm 2021's exploitability of one player's strategy: v* - u*(x) for player 0,
    u*(y) - v* for player 1, where v* is the game value for player 0."""
    from caligo.core.lp import game_value

    v = game_value(tree)
    if player == 0:
        return v - best_response_value(tree, strategy, 1)
    if player == 1:
        return best_response_value(tree, strategy, 0) - v
    raise ArgumentError(f"player must be 0 or 1, got {player!r}")

