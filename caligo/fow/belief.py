"""The set P of positions a FoW chess player cannot tell apart (Obscuro, section 3, appendix E.1).

Obscuro "maintains the full set P of possible positions given the observations that it has seen
so far" (Obscuro, section 3): P starts as the known initial position and is updated

- after the player's own move m: P <- {s.m : s in P, obs(s.m) = o}, and
- after an opponent move: P <- {s.m : s in P, m a FoW move of s, obs(s.m) = o},

where o is the observation the player actually received. Each runs in a numba kernel:
`_expand_kernel` (opponent ply) makes every move of every parent, compares the player's
observation (`caligo.fow.observation.observe_kernel`) with o, after a cheap necessary test
(the pieces on o's visible squares), and inserts matches into a hash table that drops
duplicates; `_own_move_kernel` (own move) needs a table only in one case: the move's
destination is visible, so its contents agree in every parent and the move is undone by nothing
but the castling rights it clears. Those are the player's own (observed, equal in every parent)
unless the move lands on the opponent's king or rook home square (a capture there, e.g. `h1h8`
or `g2h1r`): then the opponent's right that told two parents apart is gone, and
`_dedupe_kernel` merges the children (`own_move_needs_dedupe`).

Storage. Positions that are the same for all future play are stored once: a row is the twelve
piece bitboards plus one packed word (side to move bit 0, castling rights bits 1-4, en-passant
square bits 5-11), 13 uint64 = 104 bytes. The en-passant square is kept only when the side to
move has a pawn that can capture there (otherwise it changes no future move or observation).
Clocks and the repetition history are not stored: the 50-move and repetition draws are declared
by the referee, who holds the true position (Obscuro, appendix A; Zhang & Sandholm 2021, appendix
B.1: the agent "ignores draw rules" for transpositions). So a P row stands for every history
reaching it.

Memory cap. `BeliefConfig.max_positions` bounds the stored rows. When more distinct positions are
consistent, P becomes a uniform random sample of them, of size `max_positions`: the distinct
children with the smallest salted fingerprints (a bottom-k sample; a fresh random salt per update
makes it uniform). The set says so: `exact` is False and `size_seen` holds the number of distinct
consistent positions the update found, with `size_kind` saying how good that number is: exact
(every distinct child's 16-byte fingerprint is kept, up to `count_factor * max_positions` of
them), an estimate past that bound (the table then keeps only the smallest fingerprints, and the
count is scaled by the fraction of the fingerprint space they cover), or a lower bound once P is
a sample (later updates run from the sample). `exact` stays False from then on.

Deduplication compares 128-bit fingerprints (two independent 64-bit hashes of the 104-byte row):
a false merge needs a 128-bit collision, probability about n^2 / 2^129 (10^-21 at n = 10^9).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np
from numba import njit

from caligo.fow.bitboard import FILES, PAWN_ATTACKS, RANKS, U0, U1, popcount
from caligo.fow.errors import FowError, TooManyMovesError
from caligo.fow.movegen import MAX_MOVES, count_moves, gen_moves
from caligo.fow.observation import O_STM, OBS_WORDS, Observation, observe_kernel
from caligo.fow.position import (
    CASTLE_KEEP,
    CASTLE_ROOK,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    NO_EP,
    PAWN,
    POS_WORDS,
    STARTING_FEN,
    UNDO_WORDS,
    W_CASTLE,
    W_CLOCKS,
    W_EP,
    W_STM,
    Position,
    PositionLike,
    from_fen,
    make_move,
    position_array,
    resolve_move,
    to_fen,
    unmake_move,
)
from caligo.fow.values import Color, ColorLike, MoveLike, color
from caligo.limits import Deadline

ROW_WORDS = 13
"""A stored position: 12 piece bitboards + packed (side | castling << 1 | ep << 5)."""
ROW_BYTES = ROW_WORDS * 8

_EMPTY = U0
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)  # a threshold every fingerprint passes
_S8 = np.uint64(8)
_RANK_3 = RANKS[2]
_RANK_6 = RANKS[5]
_NOT_FILE_A = ~FILES[0]
_NOT_FILE_H = ~FILES[7]
_OWN_RIGHTS = np.array([3, 12], dtype=np.uint64)
_CASTLE_PATH = np.array([0b0110_1110, 0b0110_1110 << 56], dtype=np.uint64)
"""b, c, d, f, g on the back rank: squares castling needs empty, per player."""
_S1 = np.uint64(1)
_S5 = np.uint64(5)
_M4 = np.uint64(15)
_M7 = np.uint64(127)
_S32 = np.uint64(32)

# status codes of `_expand_kernel`
ST_DONE = 0
ST_GROW_ROWS = 1
ST_GROW_TABLE = 2
ST_OVERFLOW = 3  # parent state[S_NEXT] has more than MAX_MOVES moves (built by hand)

# state slots of `_expand_kernel` (int64 array)
S_NEXT = 0  # next parent index
S_ROWS = 1  # rows stored in out_rows
S_DISTINCT = 2  # distinct matching children seen (stored or not)
S_TESTED = 3  # candidate children tested
S_ILLEGAL = 4  # parents where a given own move was not in the move list
S_MATCHED = 5  # matching children before deduplication
S_SCRATCH = 6  # written by `_flush` so its prefetching loads are not optimized away
S_TABLE = 7  # fingerprints currently in the table
S_WORDS = 8


class SizeKind(Enum):
    """How `BeliefSet.size_seen` relates to the true |P|."""

    EXACT = "exact"  # the update ran from an exact P and counted every distinct child
    LOWER_BOUND = "lower bound"  # the update ran from a sample: the true |P| is at least this
    ESTIMATE = "estimate"  # too many to count within the memory bound: a bottom-k estimate


class BeliefError(FowError):
    """A belief update that cannot be right: e.g. P became empty (observations inconsistent)."""


# --- rows ------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _pack_row(pos: np.ndarray, row: np.ndarray) -> None:
    """Write position `pos` (uint64 (16,)) as a row (uint64 (ROW_WORDS,)), normalizing ep."""
    for i in range(12):
        row[i] = pos[i]
    stm = pos[W_STM]
    ep = pos[W_EP]
    if ep < np.uint64(64):
        us = int(stm)
        if not (PAWN_ATTACKS[1 - us, int(ep)] & pos[us * 6 + PAWN]):
            ep = np.uint64(NO_EP)
    row[12] = stm | (pos[W_CASTLE] << _S1) | (ep << _S5)


@njit(cache=True, nogil=True, inline="always")
def _unpack_row(row: np.ndarray, clocks: np.uint64, pos: np.ndarray) -> None:
    """Write row (uint64 (ROW_WORDS,)) into pos (uint64 (16,)) with the given clocks word."""
    for i in range(12):
        pos[i] = row[i]
    packed = row[12]
    pos[W_STM] = packed & _S1
    pos[W_CASTLE] = (packed >> _S1) & _M4
    pos[W_EP] = (packed >> _S5) & _M7
    pos[W_CLOCKS] = clocks


@njit(cache=True, nogil=True, inline="always")
def _mix64(x: np.uint64) -> np.uint64:
    """splitmix64 finalizer."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, nogil=True, inline="always")
