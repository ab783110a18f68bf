"""The subgame at the start of a decision: Obscuro, Fig. 9 (CONSTRUCTSUBGAME) on the arena.

`init_plain` starts a tree at one state with no gadget (the game's true start; Obscuro, section 3:
"at the beginning of the game P contains only the starting position").

`build_kluss(old, new, ...)` builds the knowledge-limited subgame for the searching player
(▲) at its current infoset, from the previous search's tree `old` and its final profile (x, y),
into the empty arena `new`. The construction mirrors `caligo.subgame.gadget.make_subgame` with
`SubgameOptions(kluss=True, alternate_values=BLUEPRINT, resolve_prior=BLUEPRINT_MIX,
reach=True)`, which the tests use as its oracle on fully expanded trees:

1. Profile quantities on `old` (one top-down and one bottom-up sweep, `_profile_kernel`): the
   chance reach c(h) (the previous gadget's h_J chance included), ▲'s reach x(h), ▼'s reach
   y(h) (the previous root weight w_J counts as ▼'s), and the value v(h) under (x, y).
2. I = the carried nodes where ▲ acts with ▲'s current observation-sequence key. The kept set is
   K = I^2 = every node sharing ▼'s key with a node of I (Obscuro, appendix B.2: distance <= 1 in
   the knowledge graph); its roots are the nodes of K with no ancestor in K; the root infosets J are
   ▼'s keys of the roots, in order of their first root.
3. Per J: D = sum over J's roots of c x, R = sum over all of J of c x, sigma = R / D, the
   alternate value v_alt(J) = V / R with V = sum over J's roots of c x v (C.2: the blueprint
   profile's value u(x, y | J); `AlternateValues.BEST_RESPONSE`: ▼ best-responds to x in the
   old tree instead), and the gift estimate of C.2, g(J) = sum over ▼'s decisions J'a' above J of
   [u(x, y | J'a') - u(x, y | J')]^+ (conditional values; the chain stops at the previous
   gadget's root, which is no decision of the real opponent). J's with D = 0 are dropped. The
   threshold c_J = sigma (v_alt - g) is what branch J's value is measured against.
4. Top-up (Fig. 9 lines 9-14): while |I| < min(|P|, min_roots), states of P not in the tree are
   sampled uniformly without replacement; each is a new root in ▲'s infoset with a singleton ▼
   infoset and v_alt = min(v~(s), v*), where v* is ▲'s value of I in the previous tree (+inf
   when there is none). `RootInfosets.TRUE`: the state gets its true ▼ infoset, with the other
   states of that infoset as further roots where the game can list them.
5. The Resolve prior alpha(J) = 1/2 (P(J) / sum P + 1/m), P(J) = sum over J's roots of c x y
   (C.3; `ResolvePrior.UNIFORM`: 1/m).
6. `_compact_kernel` copies everything reachable from the new roots into `new` breadth first
   (parent < child, children contiguous), remaps infosets in order of first appearance (so a
   parent sequence still belongs to an older infoset) and carries the profile as the first
   iterate (and, with `CarryOver.PROFILE_AND_REGRETS`, the regrets). 1-KLSS
   (`SubgameKind.KLSS`) marks everything below the roots outside I frozen: ▲'s infosets there
   keep the blueprint.
7. `RootExpansion.INFOSET`: every root in ▲'s infoset that is still a leaf (the roots sampled
   in step 4, and carried ones the previous search never grew) gets its children now, with one
   game call and one evaluator call for all of them (`expand_infoset_roots`). A leaf root's
   value is a constant of the iterations, so without this a position of P enters the subgame
   without ever answering to ▲'s strategy at I: nothing ▲ plays there can lose it, not even a
   move after which the opponent takes the king (docs/search.md, "Decided losses under
   unlikely roots").

Order-2 play. `SearchConfig.knowledge_order` = k (odd, ZS21's k-KLSS): K = I^(k+1) (step 2
with k hops), and the *order-2 region* is everything below the roots of K outside I^k (k = 1:
outside I). Every kind but KLUSS and COMMON_KNOWLEDGE flags those roots FROZEN (KLSS_ROOT also
FROZEN_ROOT: the region ends below ▲'s first decision on each path, in the compaction here and
when the expansion appends children), and ▲'s infosets created at flagged nodes are IFROZEN;
`meta[M_ORDER2]` tells the solver how they play (frozen; a fixed blend with weight b; or the
learned strategy held at a floor below the blueprint: `caligo.search.solver`). The blueprint
they start from is kept in the slots' `anchor` (and `learn`, the learned strategy).

Root weights. `SearchConfig.root_floor` eps: the gadget opponent's root weights become
(1 - eps) w_J + eps alpha(J) (`init_weights` here, the gadget update in the solver), so every
root keeps at least eps alpha(J) >= eps / (2m) of weight: a loss under any root costs the
searcher at least that share of it.

The stages are published for other builders on the arena (ZS21's `make_subgame` calls them):
`played_profile` and `profile` (step 1), `knowledge_set` and `under_kernel` (step 2),
`opp_values` (step 3), `Group`, `sample_outside`, `evaluate_until` and `add_sampled` (step 4),
`materialize` (steps 5-6), `init_weights`.

Status codes: OK = 0, FULL = 1, MISMATCH = 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.limits import Deadline, Pace
from caligo.search.arena import (
    EXPANDED,
    F_BLEND,
    F_FLOOR,
    F_PMAX,
    F_ROOT_FLOOR,
    F_UTIL_SCALE,
    FROZEN,
    FROZEN_ROOT,
    GADGET,
    GADGET_BLEND,
    GADGET_MAXMARGIN,
    GADGET_RESOLVE,
    IFROZEN,
    KEY_CUMULATIVE,
    KEY_INCREMENTAL,
    LIVE,
    M_GADGET_MODE,
    M_HAS_GADGET,
    M_INFOSETS,
    M_J,
    M_KEY_MODE,
    M_MAX_DEPTH,
    M_NODES,
    M_ORDER2,
    M_ROOTS,
    M_SEARCHER,
    M_SLOTS,
    ORDER2_BLEND,
    ORDER2_FLOOR,
    ORDER2_FROZEN,
    Arena,
    InfosetArrays,
    NodeArrays,
    SlotArrays,
)
from caligo.search.config import (
    AlternateValues,
    CarryOver,
    GadgetMode,
    InitialStrategy,
    Iterate,
    ResolvePrior,
    RootExpansion,
    RootInfosets,
    SearchConfig,
    SearchError,
    SubgameKind,
)
from caligo.search.game import Belief, Evaluator, KeyMode, SearchGame
from caligo.search.intern import EMPTY, _insert_kernel, mix_key, splitmix64

OK = 0
FULL = 1
MISMATCH = 2

_SINGLETON_TAG = np.uint64(0x5A17ED5EA7C0FFEE)


def start_key(obs: int, key_mode: KeyMode) -> int:
    """A player's key at the game's start state from its observation there."""
    if key_mode is KeyMode.INCREMENTAL:
        return int(mix_key(np.uint64(0), np.int64(-1), np.uint64(obs)))
    return int(obs)


def singleton_salt(state_key: int) -> int:
    """The opponent's salt at a root sampled with a singleton infoset (nonzero)."""
    s = int(splitmix64(np.uint64(state_key) ^ _SINGLETON_TAG))
    return s if s != 0 else 1


