"""DOEXPANSIONSTEP's walk of one-sided GT-CFR (Obscuro, Fig. 12, C.4): the leaf to grow.

`_select_kernel` is DOEXPANSIONSTEP's walk. From the root gadget (J sampled in proportion to the
blended weights w_J, normalised: under Resolve they need not sum to 1, Fig. 12 line 17; the
opponent, when exploring, mixes that with uniform over the J it enters) and a root of J in
proportion to q_h, down the expanded tree:

- at the exploring player's nodes, with probability `explore_mix` the PUCT argmax of
  Q(I, a) = u(x^t, y^t | I, a) + C var(I, a) sqrt(N(I)) / (1 + N(I, a)), else uniform over the
  support of the current strategy (C.4: x_sample = 1/2 x_Max + 1/2 x_PUCT). u(x^t, y^t | I, a) is
  the conditional value the solver exported in its last pass (the *current* value, not a running
  mean); var is the empirical variance of that value over the previous visits of I during
  expansion, with two prior samples -1 and +1 (values divided by the game's utility scale, so the
  priors are the ends of the range as in Obscuro's [-1, 1]); N counts expansion visits. C.4 says
  "variance" and so do we (not the standard deviation of UCB formulas). With a prior
  (`SearchConfig.puct_prior` = T) the bonus of a is weighed by n softmax(v / T)_a, v the
  heuristic values of the walk's node's children in the acting player's view (C.4 has none);
- at the other player's nodes the current strategy; at chance nodes the chance probabilities
  (two-sided GT-CFR: both players explore);
- the walk stops, expanding nothing, at a terminal node, at a node still NEW (the solver has not
  iterated on it since it was expanded, Fig. 12 line 11) or at a leaf another expander claimed.
  Otherwise it claims the leaf (its claim byte; the Python caller holds a lock across the walk,
  so two expanders never claim one leaf).

`_select_batch_kernel` makes a batch of walks in one call, the explorer alternating searcher /
opponent (Fig. 12 lines 3-4). `caligo.search.expand` grows the leaves they claim.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.search.arena import (
    EXPANDED,
    M_HAS_GADGET,
    M_J,
    M_SEARCHER,
    NEW,
    InfosetArrays,
    NodeArrays,
    RootArrays,
    SlotArrays,
)

_S12 = np.uint64(12)
_S25 = np.uint64(25)
_S27 = np.uint64(27)
_S11 = np.uint64(11)
_RMUL = np.uint64(0x2545F4914F6CDD1D)


@njit(cache=True, nogil=True)
def _rand(rng: np.ndarray) -> float:
    """xorshift64* in rng[0] (uint64, nonzero); a float in [0, 1)."""
    x = rng[0]
    x ^= x >> _S12
    x ^= x << _S25
    x ^= x >> _S27
    rng[0] = x
    return float((x * _RMUL) >> _S11) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def _sample(weights: np.ndarray, lo: int, n: int, rng: np.ndarray) -> int:
    """An index in lo .. lo+n-1 in proportion to weights (uniform if they sum to 0)."""
    total = 0.0
    for a in range(lo, lo + n):
        if weights[a] > 0.0:
            total += weights[a]
    if total <= 0.0:
        k = int(_rand(rng) * n)
        return lo + (k if k < n else n - 1)
    u = _rand(rng) * total
    acc = 0.0
    last = lo
    for a in range(lo, lo + n):
        if weights[a] > 0.0:
            acc += weights[a]
            last = a
            if u < acc:
                return a
    return last


@njit(cache=True, nogil=True)
def _uniform_support(weights: np.ndarray, lo: int, n: int, rng: np.ndarray) -> int:
    """Uniform over {a : weights[a] > 0} (over all if empty)."""
    k = 0
    for a in range(lo, lo + n):
        if weights[a] > 0.0:
            k += 1
    if k == 0:
        j = int(_rand(rng) * n)
        return lo + (j if j < n else n - 1)
    j = int(_rand(rng) * k)
    if j >= k:
        j = k - 1
    for a in range(lo, lo + n):
        if weights[a] > 0.0:
            if j == 0:
                return a
            j -= 1
    return lo


@njit(cache=True, nogil=True)
def _select_kernel(
    explorer: int,
    two_sided: bool,
    puct_c: float,
    explore_mix: float,
    util_scale: float,
    prior_temp: float,
    nd: NodeArrays,
    inf: InfosetArrays,
    sl: SlotArrays,
    rt: RootArrays,
    meta: np.ndarray,
    rng: np.ndarray,
) -> int:
    """One DOEXPANSIONSTEP walk (module docstring): the claimed leaf, or -1 for none.

    explorer: 0 or 1. util_scale > 0 divides values for the PUCT statistics. prior_temp: the
    temperature of the PUCT prior (<= 0: none, every action's bonus weighs 1). rng: uint64[1].
    Arrays as in `caligo.search.solver._pass_kernel`.
    """
    searcher = meta[M_SEARCHER]
    opp = 1 - searcher
    j = 0
    m = meta[M_J]
    if meta[M_HAS_GADGET] != 0 and m > 1:
        if (explorer == opp or two_sided) and _rand(rng) < explore_mix:
            j = _uniform_support(rt.w, 0, m, rng)
        else:
            j = _sample(rt.w, 0, m, rng)
    lo = rt.ptr[j]
    h = _sample(nd.chance_prob, lo, rt.ptr[j + 1] - lo, rng)
    strat = sl.strat
    while True:
        pl = nd.player[h]
        if pl == TERMINAL:
            return -1
        f = nd.flags[h]
        if (f & EXPANDED) == 0:
            if nd.claim[h] != 0:
                return -1
            nd.claim[h] = 1
            return h
        if f & NEW:
            return -1
        c0 = nd.first_child[h]
        n = nd.num_children[h]
        if n <= 0 or c0 <= h:
            return -1  # a half-published expansion (threads): try again later
        if pl == CHANCE:
            h = _sample(nd.chance_prob, c0, n, rng)
            continue
        g = nd.infoset[h]
        s0 = inf.slot0[g]
        if pl == explorer or two_sided:
            inf.visits[g] += 1
            nvis = inf.visits[g]
            for a in range(s0, s0 + n):
                x = sl.q[a] / util_scale
                sl.q_sum[a] += x
                sl.q_sqsum[a] += x * x
            if _rand(rng) < explore_mix:
                cnt = float(nvis + 2)
                best = -np.inf
                arg = s0
                root_n = np.sqrt(float(nvis))
                sign = 1.0 if pl == 0 else -1.0
                vmax = -np.inf
                z = 0.0
                if prior_temp > 0.0:
                    for a in range(n):
                        vmax = max(vmax, sign * nd.value[c0 + a] / util_scale)
                    for a in range(n):
                        z += np.exp((sign * nd.value[c0 + a] / util_scale - vmax) / prior_temp)
                for a in range(s0, s0 + n):
                    mean = sl.q_sum[a] / cnt
                    var = (sl.q_sqsum[a] + 2.0) / cnt - mean * mean
                    if var < 0.0:
                        var = 0.0
                    weight = 1.0
                    if prior_temp > 0.0:
                        v = sign * nd.value[c0 + a - s0] / util_scale
                        weight = n * np.exp((v - vmax) / prior_temp) / z
                    qb = (sl.q[a] / util_scale
                          + puct_c * weight * var * root_n / (1.0 + sl.n_visits[a]))
                    if qb > best:
                        best = qb
                        arg = a
                k = arg
            else:
                k = _uniform_support(strat, s0, n, rng)
            sl.n_visits[k] += 1
        else:
            k = _sample(strat, s0, n, rng)
        h = c0 + (k - s0)


@njit(cache=True, nogil=True)
def _select_batch_kernel(
    count: int,
    step0: int,
    searcher: int,
    two_sided: bool,
    puct_c: float,
    explore_mix: float,
    util_scale: float,
    prior_temp: float,
    nd: NodeArrays,
    inf: InfosetArrays,
    sl: SlotArrays,
    rt: RootArrays,
    meta: np.ndarray,
    rng: np.ndarray,
    out: np.ndarray,
) -> int:
    """`count` walks, the explorer alternating searcher / opponent from step `step0` (Fig. 12
    lines 3-4); claimed leaves go to out (int32[>= count]). Returns how many were claimed."""
    k = 0
    for i in range(count):
        explorer = searcher if (step0 + i) % 2 == 0 else 1 - searcher
        h = _select_kernel(explorer, two_sided, puct_c, explore_mix, util_scale, prior_temp, nd,
                           inf, sl, rt, meta, rng)
        if h >= 0:
            out[k] = h
            k += 1
    return k
