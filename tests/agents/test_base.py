"""The agent interface's value types and the observation-only move decoding.

Expected values: python-chess's legal move list (`chess.Board.pseudo_legal_moves`, FoW-adjusted
by `caligo.fow.observation.fow_moves_reference`) for the moves a player may play, which Obscuro,
appendix A says a FoW player always knows from their observation; the PGN standard's TimeControl tag
forms ("300+2", "-") for `pgn_tag`.
"""

from __future__ import annotations

import random

import chess
import pytest

from caligo.agents.base import (
    Agent,
    Clock,
    Decision,
    TcKind,
    TimeControl,
    TimeControlError,
    legal_moves,
    observed_move,
)
from caligo.agents.external import ExternalAgent
from caligo.agents.policy import PolicyAgent
from caligo.agents.random_agent import RandomAgent
from caligo.fow.errors import MoveError
from caligo.fow.game import Game
from caligo.fow.observation import fow_moves_reference, observe
from caligo.fow.position import move_to_uci
from tests.conftest import SHORT


def test_time_control_texts() -> None:
    cases = {
        "none": (TcKind.NONE, "none", "-"),
        "iters=4000": (TcKind.ITERATIONS, "iters=4000", "-"),
        "mt=2.5": (TcKind.MOVETIME, "mt=2.5", "1/2.5"),
        "180+2": (TcKind.CLOCK, "180+2", "180+2"),
        "0.5+0.05": (TcKind.CLOCK, "0.5+0.05", "0.5+0.05"),
        "60": (TcKind.CLOCK, "60+0", "60+0"),
    }
    for text, (kind, canonical, tag) in cases.items():
        tc = TimeControl.parse(text)
        assert tc.kind is kind and str(tc) == canonical and tc.pgn_tag() == tag
        assert TimeControl.parse(str(tc)) == tc
        assert TimeControl.from_dict(tc.to_dict()) == tc
    assert TimeControl.parse("180+2").increment_ms == 2000
    for bad in ("", "fast", "iters=0", "mt=0", "-5+1", "1+2+3", "iters=x"):
        with pytest.raises(TimeControlError, match="invalid time control"):
            TimeControl.parse(bad)


def test_clock_round_trip() -> None:
    clock = Clock(TcKind.CLOCK, 1500, 100, opponent_ms=900, deadline_ms=1500)
    assert Clock.from_dict(clock.to_dict(), 1500) == clock
    assert Clock(TcKind.ITERATIONS, iterations=4000).to_dict() == {
        "kind": "iterations",
        "iterations": 4000,
    }


def test_decision_validation() -> None:
    d = Decision(796, policy={796: 1.0}, value=0.1, info={"belief": 12, "gadget": "maxmargin"})
    assert d.move == 796 and not d.resign
    assert Decision.resignation().resign
    with pytest.raises(TypeError, match="JSON"):
        Decision(1, info={"bad": object()})
    with pytest.raises(TypeError):
        Decision("e2e4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Decision(1, value=float("nan"))


def test_legal_moves_from_the_observation_match_python_chess() -> None:
    rng = random.Random(5)
    checked = 0
    for _ in range(6 if SHORT else 30):
        game = Game()
        board = chess.Board()
        while not game.is_over():
            obs = observe(game.position, game.turn)
            ours = legal_moves(obs)
            ref = sorted(m.uci() for m in fow_moves_reference(board))
            assert sorted(move_to_uci(m) for m in ours) == ref
            assert sorted(ours) == sorted(game.legal_moves())  # the exact codes, kinds included
            checked += 1
            move = rng.choice(game.legal_moves())
            board.push(chess.Move.from_uci(move_to_uci(move)))
            game.push(move)
    assert checked > 300


def test_observed_move_kinds_and_errors() -> None:
    game = Game("r3k2r/8/8/3pP3/8/8/8/R3K2R w KQkq d6 0 2")
    obs = observe(game.position, 0)
    by_uci = {move_to_uci(m): m for m in game.legal_moves()}
    for uci in ("e1g1", "e1c1", "e5d6", "e5e6", "a1a8"):
        assert observed_move(obs, uci) == by_uci[uci]
    promo = Game("8/4P3/8/8/8/8/8/4K2k w - - 0 1")
    pobs = observe(promo.position, 0)
    assert observed_move(pobs, "e7e8n") in promo.legal_moves()
    for bad in ("e2", "z1a1", "e3e4", "e5e6q", "e1g1x"):
        with pytest.raises(MoveError):
            observed_move(obs, bad)


def test_every_agent_satisfies_the_protocol() -> None:
    assert isinstance(RandomAgent(), Agent)
    assert isinstance(PolicyAgent({}), Agent)
    assert issubclass(ExternalAgent, object) and all(
        hasattr(ExternalAgent, name)
        for name in ("new_game", "observe", "act", "force", "game_over", "close")
    )