# ---------------------------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True)
def _profile_kernel(
    nd: NodeArrays, n: int, n_roots: int, searcher: int, has_gadget: bool, w: np.ndarray,
    strat: np.ndarray, slot0: np.ndarray,
    alive: np.ndarray, c: np.ndarray, x: np.ndarray, y: np.ndarray, v: np.ndarray,
) -> int:
    """Reaches and values under a profile (module docstring, step 1).

    nd: NodeArrays; n nodes in use; strat float64[slots] the profile; slot0 int32[infosets].
    Outputs (float64[n] / bool[n]): alive (reachable through expanded nodes), c, x, y, and v in
    player 0's utility. Returns OK.
    """
    opp = 1 - searcher
    for h in range(n):
        alive[h] = False
    for h in range(n_roots):
        alive[h] = True
        c[h] = nd.chance_prob[h]
        x[h] = 1.0
        y[h] = w[nd.seq[h, opp]] if has_gadget else 1.0
    for h in range(n):
        if not alive[h] or (nd.flags[h] & EXPANDED) == 0:
            continue
        c0 = nd.first_child[h]
        k = nd.num_children[h]
        p = nd.player[h]
        off = slot0[nd.infoset[h]] - c0 if (p == 0 or p == 1) else 0
        for ch in range(c0, c0 + k):
            alive[ch] = True
            c[ch] = c[h]
            x[ch] = x[h]
            y[ch] = y[h]
            if p == CHANCE:
                c[ch] = c[h] * nd.chance_prob[ch]
            elif p == searcher:
                x[ch] = x[h] * strat[off + ch]
            else:
                y[ch] = y[h] * strat[off + ch]
    for h in range(n - 1, -1, -1):
        if not alive[h]:
            continue
        if (nd.flags[h] & EXPANDED) == 0:
            v[h] = nd.value[h]
            continue
        c0 = nd.first_child[h]
        k = nd.num_children[h]
        acc = 0.0
        if nd.player[h] == CHANCE:
            for ch in range(c0, c0 + k):
                acc += nd.chance_prob[ch] * v[ch]
        else:
            off = slot0[nd.infoset[h]] - c0
            for ch in range(c0, c0 + k):
                acc += strat[off + ch] * v[ch]
        v[h] = acc
    return OK


@njit(cache=True, nogil=True)
def under_kernel(parent: np.ndarray, n: int, n_roots: int, in_k: np.ndarray,
                  under: np.ndarray) -> int:
    """under[h] = some strict ancestor of h is in K (parents precede children)."""
    for h in range(n):
        if h < n_roots:
            under[h] = False
        else:
            par = parent[h]
            under[h] = in_k[par] or under[par]
    return OK


@njit(cache=True, nogil=True)
def _opp_values_kernel(
    nd: NodeArrays, inf: InfosetArrays, sl_infoset: np.ndarray, n: int, n_inf: int, searcher: int,
    best_response: bool, alive: np.ndarray, c: np.ndarray, x: np.ndarray,
    strat: np.ndarray, seqv: np.ndarray, infv: np.ndarray, reach: np.ndarray,
    br: np.ndarray,
) -> int:
    """▼'s sequence values against ▲'s x, in ▲'s utility (sequence form, unnormalized).

    seqv float64[slots] (zeroed here): g(J'a) = sum over J' of c x v(child) when ▼ plays
    `strat` below; infv float64[infosets]: V(J') = sum_a y(a) g(J'a), or min_a g(J'a) with
    best_response (then br, a copy of strat on entry, gets ▼'s pure best response);
    reach float64[infosets]: sum over J' of c x. Returns OK.
    """
    opp = 1 - searcher
    sign = 1.0 if searcher == 0 else -1.0
    for s in range(seqv.shape[0]):
        seqv[s] = 0.0
    for g in range(n_inf):
        infv[g] = 0.0
        reach[g] = 0.0
    for h in range(n):
        if not alive[h]:
            continue
        if (nd.flags[h] & EXPANDED) == 0:
            s = nd.seq[h, opp]
            if s >= 0:
                seqv[s] += c[h] * x[h] * sign * nd.value[h]
        elif nd.player[h] == opp:
            reach[nd.infoset[h]] += c[h] * x[h]
    for g in range(n_inf - 1, -1, -1):
        if inf.player[g] != opp or (inf.flags[g] & GADGET) != 0:
            continue
        s0 = inf.slot0[g]
        k = inf.n_actions[g]
        if best_response:
            best = seqv[s0]
            arg = 0
            for a in range(1, k):
                if seqv[s0 + a] < best:
                    best = seqv[s0 + a]
                    arg = a
            for a in range(k):
                br[s0 + a] = 1.0 if a == arg else 0.0
            val = best
        else:
            val = 0.0
            for a in range(k):
                val += strat[s0 + a] * seqv[s0 + a]
        infv[g] = val
        ps = inf.parent_seq[g]
        if ps >= 0:
            seqv[ps] += val
    _ = sl_infoset
    return OK


