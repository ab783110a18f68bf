"""Bitboards for FoW chess: squares, generated rule tables, attack sets for numba code.

Square indexing (python-chess order), one bit per square of a `uint64`::

        a  b  c  d  e  f  g  h
    8  56 57 58 59 60 61 62 63
    7  48 49 50 51 52 53 54 55
    6  40 41 42 43 44 45 46 47
    5  32 33 34 35 36 37 38 39
    4  24 25 26 27 28 29 30 31
    3  16 17 18 19 20 21 22 23
    2   8  9 10 11 12 13 14 15
    1   0  1  2  3  4  5  6  7

    square = 8 * rank + file;  bit `square` of a bitboard is set when the square is in the set.

Every table is built in a loop at import (never typed out by hand) and stored as `np.uint64`.
Slider attacks use "fancy" magic bitboards: the magic multipliers are found at import by a seeded,
deterministic search (a njit kernel, cached on disk by numba), and each is checked against the
slow ray walk for every blocker subset while it is searched, so a wrong table cannot be built.

numba trap (docs/design.md): never mix `uint64` with bare int literals (`bb - 1` silently becomes
int64 / float64); the module constants `U0`, `U1` exist for that.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from caligo.fow.values import SQUARE_NAMES as SQUARE_NAMES  # re-exported

Square: TypeAlias = int
"""A square index 0..63 (a1 = 0, h8 = 63); 64 means "no square"."""
Bitboard: TypeAlias = np.uint64
"""A set of squares, bit i for square i."""

NO_SQUARE = 64
U0 = np.uint64(0)
U1 = np.uint64(1)
FULL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)

FILE_NAMES = "abcdefgh"
RANK_NAMES = "12345678"
# SQUARE_NAMES (a1 = 0 ... h8 = 63) is built in `values`, which needs no numba


def square(file: int, rank: int) -> Square:
    """Return the square on `file` (0 = a) and `rank` (0 = 1)."""
    return 8 * rank + file


def square_file(sq: Square) -> int:
    """Return the file 0..7 of `sq`."""
    return sq & 7


def square_rank(sq: Square) -> int:
    """Return the rank 0..7 of `sq`."""
    return sq >> 3


def square_name(sq: Square) -> str:
    """Return the name ("e4") of `sq`."""
    return SQUARE_NAMES[sq]


def parse_square(name: str) -> Square:
    """Return the square named `name` ("e4"); raise ValueError on a bad name."""
    if len(name) != 2 or name[0] not in FILE_NAMES or name[1] not in RANK_NAMES:
        raise ValueError(f"invalid square: {name!r}")
    return square(FILE_NAMES.index(name[0]), RANK_NAMES.index(name[1]))


def bb_of(*squares: Square) -> np.uint64:
    """Return the bitboard holding `squares`."""
    out = U0
    for sq in squares:
        out |= U1 << np.uint64(sq)
    return out


def squares_of(bb: int | np.uint64) -> list[Square]:
    """Return the squares of `bb` in increasing order (pure Python: one step a set bit)."""
    b = int(bb)
    out = []
    while b:
        low = b & -b
        out.append(low.bit_length() - 1)
        b ^= low
    return out


def _build_files_ranks() -> tuple[np.ndarray, np.ndarray]:
    files = np.zeros(8, dtype=np.uint64)
    ranks = np.zeros(8, dtype=np.uint64)
    for sq in range(64):
        files[sq & 7] |= U1 << np.uint64(sq)
        ranks[sq >> 3] |= U1 << np.uint64(sq)
    return files, ranks


FILES, RANKS = _build_files_ranks()
FILE_A = FILES[0]
FILE_H = FILES[7]
RANK_1 = RANKS[0]
RANK_2 = RANKS[1]
RANK_3 = RANKS[2]
RANK_6 = RANKS[5]
RANK_7 = RANKS[6]
RANK_8 = RANKS[7]
NOT_FILE_A = ~FILE_A
NOT_FILE_H = ~FILE_H

KNIGHT_DELTAS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
KING_DELTAS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
ROOK_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
BISHOP_DIRS = ((1, 1), (-1, 1), (-1, -1), (1, -1))


def _leaper_table(deltas: tuple[tuple[int, int], ...]) -> np.ndarray:
    table = np.zeros(64, dtype=np.uint64)
    for sq in range(64):
        f, r = sq & 7, sq >> 3
        for df, dr in deltas:
            ff, rr = f + df, r + dr
            if 0 <= ff < 8 and 0 <= rr < 8:
                table[sq] |= U1 << np.uint64(8 * rr + ff)
    return table


def _pawn_table() -> np.ndarray:
    table = np.zeros((2, 64), dtype=np.uint64)
    table[0] = _leaper_table(((-1, 1), (1, 1)))
    table[1] = _leaper_table(((-1, -1), (1, -1)))
    return table


KNIGHT_ATTACKS = _leaper_table(KNIGHT_DELTAS)
"""KNIGHT_ATTACKS[sq]: squares a knight on sq attacks; uint64, shape (64,)."""
KING_ATTACKS = _leaper_table(KING_DELTAS)
"""KING_ATTACKS[sq]: squares a king on sq attacks; uint64, shape (64,)."""
PAWN_ATTACKS = _pawn_table()
"""PAWN_ATTACKS[color, sq]: squares a pawn of `color` on sq attacks; uint64, shape (2, 64)."""


def slide_slow(sq: Square, occ: int, dirs: tuple[tuple[int, int], ...]) -> int:
    """Return the slider attack set from `sq` on occupancy `occ` by walking rays (reference)."""
    out = 0
    f0, r0 = sq & 7, sq >> 3
    for df, dr in dirs:
        f, r = f0 + df, r0 + dr
        while 0 <= f < 8 and 0 <= r < 8:
            s = 8 * r + f
            out |= 1 << s
            if (occ >> s) & 1:
                break
            f += df
            r += dr
    return out


def bishop_attacks_slow(sq: Square, occ: int) -> int:
    """Return bishop attacks by ray walking (pure-Python reference for `bishop_attacks`)."""
    return slide_slow(sq, occ, BISHOP_DIRS)


def rook_attacks_slow(sq: Square, occ: int) -> int:
    """Return rook attacks by ray walking (pure-Python reference for `rook_attacks`)."""
    return slide_slow(sq, occ, ROOK_DIRS)


# --- bit intrinsics -------------------------------------------------------------------------


@intrinsic
def _ctpop(typingctx, x):  # type: ignore[no-untyped-def]
    """LLVM ctpop on a uint64, as int64 (an intrinsic: callable from njit code only)."""
    sig = types.int64(types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.ctpop(args[0])

    return sig, codegen


@intrinsic
def _cttz(typingctx, x):  # type: ignore[no-untyped-def]
    """LLVM cttz on a non-zero uint64, as int64 (an intrinsic: callable from njit code only)."""
    sig = types.int64(types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def popcount(x: np.uint64) -> int:
    """Return the number of set bits of `x`."""
    return _ctpop(x)  # type: ignore[call-arg]


@njit(cache=True, nogil=True, inline="always")
def lsb(x: np.uint64) -> int:
    """Return the index of the lowest set bit of a non-zero `x`."""
    return _cttz(x)  # type: ignore[call-arg]


# --- magic bitboards ------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _slide(sq: int, occ: np.uint64, dirs: np.ndarray) -> np.uint64:
    """Slider attacks by ray walking; dirs int64 (4, 2) of (dfile, drank)."""
    out = U0
    f0 = sq & 7
    r0 = sq >> 3
    for d in range(dirs.shape[0]):
        df = dirs[d, 0]
        dr = dirs[d, 1]
        f = f0 + df
        r = r0 + dr
        while 0 <= f < 8 and 0 <= r < 8:
            b = U1 << np.uint64(8 * r + f)
            out |= b
            if occ & b:
                break
            f += df
            r += dr
    return out


@njit(cache=True, nogil=True)
def _relevant_mask(sq: int, dirs: np.ndarray) -> np.uint64:
    """Squares whose occupancy changes the attack set from `sq` (rays minus their last square)."""
    out = U0
    f0 = sq & 7
    r0 = sq >> 3
    for d in range(dirs.shape[0]):
        df = dirs[d, 0]
        dr = dirs[d, 1]
        f = f0 + df
        r = r0 + dr
        while 0 <= f + df < 8 and 0 <= r + dr < 8:
            out |= U1 << np.uint64(8 * r + f)
            f += df
            r += dr
    return out


@njit(cache=True, nogil=True)
def _xorshift(state: np.ndarray) -> np.uint64:
    """xorshift64* step on state[0] (uint64, shape (1,)); deterministic magic search."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return np.uint64(x * np.uint64(2685821657736338717))


