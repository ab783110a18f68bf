"""Growing the tree: one-sided GT-CFR leaf selection (Obscuro, Fig. 12, C.4, C.5) and appending.

The leaf to grow is chosen by DOEXPANSIONSTEP's walk (`caligo.search.walk`: the PUCT rule of
C.4 and its optional prior).

`Expander.expand(leaves)` asks the game for all children of the claimed leaves in one call, the
evaluator for their values (in one call, or under a deadline in calls sized by the measured
pace), reserves rows, and `_append_kernel` writes them.
`_commit_kernel` (solver thread, between iterations) links them in: it interns the leaf's
infoset, creating it when new with its first strategy on the best child by the heuristic (C.5),
sets the children's sequences, and flags the leaf EXPANDED | NEW.

Status codes: OK = 0, FULL = 1 (capacity reached), MISMATCH = 2 (a game gave one infoset two
action sets or broke perfect recall).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.limits import Deadline, Pace
from caligo.search._fastcall import FastKernel
from caligo.search.arena import (
    EXPANDED,
    FROZEN,
    FROZEN_ROOT,
    IFROZEN,
    KEY_INCREMENTAL,
    M_EXPANSIONS,
    M_INFOSETS,
    M_KEY_MODE,
    M_MAX_DEPTH,
    M_NODES,
    M_SEARCHER,
    M_SLOTS,
    NEW,
    Arena,
    InfosetArrays,
    NodeArrays,
    SlotArrays,
)
from caligo.search.config import SearchError
from caligo.search.game import ChildBatch, Evaluator, SearchGame
from caligo.search.intern import EMPTY, _insert_kernel, _lookup_kernel, mix_key
from caligo.search.walk import _select_batch_kernel, _select_kernel

OK = 0
FULL = 1
MISMATCH = 2

_ONE = np.uint64(1)


@njit(cache=True, nogil=True)
def _append_kernel(
    leaves: np.ndarray,
    firsts: np.ndarray,
    ptr: np.ndarray,
    state: np.ndarray,
    action: np.ndarray,
    player: np.ndarray,
    chance_prob: np.ndarray,
    obs: np.ndarray,
    utility: np.ndarray,
    values: np.ndarray,
    key_mode: int,
    searcher: int,
    nd: NodeArrays,
) -> int:
    """Write the children of each leaf into rows firsts[i] .. firsts[i] + ptr[i+1] - ptr[i] - 1.

    leaves, firsts: int32[k]; ptr: int64[k+1] (CSR into the child arrays); state int64[n],
    action int32[n], player int8[n], chance_prob float64[n], obs uint64[n, 2], utility
    float64[n], values float64[n] (heuristic values, player 0's view; terminals take utility).
    key_mode: KEY_INCREMENTAL or KEY_CUMULATIVE. Children inherit the order-2 flags (FROZEN,
    FROZEN_ROOT), except below a searcher node flagged FROZEN_ROOT. Sequences and links are the
    commit's job. Returns OK.
    """
    for i in range(leaves.shape[0]):
        h = leaves[i]
        row = firsts[i]
        ph = nd.player[h]
        frozen = nd.flags[h] & (FROZEN | FROZEN_ROOT)
        if (frozen & FROZEN_ROOT) != 0 and ph == searcher:
            frozen = np.uint8(0)
        for c in range(ptr[i], ptr[i + 1]):
            nd.parent[row] = h
            nd.first_child[row] = -1
            nd.num_children[row] = 0
            nd.player[row] = player[c]
            nd.flags[row] = frozen
            nd.claim[row] = 0
            nd.action[row] = action[c]
            nd.chance_prob[row] = chance_prob[c] if ph == CHANCE else 1.0
            nd.value[row] = utility[c] if player[c] == TERMINAL else values[c]
            nd.infoset[row] = -1
            nd.state[row] = state[c]
            nd.depth[row] = nd.depth[h] + 1
            nd.seq[row, 0] = -1
            nd.seq[row, 1] = -1
            for p in range(2):
                nd.salt[row, p] = nd.salt[h, p]
                if key_mode == KEY_INCREMENTAL:
                    a = np.int64(action[c]) if ph == p else np.int64(-1)
                    nd.key[row, p] = mix_key(nd.key[h, p], a, obs[c, p])
                else:
                    k = obs[c, p] ^ nd.salt[h, p]
                    if k == EMPTY:
                        k = EMPTY - _ONE
                    nd.key[row, p] = k
            row += 1
    return OK


# Long by design: one numba pass appending an expansion's rows to all four arena tables under
# one lock; the tables' links are written together.
@njit(cache=True, nogil=True)
def _commit_kernel(
    leaves: np.ndarray,
    firsts: np.ndarray,
    counts: np.ndarray,
    uniform_init: bool,
    nd: NodeArrays,
    inf: InfosetArrays,
    sl: SlotArrays,
    meta: np.ndarray,
    tkey: np.ndarray,
    tplayer: np.ndarray,
    tid: np.ndarray,
) -> int:
    """Link appended children into the tree (solver thread; module docstring).

    leaves, firsts, counts: int32[k]. uniform_init: new infosets start uniform instead of on
    the best child (C.5). tkey, tplayer, tid: the intern table. Returns OK, FULL or MISMATCH
    (processing stops at the failing leaf, which stays unexpanded and unclaimed).
    """
    inf_cap = inf.player.shape[0]
    slot_cap = sl.strat.shape[0]
    searcher = meta[M_SEARCHER]
    for i in range(leaves.shape[0]):
        h = leaves[i]
        first = firsts[i]
        n = counts[i]
        p = nd.player[h]
        g = -1
        if p == 0 or p == 1:
            k = nd.key[h, p]
            g = _lookup_kernel(tkey, tplayer, tid, np.int64(p), k)
            if g < 0:
                g = int(meta[M_INFOSETS])
                s0 = int(meta[M_SLOTS])
                if g >= inf_cap or s0 + n > slot_cap or 2 * (g + 1) > tkey.shape[0]:
                    for r in range(i, leaves.shape[0]):
                        nd.claim[leaves[r]] = 0
                    return FULL
                _insert_kernel(tkey, tplayer, tid, np.int64(p), k, np.int64(g))
                inf.player[g] = p
                inf.slot0[g] = s0
                inf.n_actions[g] = n
                inf.parent_seq[g] = nd.seq[h, p]
                inf.key[g] = k
                fl = np.uint8(0)
                if p == searcher and (nd.flags[h] & FROZEN) != 0:
                    fl = IFROZEN
                inf.flags[g] = fl
                inf.reach[g] = 0.0
                inf.visits[g] = 0
                inf.first_node[g] = h
                sign = 1.0 if p == 0 else -1.0
                best = 0
                for a in range(n):
                    v = sign * nd.value[first + a]
                    s = s0 + a
                    sl.infoset[s] = g
                    sl.action[s] = nd.action[first + a]
                    sl.regret[s] = 0.0
                    sl.pred[s] = 0.0
                    sl.cfv[s] = 0.0
                    sl.q[s] = v
                    sl.n_visits[s] = 0
                    sl.q_sum[s] = 0.0
                    sl.q_sqsum[s] = 0.0
                    sl.support_since[s] = -1
                    sl.avg[s] = 0.0
                    if v > sign * nd.value[first + best]:
                        best = a
                for a in range(n):
                    if uniform_init:
                        sl.strat[s0 + a] = 1.0 / n
                    else:
                        sl.strat[s0 + a] = 1.0 if a == best else 0.0
                    sl.anchor[s0 + a] = sl.strat[s0 + a]
                    sl.learn[s0 + a] = sl.strat[s0 + a]
                meta[M_INFOSETS] = g + 1
                meta[M_SLOTS] = s0 + n
            else:
                if inf.n_actions[g] != n or inf.parent_seq[g] != nd.seq[h, p]:
                    for r in range(i, leaves.shape[0]):
                        nd.claim[leaves[r]] = 0
                    return MISMATCH
                s0 = inf.slot0[g]
                for a in range(n):
                    if sl.action[s0 + a] != nd.action[first + a]:
                        for r in range(i, leaves.shape[0]):
                            nd.claim[leaves[r]] = 0
                        return MISMATCH
            nd.infoset[h] = g
        for a in range(n):
            c = first + a
            nd.seq[c, 0] = nd.seq[h, 0]
            nd.seq[c, 1] = nd.seq[h, 1]
            if g >= 0:
                nd.seq[c, p] = inf.slot0[g] + a
        if n > 0 and nd.depth[first] > meta[M_MAX_DEPTH]:
            meta[M_MAX_DEPTH] = nd.depth[first]
        nd.first_child[h] = first
        nd.num_children[h] = n
        nd.flags[h] = nd.flags[h] | EXPANDED | NEW
        nd.claim[h] = 0
        meta[M_EXPANSIONS] += 1
    return OK


@njit(cache=True, nogil=True)
def _frontier_kernel(nd: NodeArrays, n_nodes: int, out: np.ndarray) -> int:
    """Write the unexpanded, unclaimed, non-terminal nodes below n_nodes into out; the count."""
    k = 0
    for h in range(n_nodes):
        if nd.player[h] != TERMINAL and (nd.flags[h] & EXPANDED) == 0 and nd.claim[h] == 0:
            out[k] = h
            k += 1
    return k


_SELECT_BATCH = FastKernel(_select_batch_kernel)
_APPEND = FastKernel(_append_kernel)
_COMMIT = FastKernel(_commit_kernel)


@dataclass(frozen=True, eq=False)
class Pending:
    """Appended but not yet committed expansions: leaf, first child row, child count."""

    leaves: np.ndarray
    firsts: np.ndarray
    counts: np.ndarray


LEAF_PACE_S = 5e-3
"""A leaf's expansion under a deadline before any is measured (`Pace`): about one Stockfish
MultiPV call on a loaded machine."""

BATCH_PACE_S = 2e-4
"""While no recent leaf cost more (`Pace.peak`: Stockfish's cache hits pull the pace under it),
a timed expansion batches leaves (built-in evaluator); else a leaf an engine a call (Stockfish;
an evaluator may have `width` > 1 engines, evaluating that many leaves of a call at once)."""


class ArenaFullError(SearchError):
    """The arena has no room for an expansion (raise only where that is not expected)."""


class Expander:
    """Expands claimed leaves of an arena with a game and an evaluator (module docstring): one
    per expander thread, owning its evaluator and its random state; `alloc_lock` guards the row
    counter when several expanders share the arena."""

    def __init__(self, arena: Arena, game: SearchGame, evaluator: Evaluator, seed: int,
                 alloc_lock: threading.Lock | None = None) -> None:
        self.arena = arena
        self.game = game
        self.evaluator = evaluator
        mixed = ((int(seed) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) | 1
        self.rng = np.array([mixed], dtype=np.uint64)
        self.alloc_lock = alloc_lock
        self.full = False

    def select(self, explorer: int, two_sided: bool, puct_c: float, explore_mix: float,
               util_scale: float, prior_temp: float = 0.0) -> int:
        """One selection walk; the claimed leaf or -1."""
        a = self.arena
        return int(_select_kernel(explorer, two_sided, puct_c, explore_mix, util_scale,
                                  float(prior_temp), a.nodes, a.infosets, a.slots, a.roots,
                                  a.meta, self.rng))

    def select_many(self, count: int, step0: int, searcher: int, two_sided: bool,
                    puct_c: float, explore_mix: float, util_scale: float,
                    prior_temp: float = 0.0) -> np.ndarray:
        """`count` walks in one kernel call; the claimed leaves."""
        a = self.arena
        out = np.empty(max(count, 1), dtype=np.int32)
        k = _SELECT_BATCH(int(count), int(step0), int(searcher), bool(two_sided),
                          float(puct_c), float(explore_mix), float(util_scale),
                          float(prior_temp), a.nodes, a.infosets, a.slots, a.roots, a.meta,
                          self.rng, out)
        return out[:k]

    def expand(self, leaves: np.ndarray, deadline: Deadline | None = None,
               pace: Pace | None = None) -> Pending | None:
        """Append all children of the claimed `leaves`; None (and unclaim) when out of room.

        With a `deadline` the evaluator is called on as many leaves at a time as fit before its
        soft instant at `pace` (seconds per leaf, measured here; one leaf a call without a
        pace, at its first guess, or after a recent leaf above `BATCH_PACE_S`: `Pace.peak`;
        its `width` of them), at least the first; the rest are unclaimed, `Pending.leaves`
        says which were."""
        a = self.arena
        leaves = np.asarray(leaves, dtype=np.int32)
        if leaves.size == 0:
            return Pending(leaves, leaves.copy(), leaves.copy())
        states = a.nodes.state[leaves].astype(np.int64)
        batch: ChildBatch = self.game.expand(states)
        if deadline is None:
            values = np.ascontiguousarray(self.evaluator.children(states, batch),
                                          dtype=np.float64)
        else:
            values = np.empty(batch.state.shape[0], dtype=np.float64)
            k, width = 0, max(1, int(getattr(self.evaluator, "width", 1)))
            while k < leaves.size:
                fit = (pace.units_by(deadline) if pace is not None
                       else int(not deadline.soft_passed()))
                if pace is None or pace.samples == 0 or pace.peak > BATCH_PACE_S:
                    fit = min(fit, width)  # a leaf an engine: unmeasured, or dear leaves seen
                m = max(min(fit, leaves.size - k), 1 if k == 0 else 0)
                if m < 1:
                    break
                j = k + m
                lo, hi = int(batch.ptr[k]), int(batch.ptr[j])
                part = batch if m == leaves.size else batch.parents(k, j)
                t0 = deadline.now()
                got = np.asarray(self.evaluator.children(states[k:j], part))
                if got.shape != (hi - lo,):
                    raise SearchError(f"evaluator returned {got.shape} values for "
                                      f"{hi - lo} children")
                values[lo:hi] = got
                if pace is not None:
                    pace.record(deadline.now() - t0, m)
                k = j
            if k < leaves.size:
                a.nodes.claim[leaves[k:]] = 0
                leaves, states, batch = leaves[:k], states[:k], batch.parents(0, k)
                values = values[: int(batch.ptr[-1])]
        if values.shape != batch.state.shape:
            raise SearchError(f"evaluator returned {values.shape} values for "
                              f"{batch.state.shape[0]} children")
        counts = np.diff(batch.ptr).astype(np.int32)
        if np.any(counts <= 0):
            bad = int(states[np.flatnonzero(counts <= 0)[0]])
            raise SearchError(f"game returned no children for non-terminal state {bad}")
        total = int(batch.ptr[-1])
        lock = self.alloc_lock
        if lock is not None:
            lock.acquire()
        try:
            start = int(a.meta[M_NODES])
            if start + total > a.capacity.nodes:
                a.nodes.claim[leaves] = 0
                self.full = True
                return None
            a.meta[M_NODES] = start + total
        finally:
            if lock is not None:
                lock.release()
        firsts = (start + batch.ptr[:-1]).astype(np.int32)
        _APPEND(leaves, firsts, np.ascontiguousarray(batch.ptr, dtype=np.int64),
                np.ascontiguousarray(batch.state, dtype=np.int64),
                np.ascontiguousarray(batch.action, dtype=np.int32),
                np.ascontiguousarray(batch.player, dtype=np.int8),
                np.ascontiguousarray(batch.chance_prob, dtype=np.float64),
                np.ascontiguousarray(batch.obs, dtype=np.uint64),
                np.ascontiguousarray(batch.utility, dtype=np.float64), values,
                int(a.meta[M_KEY_MODE]), int(a.meta[M_SEARCHER]), a.nodes)
        return Pending(leaves, firsts, counts)


def commit(arena: Arena, pending: Pending, uniform_init: bool) -> int:
    """Link pending expansions into the tree (solver thread); the kernel's status."""
    if pending.leaves.size == 0:
        return OK
    t = arena.table
    return int(_COMMIT(pending.leaves, pending.firsts, pending.counts, bool(uniform_init),
                       arena.nodes, arena.infosets, arena.slots, arena.meta, t.key, t.player,
                       t.id))


def frontier(arena: Arena) -> np.ndarray:
    """Unexpanded, unclaimed, non-terminal nodes (ascending)."""
    out = np.empty(arena.n_nodes, dtype=np.int32)
    k = _frontier_kernel(arena.nodes, arena.n_nodes, out)
    return out[:k]


def expand_fully(expander: Expander, uniform_init: bool, batch: int = 4096) -> int:
    """Expand every reachable non-terminal leaf (breadth first); the kernel status."""
    arena = expander.arena
    while True:
        todo = frontier(arena)
        if todo.size == 0:
            return OK
        for lo in range(0, todo.size, batch):
            chunk = todo[lo : lo + batch]
            arena.nodes.claim[chunk] = 1
            pending = expander.expand(chunk)
            if pending is None:
                return FULL
            status = commit(arena, pending, uniform_init)
            if status != OK:
                return status
