"""Strategies over a `GameTree`: behavioral vectors over action slots, realization plans.

A *strategy* (profile) is one float64 vector over the tree's action slots, both players' infosets
together: slot `infoset_offset[g] + a` holds the probability of action a at infoset g. A player's
*realization plan* (sequence-form strategy, Zhang & Sandholm 2021, section 2) is a vector over that
player's sequences with x(empty) = 1 and x(Ia) = x(parent(I)) * sigma(I, a).

Conversions to and from OpenSpiel policies key infosets by `tree.infoset_names`, which for
OpenSpiel games are its information-state strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numba import njit

from caligo.core.tree import FloatArray, GameTree
from caligo.errors import CaligoError


class StrategyError(CaligoError, ValueError):
    """A strategy or policy that does not fit the tree."""


def uniform_strategy(tree: GameTree) -> FloatArray:
    """Every action at every infoset equally likely."""
    return (1.0 / tree.infoset_num_actions[tree.slot_infoset()]).astype(np.float64)


def check_strategy(tree: GameTree, strategy: FloatArray, atol: float = 1e-9) -> FloatArray:
    """Validate a strategy for `tree` (the public boundary of every solver and metric).

    Checks: a float vector with one entry per action slot of `tree` (a strategy of another game
    has another length), finite, no entry below -atol, summing to 1 within 1e-6 at every
    infoset. Returns it as float64; raises `StrategyError` naming the first problem.
    """
    try:
        s = np.asarray(strategy, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StrategyError(f"a strategy must be a float vector, got {type(strategy).__name__}"
                            f" ({exc})") from exc
    if s.shape != (tree.num_slots,):
        raise StrategyError(
            f"strategy has shape {s.shape}, but {tree.name!r} has {tree.num_slots} action slots "
            "(a strategy of another game?)")
    bad = np.flatnonzero(~np.isfinite(s) | (s < -atol))
    if bad.size:
        slot = int(bad[0])
        g = int(tree.slot_infoset()[slot])
        raise StrategyError(
            f"strategy has probability {s[slot]!r} at infoset {tree.infoset_names[g]!r} of "
            f"{tree.name!r} ({bad.size} slots are negative or not finite)")
    sums = np.add.reduceat(s, tree.infoset_offset) if tree.num_infosets else np.zeros(0)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-6)
    if bad.size:
        g = int(bad[0])
        raise StrategyError(
            f"strategy at infoset {tree.infoset_names[g]!r} of {tree.name!r} sums to "
            f"{sums[g]:.9g}, not 1 ({bad.size} infosets do not sum to 1)"
        )
    return s


def normalize_per_infoset(tree: GameTree, weights: FloatArray) -> FloatArray:
    """Turn nonnegative per-slot weights into a strategy; uniform where an infoset's sum is 0."""
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    sums = np.add.reduceat(w, tree.infoset_offset) if tree.num_infosets else np.zeros(0)
    g = tree.slot_infoset()
    tot = sums[g]
    uniform = 1.0 / tree.infoset_num_actions[g]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0.0, w / np.where(tot > 0.0, tot, 1.0), uniform)


@njit(cache=True, nogil=True)
def _realization_kernel(
    infosets: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    strategy: np.ndarray,
    out: np.ndarray,
) -> int:
    """Fill `out` (float64[num_sequences]) with the realization plan.

    infosets: int32[k] the player's infosets in ascending id (parents before children);
    offset, num_actions, first_seq, parent_seq: int32[num_infosets]; strategy: float64[slots].
    """
    out[0] = 1.0
    for i in range(infosets.shape[0]):
        g = infosets[i]
        base = out[parent_seq[g]]
        for a in range(num_actions[g]):
            out[first_seq[g] + a] = base * strategy[offset[g] + a]
    return 0


def realization_plan(tree: GameTree, strategy: FloatArray, player: int) -> FloatArray:
    """The player's sequence-form strategy x with x(empty) = 1."""
    out = np.empty(tree.num_sequences[player], dtype=np.float64)
    _realization_kernel(
        tree.infosets_of(player),
        tree.infoset_offset,
        tree.infoset_num_actions,
        tree.infoset_seq,
        tree.infoset_parent_seq,
        np.ascontiguousarray(strategy, dtype=np.float64),
        out,
    )
    return out


