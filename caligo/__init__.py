"""Caligo: subgame solving without common knowledge, and Fog of War chess.

The main entry points are importable from here::

    import caligo

    tree = caligo.load_game("leduc_poker")                      # a compiled GameTree
    result = caligo.solve_cfr(tree, caligo.CFRConfig.cfr_plus(), 1000)
    caligo.nash_conv(tree, result.average)                      # OpenSpiel's NashConv
    policy = caligo.to_tabular_policy(tree, result.average)     # an OpenSpiel TabularPolicy

They load lazily (PEP 562): `import caligo`, `import caligo.errors` and `import caligo.fow` do
not import OpenSpiel, scipy or the solver kernels; the first use of a name here does. The Fog
of War chess rules are in `caligo.fow`. docs/api.md has a quick start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from caligo.errors import CaligoError

__version__ = "0.1.0"

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    # games and trees
    "load_game": "caligo.core.games",
    "GameTree": "caligo.core.tree",
    "GameError": "caligo.core.game",
    "UnknownGameError": "caligo.core.game",
    "UnsupportedGameError": "caligo.core.game",
    "GameTooLargeError": "caligo.core.game",
    # strategies and OpenSpiel policies
    "uniform_strategy": "caligo.core.strategy",
    "check_strategy": "caligo.core.strategy",
    "normalize_per_infoset": "caligo.core.strategy",
    "realization_plan": "caligo.core.strategy",
    "to_tabular_policy": "caligo.core.strategy",
    "from_tabular_policy": "caligo.core.strategy",
    "StrategyError": "caligo.core.strategy",
    "save_strategy": "caligo.core.strategy_file",
    "load_strategy": "caligo.core.strategy_file",
    # solvers
    "solve_cfr": "caligo.core.cfr",
    "CFRConfig": "caligo.core.cfr",
    "CFRSolver": "caligo.core.cfr",
    "CFRResult": "caligo.core.cfr",
    "Algorithm": "caligo.core.cfr",
    "solve_lp": "caligo.core.lp",
    "solve_player": "caligo.core.lp",
    "game_value": "caligo.core.lp",
    "TieBreak": "caligo.core.lp",
    "LPResult": "caligo.core.lp",
    # best response and the three exploitability measures
    "best_response": "caligo.core.best_response",
    "nash_conv": "caligo.core.best_response",
    "openspiel_exploitability": "caligo.core.best_response",
    "player_exploitability": "caligo.core.best_response",
    "expected_value": "caligo.core.best_response",
    # subgame solving
    "make_subgame": "caligo.subgame.gadget",
    "SubgameOptions": "caligo.subgame.gadget",
    "GadgetKind": "caligo.subgame.gadget",
    "Subgame": "caligo.subgame.gadget",
    "SubgameError": "caligo.subgame.gadget",
    "lift": "caligo.subgame.gadget",
    "solve_subgame": "caligo.subgame.solve",
    "SolveMethod": "caligo.subgame.solve",
    "SubgameSolution": "caligo.subgame.solve",
    "make_safe_klss_subgame": "caligo.subgame.safe_klss",
    "nested_solve": "caligo.subgame.nested",
    "NestedConfig": "caligo.subgame.nested",
}

__all__ = [
    "Algorithm",
    "CFRConfig",
    "CFRResult",
    "CFRSolver",
    "CaligoError",
    "GadgetKind",
    "GameError",
    "GameTooLargeError",
    "GameTree",
    "LPResult",
    "NestedConfig",
    "SolveMethod",
    "StrategyError",
    "Subgame",
    "SubgameError",
    "SubgameOptions",
    "SubgameSolution",
    "TieBreak",
    "UnknownGameError",
    "UnsupportedGameError",
    "__version__",
    "best_response",
    "check_strategy",
    "expected_value",
    "from_tabular_policy",
    "game_value",
    "lift",
    "load_game",
    "load_strategy",
    "make_safe_klss_subgame",
    "make_subgame",
    "nash_conv",
    "nested_solve",
    "normalize_per_infoset",
    "openspiel_exploitability",
    "player_exploitability",
    "realization_plan",
    "save_strategy",
    "solve_cfr",
    "solve_lp",
    "solve_player",
    "solve_subgame",
    "to_tabular_policy",
    "uniform_strategy",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'caligo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from caligo.core.best_response import (
        best_response,
        expected_value,
        nash_conv,
        openspiel_exploitability,
        player_exploitability,
    )
    from caligo.core.cfr import Algorithm, CFRConfig, CFRResult, CFRSolver, solve_cfr
    from caligo.core.game import (
        GameError,
        GameTooLargeError,
        UnknownGameError,
        UnsupportedGameError,
    )
    from caligo.core.games import load_game
    from caligo.core.lp import LPResult, TieBreak, game_value, solve_lp, solve_player
    from caligo.core.strategy import (
        StrategyError,
        check_strategy,
        from_tabular_policy,
        normalize_per_infoset,
        realization_plan,
        to_tabular_policy,
        uniform_strategy,
    )
    from caligo.core.strategy_file import load_strategy, save_strategy
    from caligo.core.tree import GameTree
    from caligo.subgame.gadget import (
        GadgetKind,
        Subgame,
        SubgameError,
        SubgameOptions,
        lift,
        make_subgame,
    )
    from caligo.subgame.nested import NestedConfig, nested_solve
    from caligo.subgame.safe_klss import make_safe_klss_subgame
    from caligo.subgame.solve import SolveMethod, SubgameSolution, solve_subgame
