"""A decided loss under an unlikely root must not get through (docs/search.md, "Decided losses
under unlikely roots"; the round-2.1 loss of docs/strength/random_iters100.pgn).

The decision is built as in that game: our previous search knew one position (A) of our
infoset; the belief P also holds threat positions B_1..B_k that the top-up samples (Fig. 9
lines 9-14) with singleton opponent infosets and v_alt = min(v~(B), v*). At every position we
choose OPEN or CLOSE. OPEN is a little better at A (by `gain`); at each B, OPEN lets the
opponent end the game at the lowest payoff (the analogue of a fogged bishop taking the king),
and CLOSE is safe everywhere. Expected values come from the game's definition, not from the
search: OPEN is the only move with a decided loss, CLOSE avoids it at every position.

With Obscuro's construction the B roots stay leaves (their value v~(B) is above their
alternate value, so the gadget gives them weight 0 and the expansion walk, which follows the
weights, never grows them) and the agent plays OPEN. With every root of our infoset expanded
at construction (`RootExpansion.INFOSET`) and a floor on the root weights (`root_floor`), it
never does, at any seed, while the gain is below the floor's price of the loss,
eps sum_B alpha(B) (1 + v(B)) (module docstring of `caligo.search.construct`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pytest

from caligo.core.builtin_games import TableGame
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import GameTree, build_tree
from caligo.limits import Deadline, Pace
from caligo.search.arena import EXPANDED, check_invariants
from caligo.search.config import Iterations, RootExpansion, SearchConfig
from caligo.search.construct import expand_infoset_roots
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.game import TreeGame
from tests.search.conftest import belief_at

OPEN, CLOSE, CAPTURE, PASS = 0, 1, 2, 3
V_A = 0.8  # our value at A after OPEN (CLOSE: V_A - gain)


def fog_game(gain: float, slack: float, threats: int) -> TableGame:
    """Chance picks A or one of `threats` threat positions (the opponent sees which, we do
    not); we OPEN or CLOSE; after OPEN at a threat the opponent may CAPTURE (payoff -1, the
    game's lowest); every other line pays V_A (A, OPEN), V_A - gain (A, CLOSE) or V_A + slack
    (a threat, as long as nothing is captured)."""

    def player_fn(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        if len(h) == 0:
            return list(range(threats + 1))
        if len(h) == 1:
            return [OPEN, CLOSE]
        return [CAPTURE, PASS] if h[0] > 0 and h[1] == OPEN else [PASS]

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        return h[-1] if p == 1 and len(h) <= 2 else None

    def utility_fn(h: tuple[int, ...]) -> float:
        s, a, r = h
        if s == 0:
            return V_A if a == OPEN else V_A - gain
        return -1.0 if r == CAPTURE else V_A + slack

    return TableGame(f"fog(gain={gain},slack={slack},threats={threats})", player_fn,
                     actions_fn, observe_fn, utility_fn,
                     {OPEN: "open", CLOSE: "close", CAPTURE: "capture", PASS: "pass"})


def decided_loss_moves(tree: GameTree, infoset: int) -> set[int]:
    """Our actions after which, at some node of the infoset, the opponent can move straight to
    the game's lowest payoff (read off the tree)."""
    low = float(tree.utility.min())
    out = set()
    for h in np.flatnonzero(tree.infoset == infoset).tolist():
        fc = int(tree.first_child[h])
        for c in range(fc, fc + int(tree.num_children[h])):
            gc = int(tree.first_child[c])
            kids = range(gc, gc + int(tree.num_children[c]))
            if any(tree.player[k] == TERMINAL and tree.utility[k] == low for k in kids):
                out.add(int(tree.action[c]))
    return out


def decide(tree: GameTree, seed: int, **overrides: object) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray, int]:
    """The decision of the module docstring: (actions, policy, play, sampled roots)."""
    g = int(tree.infosets_of(0)[0])
    a_node = int(np.flatnonzero(tree.infoset == g)[0])  # position A (chance outcome 0)
    cfg = SearchConfig(budget=Iterations(100), expansions=25, seed=seed,
                       **overrides)  # type: ignore[arg-type]
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0, capacity=4096)
    eng.start(a_node)  # the previous search knew only A
    eng.run(seed)
    bel, key = belief_at(tree, g)
    info = eng.reroot(bel, key, np.random.default_rng(seed), eng.value_of(key))
    check_invariants(eng.arena)
    eng.ensure_infoset(key)
    t_half, stats, solve_s = eng.run(seed)
    res = eng.result(key, t_half, stats, solve_s, 0.0, info, 0.0)
    return res.actions, res.policy, res.play, info.sampled


FIXED = {"root_expansion": RootExpansion.INFOSET, "root_floor": 0.05}


