"""Zhang & Sandholm 2021, appendix C: the A and B matrices of the Maxmargin gadgets at R1 of the
Figure 1 game with the uniform blueprint, rows and columns labelled by sequence names as in the
paper.

One entry differs, and on purpose: the paper prints B[∅, c2'] = -5/2 for the common-knowledge
gadget and -5 for the 1-KLSS one (its text even says "3" for the latter). With the A matrices it
prints, those entries would give the blueprint itself a margin of +5/4 (resp. +5/2) at C2',
contradicting section 3's M(I) = u*(x'|I) - u*(x|I) = 0 at x' = x. The paper summed the two
nodes' values of C2' instead of averaging them (section 5's "5/2 at C2'" is that sum,
V(C2') / p(2)). Algorithm 12's own normalization (lines 16-21) gives -u*(x|C2') = -5/4 in the
common-knowledge gadget and -(R/D) u*(x|C2') = -5/2 in the 1-KLSS gadget, which is what we
build and check, together with the zero blueprint margins that pin it down.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from caligo.core.best_response import best_response
from caligo.core.games import load_game
from caligo.core.sequence_form import payoff_matrix
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import GameTree
from caligo.subgame.gadget import Subgame, make_subgame, subgame_margins

F = Fraction


def _seq_names(sub: Subgame, source: GameTree) -> tuple[list[str], list[str]]:
    """Paper names: ∅, R1h, ... for player 0; ∅, c0', C0h, ... for player 1."""
    gt = sub.tree
    act = {10: "h", 11: "t"}
    names: list[list[str]] = [["∅"] * gt.num_sequences[0], ["∅"] * gt.num_sequences[1]]
    for g in range(gt.num_infosets):
        p = int(gt.infoset_player[g])
        for a in range(int(gt.infoset_num_actions[g])):
            sq = int(gt.infoset_seq[g]) + a
            if g == int(gt.infoset[0]):  # the gadget root: one action per root infoset
                node = int(sub.node_map[sub.copy_roots[a][0]])
                n = int(source.action[node])
                names[p][sq] = f"c{2 * (n // 2)}'"
            else:
                base = gt.infoset_names[g].split(":")[1].split("/")[-1]
                names[p][sq] = base + act[int(gt.slot_action[gt.infoset_offset[g] + a])]
    return names[0], names[1]


def _entries(sub: Subgame, source: GameTree, mat: np.ndarray) -> dict[tuple[str, str], Fraction]:
    rows, cols = _seq_names(sub, source)
    out = {}
    for i, j in zip(*np.nonzero(np.abs(mat) > 1e-12), strict=True):
        out[(rows[i], cols[j])] = F(float(mat[i, j])).limit_denominator(1000)
    return out


@pytest.fixture(scope="module")
def fig1() -> GameTree:
    return load_game("figure1")


def _gadget(tree: GameTree, k: float) -> Subgame:
    return make_subgame(tree, uniform_strategy(tree), tree.infoset_index()["p0:R1"], k)


def test_figure1_game_shape(fig1: GameTree) -> None:
    assert set(fig1.infoset_names) == {
        "p0:R1", "p0:R3", "p0:Re", "p1:C0'/C0", "p1:C2'/C2", "p1:C4'/C4", "p1:Ce'/Ce",
    }  # fmt: skip
    # player 1's knowledge infosets at the chance children: C0' = {1}, C2' = {2, 3}, C4' = {4}
    kids = range(1, 6)
    k1 = [int(fig1.kinfo[h, 1]) for h in kids]
    assert k1[1] == k1[2] and len({k1[0], k1[1], k1[3], k1[4]}) == 4
    k0 = [int(fig1.kinfo[h, 0]) for h in kids]
    assert k0[0] == k0[1] and k0[2] == k0[3] and k0[0] != k0[2]


def test_section5_counterfactual_values(fig1: GameTree) -> None:
    """u*(x|C0') = u*(x|C4') = 1/2; C2': 5/2 as the paper sums it, 5/4 normalized."""
    s = uniform_strategy(fig1)
    sub_ck = _gadget(fig1, math.inf)
    by_name = dict(zip(_seq_names(sub_ck, fig1)[1][1:4], sub_ck.alternate_values, strict=True))
    assert by_name == pytest.approx({"c0'": 0.5, "c2'": 1.25, "c4'": 0.5})
    br = best_response(fig1, s, 1)
    ix = fig1.infoset_index()
    per_branch = br.infoset_values / 0.2  # divide by p(h) = 1/5 of one chance child
    assert per_branch[ix["p1:C0'/C0"]] == pytest.approx(0.5)
    assert per_branch[ix["p1:C2'/C2"]] == pytest.approx(2.5)
    assert per_branch[ix["p1:C4'/C4"]] == pytest.approx(0.5)
    # in 1-KLSS gadget units (R / D = 2) the alternate value of C2' is the section's 5/2
    sub1 = _gadget(fig1, 1)
    assert (sub1.alternate_values * sub1.scale()).tolist() == pytest.approx([0.5, 2.5])


def test_common_knowledge_gadget_matrices(fig1: GameTree) -> None:
    sub = _gadget(fig1, math.inf)
    A = _entries(sub, fig1, payoff_matrix(sub.tree).toarray())
    assert A == {
        ("R1h", "C0h"): 1, ("R1h", "C2h"): 1,
        ("R1t", "C0t"): 4, ("R1t", "C2t"): F(3, 2),
        ("R3h", "C2h"): F(3, 2), ("R3h", "C4h"): 4,
        ("R3t", "C2t"): 1, ("R3t", "C4t"): 1,
    }  # fmt: skip
    B = _entries(sub, fig1, sub.extra.toarray())
    paper_B = {("∅", "c0'"): F(-1, 2), ("∅", "c2'"): F(-5, 2), ("∅", "c4'"): F(-1, 2)}
    assert B == {**paper_B, ("∅", "c2'"): F(-5, 4)}  # see the module docstring
    assert subgame_margins(sub, uniform_strategy(sub.tree)).tolist() == pytest.approx([0, 0, 0])


def test_1klss_gadget_matrices(fig1: GameTree) -> None:
    sub = _gadget(fig1, 1)
    A = _entries(sub, fig1, payoff_matrix(sub.tree).toarray())
    assert A == {("R1h", "C0h"): 1, ("R1h", "C2h"): 2, ("R1t", "C0t"): 4, ("R1t", "C2t"): 3}
    B = _entries(sub, fig1, sub.extra.toarray())
    paper_B = {
        ("∅", "c0'"): F(-1, 2), ("∅", "c2'"): F(-5), ("∅", "C2h"): F(3, 2), ("∅", "C2t"): 1,
    }  # fmt: skip
    assert B == {**paper_B, ("∅", "c2'"): F(-5, 2)}  # see the module docstring
    assert subgame_margins(sub, uniform_strategy(sub.tree)).tolist() == pytest.approx([0, 0])
    # the missing node 3 is a frozen (probability-0) copy, so C2 is one infoset of the gadget
    assert sub.tree.num_infosets == 4
