"""`caligo.search.materialize`: the roots, the gadget layer and the compacted copy of the
carried tree (Obscuro, appendix C.1, Fig. 9 lines 14-24).

On fully expanded arenas of small games the carried tree holds every state of P, so nothing is
sampled and the new arena must be exactly the old one below the roots: every new node the copy
of an old node of the same game state, with the same player, action, value and children, in the
same order. The root layer must be what the paper's construction says: each J's roots weighted
by q_h summing to 1, the Resolve prior half uniform and half blueprint reach (C.3), thresholds
sigma_J (v_alt(J) - g(J)) (C.2), and the gadget opponent's weights from its regret minimizers
(Fig. 10 line 12).
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.search.arena import EXPANDED, Arena, check_invariants
from caligo.search.config import ResolvePrior, SubgameKind
from caligo.search.materialize import singleton_salt
from tests.search.conftest import full_search, reroots


def _walk_copy(old: Arena, new: Arena, h: int, o: int) -> int:
    """Check new row h is a copy of old row o, recursively; the number of rows checked."""
    on, nn = old.nodes, new.nodes
    assert int(nn.state[h]) == int(on.state[o])
    assert int(nn.player[h]) == int(on.player[o])
    assert float(nn.value[h]) == float(on.value[o])
    old_kids = list(old.children(o)) if on.flags[o] & EXPANDED else []
    new_kids = list(new.children(h)) if nn.flags[h] & EXPANDED else []
    assert len(new_kids) == len(old_kids)
    n = 1
    for c, d in zip(new_kids, old_kids, strict=True):
        assert int(nn.action[c]) == int(on.action[d])
        assert float(nn.chance_prob[c]) == float(on.chance_prob[d])
        n += _walk_copy(old, new, c, d)
    return n


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("kind", [SubgameKind.KLUSS, SubgameKind.KLSS])
def test_the_carried_tree_is_copied_node_for_node(game: str, kind: SubgameKind) -> None:
    tree = load_game(game)
    for old, new, info in reroots(tree, full_search(tree, 25, subgame=kind), 5):
        check_invariants(new)
        assert info.sampled == 0 and info.carried_roots.size == new.n_roots
        rows = sum(_walk_copy(old, new, r, int(o)) for r, o in enumerate(info.carried_roots))
        assert rows == new.n_nodes == info.carried_nodes
        assert new.n_infosets - 1 == info.carried_infosets  # all but the gadget's


@pytest.mark.parametrize("prior", [ResolvePrior.BLUEPRINT_MIX, ResolvePrior.UNIFORM])
def test_the_root_layer_follows_the_construction(prior: ResolvePrior) -> None:
    tree = load_game("leduc_poker")
    for _, new, info in reroots(tree, full_search(tree, 25, resolve_prior=prior), 3):
        m = new.n_j
        rt, nd = new.roots, new.nodes
        ptr = rt.ptr[: m + 1]
        np.testing.assert_array_equal(np.diff(ptr), info.roots_per_j)
        for j in range(m):
            q = nd.chance_prob[ptr[j] : ptr[j + 1]]
            assert q.sum() == pytest.approx(1.0, abs=1e-12) and (q >= 0).all()
        assert info.alpha.sum() == pytest.approx(1.0, abs=1e-12)
        if prior is ResolvePrior.UNIFORM:
            np.testing.assert_allclose(info.alpha, np.full(m, 1.0 / m), atol=0)
        else:  # half uniform, half blueprint reach: every J keeps at least 1 / (2m)
            assert (info.alpha >= 0.5 / m - 1e-15).all()
        np.testing.assert_allclose(info.threshold, info.sigma * (info.alt - info.gift),
                                   atol=1e-15)
        np.testing.assert_array_equal(rt.threshold[:m], info.threshold)
        np.testing.assert_array_equal(rt.alpha[:m], info.alpha)
        # a fresh blend gadget (Fig. 10 line 12): w_J = p_max alpha_J enter_J + (1 - p_max)
        # mm_J with uniform regret minimizers (enter_J = 1/2, mm_J = 1/m), so p_max = 1/2
        np.testing.assert_allclose(rt.w[:m], 0.25 * info.alpha + 0.5 / m, atol=1e-15)
        assert new.infosets.n_actions[0] == m and (new.slots.strat[:m] == 1.0 / m).all()


def test_a_singleton_salt_is_a_nonzero_function_of_the_state() -> None:
    salts = [singleton_salt(k) for k in range(2000)]
    assert all(s != 0 for s in salts) and len(set(salts)) == 2000
    assert singleton_salt(17) == singleton_salt(17)
