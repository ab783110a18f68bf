"""Per-player observation transcripts of FoW chess games, as JSON.

A transcript is everything one player is entitled to over a game: the public start position,
then for every ply whether it was their own move (and which), and the observation they received
after it. It is what an engine, a protocol log or a web page may store for a player; the belief
set P can be rebuilt from it alone (`belief_sizes`).

JSON form (keys fixed; `observation` is `Observation.dark_fen()`)::

    {"format": "caligo-fow-transcript", "version": 1, "player": "white",
     "start": "<FEN>",
     "plies": [{"ply": 1, "own_move": "e2e4", "observation": "<dark FEN>"},
               {"ply": 2, "own_move": null,   "observation": "<dark FEN>"}, ...]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from caligo.fow.errors import FowError, MoveError
from caligo.fow.observation import Observation, ObservationError, observe, parse_dark_fen
from caligo.fow.position import (
    BLACK,
    STARTING_FEN,
    UNDO_WORDS,
    WHITE,
    from_fen,
    make_move,
    move_to_uci,
    resolve_move,
)
from caligo.fow.values import Color, Move, MoveLike, color

FORMAT = "caligo-fow-transcript"
VERSION = 1
_NAMES = ("white", "black")


class TranscriptError(FowError):
    """A malformed transcript; the message quotes the offending input."""


@dataclass(frozen=True)
class TranscriptEntry:
    """One ply as a player saw it: their own move (UCI) or None, and their observation."""

    ply: int
    own_move: str | None
    observation: Observation


@dataclass(frozen=True)
class Transcript:
    """A player's whole game: the start FEN and one entry per ply."""

    player: int  # stored as a Color: any `color()` spelling is converted
    start_fen: str
    entries: tuple[TranscriptEntry, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "player", color(self.player))

    def __repr__(self) -> str:
        return f"<Transcript {self.player} {len(self.entries)} plies from {self.start_fen!r}>"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form (see the module docstring)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "player": str(self.player),
            "start": self.start_fen,
            "plies": [
                {"ply": e.ply, "own_move": e.own_move, "observation": e.observation.dark_fen()}
                for e in self.entries
            ],
        }

    def to_json(self, indent: int | None = 1) -> str:
        """Return the transcript as JSON text."""
        return json.dumps(self.to_dict(), indent=indent) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> Transcript:
        """Parse `to_dict` output; raise TranscriptError quoting the bad part."""
        if not isinstance(data, dict):
            raise TranscriptError(f"invalid transcript: {_short(data)}")
        version = data.get("version")
        if data.get("format") != FORMAT or type(version) is not int or version != VERSION:
            raise TranscriptError(
                f"invalid transcript format/version: {data.get('format')!r} {data.get('version')!r}"
            )
        if set(data) != {"format", "version", "player", "start", "plies"}:
            raise TranscriptError(f"invalid transcript keys: {sorted(data)!r}")
        if data["player"] not in _NAMES:
            raise TranscriptError(f"invalid transcript player: {data['player']!r}")
        player = Color(_NAMES.index(data["player"]))
        start = data["start"]
        try:
            pos = from_fen(start)
        except FowError as exc:
            raise TranscriptError(f"invalid transcript start: {start!r} ({exc})") from None
        plies = data["plies"]
        if not isinstance(plies, list):
            raise TranscriptError(f"invalid transcript plies: {_short(plies)}")
        entries = []
        mover = int(pos[12])
        for i, item in enumerate(plies):
            if not isinstance(item, dict) or set(item) != {"ply", "own_move", "observation"}:
                raise TranscriptError(f"invalid transcript ply {i + 1}: {_short(item)}")
            if type(item["ply"]) is not int or item["ply"] != i + 1:
                raise TranscriptError(f"invalid transcript ply number: {item!r} (expected {i + 1})")
            own = item["own_move"]
            if (own is not None) != (mover == player):
                raise TranscriptError(
                    f"invalid transcript ply {i + 1}: own_move {own!r} but {_NAMES[mover]} moved"
                )
            if own is not None:
                try:
                    Move.from_uci(own)
                except MoveError:
                    raise TranscriptError(f"invalid transcript move: {own!r}") from None
            try:
                obs = parse_dark_fen(player, item["observation"])
            except ObservationError as exc:
                raise TranscriptError(f"invalid transcript ply {i + 1}: {exc}") from None
            entries.append(TranscriptEntry(ply=i + 1, own_move=own, observation=obs))
            mover = 1 - mover
        return cls(player=player, start_fen=start, entries=tuple(entries))

    @classmethod
    def from_json(cls, text: str) -> Transcript:
        """Parse JSON text; raise TranscriptError quoting the input if it is not a transcript."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise TranscriptError(f"invalid transcript json: {_short(text)} ({exc})") from None
        return cls.from_dict(data)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_transcript(path: str | Path) -> Transcript:
    """Read a transcript JSON file (raises TranscriptError on bad content, OSError on I/O)."""
    return Transcript.from_json(Path(path).read_text())


def write_transcript(transcript: Transcript, path: str | Path) -> None:
    """Write a transcript as JSON to `path`."""
    Path(path).write_text(transcript.to_json())


def transcripts_from_moves(
    moves: Iterable[MoveLike], start_fen: str = STARTING_FEN
) -> tuple[Transcript, Transcript]:
    """Play `moves` (UCI text, Moves, `chess.Move`s or codes) from `start_fen` (raises
    MoveError) and return (white's, black's)."""
    pos = from_fen(start_fen)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    entries: tuple[list[TranscriptEntry], list[TranscriptEntry]] = ([], [])
    for ply, given in enumerate(moves, start=1):
        move = resolve_move(pos, given)
        mover = int(pos[12])
        make_move(pos, move, undo)
        for p in (WHITE, BLACK):
            own = move_to_uci(move) if p == mover else None
            entries[p].append(TranscriptEntry(ply=ply, own_move=own, observation=observe(pos, p)))
    return (
        Transcript(Color.WHITE, start_fen, tuple(entries[WHITE])),
        Transcript(Color.BLACK, start_fen, tuple(entries[BLACK])),
    )


def belief_sizes(transcript: Transcript, config: Any = None) -> Sequence[tuple[int, int, bool]]:
    """Rebuild the player's P ply by ply from the transcript alone; return, per ply,
    (|P| stored, distinct positions seen, exact)."""
    from caligo.fow.belief import BeliefSet

    belief = BeliefSet.initial(transcript.player, transcript.start_fen, config)
    out = []
    for entry in transcript.entries:
        if entry.own_move is not None:
            belief = belief.update_own_move(entry.own_move, entry.observation)
        else:
            belief = belief.update_opponent_move(entry.observation)
        out.append((len(belief), belief.size_seen, belief.exact))
    return out


__all__ = [
    "FORMAT",
    "VERSION",
    "Transcript",
    "TranscriptEntry",
    "TranscriptError",
    "belief_sizes",
    "read_transcript",
    "transcripts_from_moves",
    "write_transcript",
]