def _fingerprint(row: np.ndarray, salt: np.uint64, fp: np.ndarray) -> None:
    """Write a row's 128-bit fingerprint into fp (uint64 (2,)): fp[0] salted, never 0."""
    a = U0
    b = np.uint64(0x6A09E667F3BCC909)
    for i in range(ROW_WORDS):
        w = row[i]
        a = (a + w) * np.uint64(0x9E3779B97F4A7C15)
        a ^= a >> np.uint64(29)
        b = (b ^ w) * np.uint64(0xC2B2AE3D27D4EB4F)
        b ^= b >> np.uint64(31)
    h = _mix64(a ^ salt)
    if h == _EMPTY:
        h = U1
    fp[0] = h
    fp[1] = _mix64(b + a)


@njit(cache=True, nogil=True)
def _insert(
    row: np.ndarray,
    fp: np.ndarray,
    threshold: np.uint64,
    count_threshold: np.uint64,
    out_rows: np.ndarray,
    out_hash: np.ndarray,
    table: np.ndarray,
    state: np.ndarray,
) -> None:
    """Insert a matching child: count it if new, store it if fp[0] <= threshold.

    Only fingerprints with fp[0] <= count_threshold are kept (all of them until the table
    reaches its limit; see `_expand`). table uint64 (T, 2): 128-bit fingerprints, (0, *) = empty
    slot; T a power of two, load kept under 1/2 by the caller. out_rows uint64 (R, ROW_WORDS),
    out_hash uint64 (R,): the stored rows and their fp[0]; state int64 (S_WORDS,).
    """
    h = fp[0]
    if h > count_threshold:
        return
    mask = table.shape[0] - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        th = table[slot, 0]
        if th == _EMPTY:
            break
        if th == h and table[slot, 1] == fp[1]:
            return
        slot = (slot + 1) & mask
    table[slot, 0] = h
    table[slot, 1] = fp[1]
    state[S_DISTINCT] += 1
    state[S_TABLE] += 1
    if h <= threshold:
        n = state[S_ROWS]
        for i in range(ROW_WORDS):
            out_rows[n, i] = row[i]
        out_hash[n] = h
        state[S_ROWS] = n + 1


BATCH = 64
"""Matching children buffered before their hash-table probes (lets the probes' cache misses
overlap: the first pass over a batch only loads each slot)."""


@njit(cache=True, nogil=True)
def _flush(
    pend_rows: np.ndarray,
    pend_fp: np.ndarray,
    n_pend: int,
    threshold: np.uint64,
    count_threshold: np.uint64,
    out_rows: np.ndarray,
    out_hash: np.ndarray,
    table: np.ndarray,
    state: np.ndarray,
) -> None:
    """Insert n_pend buffered children (pend_rows uint64 (BATCH, ROW_WORDS), pend_fp uint64
    (BATCH, 2)); other arrays as in `_insert`."""
    mask = np.uint64(table.shape[0] - 1)
    acc = U0
    for j in range(n_pend):
        acc ^= table[np.int64(pend_fp[j, 0] & mask), 0]
    state[S_SCRATCH] = np.int64(acc & np.uint64(1))  # keeps the touching loads alive
    for j in range(n_pend):
        _insert(
            pend_rows[j], pend_fp[j], threshold, count_threshold, out_rows, out_hash, table, state
        )


