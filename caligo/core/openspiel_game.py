"""Adapter from an OpenSpiel game to Caligo's game model.

A player's infoset key at a node is OpenSpiel's information-state string for that player (which
OpenSpiel keeps perfect-recall) together with whether the player acts there, so the key also
tells the player whether they have the move (seed 000 section 2, item 4). Simultaneous-move games
are made turn-based with `pyspiel.convert_to_turn_based` (DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pyspiel

from caligo.core.game import CHANCE, TERMINAL, UnknownGameError, UnsupportedGameError


class OpenSpielState:
    """A pyspiel state seen through the `State` protocol."""

    __slots__ = ("_s",)

    def __init__(self, state: pyspiel.State) -> None:
        self._s = state

    @property
    def pyspiel_state(self) -> pyspiel.State:
        return self._s

    def is_terminal(self) -> bool:
        return bool(self._s.is_terminal())

    def current_player(self) -> int:
        if self._s.is_terminal():
            return TERMINAL
        if self._s.is_chance_node():
            return CHANCE
        return int(self._s.current_player())

    def legal_actions(self) -> Sequence[int]:
        return self._s.legal_actions()  # type: ignore[no-any-return]

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        return self._s.chance_outcomes()  # type: ignore[no-any-return]

    def child(self, action: int) -> OpenSpielState:
        return OpenSpielState(self._s.child(action))

    def infoset_key(self, player: int) -> Hashable:
        acting = not self._s.is_terminal() and self._s.current_player() == player
        return (acting, self._s.information_state_string(player))

    def infoset_name(self, player: int) -> str:
        return str(self._s.information_state_string(player))

    def utility(self) -> float:
        return float(self._s.returns()[0])

    def action_string(self, action: int) -> str:
        player = self._s.current_player()
        return str(self._s.action_to_string(player, action))


class OpenSpielGame:
    """An OpenSpiel two-player zero-sum game, turn-based."""

    def __init__(self, spec: str) -> None:
        short_name = spec.split("(", 1)[0].strip()
        if short_name not in pyspiel.registered_names():
            raise UnknownGameError(
                f"unknown game {spec!r}: neither built in nor registered in OpenSpiel"
            )
        try:
            game = pyspiel.load_game(spec)
        except pyspiel.SpielError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "load failed"
            raise UnknownGameError(f"cannot load game {spec!r}: {first}") from exc
        gtype = game.get_type()
        if game.num_players() != 2:
            raise UnsupportedGameError(
                f"game {spec!r} has {game.num_players()} players; Caligo solves two-player games"
            )
        if gtype.utility not in (
            pyspiel.GameType.Utility.ZERO_SUM,
            pyspiel.GameType.Utility.CONSTANT_SUM,
        ):
            raise UnsupportedGameError(f"game {spec!r} is not zero-sum ({gtype.utility})")
        if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
            game = pyspiel.convert_to_turn_based(game)
            gtype = game.get_type()
        if not gtype.provides_information_state_string:
            raise UnsupportedGameError(f"game {spec!r} provides no information-state strings")
        self.name = spec
        self.pyspiel_game = game

    def new_initial_state(self) -> OpenSpielState:
        return OpenSpielState(self.pyspiel_game.new_initial_state())