# Long by design: one numba pass that moves live rows and rewrites every index into them; split
# up, each part would need the whole remapping again.
@njit(cache=True, nogil=True)
def _compact_kernel(
    o_nd: NodeArrays, o_inf: InfosetArrays, o_sl: SlotArrays, o_strat: np.ndarray, o_n_inf: int,
    n_nd: NodeArrays, n_inf: InfosetArrays, n_sl: SlotArrays, meta: np.ndarray,
    tkey: np.ndarray, tplayer: np.ndarray, tid: np.ndarray,
    old_of: np.ndarray, carry_regrets: bool,
) -> int:
    """Copy the subtrees below the prepared roots from the old arena (module docstring, 6).

    Rows 0 .. meta[M_ROOTS]-1 of the new arena are prepared roots with their sequences and
    flags set; old_of int32[new capacity] holds each root's old node (-1: a new leaf root).
    o_strat float64[old slots]: the profile to carry. Returns OK, FULL or MISMATCH.
    """
    searcher = meta[M_SEARCHER]
    cap = n_nd.parent.shape[0]
    inf_cap = n_inf.player.shape[0]
    slot_cap = n_sl.strat.shape[0]
    inf_map = np.full(o_n_inf, -1, np.int32)
    nxt = meta[M_ROOTS]
    maxd = 0
    k = 0
    while k < nxt:
        o = old_of[k]
        if o < 0 or (o_nd.flags[o] & EXPANDED) == 0:
            k += 1
            continue
        cnt = o_nd.num_children[o]
        fo = o_nd.first_child[o]
        if nxt + cnt > cap:
            return FULL
        p = o_nd.player[o]
        g_new = -1
        s0 = 0
        if p == 0 or p == 1:
            g_old = o_nd.infoset[o]
            g_new = inf_map[g_old]
            if g_new < 0:
                g_new = meta[M_INFOSETS]
                s0 = meta[M_SLOTS]
                if g_new >= inf_cap or s0 + cnt > slot_cap or 2 * (g_new + 1) > tkey.shape[0]:
                    return FULL
                inf_map[g_old] = g_new
                _insert_kernel(tkey, tplayer, tid, np.int64(p), o_inf.key[g_old],
                               np.int64(g_new))
                n_inf.player[g_new] = p
                n_inf.slot0[g_new] = s0
                n_inf.n_actions[g_new] = cnt
                n_inf.parent_seq[g_new] = n_nd.seq[k, p]
                n_inf.key[g_new] = o_inf.key[g_old]
                fl = np.uint8(0)
                if carry_regrets and (o_inf.flags[g_old] & LIVE) != 0:
                    fl = fl | LIVE
                if p == searcher and (n_nd.flags[k] & FROZEN) != 0:
                    fl = fl | IFROZEN
                n_inf.flags[g_new] = fl
                n_inf.reach[g_new] = 0.0
                n_inf.visits[g_new] = 0
                n_inf.first_node[g_new] = k
                os0 = o_inf.slot0[g_old]
                for a in range(cnt):
                    s = s0 + a
                    n_sl.infoset[s] = g_new
                    n_sl.action[s] = o_sl.action[os0 + a]
                    n_sl.strat[s] = o_strat[os0 + a]
                    if carry_regrets:
                        n_sl.regret[s] = o_sl.regret[os0 + a]
                        n_sl.pred[s] = o_sl.pred[os0 + a]
                    else:
                        n_sl.regret[s] = 0.0
                        n_sl.pred[s] = 0.0
                    n_sl.cfv[s] = 0.0
                    n_sl.q[s] = o_sl.q[os0 + a]
                    n_sl.n_visits[s] = 0
                    n_sl.q_sum[s] = 0.0
                    n_sl.q_sqsum[s] = 0.0
                    n_sl.support_since[s] = -1
                    n_sl.avg[s] = 0.0
                    n_sl.anchor[s] = o_strat[os0 + a]
                    n_sl.learn[s] = o_strat[os0 + a]
                meta[M_INFOSETS] = g_new + 1
                meta[M_SLOTS] = s0 + cnt
            else:
                s0 = n_inf.slot0[g_new]
                if n_inf.n_actions[g_new] != cnt or n_inf.parent_seq[g_new] != n_nd.seq[k, p]:
                    return MISMATCH
            n_nd.infoset[k] = g_new
        frozen = n_nd.flags[k] & (FROZEN | FROZEN_ROOT)
        if (frozen & FROZEN_ROOT) != 0 and p == searcher:
            frozen = np.uint8(0)  # KLSS_ROOT: the region ends below our first decision
        d = n_nd.depth[k] + 1
        if d > maxd:
            maxd = d
        for a in range(cnt):
            oc = fo + a
            nc = nxt + a
            n_nd.parent[nc] = k
            n_nd.first_child[nc] = -1
            n_nd.num_children[nc] = 0
            n_nd.player[nc] = o_nd.player[oc]
            n_nd.flags[nc] = frozen
            n_nd.claim[nc] = 0
            n_nd.action[nc] = o_nd.action[oc]
            n_nd.chance_prob[nc] = o_nd.chance_prob[oc]
            n_nd.value[nc] = o_nd.value[oc]
            n_nd.infoset[nc] = -1
            n_nd.state[nc] = o_nd.state[oc]
            n_nd.depth[nc] = d
            n_nd.seq[nc, 0] = n_nd.seq[k, 0]
            n_nd.seq[nc, 1] = n_nd.seq[k, 1]
            if g_new >= 0:
                n_nd.seq[nc, p] = s0 + a
            n_nd.key[nc, 0] = o_nd.key[oc, 0]
            n_nd.key[nc, 1] = o_nd.key[oc, 1]
            n_nd.salt[nc, 0] = o_nd.salt[oc, 0]
            n_nd.salt[nc, 1] = o_nd.salt[oc, 1]
            old_of[nc] = oc
        n_nd.first_child[k] = nxt
        n_nd.num_children[k] = cnt
        n_nd.flags[k] = n_nd.flags[k] | EXPANDED
        nxt += cnt
        k += 1
    meta[M_NODES] = nxt
    meta[M_MAX_DEPTH] = maxd
    return OK


