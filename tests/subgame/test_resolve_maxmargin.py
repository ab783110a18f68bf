"""Resolve, Maxmargin and unsafe endgame solving against Ha 2016's LP forms and examples, and
the MaxmarginToResolve / ResolveToMaxmargin conversions (Zhang & Sandholm 2021, Algorithm 12)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import solve_lp
from caligo.core.random_games import random_game
from caligo.core.sequence_form import payoff_matrix
from caligo.core.strategy import normalize_per_infoset, uniform_strategy
from caligo.core.tree import GameTree, build_tree
from caligo.subgame.gadget import (
    GadgetKind,
    ResolvePrior,
    SubgameOptions,
    lift,
    make_subgame,
    subgame_margins,
)
from caligo.subgame.resolve import maxmargin_to_resolve, resolve_to_maxmargin, swap_players
from caligo.subgame.solve import solve_subgame


def _games() -> list[GameTree]:
    trees = [build_tree(random_game(seed, max_depth=5)) for seed in range(12)]
    return [t for t in trees if len(t.infosets_of(0)) and len(t.infosets_of(1))][:6]


def test_lp_values_are_seed004_objectives() -> None:
    """Maxmargin's LP value is max min_I sigma M(I) (I.2); Resolve's is sum alpha sigma [M]^-
    (H.1 with the EXIT option); random strategies never beat the LP."""
    rng = np.random.default_rng(0)
    for i, tree in enumerate(_games()):
        s = normalize_per_infoset(tree, rng.uniform(0.1, 1.0, tree.num_slots))
        for g in tree.infosets_of(0):
            for kind in (GadgetKind.MAXMARGIN, GadgetKind.RESOLVE):
                sub = make_subgame(tree, s, int(g), SubgameOptions(kind=kind, k=math.inf))
                if sub.is_empty:
                    continue
                sol = solve_subgame(sub)
                sig = sub.scale()
                if kind is GadgetKind.MAXMARGIN:
                    objective = float(np.min(sig * sol.margins))
                else:
                    objective = float(np.sum(sub.prior * sig * np.minimum(sol.margins, 0.0)))
                assert sol.value == pytest.approx(objective, abs=1e-8), (i, g, kind)
                for _ in range(5):
                    other = normalize_per_infoset(sub.tree, rng.uniform(0, 1, sub.tree.num_slots))
                    m = subgame_margins(sub, other)
                    val = (
                        float(np.min(sig * m))
                        if kind is GadgetKind.MAXMARGIN
                        else float(np.sum(sub.prior * sig * np.minimum(m, 0.0)))
                    )
                    assert val <= sol.value + 1e-8


def test_maxmargin_margin_at_least_resolve_and_resolve_safe_with_ne_blueprint() -> None:
    for tree in _games():
        s = solve_lp(tree).strategy
        for g in tree.infosets_of(0):
            mm = make_subgame(tree, s, int(g), SubgameOptions(k=math.inf))
            rs = make_subgame(tree, s, int(g), SubgameOptions(kind=GadgetKind.RESOLVE, k=math.inf))
            if mm.is_empty:
                continue
            m_mm = solve_subgame(mm).margins
            m_rs = solve_subgame(rs).margins
            assert np.all(m_rs >= -1e-9)
            assert np.min(m_mm * mm.scale()) >= np.min(m_rs * rs.scale()) - 1e-9


@pytest.mark.parametrize("k", [1, math.inf])
def test_conversions_round_trip(k: float) -> None:
    """MaxmarginToResolve of the Maxmargin gadget is the Resolve gadget, and back."""
    t = load_game("figure1")
    s = normalize_per_infoset(t, np.linspace(1.0, 2.0, t.num_slots))
    g = t.infoset_index()["p0:R1"]
    mm = make_subgame(t, s, g, SubgameOptions(k=k))
    rs = make_subgame(t, s, g, SubgameOptions(kind=GadgetKind.RESOLVE, k=k))
    for built, converted in ((rs, maxmargin_to_resolve(mm)), (mm, resolve_to_maxmargin(rs))):
        assert converted.tree.num_nodes == built.tree.num_nodes
        np.testing.assert_allclose(
            payoff_matrix(converted.tree).toarray(), payoff_matrix(built.tree).toarray()
        )
        np.testing.assert_allclose(converted.extra.toarray(), built.extra.toarray())
        a, b = solve_subgame(built), solve_subgame(converted)
        assert a.value == pytest.approx(b.value, abs=1e-9)
        np.testing.assert_allclose(a.margins, b.margins, atol=1e-9)
        np.testing.assert_allclose(lift(t, s, built, a), lift(t, s, converted, b), atol=1e-7)


def test_blueprint_mix_prior() -> None:
    """Obscuro, appendix C.3: alpha = (P / sum P + 1 / m) / 2 with P the blueprint reach of each
    root."""
    t = load_game("figure1")
    s = normalize_per_infoset(t, np.linspace(1.0, 3.0, t.num_slots))
    g = t.infoset_index()["p0:R1"]
    sub = make_subgame(
        t,
        s,
        g,
        SubgameOptions(
            kind=GadgetKind.RESOLVE, k=math.inf, resolve_prior=ResolvePrior.BLUEPRINT_MIX
        ),
    )
    assert sub.prior.sum() == pytest.approx(1.0)
    assert not np.allclose(sub.prior, 1.0 / sub.num_roots)
    assert np.all(sub.prior >= 0.5 / sub.num_roots)
    conv = maxmargin_to_resolve(make_subgame(t, s, g, SubgameOptions(k=math.inf)), sub.prior)
    np.testing.assert_allclose(conv.extra.toarray(), sub.extra.toarray())


def test_unsafe_endgame_solving_fails_on_rock_paper_scissors() -> None:
    """Ha 2016, section F.2 / Claim 3: re-solving player 2's part of RPS with the trunk fixed admits
    'always rock' as an optimal solution, which paper exploits; the safe gadgets do not."""
    sw = swap_players(load_game("rock_paper_scissors"))  # the re-solving player moves second
    s = uniform_strategy(sw)  # the uniform equilibrium
    g = int(sw.infosets_of(0)[0])
    assert player_exploitability(sw, s, 0) == pytest.approx(0.0, abs=1e-12)
    rock = [int(a) for a in sw.slot_action[sw.infoset_offset[g] : sw.infoset_offset[g] + 3]]
    for kind in GadgetKind:
        sub = make_subgame(sw, s, g, SubgameOptions(kind=kind, k=math.inf))
        gt = sub.tree
        gg = sub.root_infoset
        always_rock = uniform_strategy(gt)
        off = int(gt.infoset_offset[gg])
        always_rock[off : off + 3] = [1.0 if a == rock[0] else 0.0 for a in rock]
        best = solve_subgame(sub)
        from caligo.core.best_response import best_response

        rock_value = best_response(gt, always_rock, 1, extra=sub.extra).value
        lifted_rock = lift(sw, s, sub, always_rock)
        assert player_exploitability(sw, lifted_rock, 0) == pytest.approx(1.0)
        if kind is GadgetKind.UNSAFE:
            assert rock_value == pytest.approx(best.value, abs=1e-12)  # an optimal re-solve
        else:
            assert rock_value < best.value - 0.1  # the safe gadgets reject it
            lifted = lift(sw, s, sub, best)
            assert player_exploitability(sw, lifted, 0) == pytest.approx(0, abs=1e-9)
            assert best.min_margin >= -1e-9


def test_reach_gifts_relax_margins_by_at_most_the_gift() -> None:
    """Reach-Maxmargin: gifts g >= 0 lower the alternate values; the solution keeps
    M(I0) >= -g(I0) (it may give back at most what player 1 gave up to get there), and its
    min margin plus gift is at least plain Maxmargin's."""
    rng = np.random.default_rng(5)
    some_gift = False
    for tree in _games():
        s = normalize_per_infoset(tree, rng.uniform(0.1, 1.0, tree.num_slots))
        for g in tree.infosets_of(0):
            for k in (1, math.inf):
                plain = make_subgame(tree, s, int(g), SubgameOptions(k=k))
                reach = make_subgame(tree, s, int(g), SubgameOptions(k=k, reach=True))
                if reach.is_empty:
                    continue
                assert np.all(reach.gifts >= 0)
                some_gift |= bool(np.any(reach.gifts > 1e-9))
                sol = solve_subgame(reach)
                assert np.all(sol.margins >= -reach.gifts - 1e-9)
                assert sol.value >= solve_subgame(plain).value - 1e-9
    assert some_gift


def test_blueprint_alternate_values_equal_best_response_values_at_equilibrium() -> None:
    """Obscuro, appendix C.2: with an equilibrium profile, u(x, y|J) = u*(x|J) wherever y reaches
    J."""
    from caligo.core.strategy import realization_plan
    from caligo.subgame.gadget import AlternateValues

    for tree in _games():
        s = solve_lp(tree).strategy
        y = realization_plan(tree, s, 1)
        for g in tree.infosets_of(0):
            a = make_subgame(tree, s, int(g), SubgameOptions(k=math.inf))
            b = make_subgame(
                tree,
                s,
                int(g),
                SubgameOptions(k=math.inf, alternate_values=AlternateValues.BLUEPRINT),
            )
            for r, kid in enumerate(a.root_kinfo):
                node = int(np.flatnonzero(tree.kinfo[:, 1] == kid)[0])
                if y[tree.seq[node, 1]] > 1e-9:
                    assert b.alternate_values[r] == pytest.approx(a.alternate_values[r], abs=1e-7)
