"""The kernels of the subgame construction (`caligo.search.construct`): profile quantities
(`_profile_kernel`, step 1), the nodes under a set of roots (`under_kernel`, step 2), ▼'s values
and gifts (`_opp_values_kernel`, step 3) and the breadth-first compaction into the new arena
(`_compact_kernel`, step 6). Status codes of the compaction: OK = 0, FULL = 1, MISMATCH = 2."""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.core.game import CHANCE
from caligo.search.arena import (
    EXPANDED,
    FROZEN,
    FROZEN_ROOT,
    GADGET,
    IFROZEN,
    LIVE,
    M_INFOSETS,
    M_MAX_DEPTH,
    M_NODES,
    M_ROOTS,
    M_SEARCHER,
    M_SLOTS,
    InfosetArrays,
    NodeArrays,
    SlotArrays,
)
from caligo.search.intern import _insert_kernel

OK = 0
FULL = 1
MISMATCH = 2


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
