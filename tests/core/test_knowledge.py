"""Knowledge sets (Zhang & Sandholm 2021, section 3, Definitions 1-2; section 4 N-matching
pennies)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caligo.core.games import load_game
from caligo.core.knowledge import (
    Convention,
    _bfs_kernel,
    common_knowledge_closure,
    components,
    diameter,
    distances,
    infoset_nodes,
    knowledge_graph,
    order_k_set,
    reference_distances,
    set_sizes,
    subtree_mask,
)

N = 10


@pytest.fixture(scope="module")
def mp():
    return load_game(f"matching_pennies_n(n={N})")


def _p0_node(tree, n):
    """The player-0 node after chance draws n (children of the root in draw order)."""
    return int(tree.first_child[0] + n - 1)


def test_matching_pennies_order_k_sets_by_hand(mp):
    # Zhang & Sandholm 2021, section 4: player 0 sees n//2, player 1 sees (n+1)//2 before either
    # moves, so at depth 1 the hyperedges are {2m, 2m+1} (player 0) and {2m-1, 2m} (player 1): a
    # path 1 - 2 - ... - N. From player 0's infoset {2m, 2m+1}, I^k = {2m-k+1, ..., 2m+k} (clipped).
    m = 2
    infoset = {_p0_node(mp, 2 * m), _p0_node(mp, 2 * m + 1)}
    g = int(mp.infoset[_p0_node(mp, 2 * m)])
    assert set(infoset_nodes(mp, g).tolist()) == infoset
    for k in range(1, N + 2):
        lo, hi = max(1, 2 * m - k + 1), min(N, 2 * m + k)
        got = set(order_k_set(mp, sorted(infoset), k).tolist())
        assert got == {_p0_node(mp, n) for n in range(lo, hi + 1)}, k
        assert len(got) <= 2 * k  # Theta(k) nodes
    # I^inf: every player-0 node (no common knowledge at all); its subtree is the whole game
    # except the root chance node.
    closure = common_knowledge_closure(mp, sorted(infoset))
    assert set(closure.tolist()) == {_p0_node(mp, n) for n in range(1, N + 1)}
    below = subtree_mask(mp, closure)
    assert below.sum() == mp.num_nodes - 1 and not below[0]
    assert order_k_set(mp, sorted(infoset), math.inf).tolist() == closure.tolist()


def test_matching_pennies_diameter(mp):
    # From {N} (player 0 sees N//2 alone when N is even) the path to node 1 has N - 1 edges.
    assert diameter(mp) == N


def test_closure_is_union_of_components():
    tree = load_game("kuhn_poker")
    label = components(tree)
    for h in range(tree.num_nodes):
        closure = common_knowledge_closure(tree, [h])
        assert set(closure.tolist()) == set(np.flatnonzero(label == label[h]).tolist())


def test_kuhn_deal_level_component():
    # Kuhn: after the deal each player knows only their card; the 6 deals form one component
    # (a 6-cycle), so from an infoset of 2 nodes I^2 has 4 nodes and I^3 all 6.
    tree = load_game("kuhn_poker")
    g = int(tree.infoset[np.flatnonzero(tree.player == 0)[0]])
    nodes = infoset_nodes(tree, g)
    assert [order_k_set(tree, nodes, k).size for k in (1, 2, 3, 4)] == [2, 4, 6, 6]
    assert diameter(tree) == 3


def test_order_k_monotone_and_sizes_agree():
    tree = load_game("leduc_poker")
    sets = [infoset_nodes(tree, g) for g in range(0, tree.num_infosets, 37)]
    sizes, ecc = set_sizes(tree, sets, 5)
    for s, row, e in zip(sets, sizes, ecc, strict=True):
        prev = None
        for k in range(1, 6):
            got = order_k_set(tree, s, k)
            assert got.size == row[k - 1]
            if prev is not None:
                assert set(prev.tolist()) <= set(got.tolist())
            prev = got
        closure = common_knowledge_closure(tree, s)
        assert closure.size == row[-1]
        assert order_k_set(tree, s, int(e) + 1).size == closure.size
        assert int(e) == 0 or order_k_set(tree, s, int(e)).size < closure.size


def test_mask_restricts_graph(mp):
    # Keep only the player-0 nodes with n <= 4: the path is cut there.
    keep = [_p0_node(mp, n) for n in range(1, 5)]
    g = knowledge_graph(mp, mask=keep)
    closure = common_knowledge_closure(mp, [keep[0]], graph=g)
    assert closure.tolist() == sorted(keep)
    with pytest.raises(ValueError, match="outside"):
        order_k_set(mp, [_p0_node(mp, 6)], 2, graph=g)


def test_live_convention_drops_finished_players(mp):
    # At player 1's nodes player 0 has nothing left to decide: under LIVE only player 1's
    # infosets remain, so a player-1 infoset is its own closure.
    g = knowledge_graph(mp, Convention.LIVE)
    h = int(np.flatnonzero(mp.player == 1)[0])
    nodes = infoset_nodes(mp, int(mp.infoset[h]))
    assert common_knowledge_closure(mp, nodes, graph=g).tolist() == nodes.tolist()
    assert (g.node_edge[mp.player == 3] == -1).all()


def test_bad_k():
    tree = load_game("kuhn_poker")
    with pytest.raises(ValueError, match="k must be"):
        order_k_set(tree, [0], 0)
    with pytest.raises(ValueError, match="node ids"):
        order_k_set(tree, [tree.num_nodes], 1)


@st.composite
def hypergraphs(draw):
    n = draw(st.integers(1, 25))
    e0 = draw(st.integers(1, 8))
    e1 = draw(st.integers(1, 8))
    col0 = draw(st.lists(st.integers(-1, e0 - 1), min_size=n, max_size=n))
    col1 = draw(st.lists(st.integers(-1, e1 - 1), min_size=n, max_size=n))
    node_edge = np.array(
        [[a, (b + e0) if b >= 0 else -1] for a, b in zip(col0, col1, strict=True)],
        dtype=np.int32,
    ).reshape(n, 2)
    sources = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True))
    max_dist = draw(st.one_of(st.none(), st.integers(0, 5)))
    return node_edge, e0 + e1, sources, max_dist


@settings(max_examples=200, deadline=None)
@given(hypergraphs())
def test_bfs_kernel_matches_reference(case):
    node_edge, num_edges, sources, max_dist = case
    n = node_edge.shape[0]
    flat = node_edge.ravel()
    members = np.flatnonzero(flat >= 0)
    order = np.argsort(flat[members], kind="stable")
    edge_nodes = (members[order] // 2).astype(np.int32)
    edge_ptr = np.zeros(num_edges + 1, dtype=np.int32)
    np.cumsum(np.bincount(flat[members], minlength=num_edges), out=edge_ptr[1:])
    dist = np.full(n, -1, dtype=np.int32)
    reached = _bfs_kernel(
        node_edge,
        edge_ptr,
        edge_nodes,
        np.array(sources, np.int32),
        -1 if max_dist is None else max_dist,
        dist,
        np.zeros(n, np.int32),
        np.zeros(num_edges, np.bool_),
    )
    ref = reference_distances(node_edge, sources, max_dist)
    assert reached == len(ref)
    assert {h: int(d) for h, d in enumerate(dist) if d >= 0} == ref


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(["kuhn_poker", "matching_pennies_n(n=7)", "rock_paper_scissors"]),
    st.sampled_from(list(Convention)),
    st.data(),
)
def test_public_api_matches_reference_on_games(spec, convention, data):
    tree = load_game(spec)
    g = knowledge_graph(tree, convention)
    src = data.draw(
        st.lists(st.integers(0, tree.num_nodes - 1), min_size=1, max_size=3, unique=True)
    )
    dist = distances(tree, src, graph=g)
    ref = reference_distances(g.node_edge, src)
    assert {h: int(d) for h, d in enumerate(dist) if d >= 0} == ref
