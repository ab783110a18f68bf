"""Knowledge sets on the infoset hypergraph (Zhang & Sandholm 2021, section 3, Definitions 1 and 2).

The infoset hypergraph G has the nodes of the game as vertices and the infosets of both players as
hyperedges. For a node set S, the order-k knowledge set S^k holds the nodes at distance at most
k - 1 from S in G (S^1 = S), and the common-knowledge closure S^inf is the union of the connected
components of G that meet S. The diameter is the smallest k with I^k = I^inf for every decision
infoset I (Zhang & Sandholm 2021, Table 2 caption).

Which infosets are hyperedges is a `Convention`:

- `Convention.OBSERVATION`: every player's observation-sequence infoset (`GameTree.kinfo`) at
  every node, also where the player does not act (Zhang & Sandholm 2021, section 2; docs/design.md).
  This is the graph the subgame code builds I^k from.
- `Convention.LIVE`: player p's infoset is a hyperedge at node h only while p still has a
  decision at h or below it (a player with nothing left to decide contributes no uncertainty the
  opponent must reason about). This is the convention that reproduces the paper's Table 2
  averages (docs/knowledge.md; `caligo.core.table2`).

Graphs can be restricted to a node subset (a mask): the hypergraph of a subtree, a depth range or
any other set. Nodes outside the mask are in no hyperedge and are never reached.

Layout of `KnowledgeGraph` (flat arrays, docs/design.md, "Performance model"):

    node_edge   int32 (num_nodes, 2): the hyperedge of player p's infoset at node h, -1 if none;
                player 0's hyperedges are 0 .. num_edges_0 - 1, player 1's follow.
    edge_ptr    int32 (num_edges + 1,): CSR offsets into `edge_nodes`.
    edge_nodes  int32: the nodes of each hyperedge, ascending within a hyperedge.

The BFS is a numba kernel (`_bfs_kernel`, `_sizes_kernel`) with a pure-Python reference
(`reference_distances`) that the tests compare against.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from caligo.core.tree import GameTree
from caligo.errors import CaligoError

IntArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

UNREACHED = -1


class KnowledgeError(CaligoError, ValueError):
    """Bad input to the knowledge-set functions: a mask, node ids, an infoset or an order k."""


class Convention(enum.Enum):
    """Which infosets are hyperedges of the knowledge graph (see the module docstring)."""

    OBSERVATION = "observation"
    LIVE = "live"


@dataclass(frozen=True, eq=False)
class KnowledgeGraph:
    """The infoset hypergraph of a `GameTree` (possibly restricted to a node mask), CSR form."""

    convention: Convention
    node_edge: IntArray  # (num_nodes, 2)
    edge_ptr: IntArray  # (num_edges + 1,)
    edge_nodes: IntArray
    num_edges_0: int
    mask: BoolArray  # (num_nodes,): the vertices of the graph

    @property
    def num_nodes(self) -> int:
        return int(self.node_edge.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_ptr.shape[0] - 1)

    def edge_members(self, edge: int) -> IntArray:
        """The nodes of one hyperedge."""
        return self.edge_nodes[self.edge_ptr[edge] : self.edge_ptr[edge + 1]]


# ---------------------------------------------------------------------------------------------
# kernels


@numba.njit(cache=True, nogil=True)
def _live_kernel(player: np.ndarray, parent: np.ndarray, out: np.ndarray) -> int:
    """Mark, per node and player, whether the player acts at the node or below it.

    player int8 (n,); parent int32 (n,), parents before children; out bool (n, 2), zeroed.
    Returns 0.
    """
    n = player.shape[0]
    for h in range(n):
        if player[h] == 0:
            out[h, 0] = True
        elif player[h] == 1:
            out[h, 1] = True
    for h in range(n - 1, 0, -1):
        par = parent[h]
        if out[h, 0]:
            out[par, 0] = True
        if out[h, 1]:
            out[par, 1] = True
    return 0


@numba.njit(cache=True, nogil=True)
def _bfs_kernel(
    node_edge: np.ndarray,
    edge_ptr: np.ndarray,
    edge_nodes: np.ndarray,
    sources: np.ndarray,
    max_dist: int,
    dist: np.ndarray,
    queue: np.ndarray,
    edge_seen: np.ndarray,
) -> int:
    """Breadth-first distances from a node set in the hypergraph.

    node_edge int32 (n, 2); edge_ptr int32 (E + 1,); edge_nodes int32 (M,); sources int32 (s,),
    distinct, in range; max_dist: stop expanding at this distance (-1 for no limit);
    dist int32 (n,) filled with -1 (output: distance or -1); queue int32 (n,) scratch;
    edge_seen bool (E,) zeroed scratch. Returns the number of nodes reached.
    """
    head = 0
    tail = 0
    for i in range(sources.shape[0]):
        h = sources[i]
        if dist[h] < 0:
            dist[h] = 0
            queue[tail] = h
            tail += 1
    while head < tail:
        h = queue[head]
        head += 1
        d = dist[h]
        if max_dist >= 0 and d >= max_dist:
            continue
        for p in range(2):
            e = node_edge[h, p]
            if e < 0 or edge_seen[e]:
                continue
            edge_seen[e] = True
            for j in range(edge_ptr[e], edge_ptr[e + 1]):
                h2 = edge_nodes[j]
                if dist[h2] < 0:
                    dist[h2] = d + 1
                    queue[tail] = h2
                    tail += 1
    return tail


@numba.njit(cache=True, nogil=True)
def _sizes_kernel(
    node_edge: np.ndarray,
    edge_ptr: np.ndarray,
    edge_nodes: np.ndarray,
    set_ptr: np.ndarray,
    set_nodes: np.ndarray,
    kmax: int,
    sizes: np.ndarray,
    ecc: np.ndarray,
) -> int:
    """|S^k| for k = 1..kmax, |S^inf| and the eccentricity of each of many source sets S.

    node_edge int32 (n, 2); edge_ptr int32 (E + 1,); edge_nodes int32 (M,); set_ptr int32
    (m + 1,) and set_nodes int32: CSR list of m source sets (nodes distinct within a set);
    sizes int64 (m, kmax + 1) output: column k - 1 is |S^k|, the last column |S^inf|;
    ecc int32 (m,) output: the largest distance from S to a node of S^inf.
    Returns 0. Visit stamps replace clearing, so the cost is the size of the closures.
    """
    n = node_edge.shape[0]
    num_edges = edge_ptr.shape[0] - 1
    node_stamp = np.full(n, -1, np.int64)
    edge_stamp = np.full(num_edges, -1, np.int64)
    dist = np.zeros(n, np.int32)
    queue = np.zeros(n, np.int32)
    counts = np.zeros(n + 1, np.int64)
    for s in range(set_ptr.shape[0] - 1):
        head = 0
        tail = 0
        for j in range(set_ptr[s], set_ptr[s + 1]):
            h = set_nodes[j]
            if node_stamp[h] != s:
                node_stamp[h] = s
                dist[h] = 0
                queue[tail] = h
                tail += 1
        maxd = 0
        while head < tail:
            h = queue[head]
            head += 1
            d = dist[h]
            for p in range(2):
                e = node_edge[h, p]
                if e < 0 or edge_stamp[e] == s:
                    continue
                edge_stamp[e] = s
                for j in range(edge_ptr[e], edge_ptr[e + 1]):
                    h2 = edge_nodes[j]
                    if node_stamp[h2] != s:
                        node_stamp[h2] = s
                        dist[h2] = d + 1
                        if d + 1 > maxd:
                            maxd = d + 1
                        queue[tail] = h2
                        tail += 1
        for d in range(maxd + 1):
            counts[d] = 0
        for i in range(tail):
            counts[dist[queue[i]]] += 1
        acc = 0
        for k in range(kmax):
            if k <= maxd:
                acc += counts[k]
            sizes[s, k] = acc
        sizes[s, kmax] = tail
        ecc[s] = maxd
    return 0


# ---------------------------------------------------------------------------------------------
# graph construction


def live_mask(tree: GameTree) -> BoolArray:
    """(num_nodes, 2) bool: whether player p acts at node h or at some node below it."""
    cached = tree._cache.get("knowledge_live")
    if cached is None:
        out = np.zeros((tree.num_nodes, 2), dtype=np.bool_)
        _live_kernel(tree.player, tree.parent, out)
        tree._cache["knowledge_live"] = out
        cached = out
    return cached  # type: ignore[return-value]


def knowledge_graph(
    tree: GameTree,
    convention: Convention = Convention.OBSERVATION,
    mask: npt.ArrayLike | None = None,
) -> KnowledgeGraph:
    """Build the infoset hypergraph of `tree`, optionally restricted to the nodes in `mask`.

    `mask` is a boolean array over nodes or an array of node ids. Unrestricted graphs are
    cached on the tree.
    """
    if not isinstance(convention, Convention):
        raise KnowledgeError(f"convention must be a Convention, got {convention!r}")
    n = tree.num_nodes
    cache_key = f"knowledge_graph_{convention.value}"
    if mask is None:
        cached = tree._cache.get(cache_key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        keep = np.ones(n, dtype=np.bool_)
    else:
        keep = _as_mask(mask, n)
    node_edge = tree.kinfo.astype(np.int32, copy=True)
    node_edge[:, 1] += tree.num_kinfo[0]
    if convention is Convention.LIVE:
        node_edge[~live_mask(tree)] = -1
    node_edge[~keep] = -1
    num_edges = tree.num_kinfo[0] + tree.num_kinfo[1]
    flat = node_edge.ravel()
    members = np.flatnonzero(flat >= 0)
    edge_of = flat[members]
    order = np.argsort(edge_of, kind="stable")  # stable: nodes ascending within an edge
    edge_nodes = (members[order] // 2).astype(np.int32)
    edge_ptr = np.zeros(num_edges + 1, dtype=np.int32)
    np.cumsum(np.bincount(edge_of, minlength=num_edges), out=edge_ptr[1:])
    graph = KnowledgeGraph(
        convention=convention,
        node_edge=node_edge,
        edge_ptr=edge_ptr,
        edge_nodes=edge_nodes,
        num_edges_0=tree.num_kinfo[0],
        mask=keep,
    )
    if mask is None:
        tree._cache[cache_key] = graph
    return graph


def subtree_mask(tree: GameTree, roots: npt.ArrayLike) -> BoolArray:
    """Boolean mask of the nodes at or below any of `roots` (for a subgame's hypergraph)."""
    keep = np.zeros(tree.num_nodes, dtype=np.bool_)
    keep[_as_nodes(roots, tree.num_nodes)] = True
    for h in range(1, tree.num_nodes):  # parents precede children
        if keep[tree.parent[h]]:
            keep[h] = True
    return keep


def _as_mask(mask: npt.ArrayLike, n: int) -> BoolArray:
    arr = np.asarray(mask)
    if arr.dtype == np.bool_:
        if arr.shape != (n,):
            raise KnowledgeError(f"node mask has shape {arr.shape}, expected ({n},)")
        return arr.astype(np.bool_, copy=True)
    keep = np.zeros(n, dtype=np.bool_)
    keep[_as_nodes(arr, n)] = True
    return keep


def _as_nodes(nodes: npt.ArrayLike, n: int) -> IntArray:
    arr = np.unique(np.asarray(nodes))
    if arr.size and (arr.dtype.kind not in "iu" or arr.min() < 0 or arr.max() >= n):
        raise KnowledgeError(f"node ids must be integers in [0, {n}), got {arr!r}")
    return arr.astype(np.int32)


def _graph(tree: GameTree, graph: KnowledgeGraph | None) -> KnowledgeGraph:
    if graph is None:
        return knowledge_graph(tree)
    if graph.num_nodes != tree.num_nodes:
        raise KnowledgeError(
            f"knowledge graph has {graph.num_nodes} nodes but the tree has {tree.num_nodes}"
        )
    return graph


# ---------------------------------------------------------------------------------------------
# public queries


def infoset_nodes(tree: GameTree, infoset: int) -> IntArray:
    """The nodes of decision infoset `infoset` (ascending)."""
    if not 0 <= infoset < tree.num_infosets:
        raise KnowledgeError(f"infoset {infoset!r} out of range [0, {tree.num_infosets})")
    return np.flatnonzero(tree.infoset == infoset).astype(np.int32)


def distances(
    tree: GameTree,
    sources: npt.ArrayLike,
    graph: KnowledgeGraph | None = None,
    max_dist: int | None = None,
) -> IntArray:
    """Hypergraph distance from the node set `sources` to every node (-1: not reached).

    With `max_dist`, nodes farther than that are left at -1.
    """
    g = _graph(tree, graph)
    src = _as_nodes(sources, tree.num_nodes)
    if src.size and not g.mask[src].all():
        raise KnowledgeError(f"source nodes {src[~g.mask[src]]!r} are outside the graph's mask")
    dist = np.full(tree.num_nodes, UNREACHED, dtype=np.int32)
    queue = np.zeros(tree.num_nodes, dtype=np.int32)
    seen = np.zeros(g.num_edges, dtype=np.bool_)
    limit = -1 if max_dist is None else int(max_dist)
    _bfs_kernel(g.node_edge, g.edge_ptr, g.edge_nodes, src, limit, dist, queue, seen)
    return dist


def order_k_set(
    tree: GameTree,
    nodes: npt.ArrayLike,
    k: float | None,
    graph: KnowledgeGraph | None = None,
) -> IntArray:
    """S^k: the nodes at distance at most k - 1 from `nodes` (ascending ids).

    `k` is a positive integer, or None / math.inf for the common-knowledge closure S^inf.
    Use `infoset_nodes` to get an infoset's node set.
    """
    if k is None or k == math.inf:
        max_dist = None
    elif isinstance(k, (int, np.integer)) and k >= 1:
        max_dist = int(k) - 1
    else:
        raise KnowledgeError(f"k must be a positive integer, None or math.inf, got {k!r}")
    dist = distances(tree, nodes, graph, max_dist)
    return np.flatnonzero(dist >= 0).astype(np.int32)


def common_knowledge_closure(
    tree: GameTree, nodes: npt.ArrayLike, graph: KnowledgeGraph | None = None
) -> IntArray:
    """S^inf: the connected components of the hypergraph that meet `nodes`."""
    return order_k_set(tree, nodes, None, graph)


def set_sizes(
    tree: GameTree,
    sets: list[npt.ArrayLike],
    kmax: int,
    graph: KnowledgeGraph | None = None,
) -> tuple[npt.NDArray[np.int64], IntArray]:
    """For each node set S: |S^k| for k = 1..kmax and |S^inf|, and S's eccentricity.

    Returns `sizes` (len(sets), kmax + 1) with column k - 1 = |S^k| and the last column
    |S^inf|, and `ecc`: the largest distance from S to a node of S^inf (so S^k = S^inf
    exactly when k >= ecc + 1).
    """
    g = _graph(tree, graph)
    if kmax < 0:
        raise KnowledgeError(f"kmax must be non-negative, got {kmax!r}")
    parts = [_as_nodes(s, tree.num_nodes) for s in sets]
    for part in parts:
        if part.size and not g.mask[part].all():
            raise KnowledgeError(f"source nodes {part[~g.mask[part]]!r} are outside the mask")
    set_ptr = np.zeros(len(parts) + 1, dtype=np.int32)
    np.cumsum([p.size for p in parts], out=set_ptr[1:])
    set_nodes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return _sizes(g, set_ptr, set_nodes.astype(np.int32), kmax)


def _sizes(
    g: KnowledgeGraph, set_ptr: IntArray, set_nodes: IntArray, kmax: int
) -> tuple[npt.NDArray[np.int64], IntArray]:
    m = set_ptr.shape[0] - 1
    sizes = np.zeros((m, kmax + 1), dtype=np.int64)
    ecc = np.zeros(m, dtype=np.int32)
    _sizes_kernel(g.node_edge, g.edge_ptr, g.edge_nodes, set_ptr, set_nodes, kmax, sizes, ecc)
    return sizes, ecc


def components(tree: GameTree, graph: KnowledgeGraph | None = None) -> IntArray:
    """Connected-component label of every node (-1 for nodes outside the graph's mask)."""
    g = _graph(tree, graph)
    n = tree.num_nodes
    label = np.full(n, -1, dtype=np.int32)
    dist = np.full(n, UNREACHED, dtype=np.int32)
    queue = np.zeros(n, dtype=np.int32)
    seen = np.zeros(g.num_edges, dtype=np.bool_)
    comp = 0
    for h in np.flatnonzero(g.mask):
        if dist[h] >= 0:
            continue
        count = _bfs_kernel(
            g.node_edge, g.edge_ptr, g.edge_nodes, np.array([h], np.int32), -1, dist, queue, seen
        )
        label[queue[:count]] = comp
        comp += 1
    return label


def infoset_eccentricities(tree: GameTree, graph: KnowledgeGraph | None = None) -> IntArray:
    """For each decision infoset I (inside the mask): the largest distance from I within I^inf."""
    g = _graph(tree, graph)
    order = np.argsort(tree.infoset, kind="stable")
    order = order[tree.infoset[order] >= 0]
    order = order[g.mask[order]]
    ids = tree.infoset[order]
    set_ptr = np.zeros(tree.num_infosets + 1, dtype=np.int32)
    np.cumsum(np.bincount(ids, minlength=tree.num_infosets), out=set_ptr[1:])
    _, ecc = _sizes(g, set_ptr, order.astype(np.int32), 0)
    return ecc


def diameter(tree: GameTree, graph: KnowledgeGraph | None = None) -> int:
    """The smallest k with I^k = I^inf for every decision infoset I (Zhang & Sandholm 2021, Table
    2)."""
    ecc = infoset_eccentricities(tree, graph)
    return int(ecc.max()) + 1 if ecc.size else 1


# ---------------------------------------------------------------------------------------------
# reference


def reference_distances(
    node_edge: npt.NDArray[np.int32], sources: Iterable[int], max_dist: int | None = None
) -> dict[int, int]:
    """Slow, obviously-correct BFS on the hypergraph given by `node_edge` (tests only).

    Returns {node: distance} for every node reached.
    """
    members: dict[int, list[int]] = {}
    for h in range(node_edge.shape[0]):
        for p in range(2):
            e = int(node_edge[h, p])
            if e >= 0:
                members.setdefault(e, []).append(h)
    dist = {int(h): 0 for h in sources}
    frontier = list(dist)
    d = 0
    while frontier and (max_dist is None or d < max_dist):
        d += 1
        nxt = []
        for h in frontier:
            for p in range(2):
                e = int(node_edge[h, p])
                for h2 in members.get(e, []) if e >= 0 else []:
                    if h2 not in dist:
                        dist[h2] = d
                        nxt.append(h2)
        frontier = nxt
    return dist
