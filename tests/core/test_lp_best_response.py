"""LP equilibria, best response, exploitability and NashConv checked against OpenSpiel.

Expected values: Kuhn value -1/18 and Leduc -0.0856064240780 (OpenSpiel's sequence-form LP,
docs/design.md, "Reference values"); every other expected number is computed in the test by
`pyspiel.nash_conv` / `pyspiel.exploitability`, which we did not write.
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from caligo.core.best_response import (
    best_response,
    expected_value,
    nash_conv,
    openspiel_exploitability,
    player_exploitability,
)
from caligo.core.games import game_definition, load_game
from caligo.core.lp import epsilon_floors, solve_lp, solve_player
from caligo.core.strategy import (
    from_dict_policy,
    from_tabular_policy,
    normalize_per_infoset,
    to_dict_policy,
    to_tabular_policy,
    uniform_strategy,
)

OS_GAMES = [
    "kuhn_poker",
    "leduc_poker",
    "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
    "liars_dice(dice_sides=5)",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
]


def _pyspiel_game(spec: str) -> pyspiel.Game:
    return game_definition(spec).pyspiel_game  # type: ignore[attr-defined]


def test_kuhn_value() -> None:
    assert solve_lp(load_game("kuhn_poker")).value == pytest.approx(-1 / 18, abs=1e-12)


def test_leduc_value() -> None:
    assert solve_lp(load_game("leduc_poker")).value == pytest.approx(-0.0856064240780, abs=1e-11)


@pytest.mark.parametrize("spec", OS_GAMES)
def test_lp_strategies_are_equilibria(spec: str) -> None:
    tree = load_game(spec)
    lp = solve_lp(tree)
    assert player_exploitability(tree, lp.strategy, 0) < 1e-9
    assert player_exploitability(tree, lp.strategy, 1) < 1e-9
    assert nash_conv(tree, lp.strategy) < 1e-9
    assert expected_value(tree, lp.strategy) == pytest.approx(lp.value, abs=1e-9)


@pytest.mark.parametrize("spec", OS_GAMES)
def test_nash_conv_matches_openspiel(spec: str) -> None:
    tree = load_game(spec)
    game = _pyspiel_game(spec)
    rng = np.random.default_rng(7)
    strategies = [
        uniform_strategy(tree),
        normalize_per_infoset(tree, rng.random(tree.num_slots)),
        normalize_per_infoset(tree, rng.random(tree.num_slots) ** 4),
        solve_lp(tree).strategy,
    ]
    for s in strategies:
        policy = to_dict_policy(tree, s)
        assert nash_conv(tree, s) == pytest.approx(pyspiel.nash_conv(game, policy), abs=1e-9)
        assert openspiel_exploitability(tree, s) == pytest.approx(
            pyspiel.exploitability(game, policy), abs=1e-9
        )


def test_uniform_golden_values() -> None:
    # docs/design.md, "Reference values": uniform NashConv 11/12 (Kuhn), 4.7472222222 (Leduc).
    assert nash_conv(load_game("kuhn_poker"), uniform_strategy(load_game("kuhn_poker"))) == (
        pytest.approx(11 / 12, abs=1e-12)
    )
    leduc = load_game("leduc_poker")
    assert nash_conv(leduc, uniform_strategy(leduc)) == pytest.approx(4.7472222222, abs=1e-9)
    assert best_response(leduc, uniform_strategy(leduc), 0).value == pytest.approx(2.0875)


def test_counterfactual_values_brute_force() -> None:
    """u*(x|Ia) from the sequence-form pass equals a direct min over opponent pure strategies.

    Rock-paper-scissors: player 1 has one infoset, so u*(x|I a) is just u(x, a)."""
    tree = load_game("rock_paper_scissors")
    s = uniform_strategy(tree)
    s[:3] = [0.5, 0.3, 0.2]  # player 0: rock .5, paper .3, scissors .2
    br = best_response(tree, s, 1)
    cf = br.counterfactual_sequence_values(tree)
    # u(x, rock) = .5*0 + .3*1 + .2*-1 = .1; paper: .5*-1 + 0 + .2*1 = -.3; scissors: .5 - .3 = .2
    assert cf[1:] == pytest.approx([0.1, -0.3, 0.2])
    assert br.value == pytest.approx(-0.3)


def test_policy_round_trips() -> None:
    tree = load_game("leduc_poker")
    rng = np.random.default_rng(1)
    s = normalize_per_infoset(tree, rng.random(tree.num_slots))
    assert np.allclose(from_dict_policy(tree, to_dict_policy(tree, s)), s)
    tab = to_tabular_policy(tree, s, _pyspiel_game("leduc_poker"))
    assert np.allclose(from_tabular_policy(tree, tab), s)
    # a C++ pyspiel.Policy, as OpenSpiel's solvers return it
    solver = pyspiel.CFRPlusSolver(_pyspiel_game("leduc_poker"))
    solver.evaluate_and_update_policy()
    cpp = solver.average_policy()
    ours = from_tabular_policy(tree, cpp)
    name = tree.infoset_names[0]
    expected = dict(cpp.get_state_policy(name))
    off = tree.infoset_offset[0]
    n = int(tree.infoset_num_actions[0])
    got = {int(tree.slot_action[off + a]): ours[off + a] for a in range(n)}
    assert got == pytest.approx(expected)


def test_epsilon_floor_lp() -> None:
    """The floored LP respects its floors and is no better than the unconstrained value."""
    tree = load_game("kuhn_poker")
    eps = 0.25
    floors = epsilon_floors(tree, 0, eps)
    res = solve_player(tree, 0, floors=floors)
    mine = np.isin(tree.slot_infoset(), tree.infosets_of(0))
    assert np.all(res.strategy[mine] >= floors[mine] - 1e-9)
    assert res.value <= solve_lp(tree).value + 1e-12
    # Table 1 blueprint for Kuhn: exploitability 0.012401 after mapping utilities onto [-1, 1]
    # (divide by 2), docs/design.md, "Reference values".
    assert (solve_lp(tree).value - res.value) / 2 == pytest.approx(0.012401, abs=1e-6)


def test_tie_breaks_return_optimal_strategies_of_kuhn() -> None:
    """Every tie-break returns a max-min strategy of Kuhn poker, and they differ.

    Expected values: Kuhn (1950) / the analytic solution on OpenSpiel's Kuhn page: player 0's
    equilibria are a one-parameter family, bet the Jack with alpha in [0, 1/3], the King with
    3 alpha, call a bet with the Queen with alpha + 1/3; the value is -1/18. Random objectives
    on the optimal face must land on both ends of [0, 1/3] (its vertices) and nowhere else.
    """
    from caligo.core.lp import TieBreak

    tree = load_game("kuhn_poker")
    idx = tree.infoset_index()

    def prob(s: np.ndarray, name: str, action: int) -> float:
        return float(s[tree.infoset_offset[idx[name]] + action])

    alphas = set()
    for tb, seeds in ((TieBreak.SIMPLEX, [0]), (TieBreak.IPM, [0]), (TieBreak.RANDOM, range(8))):
        for seed in seeds:
            res = solve_player(tree, 0, tie_break=tb, rng=np.random.default_rng(seed))
            assert res.value == pytest.approx(-1 / 18, abs=1e-9)
            assert player_exploitability(tree, res.strategy, 0) < 1e-8
            alpha = prob(res.strategy, "0", 1)  # Jack: action 1 = bet
            assert -1e-8 <= alpha <= 1 / 3 + 1e-8
            assert prob(res.strategy, "2", 1) == pytest.approx(3 * alpha, abs=1e-7)
            assert prob(res.strategy, "1pb", 1) == pytest.approx(alpha + 1 / 3, abs=1e-7)
            if tb is TieBreak.RANDOM:
                alphas.add(round(alpha, 6))
    assert alphas == {0.0, round(1 / 3, 6)}


def test_random_tie_break_needs_rng() -> None:
    from caligo.core.lp import LPError, TieBreak

    with pytest.raises(LPError, match="rng"):
        solve_player(load_game("kuhn_poker"), 0, tie_break=TieBreak.RANDOM)
