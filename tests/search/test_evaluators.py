"""The leaf evaluators of the small games (`caligo.search.evaluators`), node by node against
OpenSpiel.

Expected values are computed here on OpenSpiel's own states (`pyspiel`), walked in step with
the compiled tree by action label: the perfect-information value (both players see the state:
player 0 maximizes, player 1 minimizes, chance by expectation) and the value of uniform play.
An equilibrium profile's root value is the game value: Kuhn poker's -1/18 (Kuhn 1950).
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.games import load_game
from caligo.core.lp import solve_lp
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.evaluators import (
    PerfectInfoEvaluator,
    ProfileValueEvaluator,
    ZeroEvaluator,
    perfect_information_values,
    profile_values,
)
from caligo.search.game import TreeGame

GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)"]


def _os_perfect_info(state: pyspiel.State) -> float:
    if state.is_terminal():
        return float(state.returns()[0])
    if state.is_chance_node():
        return sum(p * _os_perfect_info(state.child(a)) for a, p in state.chance_outcomes())
    vals = [_os_perfect_info(state.child(a)) for a in state.legal_actions()]
    return max(vals) if state.current_player() == 0 else min(vals)


def _os_uniform(state: pyspiel.State) -> float:
    if state.is_terminal():
        return float(state.returns()[0])
    if state.is_chance_node():
        return sum(p * _os_uniform(state.child(a)) for a, p in state.chance_outcomes())
    acts = state.legal_actions()
    return sum(_os_uniform(state.child(a)) for a in acts) / len(acts)


def _pairs(tree: GameTree, state: pyspiel.State, h: int = 0, depth: int = 0,
           out: list[tuple[int, pyspiel.State]] | None = None,
           ) -> list[tuple[int, pyspiel.State]]:
    """(tree node, OpenSpiel state) for every node down to depth 4, matched by action label."""
    out = [] if out is None else out
    out.append((h, state))
    if depth == 4 or tree.player[h] == TERMINAL:
        return out
    assert state.is_chance_node() == (tree.player[h] == CHANCE)
    c0 = int(tree.first_child[h])
    for c in range(c0, c0 + int(tree.num_children[h])):
        _pairs(tree, state.child(int(tree.action[c])), c, depth + 1, out)
    return out


@pytest.mark.parametrize("game", GAMES)
def test_perfect_information_values_are_openspiel_s_minimax(game: str) -> None:
    tree = load_game(game)
    values = perfect_information_values(tree)
    pairs = _pairs(tree, pyspiel.load_game(game).new_initial_state())
    assert len(pairs) > 20
    for h, state in pairs:
        assert values[h] == pytest.approx(_os_perfect_info(state), abs=1e-12), state.history()


@pytest.mark.parametrize("game", GAMES)
def test_profile_values_of_uniform_play_are_openspiel_s(game: str) -> None:
    tree = load_game(game)
    values = profile_values(tree, uniform_strategy(tree))
    for h, state in _pairs(tree, pyspiel.load_game(game).new_initial_state()):
        assert values[h] == pytest.approx(_os_uniform(state), abs=1e-12), state.history()


def test_an_equilibrium_is_worth_the_game_value_at_the_root() -> None:
    tree = load_game("kuhn_poker")
    lp = solve_lp(tree)
    ev = ProfileValueEvaluator(tree, lp.strategy)
    assert ev.states(np.array([0]))[0] == pytest.approx(-1 / 18, abs=1e-9)
    # the perfect-information value is an upper bound for player 0 (seeing the cards helps)
    assert PerfectInfoEvaluator(tree).states(np.array([0]))[0] > -1 / 18


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_evaluators_answer_a_batch_in_its_order(game: str) -> None:
    tree = load_game(game)
    g = TreeGame(tree)
    values = perfect_information_values(tree)
    parents = np.flatnonzero(tree.player != TERMINAL)[:5].astype(np.int64)
    batch = g.expand(parents)
    ev = PerfectInfoEvaluator(tree)
    np.testing.assert_array_equal(ev.children(parents, batch), values[batch.state])
    picks = np.array([3, 0, 3, tree.num_nodes - 1], dtype=np.int64)
    np.testing.assert_array_equal(ev.states(picks), values[picks])
    zero = ZeroEvaluator()
    assert zero.children(parents, batch).shape == batch.state.shape
    assert not zero.children(parents, batch).any() and not zero.states(picks).any()
