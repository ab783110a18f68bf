"""Fog of War chess: rules, observations, notation, the belief set P and player views.

The front door, as python-chess's `chess` module is for chess::

    >>> from caligo import fow
    >>> pos = fow.Position()                      # or fow.Position(fen)
    >>> pos.push("e2e4")                          # UCI text, a fow.Move or a chess.Move
    >>> obs = fow.observe(pos, fow.BLACK)         # what black sees (chess.BLACK works too)
    >>> belief = fow.BeliefSet.initial("black").update_opponent_move(obs)
    >>> len(belief), pos in belief                # white's 20 first moves look alike to black
    (20, True)

Colours: `WHITE`/`BLACK` here are `Color` members (0 and 1, caligo's player numbers);
python-chess's `chess.WHITE` (True) is read as white wherever a colour is taken. The numba
kernels and the raw uint64 arrays they use live in the submodules (`position`, `movegen`,
`observation`, `belief`); see docs/fow.md.

The names load lazily (PEP 562), as `caligo`'s do: `import caligo.fow` imports neither numba
nor the kernels (numba itself imports scipy); the first use of a name here does. Layering
(docs/design.md): nothing here imports `caligo.core`, `caligo.subgame` or `caligo.search`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from caligo.fow.errors import (
    ColorError,
    FenError,
    FowError,
    GameOverError,
    MoveError,
    PgnError,
    TooManyMovesError,
)
from caligo.fow.values import Color, Move, Piece, PieceType, color, parse_square

WHITE = Color.WHITE
BLACK = Color.BLACK
COLORS = (WHITE, BLACK)

# name -> module that defines it (loaded on first use)
_EXPORTS: dict[str, str] = {
    "STARTING_FEN": "caligo.fow.position",
    "Position": "caligo.fow.position",
    "MAX_MOVES": "caligo.fow.movegen",
    "perft": "caligo.fow.movegen",
    "perft_legal": "caligo.fow.movegen",
    "divide": "caligo.fow.movegen",
    "Observation": "caligo.fow.observation",
    "ObservationError": "caligo.fow.observation",
    "observe": "caligo.fow.observation",
    "parse_dark_fen": "caligo.fow.observation",
    "BeliefConfig": "caligo.fow.belief",
    "BeliefError": "caligo.fow.belief",
    "BeliefSet": "caligo.fow.belief",
    "PieceShares": "caligo.fow.belief",
    "piece_shares": "caligo.fow.belief",
    "SizeKind": "caligo.fow.belief",
    "UpdateStats": "caligo.fow.belief",
    "Game": "caligo.fow.game",
    "Outcome": "caligo.fow.outcome",
    "Termination": "caligo.fow.outcome",
    "PgnGame": "caligo.fow.notation",
    "iter_pgn_games": "caligo.fow.notation",
    "read_pgn": "caligo.fow.notation",
    "read_pgns": "caligo.fow.notation",
    "write_pgn": "caligo.fow.notation",
    "Transcript": "caligo.fow.transcript",
    "TranscriptError": "caligo.fow.transcript",
    "read_transcript": "caligo.fow.transcript",
    "transcripts_from_moves": "caligo.fow.transcript",
    "write_transcript": "caligo.fow.transcript",
    "PlayerView": "caligo.fow.view",
    "legal_moves_uci": "caligo.fow.view",
    "player_view": "caligo.fow.view",
    "view_data": "caligo.fow.view",
    "view_svg": "caligo.fow.view",
}

__all__ = [
    "BLACK",
    "COLORS",
    "MAX_MOVES",
    "STARTING_FEN",
    "WHITE",
    "BeliefConfig",
    "BeliefError",
    "BeliefSet",
    "Color",
    "ColorError",
    "FenError",
    "FowError",
    "Game",
    "GameOverError",
    "Move",
    "MoveError",
    "Observation",
    "ObservationError",
    "Outcome",
    "PgnError",
    "PgnGame",
    "Piece",
    "PieceShares",
    "PieceType",
    "PlayerView",
    "Position",
    "SizeKind",
    "Termination",
    "TooManyMovesError",
    "Transcript",
    "TranscriptError",
    "UpdateStats",
    "color",
    "divide",
    "iter_pgn_games",
    "legal_moves_uci",
    "observe",
    "parse_dark_fen",
    "parse_square",
    "perft",
    "perft_legal",
    "piece_shares",
    "player_view",
    "read_pgn",
    "read_pgns",
    "read_transcript",
    "transcripts_from_moves",
    "view_data",
    "view_svg",
    "write_pgn",
    "write_transcript",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'caligo.fow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from caligo.fow.belief import (
        BeliefConfig,
        BeliefError,
        BeliefSet,
        PieceShares,
        SizeKind,
        UpdateStats,
        piece_shares,
    )
    from caligo.fow.game import Game
    from caligo.fow.movegen import MAX_MOVES, divide, perft, perft_legal
    from caligo.fow.notation import PgnGame, iter_pgn_games, read_pgn, read_pgns, write_pgn
    from caligo.fow.observation import Observation, ObservationError, observe, parse_dark_fen
    from caligo.fow.outcome import Outcome, Termination
    from caligo.fow.position import STARTING_FEN, Position
    from caligo.fow.transcript import (
        Transcript,
        TranscriptError,
        read_transcript,
        transcripts_from_moves,
        write_transcript,
    )
    from caligo.fow.view import PlayerView, legal_moves_uci, player_view, view_data, view_svg
