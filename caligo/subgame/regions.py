"""Node-level helpers of the gadget construction (`caligo.subgame.gadget.make_subgame`) over a
source tree's arrays: depth slices, the nodes below a set of roots, regions, a strategy per node,
the first node of each infoset, the values of regions and of profile sequences, the gifts of
Zhang & Sandholm 2021 (Algorithm 12 line 23) and Obscuro (appendix C.2), the paths a phantom
root needs, and a subtree's signature (for merging transpositions)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import scipy.sparse as sp

from caligo.core.best_response import BestResponse
from caligo.core.strategy import realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray
from caligo.subgame.options import (
    AlternateValues,
)


def _depth_slices(tree: GameTree) -> list[tuple[int, int]]:
    """[start, stop) ranges of nodes per depth (BFS order keeps depth nondecreasing)."""
    key = "subgame_depth_slices"
    cached = tree._cache.get(key)
    if cached is None:
        d = tree.depth
        cuts = np.flatnonzero(np.diff(d)) + 1
        starts = np.concatenate([[0], cuts])
        stops = np.concatenate([cuts, [tree.num_nodes]])
        cached = [(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]
        tree._cache[key] = cached
    return cached  # type: ignore[return-value]


def _below_mask(tree: GameTree, roots: IntArray) -> np.ndarray:
    """Mask of nodes strictly below some node of `roots`."""
    mark = np.zeros(tree.num_nodes, dtype=np.bool_)
    inset = np.zeros(tree.num_nodes, dtype=np.bool_)
    inset[roots] = True
    for a, b in _depth_slices(tree)[1:]:
        par = tree.parent[a:b]
        mark[a:b] = mark[par] | inset[par]
    return mark


def _region_of(tree: GameTree, region_roots: Sequence[IntArray]) -> np.ndarray:
    """region[h] = r if h is at or below a node of region_roots[r] (first one wins), else -1."""
    region = np.full(tree.num_nodes, -1, dtype=np.int32)
    start = np.full(tree.num_nodes, -1, dtype=np.int32)
    for r, nodes in enumerate(region_roots):
        start[nodes] = np.where(start[nodes] < 0, r, start[nodes])
    region[0] = start[0]
    for a, b in _depth_slices(tree)[1:]:
        inherited = region[tree.parent[a:b]]
        region[a:b] = np.where(inherited >= 0, inherited, start[a:b])
    return region


def _node_slot(tree: GameTree, strategy: FloatArray) -> FloatArray:
    """Probability of the incoming edge of each node under `strategy` (1 after chance/root)."""
    prob = np.ones(tree.num_nodes, dtype=np.float64)
    par = tree.parent[1:]
    g = tree.infoset[par]
    dec = g >= 0
    idx = np.arange(1, tree.num_nodes)[dec]
    slot = tree.infoset_offset[g[dec]] + (idx - tree.first_child[par[dec]])
    prob[idx] = strategy[slot]
    return prob


def first_node_of_infoset(tree: GameTree) -> IntArray:
    """The smallest node id of each decision infoset (cached on the tree)."""
    key = "subgame_first_node"
    cached = tree._cache.get(key)
    if cached is None:
        first = np.full(tree.num_infosets, -1, dtype=np.int32)
        ids, idx = np.unique(tree.infoset, return_index=True)
        ok = ids >= 0
        first[ids[ok]] = idx[ok]
        cached = first
        tree._cache[key] = cached
    return cached  # type: ignore[return-value]


def _top_row(extra: sp.spmatrix | None, n1: int) -> FloatArray:
    out = np.zeros(n1, dtype=np.float64)
    if extra is not None:
        out[:] = np.asarray(sp.csr_matrix(extra)[0, :].todense()).ravel()
    return out


def region_values(
    tree: GameTree,
    strategy: FloatArray,
    responder_strategy: FloatArray,
    region_roots: Sequence[IntArray],
    extra: sp.spmatrix | None = None,
    x: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """(V, R) per region: player 1's unnormalized value from each node set on, and its reach.

    V[r] = sum over terminals z at or below region_roots[r] of p(z) x(z) y'(z | root) u(z) plus
    the top-row extra payoffs at player-1 sequences strictly below the roots' sequence, where
    x is player 0's part of `strategy` and y' player 1's part of `responder_strategy`, taken
    relative to the region's roots. R[r] = sum_{h in roots} p(h) x(h). Values in player 0's
    utility. Every node set must lie in one player-1 infoset (a common sequence). `x`: player
    0's realization plan of `strategy`, when the caller has it already.
    """
    if x is None:
        x = realization_plan(tree, strategy, 0)
    xr = x[tree.seq[:, 0]]
    region = _region_of(tree, region_roots)
    is_root = np.zeros(tree.num_nodes, dtype=np.bool_)
    for nodes in region_roots:
        is_root[nodes] = True
    edge = _node_slot(tree, responder_strategy)
    p1_edge = np.where(tree.player[np.maximum(tree.parent, 0)] == 1, edge, 1.0)
    yrel = np.ones(tree.num_nodes, dtype=np.float64)
    for a, b in _depth_slices(tree)[1:]:
        yrel[a:b] = np.where(is_root[a:b], 1.0, yrel[tree.parent[a:b]] * p1_edge[a:b])
    m = len(region_roots)
    z = tree.terminals()
    zr = region[z]
    inr = zr >= 0
    w = tree.chance_reach[z] * xr[z] * yrel[z] * tree.utility[z]
    V = np.bincount(zr[inr], weights=w[inr], minlength=m).astype(np.float64)
    top = _top_row(extra, tree.num_sequences[1])
    if np.any(top[1:] != 0.0):
        seen: set[int] = set()
        for h in np.flatnonzero((tree.player == 1) & (region >= 0)):
            g = int(tree.infoset[h])
            if g in seen:
                continue
            seen.add(g)
            off = int(tree.infoset_offset[g])
            first = int(tree.infoset_seq[g])
            n = int(tree.infoset_num_actions[g])
            acts = responder_strategy[off : off + n]
            V[region[h]] += yrel[h] * float(np.dot(top[first : first + n], acts))
    R = np.array([float(np.sum(tree.chance_reach[nodes] * xr[nodes])) for nodes in region_roots])
    return V, R


def _profile_sequence_values(
    tree: GameTree, strategy: FloatArray, extra: sp.spmatrix | None, x: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Player 1's unnormalized (sequence, infoset) values when both play `strategy` (`x`:
    player 0's realization plan of it)."""
    z = tree.terminals()
    w = tree.chance_reach[z] * tree.utility[z] * x[tree.seq[z, 0]]
    g = np.bincount(tree.seq[z, 1], weights=w, minlength=tree.num_sequences[1]).astype(float)
    if extra is not None:
        g = g + np.asarray(sp.csr_matrix(extra).T @ x, dtype=np.float64).ravel()
    inf_val = np.full(tree.num_infosets, np.nan)
    for j in tree.infosets_of(1)[::-1]:
        off = int(tree.infoset_offset[j])
        first = int(tree.infoset_seq[j])
        n = int(tree.infoset_num_actions[j])
        v = float(np.dot(strategy[off : off + n], g[first : first + n]))
        inf_val[j] = v
        g[tree.infoset_parent_seq[j]] += v
    return g, inf_val


