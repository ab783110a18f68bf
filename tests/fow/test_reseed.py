"""P drawn afresh from one observation (`caligo.fow.reseed`).

References: python-chess's move generator through `observe_reference` (a drawn position must
give the very observation it was drawn from), the true position of random FoW games (its
pieces and, where few placements exist, the position itself among the draws), and hand-made
positions whose forced and forbidden squares follow from the observation rules by hand.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from caligo.fow.belief import BeliefConfig
from caligo.fow.belief_update import SizeKind
from caligo.fow.game import Game
from caligo.fow.observation import observe, observe_reference
from caligo.fow.position import STARTING_FEN, from_fen, to_fen
from caligo.fow.reseed import DEADLINE_EVERY, MIN_DRAWS, ReseedError, reseed, unseen_material
from caligo.limits import Deadline
from tests.clocks import Ticker


def _material(pos: np.ndarray, them: int) -> list[int]:
    return [int(pos[them * 6 + t]).bit_count() for t in range(6)]


def _random_plies(seed: int, plies: int) -> Game:
    rng = random.Random(seed)
    g = Game()
    while not g.is_over() and g.ply < plies:
        g.push(rng.choice(g.legal_moves()))
    return g


def test_every_drawn_position_gives_the_observation_it_was_drawn_from() -> None:
    """Over random FoW games, every kept draw observes as the true position did, by
    python-chess's reference; our pieces are the truth's, the opponent's material is the
    truth's, and the set says it was redrawn."""
    checked = 0
    for seed in range(12):
        g = _random_plies(seed, 20 + 7 * seed)
        if g.is_over():
            continue
        truth = np.array(g.position, dtype=np.uint64)
        me = g.ply % 2  # the player to move, as after the opponent's ply
        obs = observe(truth, me)
        p = reseed(obs, _material(truth, 1 - me), g.ply, draws=200,
                   rng=np.random.default_rng(seed))
        assert p.size_kind is SizeKind.REDRAWN and not p.exact and len(p) > 0
        for pos in p.positions()[:25]:
            board = chess.Board(to_fen(pos))
            assert observe_reference(board, me) == obs, (seed, to_fen(pos))
            assert _material(pos, 1 - me) == _material(truth, 1 - me)
            assert all(pos[me * 6 + t] == truth[me * 6 + t] for t in range(6))
            checked += 1
    assert checked >= 100


def test_the_true_position_is_among_the_draws_when_few_placements_exist() -> None:
    """With one enemy piece unseen there are at most 64 placements: 1,024 draws meet each
    (the chance of missing one is below 1e-6), so the true placement must be among them."""
    found = 0
    for seed in range(400):
        g = _random_plies(seed, 200)
        if g.is_over():
            continue
        truth = np.array(g.position, dtype=np.uint64)
        me = g.ply % 2
        obs = observe(truth, me)
        them = 1 - me
        if sum(unseen_material(obs, _material(truth, them))) != 1:
            continue
        p = reseed(obs, _material(truth, them), g.ply, draws=1024,
                   rng=np.random.default_rng(seed))
        boards = {tuple(int(w) for w in pos[:12]) for pos in p.positions()}
        assert tuple(int(w) for w in truth[:12]) in boards, to_fen(truth)
        found += 1
        if found == 5:
            break
    assert found == 5, "fewer than 5 random games left one enemy piece unseen"


def test_forced_and_forbidden_squares_follow_the_pawn_rules() -> None:
    """White's pawn on e4 faces a fogged e5: were e5 empty the push would show it, so every
    draw puts Black's pawn or king there; d5 and f5 are attacked by the pawn: a black piece
    there would be seen, so none ever stands there."""
    pos = from_fen("4k3/8/8/4p3/4P3/8/8/4K3 w - - 0 1")
    obs = observe(pos, 0)
    assert obs.piece_at(36) is None  # e5 is fogged
    p = reseed(obs, [1, 0, 0, 0, 0, 1], 40, draws=300, rng=np.random.default_rng(0))
    black = [int(np.bitwise_or.reduce(q[6:12])) for q in p.positions()]
    assert len(black) > 10
    assert all((b >> 36) & 1 for b in black)  # e5 always holds a black piece
    assert not any((b >> 35) & 1 or (b >> 37) & 1 for b in black)  # d5, f5 never
    assert all(not (int(q[6]) & 0xFF000000000000FF) for q in p.positions())  # pawns on 2-7


def test_the_cap_holds_and_bad_inputs_raise() -> None:
    pos = from_fen("4k3/8/8/4p3/4P3/8/8/4K3 w - - 0 1")
    obs = observe(pos, 0)
    small = reseed(obs, [1, 0, 0, 0, 0, 1], 40, config=BeliefConfig(max_positions=5),
                   rng=np.random.default_rng(1))
    assert len(small) == 5 and small.size_seen >= 5
    promoted = from_fen("4k3/8/8/8/8/8/3q4/4K3 w - - 0 1")  # the queen on d2 is seen
    with pytest.raises(ReseedError, match="more of the opponent's pieces"):
        reseed(observe(promoted, 0), [0, 0, 0, 0, 0, 1], 40)  # no pawn to have promoted
    with pytest.raises(ReseedError, match="material must be six counts"):
        reseed(obs, [1, 0, 0, 0, 1], 40)
    with pytest.raises(ReseedError, match="draws must be a positive int"):
        reseed(obs, [1, 0, 0, 0, 0, 1], 40, draws=0)
    pawn_seen = observe(from_fen("4k3/8/8/8/3p4/4P3/8/4K3 w - - 0 1"), 0)  # e3 attacks d4
    with pytest.raises(ReseedError, match="more of the opponent's pieces"):
        unseen_material(pawn_seen, [0, 0, 0, 0, 0, 1])
    # a promoted piece seen: one pawn fewer unseen
    assert unseen_material(observe(promoted, 0), [1, 0, 0, 0, 1, 1]) == [1, 0, 0, 0, 0, 1]
    assert unseen_material(observe(promoted, 0), [1, 0, 0, 0, 0, 1]) == [0, 0, 0, 0, 0, 1]


def test_the_draws_stop_at_a_deadline_after_the_minimum() -> None:
    """White at the start: Black's 16 pieces unseen on 32 fog squares, so nearly every draw is
    a new position. On a fake clock that a reading moves on by 1 s, a deadline 2.5 s away is
    past at its fourth reading (the first comes after `MIN_DRAWS` draws, then one every
    `DEADLINE_EVERY`): about `MIN_DRAWS` + 3 blocks are drawn, where 4,096 draws without it
    keep thousands; a passed deadline still leaves `MIN_DRAWS`, so P is never empty and
    offers the subgame its roots."""
    obs = observe(from_fen(STARTING_FEN), 0)
    material = [8, 2, 2, 2, 1, 1]
    whole = reseed(obs, material, 0, draws=4096, rng=np.random.default_rng(2))
    assert whole.size_seen > 2000
    cut = reseed(obs, material, 0, draws=4096, rng=np.random.default_rng(2),
                 deadline=Deadline(2.5, 2.5, Ticker(step=1.0)))
    assert MIN_DRAWS + 2 * DEADLINE_EVERY < cut.size_seen <= MIN_DRAWS + 3 * DEADLINE_EVERY
    late = reseed(obs, material, 0, draws=4096, rng=np.random.default_rng(2),
                  deadline=Deadline(0.0, 0.0, Ticker()))
    assert MIN_DRAWS - DEADLINE_EVERY < late.size_seen <= MIN_DRAWS
