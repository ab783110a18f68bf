"""The agent loop (Obscuro, Fig. 8) on `TreeGame`s.

Perfect information: when the searcher always knows the state (OpenSpiel's nim: every infoset
is one node), every move the agent may play must be a minimax move; the set of minimax moves
comes from OpenSpiel's own alpha-beta search (`open_spiel.python.algorithms.minimax`), which we
did not write.
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import minimax

from caligo.core.games import load_game
from caligo.search.agent import SearchAgent, tree_agent
from caligo.search.config import (
    Expansion,
    FirstDecision,
    Iterations,
    RootInfosets,
    SearchConfig,
    SearchError,
)
from caligo.search.evaluators import PerfectInfoEvaluator, ZeroEvaluator
from caligo.search.game import TreeGame

NIM = "nim(pile_sizes=1;2;3)"


def _optimal_moves(state: pyspiel.State) -> set[int]:
    """Moves whose alpha-beta value (for the mover) equals the best."""
    mover = state.current_player()
    vals = {}
    for a in state.legal_actions():
        child = state.child(a)
        if child.is_terminal():
            vals[a] = child.returns()[mover]
        else:
            vals[a] = minimax.alpha_beta_search(state.get_game(), child,
                                                maximizing_player_id=mover)[0]
    best = max(vals.values())
    return {a for a, v in vals.items() if v == best}


def _walk_and_check(config: SearchConfig, seat: int) -> int:
    tree = load_game(NIM)
    pgame = pyspiel.load_game(NIM)
    game = TreeGame(tree)
    agent = tree_agent(game, PerfectInfoEvaluator(tree), config, seat)
    agent.new_game(seat, 0)
    checked = 0

    def visit(ag: SearchAgent, node: int, state: pyspiel.State) -> None:
        nonlocal checked
        if state.is_terminal():
            return
        if state.current_player() == seat:
            a = ag.snapshot()
            a.observe(int(tree.kinfo[node, seat]))
            dec = a.act()
            allowed = _optimal_moves(state)
            played = {int(x) for x, p in zip(dec.actions, dec.play, strict=True) if p > 0}
            assert played <= allowed, (state.history(), played, allowed)
            checked += 1
            for act in played:
                b = a.snapshot()
                b.force(act)
                child = next(c for c in game.expand(np.array([node])).state
                             if int(tree.action[c]) == act)
                visit(b, int(child), state.child(act))
        else:
            for c in range(tree.first_child[node], tree.first_child[node] +
                           tree.num_children[node]):
                visit(ag, c, state.child(int(tree.action[c])))

    visit(agent, 0, pgame.new_initial_state())
    return checked


@pytest.mark.parametrize("seat", [0, 1])
def test_perfect_information_full_expansion_plays_minimax(seat: int) -> None:
    cfg = SearchConfig(budget=Iterations(200), expansion=Expansion.FULL)
    assert _walk_and_check(cfg, seat) > 5


@pytest.mark.parametrize("seat", [0, 1])
def test_perfect_information_small_budget_plays_minimax(seat: int) -> None:
    """GT-CFR with 30 expansions and exact perfect-information leaf values (the Stockfish
    analogue) still plays minimax moves: the subgame is the subtree of the known state."""
    cfg = SearchConfig(budget=Iterations(100), expansions=30)
    assert _walk_and_check(cfg, seat) >= 3


def test_sampled_first_decision_and_true_infosets_build() -> None:
    """FirstDecision.SAMPLED (Fig. 9 with no previous tree) and RootInfosets.TRUE run."""
    tree = load_game("kuhn_poker")
    game = TreeGame(tree)
    for roots in (RootInfosets.SINGLETON, RootInfosets.TRUE):
        cfg = SearchConfig(budget=Iterations(50), expansion=Expansion.FULL,
                           first_decision=FirstDecision.SAMPLED, root_infosets=roots)
        agent = tree_agent(game, ZeroEvaluator(), cfg, 1)
        agent.new_game(1, 0)
        g = int(tree.infosets_of(1)[0])
        agent.observe(int(tree.infoset_kinfo[g]))
        dec = agent.act()
        assert dec.search.sampled == 2 and dec.belief_size == 2
        assert dec.search.roots == (2 if roots is RootInfosets.SINGLETON else 4)
        assert abs(dec.play.sum() - 1.0) < 1e-12


def test_agent_rejects_bad_use() -> None:
    tree = load_game("kuhn_poker")
    agent = tree_agent(TreeGame(tree), ZeroEvaluator(), SearchConfig(), 0)
    with pytest.raises(SearchError):
        agent.act()
    with pytest.raises(SearchError):
        agent.new_game(2)
    agent.new_game(0)
    with pytest.raises(SearchError, match="names no infoset"):
        agent.observe(10**9)


def test_decision_at_the_true_start_is_the_opening_search() -> None:
    """In a game where we move first at a known start (2x2 dark hex), the first decision is
    the search from the start itself: one root, no gadget, no re-rooting."""
    tree = load_game("dark_hex(gameversion=adh,num_rows=2,num_cols=2)")
    agent = tree_agent(TreeGame(tree), ZeroEvaluator(), SearchConfig(
        budget=Iterations(40), expansion=Expansion.FULL), 0)
    agent.new_game(0, 0)
    agent.observe(int(tree.kinfo[0, 0]))
    dec = agent.act()
    assert dec.search.roots == 1 and dec.search.gadget.value == "none"
    assert dec.search.iterations == 40 and dec.search.nodes == tree.num_nodes
    nxt = agent.snapshot()
    nxt.force(int(dec.actions[0]))
    g = next(int(x) for x in tree.infosets_of(0) if tree.infoset_parent_seq[x] != 0)
    nxt.observe(int(tree.infoset_kinfo[g]))
    later = nxt.act()
    assert later.search.gadget.value in ("maxmargin", "resolve")
    assert later.search.carried_nodes > 0 and later.search.sampled == 0


def test_true_root_infosets_past_the_construction_deadline_keep_one_singleton_root() -> None:
    """With RootInfosets.TRUE each sampled root brings its whole true opponent infoset, every
    state of which is evaluated. Under a construction deadline that has already passed (a
    fake clock), the build keeps only the root the searcher needs for a decision, with a
    singleton infoset (as SINGLETON mode gives it), instead of evaluating infosets past the
    deadline; without a deadline it builds the four roots of the test above."""
    from caligo.limits import Deadline, Limits
    from tests.clocks import Ticker

    tree = load_game("kuhn_poker")
    game = TreeGame(tree)
    cfg = SearchConfig(budget=Iterations(20), expansion=Expansion.FULL,
                       first_decision=FirstDecision.SAMPLED, root_infosets=RootInfosets.TRUE)
    g = int(tree.infosets_of(1)[0])
    for construct, roots, sampled in ((None, 4, 2), (Deadline(0.0, 0.0, Ticker(t=1.0)), 1, 1)):
        agent = tree_agent(game, ZeroEvaluator(), cfg, 1)
        agent.new_game(1, 0)
        agent.observe(int(tree.infoset_kinfo[g]))
        dec = agent.act(Limits(iterations=20), construct=construct)
        assert (dec.search.roots, dec.search.sampled) == (roots, sampled)
        assert abs(dec.play.sum() - 1.0) < 1e-12
