"""One FoW search expansion as one numba kernel: children, both observation keys, terminals.

The growing-tree search (Obscuro, section 3.3, appendix C.5; docs/design.md, "The game interface and
the evaluators" and "The arena, the solver and the expanders") expands a leaf by adding *all* its
children at once. For a FoW parent position this kernel does in one nogil call what the search needs
from the rules:

- the FoW moves of the side to move (`movegen.gen_moves`), each made on a copy of the parent
  (`position.make_move`) written as one row of a caller-owned 16-word position store;
- for every child, a 64-bit key of what **White** observes and of what **Black** observes there
  (the 16-word `observation.observe_kernel` output, hashed); the search folds these into its
  observation-sequence (infoset) keys;
- for every child, whether the game is over there and its value in White's view.

Terminal children (`Terminal`), the rules the search can see in the position alone:

    KING_CAPTURE  a king is missing: the capturer won; +1 if White captured, -1 if Black did
    NO_MOVES      the side to move has no FoW move at all: a draw, 0 (docs/fow.md)

The other draws need the game's history and are left out: threefold repetition (a history of
true positions) and the 50-move rule (the half-move clock, which no player observes and the
belief set does not track). The referee declares them (Obscuro, appendix A); the search, like
ZS21 (Zhang & Sandholm 2021, appendix B.1), ignores them, so a search state stands for every history
reaching it.

Buffers (capacity C >= the number of children, `MAX_MOVES` = 256 always suffices)::

    children  uint64 (C, 16)  child positions, row i after moves[i] (rows of the search's store)
    moves     uint16 (C,)     the FoW moves, in `gen_moves` order
    obs_keys  uint64 (C, 2)   obs_keys[i, p]: key of player p's observation at child i
    terminal  int8   (C,)     a `Terminal` value
    values    float64 (C,)    the terminal value in White's view (0 for a non-terminal child)
    count     int64  (1,)     the number of children (also when the buffers are too small)

`expand_kernel` never truncates: if the children do not fit it writes nothing past the
capacity, returns `STATUS_TOO_SMALL` and reports the needed count. `expand_reference` is the
slow pure-Python reference built from the public `caligo.fow` functions; the tests hold the
kernel to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numba import njit

from caligo.errors import CaligoError
from caligo.fow.belief_kernels import _mix64
from caligo.fow.bitboard import U0
from caligo.fow.errors import FowError
from caligo.fow.game import Game, Termination
from caligo.fow.movegen import MAX_MOVES, gen_moves, legal_moves
from caligo.fow.observation import O_VISIBLE, OBS_WORDS, Observation, observe, observe_kernel
from caligo.fow.position import (
    BLACK,
    KING,
    POS_WORDS,
    UNDO_WORDS,
    W_CLOCKS,
    W_STM,
    WHITE,
    make_move,
    side_bb,
    to_fen,
)

STATUS_OK = 0
STATUS_TOO_SMALL = 1
"""The children do not fit the buffers; `count[0]` holds how many there are."""
STATUS_PARENT_OVER = 2
"""The parent has a captured king: the game ended there and it has no children."""

_OBS_SEED = np.uint64(0x243F6A8885A308D3)
_OBS_STEP = np.uint64(0x9E3779B97F4A7C15)


class Terminal(IntEnum):
    """Why a search state ends the game (stored as int8 in the `terminal` buffer)."""

    NONE = 0
    KING_CAPTURE = 1
    NO_MOVES = 2


class ExpandError(FowError, CaligoError):
    """An expansion that cannot be done as asked (buffers too small, parent already over)."""


# --- kernels ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def obs_hash(obs: np.ndarray) -> np.uint64:
    """Return the 64-bit key of an observation array (uint64 (OBS_WORDS,)).

    A chain of the splitmix64 finalizer (a bijection) over the 16 words: two different
    observations get the same key with probability about 2^-64.
    """
    h = _OBS_SEED
    for i in range(OBS_WORDS):
        h = _mix64(h ^ obs[i]) + _OBS_STEP
    return h


@njit(cache=True, nogil=True, inline="always")
def terminal_kind(pos: np.ndarray, stm_visible: np.uint64) -> int:
    """Return the `Terminal` kind of a position given the side to move's visible mask.

    pos uint64 (16,). The side to move has no FoW move at all exactly when it sees no square
    beyond its own pieces: every square it sees past them is the target of one of its moves
    (pawn pushes and captures, en passant, piece moves, castling), and every target is seen.
    """
    if pos[KING] == U0 or pos[6 + KING] == U0:
        return 1
    stm = int(pos[W_STM])
    if stm_visible & ~side_bb(pos, stm) == U0:
        return 2
    return 0


@njit(cache=True, nogil=True)
def expand_kernel(
    parent: np.ndarray,
    children: np.ndarray,
    moves: np.ndarray,
    obs_keys: np.ndarray,
    terminal: np.ndarray,
    values: np.ndarray,
    count: np.ndarray,
) -> int:
    """Expand one parent position into caller buffers; return a STATUS_* code.

    parent uint64 (16,); children uint64 (C, 16); moves uint16 (C,); obs_keys uint64 (C, 2);
    terminal int8 (C,); values float64 (C,); count int64 (>= 1,) receives the number of
    children. The capacity is the smallest first dimension of the five outputs.
    """
    count[0] = 0
    if parent[KING] == U0 or parent[6 + KING] == U0:
        return STATUS_PARENT_OVER
    cap = children.shape[0]
    cap = min(cap, moves.shape[0])
    cap = min(cap, obs_keys.shape[0])
    cap = min(cap, terminal.shape[0])
    cap = min(cap, values.shape[0])
    n = gen_moves(parent, moves[:cap])
    count[0] = n
    if n > cap:
        return STATUS_TOO_SMALL
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    for i in range(n):
        child = children[i]
        for w in range(POS_WORDS):
            child[w] = parent[w]
        make_move(child, moves[i], undo)
        stm = int(child[W_STM])
        observe_kernel(child, WHITE, obs)
        obs_keys[i, 0] = obs_hash(obs)
        stm_vis = obs[O_VISIBLE]
        observe_kernel(child, BLACK, obs)
        obs_keys[i, 1] = obs_hash(obs)
        if stm == BLACK:
            stm_vis = obs[O_VISIBLE]
        kind = terminal_kind(child, stm_vis)
        terminal[i] = kind
        if kind == 1:
            values[i] = 1.0 if child[6 + KING] == U0 else -1.0
        else:
            values[i] = 0.0
    return STATUS_OK


@njit(cache=True, nogil=True)
def _observation_keys_kernel(positions: np.ndarray, n: int, out: np.ndarray) -> int:
    """Write both players' observation keys of positions[:n] into out; return 0.

    positions uint64 (>= n, 16); out uint64 (>= n, 2).
    """
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    for i in range(n):
        for p in range(2):
            observe_kernel(positions[i], p, obs)
            out[i, p] = obs_hash(obs)
    return 0


# --- public wrappers -------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpandBuffers:
    """Caller-owned outputs of `expand` (layout in the module docstring).

    The arrays may be views into the search's arena (e.g. `store[first:first + cap]`), so the
    children land in place without a copy. `allocate` makes fresh ones.
    """

    children: np.ndarray
    moves: np.ndarray
    obs_keys: np.ndarray
    terminal: np.ndarray
    values: np.ndarray
    count: np.ndarray

    @classmethod
    def allocate(cls, capacity: int = MAX_MOVES) -> ExpandBuffers:
        """Return new buffers for up to `capacity` children."""
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity!r}")
        return cls(
            children=np.zeros((capacity, POS_WORDS), dtype=np.uint64),
            moves=np.zeros(capacity, dtype=np.uint16),
            obs_keys=np.zeros((capacity, 2), dtype=np.uint64),
            terminal=np.zeros(capacity, dtype=np.int8),
            values=np.zeros(capacity, dtype=np.float64),
            count=np.zeros(1, dtype=np.int64),
        )

    @property
    def capacity(self) -> int:
        """How many children fit."""
        return int(
            min(
                self.children.shape[0],
                self.moves.shape[0],
                self.obs_keys.shape[0],
                self.terminal.shape[0],
                self.values.shape[0],
            )
        )

    def validate(self) -> None:
        """Raise TypeError if an array has the wrong dtype or shape for the kernel."""
        _check_array(self.children, np.uint64, 2, "children", POS_WORDS)
        _check_array(self.moves, np.uint16, 1, "moves")
        _check_array(self.obs_keys, np.uint64, 2, "obs_keys", 2)
        _check_array(self.terminal, np.int8, 1, "terminal")
        _check_array(self.values, np.float64, 1, "values")
        _check_array(self.count, np.int64, 1, "count")
        if self.count.shape[0] < 1:
            raise TypeError("count must hold at least one int64")


def _check_array(
    arr: np.ndarray, dtype: type, ndim: int, name: str, width: int | None = None
) -> None:
    """Raise TypeError naming `name` unless arr is a C-contiguous `dtype` array of `ndim`
    dimensions (and `width` columns)."""
    if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != ndim:
        raise TypeError(f"{name} must be a {np.dtype(dtype).name} array with {ndim} dims")
    if width is not None and arr.shape[1] != width:
        raise TypeError(f"{name} must have {width} columns, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise TypeError(f"{name} must be C-contiguous")


def _check_position(pos: np.ndarray, name: str = "position") -> None:
    """Raise TypeError naming `name` unless pos is one uint64 (16,) position."""
    if not isinstance(pos, np.ndarray) or pos.dtype != np.uint64 or pos.shape != (POS_WORDS,):
        raise TypeError(f"{name} must be a uint64 array of shape ({POS_WORDS},), got {pos!r}")


def expand(parent: np.ndarray, out: ExpandBuffers) -> int:
    """Expand `parent` (uint64 (16,)) into `out`; return the number of children.

    Raises ExpandError (quoting the parent's FEN) when the children do not fit or the parent
    already has a captured king; nothing is truncated silently.
    """
    _check_position(parent)
    out.validate()
    status = int(
        expand_kernel(
            parent, out.children, out.moves, out.obs_keys, out.terminal, out.values, out.count
        )
    )
    n = int(out.count[0])
    if status == STATUS_TOO_SMALL:
        raise ExpandError(
            f"{n} children of {to_fen(parent)!r} do not fit buffers of capacity {out.capacity}"
        )
    if status == STATUS_PARENT_OVER:
        raise ExpandError(f"cannot expand {to_fen(parent)!r}: a king was captured")
    return n


def observation_keys(positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return both players' observation keys, uint64 (n, 2), of positions uint64 (n, 16).

    The keys are those `expand` writes for children (e.g. for root states sampled from P).
    """
    _check_array(positions, np.uint64, 2, "positions", POS_WORDS)
    n = positions.shape[0]
    if out is None:
        out = np.empty((n, 2), dtype=np.uint64)
    _check_array(out, np.uint64, 2, "out", 2)
    if out.shape[0] < n:
        raise ValueError(f"out holds {out.shape[0]} rows, {n} needed")
    _observation_keys_kernel(positions, n, out)
    return out


def observation_key(obs: Observation) -> int:
    """Return the key `expand` gives this observation (from the boundary value)."""
    return int(obs_hash(obs.to_array()))


# --- pure-Python reference -------------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceChild:
    """One child as `expand_reference` computes it from the public `caligo.fow` functions."""

    move: int
    position: np.ndarray
    white_obs: Observation
    black_obs: Observation
    terminal: Terminal
    value: float


def expand_reference(parent: np.ndarray) -> list[ReferenceChild]:
    """Return the children of `parent` the slow way: `legal_moves`, `make_move`, `observe`,
    and the referee's verdict (`caligo.fow.game.Game` on the child's FEN) with the two
    history draws (threefold, 50-move) left out, as the search ignores them."""
    out: list[ReferenceChild] = []
    for move in legal_moves(parent):
        child = parent.copy()
        make_move(child, move, np.empty(UNDO_WORDS, dtype=np.uint64))
        no_clock = child.copy()
        no_clock[W_CLOCKS] &= np.uint64(0xFFFF_FFFF_0000_0000)  # no 50-move verdict
        verdict = Game(to_fen(no_clock)).outcome
        kind = Terminal.NONE
        value = 0.0
        if verdict is not None and verdict.termination == Termination.KING_CAPTURE:
            kind = Terminal.KING_CAPTURE
            value = 1.0 if verdict.winner == WHITE else -1.0
        elif verdict is not None and verdict.termination == Termination.NO_MOVES:
            kind = Terminal.NO_MOVES
        out.append(
            ReferenceChild(move, child, observe(child, WHITE), observe(child, BLACK), kind, value)
        )
    return out


__all__ = [
    "STATUS_OK",
    "STATUS_PARENT_OVER",
    "STATUS_TOO_SMALL",
    "ExpandBuffers",
    "ExpandError",
    "ReferenceChild",
    "Terminal",
    "expand",
    "expand_reference",
    "observation_key",
    "observation_keys",
]
