"""PCFR+ on the growing tree: Obscuro, Figs. 10-11 as numba kernels over the arena.

One iteration is `RUNCFRITERATION(searcher)`, then `RUNCFRITERATION(opponent)` followed by the
root gadget's update (Fig. 10 lines 3-13): alternating updates.

`_pass_kernel(i, ...)` is RUNCFRITERATION(i) in sequence form:

1. MAKEUTILITIES (Fig. 11), an explicit-stack depth-first walk from the roots carrying the reach
   pi_{-i}(h) of chance and the other player (and of the gadget: the searcher's pass starts a
   root of J at w_J q_h, the opponent's at q_h). At a leaf (unexpanded or terminal)
   pi_{-i}(h) v_i(h) is added to u_cf(sigma_i(h)). Fig. 11 also marks sigma_i(h)'s infoset
   VISITED there; that infoset acts at an ancestor of h on the walk, which was marked when the
   walk passed it, so the kernel marks infosets only where i acts (the gadget's pseudo-infoset,
   the one exception above the roots, is read by `_gadget_kernel` regardless).
   At an expanded node the walk enters child ha only if i acts at h or pi_{-i}(ha) > 0: the
   branches the other player does not reach are pruned. Visiting a node clears its NEW flag.
2. Bottom-up over player i's infosets in descending id (a bottom-up order of the treeplex):
   V(I) = sum_a x(a|I) u_cf(I, a) is added to u_cf(parent sequence of I); then the local PRM+
   update of predictive CFR+ (Farina, Kroer, Sandholm 2021): r = u_cf(I, .) - V(I),
   R <- max(R + r, 0), prediction m = r, next strategy proportional to [R + m]^+ (uniform if
   that is 0): the one step of every CFR-family solver (`caligo.core.regret`: its
   `fold_regret` and `regret_match`, fused into the loop that forms r). The
   conditional value q(I, a) = u_cf(I, a) / sum_{h in I} pi_{-i}(h) is exported for PUCT, and
   the support-stability counter of each action (C.8) is updated.

Infosets the walk did not reach: Fig. 10 updates VISITED infosets only. Their instantaneous
regret is exactly 0, so PCFR+ would match on [R + 0]^+; we do that for every infoset whose
strategy already comes from its own regrets (flag LIVE), so a fully expanded arena follows the
core's PCFR+ iterate for iterate. An infoset never reached keeps its first strategy (C.5: all
weight on the best child), which the expansion walk and the other player's values rely on.

Order-2 play. Infosets flagged IFROZEN are the searcher's order-2 infosets (below the roots
outside its own infoset; `caligo.search.construct`), and `meta[M_ORDER2]` says how they play:
ORDER2_FROZEN (1-KLSS): their carried strategy, never updated; otherwise `_order2_step`: the
PRM+ step moves a learned strategy (slots `learn`) on the same counterfactual values, and the
played strategy is strat = (1 - b) anchor + b learn with `anchor` the blueprint they were carried
with. ORDER2_BLEND: b = fmeta[F_BLEND] fixed (b = 1 plays exactly the learned strategy, as
KLUSS). ORDER2_FLOOR: b = 1 unless the learned strategy is worse than the blueprint against the
opponent's current strategy by more than the margin, sum_a (learn - anchor) u_cf <
-fmeta[F_FLOOR] R(I) (R the infoset's counterfactual reach this pass), when b is the largest
value keeping the played strategy at that floor: the per-opponent-strategy margin of Safe-KLSS
(Liu et al. 2023), u_I(x', y) - u_I(x0, y) >= -margin, at every order-2 infoset.

The gadget update (`_gadget_kernel`, Fig. 10 lines 6-13), in the opponent's utility: branch J
is worth u_J = u_cf_opp(J) + c_J, where c_J = sigma_J (v_alt(J) - g(J)) is the threshold in the
searcher's utility (Maxmargin pays the searcher sum_h q_h v(h) - c_J; `caligo.subgame.gadget`
writes the same number into B). Maxmargin: one PRM+ over the J; Resolve: per J a PRM+ over
ENTER (u_J) and EXIT (0); p_max = max_J P(enter J); w_J = p_max alpha_J P(enter J) +
(1 - p_max) P_mm(J), then, with the root floor eps = fmeta[F_ROOT_FLOOR] > 0,
w_J <- (1 - eps) w_J + eps alpha_J (`SearchConfig.root_floor`). A uniform rescaling of one
regret minimizer's utilities (the prior alpha of Resolve's counterfactual reach) changes no
strategy, so alpha enters only through w.

Status codes: OK = 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.core.game import CHANCE
from caligo.core.regret import REGRET_PLUS, fold_regret, regret_match
from caligo.search.arena import (
    EXPANDED,
    F_BLEND,
    F_FLOOR,
    F_PMAX,
    F_ROOT_FLOOR,
    F_ROOT_VALUE,
    GADGET,
    GADGET_MAXMARGIN,
    GADGET_RESOLVE,
    IFROZEN,
    LIVE,
    M_GADGET_MODE,
    M_HAS_GADGET,
    M_INFOSETS,
    M_ITERATION,
    M_J,
    M_ORDER2,
    M_ROOTS,
    M_SEARCHER,
    M_VISITS,
    NEW,
    ORDER2_BLEND,
    ORDER2_FROZEN,
    VISITED,
    InfosetArrays,
    NodeArrays,
    RootArrays,
    SlotArrays,
)

OK = 0


@njit(cache=True, nogil=True)
def _prm_plus(regret: np.ndarray, pred: np.ndarray, strat: np.ndarray, util: np.ndarray,
              lo: int, n: int) -> float:
    """One PRM+ step on slots lo .. lo+n-1 given utilities util[lo:lo+n]; returns the value.

    R <- max(R + r, 0), m <- r, x ∝ [R + m]^+ (uniform when that is zero), r = u - <x, u>:
    the core's predictive CFR+ step (`caligo.core.regret`'s `fold_regret` and `regret_match`,
    as the core's fused sequence-form step calls them), the prediction kept in `pred`.
    """
    v = 0.0
    for a in range(lo, lo + n):
        v += strat[a] * util[a]
    total = 0.0  # one pass: the instantaneous regret, its fold and the matching's sum
    for a in range(lo, lo + n):
        r_inst = util[a] - v
        pred[a] = r_inst
        r = fold_regret(regret[a] + r_inst, REGRET_PLUS, 1.0, 1.0)
        regret[a] = r
        q = r + r_inst
        if q > 0.0:
            total += q
    regret_match(regret, pred, strat, lo, n, total, True)
    return v


@njit(cache=True, nogil=True)
def _order2_step(regret: np.ndarray, pred: np.ndarray, learn: np.ndarray, anchor: np.ndarray,
                 strat: np.ndarray, cfv: np.ndarray, lo: int, n: int, mode: int, blend: float,
                 floor: float) -> None:
    """The update of an order-2 infoset that is not frozen (module docstring, "Order-2 play").

    The PRM+ step moves the learned strategy `learn` on the counterfactual values cfv; the
    played strategy becomes strat = (1 - b) anchor + b learn, with b = `blend` (ORDER2_BLEND)
    or, for ORDER2_FLOOR, the largest b in [0, 1] with
    sum_a (strat - anchor) cfv >= -floor (floor: the margin times the infoset's reach).
    """
    _prm_plus(regret, pred, learn, cfv, lo, n)
    if mode == ORDER2_BLEND:
        b = blend
    else:
        gain = 0.0
        for a in range(lo, lo + n):
            gain += (learn[a] - anchor[a]) * cfv[a]
        b = 1.0
        if gain < -floor:
            b = floor / (-gain)
    for a in range(lo, lo + n):
        strat[a] = (1.0 - b) * anchor[a] + b * learn[a]


# Long by design: one numba pass over the arena (Obscuro, Fig. 10); split into calls it would
# pay a call per node and infoset in the solver's hot loop, and its steps share their locals.
@njit(cache=True, nogil=True)
def _pass_kernel(
    i: int,
    update: bool,
    average: bool,
    nd: NodeArrays,
    inf: InfosetArrays,
    sl: SlotArrays,
    rt: RootArrays,
    meta: np.ndarray,
    fmeta: np.ndarray,
    stack_node: np.ndarray,
    stack_reach: np.ndarray,
) -> int:
    """RUNCFRITERATION(i) (module docstring); the gadget update is `_gadget_kernel`.

    i: 0 or 1. update: apply the PCFR+ update (False: only compute u_cf and q, e.g. for a
    value read-out; the scratch is still reset). average: add player i's realization plan of
    the current strategy to `avg` (sequence-form average, as the core's uniform average).
    nd, inf, sl, rt: the arena's NodeArrays, InfosetArrays, SlotArrays, RootArrays; meta
    int64[M_LEN], fmeta float64[F_LEN]. stack_node int32[>= nodes], stack_reach
    float64[>= nodes]: scratch. On exit the opponent's gadget slots hold u_cf(J) (the caller
    runs `_gadget_kernel` and resets them). Returns OK.
    """
    searcher = meta[M_SEARCHER]
    has_gadget = meta[M_HAS_GADGET] != 0
    n_roots = meta[M_ROOTS]
    t = meta[M_ITERATION] + 1
    sign = 1.0 if i == 0 else -1.0
    parent = nd.parent
    first_child = nd.first_child
    num_children = nd.num_children
    player = nd.player
    flags = nd.flags
    chance_prob = nd.chance_prob
    value = nd.value
    infoset = nd.infoset
    seq = nd.seq
    slot0 = inf.slot0
    strat = sl.strat
    cfv = sl.cfv
    slot_inf = sl.infoset
    iflags = inf.flags
    ireach = inf.reach
    order2 = meta[M_ORDER2]
    blend = fmeta[F_BLEND]
    floor = fmeta[F_FLOOR]
    _ = parent

    root_value = 0.0
    top = 0
    for r in range(n_roots - 1, -1, -1):
        reach = chance_prob[r]
        if i == searcher and has_gadget:
            reach *= rt.w[seq[r, 1 - searcher]]
        if reach > 0.0:
            stack_node[top] = r
            stack_reach[top] = reach
            top += 1
    visits = 0
    while top > 0:
        top -= 1
        h = stack_node[top]
        r = stack_reach[top]
        visits += 1
        f = flags[h]
        if (f & EXPANDED) == 0:  # a leaf root (terminal nodes are never EXPANDED)
            s = seq[h, i]
            val = r * sign * value[h]
            if s >= 0:
                cfv[s] += val
            else:
                root_value += val
            continue
        if f & NEW:
            flags[h] = f & ~NEW
        pl = player[h]
        c0 = first_child[h]
        n = num_children[h]
        # children: leaves are valued on the spot (Fig. 11 lines 3-8), the rest is pushed
        if pl == i:
            g = infoset[h]
            ireach[g] += r
            iflags[g] |= VISITED
            for c in range(c0 + n - 1, c0 - 1, -1):
                if flags[c] & EXPANDED:
                    stack_node[top] = c
                    stack_reach[top] = r
                    top += 1
                else:
                    visits += 1
                    s = seq[c, i]
                    val = r * sign * value[c]
                    if s >= 0:
                        cfv[s] += val
                    else:
                        root_value += val
        else:
            if pl == CHANCE:
                probs = chance_prob
                off = 0
            else:
                probs = strat
                off = slot0[infoset[h]] - c0
            for c in range(c0 + n - 1, c0 - 1, -1):
                rc = r * probs[off + c]
                if rc <= 0.0:
                    continue
                if flags[c] & EXPANDED:
                    stack_node[top] = c
                    stack_reach[top] = rc
                    top += 1
                else:
                    visits += 1
                    s = seq[c, i]
                    val = rc * sign * value[c]
                    if s >= 0:
                        cfv[s] += val
                    else:
                        root_value += val
    meta[M_VISITS] += visits

    n_inf = meta[M_INFOSETS]
    if average:
        plan = sl.plan
        for g in range(n_inf):
            if inf.player[g] != i:
                continue
            s0 = slot0[g]
            ps = inf.parent_seq[g]
            base = 1.0
            if ps >= 0 and (iflags[slot_inf[ps]] & GADGET) == 0:
                base = plan[ps]
            for a in range(s0, s0 + inf.n_actions[g]):
                plan[a] = base * strat[a]
                sl.avg[a] += plan[a]

    regret = sl.regret
    pred = sl.pred
    q = sl.q
    since = sl.support_since
    for g in range(n_inf - 1, -1, -1):
        if inf.player[g] != i:
            continue
        fl = iflags[g]
        if fl & GADGET:
            continue
        visited = (fl & VISITED) != 0
        if not visited and (fl & LIVE) == 0:
            continue
        s0 = slot0[g]
        n = inf.n_actions[g]
        learn = update and (fl & IFROZEN) == 0
        if learn:  # the value under the old strategy, then the PRM+ step
            v = _prm_plus(regret, pred, strat, cfv, s0, n)
        else:
            v = 0.0
            for a in range(s0, s0 + n):
                v += strat[a] * cfv[a]
            if update and order2 != ORDER2_FROZEN and (fl & IFROZEN) != 0:
                _order2_step(regret, pred, sl.learn, sl.anchor, strat, cfv, s0, n, order2,
                             blend, floor * ireach[g])
                learn = True
        if visited:
            ps = inf.parent_seq[g]
            if ps >= 0:
                cfv[ps] += v
            else:
                root_value += v
            rg = ireach[g]
            if rg > 0.0:
                for a in range(s0, s0 + n):
                    q[a] = cfv[a] / rg
        if learn:
            for a in range(s0, s0 + n):
                if strat[a] > 0.0:
                    if since[a] < 0:
                        since[a] = t
                else:
                    since[a] = -1
        for a in range(s0, s0 + n):
            cfv[a] = 0.0
        ireach[g] = 0.0
        nf = fl & ~VISITED
        if visited and update:
            nf = nf | LIVE
        iflags[g] = nf
    if i == searcher:
        fmeta[F_ROOT_VALUE] = root_value
    return OK


@njit(cache=True, nogil=True)
def _gadget_kernel(update: bool, inf: InfosetArrays, sl: SlotArrays, rt: RootArrays,
                   meta: np.ndarray, fmeta: np.ndarray, util: np.ndarray) -> int:
    """The root gadget's regret minimizers and the blend (Fig. 10 lines 6-13).

    Reads u_cf_opp(J) from the gadget pseudo-infoset's slots 0 .. m-1 (the opponent's utility)
    and resets them. update: False only resets. util: float64[>= m] scratch. Arrays as in
    `_pass_kernel`. Returns OK.
    """
    if meta[M_HAS_GADGET] == 0:
        return OK
    m = meta[M_J]
    cfv = sl.cfv
    for j in range(m):
        util[j] = cfv[j] + rt.threshold[j]
        cfv[j] = 0.0
    inf.flags[0] = inf.flags[0] & ~VISITED
    if not update:
        return OK
    mode = meta[M_GADGET_MODE]
    if mode != GADGET_RESOLVE:
        _prm_plus(rt.mm_regret, rt.mm_pred, rt.mm_strat, util, 0, m)
    p_max = 0.0
    if mode != GADGET_MAXMARGIN:
        two = np.zeros(2)
        for j in range(m):
            two[0] = util[j]
            two[1] = 0.0
            _prm_plus(rt.res_regret[j], rt.res_pred[j], rt.res_strat[j], two, 0, 2)
            if rt.res_strat[j, 0] > p_max:
                p_max = rt.res_strat[j, 0]
    eps = fmeta[F_ROOT_FLOOR]
    for j in range(m):
        if mode == GADGET_MAXMARGIN:
            w = rt.mm_strat[j]
        elif mode == GADGET_RESOLVE:
            w = rt.alpha[j] * rt.res_strat[j, 0]
        else:
            w = p_max * rt.alpha[j] * rt.res_strat[j, 0] + (1.0 - p_max) * rt.mm_strat[j]
        rt.w[j] = w if eps == 0.0 else (1.0 - eps) * w + eps * rt.alpha[j]
    fmeta[F_PMAX] = p_max
    return OK


@njit(cache=True, nogil=True)
def _iterate_kernel(
    iterations: int,
    average: bool,
    nd: NodeArrays,
    inf: InfosetArrays,
    sl: SlotArrays,
    rt: RootArrays,
    meta: np.ndarray,
    fmeta: np.ndarray,
    stack_node: np.ndarray,
    stack_reach: np.ndarray,
    util: np.ndarray,
) -> int:
    """Run `iterations` full iterations: searcher's pass, opponent's pass, gadget update."""
    searcher = meta[M_SEARCHER]
    for _ in range(iterations):
        status = _pass_kernel(searcher, True, average, nd, inf, sl, rt, meta, fmeta,
                              stack_node, stack_reach)
        if status != OK:
            return status
        status = _pass_kernel(1 - searcher, True, average, nd, inf, sl, rt, meta, fmeta,
                              stack_node, stack_reach)
        if status != OK:
            return status
        status = _gadget_kernel(True, inf, sl, rt, meta, fmeta, util)
        if status != OK:
            return status
        meta[M_ITERATION] += 1
    return OK
