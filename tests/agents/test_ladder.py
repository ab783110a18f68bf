"""The strength ladder (`caligo:level=N`): the table, the options, the level's own budget under
any time control, the noise forced on the engine, and exact replays.

Expected values: the levels' engines are the registry's (each level's spec builds the agent it
names); what a level's search did is its engine's own `Decision.info` (Obscuro's iteration
count); legality and endings are the referee's (`caligo.play.referee`).
"""

from __future__ import annotations

import itertools

import pytest

from caligo.agents.base import TimeControl
from caligo.agents.ladder import DEFAULT_LEVEL, LEVELS, Level, LevelAgent, level
from caligo.agents.obscuro import ObscuroAgent
from caligo.agents.random_agent import RandomAgent
from caligo.agents.registry import AgentSpecError, create, parse_spec
from caligo.agents.stockfish_pi import StockfishPIAgent
from caligo.agents.zs21.agent import ZS21Agent
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig
from tests.agents.test_obscuro import HAVE_SF

ENGINES = {"random": RandomAgent, "stockfish-pi": StockfishPIAgent, "zs21": ZS21Agent,
           "obscuro": ObscuroAgent}


def test_the_table() -> None:
    assert [lvl.number for lvl in LEVELS] == list(range(1, len(LEVELS) + 1))
    assert LEVELS[0].spec == "random" and LEVELS[0].noise == 0.0  # anchored at random = 0
    assert LEVELS[-1].spec.startswith("obscuro")
    assert 1 <= DEFAULT_LEVEL <= len(LEVELS)
    for lvl in LEVELS:
        assert lvl.title and parse_spec(lvl.engine_spec).name in ENGINES
        assert level(lvl.number) is lvl
    budgets = [lvl.budget.iterations for lvl in LEVELS if lvl.spec == "obscuro"]
    assert budgets == sorted(budgets) and len(set(budgets)) == len(budgets)
    assert Level(9, "obscuro", TimeControl.parse("iters=5")).engine_spec == \
        "obscuro:budget=iters=5"
    assert Level(9, "stockfish-pi:depth=1").engine_spec == "stockfish-pi:depth=1"
    for bad in (0, len(LEVELS) + 1, -1):
        with pytest.raises(ValueError, match=f"level must be 1 to {len(LEVELS)}, got {bad}"):
            level(bad)
    with pytest.raises(ValueError, match="noise must be in"):
        Level(9, "random", noise=1.5)
    with pytest.raises(ValueError, match="a budget is iters=N or none, got 'mt=1'"):
        Level(9, "obscuro", TimeControl.parse("mt=1"))


def test_options_are_checked_by_name() -> None:
    for spec, words in (("caligo:level=8", "level must be 1 to 7, got 8"),
                        ("caligo:level=x", "level"),
                        ("caligo:budget=iters=4", "unknown option(s) for caligo: ['budget']")):
        with pytest.raises(AgentSpecError) as info:
            create(spec)
        assert words in str(info.value) and spec in str(info.value)


@pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not installed")
def test_every_level_builds_its_engine() -> None:
    for lvl in LEVELS:
        agent = create(f"caligo:level={lvl.number}")
        try:
            assert isinstance(agent, LevelAgent) and agent.level is lvl
            assert isinstance(agent.inner, ENGINES[parse_spec(lvl.spec).name])
        finally:
            agent.close()
    default = create("caligo")
    assert isinstance(default, LevelAgent) and default.level.number == DEFAULT_LEVEL
    default.close()


def _play(white: LevelAgent | RandomAgent, black: LevelAgent | RandomAgent, tc: str,
          seed: int = 5) -> GameSession:
    controls = (TimeControl.parse(tc), TimeControl.parse(tc))
    session = GameSession(SessionConfig(f"ladder-{seed}", seeds=(seed, seed + 1),
                                        time_controls=controls))
    try:
        play_game(session, (white, black))
    finally:
        white.close()
        black.close()
    return session


def test_a_level_searches_its_own_budget_whatever_the_clock() -> None:
    """Obscuro at 10 iterations, in a game of 30 s a move and in an untimed one: every searched
    move ran exactly the level's 10 iterations (the game's clock never became its budget; 30 s
    a move would be thousands of iterations, and no deadline is near on a busy machine)."""
    lvl = Level(9, "obscuro:eval=simple", TimeControl.parse("iters=10"), title="test")
    for tc in ("mt=30", "none"):
        inner = create(lvl.engine_spec)
        session = _play(LevelAgent(lvl, inner, seed=1), RandomAgent(seed=2), tc)
        searched = [p.decision for p in session.plies[0::2]
                    if p.decision is not None and "iterations" in p.decision.info]
        assert searched, tc
        assert {d.info["iterations"] for d in searched} == {10}, tc
        assert all(d.info["level"] == 9 for d in searched)


@pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not installed")
def test_a_level_without_a_budget_is_asked_for_fixed_work() -> None:
    """Stockfish-PI's levels have no budget of their own: on a clock of 30 s a move they are
    still asked with a count (their depth decides), so their play does not depend on the
    machine's speed or the clock."""
    lvl = level(4)
    session = _play(LevelAgent(lvl, create(lvl.engine_spec), seed=1), RandomAgent(seed=2),
                    "mt=30")
    plans = [p.decision.info["plan"] for p in session.plies[0::2] if p.decision is not None]
    assert plans and all(plan["budget"] == "iterations" for plan in plans)


@pytest.mark.parametrize(("spec", "budget"), [
    ("obscuro:eval=simple", "iters=10"),
    ("zs21:eval=simple", "iters=10"),
    pytest.param("stockfish-pi:depth=1", "none",
                 marks=pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not "
                                          "installed")),
])
def test_noise_moves_are_forced_on_the_engine_and_replay_exactly(spec: str, budget: str) -> None:
    """Half the moves at random: about half the moves are marked random, the engine follows
    the game through them (it keeps playing legal moves of its own after them: each engine's
    `force` takes in the opponent's ply its `act` would have), and the same seeds play the
    same game."""
    lvl = Level(9, spec, TimeControl.parse(budget), noise=0.5, title="t")
    games = []
    for _ in range(2):
        agent = LevelAgent(lvl, create(lvl.engine_spec), seed=3)
        games.append(_play(agent, RandomAgent(seed=4), "none", seed=11))
    ucis = [[p.uci for p in g.plies] for g in games]
    assert ucis[0] == ucis[1]
    own = [p.decision for p in games[0].plies[0::2] if p.decision is not None]
    random_moves = [d for d in own if d.info.get("random")]
    searched = [d for d in own if not d.info.get("random")]
    assert all(d.info["level"] == 9 for d in own)
    assert random_moves and searched
    # a searched move after a random one: the engine's belief followed the forced move
    flags = [bool(d.info.get("random")) for d in own]
    assert any(a and not b for a, b in itertools.pairwise(flags))
