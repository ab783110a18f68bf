"""The move an FoW agent plays with no search behind it: `emergency_move`.

An agent plays it when it has nothing better in time: its belief P was lost for good, or a
move's work overran its answer instant (the watchdog's answer, `caligo.limits`). It must be
cheap (it runs at the answer instant, half the timing policy's overhead before the move's
limit: 10 ms by default; it takes a fraction of a millisecond), must read nothing the running
search may be writing (only the agent's last observation), and should not throw the game
away, as the uniformly drawn move it replaces often did (a hanging queen, the king walked into
a visible attacker).

So it is a one-ply static judgement of the visible board, the unseen squares taken as empty:

- capturing a visible king wins at once (FoW's only winning move);
- a move is worth what it captures (pawn 1, knight and bishop 3, rook 5, queen 9), plus what a
  promotion adds, plus what it saves: the loss its piece faced where it stood;
- minus what it puts at stake: the moved piece on a square a visible enemy piece attacks (as
  the board stands before the move), its whole value when no other piece of ours defends the
  square, else what it is worth above the cheapest attacker (a static exchange of one capture
  and one recapture);
- a move after which a visible enemy piece attacks our king (the king walking in, or a pinned
  piece stepping aside) is the worst there is: the king would be captured.

The best such moves are drawn among uniformly by the agent's generator, so a game stays a
function of its seed. The unseen squares may hold attackers and blockers this does not know
of; it is a fallback, not a search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from caligo.fow.bitboard import (
    KING_ATTACKS,
    KNIGHT_ATTACKS,
    PAWN_ATTACKS,
    bishop_attacks_slow,
    rook_attacks_slow,
    squares_of,
)
from caligo.fow.observation import Observation
from caligo.fow.position import (
    BISHOP,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    KING,
    KNIGHT,
    PAWN,
    PIECE_VALUES,
    QUEEN,
    ROOK,
)

__all__ = ["KING_LOST", "VALUES", "emergency_move", "move_scores"]

VALUES = (*PIECE_VALUES[:KING], 100)
"""A piece's worth in pawns, by piece (pawn .. king): the material values, the king's 100 only
ranking it above the rest."""

KING_LOST = -1000
"""The score of a move after which a visible enemy piece attacks our king."""

_KNIGHT = [int(b) for b in KNIGHT_ATTACKS]
_KING = [int(b) for b in KING_ATTACKS]
_PAWN = [[int(b) for b in PAWN_ATTACKS[c]] for c in (0, 1)]
_ROOK_HOPS = {6: (7, 5), 2: (0, 3), 62: (63, 61), 58: (56, 59)}
"""Castling: the king's destination -> the rook's (from, to)."""


def _attacks(piece: int, color: int, sq: int, occ: int) -> int:
    """The squares `color`'s `piece` on `sq` attacks on occupancy `occ`."""
    if piece == PAWN:
        return _PAWN[color][sq]
    if piece == KNIGHT:
        return _KNIGHT[sq]
    if piece == KING:
        return _KING[sq]
    out = 0
    if piece in (BISHOP, QUEEN):
        out |= bishop_attacks_slow(sq, occ)
    if piece in (ROOK, QUEEN):
        out |= rook_attacks_slow(sq, occ)
    return out


def _attacked(sq: int, boards: Sequence[int], by: int, occ: int) -> bool:
    """True when a piece of `boards` (color `by`'s six bitboards) attacks `sq` on `occ`."""
    return bool(_PAWN[1 - by][sq] & boards[PAWN] or _KNIGHT[sq] & boards[KNIGHT]
                or _KING[sq] & boards[KING]
                or bishop_attacks_slow(sq, occ) & (boards[BISHOP] | boards[QUEEN])
                or rook_attacks_slow(sq, occ) & (boards[ROOK] | boards[QUEEN]))


def _attack_maps(boards: Sequence[int], color: int, occ: int
                 ) -> tuple[list[int], list[int], dict[int, int]]:
    """Per square: the worth of `color`'s cheapest piece attacking it (0: none) and how many
    of its pieces do; and each piece's attacks by its square."""
    cheapest, count = [0] * 64, [0] * 64
    reach: dict[int, int] = {}
    for piece in (KING, QUEEN, ROOK, BISHOP, KNIGHT, PAWN):  # dearest first: cheaper overwrite
        for sq in squares_of(boards[piece]):
            reach[sq] = _attacks(piece, color, sq, occ)
            for t in squares_of(reach[sq]):
                cheapest[t] = VALUES[piece]
                count[t] += 1
    return cheapest, count, reach


