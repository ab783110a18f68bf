"""Opening books of a match (`caligo.play.match`): a PGN file (each game's start and moves,
forced on both engines) or EPD/FEN lines (start positions), read and checked against the rules
before any game starts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caligo.fow.errors import FowError
from caligo.fow.notation import read_pgns
from caligo.fow.position import STARTING_FEN, from_fen, move_to_uci
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
    return tuple(out)
