"""The kernels of the belief update (`caligo.fow.belief`): the stored row of a position, the
128-bit fingerprints and the hash table that drops duplicate children, the opponent-ply
expansion, the own-move update, and the rare paths (a growing or bounded table, merged
children). Every kernel is numba-compiled with `nogil`; `caligo.fow.belief` drives them and
documents the update, the storage and the memory cap."""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.fow.bitboard import FILES, PAWN_ATTACKS, RANKS, U0, U1, popcount
from caligo.fow.movegen import count_moves, gen_moves
from caligo.fow.observation import O_STM, OBS_WORDS, observe_kernel
from caligo.fow.position import (
    CASTLE_KEEP,
    CASTLE_ROOK,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    NO_EP,
    PAWN,
    POS_WORDS,
    UNDO_WORDS,
    W_CASTLE,
    W_CLOCKS,
    W_EP,
    W_STM,
    make_move,
    unmake_move,
)

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

# status codes of `_filter_kernel`
ST_DONE = 0
ST_GROW_ROWS = 1
ST_OVERFLOW = 3  # parent lstate[S_NEXT] has more than MAX_MOVES moves (built by hand)

# state slots of an update (`_filter_kernel`'s per-range counters and `_insert_kernel`'s
# totals; int64 array)
S_NEXT = 0  # next parent index
S_ROWS = 1  # rows stored in out_rows
S_DISTINCT = 2  # distinct matching children seen (stored or not)
S_TESTED = 3  # candidate children tested
S_ILLEGAL = 4  # parents where a given own move was not in the move list
S_MATCHED = 5  # matching children before deduplication
S_SCRATCH = 6  # written by `_insert_kernel` so its prefetching loads are not optimized away
S_TABLE = 7  # fingerprints currently in the table
S_WORDS = 8


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
    reaches its limit; see `caligo.fow.belief_update._Expansion`). table uint64 (T, 2):
    128-bit fingerprints, (0, *) = empty slot; T a power of two, load kept under 1/2 by the
    caller. out_rows uint64 (R, ROW_WORDS), out_hash uint64 (R,): the stored rows and their
    fp[0]; state int64 (S_WORDS,).
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
"""Children inserted a batch at a time (`_insert_kernel`: the first pass over a batch only
loads each slot, so the probes' cache misses overlap)."""


# Long by design: one numba pass that generates and filters children in place (resumable: it
# returns at a parent boundary when its buffer is full and resumes where it stopped).
@njit(cache=True, nogil=True)
def _filter_kernel(
    rows: np.ndarray,
    end: int,
    n_total: int,
    mul: int,
    add: int,
    player: int,
    target: np.ndarray,
    clocks: np.uint64,
    salt: np.uint64,
    pend_rows: np.ndarray,
    pend_fp: np.ndarray,
    lstate: np.ndarray,
    max_moves: int,
) -> int:
    """Expand parents lstate[S_NEXT] .. end - 1 by every move of the side to move (an opponent
    ply) into the children whose observation equals `target`, written in visit order with their
    fingerprints (not deduplicated: `_insert_kernel` does that).

    rows uint64 (n_total, ROW_WORDS): parents; the i-th visited is rows[(mul * i + add) %
    n_total] (mul coprime to n_total: every parent once; mul = 1, add = 0 is the natural
    order), so a prefix of the visits is an evenly spread subset of P. player: the observer.
    target uint64 (OBS_WORDS,): the observation received. clocks: clocks word for the
    unpacked parents (not observed, not stored). salt: the fingerprint salt. pend_rows uint64
    (R, ROW_WORDS), pend_fp uint64 (R, 2): the children and their fingerprints, from row
    lstate[S_ROWS] on. lstate int64 (S_WORDS,): S_NEXT, S_ROWS, S_TESTED, S_MATCHED in/out.
    max_moves: move buffer length (the module's move cap; smaller in tests of the overflow
    path). Returns ST_DONE, or ST_GROW_ROWS when it stopped (at a parent boundary) because
    another parent's moves might not fit; call again with room. ST_OVERFLOW: the parent of
    visit lstate[S_NEXT] has more than max_moves moves (only a hand-built array can).
    Different visit ranges may run at once in threads, each with its own outputs.
    """
    pos = np.empty(POS_WORDS, dtype=np.uint64)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    moves = np.empty(max_moves, dtype=np.uint16)
    n_pend = lstate[S_ROWS]
    cap_rows = pend_rows.shape[0]
    tvis = target[0]
    i = lstate[S_NEXT]
    while i < end:
        if n_pend + max_moves > cap_rows:
            lstate[S_NEXT] = i
            lstate[S_ROWS] = n_pend
            return ST_GROW_ROWS
        _unpack_row(rows[(mul * i + add) % n_total], clocks, pos)
        # squares the target sees whose contents differ in this parent: a move changes at
        # most 4 squares (castling), so it must touch every one of them
        diff = U0
        for c in range(12):
            diff |= (pos[c] & tvis) ^ target[1 + c]
        if popcount(diff) > 4:
            lstate[S_TESTED] += count_moves(pos)
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
            lstate[S_NEXT] = i
            lstate[S_ROWS] = n_pend
            return ST_OVERFLOW
        lstate[S_TESTED] += n
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
                lstate[S_MATCHED] += 1
                _pack_row(pos, pend_rows[n_pend])
                _fingerprint(pend_rows[n_pend], salt, pend_fp[n_pend])
                n_pend += 1
            unmake_move(pos, m, undo)
        i += 1
    lstate[S_NEXT] = end
    lstate[S_ROWS] = n_pend
    return ST_DONE


@njit(cache=True, nogil=True)
def _insert_kernel(
    pend_rows: np.ndarray,
    pend_fp: np.ndarray,
    lo: int,
    hi: int,
    threshold: np.uint64,
    count_threshold: np.uint64,
    out_rows: np.ndarray,
    out_hash: np.ndarray,
    table: np.ndarray,
    state: np.ndarray,
) -> int:
    """Insert the filtered children lo .. hi - 1 (`_filter_kernel`'s outputs) in order, a
    batch at a time; other arrays as in `_insert`, state[S_MATCHED] the children of the
    rounds before (the caller adds this round's after). Returns how far it got: hi, or
    less when the rows or the table (kept under half full) lack room for another batch; grow
    them (or trim, or bound the table) and call again from there. Each batch's table slots
    are loaded before any is probed, so their cache misses overlap."""
    half_table = table.shape[0] >> 1
    cap_rows = out_rows.shape[0]
    mask = np.uint64(table.shape[0] - 1)
    done = state[S_MATCHED]  # children of the update inserted before this round
    while lo < hi:
        # batches are counted over the whole update, not the round, so the room checks (and
        # the table's growth and bounding they call for) fall at the same children however
        # the update is cut into rounds
        at = (done + lo) % BATCH
        if at == 0 and (state[S_ROWS] + BATCH > cap_rows
                        or state[S_TABLE] + BATCH > half_table):
            return lo
        m = min(BATCH - at, hi - lo)
        acc = U0
        for j in range(lo, lo + m):
            acc ^= table[np.int64(pend_fp[j, 0] & mask), 0]
        state[S_SCRATCH] = np.int64(acc & np.uint64(1))  # keeps the touching loads alive
        for j in range(lo, lo + m):
            _insert(pend_rows[j], pend_fp[j], threshold, count_threshold, out_rows, out_hash,
                    table, state)
        lo += m
    return hi


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