# ---------------------------------------------------------------------------------------------
# Python drivers


@dataclass(frozen=True, eq=False)
class BuildInfo:
    """What a construction produced (for `SearchResult` and the oracle tests).

    Per root infoset J (in root order): keys (▼'s key), alt and gift (▲'s utility), sigma,
    alpha, threshold, roots_per_j; carried_roots: old node of each carried root (in new root
    order; sampled roots are not listed). in_i: how many carried nodes of ▲'s infoset were found;
    sampled: roots drawn from the belief; v_star: ▲'s value of I in the previous tree (inf if
    none); carried_nodes / carried_infosets: copied from the old tree.
    """

    keys: np.ndarray
    alt: np.ndarray
    gift: np.ndarray
    sigma: np.ndarray
    alpha: np.ndarray
    threshold: np.ndarray
    roots_per_j: np.ndarray
    carried_roots: np.ndarray
    in_i: int
    sampled: int
    v_star: float
    carried_nodes: int
    carried_infosets: int


@dataclass
class Group:
    """One root infoset J of the new subgame: carried roots and/or new (sampled) roots."""

    key: int  # ▼'s key of J
    alt: float  # searcher's utility
    gift: float
    sigma: float
    P: float  # blueprint reach for the Resolve prior
    old: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    q_old: np.ndarray = field(default_factory=lambda: np.zeros(0))
    in_i_old: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))  # in I^k
    states: list[int] = field(default_factory=list)
    players: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    obs: list[np.ndarray] = field(default_factory=list)
    q_new: list[float] = field(default_factory=list)
    in_i_new: list[bool] = field(default_factory=list)
    salt_opp: int = 0


def knowledge_set(keys: np.ndarray, allowed: np.ndarray, start: np.ndarray, hops: int,
                  ) -> np.ndarray:
    """I^k over the carried nodes: nodes within `hops` = k - 1 steps of `start` in the knowledge
    graph (two nodes are adjacent when they share either player's key, Obscuro, appendix B.2); hops
    = 0 means no limit (the common-knowledge closure I^inf). keys: uint64[n, 2]; allowed, start:
    bool[n]. Returns bool[n]."""
    cur: np.ndarray = start & allowed
    step = 0
    while hops == 0 or step < hops:
        k0 = np.unique(keys[cur, 0])
        k1 = np.unique(keys[cur, 1])
        nxt = allowed & (np.isin(keys[:, 0], k0) | np.isin(keys[:, 1], k1))
        step += 1
        if np.array_equal(nxt, cur):
            break
        cur = nxt
    return cur


def _reset(arena: Arena, searcher: int, key_mode: KeyMode, gadget: GadgetMode,
           util_scale: float) -> None:
    meta = arena.meta
    meta[:] = 0
    arena.fmeta[:] = 0.0
    meta[M_SEARCHER] = searcher
    meta[M_KEY_MODE] = KEY_INCREMENTAL if key_mode is KeyMode.INCREMENTAL else KEY_CUMULATIVE
    meta[M_GADGET_MODE] = {GadgetMode.BLEND: GADGET_BLEND, GadgetMode.MAXMARGIN: GADGET_MAXMARGIN,
                           GadgetMode.RESOLVE: GADGET_RESOLVE}[gadget]
    arena.fmeta[F_UTIL_SCALE] = util_scale
    t = arena.table
    t.key[:] = EMPTY
    t.id[:] = -1


def init_plain(arena: Arena, game: SearchGame, evaluator: Evaluator, state: int, searcher: int,
               config: SearchConfig, util_scale: float) -> None:
    """A one-node tree at `state` with no gadget (the true start)."""
    _reset(arena, searcher, game.key_mode, config.gadget, util_scale)
    info = game.describe(np.array([state], dtype=np.int64))
    nd = arena.nodes
    nd.parent[0] = -1
    nd.first_child[0] = -1
    nd.num_children[0] = 0
    nd.player[0] = info.player[0]
    nd.flags[0] = 0
    nd.claim[0] = 0
    nd.action[0] = -1
    nd.chance_prob[0] = 1.0
    terminal = int(info.player[0]) == TERMINAL
    nd.value[0] = info.utility[0] if terminal else float(
        evaluator.states(np.array([state], dtype=np.int64))[0])
    nd.infoset[0] = -1
    nd.seq[0] = -1
    for p in (0, 1):
        nd.key[0, p] = np.uint64(start_key(int(info.obs[0, p]), game.key_mode))
        nd.salt[0, p] = 0
    nd.state[0] = state
    nd.depth[0] = 0
    arena.meta[M_NODES] = 1
    arena.meta[M_ROOTS] = 1
    arena.meta[M_J] = 1
    arena.meta[M_HAS_GADGET] = 0
    rt = arena.roots
    rt.ptr[0], rt.ptr[1] = 0, 1
    rt.w[0] = 1.0
    rt.alpha[0] = 1.0


def played_profile(arena: Arena, iterate: Iterate) -> np.ndarray:
    """The strategy over the arena's slots that is played and carried (last or average)."""
    ns = arena.n_slots
    strat: np.ndarray = arena.slots.strat[:ns].copy()
    if iterate is Iterate.AVERAGE:
        inf = arena.infosets
        for g in range(arena.n_infosets):
            if inf.flags[g] & GADGET:
                continue
            s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
            a = arena.slots.avg[s0 : s0 + k]
            tot = float(a.sum())
            if tot > 0.0:
                strat[s0 : s0 + k] = a / tot
    return strat


@dataclass(frozen=True, eq=False)
class Profile:
    """Profile quantities of an arena (module docstring, step 1), searcher's utility for v."""

    strat: np.ndarray
    alive: np.ndarray
    c: np.ndarray
    x: np.ndarray
    y: np.ndarray
    v: np.ndarray  # searcher's utility


