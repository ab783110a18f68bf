"""The growing game tree as flat arrays of fixed capacity.

Layout (docs/design.md, "Performance model"; the same invariants `caligo.core.tree` documents, so
the solver's sequence-form logic carries over):

    nodes      ids in creation order: parent < child; the children of an expanded node are
               contiguous, `first_child[h] .. first_child[h] + num_children[h] - 1`. The subgame
               roots are nodes 0 .. n_roots-1, grouped by root infoset J (`root_ptr`).
    infosets   decision infosets of both players, ids in creation order, so an infoset's parent
               sequence belongs to an older infoset: reverse id order is a bottom-up order of
               each player's treeplex. Identity = (player, key), interned (`caligo.search.intern`).
               Infoset 0 is the root gadget's pseudo-infoset of the opponent (flag GADGET): one
               slot per root infoset J, "choose J" (Obscuro, Fig. 9 line 18).
    slots      infoset g owns slots `slot0[g] .. slot0[g] + n_actions[g] - 1`: regrets,
               predictions, the current strategy, counterfactual values, PUCT statistics;
               for order-2 infosets (IFROZEN) also the blueprint they started from (`anchor`)
               and the strategy their regrets give (`learn`), of which `strat`, the played
               strategy, is a mixture (`caligo.search.solver`).
    sequences  `seq[h, p]` = the slot of player p's last action above h (-1: empty sequence);
               below the gadget the opponent's sequence at a root of J is J's gadget slot.
    root layer per J: the threshold c_J = sigma_J (v_alt(J) - g(J)) the branch value is
               measured against (searcher's utility), the Resolve prior alpha(J), the
               Maxmargin PRM+ state (one slot each), the Resolve enter/exit PRM+ state, and the
               blended weight w_J (Fig. 10 line 12). Roots carry the chance probability of the
               h_J chance node, q_h = pi_{-opp}(h) / D_J (Fig. 9 line 21).

Keys (see `caligo.search.intern`): `key[h, p]` is player p's observation-sequence key at h, at
every node (also where p does not act: the knowledge graph of Obscuro, appendix B.2 needs them).
`KeyMode.INCREMENTAL`: key = mix(parent key, own action, observation). `KeyMode.CUMULATIVE`:
key = observation XOR salt[h, p], where the salt is 0 except below roots sampled with a singleton
opponent infoset, whose opponent salt is unique to the root (the opponent "knows the state",
Fig. 9 lines 12-13), inherited by every descendant.

Threads (section 3.4; docs/design.md, "The arena, the solver and the expanders"): expanders write
only rows at or past `n_nodes` (reserved under a lock) and their own claim bytes; the solver thread
links new rows into the tree (`caligo.search.expand._commit_kernel`) between iterations, so every
field a solver pass reads is written by the solver thread alone. Flags: EXPANDED and NEW are the
solver's, `claim` the expanders'.

All state lives in five arrays-of-arrays (`NodeArrays`, `InfosetArrays`, `SlotArrays`,
`RootArrays`, and the counters `meta` / `fmeta`), each a namedtuple the numba kernels take whole.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from caligo.core.game import CHANCE, TERMINAL
from caligo.search.config import SearchError
from caligo.search.intern import InternTable

# node flags (solver-owned)
EXPANDED = np.uint8(1)
NEW = np.uint8(2)
FROZEN = np.uint8(4)  # in the order-2 region below a root outside our infoset (1-KLSS: frozen)
FROZEN_ROOT = np.uint8(8)  # with FROZEN: the region ends below the searcher's first decision

# infoset flags
VISITED = np.uint8(1)
LIVE = np.uint8(2)  # its strategy comes from its own regrets (it has been reached once)
IFROZEN = np.uint8(4)  # an order-2 infoset: played as `M_ORDER2` says (1-KLSS: the blueprint)
GADGET = np.uint8(8)  # the root gadget's pseudo-infoset

# meta (int64) fields
M_NODES = 0  # rows in use (reserved, committed or not)
M_INFOSETS = 1
M_SLOTS = 2
M_J = 3  # root infosets of the gadget
M_ROOTS = 4
M_SEARCHER = 5
M_HAS_GADGET = 6
M_ITERATION = 7
M_GADGET_MODE = 8
M_KEY_MODE = 9
M_VISITS = 10  # node visits of solver passes (work counter)
M_EXPANSIONS = 11
M_MAX_DEPTH = 12
M_ORDER2 = 13  # how IFROZEN infosets play: ORDER2_FROZEN, ORDER2_BLEND or ORDER2_FLOOR
M_LEN = 16

# fmeta (float64) fields
F_PMAX = 0
F_ROOT_VALUE = 1  # searcher's counterfactual value at its empty sequence, last pass
F_UTIL_SCALE = 2
F_BLEND = 3  # ORDER2_BLEND: the share b of the re-optimized strategy
F_FLOOR = 4  # ORDER2_FLOOR: the margin per unit of reach, in utility units
F_ROOT_FLOOR = 5  # eps: the share of the prior alpha in the root weights w
F_LEN = 8

ORDER2_FROZEN = 0  # 1-KLSS: the blueprint (the anchor), never updated
ORDER2_BLEND = 1  # (1 - b) anchor + b learned
ORDER2_FLOOR = 2  # the learned strategy, pulled toward the anchor where it would fall below it

KEY_INCREMENTAL = 0
KEY_CUMULATIVE = 1

GADGET_BLEND = 0
GADGET_MAXMARGIN = 1
GADGET_RESOLVE = 2

NodeArrays = collections.namedtuple(
    "NodeArrays",
    "parent first_child num_children player flags claim action chance_prob value infoset "
    "seq key salt state depth",
)
InfosetArrays = collections.namedtuple(
    "InfosetArrays", "player slot0 n_actions parent_seq key flags reach visits first_node"
)
SlotArrays = collections.namedtuple(
    "SlotArrays",
    "infoset action regret pred strat cfv q n_visits q_sum q_sqsum support_since avg plan "
    "anchor learn",
)
RootArrays = collections.namedtuple(
    "RootArrays",
    "ptr threshold alt gift sigma alpha w mm_regret mm_pred mm_strat res_regret res_pred "
    "res_strat key",
)


def _node_arrays(n: int) -> NodeArrays:
    return NodeArrays(
        parent=np.full(n, -1, np.int32), first_child=np.full(n, -1, np.int32),
        num_children=np.zeros(n, np.int32), player=np.zeros(n, np.int8),
        flags=np.zeros(n, np.uint8), claim=np.zeros(n, np.uint8), action=np.zeros(n, np.int32),
        chance_prob=np.ones(n, np.float64), value=np.zeros(n, np.float64),
        infoset=np.full(n, -1, np.int32), seq=np.full((n, 2), -1, np.int32),
        key=np.zeros((n, 2), np.uint64), salt=np.zeros((n, 2), np.uint64),
        state=np.zeros(n, np.int64), depth=np.zeros(n, np.int32),
    )  # fmt: skip


def _infoset_arrays(n: int) -> InfosetArrays:
    return InfosetArrays(
        player=np.zeros(n, np.int8), slot0=np.zeros(n, np.int32), n_actions=np.zeros(n, np.int32),
        parent_seq=np.full(n, -1, np.int32), key=np.zeros(n, np.uint64),
        flags=np.zeros(n, np.uint8), reach=np.zeros(n, np.float64), visits=np.zeros(n, np.int64),
        first_node=np.full(n, -1, np.int32),
    )  # fmt: skip


def _slot_arrays(n: int) -> SlotArrays:
    return SlotArrays(
        infoset=np.zeros(n, np.int32), action=np.zeros(n, np.int32),
        regret=np.zeros(n, np.float64), pred=np.zeros(n, np.float64),
        strat=np.zeros(n, np.float64), cfv=np.zeros(n, np.float64), q=np.zeros(n, np.float64),
        n_visits=np.zeros(n, np.int64), q_sum=np.zeros(n, np.float64),
        q_sqsum=np.zeros(n, np.float64), support_since=np.full(n, -1, np.int64),
        avg=np.zeros(n, np.float64), plan=np.zeros(n, np.float64),
        anchor=np.zeros(n, np.float64), learn=np.zeros(n, np.float64),
    )  # fmt: skip


def _root_arrays(n: int) -> RootArrays:
    return RootArrays(
        ptr=np.zeros(n + 1, np.int32), threshold=np.zeros(n, np.float64),
        alt=np.zeros(n, np.float64), gift=np.zeros(n, np.float64), sigma=np.ones(n, np.float64),
        alpha=np.zeros(n, np.float64), w=np.zeros(n, np.float64),
        mm_regret=np.zeros(n, np.float64), mm_pred=np.zeros(n, np.float64),
        mm_strat=np.zeros(n, np.float64), res_regret=np.zeros((n, 2), np.float64),
        res_pred=np.zeros((n, 2), np.float64), res_strat=np.zeros((n, 2), np.float64),
        key=np.zeros(n, np.uint64),
    )  # fmt: skip


_T = TypeVar("_T", NodeArrays, InfosetArrays, SlotArrays, RootArrays)


def _copy_tuple(t: _T, used: int) -> _T:
    """A copy of a namedtuple of arrays of the same capacity whose first `used` rows equal t's.

    Rows past `used` are left uninitialised: every kernel writes all fields of a row before
    the row counts as used (appending, committing, constructing)."""
    out = []
    for a in t:
        b = np.empty_like(a)
        b[:used] = a[:used]
        out.append(b)
    return type(t)(*out)


@dataclass(frozen=True)
class Capacity:
    """Row capacities of an arena."""

    nodes: int
    infosets: int
    slots: int
    roots: int

    @classmethod
    def for_nodes(cls, nodes: int) -> Capacity:
        """Capacities for `nodes` node rows (infosets <= nodes / 2, slots <= nodes)."""
        nodes = max(int(nodes), 16)
        return cls(nodes=nodes, infosets=nodes // 2 + 64, slots=nodes + 64,
                   roots=nodes // 4 + 1024)


class Arena:
    """A growing tree of fixed capacity (module docstring). Mutated only through kernels."""

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity
        self.nodes = _node_arrays(capacity.nodes)
        self.infosets = _infoset_arrays(capacity.infosets)
        self.slots = _slot_arrays(capacity.slots)
        self.roots = _root_arrays(capacity.roots)
        self.meta = np.zeros(M_LEN, np.int64)
        self.fmeta = np.zeros(F_LEN, np.float64)
        self.table = InternTable(capacity.infosets)

    # counters -------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return int(self.meta[M_NODES])

    @property
    def n_infosets(self) -> int:
        return int(self.meta[M_INFOSETS])

    @property
    def n_slots(self) -> int:
        return int(self.meta[M_SLOTS])

    @property
    def n_j(self) -> int:
        return int(self.meta[M_J])

    @property
    def n_roots(self) -> int:
        return int(self.meta[M_ROOTS])

    @property
    def searcher(self) -> int:
        return int(self.meta[M_SEARCHER])

    @property
    def has_gadget(self) -> bool:
        return bool(self.meta[M_HAS_GADGET])

    @property
    def iteration(self) -> int:
        return int(self.meta[M_ITERATION])

    def copy(self) -> Arena:
        """A deep copy (for snapshots of an agent)."""
        out = Arena.__new__(Arena)
        out.capacity = self.capacity
        out.nodes = _copy_tuple(self.nodes, self.n_nodes)
        out.infosets = _copy_tuple(self.infosets, self.n_infosets)
        out.slots = _copy_tuple(self.slots, self.n_slots)
        out.roots = _copy_tuple(self.roots, self.n_j + 1)
        out.meta = self.meta.copy()
        out.fmeta = self.fmeta.copy()
        out.table = InternTable.__new__(InternTable)
        out.table.key = self.table.key.copy()
        out.table.player = self.table.player.copy()
        out.table.id = self.table.id.copy()
        return out

    # queries --------------------------------------------------------------------------------
    def infoset_of_key(self, player: int, key: int) -> int:
        """The infoset id of (player, key), or -1."""
        return self.table.lookup(player, key)

    def infoset_slots(self, g: int) -> slice:
        s0 = int(self.infosets.slot0[g])
        return slice(s0, s0 + int(self.infosets.n_actions[g]))

    def node_infoset_key(self, h: int, player: int) -> int:
        return int(self.nodes.key[h, player])

    def children(self, h: int) -> range:
        fc = int(self.nodes.first_child[h])
        return range(fc, fc + int(self.nodes.num_children[h]))

    def is_expanded(self, h: int) -> bool:
        return bool(self.nodes.flags[h] & EXPANDED)

    def max_depth(self) -> int:
        n = self.n_nodes
        return int(self.nodes.depth[:n].max()) if n else 0


# Long by design: a flat list of independent checks (the docstring's), each raising with the
# first broken invariant; a debug checker reads best as one list.
def check_invariants(arena: Arena) -> None:
    """Raise `ArenaInvariantError` naming the first broken invariant (debug checker).

    Checks: parent < child and contiguous children; every child's parent pointer; roots have no
    parent; the player and flags of expanded nodes; infoset slots contiguous and in range;
    every expanded decision node's infoset has its player, its key and its action count; the
    parent sequence of an infoset is older; each node's sequences follow its parent's; the
    intern table maps each infoset's (player, key) to it; strategies (and the anchor and learned
    strategy of order-2 infosets) are distributions.
    """
    nd, inf, sl = arena.nodes, arena.infosets, arena.slots
    n, ni, ns = arena.n_nodes, arena.n_infosets, arena.n_slots
    nr = arena.n_roots
    if not (0 <= nr <= n):
        raise ArenaInvariantError(f"{nr} roots but {n} nodes")
    if np.any(nd.parent[:nr] != -1):
        raise ArenaInvariantError("a root has a parent")
    for h in range(n):
        f = int(nd.flags[h])
        if h >= nr and not (0 <= nd.parent[h] < h):
            raise ArenaInvariantError(f"node {h} has parent {nd.parent[h]} (not older)")
        if f & EXPANDED:
            fc, k = int(nd.first_child[h]), int(nd.num_children[h])
            if nd.player[h] == TERMINAL:
                raise ArenaInvariantError(f"terminal node {h} is expanded")
            if k < 1 or fc <= h or fc + k > n:
                raise ArenaInvariantError(f"node {h}: children {fc}..{fc + k} out of range")
            if np.any(nd.parent[fc : fc + k] != h):
                raise ArenaInvariantError(f"node {h}: a child does not point back")
            p = int(nd.player[h])
            for c in range(fc, fc + k):
                want = nd.seq[h].copy()
                if p in (0, 1):
                    g = int(nd.infoset[h])
                    want[p] = int(inf.slot0[g]) + (c - fc)
                if not np.array_equal(nd.seq[c], want):
                    raise ArenaInvariantError(f"node {c}: sequences {nd.seq[c]} != {want}")
                if nd.depth[c] != nd.depth[h] + 1:
                    raise ArenaInvariantError(f"node {c}: depth is not its parent's + 1")
            if p in (0, 1):
                g = int(nd.infoset[h])
                if not 0 <= g < ni:
                    raise ArenaInvariantError(f"node {h}: infoset {g} out of range")
                if inf.player[g] != p or inf.key[g] != nd.key[h, p]:
                    raise ArenaInvariantError(f"node {h}: infoset {g} has another player/key")
                if inf.n_actions[g] != k:
                    raise ArenaInvariantError(f"node {h}: {k} children, infoset {g} has "
                                              f"{inf.n_actions[g]} actions")
                if nd.seq[h, p] != inf.parent_seq[g]:
                    raise ArenaInvariantError(f"node {h}: its sequence is not infoset {g}'s "
                                              "parent sequence (perfect recall)")
                acts = nd.action[fc : fc + k]
                if not np.array_equal(acts, sl.action[inf.slot0[g] : inf.slot0[g] + k]):
                    raise ArenaInvariantError(f"node {h}: actions differ from infoset {g}'s")
            elif p == CHANCE:
                pr = nd.chance_prob[fc : fc + k]
                if abs(float(pr.sum()) - 1.0) > 1e-9:
                    raise ArenaInvariantError(f"chance node {h}: probabilities sum to {pr.sum()}")
        elif nd.num_children[h] != 0:
            raise ArenaInvariantError(f"unexpanded node {h} has children")
    total = 0
    for g in range(ni):
        s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
        if s0 != total:
            raise ArenaInvariantError(f"infoset {g}: slots start at {s0}, expected {total}")
        total += k
        if np.any(sl.infoset[s0 : s0 + k] != g):
            raise ArenaInvariantError(f"infoset {g}: a slot names another owner")
        ps = int(inf.parent_seq[g])
        if ps >= 0 and not sl.infoset[ps] < g:
            raise ArenaInvariantError(f"infoset {g}: parent sequence {ps} is not older")
        st = sl.strat[s0 : s0 + k]
        if np.any(st < -1e-12) or abs(float(st.sum()) - 1.0) > 1e-9:
            raise ArenaInvariantError(f"infoset {g}: strategy {st} is not a distribution")
        if inf.flags[g] & GADGET:
            continue
        if inf.flags[g] & IFROZEN:
            for name in ("anchor", "learn"):
                v = getattr(sl, name)[s0 : s0 + k]
                if np.any(v < -1e-12) or abs(float(v.sum()) - 1.0) > 1e-9:
                    raise ArenaInvariantError(f"order-2 infoset {g}: {name} {v} is not a "
                                              "distribution")
        if arena.table.lookup(int(inf.player[g]), int(inf.key[g])) != g:
            raise ArenaInvariantError(f"infoset {g}: the intern table does not map to it")
    if total != ns:
        raise ArenaInvariantError(f"{ns} slots in use but infosets own {total}")
    if arena.has_gadget:
        m = arena.n_j
        ptr = arena.roots.ptr[: m + 1]
        if ptr[0] != 0 or ptr[m] != nr or np.any(np.diff(ptr) < 1):
            raise ArenaInvariantError(f"root pointers {ptr} do not cover {nr} roots")
        opp = 1 - arena.searcher
        for j in range(m):
            if np.any(nd.seq[ptr[j] : ptr[j + 1], opp] != j):
                raise ArenaInvariantError(f"roots of J={j}: opponent sequence is not slot {j}")


class ArenaInvariantError(SearchError):
    """The arena broke one of its layout invariants (a bug, or a game breaking perfect recall)."""
