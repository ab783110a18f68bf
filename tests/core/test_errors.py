"""Errors at the public boundary: one CaligoError root, game strings and strategies validated.

Expected node counts come from Zhang & Sandholm 2021, Table 2 (docs/design.md, "Reference values"):
Kuhn 58, 4-card Goofspiel (ascending, turn-based) 1077, Liar's Dice (5-sided) 51181.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import numpy as np
import pyspiel
import pytest

import caligo
from caligo.core.best_response import (
    best_response,
    expected_value,
    nash_conv,
    openspiel_exploitability,
    player_exploitability,
)
from caligo.core.game import ArgumentError, GameError, UnknownGameError, UnsupportedGameError
from caligo.core.games import load_game, normalize_spec
from caligo.core.strategy import StrategyError, to_tabular_policy, uniform_strategy
from caligo.errors import CaligoError

LAYERS = ("caligo.core", "caligo.subgame", "caligo.experiments")


def _error_classes() -> list[type[BaseException]]:
    found = []
    for layer in LAYERS:
        package = importlib.import_module(layer)
        for info in pkgutil.iter_modules(package.__path__, layer + "."):
            module = importlib.import_module(info.name)
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if issubclass(obj, Exception) and obj.__module__ == info.name:
                    found.append(obj)
    return found


def test_every_error_class_is_a_caligo_error() -> None:
    classes = _error_classes()
    names = {c.__name__ for c in classes}
    assert {"GameError", "StrategyError", "LPError", "KernelError", "NestedSolveError",
            "SubgameError", "CFRConfigError", "MarginsError", "KnowledgeError"} <= names
    for cls in classes:
        assert issubclass(cls, CaligoError), cls
    # callers that catch the builtin bases keep working
    from caligo.core.lp import LPError

    assert issubclass(GameError, ValueError) and issubclass(StrategyError, ValueError)
    assert issubclass(LPError, RuntimeError)


def test_load_game_takes_pyspiel_games_and_param_dicts() -> None:
    assert load_game(pyspiel.load_game("kuhn_poker")).num_nodes == 58
    goof = load_game("goofspiel", {"num_cards": 4, "imp_info": True,
                                   "points_order": "ascending"})
    assert goof.num_nodes == 1077
    assert goof is load_game("goofspiel(num_cards=4, imp_info=True, points_order=ascending)")
    assert load_game(" liars_dice( dice_sides = 5 ) ").num_nodes == 51181
    assert normalize_spec("goofspiel", {"num_cards": 4}) == "goofspiel(num_cards=4)"


def test_load_game_max_nodes_is_keyword_only() -> None:
    with pytest.raises(ArgumentError, match="dict"):
        load_game("leduc_poker", 1000)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="max_nodes"):
        load_game("kuhn_poker", max_nodes=-1)
    with pytest.raises(ArgumentError, match="not both"):
        load_game("goofspiel(num_cards=4)", {"imp_info": True})


@pytest.mark.parametrize(("spec", "cls", "words"), [
    ("liars_dice(numdice=0)", UnsupportedGameError, "liars_dice(numdice=0)"),
    ("goofspiel(num_cards=0)", UnsupportedGameError, "no move"),
    ("kuhn_poker(foo=1)", UnknownGameError, "Unknown parameter 'foo'"),
    ("matching_pennies_n(n=2.5)", UnknownGameError, "n=2.5"),
    ("matching_pennies_n(n=abc)", UnknownGameError, "n='abc'"),
    ("matching_pennies_n(n=0)", UnknownGameError, "n in [1, 100000]"),
    # these listed every action before the node limit applied: a MemoryError after seconds
    ("matching_pennies_n(n=100000000)", UnknownGameError, "n in [1, 100000]"),
    ("random_game(seed=1,max_actions=100000000)", UnknownGameError, "max_actions in [1, 1000]"),
    ("random_game(seed=1,max_depth=1000000)", UnknownGameError, "max_depth in [1, 100]"),
    ("random_game(seed=x)", UnknownGameError, "seed"),
    ("no_such_game", UnknownGameError, "no_such_game"),
])
def test_bad_game_strings_raise_a_game_error(spec: str, cls: type, words: str) -> None:
    with pytest.raises(cls) as info:
        load_game(spec)
    assert words in str(info.value)
    assert isinstance(info.value, CaligoError)


def test_a_random_game_is_named_by_every_parameter_it_was_given() -> None:
    """The name loads the same game again, and the node-limit error names the game asked for
    (it said `random_game(seed=2)` for any depth, branching or probabilities)."""
    spec = "random_game(seed=2,max_depth=12,max_actions=5,terminal_prob=0.05)"
    with pytest.raises(GameError, match=re.escape(f"game {spec!r} has more than 1000 nodes")):
        load_game(spec, max_nodes=1000)
    small = load_game("random_game(seed=2,max_depth=5,chance_prob=0.5)")
    assert small.name == "random_game(seed=2,max_depth=5,chance_prob=0.5)"
    again = load_game(small.name)
    assert (again.num_nodes, again.num_infosets) == (small.num_nodes, small.num_infosets)
    assert load_game("random_game(seed=2)").name == "random_game(seed=2)"


def test_strategy_validation_at_the_public_boundary() -> None:
    leduc = load_game("leduc_poker")
    kuhn = load_game("kuhn_poker")
    s = uniform_strategy(leduc)
    nan = s.copy()
    nan[5] = np.nan
    for fn in (nash_conv, openspiel_exploitability, player_exploitability, expected_value):
        with pytest.raises(StrategyError, match="sums to 2"):
            fn(leduc, 2 * s)
        with pytest.raises(StrategyError, match="nan"):
            fn(leduc, nan)
        with pytest.raises(StrategyError, match="another game"):
            fn(leduc, uniform_strategy(kuhn))
    with pytest.raises(StrategyError, match="another game"):
        best_response(leduc, uniform_strategy(kuhn), 1)
    with pytest.raises(StrategyError, match="sums to"):
        to_tabular_policy(leduc, 2 * s)
    with pytest.raises(StrategyError, match="float vector"):
        nash_conv(leduc, "uniform")  # type: ignore[arg-type]


def test_to_tabular_policy_finds_the_game_itself() -> None:
    """Without a pyspiel game the tree's own game string is loaded; the policy evaluates to the
    same exploitability in OpenSpiel (the uniform Kuhn policy: 11/24, docs/design.md, "Reference
    values")."""
    tree = load_game("kuhn_poker")
    s = uniform_strategy(tree)
    for game in (None, "kuhn_poker", pyspiel.load_game("kuhn_poker")):
        tab = to_tabular_policy(tree, s, game)
        assert pyspiel.exploitability(pyspiel.load_game("kuhn_poker"),
                                      tab.to_dict()) == pytest.approx(11 / 24)
    assert caligo.__version__
