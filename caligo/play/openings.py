"""Opening books of a match (`caligo.play.match`): a PGN file (each game's start and moves,
forced on both engines) or EPD/FEN lines (start positions), read and checked against the rules
before any game starts: each must leave a game in progress for the engines to play."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caligo.fow.errors import FowError
from caligo.fow.notation import read_pgns
from caligo.fow.outcome import Referee
from caligo.fow.position import (
    STARTING_FEN,
    UNDO_WORDS,
    from_fen,
    make_move,
    move_from_uci,
    move_to_uci,
)
from caligo.play.errors import MatchConfigError


@dataclass(frozen=True)
class Opening:
    """A start position and the opening plies forced on both engines (UCI)."""

    fen: str = STARTING_FEN
    moves: tuple[str, ...] = ()


def read_openings(path: str | Path) -> tuple[Opening, ...]:
    """Read openings: a PGN file (each game's start and moves) or EPD/FEN lines.

    Raise MatchConfigError quoting the file and the bad line.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MatchConfigError(f"cannot read openings {str(path)!r}: {exc}") from None
    out: list[Opening] = []
    try:
        if path.suffix.lower() == ".pgn" or text.lstrip().startswith("["):
            for game in read_pgns(text):
                out.append(Opening(game.start_fen, tuple(move_to_uci(m) for m in game.moves)))
        else:
            for lineno, line in enumerate(text.splitlines(), start=1):
                fields = line.split()
                if not fields or line.lstrip().startswith("#"):
                    continue
                fen = " ".join(fields[:4])
                fen += (
                    " " + " ".join(fields[4:6])
                    if len(fields) >= 6 and fields[4].isdigit()
                    else " 0 1"
                )
                try:
                    from_fen(fen)
                except FowError as exc:
                    raise MatchConfigError(f"{str(path)!r} line {lineno}: {exc}") from None
                out.append(Opening(fen))
    except FowError as exc:
        raise MatchConfigError(f"bad openings file {str(path)!r}: {exc}") from None
    if not out:
        raise MatchConfigError(f"no openings in {str(path)!r}")
    for number, opening in enumerate(out, start=1):
        _check_unfinished(opening, f"{str(path)!r} opening {number}")
    return tuple(out)


def _check_unfinished(opening: Opening, where: str) -> None:
    """MatchConfigError if the rules end the game at the opening's start or at one of its
    plies (a king captured, a repetition, the fifty-move rule, no move): a pair from it could
    not be played."""
    pos = from_fen(opening.fen)
    referee = Referee()
    outcome = referee.start(pos)
    if outcome is not None:
        raise MatchConfigError(f"{where}: the game is over at its start, {opening.fen!r} "
                               f"({outcome.termination.value}, {outcome.result})")
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    for ply, uci in enumerate(opening.moves, start=1):
        make_move(pos, move_from_uci(pos, uci), undo)
        outcome = referee.after(pos)
        if outcome is not None:
            raise MatchConfigError(f"{where}: its move {ply} ({uci}) ends the game "
                                   f"({outcome.termination.value}, {outcome.result})")
