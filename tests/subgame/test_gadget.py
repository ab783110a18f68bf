"""make_subgame (Zhang & Sandholm 2021, Algorithm 12), lift, margins and the LP/CFR solves, on
random games, Figure 1 and Leduc poker."""

from __future__ import annotations

import math

import numpy as np
import pytest

from caligo.core.best_response import best_response, player_exploitability
from caligo.core.builtin_games import matching_pennies_n
from caligo.core.games import load_game
from caligo.core.lp import solve_lp
from caligo.core.random_games import random_game
from caligo.core.strategy import normalize_per_infoset, uniform_strategy
from caligo.core.tree import GameTree, build_tree
from caligo.subgame.gadget import (
    GadgetKind,
    Subgame,
    SubgameError,
    SubgameOptions,
    lift,
    make_subgame,
    region_values,
    subgame_margins,
)
from caligo.subgame.solve import CFRSettings, SolveMethod, solve_subgame


def _random_strategy(tree: GameTree, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return normalize_per_infoset(tree, rng.uniform(0.05, 1.0, tree.num_slots))


def _source_margins(
    tree: GameTree, blueprint: np.ndarray, sub: Subgame, lifted: np.ndarray
) -> np.ndarray:
    """u*(x'|I0) - u*(x|I0) measured in the source game (the definition, Zhang & Sandholm 2021,
    section 3)."""
    regions = [np.flatnonzero(tree.kinfo[:, 1] == k).astype(np.int32) for k in sub.root_kinfo]
    after = best_response(tree, lifted, 1).strategy
    v1, r1 = region_values(tree, lifted, after, regions)
    return v1 / r1 - sub.alternate_values


def _games() -> list[GameTree]:
    trees = [build_tree(random_game(seed, max_depth=5)) for seed in range(8)]
    return [t for t in trees if len(t.infosets_of(0)) and len(t.infosets_of(1))][:5]


def test_options_are_validated() -> None:
    for bad in (0, 2, -1, 1.5, True):
        with pytest.raises(SubgameError):
            SubgameOptions(k=bad)
    with pytest.raises(SubgameError):
        SubgameOptions(kind=3)  # type: ignore[arg-type]
    with pytest.raises(SubgameError):
        SubgameOptions(k=3, merge_transpositions=True)
    assert SubgameOptions(k=math.inf).order == math.inf
    assert SubgameOptions(k=1, kluss=True).order == 2


def test_bad_inputs_raise() -> None:
    t = load_game("figure1")
    s = uniform_strategy(t)
    with pytest.raises(SubgameError):
        make_subgame(t, s, t.infoset_index()["p1:C2'/C2"], 1)
    with pytest.raises(ValueError):
        make_subgame(t, s[:-1], 0, 1)


@pytest.mark.parametrize("kind", list(GadgetKind))
@pytest.mark.parametrize("k", [1, 3, math.inf])
def test_margins_on_random_games(kind: GadgetKind, k: float) -> None:
    """Blueprint margins are 0; LP margins read off the gadget equal the source game's."""
    for i, tree in enumerate(_games()):
        s = _random_strategy(tree, i)
        for g in tree.infosets_of(0):
            sub = make_subgame(tree, s, int(g), SubgameOptions(kind=kind, k=k))
            if sub.is_empty:
                continue
            base = _gadget_blueprint_from(sub, tree, s)
            np.testing.assert_allclose(lift(tree, s, sub, base), s)
            np.testing.assert_allclose(subgame_margins(sub, base), 0, atol=1e-9)
            sol = solve_subgame(sub)
            lifted = lift(tree, s, sub, sol)
            np.testing.assert_allclose(
                sol.margins, _source_margins(tree, s, sub, lifted), atol=1e-8
            )
            if kind is GadgetKind.MAXMARGIN:
                assert sol.min_margin >= -1e-9  # the blueprint is feasible with margin 0
                assert sol.value == pytest.approx(
                    float(np.min(sol.margins * sub.scale())), abs=1e-8
                )


def test_nested_gadget_carries_B_and_keeps_zero_blueprint_margins() -> None:
    """A gadget of a gadget (B carried over, scaled) still gives the blueprint margin 0."""
    for i, tree in enumerate(_games()):
        s = _random_strategy(tree, 10 + i)
        for g in tree.infosets_of(0):
            for kind in GadgetKind:
                sub = make_subgame(tree, s, int(g), SubgameOptions(kind=kind, k=1))
                if sub.is_empty:
                    continue
                sol = solve_subgame(sub)
                gt = sub.tree
                for g2 in gt.infosets_of(0):
                    sub2 = make_subgame(
                        gt, sol.strategy, int(g2), SubgameOptions(kind=kind, k=1), sub.extra
                    )
                    if sub2.is_empty:
                        continue
                    base = _gadget_blueprint_from(sub2, gt, sol.strategy)
                    np.testing.assert_allclose(subgame_margins(sub2, base), 0, atol=1e-9)


def _gadget_blueprint_from(sub: Subgame, src: GameTree, s: np.ndarray) -> np.ndarray:
    gt = sub.tree
    out = uniform_strategy(gt)
    for g in gt.infosets_of(0):
        j = int(sub.infoset_map[g])
        if j >= 0:
            n = int(gt.infoset_num_actions[g])
            out[gt.infoset_offset[g] : gt.infoset_offset[g] + n] = s[
                src.infoset_offset[j] : src.infoset_offset[j] + n
            ]
    return out


def test_lp_and_cfr_agree_on_figure1() -> None:
    t = load_game("figure1")
    s = normalize_per_infoset(t, np.linspace(1.0, 2.0, t.num_slots))
    for kind in (GadgetKind.MAXMARGIN, GadgetKind.RESOLVE):
        sub = make_subgame(t, s, t.infoset_index()["p0:R1"], SubgameOptions(kind=kind, k=1))
        lp = solve_subgame(sub)
        cfr = solve_subgame(sub, SolveMethod.CFR, cfr=CFRSettings(iterations=3000))
        assert cfr.value == pytest.approx(lp.value, abs=2e-3)


def test_unreached_infoset_gives_empty_gadget() -> None:
    """Kuhn poker, player 0 always bets first: her infosets after check-bet are never reached,
    the gadget is empty and lifting keeps the blueprint."""
    t = load_game("kuhn_poker")
    s = uniform_strategy(t)
    first = [int(g) for g in t.infosets_of(0) if int(t.infoset_parent_seq[g]) == 0]
    later = [int(g) for g in t.infosets_of(0) if int(t.infoset_parent_seq[g]) != 0]
    for g in first:
        o = int(t.infoset_offset[g])
        s[o : o + 2] = [0.0, 1.0]  # Kuhn actions: 0 = pass, 1 = bet
    for g in later:
        for kind in GadgetKind:
            sub = make_subgame(t, s, g, SubgameOptions(kind=kind, k=1))
            assert sub.is_empty and sub.root_infoset == -1
            sol = solve_subgame(sub)
            assert sol.margins.size == 0
            np.testing.assert_array_equal(lift(t, s, sub, sol), s)


def _twin_game() -> GameTree:
    """Chance picks 1 or 2, seen by player 1 only; then the same matching pennies follows."""
    from caligo.core.builtin_games import TableGame
    from caligo.core.game import CHANCE, TERMINAL

    def pf(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def af(h: tuple[int, ...]) -> list[int]:
        return [1, 2] if not h else [10, 11]

    def of(h: tuple[int, ...], p: int) -> object:
        return h[0] if len(h) == 1 and p == 1 else None

    def uf(h: tuple[int, ...]) -> float:
        return 1.0 if h[1] - 10 == h[2] - 10 else -1.0

    return build_tree(TableGame("twins", pf, af, of, uf, {1: "1", 2: "2", 10: "h", 11: "t"}))


def test_transposition_merging_skips_equal_subtrees() -> None:
    t = _twin_game()
    s = normalize_per_infoset(t, np.linspace(1.0, 2.0, t.num_slots))
    g = int(t.infosets_of(0)[0])
    a = make_subgame(t, s, g, SubgameOptions(k=1))
    b = make_subgame(t, s, g, SubgameOptions(k=1, merge_transpositions=True))
    assert (a.num_roots, b.num_roots) == (2, 1)
    assert b.tree.num_nodes < a.tree.num_nodes
    # N-matching pennies: the nodes of an infoset pay differently, so nothing merges
    mp = build_tree(matching_pennies_n(6))
    s = uniform_strategy(mp)
    for g in mp.infosets_of(0):
        x = make_subgame(mp, s, int(g), SubgameOptions(k=1))
        y = make_subgame(mp, s, int(g), SubgameOptions(k=1, merge_transpositions=True))
        assert x.num_roots == y.num_roots


def test_common_knowledge_maxmargin_keeps_leduc_ne_unexploitable() -> None:
    """k = inf is classical subgame solving: with an NE blueprint, a Maxmargin (and Resolve)
    solve at second-round infosets of Leduc leaves the exploitability at 0."""
    t = load_game("leduc_poker")
    s = solve_lp(t).strategy
    names = t.infoset_names
    second = [int(g) for g in t.infosets_of(0) if "Round 2" in names[g] and "Round2: ]" in names[g]]
    rng = np.random.default_rng(3)
    for g in rng.choice(second, 4, replace=False):
        for kind in (GadgetKind.MAXMARGIN, GadgetKind.RESOLVE):
            sub = make_subgame(t, s, int(g), SubgameOptions(kind=kind, k=math.inf))
            assert sub.num_roots == 5  # player 1's five possible private cards
            sol = solve_subgame(sub)
            assert sol.min_margin >= -1e-9
            assert player_exploitability(t, lift(t, s, sub, sol), 0) < 1e-9


def test_infoset_by_name_and_kind_by_value() -> None:
    """A gadget built at an infoset named as in OpenSpiel ("1pb": Kuhn's Queen facing a bet) is
    the gadget built at its id; "maxmargin" converts to GadgetKind.MAXMARGIN; bad names fail."""
    from caligo.core.lp import solve_lp

    tree = load_game("kuhn_poker")
    x = solve_lp(tree).strategy
    by_name = make_subgame(tree, x, "1pb", SubgameOptions(kind="maxmargin", k=1))  # type: ignore[arg-type]
    by_id = make_subgame(tree, x, tree.infoset_index()["1pb"], SubgameOptions(k=1))
    assert by_name.options == by_id.options
    assert (by_name.extra != by_id.extra).nnz == 0
    with pytest.raises(SubgameError, match="no infoset named"):
        make_subgame(tree, x, "nope")
    with pytest.raises(SubgameError, match="player-0"):
        make_subgame(tree, x, "1p")  # player 1's infoset
    with pytest.raises(SubgameError, match="kind must be one of"):
        SubgameOptions(kind="max")  # type: ignore[arg-type]


@pytest.mark.parametrize("source", ["best_response", "blueprint"])
def test_a_gadget_computes_the_blueprints_plans_and_best_response_once(
        source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reach-Maxmargin on Leduc: the blueprint's two realization plans and player 1's best
    response are computed once for the whole gadget (alternate values and gifts share them;
    before, the best response ran twice and the plans five times). The values themselves are
    checked against independent LPs by the other tests of this file."""
    from collections import Counter

    import caligo.core.best_response as BR
    import caligo.subgame.gadget as G
    from caligo.subgame.gadget import AlternateValues

    tree = load_game("leduc_poker")
    blueprint = _random_strategy(tree, 5)
    opts = SubgameOptions(kind=GadgetKind.MAXMARGIN, k=1, reach=True,
                          alternate_values=AlternateValues(source))
    infoset = int(tree.infosets_of(0)[3])
    before = make_subgame(tree, blueprint, infoset, opts)
    calls: Counter[str] = Counter()
    for module in (G, BR):
        for name in ("realization_plan", "best_response"):
            if hasattr(module, name):
                f = getattr(module, name)

                def counted(*a: object, _f: object = f, _n: str = name, **k: object) -> object:
                    calls[_n] += 1
                    return _f(*a, **k)  # type: ignore[operator]

                monkeypatch.setattr(module, name, counted)
    sub = make_subgame(tree, blueprint, infoset, opts)
    assert calls == Counter({"realization_plan": 2, "best_response": 1})
    assert np.array_equal(sub.alternate_values, before.alternate_values, equal_nan=True)
    assert np.array_equal(sub.gifts, before.gifts) and sub.num_roots > 0
