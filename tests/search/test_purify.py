"""Purification, Obscuro, Fig. 8 lines 11-21 and C.8: the cases the figure distinguishes."""

from __future__ import annotations

import numpy as np
import pytest

from caligo.search.config import Purification, SearchError
from caligo.search.purify import purify


def test_resolve_purifies_completely() -> None:
    """p_max > 0 (Resolve enters somewhere): play a* only (Fig. 8 line 13)."""
    pi = np.array([0.2, 0.5, 0.3])
    out = purify(pi, np.ones(3, dtype=bool), 0.4, Purification.STABLE_TOP3)
    assert out.tolist() == [0.0, 1.0, 0.0]


def test_maxmargin_mixes_over_stable_actions_up_to_three() -> None:
    """p_max = 0: S = stable ∪ {a*}, cut to MAXSUPPORT by probability; the rest moves to a*."""
    pi = np.array([0.05, 0.4, 0.1, 0.3, 0.15])
    stable = np.array([True, False, True, True, True])
    out = purify(pi, stable, 0.0, Purification.STABLE_TOP3, max_support=3)
    # S = {1 (a*), 0, 2, 3, 4} -> top 3 by pi: {1, 3, 4}; 0.05 + 0.1 go to a* = 1
    np.testing.assert_allclose(out, [0.0, 0.55, 0.0, 0.3, 0.15])
    assert out.sum() == pytest.approx(1.0)


def test_unstable_actions_are_dropped_onto_a_star() -> None:
    pi = np.array([0.6, 0.4])
    out = purify(pi, np.array([True, False]), 0.0, Purification.STABLE_TOP3)
    assert out.tolist() == [1.0, 0.0]


def test_purification_off_and_bad_shapes() -> None:
    pi = np.array([0.6, 0.4])
    assert purify(pi, np.zeros(2, dtype=bool), 0.5, Purification.NONE).tolist() == [0.6, 0.4]
    with pytest.raises(SearchError):
        purify(pi, np.zeros(3, dtype=bool), 0.0, Purification.NONE)
