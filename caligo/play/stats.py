"""Match statistics: W-D-L, pentanomial pairs, logistic and normalized Elo, LOS, GSPRT, binomial.

Formulas follow fishtest (official-stockfish/fishtest, `server/fishtest/stats/`), written anew
with numpy and scipy (not copied):

- results are counts ordered from worst to best for engine A: trinomial ``[L, D, W]`` or
  pentanomial ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]`` (one count per colour-swapped pair); a count
  of 0 is replaced by 1e-3 before any estimate (`LLRcalc.regularize`);
- the empirical distribution puts the score i/(k-1) on bin i (per game, a pair's mean);
- logistic Elo = -400 log10(1/s - 1) of the mean score s, clamped to [1e-3, 1 - 1e-3]; the 95%
  interval maps mu -/+ 1.96 sigma/sqrt(games) through it and LOS = Phi((mu - 1/2) /
  (sigma/sqrt(games))), with sigma the per-game deviation (`stat_util.stats`, `get_elo`);
- normalized Elo = (mu - 1/2) / sigma_pg * 800/ln 10, sigma_pg the per-game deviation (for
  pairs sqrt(2 var) of the pair mean: `LLRcalc.nelo_divided_by_nt`, `sprt.set_state`);
- the GSPRT log-likelihood ratio is N times the mean log ratio of the two maximum-likelihood
  distributions with expected score s0 and s1, each found by solving the secular equation
  sum p_i (a_i - s) / (1 + x (a_i - s)) = 0 with `scipy.optimize.brentq` (`LLRcalc.LLR_logistic`,
  `MLE_expected`, `secular`); for normalized Elo the constraint is a t-value instead of a mean
  (`LLR_normalized`, `MLE_t_value`); the bounds are a = ln(beta/(1-alpha)) and
  b = ln((1-beta)/alpha) (`sprt.py`), and fishtest's Brownian approximation `LLR_alt2`
  is offered for comparison;
- small matches get an exact two-sided binomial test on wins against losses
  (`scipy.stats.binomtest`), as Obscuro, section 4 reports p = 0.0118 for 16 wins in 20 games.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import scipy.optimize
import scipy.stats

from caligo.play.errors import MatchConfigError

NELO_PER_NT = 800.0 / math.log(10.0)
"""Normalized Elo per unit of t-value (fishtest `nelo_divided_by_nt`, 347.4355855...)."""
_EPSILON = 1e-3


def elo_from_score(score: float) -> float:
    """Logistic Elo of an expected score, clamped to [1e-3, 1 - 1e-3] (fishtest `elo`)."""
    s = min(max(score, _EPSILON), 1.0 - _EPSILON)
    return -400.0 * math.log10(1.0 / s - 1.0)


def score_from_elo(elo: float) -> float:
    """Expected score of a logistic Elo difference (fishtest `L`)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def _counts(results: Sequence[float]) -> np.ndarray:
    counts = np.asarray(results, dtype=np.float64)
    if counts.ndim != 1 or counts.size not in (3, 5) or np.any(counts < 0):
        raise ValueError(f"results must be 3 or 5 non-negative counts, got {list(results)!r}")
    if counts.sum() <= 0:
        raise ValueError(f"no results: {list(results)!r}")
    return counts


def regularize(results: Sequence[float]) -> np.ndarray:
    """Replace zero counts by 1e-3 (fishtest `LLRcalc.regularize`)."""
    counts = _counts(results).copy()
    counts[counts == 0] = _EPSILON
    return counts


def empirical(results: Sequence[float]) -> tuple[float, np.ndarray, np.ndarray]:
    """Return (N, scores, probabilities) of the regularised results (`results_to_pdf`)."""
    counts = regularize(results)
    n = float(counts.sum())
    scores = np.arange(counts.size, dtype=np.float64) / (counts.size - 1)
    return n, scores, counts / n