def _gifts(
    tree: GameTree,
    strategy: FloatArray,
    extra: sp.spmatrix | None,
    source: AlternateValues,
    root_seqs: Sequence[int],
    br: BestResponse,
    x: FloatArray,
) -> FloatArray:
    """g(I0) per root, from player 1's sequence chain above each root (see module docstring).
    `br`: player 1's best response to `strategy` (with `extra`); `x`: player 0's realization
    plan of `strategy` (both computed once per gadget by `make_subgame`)."""
    reach = br.infoset_reach
    if source is AlternateValues.BEST_RESPONSE:
        seqv, infv = br.sequence_values, br.infoset_values
    else:
        seqv, infv = _profile_sequence_values(tree, strategy, extra, x)
    owner = tree.seq_infoset[1]
    out = np.zeros(len(root_seqs))
    for r, s in enumerate(root_seqs):
        total = 0.0
        while s != 0:
            j = int(owner[s])
            if reach[j] > 0:
                term = (seqv[s] - infv[j]) / reach[j]
                total += max(term, 0.0)
            s = int(tree.infoset_parent_seq[j])
        out[r] = total
    return out


def _phantom_paths(tree: GameTree, under: np.ndarray, outside: Sequence[IntArray]) -> np.ndarray:
    """Mask of frozen source nodes to copy: ancestors-or-self (below the frozen roots) of one
    node of every player-1 decision infoset below I0 \\ K that the kept subtrees lack."""
    keep = np.zeros(tree.num_nodes, dtype=np.bool_)
    roots = [h for nodes in outside for h in nodes.tolist()]
    if not roots:
        return keep
    covered = set(np.unique(tree.infoset[under & (tree.player == 1)]).tolist())
    start = np.zeros(tree.num_nodes, dtype=np.bool_)
    start[roots] = True
    frozen = start | _below_mask(tree, np.asarray(roots, dtype=np.int32))
    reps: dict[int, int] = {}
    for h in np.flatnonzero(frozen & (tree.player == 1)).tolist():
        g = int(tree.infoset[h])
        if g not in covered and g not in reps:
            reps[g] = h
    for h in reps.values():
        while not keep[h]:
            keep[h] = True
            if start[h]:
                break
            h = int(tree.parent[h])
    return keep


def subtree_signature(tree: GameTree, root: int) -> Hashable:
    """Canonical form of the subtree at `root` up to renaming of infosets (transpositions)."""
    stack = [root]
    order = []
    while stack:
        h = stack.pop()
        order.append(h)
        fc = int(tree.first_child[h])
        stack.extend(range(fc + int(tree.num_children[h]) - 1, fc - 1, -1))
    names: tuple[dict[int, int], dict[int, int]] = ({}, {})
    sig = []
    for h in order:
        k0 = names[0].setdefault(int(tree.kinfo[h, 0]), len(names[0]))
        k1 = names[1].setdefault(int(tree.kinfo[h, 1]), len(names[1]))
        sig.append((
            int(tree.player[h]), int(tree.action[h]) if h != root else -1,
            round(float(tree.chance_prob[h]), 12) if h != root else 1.0,
            round(float(tree.utility[h]), 12), int(tree.num_children[h]), k0, k1,
        ))  # fmt: skip
    return tuple(sig)
