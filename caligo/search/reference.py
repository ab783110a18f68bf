"""Slow, obviously-correct pure-Python references of the search kernels (tests only).

- `reference_iteration(arena, average)`: one full iteration (searcher's pass, opponent's pass,
  gadget update) written as Obscuro, Figs. 10-11 read: a recursive MAKEUTILITIES over dicts,
  then the bottom-up regret-minimizer updates, then the gadget's. Mutates the arena like
  `caligo.search.solver._iterate_kernel` and must leave it bit-for-bit... up to floating
  summation order, so tests compare with a tolerance.
- `reference_select(arena, explorer, ...)`: DOEXPANSIONSTEP's walk (Fig. 12, C.4) with the
  same xorshift64* stream as `caligo.search.walk._select_kernel`, so the two pick the same
  leaf and leave the same PUCT statistics.
"""

from __future__ import annotations

import math

import numpy as np

from caligo.core.game import CHANCE, TERMINAL
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
    M_ITERATION,
    M_ORDER2,
    NEW,
    ORDER2_BLEND,
    ORDER2_FROZEN,
    Arena,
)

_MASK = (1 << 64) - 1


def _prm_plus(regret: list[float], pred: list[float], strat: list[float],
              util: list[float]) -> None:
    v = sum(s * u for s, u in zip(strat, util, strict=True))
    for a, u in enumerate(util):
        r_inst = u - v
        regret[a] = max(regret[a] + r_inst, 0.0)
        pred[a] = r_inst
    q = [max(r + m, 0.0) for r, m in zip(regret, pred, strict=True)]
    tot = sum(q)
    for a in range(len(strat)):
        strat[a] = q[a] / tot if tot > 0 else 1.0 / len(strat)