def profile(arena: Arena, strat: np.ndarray) -> Profile:
    """Reaches and values of every node of `arena` under the slot strategy `strat`."""
    n = arena.n_nodes
    alive = np.zeros(n, dtype=np.bool_)
    c, x, y, v = (np.zeros(n) for _ in range(4))
    _profile_kernel(arena.nodes, n, arena.n_roots, arena.searcher, arena.has_gadget,
                    arena.roots.w, strat, arena.infosets.slot0, alive, c, x, y, v)
    sign = 1.0 if arena.searcher == 0 else -1.0
    return Profile(strat, alive, c, x, y, sign * v)


def opp_values(arena: Arena, prof: Profile, best_response: bool,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The opponent's sequence values, infoset values and reach under `prof` (or against
    its best response when `best_response`), and that best response: the alternate values
    and gifts of step 3 (module docstring)."""
    ns, ni = arena.n_slots, arena.n_infosets
    seqv = np.zeros(ns)
    infv = np.zeros(ni)
    reach = np.zeros(ni)
    br = prof.strat.copy()
    _opp_values_kernel(arena.nodes, arena.infosets, arena.slots.infoset, arena.n_nodes, ni,
                       arena.searcher, best_response, prof.alive, prof.c, prof.x, prof.strat,
                       seqv, infv, reach, br)
    return seqv, infv, reach, br


def build_kluss(
    old: Arena,
    new: Arena,
    game: SearchGame,
    belief: Belief,
    evaluator: Evaluator,
    cur_key: int,
    config: SearchConfig,
    v_prev: float | None,
    rng: np.random.Generator,
    util_scale: float,
    deadline: Deadline | None = None,
    pace: Pace | None = None,
) -> BuildInfo:
    """Fig. 9 on the arena (module docstring). `old` is only read; `new` is overwritten.

    `deadline`: the sampled roots are evaluated in batches sized from `pace` (the caller's
    measured time per root, updated here) while they fit before its soft instant; the roots
    not evaluated by then are not added (at least one is when the carried tree has no node of
    our infoset, so the searcher always has a decision).
    """
    searcher = old.searcher
    opp = 1 - searcher
    n = old.n_nodes
    nd = old.nodes
    strat = played_profile(old, config.iterate)
    prof = profile(old, strat)
    alive = prof.alive
    c, x, y, v = prof.c, prof.x, prof.y, prof.v

    # 2. our infoset I, K = I^2, its roots, the root infosets J
    is_i = alive & (nd.player[:n] == searcher) & (nd.key[:n, searcher] == np.uint64(cur_key))
    i_nodes = np.flatnonzero(is_i)
    if config.max_roots is not None and i_nodes.size > config.max_roots:
        w_i = c[i_nodes] * y[i_nodes]
        keep = np.sort(i_nodes[np.argsort(-w_i, kind="stable")[: config.max_roots]])
        is_i = np.zeros(n, dtype=np.bool_)
        is_i[keep] = True
        i_nodes = keep
    if i_nodes.size and not np.any(x[i_nodes] > 0.0):
        x = x.copy()  # we were forced off our own support: weigh I as if we had played here
        x[i_nodes] = 1.0
    # nodes of I outside the cap are not ours to keep
    capped = (nd.player[:n] == searcher) & (nd.key[:n, searcher] == np.uint64(cur_key)) & ~is_i
    k = config.knowledge_order
    hops = 0 if config.subgame is SubgameKind.COMMON_KNOWLEDGE else k
    in_k = knowledge_set(nd.key[:n], alive & ~capped, is_i, hops)  # I^(k+1)
    # I^k: the roots outside it start the order-2 region (k = 1: I itself)
    inner = is_i if k == 1 else knowledge_set(nd.key[:n], alive & ~capped, is_i, k - 1)
    under = np.zeros(n, dtype=np.bool_)
    under_kernel(nd.parent, n, old.n_roots, in_k, under)
    roots = np.flatnonzero(in_k & ~under).astype(np.int64)
    rkeys = nd.key[roots, opp]
    uniq, first_idx, inv = np.unique(rkeys, return_index=True, return_inverse=True)
    order = np.argsort(first_idx, kind="stable")  # J in order of their first root
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    gj = rank[inv]  # J index of each root
    m_c = int(uniq.size)
    cx = c * x
    D = np.bincount(gj, weights=cx[roots], minlength=m_c)
    P = np.bincount(gj, weights=(cx * y)[roots], minlength=m_c)
    all_k = np.flatnonzero(in_k)
    all_k = all_k[np.isin(nd.key[all_k, opp], uniq)]  # J's with no root of their own drop out
    jk = np.searchsorted(uniq, nd.key[all_k, opp])
    R = np.bincount(rank[jk], weights=cx[all_k], minlength=m_c)

    # 3. alternate values and gifts (searcher's utility)
    br_mode = config.alternate_values is AlternateValues.BEST_RESPONSE
    seqv, infv, reach, br = opp_values(old, Profile(strat, alive, c, x, y, v), br_mode)
    v_alt_nodes = v
    if br_mode:
        v_alt_nodes = profile(old, br).v
    V = np.bincount(gj, weights=(cx * v_alt_nodes)[roots], minlength=m_c)
    keep_j = D > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        alt = np.where(R > 0, V / np.where(R > 0, R, 1.0), 0.0)
        sigma = np.where(D > 0, R / np.where(D > 0, D, 1.0), 1.0)
    gifts = np.zeros(m_c)
    if config.gifts:
        first_root = np.full(m_c, -1, dtype=np.int64)
        for r_i in range(roots.size - 1, -1, -1):
            first_root[gj[r_i]] = roots[r_i]
        inf, sl = old.infosets, old.slots
        for j in range(m_c):
            s = int(nd.seq[first_root[j], opp])
            total = 0.0
            while s >= 0:
                g = int(sl.infoset[s])
                if inf.flags[g] & GADGET:
                    break
                if reach[g] > 0.0:
                    total += max((seqv[s] - infv[g]) / reach[g], 0.0)
                s = int(inf.parent_seq[g])
            gifts[j] = total

    # v*: our value of I in the previous tree
    w_i = (c * y)[i_nodes]
    if i_nodes.size and w_i.sum() > 0.0:
        v_star = float(np.dot(w_i, v[i_nodes]) / w_i.sum())
    elif v_prev is not None:
        v_star = float(v_prev)
    else:
        v_star = math.inf

    # assemble groups: carried J (kept), then sampled
    groups: list[Group] = []
    kept_js = np.flatnonzero(keep_j)
    root_order = np.argsort(gj, kind="stable")
    roots_sorted = roots[root_order]
    gj_sorted = gj[root_order]
    for j in kept_js.tolist():
        rs = roots_sorted[gj_sorted == j]
        groups.append(Group(
            key=int(uniq[order[j]]), alt=float(alt[j]), gift=float(gifts[j]),
            sigma=float(sigma[j]), P=float(P[j]), old=rs, q_old=cx[rs] / D[j],
            in_i_old=inner[rs],
        ))
    carried_i = int(np.count_nonzero(is_i & in_k))

    # 4. top-up from the belief
    need = min(belief.size(), config.min_roots) - carried_i
    sampled = 0
    if need > 0:
        picks = sample_outside(game, belief, nd, i_nodes, need, rng)
        keep_n = 1 if carried_i == 0 else 0  # the searcher needs a root of its own
        true_mode = (config.root_infosets is RootInfosets.TRUE
                     and game.key_mode is KeyMode.CUMULATIVE)
        # in TRUE mode each new ▼ infoset is evaluated whole while the roots are added: the
        # picks' own values get the first half of the time left
        first = (deadline.stage(deadline.now(), 0.5) if deadline is not None and true_mode
                 else deadline)
        vals = evaluate_until(evaluator, picks, first, keep_n, pace)
        picks = picks[: vals.size]
        if picks.size:
            used = add_sampled(groups, picks, game, belief, evaluator, cur_key, config,
                                v_star, searcher, nd, vals, deadline, pace, keep_n)
            picks = picks[:used]
        sampled = int(picks.size)

    # 5-6. the new arena
    info = materialize(old, new, groups, strat, game, config, searcher, util_scale,
                        carried_i, sampled, v_star, cur_key)
    # 7. roots in our infoset get their children (RootExpansion.INFOSET)
    if config.root_expansion is RootExpansion.INFOSET:
        expand_infoset_roots(new, game, evaluator, cur_key, config)
    return info


def expand_infoset_roots(arena: Arena, game: SearchGame, evaluator: Evaluator, cur_key: int,
                         config: SearchConfig) -> int:
    """Expand every unexpanded non-terminal root in the searcher's infoset `cur_key` (module
    docstring, step 7); returns how many. One game and one evaluator call for all of them."""
    from caligo.search import expand as X

    nr = arena.n_roots
    nd = arena.nodes
    s = arena.searcher
    todo = np.flatnonzero((nd.player[:nr] == s) & (nd.key[:nr, s] == np.uint64(cur_key))
                          & ((nd.flags[:nr] & EXPANDED) == 0)).astype(np.int32)
    if todo.size == 0:
        return 0
    nd.claim[todo] = 1
    ex = X.Expander(arena, game, evaluator, config.seed)
    pending = ex.expand(todo)
    if pending is None:
        raise SearchError(f"arena capacity {arena.capacity.nodes} too small to expand the "
                          f"{todo.size} roots of our infoset")
    status = X.commit(arena, pending, config.initial_strategy is InitialStrategy.UNIFORM)
    if status != OK:
        raise SearchError("the game gave one infoset two action sets at the roots of our "
                          "infoset (perfect recall broken)")
    return int(todo.size)


def sample_outside(game: SearchGame, belief: Belief, nd: NodeArrays, i_nodes: np.ndarray,
                    need: int, rng: np.random.Generator) -> np.ndarray:
    """`need` states drawn from the belief, none of them already a node of `i_nodes`."""
    exclude = game.state_key(nd.state[i_nodes].astype(np.int64)) if i_nodes.size else (
        np.zeros(0, dtype=np.uint64))
    return np.asarray(belief.sample(need, exclude, rng), dtype=np.int64)


ROOT_BATCH = 16
"""Sampled roots evaluated per evaluator call under a deadline, at most (16 Stockfish calls
~ 11 ms on a quiet machine); fewer when the measured pace says they would not fit."""

ROOT_PACE_S = 1e-3
"""A sampled root's evaluation before any is measured (`Pace`)."""