@pytest.mark.parametrize("threats", [1, 8])
@pytest.mark.parametrize("gain,slack", [(0.005, 0.05), (0.01, 0.1), (0.02, 0.15)])
def test_fixed_construction_never_plays_a_decided_loss(gain: float, slack: float,
                                                       threats: int) -> None:
    tree = build_tree(fog_game(gain, slack, threats))
    g = int(tree.infosets_of(0)[0])
    assert decided_loss_moves(tree, g) == {OPEN}  # and CLOSE avoids it at every position
    for seed in range(4):
        actions, policy, play, sampled = decide(tree, seed, **FIXED)
        assert sampled == threats
        i = list(actions).index(OPEN)
        assert policy[i] == 0.0 and play[i] == 0.0, (seed, policy, play)


@pytest.mark.parametrize("threats", [1, 8])
def test_obscuros_construction_lets_it_through(threats: int) -> None:
    """The bug the fix removes: Obscuro's construction plays OPEN (every seed)."""
    tree = build_tree(fog_game(0.01, 0.1, threats))
    for seed in range(3):
        actions, _, play, _ = decide(tree, seed)
        assert play[list(actions).index(OPEN)] == 1.0


def test_expanding_alone_leaves_the_loss_some_weight() -> None:
    """Why the floor: with the roots expanded but no floor, the searched strategy still puts
    weight on OPEN (Maxmargin may spend a threat root's positive margin, v~(B) - v*, on a loss
    there; purification happens to hide it here). The floor alone is not enough either where
    the tree under A keeps the expansions busy (FoW; docs/search.md, the round-2.1 replay)."""
    tree = build_tree(fog_game(0.02, 0.15, 1))
    actions, policy, _, _ = decide(tree, 0, root_expansion=RootExpansion.INFOSET)
    assert policy[list(actions).index(OPEN)] > 0.0


# --- Fog of War chess: the line of round 2.1 -------------------------------------------------

LINE_21 = ("d2d4 e7e6 g1f3 f7f5 b1d2 d8h4 f3h4 f8b4 a2a3 b4a5 h4f3 d7d5 e2e3 e6e5 f3e5 a7a6 "
           "c2c4 c7c6 d2b1 c8d7").split()
"""Round 2.1 of docs/strength/random_iters100.pgn up to White's 11th move (11.Qb3 Bxe1)."""


def test_decided_loss_moves_follow_the_rules() -> None:
    """At White's 11th move of round 2.1, with the black bishop on a5 (not seen by White) and
    the d2 knight gone, every move that does not block the a5-e1 diagonal or move the king
    leaves it to be taken (chess rules; `caligo.fow.evaluate.decided`): 11.Qb3 is such a move,
    11.Bd2, 11.b4 and 11.Nc3 are not."""
    from caligo.experiments.decided_loss import decided_loss_moves
    from caligo.fow.game import Game
    from caligo.fow.position import move_from_uci

    g = Game()
    for uci in LINE_21:
        g.push_uci(uci)
    pos = g.position[None, :].copy()
    moves = [move_from_uci(g.position, u) for u in ("d1b3", "c1d2", "b2b4", "b1c3", "e1e2")]
    assert decided_loss_moves(pos, moves, 0).tolist() == [True, False, False, False, False]


@pytest.mark.parametrize("subgame", ["kluss", "klss"])
def test_fow_line_21_never_plays_a_decided_loss(subgame: str) -> None:
    """The search agent with the fix (and Obscuro's KLUSS or the safe preset's 1-KLSS), fed
    White's observations of round 2.1 and made to play the game's moves, never plays (nor
    searches towards) a move that leaves a decided king capture in some position of P at the
    decisions of moves 10 and 11, where a move avoiding it in every position exists.
    Built-in evaluation (no Stockfish needed), 100 iterations and 25 expansions a move as in
    the match."""
    from dataclasses import replace

    from caligo.agents.fow_belief import FowBelief
    from caligo.agents.fow_search import FowEvaluator, FowSearchGame
    from caligo.experiments.decided_loss import decided_loss_moves
    from caligo.fow.evaluate import SimpleEvaluator
    from caligo.fow.expand import observation_key
    from caligo.fow.game import Game
    from caligo.fow.observation import observe
    from caligo.fow.position import move_from_uci
    from caligo.search.agent import SearchAgent
    from caligo.search.config import SubgameKind
    from tests.conftest import SHORT

    cfg = SearchConfig(budget=Iterations(100), expansions=25, expander_batch=4,
                       subgame=SubgameKind(subgame), **FIXED)  # type: ignore[arg-type]
    for seed in range(1 if SHORT else 3):
        game = FowSearchGame()
        bel = FowBelief(game, 0)
        agent = SearchAgent(game, bel, FowEvaluator(game, SimpleEvaluator()),
                            replace(cfg, seed=seed), capacity=100_000)
        agent.new_game(0, seed)
        board = Game()
        for ply, uci in enumerate([*LINE_21, None]):
            if ply % 2 == 0:
                d = agent.act()
                if ply // 2 + 1 >= 10:
                    lose = decided_loss_moves(bel.set.positions(), d.actions.tolist(), 0)
                    assert np.any(~lose)
                    assert d.policy[lose].sum() == 0.0 and d.play[lose].sum() == 0.0
                if uci is None:
                    break
                move = move_from_uci(board.position, uci)
                agent.force(move)
            board.push_uci(uci)
            obs = observe(board.position, 0)
            bel.expect(obs)
            agent.observe(observation_key(obs), move if ply % 2 == 0 else None)