def _mean_var(scores: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    mu = float(np.dot(probs, scores))
    return mu, float(np.dot(probs, (scores - mu) ** 2))


@dataclass(frozen=True)
class EloEstimate:
    """An Elo estimate with its 95% interval; `los` is the likelihood of superiority."""

    score: float
    elo: float
    elo_low: float
    elo_high: float
    nelo: float
    nelo_low: float
    nelo_high: float
    los: float
    games: int

    @property
    def elo_error(self) -> float:
        """Half the width of the logistic interval (fishtest's "+/-")."""
        return (self.elo_high - self.elo_low) / 2.0


def elo_estimate(results: Sequence[float], level: float = 0.95) -> EloEstimate:
    """Logistic and normalized Elo with `level` intervals and LOS (fishtest `get_elo`)."""
    raw = _counts(results)
    n, scores, probs = empirical(results)
    mu, var = _mean_var(scores, probs)
    per_game = 1 if raw.size == 3 else 2
    games = n * per_game
    sigma_pg = math.sqrt(var * per_game)  # per-game deviation (pairs: sqrt(2 var))
    se = sigma_pg / math.sqrt(games)
    z = float(scipy.stats.norm.ppf(0.5 + level / 2.0))
    lo, hi = mu - z * se, mu + z * se
    nelo_se = z * se / sigma_pg * NELO_PER_NT
    nelo = (mu - 0.5) / sigma_pg * NELO_PER_NT
    return EloEstimate(
        score=mu,
        elo=elo_from_score(mu),
        elo_low=elo_from_score(lo),
        elo_high=elo_from_score(hi),
        nelo=nelo,
        nelo_low=nelo - nelo_se,
        nelo_high=nelo + nelo_se,
        los=float(scipy.stats.norm.cdf((mu - 0.5) / se)),
        games=round(float(raw.sum()) * per_game),
    )


# --- GSPRT -----------------------------------------------------------------------------------


def _secular(a: np.ndarray, p: np.ndarray) -> float:
    """Solve sum_i p_i a_i / (1 + x a_i) = 0 for x (fishtest `secular`); needs min a < 0 < max a."""
    lo, hi = float(a.min()), float(a.max())
    if not lo < 0.0 < hi:
        raise ValueError(f"no distribution with this mean: offsets {a.tolist()!r}")
    eps = 1e-9
    return float(
        scipy.optimize.brentq(
            lambda x: float(np.sum(p * a / (1.0 + x * a))), -1.0 / hi + eps, -1.0 / lo - eps
        )
    )


def mle_with_mean(scores: np.ndarray, probs: np.ndarray, s: float) -> np.ndarray:
    """The distribution on `scores` closest (max likelihood) to `probs` with mean `s`."""
    x = _secular(scores - s, probs)
    return probs / (1.0 + x * (scores - s))


def mle_with_t(scores: np.ndarray, probs: np.ndarray, ref: float, t: float) -> np.ndarray:
    """The max-likelihood distribution with t-value (mu - ref)/sigma = t (`MLE_t_value`)."""
    q = np.full_like(probs, 1.0 / probs.size)
    for _ in range(10):
        mu, var = _mean_var(scores, q)
        sigma = math.sqrt(var)
        a = scores - ref - t * sigma * (1.0 + ((mu - scores) / sigma) ** 2) / 2.0
        x = _secular(a, probs)
        new = probs / (1.0 + x * a)
        done = float(np.max(np.abs(new - q))) < 1e-9
        q = new
        if done:
            break
    return q


def llr_logistic(results: Sequence[float], elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio of elo1 against elo0 in logistic Elo (`LLR_logistic`)."""
    n, scores, probs = empirical(results)
    p0 = mle_with_mean(scores, probs, score_from_elo(elo0))
    p1 = mle_with_mean(scores, probs, score_from_elo(elo1))
    return n * float(np.dot(probs, np.log(p1) - np.log(p0)))


def llr_normalized(results: Sequence[float], nelo0: float, nelo1: float) -> float:
    """GSPRT log-likelihood ratio in normalized Elo (`LLR_normalized`, t-value statistic)."""
    n, scores, probs = empirical(results)
    scale = 1.0 if len(results) == 3 else math.sqrt(2.0)
    t0, t1 = (nelo / NELO_PER_NT * scale for nelo in (nelo0, nelo1))
    p0 = mle_with_t(scores, probs, 0.5, t0)
    p1 = mle_with_t(scores, probs, 0.5, t1)
    return n * float(np.dot(probs, np.log(p1) - np.log(p0)))


def llr_alt2(results: Sequence[float], elo0: float, elo1: float) -> float:
    """fishtest's Brownian approximation N (s1-s0)(2 mu - s0 - s1) / (2 var) (`LLR_alt2`)."""
    n, scores, probs = empirical(results)
    mu, var = _mean_var(scores, probs)
    s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
    return n * (s1 - s0) * (2.0 * mu - s0 - s1) / var / 2.0


class EloModel(Enum):
    """The Elo scale of SPRT bounds."""

    LOGISTIC = "logistic"
    NORMALIZED = "normalized"


class SprtDecision(Enum):
    """Where the test stands."""

    CONTINUE = "continue"
    H0 = "H0 accepted"
    H1 = "H1 accepted"


_SPRT_KEYS = {"elo0", "elo1", "alpha", "beta", "model"}
MAX_SPRT_ELO = {"logistic": 1000.0, "normalized": 200.0}
"""The widest hypotheses an SPRT takes, by model: logistic +-1,000 Elo is a score of 0.3% or
99.7%; past about +-230 normalized Elo no pentanomial distribution has the hypothesis's
t-value, so the likelihood under it does not exist (the GSPRT's maximum-likelihood step)."""


@dataclass(frozen=True)
class SprtConfig:
    """SPRT hypotheses elo0 < elo1 (in `model` Elo) and error rates alpha, beta."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: EloModel = EloModel.LOGISTIC

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise MatchConfigError(f"SPRT needs elo0 < elo1, got {self.elo0} and {self.elo1}")
        cap = MAX_SPRT_ELO[self.model.value]
        if not (-cap <= self.elo0 and self.elo1 <= cap):
            raise MatchConfigError(f"SPRT {self.model.value} Elo must lie in [-{cap:g}, {cap:g}], "
                                   f"got elo0={self.elo0} and elo1={self.elo1}")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                raise MatchConfigError(f"SPRT {name} must be in (0, 0.5), got {value}")

    @property
    def bounds(self) -> tuple[float, float]:
        """(a, b) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha)) (fishtest `sprt.py`)."""
        return (
            math.log(self.beta / (1.0 - self.alpha)),
            math.log((1.0 - self.beta) / self.alpha),
        )

    @classmethod
    def parse(cls, text: str) -> SprtConfig:
        """Parse ``elo0=0,elo1=10[,alpha=0.05][,beta=0.05][,model=logistic|normalized]``."""
        fields: dict[str, str] = {}
        for item in text.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in _SPRT_KEYS or key in fields:
                raise MatchConfigError(
                    f"invalid SPRT spec {text!r}: bad item {item!r} "
                    "(want elo0=..,elo1=..[,alpha=..][,beta=..][,model=logistic|normalized])"
                )
            fields[key] = value.strip()
        if "elo0" not in fields or "elo1" not in fields:
            raise MatchConfigError(f"invalid SPRT spec {text!r}: elo0 and elo1 are required")
        try:
            model = EloModel(fields.get("model", "logistic"))
            return cls(
                float(fields["elo0"]),
                float(fields["elo1"]),
                float(fields.get("alpha", 0.05)),
                float(fields.get("beta", 0.05)),
                model,
            )
        except ValueError as exc:
            raise MatchConfigError(f"invalid SPRT spec {text!r}: {exc}") from None

    def __str__(self) -> str:
        return (
            f"elo0={self.elo0:g},elo1={self.elo1:g},alpha={self.alpha:g},"
            f"beta={self.beta:g},model={self.model.value}"
        )


@dataclass(frozen=True)
class SprtResult:
    """The LLR, its bounds and the decision."""

    llr: float
    lower: float
    upper: float
    decision: SprtDecision


@dataclass(frozen=True)
class SprtCrossing:
    """Where a sequential test decided: the pairs counted and the LLR when it first left its
    bounds. Pairs already being played then are still counted and may move the LLR back
    inside, but the test's decision is the crossing's (Fishtest, too, decides a test where
    its LLR first crosses a bound)."""

    pairs: int
    llr: float
    decision: SprtDecision

    def to_dict(self) -> dict[str, float]:
        """The "crossed" entry of a result's "sprt" (what `caligo.play.continuation` reads)."""
        return {"pairs": self.pairs, "llr": self.llr}


