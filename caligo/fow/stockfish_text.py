"""What Caligo and Stockfish say to each other (`caligo.fow.stockfish`): a position as the FEN
Stockfish is sent (a compiled kernel; the en-passant square left out in check, see `fen_bytes`),
moves as the keys of Stockfish's UCI text, and an answer block parsed into values in [-1, 1]
(a centipawn score through tanh, a mate in n as 1 - (plies + 1) 1e-3)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
from numba import njit

from caligo.fow.bitboard import U1, lsb
from caligo.fow.position import (
    KIND_PROMOTION,
    KING,
    NO_EP,
    W_CASTLE,
    W_EP,
    W_STM,
    square_attacked,
)
from caligo.fow.stockfish_engine import StockfishError

MATE_STEP = 1e-3
MATE_MAX_PLIES = 99
FEN_BYTES = 96
"""Longest FEN `_fen_kernel` writes: 71 board + ' w KQkq e3 0 1' (uint8 buffer size)."""


def mate_value(n: int) -> float:
    """Return the value of UCI `score mate n` for the side to move (module docstring)."""
    plies = 2 * n - 1 if n > 0 else -2 * n
    v = 1.0 - (min(plies, MATE_MAX_PLIES) + 1) * MATE_STEP
    return v if n > 0 else -v


def score_value(kind: bytes, amount: int, scale_cp: float = 600.0) -> float:
    """Return the value in [-1, 1] of a UCI score (`b"cp"` or `b"mate"`, side to move's view)."""
    if kind == b"cp":
        return math.tanh(amount / scale_cp)
    if kind == b"mate":
        return mate_value(amount)
    raise ValueError(f"unknown UCI score kind: {kind!r}")


# --- FEN and move keys -----------------------------------------------------------------------

_PIECE_CHARS = np.frombuffer(b"PNBRQKpnbrqk", dtype=np.uint8).copy()
_CASTLE_CHARS = np.frombuffer(b"KQkq", dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def _fen_kernel(pos: np.ndarray, out: np.ndarray) -> int:
    """Write the FEN Stockfish is sent for `pos` into out; return its length in bytes.

    pos uint64 (16,) with both kings; out uint8 (>= FEN_BYTES,). As `position.to_fen` but with
    clocks "0 1", and without the en-passant square when the side to move is in check (see
    `fen_bytes`).
    """
    board = np.full(64, -1, dtype=np.int64)
    for code in range(12):
        bb = pos[code]
        while bb:
            board[lsb(bb)] = code
            bb &= bb - U1
    n = 0
    for rank in range(7, -1, -1):
        empty = 0
        for f in range(8):
            code = board[8 * rank + f]
            if code < 0:
                empty += 1
                continue
            if empty:
                out[n] = 48 + empty
                n += 1
                empty = 0
            out[n] = _PIECE_CHARS[code]
            n += 1
        if empty:
            out[n] = 48 + empty
            n += 1
        if rank:
            out[n] = 47  # '/'
            n += 1
    out[n] = 32
    out[n + 1] = 119 if pos[W_STM] == 0 else 98  # 'w' / 'b'
    out[n + 2] = 32
    n += 3
    cr = int(pos[W_CASTLE])
    if cr == 0:
        out[n] = 45  # '-'
        n += 1
    for i in range(4):
        if cr & (1 << i):
            out[n] = _CASTLE_CHARS[i]
            n += 1
    out[n] = 32
    n += 1
    ep = np.int64(pos[W_EP])
    stm = int(pos[W_STM])
    king = pos[stm * 6 + KING]
    if ep < NO_EP and king and square_attacked(pos, lsb(king), 1 - stm):
        ep = np.int64(NO_EP)
    if ep >= NO_EP:
        out[n] = 45
        n += 1
    else:
        out[n] = 97 + (ep & 7)
        out[n + 1] = 49 + (ep >> 3)
        n += 2
    for ch in (32, 48, 32, 49):  # " 0 1"
        out[n] = ch
        n += 1
    return n


def fen_bytes(pos: np.ndarray, buf: np.ndarray | None = None) -> bytes:
    """Return the FEN Stockfish is sent for `pos` (a position it can take), as ASCII bytes.

    Clocks are "0 1" (module docstring). The en-passant square is left out when the side to
    move is in check: Stockfish 15.1 generates an en-passant capture as a check evasion on the
    assumption that the checker is the pawn that just moved (the only way in chess), so with a
    FoW check by another knight or pawn it plays an illegal capture and crashes (SIGSEGV; found
    by the tests). The en-passant child is then missing from the MultiPV lines and gets its
    own call like every move chess forbids.
    """
    if buf is None:
        buf = np.empty(FEN_BYTES, dtype=np.uint8)
    n = _fen_kernel(pos, buf)
    return buf[:n].tobytes()


def move_keys(moves: np.ndarray) -> np.ndarray:
    """Return int64 keys of uint16 moves, equal to `uci_key` of their UCI text:
    from | to << 6 | p << 12 with p = 0 for no promotion, 1..4 for n, b, r, q."""
    m = moves.astype(np.int64)
    promo = np.where(((m >> 14) & 3) == KIND_PROMOTION, ((m >> 12) & 3) + 1, 0)
    return (m & 0xFFF) | (promo << 12)


_PROMO_KEY = {ord("n"): 1, ord("b"): 2, ord("r"): 3, ord("q"): 4}


@functools.cache
def uci_key(uci: bytes) -> int:
    """Return the key (`move_keys`) of a UCI move in bytes, e.g. b"e7e8q"."""
    frm = (uci[0] - 97) + 8 * (uci[1] - 49)
    to = (uci[2] - 97) + 8 * (uci[3] - 49)
    promo = _PROMO_KEY[uci[4]] if len(uci) > 4 else 0
    return frm | (to << 6) | (promo << 12)


_LINE = re.compile(
    rb"multipv \d+ score (cp|mate) (-?\d+)[^\n]*? pv ([a-h][1-8][a-h][1-8][nbrq]?)"
)
_NO_MOVE = re.compile(rb"info depth 0 score (cp|mate) (-?\d+)")


@dataclass(frozen=True)
class Answer:
    """One `go` answer: the scored moves (sorted keys) and the position's own value.

    keys int64 (k,) sorted `move_keys`; values float64 (k,) each move's value for the side to
    move; best: the position's value for its side to move (the best line; with no legal chess
    move, checkmate or stalemate, `mate_value(0)`: every FoW move then leaves the king
    capturable, castling out of check to a safe square aside).
    """

    keys: np.ndarray
    values: np.ndarray
    best: float


def parse_answer(block: bytes, scale_cp: float = 600.0) -> Answer:
    """Parse one `go` answer (the engine's text up to `bestmove`); raise StockfishError if it
    holds no score at all. A move printed twice keeps its last (deepest) line."""
    lines = {
        uci_key(uci): (
            math.tanh(int(amount) / scale_cp) if kind == b"cp" else mate_value(int(amount))
        )
        for kind, amount, uci in _LINE.findall(block)
    }
    if not lines:
        if _NO_MOVE.search(block) is None:
            raise StockfishError(f"no score in the Stockfish answer {block[-200:]!r}")
        empty = np.empty(0, dtype=np.int64)
        return Answer(empty, np.empty(0, dtype=np.float64), mate_value(0))
    keys = np.fromiter(lines.keys(), dtype=np.int64, count=len(lines))
    values = np.fromiter(lines.values(), dtype=np.float64, count=len(lines))
    order = np.argsort(keys)
    return Answer(keys[order], values[order], float(values.max()))
