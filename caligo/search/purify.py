"""Move selection by partial purification: Obscuro, Fig. 8 lines 11-21 and appendix C.8.

    a* = argmax_a pi(a|I)                       (ties: the first action)
    if p_max = 0 (Maxmargin: the strategy is safe, mixing allowed):
        S = stable actions ∪ {a*}, cut to the MAXSUPPORT most likely
    else (Resolve in use): S = {a*}              (complete purification)
    pi_play = pi with the mass of every action outside S moved onto a*

An action is *stable* if it was in the support of the current strategy x^t at every iteration
t > T_1/2, the iteration reached at half the budget (C.8). Fig. 8 line 21 samples from pi where
pi_play is meant (docs/design.md, "One move of Obscuro's search"); `purify` returns pi_play.
`Purification.NONE` returns pi unchanged (ablation 1).
"""

from __future__ import annotations

import numpy as np

from caligo.search.config import Purification, SearchError


def purify(policy: np.ndarray, stable: np.ndarray, p_max: float, mode: Purification,
           max_support: int = 3) -> np.ndarray:
    """pi_play from pi (float64[k]), the stable mask (bool[k]) and p_max."""
    pi = np.asarray(policy, dtype=np.float64)
    st = np.asarray(stable, dtype=np.bool_)
    if pi.ndim != 1 or pi.size == 0 or st.shape != pi.shape:
        raise SearchError(f"purify needs matching 1-d policy and stable mask, got {pi.shape} "
                          f"and {st.shape}")
    if mode is Purification.NONE:
        return pi.copy()
    a_star = int(np.argmax(pi))
    keep = np.zeros(pi.size, dtype=np.bool_)
    keep[a_star] = True
    if p_max == 0.0:
        cand = np.flatnonzero(st | keep)
        if cand.size > max_support:
            order = cand[np.argsort(-pi[cand], kind="stable")]
            cand = order[:max_support]
            if a_star not in cand:  # a* is the most likely, so this only guards ties
                cand[-1] = a_star
        keep[:] = False
        keep[cand] = True
    out = np.where(keep, pi, 0.0)
    out[a_star] += float(pi[~keep].sum())
    return out
