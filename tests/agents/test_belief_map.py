"""The belief picture every P-keeping agent reports (`caligo.agents.belief_map`).

Expected values and where they come from:

- the picture of a P: `caligo.fow.belief.piece_shares` of that P counted whole (itself checked
  against python-chess's `Board.piece_at` in tests/fow/test_belief.py);
- the agent's P: `caligo.fow.BeliefSet` replayed on the agent's own transcript (the referee's
  record of what it observed), not the agent's copy: P at each decision, and P after each of
  its own moves (the "prev" picture sent with its next decision);
- a sampled picture (|P| > 4,096): within 6 standard errors of the exact shares (sampling
  without replacement has at most the binomial error).
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from caligo.agents.base import TimeControl
from caligo.agents.belief_map import (
    BELIEF_MAP,
    BELIEF_MAP_PREV,
    KINDS,
    BeliefMapError,
    belief_map,
    read_belief_map,
)
from caligo.agents.random_agent import RandomAgent
from caligo.agents.registry import create
from caligo.fow.belief import PIECE_SAMPLE, BeliefSet, piece_shares
from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig
from tests.agents.test_obscuro import HAVE_SF


def dense(picture: dict[str, Any]) -> np.ndarray:
    """A picture's counts as int64 (6, 64) (kinds pawn .. king, squares a1 .. h8)."""
    out = np.zeros((6, 64), dtype=np.int64)
    for k, letter in enumerate(KINDS):
        for name, n in picture["counts"][letter].items():
            out[k, SQUARE_NAMES.index(name)] = n
    return out


def check_picture(picture: dict[str, Any], ref: BeliefSet) -> bool:
    """`picture` describes `ref`: same ply, size and colour; exactly its counts when it holds
    at most PIECE_SAMPLE positions, else a sample within 6 standard errors. Return True when
    the picture was exact."""
    assert read_belief_map(picture) == picture  # the shape the reveal accepts, nothing dropped
    assert picture["ply"] == ref.ply and picture["size"] == len(ref)
    assert picture["color"] == ("black" if int(ref.player) == 0 else "white")
    whole = piece_shares(ref, max(len(ref), 1))
    got = dense(picture)
    if len(ref) <= PIECE_SAMPLE:
        assert picture["sample"] == len(ref)
        assert np.array_equal(got, whole.counts)
        return True
    assert picture["sample"] == PIECE_SAMPLE
    exact = whole.shares
    sigma = np.sqrt(exact * (1 - exact) / PIECE_SAMPLE) + 1e-12
    assert np.all(np.abs(got / PIECE_SAMPLE - exact) <= 6 * sigma)
    return False


def check_game(session: GameSession, me: int) -> tuple[int, int]:
    """Replay `me`'s P along the game and check both pictures of every decision; return
    (pictures checked, of which exact)."""
    ref = BeliefSet.initial(me, session.config.start_fen)
    after_own: BeliefSet | None = None
    truth = Game(session.config.start_fen)
    checked = exact = 0
    for ply in session.plies:
        if ply.mover == me:
            assert ply.decision is not None
            info = ply.decision.info
            json.dumps(info)
            exact += check_picture(info[BELIEF_MAP], ref)
            checked += 1
            if after_own is None:
                assert BELIEF_MAP_PREV not in info  # nothing before its first own move
            else:
                exact += check_picture(info[BELIEF_MAP_PREV], after_own)
                checked += 1
        truth.push(ply.move)
        obs = observe(truth.position, me)
        if ply.mover == me:
            ref = after_own = ref.update_own_move(ply.move, obs)
        else:
            ref = ref.update_opponent_move(obs)
    return checked, exact


def _session(agent: Any, seed: int, white: bool) -> GameSession:
    config = SessionConfig(f"bm-{seed}", seeds=(seed, seed + 1000),
                           time_controls=(TimeControl(), TimeControl()))
    session = GameSession(config)
    pair = (agent, RandomAgent(seed=4)) if white else (RandomAgent(seed=4), agent)
    play_game(session, pair)
    assert session.end is not None and session.end.reason not in (
        EndReason.ILLEGAL_MOVE, EndReason.CRASH, EndReason.TIME_FORFEIT), session.end
    return session


