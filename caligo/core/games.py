"""`load_game(spec)`: a compiled `GameTree` from a built-in name or an OpenSpiel game string.

Built-in specs: `matching_pennies_n(n=100)` (also `matching_pennies_n(100)`), `figure1`
(seed 000 Figure 1), `rock_paper_scissors`. Anything else goes to OpenSpiel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from caligo.core import builtin_games, random_games
from caligo.core.figure1 import figure1
from caligo.core.game import Game, UnknownGameError
from caligo.core.tree import DEFAULT_MAX_NODES, GameTree, build_tree

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$")

BUILTINS: dict[str, Callable[..., Game]] = {
    "matching_pennies_n": builtin_games.matching_pennies_n,
    "rock_paper_scissors": builtin_games.rock_paper_scissors,
    "random_game": random_games.random_game,
    "figure1": figure1,
}


def register_builtin(name: str, factory: Callable[..., Game]) -> None:
    """Make `factory` loadable as `name` or `name(arg=value, ...)`."""
    BUILTINS[name] = factory


def _parse_value(text: str) -> int | float | str:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def game_definition(spec: str) -> Game:
    """The game object (not yet compiled) for a spec."""
    m = _SPEC.match(spec)
    if m and m.group(1) in BUILTINS:
        args: list[object] = []
        kwargs: dict[str, object] = {}
        if m.group(2):
            for part in m.group(2).split(","):
                if "=" in part:
                    key, value = part.split("=", 1)
                    kwargs[key.strip()] = _parse_value(value.strip())
                elif part.strip():
                    args.append(_parse_value(part.strip()))
        try:
            return BUILTINS[m.group(1)](*args, **kwargs)
        except TypeError as exc:
            raise UnknownGameError(f"bad parameters in game {spec!r}: {exc}") from exc
    from caligo.core.openspiel_game import OpenSpielGame

    return OpenSpielGame(spec)


@functools.lru_cache(maxsize=16)
def load_game(spec: str, max_nodes: int = DEFAULT_MAX_NODES) -> GameTree:
    """Compile the game named by `spec`; cached, since trees are immutable."""
    return build_tree(game_definition(spec), max_nodes=max_nodes)


