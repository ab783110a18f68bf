"""The margins experiment (Ha 2016, section I.6) on Leduc's second-round subgames.

Sources: the sign pattern is Ha 2016, section I.6's result (endgame solving -518.5 +- 49.19,
re-solving 8.79 +- 2.45, max-margin 101.49 +- 7.09 mbb/g); Resolve's non-negative margins are Ha
2016, chapter H (the re-solving LP keeps every root CBV at or below the blueprint's: the blueprint
is feasible with value 0); the margin itself is Ha 2016, Definition 5, recomputed here by hand from
`best_response` infoset values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from caligo.core.best_response import best_response
from caligo.core.games import load_game
from caligo.core.lp import solve_lp
from caligo.core.strategy import realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray
from caligo.experiments import margins as mg
from caligo.subgame.gadget import GadgetKind, SubgameOptions, lift, make_subgame, subgame_margins
from caligo.subgame.solve import SolveMethod, solve_subgame
from tests.conftest import SHORT


@pytest.fixture(scope="module")
def leduc() -> GameTree:
    return load_game(mg.LEDUC)


@pytest.fixture(scope="module")
def subgames(leduc: GameTree) -> tuple[mg.SecondRoundSubgame, ...]:
    return mg.second_round_subgames(leduc)


def test_thirty_second_round_subgames(
    leduc: GameTree, subgames: tuple[mg.SecondRoundSubgame, ...]
) -> None:
    # 5 first-round histories reach the public card (cc, rc, crc, rrc, crrc) x 6 public cards;
    # each root set holds the 20 private deals of the 5 remaining cards, 5 per player-1 card
    assert len(subgames) == 30
    assert len({s.name for s in subgames}) == 30
    for s in subgames:
        assert len(s.roots) == 5
        assert sum(len(r) for r in s.roots) == 20


def test_sign_pattern_small_t() -> None:
    # Ha 2016, section I.6: endgame solving < 0 <= re-solving <= max-margin (CFR+ on every gadget)
    cfg = mg.MarginsConfig(blueprint_iterations=(10,), gadget_iterations=(1000,))
    res = mg.run_margins(cfg)
    unsafe, resolve, maxm = (res.summary(10, 1000, k).mean for k in mg.METHODS)
    assert res.summary(10, 1000, GadgetKind.RESOLVE).n == 30
    assert unsafe < 0.0
    assert -1e-6 <= resolve <= maxm + 1e-6
    # the per-subgame margin of Maxmargin is (near) the largest of the three
    by = {(s.method, s.subgame): s.margin for s in res.samples}
    for s in res.samples:
        if s.method is GadgetKind.MAXMARGIN:
            assert s.margin >= by[(GadgetKind.UNSAFE, s.subgame)] - 1e-3
            assert s.margin >= by[(GadgetKind.RESOLVE, s.subgame)] - 1e-3


def test_exact_nash_blueprint_resolve_margins_nonnegative(
    leduc: GameTree, subgames: tuple[mg.SecondRoundSubgame, ...]
) -> None:
    nash = solve_lp(leduc).strategy
    cfg = mg.MarginsConfig(
        blueprint_iterations=(1,), solver=mg.GadgetSolver.LP, methods=(GadgetKind.RESOLVE,)
    )
    chosen = subgames[::3] if SHORT else subgames
    samples = mg.margin_samples(leduc, nash, 0, cfg, chosen)
    assert len(samples) == len(chosen)
    for s in samples:
        assert s.margin >= -1e-9, (s.subgame, s.margin)


def _by_hand(tree: GameTree, strategy: FloatArray, roots: tuple[IntArray, ...]) -> FloatArray:
    """u*(x|I0) from best_response: sum V(J) over player 1's first infosets J below I0, / R."""
    br = best_response(tree, strategy, 1)
    x = realization_plan(tree, strategy, 0)
    out = []
    for nodes in roots:
        seen: set[int] = set()
        value = 0.0
        frontier = list(nodes)
        while frontier:  # down to player 1's first decisions (no terminal comes before them)
            h = frontier.pop()
            if int(tree.player[h]) == 1:
                g = int(tree.infoset[h])
                if g not in seen:
                    seen.add(g)
                    value += float(br.infoset_values[g])
                continue
            assert int(tree.num_children[h]) > 0
            first = int(tree.first_child[h])
            frontier += range(first, first + int(tree.num_children[h]))
        reach = float(np.sum(tree.chance_reach[nodes] * x[tree.seq[nodes, 0]]))
        out.append(value / reach)
    return np.array(out)


@pytest.mark.parametrize("kind", mg.METHODS)
def test_margin_matches_best_response_values(
    leduc: GameTree, subgames: tuple[mg.SecondRoundSubgame, ...], kind: GadgetKind
) -> None:
    bp = mg.cfr_plus_blueprint(leduc, 30)
    sg = subgames[7]
    sub = make_subgame(leduc, bp, sg.infoset, SubgameOptions(kind=kind, k=math.inf))
    sol = solve_subgame(sub, SolveMethod.LP)
    resolved = lift(leduc, bp, sub, sol.strategy)
    direct = mg.direct_margins(leduc, bp, resolved, sg.roots)
    hand = _by_hand(leduc, resolved, sg.roots) - _by_hand(leduc, bp, sg.roots)
    np.testing.assert_allclose(direct, hand, atol=1e-9)
    before, _ = mg.blueprint_values(leduc, bp, sg.roots)
    np.testing.assert_allclose(before, _by_hand(leduc, bp, sg.roots), atol=1e-9)
    # and with the gadget's own reading (same roots here: the blueprint reaches every root)
    assert sub.num_roots == len(sg.roots)
    np.testing.assert_allclose(direct, subgame_margins(sub, sol.strategy), atol=1e-7)


def test_t_interval() -> None:
    mean, hw = mg.t_interval([1.0, 2.0, 3.0])
    assert mean == pytest.approx(2.0)
    assert hw == pytest.approx(4.302652729911275 * 1.0 / math.sqrt(3))  # t_{0.975, 2}
    assert mg.t_interval([5.0]) == (5.0, 0.0)


def test_config_validation() -> None:
    with pytest.raises(mg.MarginsError, match="blueprint_iterations"):
        mg.MarginsConfig(blueprint_iterations=(100, 10))
    with pytest.raises(mg.MarginsError, match="confidence"):
        mg.MarginsConfig(confidence=1.5)


def test_write_outputs(tmp_path: object) -> None:
    from pathlib import Path

    cfg = mg.MarginsConfig(
        blueprint_iterations=(10, 30), gadget_iterations=(10, 100), max_subgames=4
    )
    res = mg.run_margins(cfg)
    paths = mg.write_margins(res, Path(str(tmp_path)))
    names = {p.name for p in paths}
    assert {
        "margins.md",
        "margins.csv",
        "margins.json",
        "margins.png",
        "margins_gadget_iterations.png",
    } <= names
    assert "Maxmargin" in res.table().markdown()