# Long by design: one numba pass that generates, filters and stores children in place (a
# resumable state machine: it returns to grow buffers and resumes where it stopped).
@njit(cache=True, nogil=True)
def _expand_kernel(
    rows: np.ndarray,
    n_rows: int,
    n_total: int,
    mul: int,
    add: int,
    player: int,
    target: np.ndarray,
    clocks: np.uint64,
    salt: np.uint64,
    threshold: np.uint64,
    count_threshold: np.uint64,
    out_rows: np.ndarray,
    out_hash: np.ndarray,
    table: np.ndarray,
    state: np.ndarray,
    max_moves: int,
) -> int:
    """Expand parents state[S_NEXT] .. n_rows - 1 by every move of the side to move (an
    opponent ply) into the children whose observation equals `target`, deduplicated.

    rows uint64 (n_total, ROW_WORDS): parents; the i-th visited is rows[(mul * i + add) %
    n_total] (mul coprime to n_total: every parent once; mul = 1, add = 0 is the natural
    order), so a prefix of the visits is an evenly spread subset of P. player: the observer.
    target uint64 (OBS_WORDS,): the observation received. clocks: clocks word for the
    unpacked parents (not observed, not stored). salt, threshold, count_threshold:
    fingerprint salt and the storage and counting bounds (see `_insert`). out_rows uint64
    (R, ROW_WORDS), out_hash uint64 (R,), table uint64 (T, 2), state int64 (S_WORDS,):
    in/out counters. max_moves: move buffer length (the module's move cap; smaller in tests
    of the overflow path). Returns ST_DONE, or ST_GROW_ROWS / ST_GROW_TABLE when it stopped
    (at a parent boundary, with nothing pending) for more room; call again after growing.
    ST_OVERFLOW: the parent of visit state[S_NEXT] has more than max_moves moves (only a
    hand-built array can).
    """
    pos = np.empty(POS_WORDS, dtype=np.uint64)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    moves = np.empty(max_moves, dtype=np.uint16)
    pend_rows = np.empty((BATCH, ROW_WORDS), dtype=np.uint64)
    pend_fp = np.empty((BATCH, 2), dtype=np.uint64)
    n_pend = 0
    half_table = table.shape[0] >> 1
    cap_rows = out_rows.shape[0]
    tvis = target[0]
    thr = threshold
    cthr = count_threshold
    st = state
    i = state[S_NEXT]
    while i < n_rows:
        if state[S_ROWS] + max_moves + BATCH > cap_rows:
            _flush(pend_rows, pend_fp, n_pend, thr, cthr, out_rows, out_hash, table, st)
            state[S_NEXT] = i
            return ST_GROW_ROWS
        if state[S_TABLE] + max_moves + BATCH > half_table:
            _flush(pend_rows, pend_fp, n_pend, thr, cthr, out_rows, out_hash, table, st)
            state[S_NEXT] = i
            return ST_GROW_TABLE
        _unpack_row(rows[(mul * i + add) % n_total], clocks, pos)
        # squares the target sees whose contents differ in this parent: a move changes at
        # most 4 squares (castling), so it must touch every one of them
        diff = U0
        for c in range(12):
            diff |= (pos[c] & tvis) ^ target[1 + c]
        if popcount(diff) > 4:
            state[S_TESTED] += count_moves(pos)
            i += 1
            continue
        # a "silent" move touches no square that can change the player's observation: the
        # child then observes exactly what the parent does, with the side to move flipped
        observe_kernel(pos, player, obs)
        sensitive = obs[0] | _sensitive_extra(pos, player)
        obs[O_STM] = np.uint64(player)
        silent_ok = True
        for w in range(OBS_WORDS):
            if obs[w] != target[w]:
                silent_ok = False
                break
        opp_pawns = pos[(1 - player) * 6 + PAWN]
        n = gen_moves(pos, moves)
        if n > max_moves:  # a hand-built parent: report, never drop moves
            _flush(pend_rows, pend_fp, n_pend, thr, cthr, out_rows, out_hash, table, st)
            state[S_NEXT] = i
            return ST_OVERFLOW
        state[S_TESTED] += n
        for k in range(n):
            m = moves[k]
            mi = int(m)
            frm = mi & 63
            to = (mi >> 6) & 63
            touched = (U1 << np.uint64(frm)) | (U1 << np.uint64(to))
            kind = mi >> 14
            if kind == KIND_EN_PASSANT:
                touched |= U1 << np.uint64(to - 8 if to > frm else to + 8)
            elif kind == KIND_CASTLING:
                touched |= (U1 << np.uint64(CASTLE_ROOK[to, 0])) | (
                    U1 << np.uint64(CASTLE_ROOK[to, 1])
                )
            elif (to - frm == 16 or frm - to == 16) and (opp_pawns >> np.uint64(frm)) & U1:
                touched |= U1 << np.uint64((frm + to) >> 1)  # the en-passant square
            if diff & ~touched:
                continue
            silent = (touched & sensitive) == U0
            if silent and not silent_ok:
                continue
            make_move(pos, m, undo)
            # cheap necessary condition: the pieces on the target's visible squares
            same = True
            if not silent:
                for c in range(12):
                    if (pos[c] & tvis) != target[1 + c]:
                        same = False
                        break
            if same and not silent:
                observe_kernel(pos, player, obs)
                for w in range(OBS_WORDS):
                    if obs[w] != target[w]:
                        same = False
                        break
            if same:
                state[S_MATCHED] += 1
                _pack_row(pos, pend_rows[n_pend])
                _fingerprint(pend_rows[n_pend], salt, pend_fp[n_pend])
                n_pend += 1
                if n_pend == BATCH:
                    _flush(pend_rows, pend_fp, n_pend, thr, cthr, out_rows, out_hash, table, st)
                    n_pend = 0
            unmake_move(pos, m, undo)
        i += 1
    _flush(pend_rows, pend_fp, n_pend, thr, cthr, out_rows, out_hash, table, st)
    state[S_NEXT] = n_rows
    return ST_DONE


@njit(cache=True, nogil=True, inline="always")
def _sensitive_extra(pos: np.ndarray, player: int) -> np.uint64:
    """Fog squares whose occupancy can still change `player`'s observation: the pawns' push,
    double-push and capture squares, and the castling path when a right is left. (Every other
    square that matters is visible.) pos uint64 (16,)."""
    pawns = pos[player * 6 + PAWN]
    if player == 0:
        single = pawns << _S8
        out = single | ((single & _RANK_3) << _S8)
        out |= ((pawns & _NOT_FILE_A) << np.uint64(7)) | ((pawns & _NOT_FILE_H) << np.uint64(9))
    else:
        single = pawns >> _S8
        out = single | ((single & _RANK_6) >> _S8)
        out |= ((pawns & _NOT_FILE_A) >> np.uint64(9)) | ((pawns & _NOT_FILE_H) >> np.uint64(7))
    if pos[W_CASTLE] & _OWN_RIGHTS[player]:
        out |= _CASTLE_PATH[player]
    return np.uint64(out)


@njit(cache=True, nogil=True)
def _own_move_kernel(
    rows: np.ndarray,
    n_rows: int,
    player: int,
    target: np.ndarray,
    own_move: int,
    clocks: np.uint64,
    out_rows: np.ndarray,
    state: np.ndarray,
    max_moves: int,
) -> int:
    """Apply the observer's own move to every parent; keep children whose observation is target.

    Children are not deduplicated here. Distinct parents give distinct children unless
    `own_move_needs_dedupe` (see there); the caller then runs `_dedupe_kernel`.
    rows uint64 (>= n_rows, ROW_WORDS); target uint64 (OBS_WORDS,); out_rows uint64
    (>= n_rows, ROW_WORDS); state int64 (S_WORDS,) (S_ROWS, S_MATCHED, S_DISTINCT, S_TESTED,
    S_ILLEGAL updated). max_moves: move buffer length.
    Returns the number of children kept, or -1 if parent state[S_NEXT] has more than max_moves
    moves (only a hand-built array can).
    """
    pos = np.empty(POS_WORDS, dtype=np.uint64)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    moves = np.empty(max_moves, dtype=np.uint16)
    n_out = 0
    for i in range(n_rows):
        _unpack_row(rows[i], clocks, pos)
        n = gen_moves(pos, moves)
        if n > max_moves:  # a hand-built parent: report, never drop moves
            state[S_NEXT] = i
            return -1
        legal = False
        for k in range(n):
            if int(moves[k]) == own_move:
                legal = True
                break
        if not legal:
            state[S_ILLEGAL] += 1
            continue
        state[S_TESTED] += 1
        make_move(pos, own_move, undo)
        observe_kernel(pos, player, obs)
        same = True
        for w in range(OBS_WORDS):
            if obs[w] != target[w]:
                same = False
                break
        if same:
            _pack_row(pos, out_rows[n_out])
            n_out += 1
    state[S_ROWS] = n_out
    state[S_MATCHED] = n_out
    state[S_DISTINCT] = n_out
    state[S_NEXT] = n_rows
    return n_out