def evaluate_until(evaluator: Evaluator, states: np.ndarray, deadline: Deadline | None,
                   keep_min: int = 0, pace: Pace | None = None) -> np.ndarray:
    """The evaluator's values of a prefix of `states`: all of them without a deadline, else
    batches of at most `ROOT_BATCH` while they fit before the deadline's soft instant at
    `pace` (measured here; a fresh one if None), at least `keep_min` states."""
    states = np.asarray(states, dtype=np.int64)
    if deadline is None or states.size == 0:
        return np.asarray(evaluator.states(states), dtype=np.float64)
    if pace is None:
        pace = Pace(ROOT_PACE_S)
    out: list[np.ndarray] = []
    done = 0
    while done < states.size:
        n = min(ROOT_BATCH, pace.units_by(deadline))
        if done < keep_min:
            n = max(n, keep_min - done)
        if n <= 0:
            break
        batch = states[done : done + n]
        t0 = deadline.now()
        out.append(np.asarray(evaluator.states(batch), dtype=np.float64))
        pace.record(deadline.now() - t0, int(batch.size))
        done += batch.size
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float64)


def add_sampled(groups: list[Group], picks: np.ndarray, game: SearchGame, belief: Belief,
                evaluator: Evaluator, cur_key: int, config: SearchConfig, v_star: float,
                searcher: int, old_nd: NodeArrays, vals: np.ndarray | None = None,
                deadline: Deadline | None = None, pace: Pace | None = None,
                keep_min: int = 0) -> int:
    """Sampled roots (Fig. 9 lines 9-14): new groups, or joining a carried J (TRUE mode).
    `vals`: the evaluator's values of `picks`, when the caller has them already.

    A pick that opens a true ▼ infoset evaluates all of its states; under a `deadline` that
    is done only while they fit before its soft instant at `pace` (seconds per position,
    updated here), and the picks from the first that does not fit on are left out (the first
    `keep_min` never are: such a pick gets a singleton ▼ infoset instead, as in SINGLETON
    mode). How many picks were added."""
    opp = 1 - searcher
    sign = 1.0 if searcher == 0 else -1.0
    info = game.describe(picks)
    if vals is None:
        vals = np.asarray(evaluator.states(picks), dtype=np.float64)
    vals = np.where(info.player == TERMINAL, info.utility, vals)
    skeys = game.state_key(picks)
    cumulative = game.key_mode is KeyMode.CUMULATIVE
    true_mode = config.root_infosets is RootInfosets.TRUE and cumulative
    by_key = {g.key: g for g in groups}
    if deadline is not None and pace is None:
        pace = Pace(ROOT_PACE_S)
    for i, s in enumerate(picks.tolist()):
        others = game.true_infoset_states(int(s), opp) if true_mode else None
        if (others is not None and deadline is not None and pace is not None
                and by_key.get(int(info.obs[i, opp])) is None  # it would open a new J
                and pace.units_by(deadline) < len(others) + 1):
            if i >= keep_min:
                return i  # its ▼ infoset would not be evaluated in time: stop here
            others = None  # a root we must keep: with a singleton ▼ infoset, as in SINGLETON
        if others is None:
            salt = singleton_salt(int(skeys[i]))
            key = int(np.uint64(info.obs[i, opp]) ^ np.uint64(salt)) if cumulative else salt
            grp = Group(key=key, alt=min(sign * float(vals[i]), v_star), gift=0.0, sigma=1.0,
                         P=0.0, salt_opp=salt if cumulative else 0)
            _push(grp, s, int(info.player[i]), float(vals[i]), info.obs[i], 1.0, True)
            groups.append(grp)
            by_key[key] = grp
            continue
        key = int(info.obs[i, opp])
        grp_hit = by_key.get(key)
        if grp_hit is not None and grp_hit.old.size:
            # joins a carried J: weigh it like J's carried roots relative to their chance weight
            bw = float(np.sum(belief.weights(old_nd.state[grp_hit.old].astype(np.int64))))
            rho = float(grp_hit.q_old.sum()) / bw if bw > 0 else 1.0 / grp_hit.old.size
            wt = float(belief.weights(np.array([s], dtype=np.int64))[0]) * rho
            _push(grp_hit, s, int(info.player[i]), float(vals[i]), info.obs[i], wt, True)
            continue
        if grp_hit is not None:
            continue  # already added with the rest of its infoset
        states = np.unique(np.append(np.asarray(others, dtype=np.int64), s))
        sinfo = game.describe(states)
        t0 = deadline.now() if deadline is not None else 0.0
        sv = np.asarray(evaluator.states(states), dtype=np.float64)
        if deadline is not None and pace is not None:
            pace.record(deadline.now() - t0, int(states.size))
        sv = np.where(sinfo.player == TERMINAL, sinfo.utility, sv)
        wts = np.asarray(belief.weights(states), dtype=np.float64)
        q = wts / wts.sum() if wts.sum() > 0 else np.full(states.size, 1.0 / states.size)
        grp = Group(key=key, alt=min(sign * float(np.dot(q, sv)), v_star), gift=0.0,
                     sigma=1.0, P=0.0)
        for k, st in enumerate(states.tolist()):
            _push(grp, st, int(sinfo.player[k]), float(sv[k]), sinfo.obs[k], float(q[k]),
                  bool(sinfo.obs[k, searcher] == np.uint64(cur_key)))
        groups.append(grp)
        by_key[key] = grp
    return int(picks.size)


