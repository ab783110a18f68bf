"""PCFR+ on the arena (Obscuro, Figs. 10-11) against the core's PCFR+ and the pure-Python
reference; and the arena's infosets against the compiled tree's.

Expected values come from `caligo.core.cfr.CFRSolver(CFRConfig.pcfr_plus())` (tested against
OpenSpiel's solvers in tests/core), from `caligo.search.reference` (Figs. 10-11 written as
recursion over dicts) and from `caligo.core.tree.build_tree` (the tree's own infosets).
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.cfr import CFRConfig, CFRSolver
from caligo.core.games import load_game
from caligo.core.random_games import random_game
from caligo.core.strategy import normalize_per_infoset, uniform_strategy
from caligo.core.tree import GameTree, build_tree
from caligo.search.arena import IFROZEN, check_invariants
from caligo.search.config import InitialStrategy, Iterate, SubgameKind
from caligo.search.export import strategy_on_tree
from caligo.search.reference import reference_iteration
from tests.search.arena_reader import arena_to_gametree
from tests.search.conftest import belief_at, full_search, gtcfr_search, rng

GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)",
         "dark_hex(gameversion=adh,num_rows=2,num_cols=2)"]


def _trees() -> list[GameTree]:
    # the first four random games with both players deciding (a draw can end at the root)
    randoms = (build_tree(random_game(s, max_depth=5)) for s in range(100))
    playable = [t for t in randoms if len(set(t.infoset_player.tolist())) == 2]
    return [load_game(g) for g in GAMES] + playable[:4]


@pytest.mark.parametrize("tree", _trees(), ids=lambda t: t.name[:30])
def test_full_expansion_has_the_trees_infosets(tree: GameTree) -> None:
    """Exported arena == compiled tree: same nodes, and the same partition of the nodes into
    each player's infosets (decision and knowledge), so no infoset is merged or split."""
    eng = full_search(tree, 0)
    check_invariants(eng.arena)
    ex = arena_to_gametree(eng.arena)
    assert ex.num_nodes == tree.num_nodes and ex.num_infosets == tree.num_infosets
    np.testing.assert_array_equal(ex.player, tree.player)
    np.testing.assert_array_equal(ex.action, tree.action)
    for a, b in [(ex.infoset, tree.infoset), (ex.kinfo[:, 0], tree.kinfo[:, 0]),
                 (ex.kinfo[:, 1], tree.kinfo[:, 1])]:
        pairs = set(zip(a.tolist(), b.tolist(), strict=True))
        assert len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))  # a bijection


@pytest.mark.parametrize("tree", _trees(), ids=lambda t: t.name[:30])
def test_arena_follows_core_pcfr_plus(tree: GameTree) -> None:
    """From the same first iterate, iterate t of the arena is the core's PCFR+ iterate t, to
    rounding (the two sum counterfactual values in different orders), for 60 iterations.

    Regret matching+ is discontinuous where every R + m of an infoset is 0 (uniform against
    pure), so two correct runs may part at an exact tie that rounding breaks differently (2x2
    dark hex does at iteration 1; random games sometimes). A parting is accepted only there:
    at the infoset where the strategies first differ, R + m must be 0 to 1e-12 in both runs.
    """
    eng = full_search(tree, 0, initial_strategy=InitialStrategy.UNIFORM)
    core = CFRSolver(tree, CFRConfig.pcfr_plus())
    u = uniform_strategy(tree)
    for _ in range(60):
        eng.iterate(1)
        core.iterate(1)
        got = strategy_on_tree(eng.arena, tree, u)
        diff = np.abs(got - core.current_strategy())
        if diff.max() <= 1e-9:
            continue
        g = int(tree.slot_infoset()[int(np.argmax(diff))])
        off, n = int(tree.infoset_offset[g]), int(tree.infoset_num_actions[g])
        core_q = core.cumulative_regrets()[off : off + n] + core._inst[off : off + n]
        ag = eng.arena.infoset_of_key(int(tree.infoset_player[g]), int(tree.infoset_kinfo[g]))
        sl = eng.arena.infoset_slots(ag)
        arena_q = eng.arena.slots.regret[sl] + eng.arena.slots.pred[sl]
        assert np.abs(core_q).max() < 1e-12 and np.abs(arena_q).max() < 1e-12, (
            f"parted at iteration {eng.arena.iteration} away from a tie: {core_q} {arena_q}")
        return


