"""The game model of Zhang & Sandholm 2021, section 2: two players, chance, both observing.

A `State` is one node of an extensive-form perfect-recall zero-sum game. Besides the usual
`current_player` / `legal_actions` / `child`, it gives each player's *infoset key* at every node,
also where that player does not act: the player's sequence of observations and own actions so far
(Zhang & Sandholm 2021, section 2). Two nodes share player i's infoset exactly when their keys for i
are equal. That is what the knowledge hypergraph (section 3, Definition 1) is built from.

Player numbering: 0 is the seeds' maximizer (⊕), 1 the minimizer (⊖); `CHANCE` and `TERMINAL`
mark the other node kinds. Utilities are always player 0's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

from caligo.errors import CaligoError

CHANCE = 2
TERMINAL = 3


class GameError(CaligoError, ValueError):
    """Base class for errors about a game (its spec, its shape or its size)."""


class ArgumentError(CaligoError, ValueError):
    """An argument outside its range: a player other than 0 or 1, a negative count, an epsilon
    outside [0, 1]. The message names the argument and quotes the value."""


class UnknownGameError(GameError):
    """The game string names no built-in game and OpenSpiel cannot load it."""


class UnsupportedGameError(GameError):
    """The game is not a two-player zero-sum game of the supported kind."""


class GameTooLargeError(GameError):
    """Building the tree would exceed the node limit."""


class State(Protocol):
    """One node of a game, as the tree builder sees it."""

    def is_terminal(self) -> bool:
        """Whether the node is terminal."""
        ...

    def current_player(self) -> int:
        """0 or 1 for a decision node, `CHANCE` for chance, `TERMINAL` for a leaf."""
        ...

    def legal_actions(self) -> Sequence[int]:
        """Actions at a decision node, in a fixed order."""
        ...

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        """(action, probability) pairs at a chance node."""
        ...

    def child(self, action: int) -> State:
        """The node reached by playing `action`."""
        ...

    def infoset_key(self, player: int) -> Hashable:
        """The player's observation sequence at this node (defined at every node)."""
        ...

    def infoset_name(self, player: int) -> str:
        """A readable name of the player's infoset, unique per infoset (OpenSpiel: its string)."""
        ...

    def utility(self) -> float:
        """Player 0's utility at a terminal node."""
        ...

    def action_string(self, action: int) -> str:
        """A readable name of `action` at this node."""
        ...


class Game(Protocol):
    """A two-player zero-sum game with a root state."""

    @property
    def name(self) -> str:
        """The game's spec or name."""
        ...

    def new_initial_state(self) -> State:
        """The root node."""
        ...