def _stake(worth: int, attacker: int, defenders: int) -> int:
    """What a piece of `worth` stands to lose on a square whose cheapest attacker is worth
    `attacker` (0: none) and which `defenders` of our pieces defend."""
    if attacker == 0:
        return 0
    return worth if defenders == 0 else max(0, worth - attacker)


def _king_attacked_after(m: int, mover: int, victim: int | None, victim_sq: int, king: int,
                         theirs: Sequence[int], color: int, occ: int) -> bool:
    """True when a seen enemy piece attacks our king after move `m` (our `mover`, capturing
    `victim` on `victim_sq`, or None), our king on `king` before it."""
    frm, to = m & 63, (m >> 6) & 63
    left = list(theirs)
    if victim is not None:
        left[victim] &= ~(1 << victim_sq)
    occ_after = (occ & ~(1 << frm) & ~(1 << victim_sq)) | (1 << to)
    if (m >> 14) & 3 == KIND_CASTLING:
        r_from, r_to = _ROOK_HOPS[to]
        occ_after = (occ_after & ~(1 << r_from)) | (1 << r_to)
    king_sq = to if mover == KING else king
    return king_sq >= 0 and _attacked(king_sq, left, 1 - color, occ_after)


def move_scores(obs: Observation, color: int, legal: Sequence[int]) -> list[int]:
    """Each legal move's static score in pawns (module docstring), from `color`'s observation
    `obs` (its side to move)."""
    us, them = color * 6, (1 - color) * 6
    ours = [int(obs.pieces[us + p]) for p in range(6)]
    theirs = [int(obs.pieces[them + p]) & int(obs.visible) for p in range(6)]
    own_occ, their_occ = 0, 0
    for p in range(6):
        own_occ |= ours[p]
        their_occ |= theirs[p]
    occ = own_occ | their_occ
    threat, _, _ = _attack_maps(theirs, 1 - color, occ)
    _, guard, reach = _attack_maps(ours, color, occ)
    king = ours[KING].bit_length() - 1
    # a move can expose the king only if it moves the king, or the king is attacked now (a
    # capture may remove the attacker), or it leaves a line through the king's square
    king_lines = (bishop_attacks_slow(king, 0) | rook_attacks_slow(king, 0)) if king >= 0 else 0
    king_now = king >= 0 and _attacked(king, theirs, 1 - color, occ)
    on = {sq: p for p in range(6) for sq in squares_of(ours[p])}
    foe = {sq: p for p in range(6) for sq in squares_of(theirs[p])}
    scores = []
    for m in legal:
        m = int(m)
        frm, to, kind = m & 63, (m >> 6) & 63, (m >> 14) & 3
        mover = on.get(frm, PAWN)
        if foe.get(to) == KING:
            scores.append(10 * VALUES[KING])
            continue
        victim_sq = to
        if kind == KIND_EN_PASSANT:
            victim_sq = to - 8 if color == 0 else to + 8
        victim = foe.get(victim_sq)
        after = KNIGHT + ((m >> 12) & 3) if kind == KIND_PROMOTION else mover
        score = (VALUES[victim] if victim is not None else 0) + VALUES[after] - VALUES[mover]
        if mover != KING:
            # our defenders of `to` other than the mover, which attacks it from `frm`
            mine = (reach[frm] >> to) & 1
            score -= _stake(VALUES[after], threat[to], guard[to] - mine)
            score += _stake(VALUES[mover], threat[frm], guard[frm])
        if (mover == KING or king_now or (king_lines >> frm) & 1) and _king_attacked_after(
                m, mover, victim, victim_sq, king, theirs, color, occ):
            score += KING_LOST
        scores.append(score)
    return scores


def emergency_move(history: Sequence[tuple[int | None, Observation]], color: int,
                   legal: Sequence[int], rng: np.random.Generator) -> int:
    """A move with no search behind it (P lost, or a move's work overdue): one of the legal
    moves `move_scores` rates best, drawn uniformly with `rng`. Reads only the last
    observation of `history` (the agent's `(own move, observation)` transcript): safe beside
    a search still running. With no observation yet, a uniformly drawn legal move."""
    if not history:
        return int(legal[int(rng.integers(len(legal)))])
    scores = move_scores(history[-1][1], color, legal)
    best = max(scores)
    top = [int(m) for m, s in zip(legal, scores, strict=True) if s == best]
    return top[int(rng.integers(len(top)))]