def own_move_needs_dedupe(player: int, move: int) -> bool:
    """Return True when the player's own `move` can map two parents of P onto one child.

    Why it is rare: every parent in P gives the player the same observation, so the squares the
    move touches (its destination, an en-passant victim, the castling rook's squares) hold the
    same pieces in every parent, and so do the player's castling rights and en-passant right (both
    observed). Making the move changes the parents alike, so two parents that differ keep
    differing, except in what the move erases: the halfmove clock (never stored) and the castling
    rights of CASTLE_KEEP[from] and CASTLE_KEEP[to]. A right of the opponent needs their king and
    rook at home, so the player's piece can only *start* on such a square when no parent has the
    right; it can *land* there by capturing the rook or king, and then parents that differed only
    in that right merge. So: dedupe when the destination is one of the opponent's castling home
    squares (a8, e8, h8 for white; a1, e1, h1 for black).
    """
    to = (int(move) >> 6) & 63
    return bool(~int(CASTLE_KEEP[to]) & int(_OWN_RIGHTS[1 - player]))


@njit(cache=True, nogil=True)
def _dedupe_kernel(rows: np.ndarray, n: int, table: np.ndarray) -> int:
    """Drop repeated rows in place, keeping first occurrences in order; return how many remain.

    rows uint64 (>= n, ROW_WORDS); table uint64 (T, 2) all zero, T a power of two >= 2n:
    128-bit fingerprints as in `_insert` (salt 0).
    """
    fp = np.empty(2, dtype=np.uint64)
    mask = table.shape[0] - 1
    w = 0
    for r in range(n):
        _fingerprint(rows[r], U0, fp)
        slot = np.int64(fp[0] & np.uint64(mask))
        seen = False
        while table[slot, 0] != _EMPTY:
            if table[slot, 0] == fp[0] and table[slot, 1] == fp[1]:
                seen = True
                break
            slot = (slot + 1) & mask
        if seen:
            continue
        table[slot, 0] = fp[0]
        table[slot, 1] = fp[1]
        if w != r:
            for j in range(ROW_WORDS):
                rows[w, j] = rows[r, j]
        w += 1
    return w


@njit(cache=True, nogil=True)
def _shrink(old: np.ndarray, new: np.ndarray, count_threshold: np.uint64) -> int:
    """Copy the fingerprints of `old` with fp[0] <= count_threshold into the empty `new`
    (both uint64 (T, 2)); return how many. With `_ALL` it is a plain rehash."""
    mask = new.shape[0] - 1
    kept = 0
    for s in range(old.shape[0]):
        h = old[s, 0]
        if h == _EMPTY or h > count_threshold:
            continue
        slot = np.int64(h & np.uint64(mask))
        while new[slot, 0] != _EMPTY:
            slot = (slot + 1) & mask
        new[slot, 0] = h
        new[slot, 1] = old[s, 1]
        kept += 1
    return kept


@njit(cache=True, nogil=True)
def _trim(out_rows: np.ndarray, out_hash: np.ndarray, n: int, keep: int) -> np.uint64:
    """Keep the `keep` stored rows of smallest fingerprint, compacting them; return the new
    admission threshold. out_rows uint64 (R, ROW_WORDS), out_hash uint64 (R,). The evicted
    rows stay counted: their fingerprints remain in the table."""
    srt = np.sort(out_hash[:n])
    t = srt[keep - 1]
    w = 0
    for r in range(n):
        h = out_hash[r]
        if h <= t and w < keep:
            if w != r:
                for j in range(ROW_WORDS):
                    out_rows[w, j] = out_rows[r, j]
                out_hash[w] = h
            w += 1
    return np.uint64(t)


def load_rare_kernels() -> None:
    """Load (from numba's cache, or compile) the kernels an update calls only on rare paths: a
    table that grows or is bounded (`_shrink`, `_trim`) and an own move whose children must be
    merged (`_dedupe_kernel`). A kernel's first call holds Python's lock while numba loads it
    (10-60 ms), so the first time must not fall inside a timed move: the engines call this in
    their warm-up. Tiny inputs of the dtypes an update passes."""
    table = np.zeros((4, 2), dtype=np.uint64)
    _shrink(table, np.zeros((4, 2), dtype=np.uint64), _ALL)
    rows = np.zeros((1, ROW_WORDS), dtype=np.uint64)
    _trim(rows, np.zeros(1, dtype=np.uint64), 1, 1)
    _dedupe_kernel(rows, 1, table)


@njit(cache=True, nogil=True)
def _pack_many(positions: np.ndarray, out: np.ndarray) -> int:
    """Pack positions uint64 (n, 16) into rows uint64 (n, ROW_WORDS); return n."""
    for i in range(positions.shape[0]):
        _pack_row(positions[i], out[i])
    return int(positions.shape[0])


@njit(cache=True, nogil=True)
def _unpack_many(rows: np.ndarray, clocks: np.uint64, out: np.ndarray) -> int:
    """Unpack rows uint64 (n, ROW_WORDS) into positions uint64 (n, 16); return n."""
    for i in range(rows.shape[0]):
        _unpack_row(rows[i], clocks, out[i])
    return int(rows.shape[0])


# --- public layer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BeliefConfig:
    """Settings of a belief set.

    max_positions: memory cap, in stored positions (104 bytes each).
    count_factor: an update counts distinct children exactly up to count_factor * max_positions
        (16-byte fingerprints); past that it keeps counting a bottom-k sketch and reports an
        estimate. Peak update memory is about (208 + 64 * count_factor) bytes * max_positions
        on top of P itself.
    seed: seeds the per-update fingerprint salt, hence which positions a capped P keeps.
    """

    max_positions: int = 2_000_000
    count_factor: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_positions, int) or self.max_positions < 1:
            raise ValueError(f"max_positions must be a positive int, got {self.max_positions!r}")
        if not isinstance(self.count_factor, int) or self.count_factor < 2:
            raise ValueError(f"count_factor must be an int >= 2, got {self.count_factor!r}")


@dataclass(frozen=True)
class UpdateStats:
    """What one update did: candidate children tested, matching children (before
    deduplication), distinct matches (an estimate when `distinct_estimated`: the counting table
    hit its limit), parents lacking the own move (always 0 unless observations and moves
    disagree)."""

    tested: int
    matched: int
    distinct: int
    distinct_estimated: bool
    illegal_parents: int


