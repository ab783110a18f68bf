"""Adapter from an OpenSpiel game to Caligo's game model.

A player's infoset key at a node is OpenSpiel's information-state string for that player (which
OpenSpiel keeps perfect-recall) together with whether the player acts there, so the key also
tells the player whether they have the move (Zhang & Sandholm 2021, section 2, item 4).
Simultaneous-move games are made turn-based with `pyspiel.convert_to_turn_based` (docs/design.md).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

import pyspiel

from caligo.core.game import CHANCE, TERMINAL, UnknownGameError, UnsupportedGameError


class OpenSpielState:
    """A pyspiel state seen through the `State` protocol.

    OpenSpiel raises `pyspiel.SpielError` on states its rules cannot handle (e.g.
    `liars_dice(numdice=0)` at the first roll); those become `UnsupportedGameError` naming the game.
    """

    __slots__ = ("_name", "_s")

    def __init__(self, state: pyspiel.State, name: str = "") -> None:
        self._s = state
        self._name = name

    @property
    def pyspiel_state(self) -> pyspiel.State:
        return self._s

    def _failed(self, exc: pyspiel.SpielError) -> UnsupportedGameError:
        return UnsupportedGameError(f"OpenSpiel cannot expand game {self._name!r}: "
                                    f"{_first_line(exc)}")

    def is_terminal(self) -> bool:
        return bool(self._s.is_terminal())

    def current_player(self) -> int:
        if self._s.is_terminal():
            return TERMINAL
        if self._s.is_chance_node():
            return CHANCE
        return int(self._s.current_player())

    def legal_actions(self) -> Sequence[int]:
        try:
            return self._s.legal_actions()  # type: ignore[no-any-return]
        except pyspiel.SpielError as exc:
            raise self._failed(exc) from exc

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        try:
            return self._s.chance_outcomes()  # type: ignore[no-any-return]
        except pyspiel.SpielError as exc:
            raise self._failed(exc) from exc

    def child(self, action: int) -> OpenSpielState:
        try:
            return OpenSpielState(self._s.child(action), self._name)
        except pyspiel.SpielError as exc:
            raise self._failed(exc) from exc

    def infoset_key(self, player: int) -> Hashable:
        acting = not self._s.is_terminal() and self._s.current_player() == player
        return (acting, self._s.information_state_string(player))

    def infoset_name(self, player: int) -> str:
        return str(self._s.information_state_string(player))

    def utility(self) -> float:
        try:
            return float(self._s.returns()[0])
        except pyspiel.SpielError as exc:
            raise self._failed(exc) from exc

    def action_string(self, action: int) -> str:
        player = self._s.current_player()
        return str(self._s.action_to_string(player, action))


def _first_line(exc: BaseException) -> str:
    """The first line of OpenSpiel's message, without its C++ source location."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else "failed"
    return re.sub(r"^\S+\.(?:cc|h):\d+\s+", "", line)


class OpenSpielGame:
    """An OpenSpiel two-player zero-sum game, turn-based."""

    def __init__(self, spec: str) -> None:
        short_name = spec.split("(", 1)[0].strip()
        if short_name not in pyspiel.registered_names():
            raise UnknownGameError(
                f"unknown game {spec!r}: neither built in nor registered in OpenSpiel"
            )
        from caligo.core.games import quiet_stderr

        try:
            with quiet_stderr():  # pyspiel also prints the error on stderr; we report it once
                game = pyspiel.load_game(spec)
        except pyspiel.SpielError as exc:
            raise UnknownGameError(f"cannot load game {spec!r}: {_first_line(exc)}") from exc
        self._setup(spec, game)

    @classmethod
    def from_pyspiel(cls, game: pyspiel.Game) -> OpenSpielGame:
        """Wrap an already loaded `pyspiel.Game` (named by its own game string)."""
        self = cls.__new__(cls)
        self._setup(str(game), game)
        return self

    def _setup(self, spec: str, game: pyspiel.Game) -> None:
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
        self._probe()

    def _probe(self) -> None:
        """Play the first legal action down to a terminal, pyspiel's stderr echo silenced, so
        that parameters OpenSpiel accepts but cannot play (`liars_dice(numdice=0)`) fail here
        with one message instead of deep inside the tree build."""
        from caligo.core.games import quiet_stderr

        try:
            with quiet_stderr():
                state = self.pyspiel_game.new_initial_state()
                stuck = False
                for _ in range(10_000):  # a bound, not a rule: long games are fine
                    if state.is_terminal():
                        state.returns()
                        break
                    if state.is_chance_node():
                        moves = [a for a, _ in state.chance_outcomes()]
                    else:
                        moves = state.legal_actions()
                    if not moves:
                        stuck = True
                        break
                    state.apply_action(moves[0])
        except pyspiel.SpielError as exc:
            raise UnsupportedGameError(
                f"OpenSpiel cannot play game {self.name!r}: {_first_line(exc)}") from exc
        if stuck:
            raise UnsupportedGameError(f"game {self.name!r}: a non-terminal state has no move "
                                       "(check its parameters)")

    def new_initial_state(self) -> OpenSpielState:
        return OpenSpielState(self.pyspiel_game.new_initial_state(), self.name)