def _push(grp: Group, s: int, player: int, value: float, obs: np.ndarray, q: float,
          in_i: bool) -> None:
    grp.states.append(int(s))
    grp.players.append(player)
    grp.values.append(value)
    grp.obs.append(np.asarray(obs, dtype=np.uint64))
    grp.q_new.append(q)
    grp.in_i_new.append(in_i)


def materialize(old: Arena, new: Arena, groups: list[Group], strat: np.ndarray,
                game: SearchGame, config: SearchConfig, searcher: int, util_scale: float,
                carried_i: int, sampled: int, v_star: float, cur_key: int) -> BuildInfo:
    """Write the roots, the gadget and the compacted tree into `new`."""
    opp = 1 - searcher
    _reset(new, searcher, game.key_mode, config.gadget, util_scale)
    m = len(groups)
    if m == 0:
        raise SearchError("the subgame has no roots: empty belief and no carried nodes")
    if m > new.capacity.roots:
        raise SearchError(f"{m} root infosets exceed the arena's root capacity "
                          f"{new.capacity.roots}")
    nd, rt = new.nodes, new.roots
    old_of = np.full(new.capacity.nodes, -1, dtype=np.int32)
    mark = config.subgame.marks_order2
    o2_flag = FROZEN | FROZEN_ROOT if config.subgame is SubgameKind.KLSS_ROOT else FROZEN
    r = 0
    carried_roots: list[int] = []
    for j, grp in enumerate(groups):
        rt.ptr[j] = r
        q = np.concatenate([grp.q_old, np.asarray(grp.q_new, dtype=np.float64)])
        if q.sum() > 0:
            q = q / q.sum()
        if r + q.size > new.capacity.nodes:
            raise SearchError(f"arena capacity {new.capacity.nodes} too small for the roots")
        for i, o in enumerate(grp.old.tolist()):
            _copy_root(nd, r, old.nodes, o, float(q[i]), j, opp,
                       o2_flag if mark and not bool(grp.in_i_old[i]) else np.uint8(0))
            old_of[r] = o
            carried_roots.append(o)
            r += 1
        for i, s in enumerate(grp.states):
            obs = grp.obs[i]
            nd.parent[r] = -1
            nd.first_child[r] = -1
            nd.num_children[r] = 0
            nd.player[r] = grp.players[i]
            inner = grp.in_i_new[i] or config.knowledge_order > 1  # sampled roots are in I^2
            nd.flags[r] = o2_flag if (mark and not inner) else 0
            nd.claim[r] = 0
            nd.action[r] = -1
            nd.chance_prob[r] = q[grp.old.size + i]
            nd.value[r] = grp.values[i]
            nd.infoset[r] = -1
            nd.state[r] = s
            nd.depth[r] = 0
            nd.seq[r] = -1
            nd.seq[r, opp] = j
            nd.salt[r, searcher] = 0
            nd.salt[r, opp] = np.uint64(grp.salt_opp)
            if game.key_mode is KeyMode.INCREMENTAL:
                nd.key[r, searcher] = np.uint64(cur_key)
            else:
                nd.key[r, searcher] = np.uint64(obs[searcher])
            nd.key[r, opp] = np.uint64(grp.key)
            r += 1
    rt.ptr[m] = r
    new.meta[M_ROOTS] = r
    new.meta[M_J] = m
    new.meta[M_HAS_GADGET] = 1
    new.meta[M_NODES] = r
    # the gadget pseudo-infoset 0 (▼ chooses J) and the root layer
    inf, sl = new.infosets, new.slots
    inf.player[0] = opp
    inf.slot0[0] = 0
    inf.n_actions[0] = m
    inf.parent_seq[0] = -1
    inf.key[0] = 0
    inf.flags[0] = GADGET
    inf.first_node[0] = -1
    sl.infoset[:m] = 0
    sl.action[:m] = np.arange(m)
    sl.strat[:m] = 1.0 / m
    sl.regret[:m] = 0.0
    sl.pred[:m] = 0.0
    sl.cfv[:m] = 0.0
    sl.support_since[:m] = -1
    new.meta[M_INFOSETS] = 1
    new.meta[M_SLOTS] = m
    alt = np.array([g.alt for g in groups])
    gift = np.array([g.gift for g in groups])
    sigma = np.array([g.sigma for g in groups])
    Pj = np.array([g.P for g in groups])
    keys = np.array([g.key for g in groups], dtype=np.uint64)
    if config.resolve_prior is ResolvePrior.BLUEPRINT_MIX and Pj.sum() > 0.0:
        alpha = 0.5 * (Pj / Pj.sum() + 1.0 / m)
    else:
        alpha = np.full(m, 1.0 / m)
    threshold = sigma * (alt - gift)
    rt.threshold[:m] = threshold
    rt.alt[:m] = alt
    rt.gift[:m] = gift
    rt.sigma[:m] = sigma
    rt.alpha[:m] = alpha
    rt.key[:m] = keys
    rt.mm_regret[:m] = 0.0
    rt.mm_pred[:m] = 0.0
    rt.mm_strat[:m] = 1.0 / m
    rt.res_regret[:m] = 0.0
    rt.res_pred[:m] = 0.0
    rt.res_strat[:m] = 0.5
    new.meta[M_ORDER2] = _ORDER2_MODE[config.subgame]
    new.fmeta[F_BLEND] = config.order2_blend
    new.fmeta[F_FLOOR] = config.order2_floor * util_scale
    new.fmeta[F_ROOT_FLOOR] = config.root_floor
    init_weights(new)
    t = new.table
    status = _compact_kernel(
        old.nodes, old.infosets, old.slots, strat, old.n_infosets,
        new.nodes, new.infosets, new.slots, new.meta, t.key, t.player, t.id, old_of,
        config.carry_over is CarryOver.PROFILE_AND_REGRETS,
    )
    if status == FULL:
        raise SearchError(f"arena capacity {new.capacity.nodes} too small for the carried tree")
    if status == MISMATCH:
        raise SearchError("the carried tree breaks perfect recall (a game bug)")
    return BuildInfo(
        keys=keys, alt=alt, gift=gift, sigma=sigma, alpha=alpha, threshold=threshold,
        roots_per_j=np.diff(rt.ptr[: m + 1]).astype(np.int64),
        carried_roots=np.asarray(carried_roots, dtype=np.int64), in_i=carried_i,
        sampled=sampled, v_star=v_star,
        carried_nodes=int(np.count_nonzero(old_of[: new.n_nodes] >= 0)),
        carried_infosets=new.n_infosets - 1,
    )