@dataclass(frozen=True, eq=False, repr=False)
class BeliefSet:
    """A player's set P of possible positions: rows uint64 (n, ROW_WORDS), one per position.

    `exact` is False once the memory cap forced a uniform subsample; `size_seen` is the number
    of distinct consistent positions found by the last update, exact, a lower bound or an
    estimate as `size_kind` says (see the module docstring).
    `ply` counts plies since the initial position; `fullmove0` is its full-move number.

    Iterating gives the positions as `Position`s, `fens()` as FEN strings and `sample()` a
    uniform sample of `Position`s; the engine's fast path takes arrays: `rows`, `positions()`
    and `sample_array()`.
    """

    player: int  # stored as a Color: any `color()` spelling is converted
    rows: np.ndarray
    ply: int
    exact: bool
    size_seen: int
    size_kind: SizeKind = SizeKind.EXACT
    config: BeliefConfig = field(default_factory=BeliefConfig)
    fullmove0: int = 1
    last: UpdateStats | None = None
    pending: _Pending | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "player", color(self.player))

    @property
    def partial(self) -> bool:
        """True while an opponent-ply update stopped at its deadline is unfinished: the rows
        are the children of the parents expanded so far (an evenly spread subset of them),
        and `complete` or `truncate` decides what happens to the rest."""
        return self.pending is not None

    @classmethod
    def initial(
        cls,
        player: ColorLike,
        fen: str | Position = STARTING_FEN,
        config: BeliefConfig | None = None,
    ) -> BeliefSet:
        """Return P = {the initial position} (both players know it) for `player` (a Color,
        "white"/"black", 0/1 or python-chess's True/False)."""
        who = color(player)
        pos = fen.arr if isinstance(fen, Position) else from_fen(fen)
        rows = np.empty((1, ROW_WORDS), dtype=np.uint64)
        _pack_many(pos[None, :], rows)
        return cls(
            player=who,
            rows=rows,
            ply=0,
            exact=True,
            size_seen=1,
            config=config or BeliefConfig(),
            fullmove0=int(pos[W_CLOCKS]) >> 32,
        )

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def __repr__(self) -> str:
        if self.exact:
            size = "exact"
        else:
            bound = {SizeKind.EXACT: "", SizeKind.LOWER_BOUND: ">= ", SizeKind.ESTIMATE: "~"}
            size = f"sample of {bound[self.size_kind]}{self.size_seen}"
        return f"<BeliefSet {self.player} ply={self.ply} |P|={len(self)} {size}>"

    def __iter__(self) -> Iterator[Position]:
        for i in range(len(self)):
            yield Position(self.positions(np.arange(i, i + 1))[0])

    def __contains__(self, pos: object) -> bool:
        return isinstance(pos, Position | np.ndarray) and self.contains(pos)

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored rows."""
        return int(self.rows.nbytes)

    def _clocks(self) -> np.uint64:
        return np.uint64((self.fullmove0 + self.ply // 2) << 32)

    def positions(self, index: np.ndarray | None = None) -> np.ndarray:
        """Return stored positions as uint64 (k, 16) arrays (clocks not tracked: halfmove 0)."""
        rows = self.rows if index is None else self.rows[index]
        out = np.empty((rows.shape[0], POS_WORDS), dtype=np.uint64)
        _unpack_many(np.ascontiguousarray(rows), self._clocks(), out)
        return out

    def fens(self) -> list[str]:
        """Return the FENs of the stored positions (halfmove clock 0: clocks are not tracked)."""
        return [to_fen(p) for p in self.positions()]

    def _sample_index(self, k: int, rng: np.random.Generator | None) -> np.ndarray:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
            raise ValueError(f"sample size must be an int >= 0, got {k!r}")
        rng = rng if rng is not None else np.random.default_rng(self.config.seed)
        return np.sort(rng.choice(len(self), size=min(int(k), len(self)), replace=False))

    def sample(self, k: int, rng: np.random.Generator | None = None) -> list[Position]:
        """Return min(k, |P|) positions drawn uniformly without replacement, as Positions."""
        return [Position(p) for p in self.sample_array(k, rng)]

    def sample_array(self, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Return min(k, |P|) positions drawn uniformly without replacement, uint64 (k, 16)
        (the same draw as `sample` with the same rng)."""
        return self.positions(self._sample_index(k, rng))

    def contains(self, pos: PositionLike) -> bool:
        """Return True if `pos` (a Position or a uint64 (16,) array) is in P (clocks ignored)."""
        key = np.empty((1, ROW_WORDS), dtype=np.uint64)
        _pack_many(position_array(pos)[None, :], key)
        return bool(np.any(np.all(self.rows == key[0], axis=1)))

    def update_own_move(self, move: MoveLike, obs: Observation) -> BeliefSet:
        """Return P after the player's own move and the observation after it.

        `move` is a Move, UCI text, a `chess.Move` or a kernel code; it must be a FoW move of
        the positions in P (they agree on the player's own pieces, so on the player's moves).
        """
        if len(self) == 0:
            raise BeliefError("P is empty")
        code = resolve_move(self.positions(np.arange(1))[0], move)
        return self._update(code, obs)

    def scratch(self) -> Scratch:
        """The buffers of this set's next opponent-ply update, touched now (`Scratch`): the
        whole hash table, and as many rows as P has."""
        row_cap, tsize = _buffer_sizes(len(self), self.config)
        rows = np.empty((row_cap, ROW_WORDS), dtype=np.uint64)
        hashes = np.empty(row_cap, dtype=np.uint64)
        k = min(row_cap, len(self))
        rows[:k] = 0
        hashes[:k] = 0
        table = np.zeros((tsize, 2), dtype=np.uint64)
        table.fill(0)  # np.zeros maps pages lazily: fault them in now
        return Scratch(rows, hashes, table)

    def update_opponent_move(self, obs: Observation, deadline: Deadline | None = None,
                             spread: bool | None = None,
                             scratch: Scratch | None = None) -> BeliefSet:
        """Return P after an unseen opponent move, given the observation received after it.

        With a `deadline` the update stops at its hard instant (after at least one matching
        child) and returns a `partial` set: the children of the parents expanded so far,
        visited in a spread order (`spread`, default: when there is a deadline) so they are an
        evenly spread subset. Nothing is dropped yet: `complete()` expands the rest (later, on
        the opponent's time), `truncate()` gives it up and reports it (`exact` False, the size
        an estimate). A partial set is consumed by either call. `scratch`: buffers made ahead
        by `scratch()` (used when their sizes still fit).
        """
        self._check_update(-1, obs)
        if self.partial:
            return self.complete().update_opponent_move(obs, deadline, spread, scratch)
        exp = _Expansion(self.rows, int(self.player), obs.to_array(), self._clocks(),
                         self.config, np.random.default_rng([self.config.seed, self.ply]),
                         spread=deadline is not None if spread is None else spread,
                         scratch=scratch)
        upd = _Update(exp, obs, self.exact)
        exp.run(deadline)
        return self._after(upd)

    def complete(self, deadline: Deadline | None = None) -> BeliefSet:
        """Finish a partial update (all of it, or until `deadline`: still partial then);
        the set itself when it is not partial."""
        if self.pending is None:
            return self
        upd = self.pending.consume()
        upd.exp.run(deadline)
        return self._base()._after(upd)

    def truncate(self) -> BeliefSet:
        """Give up a partial update's unexpanded parents: P becomes the rows found so far, a
        reported subsample (`exact` False, `size_kind` ESTIMATE); the set itself when it is
        not partial."""
        if self.pending is None:
            return self
        rows, stats = self.pending.consume().exp.rows()
        return BeliefSet(self.player, rows, self.ply, False, stats.distinct, SizeKind.ESTIMATE,
                         self.config, self.fullmove0, stats)

    def _base(self) -> BeliefSet:
        """The set the pending update started from (its ply, before the update)."""
        return replace(self, ply=self.ply - 1, pending=None)

    def _check_update(self, own_move: int, obs: Observation) -> None:
        if not isinstance(obs, Observation):
            raise TypeError(f"an update needs an Observation, got {type(obs).__name__}")
        if obs.player != self.player:
            raise BeliefError(f"{obs.player}'s observation given to {self.player}'s belief set")
        if self.partial:
            return  # the pending update comes first; its rows say who is to move then
        mover = Color(int(self.rows[0, 12] & 1)) if len(self) else None
        if (own_move >= 0) != (mover == self.player):
            who = "own" if own_move >= 0 else "opponent"
            raise BeliefError(f"{who} move update at ply {self.ply}, but {mover} is to move")

    def _after(self, upd: _Update) -> BeliefSet:
        """The set after the (possibly unfinished) opponent-ply update `upd`."""
        rows, stats = upd.exp.rows()
        if not upd.exp.done:
            return BeliefSet(self.player, rows, self.ply + 1, False, stats.distinct,
                             SizeKind.ESTIMATE, self.config, self.fullmove0, stats,
                             _Pending(upd, upd.generation))
        return self._finished(rows, stats, upd.obs, upd.exact)

    def _finished(self, rows: np.ndarray, stats: UpdateStats, obs: Observation,
                  exact: bool) -> BeliefSet:
        if rows.shape[0] == 0 and exact:
            raise BeliefError(
                f"no position is consistent with observation {obs.dark_fen()!r} at ply "
                f"{self.ply + 1} ({self.player})"
            )
        if rows.shape[0] == 0:
            raise BeliefError(
                f"the subsample of P (max_positions={self.config.max_positions}) holds no "
                f"position consistent with observation {obs.dark_fen()!r} at ply {self.ply + 1} "
                f"({self.player}); the true P is not empty: raise max_positions"
            )
        return BeliefSet(
            player=self.player,
            rows=rows,
            ply=self.ply + 1,
            exact=exact and stats.distinct == rows.shape[0],
            size_seen=stats.distinct,
            size_kind=(
                SizeKind.ESTIMATE
                if stats.distinct_estimated
                else SizeKind.EXACT
                if exact
                else SizeKind.LOWER_BOUND
            ),
            config=self.config,
            fullmove0=self.fullmove0,
            last=stats,
        )

    def _update(self, own_move: int, obs: Observation) -> BeliefSet:
        self._check_update(own_move, obs)
        if self.partial:
            return self.complete()._update(own_move, obs)
        rows, stats = _expand(
            self.rows,
            int(self.player),  # a plain int: numba cannot lower IntEnum members
            obs.to_array(),
            own_move,
            self._clocks(),
            self.config,
            np.random.default_rng([self.config.seed, self.ply]),
        )
        return self._finished(rows, stats, obs, self.exact)


