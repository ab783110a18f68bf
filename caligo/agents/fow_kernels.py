"""The compiled kernels of the FoW search adapters (`caligo.agents.fow_search`): FoW move
counts and children of stored positions, what the search needs to know of each state (player,
terminal value, observation keys), Zobrist keys of states and of positions, and the forcing
test of a child (a check or a capture the opponent can see). All `nogil`."""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.fow.bitboard import U0, lsb, popcount
from caligo.fow.expand import expand_kernel, obs_hash, terminal_kind
from caligo.fow.movegen import MAX_MOVES, count_moves
from caligo.fow.observation import O_VISIBLE, OBS_WORDS, observe_kernel
from caligo.fow.position import (
    KIND_PROMOTION,
    KING,
    W_STM,
    square_attacked,
    zobrist_key,
)
from caligo.search.game import TERMINAL

_STATUS_OVER = -1  # a parent with a captured king was asked for children


@njit(cache=True, nogil=True)
def _count_kernel(store: np.ndarray, parents: np.ndarray, counts: np.ndarray) -> int:
    """Write the number of FoW moves of each parent into counts; return the total, or -1 if a
    parent has a captured king (the game ended there).

    store uint64 (rows, 16); parents int64 (k,); counts int64 (k,).
    """
    total = 0
    for i in range(parents.shape[0]):
        pos = store[parents[i]]
        if pos[KING] == U0 or pos[6 + KING] == U0:
            return _STATUS_OVER
        n = count_moves(pos)
        counts[i] = n
        total += n
    return total


@njit(cache=True, nogil=True)
def _expand_states_kernel(
    store: np.ndarray,
    parents: np.ndarray,
    row0: int,
    ptr: np.ndarray,
    child: np.ndarray,
    action: np.ndarray,
    player: np.ndarray,
    obs: np.ndarray,
    utility: np.ndarray,
) -> int:
    """Expand every parent into consecutive store rows from row0; return the child count.

    store uint64 (rows, 16), rows >= row0 + total children; parents int64 (k,) (rows below
    row0). Outputs (n = total children): ptr int64 (k+1,) CSR offsets; child int64 (n,) the
    child rows; action int32 (n,) the moves; player int8 (n,) side to move or TERMINAL;
    obs uint64 (n, 2) White's and Black's observation keys; utility float64 (n,) White's value
    at terminal children (0 elsewhere). Returns -1 (`_STATUS_OVER`) if a parent has a captured
    king or its children do not fit the rows the count pass reserved.
    """
    moves = np.empty(MAX_MOVES, dtype=np.uint16)
    keys = np.empty((MAX_MOVES, 2), dtype=np.uint64)
    term = np.empty(MAX_MOVES, dtype=np.int8)
    vals = np.empty(MAX_MOVES, dtype=np.float64)
    cnt = np.empty(1, dtype=np.int64)
    cap = store.shape[0]
    j = 0
    ptr[0] = 0
    for i in range(parents.shape[0]):
        lo = row0 + j
        hi = min(lo + MAX_MOVES, cap)
        status = expand_kernel(store[parents[i]], store[lo:hi], moves, keys, term, vals, cnt)
        if status != 0:
            return _STATUS_OVER
        n = int(cnt[0])
        for c in range(n):
            r = j + c
            child[r] = lo + c
            action[r] = moves[c]
            player[r] = TERMINAL if term[c] != 0 else np.int8(store[lo + c, W_STM])
            obs[r, 0] = keys[c, 0]
            obs[r, 1] = keys[c, 1]
            utility[r] = vals[c]
        j += n
        ptr[i + 1] = j
    return j


@njit(cache=True, nogil=True)
def _describe_kernel(
    store: np.ndarray, states: np.ndarray, player: np.ndarray, utility: np.ndarray,
    obs: np.ndarray,
) -> int:
    """Acting player (side to move or TERMINAL), White's terminal utility and both observation
    keys of each state; returns 0.

    store uint64 (rows, 16); states int64 (k,); player int8 (k,); utility float64 (k,);
    obs uint64 (k, 2).
    """
    o = np.empty(OBS_WORDS, dtype=np.uint64)
    for i in range(states.shape[0]):
        pos = store[states[i]]
        stm = int(pos[W_STM])
        observe_kernel(pos, 0, o)
        obs[i, 0] = obs_hash(o)
        vis = o[O_VISIBLE]
        observe_kernel(pos, 1, o)
        obs[i, 1] = obs_hash(o)
        if stm == 1:
            vis = o[O_VISIBLE]
        kind = terminal_kind(pos, vis)
        utility[i] = 0.0
        if kind == 0:
            player[i] = stm
        else:
            player[i] = TERMINAL
            if kind == 1:
                utility[i] = 1.0 if pos[6 + KING] == U0 else -1.0
    return 0


@njit(cache=True, nogil=True)
def _zobrist_kernel(store: np.ndarray, states: np.ndarray, out: np.ndarray) -> int:
    """out[i] = the Zobrist key of store[states[i]]; returns 0 (uint64 out (k,))."""
    for i in range(states.shape[0]):
        out[i] = zobrist_key(store[states[i]])
    return 0


@njit(cache=True, nogil=True)
def _positions_zobrist_kernel(positions: np.ndarray, out: np.ndarray) -> int:
    """out[i] = the Zobrist key of positions[i] (uint64 (k, 16) -> uint64 (k,)); returns 0."""
    for i in range(positions.shape[0]):
        out[i] = zobrist_key(positions[i])
    return 0


@njit(cache=True, nogil=True)
def _forcing_kernel(store: np.ndarray, parents: np.ndarray, children: np.ndarray,
                    moves: np.ndarray, out: np.ndarray) -> int:
    """out[i] = child i is a capture, a promotion or gives check (Zhang & Sandholm 2021, appendix
    D.2's "forcing" moves); returns 0.

    store uint64 (rows, 16); parents, children int64 (n,) (child i was reached from parents[i]
    by moves[i], int32 (n,)); out bool (n,). A capture leaves the side to move of the child
    with fewer pieces than in the parent; a check means the side that moved attacks the king
    of the side to move. A captured king counts as a capture.
    """
    for i in range(children.shape[0]):
        par = store[parents[i]]
        ch = store[children[i]]
        stm = int(ch[W_STM])  # the side that did not move
        base = stm * 6
        before = U0
        after = U0
        for p in range(6):
            before |= par[base + p]
            after |= ch[base + p]
        if popcount(after) < popcount(before):
            out[i] = True
            continue
        if (int(moves[i]) >> 14) & 3 == KIND_PROMOTION:
            out[i] = True
            continue
        king = ch[base + KING]
        out[i] = king != U0 and square_attacked(ch, lsb(king), 1 - stm)
    return 0
