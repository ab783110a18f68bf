"""Where the opponent's unseen pieces were last known to stand: a prior for a redrawn P.

A redraw (`caligo.fow.reseed`) places the opponent's unseen pieces on the squares the current
observation leaves possible. Placed uniformly, a knight that vanished into the fog on f6 two
moves ago is as likely on a8 as on f6. A player who lost track does better: the pieces are
probably near where they were last seen, and often still there. `LastSeen` keeps, from one
player's observations since the start (whose position both players know), the square where
each opponent piece type was last known to stand, and for how long: a square is known to hold
a piece of type t from the observation that shows it (or the start) until an observation shows
the square. `hints` turns it into a prior: for each unseen piece type, its last-known squares
still in the fog, the most recent first (no more than the pieces of that type unseen), each
with the chance that the piece still stands there (`STAY`).

`STAY` was measured by `measure` (the command `caligo fow last-seen PGN...` prints it) on
1,102 games of the engine against itself (the PUCT prior, safe preset, ablation, carry-over,
time-doubling and static-exchange matches in docs/strength, about 93,000 decisions from ply
10): a pawn's last-known square still holds it 60% of the time, a knight's 31%, a king's 26%;
fresh sightings more often than old ones (69% within 4 of our moves, 25% after 20 or more).
A draw places a piece on its hint with that chance and else as before, so every placement the
uniform draw can make it still can: the prior moves weight, not the support. A redrawn P puts
about twice as many unseen pieces on a true square with it (docs/fow.md), but the agent with
it (`obscuro:redraw=last_seen`) did not play stronger than with the uniform redraw
(docs/strength.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from caligo.fow.bitboard import squares_of
from caligo.fow.observation import Observation, observe
from caligo.fow.position import Position
from caligo.fow.reseed import Hint, reseed, unseen_material

__all__ = ["AGE_BIN", "STAY", "LastSeen", "Ply", "measure", "placement", "plies"]

AGE_BIN = 4
"""Our own moves per age bin of `STAY` (the last bin holds every older sighting)."""

STAY: tuple[tuple[float, ...], ...] = (
    (0.75, 0.67, 0.58, 0.53, 0.51, 0.44),  # pawn
    (0.71, 0.35, 0.21, 0.14, 0.11, 0.04),  # knight
    (0.59, 0.59, 0.40, 0.25, 0.16, 0.11),  # bishop
    (0.45, 0.70, 0.57, 0.42, 0.30, 0.13),  # rook
    (0.52, 0.69, 0.65, 0.52, 0.37, 0.14),  # queen
    (0.62, 0.62, 0.34, 0.16, 0.09, 0.04),  # king
)
"""The chance that an unseen piece of a type (row: pawn to king) still stands on its
last-known square, by the sighting's age in our own moves (column: 0-3, 4-7, ..., 20 and
more), as `measure` found it (module docstring; each cell from 3,600 to 90,000 hints)."""


class LastSeen:
    """The squares where one player last knew the opponent's pieces to stand (module
    docstring). player: 0 White, 1 Black; start: the game's start position (a uint64 array as
    `caligo.fow.position` keeps it), known to both players."""

    def __init__(self, player: int, start: np.ndarray) -> None:
        self.player = int(player)
        them = 1 - self.player
        self._type = [-1] * 64  # the piece type last known on each square (-1: none)
        self._when = [0] * 64  # the observation that showed it (0: the start)
        self._count = 0  # observations taken in
        for t in range(6):
            for sq in squares_of(int(start[them * 6 + t])):
                self._type[sq] = t

    def observe(self, obs: Observation) -> None:
        """Take in the observation after a ply (ours or the opponent's)."""
        self._count += 1
        them = 1 - self.player
        fog = obs.fog
        for sq in range(64):
            if not (fog >> sq) & 1:
                self._type[sq] = -1
        for t in range(6):
            for sq in squares_of(obs.pieces[them * 6 + t]):
                self._type[sq] = t
                self._when[sq] = self._count

    def hints(self, obs: Observation, unseen: Sequence[int]) -> list[Hint]:
        """The prior for placing the opponent's unseen pieces (`unseen`: a count per type,
        pawn to king) under `obs`, the last observation taken in: per type, its last-known
        squares in `obs`'s fog, the most recent first, no more than `unseen[t]`, each with its
        `STAY` chance."""
        fog = obs.fog
        out: list[Hint] = []
        for t in range(6):
            squares = [sq for sq in squares_of(fog) if self._type[sq] == t]
            squares.sort(key=lambda sq: -self._when[sq])
            for sq in squares[: max(0, int(unseen[t]))]:
                out.append((t, sq, STAY[t][self.age_bin(sq)]))
        return out

    def age_bin(self, sq: int) -> int:
        """The age bin (`STAY`'s column) of the sighting on `sq`: our own moves since it, in
        bins of `AGE_BIN`."""
        return min((self._count - self._when[sq]) // 2 // AGE_BIN, len(STAY[0]) - 1)


@dataclass(frozen=True)
class Ply:
    """One ply of a replayed game, before its move: `index` in the game, the position, the
    move played, each player's observation of the position and `LastSeen`, which has taken
    that observation in. Valid until the next ply is drawn: `pos` and `seen` are the walk's
    own, which it moves on (copy what you keep)."""

    index: int
    pos: Position
    move: int
    obs: tuple[Observation, Observation]
    seen: tuple[LastSeen, LastSeen]


def plies(games: Iterable[tuple[str, Sequence[int]]]) -> Iterator[Ply]:
    """Every ply of whole games, (start FEN, FoW move codes) pairs, up to the end of each;
    after each is consumed its move is played and both players' `LastSeen` take in their
    new observation (as the agent's belief does: after every ply)."""
    for fen, moves in games:
        pos = Position(fen)
        seen = (LastSeen(0, pos.arr), LastSeen(1, pos.arr))
        obs = (observe(pos, 0), observe(pos, 1))
        for i, move in enumerate(moves):
            if pos.is_over():
                break
            yield Ply(i, pos, move, obs, seen)
            pos.push(move)
            obs = (observe(pos, 0), observe(pos, 1))
            for p in (0, 1):
                seen[p].observe(obs[p])


def _decisions(games: Iterable[tuple[str, Sequence[int]]],
               first_ply: int) -> Iterator[tuple[np.ndarray, Observation, LastSeen]]:
    """Every decision of whole games from `first_ply` on: (the true position, the player to
    move's observation, that player's `LastSeen`)."""
    for ply in plies(games):
        if ply.index >= first_ply:
            me = int(ply.pos.turn)
            yield ply.pos.arr.copy(), ply.obs[me], ply.seen[me]


def _unseen(truth: np.ndarray, obs: Observation) -> list[int]:
    """The true position's opponent pieces in `obs`'s fog, a bitboard per type."""
    them = 1 - int(obs.player)
    return [int(truth[them * 6 + t]) & obs.fog for t in range(6)]


def measure(games: Iterable[tuple[str, Sequence[int]]],
            first_ply: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """How often a hint holds, from whole games: (hints, held), each a 6 x 6 count by piece
    type and age bin (as `STAY`). `games`: (start FEN, FoW move codes) pairs. At every ply
    from `first_ply` on, the player to move's `hints` (capped at the true count of each type
    in its fog) are checked against the true position."""
    hints = np.zeros((6, len(STAY[0])), dtype=np.int64)
    held = np.zeros_like(hints)
    for truth, obs, seen in _decisions(games, first_ply):
        unseen = _unseen(truth, obs)
        for t, sq, _ in seen.hints(obs, [b.bit_count() for b in unseen]):
            b = seen.age_bin(sq)
            hints[t, b] += 1
            held[t, b] += (unseen[t] >> sq) & 1
    return hints, held


def placement(games: Iterable[tuple[str, Sequence[int]]], every: int, draws: int = 1024,
              first_ply: int = 10, seed: int = 0) -> dict[str, float]:
    """What a redraw gets right, uniform and with hints: at every `every`-th decision of the
    games from `first_ply` on (with an unseen opponent piece), P redrawn from the player's
    observation and the true material (`caligo.fow.reseed`, `draws` draws) both ways; the mean
    over P's positions of the share of unseen opponent pieces on a square the truth has a
    piece of their type on, and of the positions with the king on the true king's square,
    averaged over the decisions (the king's over those where it is unseen). Returns
    {"decisions", "king_unseen", "uniform_pieces", "hinted_pieces", "uniform_king",
    "hinted_king"}."""
    sums = dict.fromkeys(("uniform_pieces", "hinted_pieces", "uniform_king", "hinted_king"), 0.0)
    n = kings = 0
    for k, (truth, obs, seen) in enumerate(_decisions(games, first_ply)):
        unseen = _unseen(truth, obs)
        total = sum(b.bit_count() for b in unseen)
        if k % every or total == 0:
            continue
        them = 1 - int(obs.player)
        material = [int(truth[them * 6 + t]).bit_count() for t in range(6)]
        left = unseen_material(obs, material)
        for name, hints in (("uniform", ()), ("hinted", seen.hints(obs, left))):
            rng = np.random.default_rng([seed, k])
            drawn = reseed(obs, material, 0, draws=draws, rng=rng, hints=hints).positions()
            right = np.zeros(len(drawn))
            for t in range(6):
                same = np.bitwise_and(drawn[:, them * 6 + t], np.uint64(unseen[t]))
                right += [int(x).bit_count() for x in same]
            sums[f"{name}_pieces"] += float(np.mean(right)) / total
            if unseen[5]:
                on = drawn[:, them * 6 + 5] & np.uint64(unseen[5])
                sums[f"{name}_king"] += float(np.mean(on != 0))
        n += 1
        kings += unseen[5] != 0
    out = {k: v / max(kings if k.endswith("king") else n, 1) for k, v in sums.items()}
    return {"decisions": n, "king_unseen": kings, **out}
