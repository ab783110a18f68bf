"""`TreeGame` and `TreeBelief` (`caligo.search.game`): the search's view of a compiled game.

Expected values come from OpenSpiel (`pyspiel`), walked here directly and not through Caligo's
core: the number of decision and terminal histories and the value of uniform random play must
be what the search sees when it expands the game state by state with `TreeGame.expand`. The
belief's sets are checked against the tree's knowledge infosets (`GameTree.kinfo`).
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.games import load_game
from caligo.search.config import SearchError
from caligo.search.game import KeyMode, TreeBelief, TreeGame

GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)"]


def _openspiel_walk(state: pyspiel.State, reach: float) -> tuple[int, int, float]:
    """(decision histories, terminal histories, player 0's value of uniform play) below state."""
    if state.is_terminal():
        return 0, 1, reach * state.returns()[0]
    if state.is_chance_node():
        out = [0, 0, 0.0]
        for a, p in state.chance_outcomes():
            d, t, v = _openspiel_walk(state.child(a), reach * p)
            out[0] += d
            out[1] += t
            out[2] += v
        return out[0], out[1], out[2]
    acts = state.legal_actions()
    out = [1, 0, 0.0]
    for a in acts:
        d, t, v = _openspiel_walk(state.child(a), reach / len(acts))
        out[0] += d
        out[1] += t
        out[2] += v
    return out[0], out[1], out[2]


def _search_walk(game: TreeGame) -> tuple[int, int, float]:
    """The same three numbers, expanding a frontier of states level by level."""
    start = np.array([game.start_state()], dtype=np.int64)
    info = game.describe(start)
    frontier, reach = start, np.ones(1)
    player = info.player.astype(np.int64)
    decisions, terminals, value = 0, 0, 0.0
    while frontier.size:
        live = player != TERMINAL
        terminals += int((~live).sum())
        decisions += int(((player == 0) | (player == 1)).sum())
        frontier, reach, player = frontier[live], reach[live], player[live]
        if not frontier.size:
            break
        batch = game.expand(frontier)
        counts = np.diff(batch.ptr)
        assert (counts >= 1).all()
        parent_player = np.repeat(player, counts)
        edge = np.where(parent_player == CHANCE, batch.chance_prob,
                        1.0 / np.repeat(counts, counts))
        child_reach = np.repeat(reach, counts) * edge
        done = batch.player == TERMINAL
        value += float((child_reach[done] * batch.utility[done]).sum())
        frontier, reach, player = batch.state, child_reach, batch.player.astype(np.int64)
    return decisions, terminals, value


@pytest.mark.parametrize("name", GAMES)
def test_expanding_state_by_state_finds_openspiel_s_game(name: str) -> None:
    game = TreeGame(load_game(name))
    assert game.key_mode is KeyMode.CUMULATIVE
    d, t, v = _search_walk(game)
    od, ot, ov = _openspiel_walk(pyspiel.load_game(name).new_initial_state(), 1.0)
    assert (d, t) == (od, ot)
    assert v == pytest.approx(ov, abs=1e-12)


@pytest.mark.parametrize("name", GAMES)
def test_observation_keys_are_the_tree_s_knowledge_infosets(name: str) -> None:
    tree = load_game(name)
    game = TreeGame(tree)
    nodes = np.arange(tree.num_nodes, dtype=np.int64)
    info = game.describe(nodes)
    np.testing.assert_array_equal(info.obs, tree.kinfo.astype(np.uint64))
    np.testing.assert_array_equal(game.state_key(nodes), nodes.astype(np.uint64))
    for p in (0, 1):
        for s in (0, tree.num_nodes // 3, tree.num_nodes - 1):
            same = game.true_infoset_states(s, p)
            want = np.flatnonzero(tree.kinfo[:, p] == tree.kinfo[s, p])
            np.testing.assert_array_equal(same, want)


def test_a_state_outside_the_tree_is_refused_by_name() -> None:
    tree = load_game("kuhn_poker")
    game = TreeGame(tree)
    with pytest.raises(SearchError, match=rf"\[0, {tree.num_nodes}\).*kuhn"):
        game.expand(np.array([0, tree.num_nodes + 3], dtype=np.int64))
    with pytest.raises(SearchError, match="-1"):
        game.describe(np.array([-1], dtype=np.int64))


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_the_belief_is_the_seat_s_knowledge_infoset(name: str) -> None:
    tree = load_game(name)
    game = TreeGame(tree)
    for seat in (0, 1):
        bel = TreeBelief(game, seat)
        assert bel.size() == 1 and bel.states().tolist() == [0]
        for g in tree.infosets_of(seat)[:8]:
            kinfo = int(tree.infoset_kinfo[g])
            bel.update(kinfo)
            want = np.flatnonzero(tree.kinfo[:, seat] == kinfo)
            np.testing.assert_array_equal(bel.states(), want)
            assert bel.size() == want.size
            np.testing.assert_array_equal(bel.weights(bel.states()), tree.chance_reach[want])
        bel.reset()
        assert bel.states().tolist() == [0]
    with pytest.raises(SearchError, match="seat must be 0 or 1"):
        TreeBelief(game, 2)
    with pytest.raises(SearchError, match="observation 123456789 names no infoset"):
        TreeBelief(game, 0).update(123456789)


def test_sampling_the_belief_is_without_replacement_and_skips_the_tree() -> None:
    tree = load_game("leduc_poker")
    game = TreeGame(tree)
    bel = TreeBelief(game, 1)
    sizes = {int(g): int((tree.kinfo[:, 1] == tree.infoset_kinfo[g]).sum())
             for g in tree.infosets_of(1)}
    g = next(g for g, n in sizes.items() if 4 <= n <= 12)
    bel.update(int(tree.infoset_kinfo[g]))
    states = bel.states()
    exclude = game.state_key(states[:2])
    rng = np.random.default_rng(7)
    seen: set[int] = set()
    for _ in range(50):
        pick = bel.sample(2, exclude, rng)
        assert pick.size == 2 and np.unique(pick).size == 2
        assert np.all(np.diff(pick) > 0)
        assert not np.isin(pick, states[:2]).any() and np.isin(pick, states).all()
        seen.update(pick.tolist())
    assert seen == set(states[2:].tolist())  # every free state comes up in 50 draws
    everything = bel.sample(states.size + 5, exclude, rng)
    np.testing.assert_array_equal(everything, states[2:])