def behavioral_from_realization(
    tree: GameTree,
    plan: FloatArray,
    player: int,
    into: FloatArray | None = None,
    tol: float = 1e-12,
) -> FloatArray:
    """Write the player's behavioral strategy given by a realization plan into a strategy vector.

    Where the plan reaches an infoset with probability at most `tol`, the strategy is uniform.
    """
    out = uniform_strategy(tree) if into is None else np.array(into, dtype=np.float64)
    x = np.asarray(plan, dtype=np.float64)
    for g in tree.infosets_of(player):
        n = int(tree.infoset_num_actions[g])
        off = int(tree.infoset_offset[g])
        first = int(tree.infoset_seq[g])
        parent = x[tree.infoset_parent_seq[g]]
        kids = np.maximum(x[first : first + n], 0.0)
        total = kids.sum()
        if parent > tol and total > 0.0:
            out[off : off + n] = kids / total
        else:
            out[off : off + n] = 1.0 / n
    return out


def to_dict_policy(tree: GameTree, strategy: FloatArray) -> dict[str, list[tuple[int, float]]]:
    """Map infoset name -> [(action, probability), ...], OpenSpiel's dict-policy form."""
    s = np.asarray(strategy, dtype=np.float64)
    out: dict[str, list[tuple[int, float]]] = {}
    for g, name in enumerate(tree.infoset_names):
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        out[name] = [(int(tree.slot_action[off + a]), float(s[off + a])) for a in range(n)]
    return out


def from_dict_policy(
    tree: GameTree, policy: Mapping[str, Sequence[tuple[int, float]] | Mapping[int, float]]
) -> FloatArray:
    """Read a dict policy (lists of (action, prob) or action -> prob maps); missing = uniform."""
    s = uniform_strategy(tree)
    index = tree.infoset_index()
    for name, entry in policy.items():
        g = index.get(name)
        if g is None:
            raise StrategyError(f"policy names an infoset the tree does not have: {name!r}")
        pairs = entry.items() if isinstance(entry, Mapping) else entry
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        acts = {int(tree.slot_action[off + a]): off + a for a in range(n)}
        s[off : off + n] = 0.0
        for action, prob in pairs:
            if int(action) not in acts:
                raise StrategyError(f"action {action!r} is not legal at infoset {name!r}")
            s[acts[int(action)]] = float(prob)
    return s


def _pyspiel_game(tree: GameTree, game: Any) -> Any:
    """The (turn-based) pyspiel game of `tree`: from `game` (a pyspiel.Game or a game string)
    or, when None, from the tree's own name."""
    from caligo.core.openspiel_game import OpenSpielGame

    if game is None or isinstance(game, str):
        return OpenSpielGame(tree.name if game is None else game).pyspiel_game
    if hasattr(game, "get_type"):
        return OpenSpielGame.from_pyspiel(game).pyspiel_game
    raise StrategyError(f"expected a pyspiel.Game or a game string, got {game!r}")


def to_tabular_policy(tree: GameTree, strategy: FloatArray, pyspiel_game: Any = None) -> Any:
    """An OpenSpiel python `TabularPolicy` holding the strategy.

    pyspiel_game: the OpenSpiel game (a `pyspiel.Game` or a game string); by default the one
    named by `tree.name`. Simultaneous-move games are made turn-based, as the tree is.
    """
    from open_spiel.python import policy as os_policy

    s = check_strategy(tree, strategy)
    tab = os_policy.TabularPolicy(_pyspiel_game(tree, pyspiel_game))
    for g, name in enumerate(tree.infoset_names):
        row = tab.state_lookup.get(name)
        if row is None:
            raise StrategyError(f"OpenSpiel has no infoset {name!r}")
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        tab.action_probability_array[row, :] = 0.0
        tab.action_probability_array[row, tree.slot_action[off : off + n]] = s[off : off + n]
    return tab


def from_tabular_policy(tree: GameTree, tabular: Any) -> FloatArray:
    """Read an OpenSpiel policy into a strategy vector.

    Takes OpenSpiel's python `TabularPolicy` (read through its table) or any C++ `pyspiel.Policy`,
    such as `pyspiel.CFRPlusSolver().average_policy()` (read through `get_state_policy`).
    """
    if not hasattr(tabular, "state_lookup"):
        return from_dict_policy(
            tree, {name: tabular.get_state_policy(name) for name in tree.infoset_names}
        )
    s = np.empty(tree.num_slots, dtype=np.float64)
    for g, name in enumerate(tree.infoset_names):
        row = tabular.state_lookup.get(name)
        if row is None:
            raise StrategyError(f"the policy has no infoset {name!r}")
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        s[off : off + n] = tabular.action_probability_array[row, tree.slot_action[off : off + n]]
    return s