@dataclass
class _Update:
    """An opponent-ply update that stopped at a deadline, shared by the partial sets made
    from it; `generation` counts them, so only the newest one may go on (an older one would
    repeat or skip work)."""

    exp: _Expansion
    obs: Observation
    exact: bool  # the parents were exact
    generation: int = 0


@dataclass(frozen=True)
class _Pending:
    """What a partial set holds: its update and the generation it saw."""

    update: _Update
    generation: int

    def consume(self) -> _Update:
        """The update, for the one call that goes on from this set; BeliefError if an
        earlier call did already."""
        upd = self.update
        if upd.generation != self.generation:
            raise BeliefError("this partial belief set was already completed or truncated "
                              "(use the set the last call returned)")
        upd.generation += 1
        return upd


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _spread_multiplier(n: int) -> int:
    """An int near n / golden ratio coprime to n: visiting i -> (mul * i + add) % n spreads
    every prefix of the visits evenly over the n parents (a Weyl sequence)."""
    if n <= 2:
        return 1
    mul = max(1, round(n * _GOLDEN))
    while math.gcd(mul, n) != 1:
        mul += 1
    return mul % n or 1


def _buffer_sizes(n: int, config: BeliefConfig) -> tuple[int, int]:
    """(rows, hash-table slots) an update of `n` parents starts with (`_Expansion`)."""
    cap = config.max_positions
    row_limit = 2 * cap + MAX_MOVES + BATCH
    row_cap = min(max(1024, 4 * n), row_limit)
    tsize = 1 << max(11, int(2 * min(row_cap, config.count_factor * cap)).bit_length())
    return row_cap, tsize


@dataclass(eq=False)
class Scratch:
    """The buffers of the next opponent-ply update, made and touched ahead of it
    (`BeliefSet.scratch`): an update's first writes into fresh memory are page faults, its
    hash table's random ones the worst (a 100,000-row P's update spent 40 ms of a 30 ms
    belief stage on them on a 2-core machine). An agent makes the scratch after its own ply,
    on the opponent's time. One update uses it (`used`); a second one given it allocates its
    own (the table is no longer zero)."""

    rows: np.ndarray
    hashes: np.ndarray
    table: np.ndarray
    used: bool = False


