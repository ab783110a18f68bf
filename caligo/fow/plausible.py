"""Which positions of P are likely the truth: a model fitted on played games.

Obscuro samples the subgame's new roots from P uniformly (Obscuro, Fig. 9 line 11): every
position consistent with the observations counts the same. A player does not guess so: a
knight last seen on f6 two moves ago is probably still near f6, and P, which holds every
placement the observations allow, holds far more positions where it went somewhere else.

`THETA` scores a position x of P by the opponent's pieces standing on their last-known
squares (`caligo.fow.last_seen.LastSeen.hints`): log w(x) = sum over the hints that x keeps of
theta[piece type, age bin of the sighting]. It is a conditional logit (McFadden, "Conditional
logit analysis of qualitative choice behavior", 1973): the truth is one of P's positions,
chosen with probability w(x) / sum of w over P. `fit` finds theta by maximum likelihood on
recorded games (`collect`: at every decision from ply 10 where the player's P is exact and
small enough to list), and `score` says how much it helps on games not used for the fit: the
mean log-likelihood of the truth against uniform (nats; log |P| is the uniform's loss), and
how often the truth would be among 256 roots drawn by weight rather than uniformly.

`caligo fow plausible PGN...` runs both and prints the table; `FowBelief.sample` draws roots
with these weights when asked (`obscuro:sample=last_seen`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.errors import FowError
from caligo.fow.last_seen import STAY, LastSeen, plies
from caligo.fow.position import Position
from caligo.fow.reseed import Hint, unseen_material

__all__ = ["BINS", "FEATURES", "THETA", "Decision", "collect", "features", "fit", "hint_bins",
           "log_weights", "score"]

BINS = len(STAY[0])
FEATURES = 6 * BINS
"""Features of a position: per opponent piece type and age bin of the sighting (as `STAY`),
how many of its hints the position keeps."""

THETA: tuple[tuple[float, ...], ...] = (
    (0.46, 0.36, 0.17, 0.25, 0.38, 0.49),  # pawn
    (0.71, -1.81, -2.29, -1.96, -0.96, -0.50),  # knight
    (0.21, -1.65, -2.28, -2.10, -1.60, -1.20),  # bishop
    (0.25, -0.40, -1.37, -1.45, -1.32, -1.03),  # rook
    (-0.07, 1.09, 0.58, 0.26, 0.12, 0.01),  # queen
    (0.45, -0.99, -1.93, -2.07, -2.12, -1.34),  # king
)
"""The fitted log weights (row: pawn to king; column: the sighting's age bin, as `STAY`), by
`caligo fow plausible --stride 3 --holdout 4` on every third of the engine's games against
itself in docs/strength (463 games: the ablation, carry-over, PUCT prior, safe preset, redraw,
time-doubling and static-exchange matches): 15,290 decisions fitted. On the 4,844 decisions of
the 115 games held out, the truth's log-likelihood is -5.23 against the uniform draw's -5.66
(0.44 nats better), and 256 roots drawn by weight would hold the truth 62.0% of the time
against 55.6%. A piece on the square where it was seen is likelier than P's uniform draw says
for pawns and a queen seen 4 to 11 moves ago, and unlikelier for the knights, bishops, rooks
and the king seen more than 4 moves ago."""


def features(positions: np.ndarray, player: int, hints: Sequence[Hint],
             bins: Sequence[int]) -> np.ndarray:
    """float64 (n, FEATURES): for positions uint64 (n, 16) of `player`'s P, the count of the
    hints (type t, square; `bins`: each hint's age bin b) the position keeps, in column
    t * BINS + b."""
    them = 1 - int(player)
    out = np.zeros((positions.shape[0], FEATURES), dtype=np.float64)
    for (t, sq, _), b in zip(hints, bins, strict=True):
        out[:, t * BINS + b] += (positions[:, them * 6 + t] >> np.uint64(sq)) & np.uint64(1)
    return out


def log_weights(positions: np.ndarray, player: int, hints: Sequence[Hint],
                bins: Sequence[int], theta: np.ndarray | None = None) -> np.ndarray:
    """float64 (n,): log w(x) of each position (module docstring; `theta`, default
    `THETA`, FEATURES values)."""
    th = np.asarray(THETA if theta is None else theta, dtype=np.float64).reshape(FEATURES)
    return features(positions, player, hints, bins) @ th


@dataclass(frozen=True)
class Decision:
    """One decision of `collect`: the truth's features (FEATURES,), the distinct feature
    rows of P (k, FEATURES) with how many positions have each (k,), and |P|."""

    truth: np.ndarray
    rows: np.ndarray
    counts: np.ndarray
    size: int


def hint_bins(seen: LastSeen, hints: Sequence[Hint]) -> list[int]:
    """The age bin of each hint's sighting (`LastSeen.age_bin`)."""
    return [seen.age_bin(sq) for _, sq, _ in hints]


def collect(games: Iterable[tuple[str, Sequence[int]]], first_ply: int = 10,
            cap: int = 100_000) -> Iterator[Decision]:
    """Every decision of whole games (start FEN, FoW move codes) from `first_ply` on where
    the player to move's P is exact with at most `cap` positions and more than one; P is
    followed while it stays exact (past the cap a seat's P is dropped for the rest of its
    game)."""
    bel: list[BeliefSet | None] = [None, None]
    last = -1  # the previous ply's move
    for ply in plies(games):
        pos, obs, me = ply.pos, ply.obs, int(ply.pos.turn)
        for p in (0, 1):  # P after the previous ply (the mover was the other player)
            b = bel[p]
            if ply.index == 0:
                b = BeliefSet.initial(p, pos, BeliefConfig(max_positions=cap))
            elif b is not None:
                try:
                    b = (b.update_own_move(last, obs[p]) if p != me
                         else b.update_opponent_move(obs[p]))
                except FowError:
                    b = None
            bel[p] = b if b is not None and b.exact else None
        last = ply.move
        cur = bel[me]
        if ply.index >= first_ply and cur is not None and len(cur) > 1:
            seen = ply.seen[me]
            hints = seen.hints(obs[me], unseen_material(obs[me], _material(pos, me)))
            if hints:
                yield _decision(pos.arr, cur, hints, hint_bins(seen, hints))


def _material(pos: Position, me: int) -> list[int]:
    """The opponent's pieces, a count per type (the truth's: the player knows what it took)."""
    them = 1 - me
    return [int(pos.arr[them * 6 + t]).bit_count() for t in range(6)]


def _decision(truth: np.ndarray, bel: BeliefSet, hints: Sequence[Hint],
              bins: Sequence[int]) -> Decision:
    player = int(bel.player)
    f = features(bel.positions(), player, hints, bins)
    rows, counts = np.unique(f, axis=0, return_counts=True)
    return Decision(features(truth[None, :], player, hints, bins)[0], rows,
                    counts.astype(np.float64), len(bel))


def _loss(theta: np.ndarray, data: Sequence[Decision], l2: float) -> tuple[float, np.ndarray]:
    """The negative log-likelihood of the truths (and an L2 penalty) and its gradient."""
    loss = 0.5 * l2 * float(theta @ theta)
    grad = l2 * theta
    for d in data:
        z = d.rows @ theta + np.log(d.counts)
        top = float(z.max())
        p = np.exp(z - top)
        s = float(p.sum())
        loss += top + np.log(s) - float(d.truth @ theta)
        grad = grad + (p / s) @ d.rows - d.truth
    return loss, grad


def fit(data: Sequence[Decision], l2: float = 1.0) -> np.ndarray:
    """theta (FEATURES,) maximizing the likelihood of the truths (`_loss`, L-BFGS)."""
    from scipy.optimize import minimize

    if not data:
        raise ValueError("no decisions to fit (none of the games reached a decision from ply "
                         "10 on with an exact P small enough to list)")
    res = minimize(_loss, np.zeros(FEATURES), args=(data, l2), jac=True, method="L-BFGS-B")
    return np.asarray(res.x, dtype=np.float64)


def score(data: Sequence[Decision], theta: np.ndarray, roots: int = 256) -> dict[str, float]:
    """How the weights do on `data`: the mean log-likelihood of the truth, weighted and
    uniform (-log |P|), and the mean chance that `roots` roots drawn from P hold the truth,
    uniformly and by weight (one minus the chance that `roots` draws with replacement all
    miss it, both ways: a lower bound for draws without)."""
    ll_w = ll_u = hit_w = hit_u = 0.0
    for d in data:
        z = d.rows @ theta + np.log(d.counts)
        top = float(z.max())
        lse = top + float(np.log(np.exp(z - top).sum()))
        lw = float(d.truth @ theta) - lse
        ll_w += lw
        ll_u -= float(np.log(d.size))
        hit_w += 1.0 - (1.0 - float(np.exp(lw))) ** roots
        hit_u += 1.0 - (1.0 - 1.0 / d.size) ** roots
    n = max(len(data), 1)
    return {"decisions": float(len(data)), "loglik_weighted": ll_w / n,
            "loglik_uniform": ll_u / n, "hit_weighted": hit_w / n, "hit_uniform": hit_u / n}
