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
`observation`, `belief`); see docs/fow.md. Layering (DESIGN.md): nothing here imports
`caligo.core`, `caligo.subgame` or `caligo.search`.
"""

from caligo.fow.belief import BeliefConfig, BeliefError, BeliefSet, SizeKind, UpdateStats
from caligo.fow.errors import (
    ColorError,
    FenError,
    FowError,
    GameOverError,
    MoveError,
    PgnError,
    TooManyMovesError,
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
from caligo.fow.values import Color, Move, Piece, PieceType, color, parse_square
from caligo.fow.view import PlayerView, legal_moves_uci, player_view, view_data, view_svg

WHITE = Color.WHITE
BLACK = Color.BLACK
COLORS = (WHITE, BLACK)

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