@njit(cache=True, nogil=True)
def _build_magics(
    dirs: np.ndarray,
    masks: np.ndarray,
    magics: np.ndarray,
    shifts: np.ndarray,
    offsets: np.ndarray,
    table: np.ndarray,
    seed: np.uint64,
) -> int:
    """Find a magic per square and fill the attack table; return the table size used.

    dirs int64 (4, 2); outputs: masks uint64 (64,), magics uint64 (64,), shifts uint64 (64,),
    offsets int64 (64,), table uint64 (>= total entries,). Returns -1 if the table is too small.
    """
    state = np.empty(1, dtype=np.uint64)
    state[0] = seed
    occs = np.empty(4096, dtype=np.uint64)
    atts = np.empty(4096, dtype=np.uint64)
    epoch = np.zeros(4096, dtype=np.int64)
    used = np.empty(4096, dtype=np.uint64)
    offset = 0
    cur = 0
    for sq in range(64):
        mask = _relevant_mask(sq, dirs)
        bits = popcount(mask)
        n = 1 << bits
        masks[sq] = mask
        shifts[sq] = np.uint64(64 - bits)
        offsets[sq] = offset
        if offset + n > table.shape[0]:
            return -1
        # enumerate every subset of the mask (carry-rippler) with its true attack set
        sub = U0
        for i in range(n):
            occs[i] = sub
            atts[i] = _slide(sq, sub, dirs)
            sub = (sub - mask) & mask
        while True:
            magic = _xorshift(state) & _xorshift(state) & _xorshift(state)
            if popcount((mask * magic) & np.uint64(0xFF00000000000000)) < 6:
                continue
            cur += 1
            ok = True
            for i in range(n):
                idx = int((occs[i] * magic) >> shifts[sq])
                if epoch[idx] < cur:
                    epoch[idx] = cur
                    used[idx] = atts[i]
                elif used[idx] != atts[i]:
                    ok = False
                    break
            if ok:
                break
        magics[sq] = magic
        for i in range(n):
            idx = int((occs[i] * magic) >> shifts[sq])
            table[offset + idx] = atts[i]
        offset += n
    return offset