def test_average_iterate_matches_core_average() -> None:
    """The sequence-form average behind Iterate.AVERAGE equals the core's uniform average."""
    tree = load_game("kuhn_poker")
    eng = full_search(tree, 0, initial_strategy=InitialStrategy.UNIFORM,
                      iterate=Iterate.AVERAGE)
    core = CFRSolver(tree, CFRConfig.pcfr_plus())
    eng.iterate(300)
    core.iterate(300)
    avg = normalize_per_infoset(tree, strategy_on_tree(eng.arena, tree, uniform_strategy(tree),
                                                       eng.arena.slots.avg))
    np.testing.assert_allclose(avg, core.average_strategy(), atol=1e-10)


_ORDER2 = [
    {},
    {"subgame": SubgameKind.BLEND, "order2_blend": 0.3},
    {"subgame": SubgameKind.SAFE_KLUSS, "order2_floor": 0.01},
    {"subgame": SubgameKind.KLSS_ROOT, "root_floor": 0.2},
]


@pytest.mark.parametrize("over", _ORDER2, ids=lambda o: "-".join(str(v) for v in o.values())
                         or "kluss")
@pytest.mark.parametrize("game", ["leduc_poker", "liars_dice(dice_sides=3)"])
def test_kernel_matches_reference_on_a_grown_tree_with_gadget(game: str,
                                                              over: dict[str, object]) -> None:
    """On a partially expanded KLUSS subgame (gadget root, leaves with heuristic values), one
    kernel iteration equals one reference iteration (Figs. 10-11 read literally); also with
    the order-2 play of BLEND and SAFE_KLUSS (learned and played strategies) and with the
    root-weight floor."""
    tree = load_game(game)
    eng = gtcfr_search(tree, 40, 60, **over)
    g0 = int(tree.infosets_of(0)[0])
    bel, key = belief_at(tree, g0)
    eng.reroot(bel, key, rng())
    eng.ensure_infoset(key)
    if over.get("subgame") in (SubgameKind.BLEND, SubgameKind.SAFE_KLUSS):  # order-2 play runs
        assert np.any(eng.arena.infosets.flags[: eng.arena.n_infosets] & IFROZEN)
    from caligo.search.expand import Expander

    ex = Expander(eng.arena, eng.game, eng.evaluator, 3)
    for step in range(25):
        a, b = eng.arena.copy(), eng.arena.copy()
        eng.arena = a
        eng.iterate(1)
        reference_iteration(b)
        for name in ("regret", "pred", "strat", "q", "learn"):
            np.testing.assert_allclose(getattr(a.slots, name)[: a.n_slots],
                                       getattr(b.slots, name)[: b.n_slots], atol=1e-12,
                                       err_msg=f"{name} at step {step}")
        # support counters can part at exact-zero ties (summation order), so compare them
        # only where both strategies are clearly in or out of the support
        sa, sb = a.slots.strat[: a.n_slots], b.slots.strat[: b.n_slots]
        clear = (np.minimum(sa, sb) > 1e-9) | (np.maximum(sa, sb) == 0.0)
        np.testing.assert_array_equal(a.slots.support_since[: a.n_slots][clear],
                                      b.slots.support_since[: b.n_slots][clear])
        for name in ("w", "mm_strat", "res_strat"):
            np.testing.assert_allclose(getattr(a.roots, name)[: a.n_j],
                                       getattr(b.roots, name)[: b.n_j], atol=1e-12)
        np.testing.assert_array_equal(a.infosets.flags[: a.n_infosets],
                                      b.infosets.flags[: b.n_infosets])
        np.testing.assert_array_equal(a.nodes.flags[: a.n_nodes], b.nodes.flags[: b.n_nodes])
        ex.arena = a
        leaves = eng._walks(ex, 2, step)
        if leaves.size:
            p = ex.expand(leaves)
            assert p is not None
            eng._commit(p)
        check_invariants(a)
