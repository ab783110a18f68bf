"""Match statistics against numbers worked out by hand from fishtest's formulas.

Sources: official-stockfish/fishtest `server/fishtest/stats/stat_util.py` (`stats`, `get_elo`:
logistic Elo, its 95% interval and LOS), `LLRcalc.py` (`regularize`, `results_to_pdf`,
`LLR_alt2`, `LLR_logistic` through `MLE_expected`, `LLR_normalized` through `MLE_t_value`,
`nelo_divided_by_nt = 800/ln 10`) and `sprt.py` (bounds ln(beta/(1-alpha)), ln((1-beta)/alpha));
docs/design.md, "Matches" for Obscuro's 834/33/133 against ZS21 (+302 Elo, 95% CI about [+274,
+333]); Obscuro, section 4 for the exact binomial p = 0.0118 of 16 wins in 20 games.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize

from caligo.play.errors import MatchConfigError
from caligo.play.stats import (
    MAX_SPRT_ELO,
    EloModel,
    SprtConfig,
    SprtDecision,
    Tally,
    binomial_p,
    elo_estimate,
    elo_from_score,
    empirical,
    llr_alt2,
    llr_logistic,
    llr_normalized,
    mle_with_mean,
    mle_with_t,
    score_from_elo,
    sprt,
)

PENTA = [5, 10, 20, 30, 35]
"""100 pairs; hand computation below."""


def test_obscuro_against_zs21_published_interval() -> None:
    # [L, D, W] = [133, 33, 834]: s = (834 + 33/2)/1000 = 0.8505, Elo = -400 log10(1/s - 1)
    e = elo_estimate([133, 33, 834])
    assert e.score == pytest.approx(0.8505)
    assert e.elo == pytest.approx(302.0, abs=0.1)
    assert (round(e.elo_low), round(e.elo_high)) == (274, 333)
    assert e.games == 1000


def test_pentanomial_elo_by_hand() -> None:
    # per game scores 0, 1/4, 1/2, 3/4, 1 with weights .05 .10 .20 .30 .35:
    mu = 0.05 * 0 + 0.10 * 0.25 + 0.20 * 0.5 + 0.30 * 0.75 + 0.35 * 1.0  # 0.70
    var = sum(
        w * (x - mu) ** 2
        for w, x in zip((0.05, 0.1, 0.2, 0.3, 0.35), (0, 0.25, 0.5, 0.75, 1), strict=True)
    )  # 0.085
    assert (mu, var) == pytest.approx((0.70, 0.085))
    sigma_pg = math.sqrt(2 * var)  # per-game deviation of a pair (sprt.set_state)
    se = sigma_pg / math.sqrt(200)  # 200 games (stat_util.stats: games = N (5-1)/2)
    z = 1.959963984540054
    e = elo_estimate(PENTA)
    assert e.score == pytest.approx(0.70)
    assert e.elo == pytest.approx(-400 * math.log10(1 / 0.7 - 1))  # 147.19
    assert e.elo == pytest.approx(147.19, abs=0.01)
    assert e.elo_low == pytest.approx(-400 * math.log10(1 / (mu - z * se) - 1))  # 102.11
    assert e.elo_high == pytest.approx(-400 * math.log10(1 / (mu + z * se) - 1))  # 197.53
    assert (round(e.elo_low, 2), round(e.elo_high, 2)) == (102.11, 197.53)
    assert e.nelo == pytest.approx((mu - 0.5) / sigma_pg * 800 / math.log(10))  # 168.53
    assert e.nelo == pytest.approx(168.53, abs=0.01)
    assert e.los == pytest.approx(0.5 * math.erfc(-((mu - 0.5) / se) / math.sqrt(2)))
    assert e.games == 200


def test_zero_counts_are_regularised_like_fishtest() -> None:
    # [0, 0, 0, 0, 1] becomes [1e-3]*4 + [1] before any estimate (LLRcalc.regularize)
    n, scores, probs = empirical([0, 0, 0, 0, 1])
    assert n == pytest.approx(1.004)
    assert probs == pytest.approx(np.array([1e-3, 1e-3, 1e-3, 1e-3, 1.0]) / 1.004)
    assert elo_estimate([0, 0, 0, 0, 1]).score == pytest.approx(np.dot(scores, probs))
    assert elo_from_score(1.0) == pytest.approx(-400 * math.log10(1 / 0.999 - 1))


def test_llr_alt2_by_hand() -> None:
    s0, s1 = 0.5, 1 / (1 + 10 ** (-5 / 400))
    expected = 100 * (s1 - s0) * (2 * 0.70 - s0 - s1) / 0.085 / 2
    assert llr_alt2(PENTA, 0, 5) == pytest.approx(expected)
    assert expected == pytest.approx(1.6625, abs=1e-4)


def _mle_by_optimizer(scores: np.ndarray, probs: np.ndarray, s: float) -> np.ndarray:
    """Maximise sum p log q subject to sum q = 1, sum q a = s, with a generic solver."""
    res = scipy.optimize.minimize(
        lambda q: -float(np.dot(probs, np.log(q))),
        probs.copy(),
        constraints=[
            {"type": "eq", "fun": lambda q: q.sum() - 1},
            {"type": "eq", "fun": lambda q: np.dot(q, scores) - s},
        ],
        bounds=[(1e-12, 1)] * len(probs),
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert res.success
    return np.asarray(res.x)


@pytest.mark.parametrize(
    ("results", "elo0", "elo1"),
    [(PENTA, 0, 5), ([3, 5, 8, 5, 3], 0, 50), ([15, 10, 4, 2, 1], -50, 0), ([30, 20, 50], 0, 20)],
)
def test_exact_llr_equals_an_independent_maximum_likelihood(
    results: list[int], elo0: float, elo1: float
) -> None:
    n, scores, probs = empirical(results)
    q0 = _mle_by_optimizer(scores, probs, score_from_elo(elo0))
    q1 = _mle_by_optimizer(scores, probs, score_from_elo(elo1))
    expected = n * float(np.dot(probs, np.log(q1) - np.log(q0)))
    assert llr_logistic(results, elo0, elo1) == pytest.approx(expected, rel=1e-5, abs=1e-7)
    mle = mle_with_mean(scores, probs, score_from_elo(elo1))
    assert mle.sum() == pytest.approx(1.0)
    assert np.dot(mle, scores) == pytest.approx(score_from_elo(elo1))


def test_normalized_llr_hits_the_t_value() -> None:
    n, scores, probs = empirical(PENTA)
    t = 10 / (800 / math.log(10)) * math.sqrt(2)  # nelo 10 for pairs (LLR_normalized)
    q = mle_with_t(scores, probs, 0.5, t)
    mu = float(np.dot(q, scores))
    sigma = math.sqrt(float(np.dot(q, (scores - mu) ** 2)))
    assert q.sum() == pytest.approx(1.0)
    assert (mu - 0.5) / sigma == pytest.approx(t, rel=1e-5)
    # the MLE at the empirical t-value is the empirical distribution: LLR against it is 0
    mu_hat = float(np.dot(probs, scores))
    t_hat = (mu_hat - 0.5) / math.sqrt(float(np.dot(probs, (scores - mu_hat) ** 2)))
    assert mle_with_t(scores, probs, 0.5, t_hat) == pytest.approx(probs, abs=1e-6)
    nelo_hat = t_hat / math.sqrt(2) * 800 / math.log(10)
    assert llr_normalized(PENTA, 0.0, nelo_hat) > llr_normalized(PENTA, 0.0, nelo_hat / 2) > 0
    assert n == 100


def test_sprt_bounds_and_decisions() -> None:
    cfg = SprtConfig(0, 10)
    a, b = cfg.bounds
    assert a == pytest.approx(math.log(0.05 / 0.95))  # -2.944
    assert b == pytest.approx(math.log(0.95 / 0.05))
    assert sprt([3, 5, 8, 5, 3], cfg).decision is SprtDecision.CONTINUE
    # the LLR grows with the sample: 100 pairs at 70% are not enough for [0, 10], 200 are
    assert sprt(PENTA, cfg).decision is SprtDecision.CONTINUE
    assert sprt([2 * c for c in PENTA], cfg).llr == pytest.approx(2 * sprt(PENTA, cfg).llr)
    assert sprt([2 * c for c in PENTA], cfg).decision is SprtDecision.H1
    assert sprt([70, 60, 40, 20, 10], cfg).decision is SprtDecision.H0
    norm = SprtConfig(0, 10, model=EloModel.NORMALIZED)
    assert sprt([2 * c for c in PENTA], norm).decision is SprtDecision.H1


def test_sprt_parse() -> None:
    cfg = SprtConfig.parse("elo0=0,elo1=10,alpha=0.1,beta=0.2,model=normalized")
    assert cfg == SprtConfig(0, 10, 0.1, 0.2, EloModel.NORMALIZED)
    assert SprtConfig.parse(str(cfg)) == cfg
    for bad in (
        "elo0=0",
        "elo0=5,elo1=1",
        "elo0=0,elo1=5,gamma=1",
        "elo0=x,elo1=5",
        "elo0=0,elo1=5,alpha=0.9",
    ):
        with pytest.raises(MatchConfigError, match="SPRT"):
            SprtConfig.parse(bad)


def test_binomial_sixteen_of_twenty() -> None:
    # Obscuro, section 4: +16 =0 -4 against the top human, p = 0.0118 (exact binomial test)
    assert round(binomial_p(16, 4), 4) == 0.0118
    # by hand: 2 * sum_{k>=16} C(20, k) / 2^20
    by_hand = 2 * sum(math.comb(20, k) for k in range(16, 21)) / 2**20
    assert binomial_p(16, 4) == pytest.approx(by_hand)
    assert binomial_p(0, 0) == 1.0


def test_tally_pairs() -> None:
    t = Tally()
    t = t.add_pair(1.0, 1.0, 1.0, 0.0)  # WW: A won with White and with Black
    t = t.add_pair(0.5, 0.0, 0.5, 1.0)  # DL
    t = t.add_pair(1.0, 0.0, 1.0, 1.0)  # WL: White won both
    assert (t.wins, t.draws, t.losses) == (3, 1, 2)
    assert t.penta == (0, 1, 1, 0, 1)
    assert t.pairs == 3 and t.games == 6
    assert t.white_share == pytest.approx(4.5 / 6)
    assert t.trinomial == (2, 1, 3)


@pytest.mark.parametrize("spec", [
    "elo0=-1e300,elo1=0", "elo0=0,elo1=inf", "elo0=0,elo1=1001",
    "elo0=0,elo1=5000,model=normalized", "elo0=-201,elo1=0,model=normalized",
])
def test_sprt_hypotheses_past_the_models_range_are_refused(spec: str) -> None:
    """`caligo match --sprt elo0=-1e300,elo1=0` played its first pair and then died in an
    OverflowError (and normalized elo1=5000 in 'no distribution with this mean'); the spec is
    now refused when it is read, before any game."""
    with pytest.raises(MatchConfigError, match="must lie in"):
        SprtConfig.parse(spec)


@pytest.mark.parametrize("model", list(EloModel))
@pytest.mark.parametrize("penta", [[1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 9, 0, 0],
                                   [3, 1, 4, 1, 5], [0, 5, 0, 5, 0], [100, 0, 0, 0, 1]])
def test_the_widest_sprt_hypotheses_have_a_likelihood_on_any_result(
    model: EloModel, penta: list[int]
) -> None:
    """At the edge of `MAX_SPRT_ELO` the GSPRT's constrained maximum likelihood exists for
    results from one-sided to even, so a match that accepts the spec can always report it."""
    cap = MAX_SPRT_ELO[model.value]
    result = sprt(penta, SprtConfig(-cap, cap, model=model))
    assert math.isfinite(result.llr)