def _magic_tables(
    dirs: tuple[tuple[int, int], ...], size: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    d = np.array(dirs, dtype=np.int64)
    masks = np.zeros(64, dtype=np.uint64)
    magics = np.zeros(64, dtype=np.uint64)
    shifts = np.zeros(64, dtype=np.uint64)
    offsets = np.zeros(64, dtype=np.int64)
    table = np.zeros(size, dtype=np.uint64)
    used = _build_magics(d, masks, magics, shifts, offsets, table, np.uint64(seed))
    if used != size:
        raise RuntimeError(f"magic table size {used} != expected {size}")
    return masks, magics, shifts, offsets, table


# Table sizes are the sums of 2**popcount(mask) over the squares (well known for 8x8 boards).
ROOK_MASKS, ROOK_MAGICS, ROOK_SHIFTS, ROOK_OFFSETS, ROOK_TABLE = _magic_tables(
    ROOK_DIRS, 102400, 0x9E3779B97F4A7C15
)
BISHOP_MASKS, BISHOP_MAGICS, BISHOP_SHIFTS, BISHOP_OFFSETS, BISHOP_TABLE = _magic_tables(
    BISHOP_DIRS, 5248, 0xD1B54A32D192ED03
)


@njit(cache=True, nogil=True, inline="always")
def rook_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Return the squares a rook on `sq` attacks with occupancy `occ` (magic lookup)."""
    idx = ((occ & ROOK_MASKS[sq]) * ROOK_MAGICS[sq]) >> ROOK_SHIFTS[sq]
    return np.uint64(ROOK_TABLE[ROOK_OFFSETS[sq] + int(idx)])


@njit(cache=True, nogil=True, inline="always")
def bishop_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Return the squares a bishop on `sq` attacks with occupancy `occ` (magic lookup)."""
    idx = ((occ & BISHOP_MASKS[sq]) * BISHOP_MAGICS[sq]) >> BISHOP_SHIFTS[sq]
    return np.uint64(BISHOP_TABLE[BISHOP_OFFSETS[sq] + int(idx)])


@njit(cache=True, nogil=True, inline="always")
def queen_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Return the squares a queen on `sq` attacks with occupancy `occ`."""
    return rook_attacks(sq, occ) | bishop_attacks(sq, occ)


@njit(cache=True, nogil=True, inline="always")
def knight_attacks(sq: int) -> np.uint64:
    """Return KNIGHT_ATTACKS[sq]."""
    return np.uint64(KNIGHT_ATTACKS[sq])


@njit(cache=True, nogil=True, inline="always")
def king_attacks(sq: int) -> np.uint64:
    """Return KING_ATTACKS[sq]."""
    return np.uint64(KING_ATTACKS[sq])


@njit(cache=True, nogil=True, inline="always")
def pawn_attacks(color: int, sq: int) -> np.uint64:
    """Return PAWN_ATTACKS[color, sq]."""
    return np.uint64(PAWN_ATTACKS[color, sq])
