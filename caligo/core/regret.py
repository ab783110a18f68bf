"""One regret-minimizer step, shared by every CFR-family solver in Caligo.

The core's CFR, CFR+, DCFR and predictive CFR+ (`caligo.core.cfr`, its kernels in
`caligo.core._cfr_kernels`) and the growing-tree search's PCFR+ (`caligo.search.solver`) all
update one infoset the same way, so the arithmetic is written once, here, as a numba function
inlined into each kernel:

- fold the iteration's instantaneous regrets `inst` into the cumulative `regrets` (when the
  caller has not already): a plain sum (CFR), floored at 0 (regret matching+, CFR+; Tammelin
  2014), or with DCFR's discounts, positive regrets times t^alpha / (t^alpha + 1) and negative
  ones times t^beta / (t^beta + 1) (Brown & Sandholm 2019, "Solving Imperfect-Information Games
  via Discounted Regret Minimization", section 3);
- regret-match: the next strategy is proportional to [R]^+, or to [R + m]^+ with the prediction
  m = the last instantaneous regret (predictive regret matching+, Farina, Kroer & Sandholm 2021,
  "Faster Game Solving via Predictive Blackwell Approachability", section 5), and uniform when
  no action has a positive weight.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "REGRET_DISCOUNTED", "REGRET_PLUS", "REGRET_SUM", "fold_regret", "matched", "regret_match",
    "regret_step",
]

REGRET_SUM = 0
REGRET_PLUS = 1
REGRET_DISCOUNTED = 2


@njit(cache=True, nogil=True, inline="always")
def fold_regret(r: float, mode: int, pos_scale: float, neg_scale: float) -> float:
    """One slot's cumulative regret `r` (already summed with the instantaneous one) after the
    rule's floor or discounts (module docstring)."""
    if mode == REGRET_PLUS:
        if r < 0.0:
            r = 0.0
    elif mode == REGRET_DISCOUNTED:
        if r >= 0.0:
            r *= pos_scale
        else:
            r *= neg_scale
    return r


@njit(cache=True, nogil=True, inline="always")
def matched(r: float, m: float, total: float, predictive: bool) -> float:
    """A slot's next probability under regret matching, given `total` > 0, the sum of the
    infoset's positive parts: [r]^+ / total, or [r + m]^+ / total when `predictive`."""
    q = r + m if predictive else r
    return q / total if q > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def regret_match(regrets: np.ndarray, inst: np.ndarray, strategy: np.ndarray, off: int, n: int,
                 total: float, predictive: bool) -> None:
    """Write the next strategy over slots off .. off+n-1: proportional to [R]^+ (or [R + m]^+
    when `predictive`), uniform when `total`, the sum of those positive parts, is 0."""
    if total > 0.0:
        for a in range(n):
            strategy[off + a] = matched(regrets[off + a], inst[off + a], total, predictive)
    else:
        u = 1.0 / n
        for a in range(n):
            strategy[off + a] = u


@njit(cache=True, nogil=True, inline="always")
def regret_step(regrets: np.ndarray, inst: np.ndarray, strategy: np.ndarray, off: int, n: int,
                mode: int, pos_scale: float, neg_scale: float, predictive: bool,
                fold: bool) -> None:
    """One infoset's update over slots off .. off+n-1 (module docstring).

    regrets, inst, strategy: float64 arrays over the slots; `regrets` and `strategy` are
    written. mode: REGRET_SUM, REGRET_PLUS or REGRET_DISCOUNTED (with `pos_scale` and
    `neg_scale`, the iteration's discounts). predictive: match on regrets + inst. fold: add
    `inst` into the regrets first. A kernel that computes `inst` slot by slot calls
    `fold_regret` in that loop instead and `regret_match` (or `matched` slot by slot) after it:
    one pass fewer, the same arithmetic (the core's sequence-form step and the search's PRM+
    step do; a separate pass cost them 7 to 13% more instructions per iteration).
    """
    total = 0.0
    for a in range(n):
        r = regrets[off + a] + inst[off + a] if fold else regrets[off + a]
        r = fold_regret(r, mode, pos_scale, neg_scale)
        regrets[off + a] = r
        q = r + inst[off + a] if predictive else r
        if q > 0.0:
            total += q
    regret_match(regrets, inst, strategy, off, n, total, predictive)
