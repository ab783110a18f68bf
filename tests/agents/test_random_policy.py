"""RandomAgent and PolicyAgent.

Expected values: the uniform distribution for RandomAgent (chi-square goodness of fit with
scipy.stats.chisquare on a fixed seed; the critical value is scipy's), and the probabilities a
tabular policy asks for (PolicyAgent samples them).
"""

from __future__ import annotations

from collections import Counter

import pytest
import scipy.stats

from caligo.agents.base import UNTIMED, Clock
from caligo.agents.policy import InfoState, Missing, PolicyAgent, PolicyError
from caligo.agents.random_agent import RandomAgent
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.position import STARTING_FEN, move_to_uci

CLOCK = Clock()


def test_random_agent_is_uniform_and_seeded() -> None:
    legal = list(range(100, 120))
    agent = RandomAgent(seed=1)
    agent.new_game(0, STARTING_FEN, UNTIMED, seed=42)
    counts = Counter(agent.act(legal, CLOCK).move for _ in range(20_000))
    assert scipy.stats.chisquare([counts[m] for m in legal]).pvalue > 0.001
    d = agent.act(legal, CLOCK)
    assert d.policy == {m: pytest.approx(1 / 20) for m in legal}

    def moves(base: int, game: int) -> list[int]:
        a = RandomAgent(seed=base)
        a.new_game(0, STARTING_FEN, UNTIMED, seed=game)
        return [a.act(legal, CLOCK).move for _ in range(30)]

    assert moves(1, 5) == moves(1, 5)
    assert moves(1, 5) != moves(1, 6) and moves(1, 5) != moves(2, 5)
    assert RandomAgent(report_policy=False).act(legal, CLOCK).policy == {}


def test_policy_agent_table_and_script() -> None:
    game = Game()
    obs = observe(game.position, 0)
    legal = game.legal_moves()
    by_uci = {move_to_uci(m): m for m in legal}
    agent = PolicyAgent({})
    agent.new_game(0, STARTING_FEN, UNTIMED, seed=1)
    key = agent.state().key()
    assert key == f"white|{STARTING_FEN}|"
    table = {key: {"e2e4": 0.75, "d2d4": 0.25, "e2e5": 1.0}}  # e2e5 is not legal: ignored
    agent = PolicyAgent(table)
    agent.new_game(0, STARTING_FEN, UNTIMED, seed=1)
    counts = Counter(move_to_uci(agent.act(legal, CLOCK).move) for _ in range(4000))
    assert set(counts) == {"e2e4", "d2d4"}
    assert counts["e2e4"] / 4000 == pytest.approx(0.75, abs=0.03)
    decision = agent.act(legal, CLOCK)
    assert decision.policy == {by_uci["e2e4"]: 0.75, by_uci["d2d4"]: 0.25}
    agent.observe(obs, by_uci["e2e4"])
    assert agent.state().key().endswith("e2e4:" + obs.dark_fen())
    # missing states: uniform by default, an error on request
    uniform = agent.act(legal, CLOCK)
    assert len(uniform.policy) == 20
    strict = PolicyAgent(table, missing=Missing.RAISE)
    strict.new_game(1, STARTING_FEN, UNTIMED, seed=1)
    with pytest.raises(PolicyError, match="no legal move"):
        strict.act(legal, CLOCK)
    script = PolicyAgent.scripted(["d2d4", "c2c4"])
    script.new_game(0, STARTING_FEN, UNTIMED, seed=0)
    assert move_to_uci(script.act(legal, CLOCK).move) == "d2d4"
    script.observe(obs, by_uci["d2d4"])
    assert script.state().turn == 1
    state = InfoState(0, STARTING_FEN, (), 0)
    assert state.key() == f"white|{STARTING_FEN}|"
