"""Which positions of P are likely the truth (`caligo.fow.plausible`).

References: python-chess's board (`piece_at` on each position's FEN) for the features; a
simulation of the conditional logit itself (truths drawn with probability proportional to
exp(theta . f)) for the fit, which must find the theta it was drawn with; the definition of the
uniform draw (log-likelihood -log |P|) for the score; `caligo.fow.BeliefSet.contains` for the
truth being in P.
"""

from __future__ import annotations

import json
from pathlib import Path

import chess
import numpy as np
import pytest

from caligo.cli import main
from caligo.fow.game import Game
from caligo.fow.last_seen import LastSeen
from caligo.fow.notation import write_pgn
from caligo.fow.observation import observe
from caligo.fow.plausible import (
    BINS,
    FEATURES,
    THETA,
    Decision,
    collect,
    features,
    fit,
    hint_bins,
    log_weights,
    score,
)
from caligo.fow.position import STARTING_FEN, from_fen, to_fen
from caligo.fow.reseed import reseed, unseen_material
from tests.fow.test_reseed import _random_plies

_TYPES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def test_features_count_the_hints_each_position_keeps() -> None:
    """On positions redrawn from a random game's observation (Black's view), each feature
    counts the hints of its type and age bin whose square holds that white piece, as
    python-chess's board reads the position's FEN."""
    g = _random_plies(5, 30)
    seen = LastSeen(1, from_fen(STARTING_FEN))
    replay = Game()
    for move in g.moves:
        replay.push(move)
        seen.observe(observe(replay.position, 1))
    obs = observe(g.position, 1)
    material = [int(g.position[t]).bit_count() for t in range(6)]
    hints = seen.hints(obs, unseen_material(obs, material))
    assert len(hints) >= 4
    bins = hint_bins(seen, hints)
    drawn = reseed(obs, material, g.ply, draws=64, rng=np.random.default_rng(0),
                   hints=hints).positions()
    got = features(drawn, 1, hints, bins)
    for k, pos in enumerate(drawn):
        board = chess.Board(to_fen(pos))
        want = np.zeros(FEATURES)
        for (t, sq, _), b in zip(hints, bins, strict=True):
            piece = board.piece_at(sq)
            if piece is not None and piece == chess.Piece(_TYPES[t], chess.WHITE):
                want[t * BINS + b] += 1
        np.testing.assert_array_equal(got[k], want)
    assert got.sum() > 0  # some hints are kept (the draw places pieces on them by chance)
    theta = np.arange(FEATURES, dtype=np.float64)
    np.testing.assert_allclose(log_weights(drawn, 1, hints, bins, theta), got @ theta)


def _simulated(theta: np.ndarray, n: int, seed: int) -> list[Decision]:
    """Decisions whose truth is drawn from the model itself: P's distinct feature rows
    random, the truth chosen with probability counts * exp(rows . theta) / sum."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(3, 12))
        rows = rng.integers(0, 3, size=(k, FEATURES)).astype(np.float64)
        counts = rng.integers(1, 50, size=k).astype(np.float64)
        z = rows @ theta + np.log(counts)
        p = np.exp(z - z.max())
        truth = rows[rng.choice(k, p=p / p.sum())]
        out.append(Decision(truth, rows, counts, int(counts.sum())))
    return out


def test_the_fit_finds_the_theta_the_truths_were_drawn_with() -> None:
    """Maximum likelihood recovers theta from 4,000 simulated decisions (within 0.25 in
    every cell), and scores the truths better than
    theta = 0, which scores exactly as the uniform draw."""
    rng = np.random.default_rng(1)
    theta = rng.normal(0.0, 0.8, FEATURES)
    data = _simulated(theta, 4000, 2)
    got = fit(data, l2=0.0)
    assert np.max(np.abs(got - theta)) < 0.25, np.round(got - theta, 2)
    flat = score(data, np.zeros(FEATURES))
    assert flat["loglik_weighted"] == pytest.approx(flat["loglik_uniform"])
    assert flat["hit_weighted"] == pytest.approx(flat["hit_uniform"])
    fitted = score(data, got)
    assert fitted["loglik_weighted"] > flat["loglik_weighted"] + 0.1
    with pytest.raises(ValueError, match="no decisions"):
        fit([])


def test_collect_records_exact_ps_that_hold_the_truth(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """At every decision `collect` keeps, P is exact and holds the true position, so the
    truth's feature row is one of P's, and P's rows count |P| positions; the command fits and
    scores the games it is given, and refuses to score none."""
    games = [_random_plies(seed, 40) for seed in (3, 4)]
    data = list(collect([(STARTING_FEN, g.moves) for g in games], first_ply=4, cap=20_000))
    assert len(data) > 10
    for d in data:
        assert d.counts.sum() == d.size > 1
        assert np.any(np.all(d.rows == d.truth, axis=1))
    assert np.array(THETA).shape == (6, BINS)
    path = tmp_path / "g.pgn"
    path.write_text("\n".join(write_pgn(g.moves, result=g.result) for g in games),
                    encoding="utf-8")
    assert main(["fow", "plausible", str(path), "--holdout", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["games"] == 2 and len(out["theta"]) == 6
    assert out["test"]["loglik_uniform"] < 0
    assert main(["fow", "plausible", str(path), "--holdout", "2"]) == 0
    assert "held out" in capsys.readouterr().out
    # nothing held out (two games, every 4th held out): it printed a score of 0 decisions
    assert main(["fow", "plausible", str(path)]) == 2
    assert "0 held out (every 4th game): both are needed" in capsys.readouterr().err