_ORDER2_MODE = {SubgameKind.KLUSS: ORDER2_FROZEN, SubgameKind.COMMON_KNOWLEDGE: ORDER2_FROZEN,
                SubgameKind.KLSS: ORDER2_FROZEN, SubgameKind.KLSS_ROOT: ORDER2_FROZEN,
                SubgameKind.BLEND: ORDER2_BLEND, SubgameKind.SAFE_KLUSS: ORDER2_FLOOR}
"""How each subgame kind plays its order-2 infosets (KLUSS and common knowledge mark none)."""


def init_weights(arena: Arena) -> None:
    """w_J from the root regret minimizers' current strategies (Fig. 10 line 12)."""
    m = arena.n_j
    rt = arena.roots
    mode = int(arena.meta[M_GADGET_MODE])
    enter = rt.res_strat[:m, 0]
    p_max = float(enter.max()) if mode != GADGET_MAXMARGIN else 0.0
    if mode == GADGET_MAXMARGIN:
        rt.w[:m] = rt.mm_strat[:m]
    elif mode == GADGET_RESOLVE:
        rt.w[:m] = rt.alpha[:m] * enter
    else:
        rt.w[:m] = p_max * rt.alpha[:m] * enter + (1.0 - p_max) * rt.mm_strat[:m]
    eps = float(arena.fmeta[F_ROOT_FLOOR])
    if eps > 0.0:
        rt.w[:m] = (1.0 - eps) * rt.w[:m] + eps * rt.alpha[:m]
    arena.fmeta[F_PMAX] = p_max


def _copy_root(nd: NodeArrays, r: int, on: NodeArrays, o: int, q: float, j: int, opp: int,
               order2: np.uint8) -> None:
    nd.parent[r] = -1
    nd.first_child[r] = -1
    nd.num_children[r] = 0
    nd.player[r] = on.player[o]
    nd.flags[r] = order2
    nd.claim[r] = 0
    nd.action[r] = on.action[o]
    nd.chance_prob[r] = q
    nd.value[r] = on.value[o]
    nd.infoset[r] = -1
    nd.state[r] = on.state[o]
    nd.depth[r] = 0
    nd.key[r] = on.key[o]
    nd.salt[r] = on.salt[o]
    nd.seq[r] = -1
    nd.seq[r, opp] = j