class _Expansion:
    """One opponent-ply update of P in progress: the kernel's buffers and counters, resumable
    between deadlines (`run`), with the rows found so far available at any time (`rows`).

    Parents are visited in a spread order when `spread` (`_spread_multiplier`, random offset):
    then the children found before a deadline are those of an evenly spread subset of P,
    which is what a cut-off update keeps. Without `spread`, the natural order (the rows come
    out exactly as a one-go update makes them).

    `rows()` lends its buffer's first rows rather than copying them (a 1M-row copy into fresh
    pages took 250 ms of a 390 ms belief stage on this machine, past its deadline): the
    kernel only appends past them, and before anything rewrites them in place (a resumed
    update, a trim at the cap) the buffer is copied (`_own`), on the opponent's time.
    """

    def __init__(self, rows: np.ndarray, player: int, target: np.ndarray, clocks: np.uint64,
                 config: BeliefConfig, rng: np.random.Generator, spread: bool,
                 scratch: Scratch | None = None) -> None:
        cap = config.max_positions
        self.src = np.ascontiguousarray(rows)
        self.n = int(self.src.shape[0])
        self.player = player
        self.target = target
        self.clocks = clocks
        self.cap = cap
        self.salt = np.uint64(rng.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
        self.mul, self.add = 1, 0
        if spread and self.n > 2:
            self.mul = _spread_multiplier(self.n)
            self.add = int(rng.integers(0, self.n))
        top = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
        self.top = top
        self.threshold = top  # rows stored: fingerprints <= threshold
        self.count_threshold = top  # fingerprints counted: <= count_threshold
        self.count_limit = config.count_factor * cap
        self.row_limit = 2 * cap + MAX_MOVES + BATCH
        row_cap, tsize = _buffer_sizes(self.n, config)
        if (scratch is not None and not scratch.used
                and scratch.rows.shape == (row_cap, ROW_WORDS)
                and scratch.table.shape == (tsize, 2)):
            scratch.used = True
            self.out_rows, self.out_hash, self.table = scratch.rows, scratch.hashes, scratch.table
        else:
            self.out_rows = np.empty((row_cap, ROW_WORDS), dtype=np.uint64)
            self.out_hash = np.empty(row_cap, dtype=np.uint64)
            self.table = np.zeros((tsize, 2), dtype=np.uint64)
        self.state = np.zeros(S_WORDS, dtype=np.int64)
        self.seconds = 0.0
        self._lent = False  # out_rows[:S_ROWS] is held by a set (`rows`)

    @property
    def visited(self) -> int:
        """Parents expanded so far."""
        return int(self.state[S_NEXT])

    @property
    def done(self) -> bool:
        """True once every parent was expanded."""
        return self.visited >= self.n

    def run(self, deadline: Deadline | None = None) -> bool:
        """Expand more parents: all of them, or in chunks until `deadline`'s hard instant
        (at least one chunk, and on until a child is found: P is never empty). Return
        `done`."""
        t0 = time.perf_counter()
        self._own()
        if deadline is None:
            self._step(self.n)
        else:
            chunk = 256
            while not self.done:
                if deadline.passed() and self.state[S_ROWS] > 0:
                    break
                c0 = deadline.now()
                before = self.visited
                self._step(min(self.n, before + chunk))
                per = (deadline.now() - c0) / max(self.visited - before, 1)
                # chunks of about 2 ms (and never past what is left)
                left = max(deadline.left(), 0.0)
                chunk = int(min(2e-3, left / 2) / max(per, 1e-9))
                chunk = max(32, min(chunk, 1 << 16))
        self.seconds += time.perf_counter() - t0
        return self.done

    def _step(self, end: int) -> None:
        """Run the kernel over the visits up to `end`, growing buffers and trimming at the cap
        as it asks."""
        cap = self.cap
        while True:
            status = _expand_kernel(
                self.src, end, self.n, self.mul, self.add, self.player, self.target,
                self.clocks, self.salt, self.threshold, self.count_threshold, self.out_rows,
                self.out_hash, self.table, self.state, MAX_MOVES,
            )  # fmt: skip
            if status == ST_DONE:
                return
            if status == ST_OVERFLOW:
                raise _overflow(self.src[self.parent_of(self.visited)], self.clocks)
            state = self.state
            if status == ST_GROW_TABLE and state[S_TABLE] < self.count_limit:
                new_table = np.zeros((2 * self.table.shape[0], 2), dtype=np.uint64)
                _shrink(self.table, new_table, _ALL)  # a plain rehash into a larger table
                self.table = new_table
            elif status == ST_GROW_TABLE:
                # bound the table: keep counting only the distinct children whose fingerprint
                # is among the count_limit/2 smallest so far (a bottom-k sketch); the stored
                # rows, trimmed to the cap first, all lie below that bound
                if state[S_ROWS] > cap:
                    self.threshold = np.uint64(
                        _trim(self.out_rows, self.out_hash, int(state[S_ROWS]), cap))
                    state[S_ROWS] = cap
                hashes = self.table[:, 0][self.table[:, 0] != 0]
                k = self.count_limit // 2
                kth = np.partition(hashes, k - 1)[k - 1]
                self.count_threshold = np.uint64(max(int(kth), int(self.threshold)))
                new_table = np.zeros_like(self.table)
                state[S_TABLE] = _shrink(self.table, new_table, self.count_threshold)
                self.table = new_table
            elif self.out_rows.shape[0] < self.row_limit:
                grown = min(2 * self.out_rows.shape[0], self.row_limit)
                extra = grown - self.out_rows.shape[0]
                self.out_rows = np.concatenate(
                    [self.out_rows, np.empty((extra, ROW_WORDS), dtype=np.uint64)])
                self.out_hash = np.concatenate(
                    [self.out_hash, np.empty(extra, dtype=np.uint64)])
            else:
                self.threshold = np.uint64(
                    _trim(self.out_rows, self.out_hash, int(state[S_ROWS]), cap))
                state[S_ROWS] = cap

    def parent_of(self, visit: int) -> int:
        """The row index of the `visit`-th parent visited."""
        return (self.mul * visit + self.add) % max(self.n, 1)

    def _own(self) -> None:
        """Take the row buffer back from the sets it was lent to (copy its stored rows)."""
        if self._lent:
            n = int(self.state[S_ROWS])
            rows = np.empty_like(self.out_rows)
            rows[:n] = self.out_rows[:n]
            self.out_rows = rows
            self._lent = False

    def rows(self) -> tuple[np.ndarray, UpdateStats]:
        """The children found so far (at most the cap), lent (class docstring), and the
        statistics: the final result once `done`; before that, `distinct` estimates the
        whole update's count from the share of parents visited."""
        n = int(self.state[S_ROWS])
        if n > self.cap:
            self._own()
            self.threshold = np.uint64(_trim(self.out_rows, self.out_hash, n, self.cap))
            self.state[S_ROWS] = n = self.cap
        out = self.out_rows[:n]
        self._lent = True
        estimate: int | None = None
        if self.count_threshold != self.top:
            # distinct children estimated from the counted fraction of the fingerprint space
            estimate = round(int(self.state[S_TABLE]) * 2.0**64 / (int(self.count_threshold) + 1))
            estimate = max(estimate, n + 1)
        if not self.done:
            seen = estimate if estimate is not None else int(self.state[S_DISTINCT])
            estimate = max(n, round(seen * self.n / max(self.visited, 1)))
        return out, _stats(self.state, estimate)


def _expand(
    rows: np.ndarray,
    player: int,
    target: np.ndarray,
    own_move: int,
    clocks: np.uint64,
    config: BeliefConfig,
    rng: np.random.Generator,
) -> tuple[np.ndarray, UpdateStats]:
    """An own-move update (P's rows after `own_move` and the observation `target`), or a
    whole opponent-ply update run in one go.

    Returns (rows uint64 (k, ROW_WORDS) with k <= max_positions, the update's statistics).
    """
    src = np.ascontiguousarray(rows)
    if own_move >= 0:
        # |children| <= |parents| <= cap: no table, no trimming
        out = np.empty((src.shape[0], ROW_WORDS), dtype=np.uint64)
        st = np.zeros(S_WORDS, dtype=np.int64)
        n = _own_move_kernel(
            src, src.shape[0], player, target, own_move, clocks, out, st, MAX_MOVES
        )
        if n < 0:
            raise _overflow(src[int(st[S_NEXT])], clocks)
        if n > 1 and own_move_needs_dedupe(player, own_move):
            table = np.zeros((1 << max(4, (2 * n).bit_length()), 2), dtype=np.uint64)
            n = _dedupe_kernel(out, n, table)
            st[S_ROWS] = st[S_DISTINCT] = n
        return out[:n].copy(), _stats(st)
    exp = _Expansion(src, player, target, clocks, config, rng, spread=False)
    exp.run(None)
    return exp.rows()


def _overflow(row: np.ndarray, clocks: np.uint64) -> TooManyMovesError:
    pos = np.empty((1, POS_WORDS), dtype=np.uint64)
    _unpack_many(np.ascontiguousarray(row[None, :]), clocks, pos)
    return TooManyMovesError(
        f"a position of P, {to_fen(pos[0])!r}, has more than MAX_MOVES = {MAX_MOVES} FoW moves "
        "(possible only in a position built by hand)"
    )


def _stats(state: np.ndarray, estimate: int | None = None) -> UpdateStats:
    return UpdateStats(
        tested=int(state[S_TESTED]),
        matched=int(state[S_MATCHED]),
        distinct=int(state[S_DISTINCT]) if estimate is None else estimate,
        distinct_estimated=estimate is not None,
        illegal_parents=int(state[S_ILLEGAL]),
    )


PIECE_SAMPLE = 4096
"""Positions of P that `piece_shares` counts by default (all of P when it holds fewer)."""
_SHARE_CHUNK = 4096  # rows unpacked to bits at once (6 * 64 bytes a row)


@dataclass(frozen=True, eq=False)
class PieceShares:
    """Where P puts the opponent's pieces: `counts[k, s]` is the number of counted positions
    with the opponent's piece of kind k (0 pawn, 1 knight, 2 bishop, 3 rook, 4 queen, 5 king)
    on square s (a1 = 0, h8 = 63).

    color: whose pieces (the opponent of P's player). sample: positions counted, all of P
    when |P| <= the sample size asked for, else that many drawn uniformly without
    replacement. size: |P| (stored positions). A square holds one piece at most, so
    `counts[:, s].sum()` counts the positions with any of the opponent's pieces on s.
    """

    color: Color
    counts: np.ndarray
    sample: int
    size: int

    @property
    def shares(self) -> np.ndarray:
        """float64 (6, 64): counts / sample, the share of the counted positions (0 if none)."""
        return self.counts / max(self.sample, 1)

    @property
    def exact(self) -> bool:
        """True when every position of P was counted (no sampling)."""
        return self.sample == self.size


def piece_shares(belief: BeliefSet, max_sample: int = PIECE_SAMPLE,
                 rng: np.random.Generator | None = None) -> PieceShares:
    """Count, per square and kind, the positions of P with one of the opponent's pieces there.

    All of P when |P| <= max_sample, otherwise a uniform sample of max_sample positions
    (`rng`, default: seeded from P's config, as `BeliefSet.sample` draws): the counts are then
    an unbiased estimate of |P| * share, with a standard error of at most 0.5 / sqrt(max_sample)
    on each share. Cost: one pass over the counted rows' six bitboards (unpacked to bits in
    chunks), no move generation.
    """
    if not isinstance(belief, BeliefSet):
        raise TypeError(f"piece_shares needs a BeliefSet, got {type(belief).__name__}")
    if isinstance(max_sample, bool) or not isinstance(max_sample, int | np.integer) \
            or max_sample < 1:
        raise ValueError(f"max_sample must be an int >= 1, got {max_sample!r}")
    n = len(belief)
    rows = belief.rows if n <= max_sample else belief.rows[belief._sample_index(max_sample, rng)]
    them = 1 - int(belief.player)
    counts = np.zeros((6, 64), dtype=np.int64)
    for start in range(0, rows.shape[0], _SHARE_CHUNK):
        boards = np.ascontiguousarray(rows[start:start + _SHARE_CHUNK, 6 * them:6 * them + 6],
                                      dtype="<u8")
        bits = np.unpackbits(boards.view(np.uint8).reshape(-1, 6, 8), axis=2, bitorder="little")
        counts += bits.sum(axis=0, dtype=np.int64)
    return PieceShares(Color(them), counts, int(rows.shape[0]), n)


def pack_positions(positions: np.ndarray) -> np.ndarray:
    """Return the rows (uint64 (n, ROW_WORDS)) of positions uint64 (n, 16) (ep normalized)."""
    positions = np.ascontiguousarray(positions, dtype=np.uint64)
    if positions.ndim != 2 or positions.shape[1] != POS_WORDS:
        raise ValueError(f"positions must have shape (n, {POS_WORDS}), got {positions.shape}")
    out = np.empty((positions.shape[0], ROW_WORDS), dtype=np.uint64)
    _pack_many(positions, out)
    return out


__all__ = [
    "PIECE_SAMPLE",
    "ROW_BYTES",
    "ROW_WORDS",
    "BeliefConfig",
    "BeliefError",
    "BeliefSet",
    "PieceShares",
    "SizeKind",
    "UpdateStats",
    "pack_positions",
    "piece_shares",
]
