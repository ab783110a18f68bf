"""`load_game(game)`: a compiled `GameTree` from a game string, an OpenSpiel game or a built-in.

Accepted, as in `pyspiel.load_game`:

- a game string: a built-in (`matching_pennies_n(n=100)`, also `matching_pennies_n(100)`,
  `figure1`, `rock_paper_scissors`, `random_game(seed=3)`) or anything OpenSpiel loads
  (`leduc_poker`, `liars_dice(dice_sides=5)`); spaces around `(`, `,`, `=` and `)` are ignored;
- a name plus a parameter dict: `load_game("goofspiel", {"num_cards": 4})`;
- a `pyspiel.Game` object, or any object with `new_initial_state()` and `name` (the `Game`
  protocol of `caligo.core.game`).

Trees built from strings are cached (the 16 most recent, keyed by the normalized string and the
node limit), since trees are immutable.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from caligo.core import builtin_games, random_games
from caligo.core.figure1 import figure1
from caligo.core.game import ArgumentError, Game, GameError, UnknownGameError
from caligo.core.tree import DEFAULT_MAX_NODES, GameTree, build_tree

_SPEC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$", re.DOTALL)
_SPACE = re.compile(r"\s*([(),=])\s*")

BUILTINS: dict[str, Callable[..., Game]] = {
    "matching_pennies_n": builtin_games.matching_pennies_n,
    "rock_paper_scissors": builtin_games.rock_paper_scissors,
    "random_game": random_games.random_game,
    "figure1": figure1,
}

_CACHE_SIZE = 16
_cache: OrderedDict[tuple[str, int], GameTree] = OrderedDict()
_cache_lock = threading.Lock()


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


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float | str):
        text = str(value)
        if not text or any(c in text for c in "(),="):
            raise ArgumentError(f"game parameter value {value!r} cannot be written in a game "
                                "string")
        return text
    raise ArgumentError(f"game parameter values must be bool, int, float or str, got {value!r}")


def normalize_spec(spec: str, params: Mapping[str, object] | None = None) -> str:
    """The canonical game string: spaces around punctuation removed, `params` appended.

    `normalize_spec("goofspiel", {"num_cards": 4})` is "goofspiel(num_cards=4)".
    """
    if not isinstance(spec, str):
        raise ArgumentError(f"a game string must be a str, got {spec!r}")
    text = _SPACE.sub(r"\1", spec.strip())
    if not params:
        if params is not None and not isinstance(params, Mapping):
            raise ArgumentError(f"game parameters must be a dict, got {params!r}")
        return text
    if not isinstance(params, Mapping):
        raise ArgumentError(f"game parameters must be a dict, got {params!r}")
    if "(" in text:
        raise ArgumentError(f"give parameters in the game string {spec!r} or as a dict, not both")
    for key in params:
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ArgumentError(f"game parameter names must be identifiers, got {key!r}")
    body = ",".join(f"{k}={_format_value(v)}" for k, v in params.items())
    return f"{text}({body})"


def game_definition(spec: str, params: Mapping[str, object] | None = None) -> Game:
    """The game object (not yet compiled) for a game string (and optional parameters)."""
    spec = normalize_spec(spec, params)
    m = _SPEC.match(spec)
    if m and m.group(1) in BUILTINS:
        args: list[object] = []
        kwargs: dict[str, object] = {}
        if m.group(2):
            for part in m.group(2).split(","):
                if "=" in part:
                    key, value = part.split("=", 1)
                    kwargs[key] = _parse_value(value)
                elif part:
                    args.append(_parse_value(part))
        try:
            return BUILTINS[m.group(1)](*args, **kwargs)
        except GameError as exc:
            raise UnknownGameError(f"bad parameters in game {spec!r}: {exc}") from exc
        except TypeError as exc:  # unknown keyword or too many positional arguments
            raise UnknownGameError(f"bad parameters in game {spec!r}: {exc}") from exc
    from caligo.core.openspiel_game import OpenSpielGame

    return OpenSpielGame(spec)


def load_game(
    game: str | Any,
    params: Mapping[str, object] | None = None,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    progress: Callable[[int], None] | None = None,
) -> GameTree:
    """Compile a game into a `GameTree` (see the module docstring for what `game` may be).

    max_nodes: refuse (`GameTooLargeError`) past this many nodes. progress: called with the
    number of nodes built since the last call, every `caligo.core.tree.PROGRESS_EVERY` nodes
    (for a progress bar; library code never prints).
    """
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ArgumentError(f"max_nodes must be a positive int, got {max_nodes!r}")
    if not isinstance(game, str):
        if params is not None:
            raise ArgumentError("parameters go with a game string, not with a game object")
        return build_tree(_game_object(game), max_nodes=max_nodes, progress=progress)
    spec = normalize_spec(game, params)
    key = (spec, max_nodes)
    with _cache_lock:
        tree = _cache.get(key)
        if tree is not None:
            _cache.move_to_end(key)
            return tree
    tree = build_tree(game_definition(spec), max_nodes=max_nodes, progress=progress)
    with _cache_lock:
        _cache[key] = tree
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return tree


def _game_object(game: Any) -> Game:
    """A `Game` for a pyspiel game or an object that already follows the protocol."""
    if hasattr(game, "get_type") and hasattr(game, "num_players"):  # a pyspiel.Game
        from caligo.core.openspiel_game import OpenSpielGame

        return OpenSpielGame.from_pyspiel(game)
    if hasattr(game, "new_initial_state") and hasattr(game, "name"):
        return game  # type: ignore[no-any-return]
    raise ArgumentError(
        f"load_game takes a game string, a pyspiel.Game or a Caligo Game, got {game!r}")


@contextlib.contextmanager
def quiet_stderr() -> Iterator[list[str]]:
    """Send what C++ code writes to the process's stderr (file descriptor 2) to a buffer.

    pyspiel echoes every error it raises on stderr ("OpenSpiel exception: ..."), and Caligo
    reports the same error itself; the yielded list receives the swallowed text. Where stderr
    has no file descriptor (e.g. under pytest's capture) nothing is redirected.
    """
    captured: list[str] = []
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield captured
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield captured
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))
