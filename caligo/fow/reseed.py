"""P drawn afresh from one observation: the last resort of a belief whose subsample lost the truth.

A capped P is a uniform subsample of the positions consistent with the player's observations
(`caligo.fow.belief`). An observation can rule out every position the subsample kept; the agent
then replays the observations with fresh sampling salts (`caligo.agents.fow_belief`), and when
no replay survives it used to give P up for the rest of the game and play its emergency move,
blind, to the end (7 times in about 300 pairs of matches at the 2,000,000-position cap, at
`iters=100`, `iters=400` and `mt=1`: one game in about 85). The player still knows two things
exactly: its current observation, and the opponent's material (the start's, less what the
player captured; only an unseen promotion changes it).

`reseed(obs, material, ...)` draws positions that agree with both: the opponent's pieces the
observation does not show are placed uniformly at random on the squares it leaves possible,
and each draw is kept only if it yields `obs` again (`observe_kernel`). The squares a draw may
use follow from the observation rules (`caligo.fow.observation`): any fog square, except

- the squares our pawns attack: an enemy piece there would be visible (a capture square);
- pawns never stand on the first or last rank;

and a fog square straight ahead of our pawn (or two ahead of a pawn on its start rank whose
first step is visibly empty) must hold an enemy piece: were it empty, the push would show it.
The opponent's castling rights are those its king and rooks still allow from their home squares
(unknowable otherwise); the en-passant square is the observation's.

The result is a sample of positions consistent with the current observation, not with the whole
history: every position of the true P is a possible draw (up to the opponent's castling rights
and an unseen promotion), but the draw weighs them by placement, not by how the game could have
reached them. It is marked `SizeKind.REDRAWN`. It is what a human does after losing track: look
at the board, count the opponent's pieces, guess where the unseen ones stand. A human guesses
better by remembering where they were last seen: `hints` (`caligo.fow.last_seen`) put a piece on
its last-known square with the chance measured for such squares, and place the rest uniformly,
so that the support of the draws stays the same.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from caligo.fow.belief import BeliefConfig, BeliefSet, pack_positions
from caligo.fow.belief_update import SizeKind
from caligo.fow.bitboard import PAWN_ATTACKS, squares_of
from caligo.fow.errors import FowError
from caligo.fow.observation import OBS_WORDS, Observation, observe_kernel
from caligo.fow.position import (
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_WK,
    CASTLE_WQ,
    KING,
    PAWN,
    POS_WORDS,
    ROOK,
    W_CASTLE,
    W_EP,
    W_STM,
    WHITE,
)
from caligo.limits import Deadline

__all__ = ["DEADLINE_EVERY", "MIN_DRAWS", "RESEED_DRAWS", "Hint", "ReseedError", "reseed",
           "unseen_material"]

RESEED_DRAWS = 4096
"""Draws a reseed makes (`reseed`'s `draws`): about 0.15 s, 16 times the subgame's 256 roots."""

Hint = tuple[int, int, float]
"""A prior over placements (`reseed`'s `hints`): (piece type, square, the chance that an
unseen piece of that type stands there)."""

FULL = (1 << 64) - 1
PAWN_SQUARES = 0x00FF_FFFF_FFFF_FF00  # ranks 2 to 7
MIN_DRAWS = 256
"""Draws `reseed` makes whatever its deadline (about 10 ms): the P of a redraw at a passed
deadline still offers the subgame its 256 roots, when that many placements exist."""
DEADLINE_EVERY = 32
"""Draws between two readings of `reseed`'s deadline, after `MIN_DRAWS`."""
_TRIES = 8  # draws of one placement before it counts as failed (a pawn on a must square's rank)


class ReseedError(FowError):
    """No position agrees with the observation and the material (the message says why)."""


def unseen_material(obs: Observation, material: Sequence[int]) -> list[int]:
    """The opponent's pieces (a count per piece type, pawn to king) that `obs` does not show,
    given all of them (`material`); a piece type seen more often than counted is a promoted
    pawn (one fewer pawn each). Raise ReseedError when the counts cannot hold."""
    if len(material) != 6 or any(int(n) < 0 for n in material):
        raise ReseedError(f"material must be six counts >= 0 (pawn to king), got {material!r}")
    them = 1 - int(obs.player)
    seen = [obs.pieces[them * 6 + t].bit_count() for t in range(6)]
    left = [int(material[t]) - seen[t] for t in range(6)]
    promoted = sum(-n for t, n in enumerate(left) if n < 0 and t not in (PAWN, KING))
    left = [max(0, n) for n in left]
    left[PAWN] -= promoted
    if left[PAWN] < 0 or seen[PAWN] > int(material[PAWN]) or seen[KING] + left[KING] != 1:
        raise ReseedError(f"the observation shows more of the opponent's pieces {seen} than "
                          f"its material {list(material)} allows")
    return left


def _squares(obs: Observation) -> tuple[int, int]:
    """(the fog squares an unseen enemy piece may stand on, those one must stand on)."""
    me = int(obs.player)
    fog = obs.fog
    pawns = obs.pieces[me * 6 + PAWN]
    occupied = 0
    for code in range(12):
        occupied |= obs.pieces[code]
    forbidden = 0
    must = 0
    step = 8 if me == WHITE else -8
    start = 0x0000_0000_0000_FF00 if me == WHITE else 0x00FF_0000_0000_0000
    for sq in squares_of(pawns):
        forbidden |= int(PAWN_ATTACKS[me, sq])
        one = sq + step
        if not 0 <= one < 64:
            continue
        if (fog >> one) & 1:
            must |= 1 << one
        elif (start >> sq) & 1 and not (occupied >> one) & 1:
            two = one + step
            if (fog >> two) & 1:
                must |= 1 << two
    allowed = fog & ~forbidden & FULL
    return allowed, must & allowed


def _castling(pos: np.ndarray, them: int) -> int:
    """The opponent's castling rights its king and rooks allow from their home squares."""
    king, rook = pos[them * 6 + KING], pos[them * 6 + ROOK]
    home = 4 if them == WHITE else 60
    if not (int(king) >> home) & 1:
        return 0
    short, long_ = (CASTLE_WK, CASTLE_WQ) if them == WHITE else (CASTLE_BK, CASTLE_BQ)
    out = 0
    if (int(rook) >> (home + 3)) & 1:
        out |= short
    if (int(rook) >> (home - 4)) & 1:
        out |= long_
    return out


def reseed(obs: Observation, material: Sequence[int], ply: int, fullmove0: int = 1,
           config: BeliefConfig | None = None, draws: int = RESEED_DRAWS,
           rng: np.random.Generator | None = None,
           deadline: Deadline | None = None, hints: Sequence[Hint] = ()) -> BeliefSet:
    """A P of the distinct positions among `draws` placements of the opponent's unseen pieces
    that yield `obs` (module docstring; at most 16 times `config.max_positions` draws), at most
    `config.max_positions` of them (a uniform subsample). `material`: the opponent's pieces,
    pawn to king; `ply` and `fullmove0`: the set's place in the game (`BeliefSet`). Raise
    ReseedError if no draw agrees with the observation. `deadline`: after `MIN_DRAWS`, the
    draws stop when its hard instant has passed, once a position was kept (checked every
    `DEADLINE_EVERY` draws: about 1 ms). `hints`: a prior over the placements (piece type,
    square, chance; `caligo.fow.last_seen`): a draw puts a piece of the type on the square
    with that chance (when the square is possible and the type has a piece left), and places
    the rest as without hints."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ReseedError(f"draws must be a positive int, got {draws!r}")
    rng = rng if rng is not None else np.random.default_rng()
    config = config if config is not None else BeliefConfig()
    draws = min(draws, 16 * config.max_positions)  # the cap would drop the rest
    me, them = int(obs.player), 1 - int(obs.player)
    left = unseen_material(obs, material)
    allowed, must = _squares(obs)
    free_sq = squares_of(allowed & ~must)
    must_sq = squares_of(must)
    pieces = [t for t in range(6) for _ in range(left[t])]
    prior = [(int(t), int(sq), float(q)) for t, sq, q in hints
             if (allowed >> int(sq)) & 1 and (int(t) != PAWN or (PAWN_SQUARES >> int(sq)) & 1)]
    if len(pieces) < len(must_sq) or len(pieces) > len(must_sq) + len(free_sq):
        raise ReseedError(f"{len(pieces)} unseen enemy pieces cannot fill the {len(must_sq)} "
                          f"squares that must hold one among {len(must_sq) + len(free_sq)} "
                          f"possible: {obs.dark_fen()!r}")
    base = np.zeros(POS_WORDS, dtype=np.uint64)
    for code in range(12):
        base[code] = np.uint64(obs.pieces[code])
    base[W_STM] = np.uint64(int(obs.side_to_move))
    base[W_EP] = np.uint64(obs.ep_square)  # 64 (none) unless we may capture en passant
    target = obs.to_array()
    seen = np.empty(OBS_WORDS, dtype=np.uint64)
    shuffler = random.Random(int(rng.integers(1 << 62)))
    kept: list[np.ndarray] = []
    for i in range(draws):
        if (deadline is not None and i >= MIN_DRAWS and i % DEADLINE_EVERY == 0 and kept
                and deadline.passed()):
            break
        placed = _draw(pieces, must_sq, free_sq, shuffler, prior)
        if placed is None:
            continue
        pos = base.copy()
        for t in range(6):
            pos[them * 6 + t] |= np.uint64(placed[t])
        pos[W_CASTLE] = np.uint64(int(obs.castling) | _castling(pos, them))
        observe_kernel(pos, me, seen)
        if np.array_equal(seen, target):
            kept.append(pos)
    if not kept:
        raise ReseedError(f"none of {draws} placements of the opponent's unseen pieces yields "
                          f"the observation {obs.dark_fen()!r}")
    rows = np.unique(pack_positions(np.stack(kept)), axis=0)
    distinct = len(rows)
    if distinct > config.max_positions:  # the memory cap holds here too: a uniform subsample
        rows = rows[np.sort(rng.choice(distinct, config.max_positions, replace=False))]
    return BeliefSet(player=me, rows=rows, ply=int(ply), exact=False, size_seen=distinct,
                     size_kind=SizeKind.REDRAWN, config=config, fullmove0=int(fullmove0),
                     subsampled=False)  # its descendants are guesses, which no salt changes


def _draw(pieces: list[int], must_sq: list[int], free_sq: list[int],
          shuffler: random.Random, prior: Sequence[Hint] = ()) -> list[int] | None:
    """One placement (a bitboard per piece type). First the prior's hints, each taken with its
    chance (a possible square, for a type with a piece left); then, uniformly, the pieces left
    shuffled onto the must squares left, the rest onto the free squares left in a shuffled
    order, each pawn on the first free square of ranks 2 to 7 left, each other piece on the
    first left; None when in each of `_TRIES` tries the hints left too few pieces for the must
    squares, a pawn was shuffled onto a must square of the first or last rank, or the pawns
    found no room."""
    for _ in range(_TRIES):
        placed = [0] * 6
        order = pieces[:]
        musts, frees = must_sq, free_sq
        if prior:
            taken = 0
            for t, sq, q in prior:
                if t in order and not (taken >> sq) & 1 and shuffler.random() < q:
                    order.remove(t)
                    placed[t] |= 1 << sq
                    taken |= 1 << sq
            if taken:
                musts = [sq for sq in must_sq if not (taken >> sq) & 1]
                frees = [sq for sq in free_sq if not (taken >> sq) & 1]
                if len(order) < len(musts):
                    continue  # the hints left too few pieces for the must squares
        shuffler.shuffle(order)
        k = len(musts)
        if any(p == PAWN and not (PAWN_SQUARES >> sq) & 1
               for p, sq in zip(order[:k], musts, strict=False)):
            continue
        for p, sq in zip(order[:k], musts, strict=False):
            placed[p] |= 1 << sq
        squares = frees[:]
        shuffler.shuffle(squares)
        rest = order[k:]
        pawn_at = [sq for sq in squares if (PAWN_SQUARES >> sq) & 1]
        n_pawns = rest.count(PAWN)
        if n_pawns > len(pawn_at):
            continue
        used = set(pawn_at[:n_pawns])
        for sq in used:
            placed[PAWN] |= 1 << sq
        room = [sq for sq in squares if sq not in used]
        others = [p for p in rest if p != PAWN]
        for p, sq in zip(others, room, strict=False):
            placed[p] |= 1 << sq
        return placed
    return None