def test_roots_that_do_not_fit_are_expanded_likeliest_first() -> None:
    """A belief of many threat positions on a small arena (FoW: 1,400 roots of our infoset on
    the 39,000 rows of a 100-iteration arena): the construction used to fail, and the agent
    played a fallback move. Now the roots the gadget's prior makes likeliest are expanded, as
    many as fit in half the free rows, the rest stay leaves, and the search runs."""
    tree = build_tree(fog_game(0.01, 0.1, 300))
    g = int(tree.infosets_of(0)[0])
    a_node = int(np.flatnonzero(tree.infoset == g)[0])
    cfg = SearchConfig(budget=Iterations(20), expansions=5, seed=1, **FIXED)  # type: ignore[arg-type]
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0, capacity=700)
    eng.start(a_node)
    eng.run(1)
    bel, key = belief_at(tree, g)
    eng.reroot(bel, key, np.random.default_rng(1), eng.value_of(key))
    arena = eng.arena
    check_invariants(arena)
    nr, nd = arena.n_roots, arena.nodes
    ours = np.flatnonzero((nd.player[:nr] == 0) & (nd.key[:nr, 0] == np.uint64(key)))
    expanded = (nd.flags[ours] & EXPANDED) != 0
    assert 0 < int(expanded.sum()) < ours.size  # some fit, not all
    m = arena.n_j
    ptr = arena.roots.ptr[: m + 1].astype(np.int64)
    prior = np.repeat(arena.roots.alpha[:m], np.diff(ptr))[ours]
    assert prior[expanded].min() >= prior[~expanded].max()
    eng.ensure_infoset(key)
    eng.run(1)  # and the search goes on


class TickClock:
    """A fake clock that advances `tick` seconds at every reading (work costs time)."""

    def __init__(self, tick: float) -> None:
        self.t = 0.0
        self.tick = tick

    def __call__(self) -> float:
        self.t += self.tick
        return self.t


def test_roots_that_do_not_fit_before_the_deadline_are_expanded_likeliest_first() -> None:
    """The same game's roots (256 of the 301 positions are sampled), with room for all of
    them but not the time: at mt=1 Stockfish's
    0.8 ms a root made 1,400 roots take 1.4 s, past the move's answer instant, which the
    construction did not look at. Under a deadline the roots are expanded while they fit
    before its soft instant at the measured pace, likeliest first, the rest stay leaves, and
    the search runs; without one (or with time for all), every root is expanded, as before.
    A `root_expansion_share` of the time left makes the time for all too short again.
    The clock is fake: each reading costs 1 ms, and the pace says 1 ms a root."""
    tree = build_tree(fog_game(0.01, 0.1, 300))
    g = int(tree.infosets_of(0)[0])
    a_node = int(np.flatnonzero(tree.infoset == g)[0])
    bel, key = belief_at(tree, g)
    counts = {}
    for label, soft, share in (("late", 0.06, 1.0), ("in time", 60.0, 1.0),
                               ("none", None, 1.0), ("share", 60.0, 0.001)):
        cfg = SearchConfig(budget=Iterations(20), expansions=5, seed=1,  # type: ignore[arg-type]
                           root_floor=0.05, root_expansion=RootExpansion.NONE,
                           root_expansion_share=share)
        eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0,
                                capacity=20_000)
        eng.start(a_node)
        eng.run(1)
        eng.reroot(bel, key, np.random.default_rng(1), eng.value_of(key))
        arena = eng.arena
        nr, nd = arena.n_roots, arena.nodes
        ours = np.flatnonzero((nd.player[:nr] == 0) & (nd.key[:nr, 0] == np.uint64(key)))
        assert ours.size == 256  # the configuration's min_roots
        clock = TickClock(1e-3)
        deadline = None if soft is None else Deadline(soft, soft, clock)
        pace = Pace(1e-3)
        pace.record(1e-3, 1)  # measured: 1 ms a root
        todo = ours[(nd.flags[ours] & EXPANDED) == 0]  # A was grown by the first search
        done = expand_infoset_roots(arena, eng.game, eng.evaluator, key, cfg, deadline, pace)
        check_invariants(arena)
        expanded = (nd.flags[todo] & EXPANDED) != 0
        assert done == int(expanded.sum())
        counts[label] = done
        if label in ("late", "share"):  # 0.001 of 60 s: as late
            assert 0 < done < todo.size  # some fit, not all
            m = arena.n_j
            ptr = arena.roots.ptr[: m + 1].astype(np.int64)
            prior = np.repeat(arena.roots.alpha[:m], np.diff(ptr))[todo]
            assert prior[expanded].min() >= prior[~expanded].max()
            assert not nd.claim[todo].any()  # the roots left over are free for the search
        eng.ensure_infoset(key)
        eng.run(1)  # and the search goes on
    assert counts["in time"] == counts["none"] == 255