@pytest.mark.parametrize("spec", [
    "obscuro:budget=iters=20,eval=simple",
    "zs21:evaluator=simple,budget=iters=20",
    pytest.param("stockfish-pi:depth=2",
                 marks=pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not "
                                          "installed")),
])
def test_agents_picture_their_p_at_the_decision_and_after_their_move(spec: str) -> None:
    agent = create(spec)
    checked = exact = 0
    try:
        for seed, white in ((21, False), (5, True)):
            c, e = check_game(_session(agent, seed, white), 0 if white else 1)
            checked, exact = checked + c, exact + e
    finally:
        agent.close()
    assert checked >= 12 and exact >= 6


def test_a_picture_samples_a_large_p() -> None:
    """A P of more than 4,096 positions is pictured from a uniform sample of 4,096 (6 standard
    errors from the exact shares), with the size of P and the sample said."""
    rng = random.Random(10)
    ref = BeliefSet.initial(1)
    truth = Game()
    while len(ref) <= PIECE_SAMPLE and truth.ply < 30:
        truth.push(rng.choice(truth.legal_moves()))
        obs = observe(truth.position, 1)
        ref = (ref.update_opponent_move(obs) if truth.ply % 2 else
               ref.update_own_move(truth.moves[-1], obs))
    assert len(ref) > PIECE_SAMPLE and ref.exact
    picture = belief_map(ref)
    assert check_picture(picture, ref) is False
    assert picture == belief_map(ref)  # seeded by P's config and ply: the same picture again
    assert sum(picture["counts"]["k"].values()) == PIECE_SAMPLE  # one king in each position
    assert len(json.dumps(picture)) < 8_000  # compact: sparse, integers


def _good() -> dict[str, Any]:
    return belief_map(BeliefSet.initial(0))


@pytest.mark.parametrize(("change", "field"), [
    ({"sample": 0}, "'sample'"),
    ({"sample": True}, "'sample'"),
    ({"size": 0}, "'size'"),  # smaller than the sample
    ({"ply": -1}, "'ply'"),
    ({"ply": 1.5}, "'ply'"),
    ({"color": "red"}, "'color'"),
    ({"size_kind": "guess"}, "'size_kind'"),
    ({"exact": "yes"}, "'exact'"),
    ({"counts": []}, "'counts'"),
    ({"counts": {"x": {}}}, "'counts'"),
    ({"counts": {"p": []}}, "counts\\['p'\\]"),
    ({"counts": {"p": {"i9": 1}}}, "'i9'"),
    ({"counts": {"p": {"e4": 2}}}, "\\['e4'\\]"),  # more than the sample of 1
    ({"counts": {"p": {"e4": -1}}}, "\\['e4'\\]"),
    ({"counts": {"p": {"e4": 1}, "n": {"e4": 1}}}, "'e4'"),  # two pieces on one square
])
def test_read_belief_map_names_the_bad_field(change: dict[str, Any], field: str) -> None:
    bad = {**_good(), **change}
    with pytest.raises(BeliefMapError, match=field):
        read_belief_map(bad)


def test_read_belief_map_keeps_a_good_map_and_drops_zero_counts() -> None:
    good = _good()
    assert read_belief_map(good) == good
    assert good["counts"]["k"] == {"e8": 1} and good["sample"] == good["size"] == 1
    padded = json.loads(json.dumps(good))
    padded["counts"]["q"]["a1"] = 0
    del padded["counts"]["b"]
    back = read_belief_map(padded)
    assert back["counts"]["q"] == {"d8": 1} and back["counts"]["b"] == {}
    with pytest.raises(BeliefMapError, match="object"):
        read_belief_map([1, 2])