def sprt(results: Sequence[float], config: SprtConfig) -> SprtResult:
    """Evaluate the GSPRT on `results` (pentanomial recommended)."""
    if config.model is EloModel.LOGISTIC:
        llr = llr_logistic(results, config.elo0, config.elo1)
    else:
        llr = llr_normalized(results, config.elo0, config.elo1)
    a, b = config.bounds
    decision = SprtDecision.CONTINUE
    if llr <= a:
        decision = SprtDecision.H0
    elif llr >= b:
        decision = SprtDecision.H1
    return SprtResult(llr, a, b, decision)


def binomial_p(wins: int, losses: int) -> float:
    """Exact two-sided binomial p-value of `wins` against `losses` (draws left out)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return float(scipy.stats.binomtest(wins, n, 0.5, alternative="two-sided").pvalue)


# --- tallies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    """Results of engine A against B: W-D-L, pentanomial pair counts, White's points."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    penta: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    white_points: float = 0.0
    """Points scored by the side with the white pieces, whoever it was."""

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def pairs(self) -> int:
        return sum(self.penta)

    @property
    def trinomial(self) -> tuple[int, int, int]:
        """[L, D, W] as fishtest orders them."""
        return (self.losses, self.draws, self.wins)

    @property
    def white_share(self) -> float:
        """White's score fraction (Obscuro, appendix E.3: 57.5% in Obscuro self-play)."""
        return self.white_points / self.games if self.games else float("nan")

    def add_pair(
        self, first: float, second: float, white_first: float, white_second: float
    ) -> Tally:
        """Add a pair: A's scores in its two games and White's scores in them."""
        wins, draws, losses = self.wins, self.draws, self.losses
        for s in (first, second):
            if s == 1.0:
                wins += 1
            elif s == 0.5:
                draws += 1
            else:
                losses += 1
        penta = list(self.penta)
        penta[round((first + second) * 2)] += 1
        return Tally(
            wins,
            draws,
            losses,
            (penta[0], penta[1], penta[2], penta[3], penta[4]),
            self.white_points + white_first + white_second,
        )


__all__ = [
    "NELO_PER_NT",
    "EloEstimate",
    "EloModel",
    "SprtConfig",
    "SprtCrossing",
    "SprtDecision",
    "SprtResult",
    "Tally",
    "binomial_p",
    "elo_estimate",
    "elo_from_score",
    "empirical",
    "llr_alt2",
    "llr_logistic",
    "llr_normalized",
    "mle_with_mean",
    "mle_with_t",
    "regularize",
    "score_from_elo",
    "sprt",
]