# Long by design: it mirrors `caligo.search.solver._pass_kernel` statement for statement (an
# independent pure-Python reference the kernel is tested against).
def _pass(arena: Arena, i: int, average: bool) -> None:
    nd, inf, sl, rt = arena.nodes, arena.infosets, arena.slots, arena.roots
    searcher = arena.searcher
    sign = 1.0 if i == 0 else -1.0
    t = arena.iteration + 1
    cfv: dict[int, float] = {}
    reach_of: dict[int, float] = {}
    visited: set[int] = set()
    root_value = [0.0]

    def make_utilities(h: int, r: float) -> None:  # Fig. 11
        if nd.flags[h] & NEW:
            nd.flags[h] = nd.flags[h] & ~NEW
        if not nd.flags[h] & EXPANDED or nd.player[h] == TERMINAL:
            s = int(nd.seq[h, i])
            val = r * sign * float(nd.value[h])
            if s >= 0:
                cfv[s] = cfv.get(s, 0.0) + val
                visited.add(int(sl.infoset[s]))
            else:
                root_value[0] += val
            return
        p = int(nd.player[h])
        if p == i:
            g = int(nd.infoset[h])
            reach_of[g] = reach_of.get(g, 0.0) + r
            visited.add(g)
        for k, c in enumerate(arena.children(h)):
            if p == i:
                make_utilities(c, r)
            elif p == CHANCE:
                if r * nd.chance_prob[c] > 0:
                    make_utilities(c, r * float(nd.chance_prob[c]))
            else:
                x = float(sl.strat[inf.slot0[nd.infoset[h]] + k])
                if r * x > 0:
                    make_utilities(c, r * x)

    for root in range(arena.n_roots):
        r = float(nd.chance_prob[root])
        if i == searcher and arena.has_gadget:
            r *= float(rt.w[nd.seq[root, 1 - searcher]])
        if r > 0:
            make_utilities(root, r)
    if average:
        plan: dict[int, float] = {}
        for g in range(arena.n_infosets):
            if inf.player[g] != i:
                continue
            ps = int(inf.parent_seq[g])
            base = 1.0
            if ps >= 0 and not inf.flags[sl.infoset[ps]] & GADGET:
                base = plan[ps]
            for a in range(int(inf.slot0[g]), int(inf.slot0[g] + inf.n_actions[g])):
                plan[a] = base * float(sl.strat[a])
                sl.avg[a] += plan[a]
    for g in range(arena.n_infosets - 1, -1, -1):  # bottom up (Fig. 10 lines 19-25)
        if inf.player[g] != i or inf.flags[g] & GADGET:
            continue
        if g not in visited and not inf.flags[g] & LIVE:
            continue
        s0, n = int(inf.slot0[g]), int(inf.n_actions[g])
        u = [cfv.get(a, 0.0) for a in range(s0, s0 + n)]
        x = [float(sl.strat[a]) for a in range(s0, s0 + n)]
        v = sum(xa * ua for xa, ua in zip(x, u, strict=True))
        if g in visited:
            ps = int(inf.parent_seq[g])
            if ps >= 0:
                cfv[ps] = cfv.get(ps, 0.0) + v
                visited.add(int(sl.infoset[ps]))
            else:
                root_value[0] += v
            if reach_of.get(g, 0.0) > 0:
                for k in range(n):
                    sl.q[s0 + k] = u[k] / reach_of[g]
        frozen = bool(inf.flags[g] & IFROZEN)
        mode = int(arena.meta[M_ORDER2])
        if frozen and mode != ORDER2_FROZEN:  # order-2 play (solver docstring)
            reg = [float(sl.regret[a]) for a in range(s0, s0 + n)]
            pred = [0.0] * n
            learn = [float(sl.learn[a]) for a in range(s0, s0 + n)]
            anchor = [float(sl.anchor[a]) for a in range(s0, s0 + n)]
            _prm_plus(reg, pred, learn, u)
            b = float(arena.fmeta[F_BLEND])
            if mode != ORDER2_BLEND:
                gain = sum((lk - ak) * uk for lk, ak, uk in zip(learn, anchor, u, strict=True))
                floor = float(arena.fmeta[F_FLOOR]) * reach_of.get(g, 0.0)
                b = floor / -gain if gain < -floor else 1.0
            x = [(1.0 - b) * ak + b * lk for ak, lk in zip(anchor, learn, strict=True)]
            for k in range(n):
                sl.learn[s0 + k] = learn[k]
        if not frozen or mode != ORDER2_FROZEN:
            if not frozen:
                reg = [float(sl.regret[a]) for a in range(s0, s0 + n)]
                pred = [0.0] * n
                _prm_plus(reg, pred, x, u)
            for k in range(n):
                sl.regret[s0 + k] = reg[k]
                sl.pred[s0 + k] = pred[k]
                sl.strat[s0 + k] = x[k]
                if x[k] > 0:
                    if sl.support_since[s0 + k] < 0:
                        sl.support_since[s0 + k] = t
                else:
                    sl.support_since[s0 + k] = -1
        if g in visited:
            inf.flags[g] = inf.flags[g] | LIVE
    if i == searcher:
        arena.fmeta[F_ROOT_VALUE] = root_value[0]
    if i != searcher and arena.has_gadget:
        _gadget(arena, [cfv.get(j, 0.0) for j in range(arena.n_j)])


def _gadget(arena: Arena, cfv_j: list[float]) -> None:
    rt = arena.roots
    m = arena.n_j
    mode = int(arena.meta[M_GADGET_MODE])
    util = [cfv_j[j] + float(rt.threshold[j]) for j in range(m)]
    if mode != GADGET_RESOLVE:
        reg, pred, st = (list(map(float, a[:m])) for a in (rt.mm_regret, rt.mm_pred, rt.mm_strat))
        _prm_plus(reg, pred, st, util)
        rt.mm_regret[:m], rt.mm_pred[:m], rt.mm_strat[:m] = reg, pred, st
    p_max = 0.0
    if mode != GADGET_MAXMARGIN:
        for j in range(m):
            reg, pred, st = (list(map(float, a[j])) for a in (rt.res_regret, rt.res_pred,
                                                               rt.res_strat))
            _prm_plus(reg, pred, st, [util[j], 0.0])
            rt.res_regret[j], rt.res_pred[j], rt.res_strat[j] = reg, pred, st
            p_max = max(p_max, st[0])
    eps = float(arena.fmeta[F_ROOT_FLOOR])
    for j in range(m):
        enter = float(rt.res_strat[j, 0])
        if mode == GADGET_MAXMARGIN:
            w = float(rt.mm_strat[j])
        elif mode == GADGET_RESOLVE:
            w = float(rt.alpha[j]) * enter
        else:
            w = p_max * float(rt.alpha[j]) * enter + (1 - p_max) * float(rt.mm_strat[j])
        rt.w[j] = w if eps == 0.0 else (1.0 - eps) * w + eps * float(rt.alpha[j])
    arena.fmeta[F_PMAX] = p_max


