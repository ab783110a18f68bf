"""Small random games for property tests: every kernel is checked against a reference on them.

`random_game(seed)` draws a perfect-recall game lazily from a hash of the history: node kinds,
chance probabilities, observations (a small alphabet plus "do I move now") and utilities. The
number of actions at a decision node is a function of the mover's infoset key, so every infoset
has one action set, and infoset keys are observation sequences, so perfect recall holds by
construction (Zhang & Sandholm 2021, section 2).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from caligo.core.builtin_games import TableGame
from caligo.core.game import CHANCE, TERMINAL, GameError

MAX_DEPTH = 100
"""The deepest random game: its histories are tuples and its tree is walked recursively."""
MAX_ACTIONS = 1000
"""The most actions at a node (and letters in the alphabet) of a random game: every node
lists its actions in full before any node limit applies."""


def random_game(
    seed: int,
    max_depth: int = 4,
    max_actions: int = 3,
    alphabet: int = 2,
    terminal_prob: float = 0.2,
    chance_prob: float = 0.2,
) -> TableGame:
    """A random two-player zero-sum game with chance, at most `max_depth` moves deep."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GameError(f"random_game needs an integer seed, got seed={seed!r}")
    for name, value, high in (("max_depth", max_depth, MAX_DEPTH),
                              ("max_actions", max_actions, MAX_ACTIONS),
                              ("alphabet", alphabet, MAX_ACTIONS)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise GameError(f"random_game needs an integer {name} in [1, {high}], "
                            f"got {name}={value!r}")
    for name, prob in (("terminal_prob", terminal_prob), ("chance_prob", chance_prob)):
        if isinstance(prob, bool) or not isinstance(prob, int | float) or not 0 <= prob <= 1:
            raise GameError(f"random_game needs {name} in [0, 1], got {name}={prob!r}")

    def rng(*key: Hashable) -> random.Random:
        # a str seed is hashed with SHA-512 by `random`, the same in every process; Python's
        # hash() of a tuple with strings changes with PYTHONHASHSEED, so a game did too
        return random.Random(repr((seed, *key)))

    def player_fn(h: tuple[int, ...]) -> int:
        if len(h) >= max_depth:
            return TERMINAL
        r = rng("kind", h).random()
        if h and r < terminal_prob:
            return TERMINAL
        if r < terminal_prob + chance_prob:
            return CHANCE
        return rng("player", h).randrange(2)

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        return (player_fn(h) == p, rng("obs", h, p).randrange(alphabet))

    def key_of(h: tuple[int, ...], p: int) -> tuple[Hashable, ...]:
        key: list[Hashable] = [None]
        for i in range(len(h)):
            if player_fn(h[:i]) == p:
                key.append(("act", h[i]))
            key.append(observe_fn(h[: i + 1], p))
        return tuple(key)

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        p = player_fn(h)
        if p == CHANCE:
            return list(range(1 + rng("chance_n", h).randrange(max_actions)))
        return list(range(1 + rng("n", key_of(h, p)).randrange(max_actions)))

    def utility_fn(h: tuple[int, ...]) -> float:
        return rng("u", h).randrange(-4, 5) / 4.0

    given = (("max_depth", max_depth, 4), ("max_actions", max_actions, 3),
             ("alphabet", alphabet, 2), ("terminal_prob", terminal_prob, 0.2),
             ("chance_prob", chance_prob, 0.2))
    params = "".join(f",{k}={v!r}" for k, v, default in given if v != default)
    return TableGame(
        f"random_game(seed={seed}{params})",
        player_fn,
        actions_fn,
        observe_fn,
        utility_fn,
        {a: f"a{a}" for a in range(max_actions)},
    )