def reference_iteration(arena: Arena, average: bool = False) -> None:
    """One iteration of Fig. 10 (searcher, opponent, gadget), in plain Python."""
    _pass(arena, arena.searcher, average)
    _pass(arena, 1 - arena.searcher, average)
    arena.meta[M_ITERATION] += 1


class XorShift:
    """The xorshift64* stream of `caligo.search.walk._rand`, in Python integers."""

    def __init__(self, state: int) -> None:
        self.state = state & _MASK

    def rand(self) -> float:
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & _MASK
        x ^= x >> 27
        self.state = x
        return float(((x * 0x2545F4914F6CDD1D) & _MASK) >> 11) / 9007199254740992.0


def _sample(w: list[float], rng: XorShift) -> int:
    tot = sum(x for x in w if x > 0)
    if tot <= 0:
        return min(int(rng.rand() * len(w)), len(w) - 1)
    u = rng.rand() * tot
    acc = 0.0
    last = 0
    for a, x in enumerate(w):
        if x > 0:
            acc += x
            last = a
            if u < acc:
                return a
    return last


def _uniform_support(w: list[float], rng: XorShift) -> int:
    sup = [a for a, x in enumerate(w) if x > 0]
    if not sup:
        return min(int(rng.rand() * len(w)), len(w) - 1)
    return sup[min(int(rng.rand() * len(sup)), len(sup) - 1)]


def reference_select(arena: Arena, explorer: int, two_sided: bool, puct_c: float,
                     explore_mix: float, util_scale: float, rng: XorShift,
                     prior_temp: float = 0.0) -> int:
    """Fig. 12's walk (see `caligo.search.expand`); claims and returns the leaf, or -1.

    prior_temp > 0 weighs each action's exploration bonus by n softmax(v / prior_temp), v the
    heuristic values of the node's children in the acting player's view (divided by util_scale).
    """
    nd, inf, sl, rt = arena.nodes, arena.infosets, arena.slots, arena.roots
    opp = 1 - arena.searcher
    m = arena.n_j
    j = 0
    if arena.has_gadget and m > 1:
        w = [float(x) for x in rt.w[:m]]
        if (explorer == opp or two_sided) and rng.rand() < explore_mix:
            j = _uniform_support(w, rng)
        else:
            j = _sample(w, rng)
    lo, hi = int(rt.ptr[j]), int(rt.ptr[j + 1])
    h = lo + _sample([float(x) for x in nd.chance_prob[lo:hi]], rng)
    while True:
        if nd.player[h] == TERMINAL:
            return -1
        if not nd.flags[h] & EXPANDED:
            if nd.claim[h]:
                return -1
            nd.claim[h] = 1
            return h
        if nd.flags[h] & NEW:
            return -1
        kids = arena.children(h)
        p = int(nd.player[h])
        if p == CHANCE:
            h = kids[_sample([float(nd.chance_prob[c]) for c in kids], rng)]
            continue
        g = int(nd.infoset[h])
        s0 = int(inf.slot0[g])
        n = len(kids)
        strat = [float(x) for x in sl.strat[s0 : s0 + n]]
        if p == explorer or two_sided:
            inf.visits[g] += 1
            nv = int(inf.visits[g])
            for a in range(s0, s0 + n):
                x = float(sl.q[a]) / util_scale
                sl.q_sum[a] += x
                sl.q_sqsum[a] += x * x
            if rng.rand() < explore_mix:
                cnt = nv + 2.0
                weights = [1.0] * n
                if prior_temp > 0:
                    sign = 1.0 if p == 0 else -1.0
                    v = [sign * float(nd.value[c]) / util_scale for c in kids]
                    e = [math.exp((x - max(v)) / prior_temp) for x in v]
                    weights = [n * x / sum(e) for x in e]
                scores = []
                for a in range(s0, s0 + n):
                    mean = float(sl.q_sum[a]) / cnt
                    var = max((float(sl.q_sqsum[a]) + 2.0) / cnt - mean * mean, 0.0)
                    scores.append(float(sl.q[a]) / util_scale
                                  + puct_c * weights[a - s0] * var * math.sqrt(nv)
                                  / (1.0 + float(sl.n_visits[a])))
                k = int(np.argmax(scores))
            else:
                k = _uniform_support(strat, rng)
            sl.n_visits[s0 + k] += 1
        else:
            k = _sample(strat, rng)
        h = kids[k]
