"""Gadget games for subgame solving: MakeSubgame of Zhang & Sandholm 2021, Algorithm 12, line by
line.

A *game with extra payoffs* is a pair (GameTree, B) with B a sparse matrix over (player-0
sequence, player-1 sequence) and payoff <x, (A + B) y> (Zhang & Sandholm 2021, appendix C); the
original game has B = None. `make_subgame(tree, blueprint, infoset, options, B)` builds the gadget
of player 0 (⊕, the solving player) at her decision infoset I as another such pair, so the gadget is
an ordinary `GameTree` every solver, best response and CFR variant handles, and a gadget can again
be the input of `make_subgame` (nested solving: B of the earlier gadget is carried over, scaled).

Notation (all values in player 0's utility; ⊖ = player 1 minimizes):

- x = the blueprint's player-0 realization plan, y its player-1 plan, p(h) the chance reach.
- K = the kept set: I^k (order-k knowledge set over the observation hypergraph, `k` odd or inf;
  I^{k+1} with `kluss`, Obscuro, appendix C.6). Its *roots* are the nodes of K without an ancestor
  in K.
- The opponent's root infosets I0 are the player-1 observation infosets (`kinfo`, also where
  player 1 does not act) of the roots, in order of first appearance. For each I0:
  R(I0) = sum_{h in I0} p(h) x(h) over the whole of I0 (the counterfactual reach),
  D(I0) = sum_{h in I0 ∩ roots} p(h) x(h) (Algorithm 12 line 16), and the scale
  sigma(I0) = R / D (the "scaled up" of appendix C: the gadget sees only part of I0).
- V(I0) = sum_{z below I0} p(z) x(z) y'(z | I0) u(z) + sum_{s strictly below s(I0)} B[∅, s]
  y'(s | I0), the unnormalized value of I0 when player 1 plays y' from I0 on; y' is the best
  response to x (AlternateValues.BEST_RESPONSE, Zhang & Sandholm 2021) or the blueprint's y
  (AlternateValues.BLUEPRINT, Obscuro, appendix C.2). The alternate value is u*(x|I0) = V / R.
- Gift (with `reach`): g(I0) = sum over player 1's decisions J'a' on the path to I0 of
  u*(x|J'a') - min_a u*(x|J'a) (normalized counterfactual best-response values, >= 0: what
  player 1 gave up to get there; Zhang & Sandholm 2021, Algorithm 12 line 23, with the sign that
  *lowers* the alternate value, section 3), or with blueprint values [u(x,y|J'a') - u(x,y|J')]^+
  (Obscuro, appendix C.2).

Gadget kinds (`GadgetKind`):

- MAXMARGIN (Algorithm 12; Ha 2016, section I.4): the root is a player-1 node with one action c_I0
  per root infoset, then a chance node over I0 ∩ roots with probability p(h) x(h) / D, then the
  original subtrees. B[∅, c_I0] = -V(I0)/D + g(I0) sigma(I0) (line 21-22; V/D = u*(x|I0) sigma is
  the alternate value in gadget units). The blueprint has every branch value 0; a strategy's gadget
  value is min over I0 of sigma(I0) (M(I0) + g(I0)), with the margin M(I0) = u*(x'|I0) - u*(x|I0).
- RESOLVE (MaxmarginToResolve, lines 29-37): the root is chance with prior alpha(I0) (uniform
  1/N, or Obscuro, appendix C.3's 1/2 (P(I0)/sum P + 1/N) with P(I0) = sum_{h in I0 ∩ roots} p x y),
  then a player-1 node per I0 with EXIT (utility 0) and PLAY (the maxmargin branch); every B
  entry of the branch is multiplied by alpha(I0). The value is sum alpha sigma [M + g]^-.
- UNSAFE (Ha 2016, chapter G, endgame solving): the root is chance over all roots with
  probability p(h) x(h) y(h) / sum; no alternate values; player 1 is free below.

B entries of the gadget, all in its top row (player 0's empty sequence):

- the alternate value and gift at the branch sequence (c_I0, or (I0, PLAY) for Resolve);
- line 24-25: B of the input game carried over: B[∅, s] / D for every player-1 sequence s
  strictly below s(I0) (entries at s(I0) itself are constant in the subgame and dropped; both
  the alternate value and the carried-over payoffs leave them out, so margins are unchanged);
- line 26-27: every terminal z below a node of I0 outside the kept set adds p(z) x(z) u(z) / D
  at player 1's sequence of z (player 0 frozen to the blueprint there).

Sequences that exist only outside the kept set (line 27's "added even if they contain no
nodes") are given real nodes: the frozen subtrees below I0 \\ K are copied under the chance
node with probability 0, player-0 nodes turned into chance nodes at the blueprint, pruned to the
parts that hold player-1 decisions. They add nothing to A; they only give B its columns.

Transposition merging (k = 1 only, `merge_transpositions`): a root infoset I0 whose lone node in
I is a transposition of an earlier one is skipped (lines 10-14). Two nodes are treated as
transpositions when their subtrees are equal up to renaming: same players, actions, chance
probabilities and utilities, and the same partition into each player's infosets.

`lift(tree, blueprint, sub, solution)` writes the gadget solution back: player 0's behaviour at
every gadget infoset (mapped through `infoset_map`) that the solution reaches replaces the
blueprint's; in sequence form x'(s) = x(I) x_sub(s) (Algorithm 13 line 13).
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from caligo.core.best_response import BestResponse, best_response
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.knowledge import infoset_nodes, order_k_set
from caligo.core.lp import REACH_TOL
from caligo.core.strategy import check_strategy, realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray, build_tree
from caligo.errors import CaligoError

EXIT, PLAY = 0, 1


class SubgameError(CaligoError, ValueError):
    """Bad input to the gadget construction (infoset, strategy, extra payoffs or options)."""


class GadgetKind(enum.Enum):
    """Which gadget game to build (see the module docstring)."""

    MAXMARGIN = "maxmargin"
    RESOLVE = "resolve"
    UNSAFE = "unsafe"


class AlternateValues(enum.Enum):
    """Where alternate values and gifts come from."""

    BEST_RESPONSE = "best_response"  # u*(x|J), Zhang & Sandholm 2021 / Brown and Sandholm 2017
    BLUEPRINT = "blueprint"  # u(x, y|J) of the blueprint profile, Obscuro, appendix C.2


class ResolvePrior(enum.Enum):
    """The chance distribution over root infosets of the Resolve gadget."""

    UNIFORM = "uniform"  # Burch et al. 2014, Algorithm 12 line 30
    BLUEPRINT_MIX = "blueprint_mix"  # Obscuro, appendix C.3: half uniform, half blueprint reach


@dataclass(frozen=True)
class SubgameOptions:
    """How to build a gadget; validated at construction.

    kind: a `GadgetKind` (its value, e.g. "maxmargin", is accepted and converted).
    k: odd positive int or math.inf (the order of the knowledge set; inf = common knowledge).
    reach: subtract gift estimates from the alternate values (Reach subgame solving).
    merge_transpositions: Algorithm 12 lines 10-14, only with k = 1.
    kluss: keep (and re-optimize) I^{k+1} instead of I^k (Obscuro, appendix C.6; k = 1 gives
    2-KLUSS).
    """

    kind: GadgetKind = GadgetKind.MAXMARGIN
    k: float = 1
    reach: bool = False
    merge_transpositions: bool = False
    alternate_values: AlternateValues = AlternateValues.BEST_RESPONSE
    resolve_prior: ResolvePrior = ResolvePrior.UNIFORM
    kluss: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.kind, str):  # "maxmargin" -> GadgetKind.MAXMARGIN at the boundary
            try:
                object.__setattr__(self, "kind", GadgetKind(self.kind))
            except ValueError:
                raise SubgameError(f"kind must be one of {[k.value for k in GadgetKind]}, "
                                   f"got {self.kind!r}") from None
        if not isinstance(self.kind, GadgetKind):
            raise SubgameError(f"kind must be a GadgetKind, got {self.kind!r}")
        if not isinstance(self.alternate_values, AlternateValues):
            raise SubgameError(
                f"alternate_values must be an AlternateValues, got {self.alternate_values!r}"
            )
        if not isinstance(self.resolve_prior, ResolvePrior):
            raise SubgameError(f"resolve_prior must be a ResolvePrior, got {self.resolve_prior!r}")
        k = self.k
        if isinstance(k, bool) or not (
            k == math.inf or (isinstance(k, int | np.integer) and k >= 1 and k % 2 == 1)
        ):
            raise SubgameError(f"k must be an odd positive int or math.inf, got {k!r}")
        for name in ("reach", "merge_transpositions", "kluss"):
            if not isinstance(getattr(self, name), bool):
                raise SubgameError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.merge_transpositions and (k != 1 or self.kluss):
            raise SubgameError("merge_transpositions is only valid with k = 1 (and no kluss)")

    @property
    def order(self) -> float:
        """The order of the kept knowledge set: k, or k + 1 with kluss."""
        return self.k + 1 if self.kluss and self.k != math.inf else self.k


@dataclass(frozen=True, eq=False)
class Subgame:
    """A gadget game (tree, extra) and what is needed to read and lift its solutions.

    Per root infoset r (the opponent's root infosets I0, in branch order):
    root_kinfo[r]: I0 as a player-1 kinfo id of the source tree; root_names[r] a readable name;
    alternate_values[r] = u*(x|I0) (normalized); gifts[r] = g(I0) (0 without reach);
    root_reach[r] = R(I0); root_weight[r] = D(I0); prior[r] = alpha(I0) (Resolve; 1 otherwise);
    branch_seq[r] = player 1's gadget sequence of the branch (c_I0, (I0, PLAY), or 0 if unsafe);
    root_base_outside[r] = the part of B[∅, branch_seq] that is frozen outside payoff (gadget
    units, prior included) rather than alternate value.
    node_map: gadget node -> source node or -1 (gadget-only nodes); phantom[h]: the node is a
    probability-0 copy of a frozen source node. infoset_map: gadget infoset -> source infoset
    (-1 for gadget-only infosets). root_infoset: the gadget id of I (-1 if the gadget is empty).
    """

    tree: GameTree
    extra: sp.csr_matrix
    options: SubgameOptions
    source_infoset: int
    root_infoset: int
    node_map: IntArray
    phantom: np.ndarray
    infoset_map: IntArray
    root_kinfo: IntArray
    root_names: tuple[str, ...]
    alternate_values: FloatArray
    gifts: FloatArray
    root_reach: FloatArray
    root_weight: FloatArray
    prior: FloatArray
    branch_seq: IntArray
    root_base_outside: FloatArray
    kept_nodes: IntArray  # source nodes of K (the knowledge set the gadget keeps)
    copy_roots: tuple[IntArray, ...]  # per root: gadget nodes copying I0's nodes (incl. frozen)
    source_num_slots: int
    # Safe-KLSS (caligo.subgame.safe_klss): the plain KLSS payoffs margins are measured with
    margin_extra: sp.csr_matrix | None = None
    safe_klss: bool = False
    _cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        kind = "safe 1-KLSS" if self.safe_klss else self.options.kind.value
        return (f"<Subgame {kind} k={self.options.order} at infoset {self.source_infoset}: "
                f"{self.num_roots} root infosets, {self.tree.num_nodes} nodes, "
                f"{self.extra.nnz} extra payoffs>")

    @property
    def num_roots(self) -> int:
        return int(self.root_kinfo.shape[0])

    @property
    def is_empty(self) -> bool:
        """No root infoset is reached by the blueprint: there is nothing to solve."""
        return self.num_roots == 0

    def scale(self) -> FloatArray:
        """sigma(I0) = R / D: gadget units per unit of normalized value, per root."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.root_weight > 0, self.root_reach / self.root_weight, np.nan)


# ---------------------------------------------------------------------------------------------
# node-level helpers over a source tree


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


# ---------------------------------------------------------------------------------------------
# the gadget game as a State over the source tree's arrays

_ROOT, _RESOLVE, _EXIT, _NATURE, _COPY = range(5)


@dataclass(frozen=True)
class _Plan:
    """Everything the gadget states read (built once by make_subgame)."""

    src: GameTree
    kind: GadgetKind
    strategy: FloatArray
    branches: tuple[tuple[tuple[int, float], ...], ...]  # per root: (source node, prob) kids
    phantom_roots: tuple[tuple[int, ...], ...]
    prior: tuple[float, ...]
    unsafe_roots: tuple[tuple[int, float], ...]
    keep_phantom: np.ndarray  # bool per source node: a frozen copy is worth keeping
    name: str


@dataclass(frozen=True)
class _GState:
    plan: _Plan
    tag: int
    index: int = -1  # root index for RESOLVE/EXIT/NATURE; source node for COPY
    phantom: bool = False

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def current_player(self) -> int:
        P = self.plan
        if self.phantom and not P.keep_phantom[self.index]:
            return TERMINAL  # a stub below a frozen player-1 node: reached with probability 0
        if self.tag == _ROOT:
            if not (P.branches or P.unsafe_roots):
                return TERMINAL
            return 1 if P.kind is GadgetKind.MAXMARGIN else CHANCE
        if self.tag == _RESOLVE:
            return 1
        if self.tag == _EXIT:
            return TERMINAL
        if self.tag == _NATURE:
            return CHANCE
        pl = int(P.src.player[self.index])
        if self.phantom and pl == 0:
            return CHANCE
        return pl

    def _source_children(self) -> list[int]:
        src = self.plan.src
        fc = int(src.first_child[self.index])
        kids = list(range(fc, fc + int(src.num_children[self.index])))
        if self.phantom and int(src.player[self.index]) != 1:
            kids = [c for c in kids if self.plan.keep_phantom[c]]
        return kids

    def legal_actions(self) -> Sequence[int]:
        P = self.plan
        if self.tag == _ROOT:
            return list(range(len(P.branches)))
        if self.tag == _RESOLVE:
            return [EXIT, PLAY]
        src = P.src
        return [int(src.action[c]) for c in self._source_children()]

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        P = self.plan
        if self.tag == _ROOT:
            if P.kind is GadgetKind.UNSAFE:
                out = [(i, pr) for i, (_, pr) in enumerate(P.unsafe_roots)]
                n = len(out)
                out += [(n + i, 0.0) for i in range(sum(len(f) for f in P.phantom_roots))]
                return out
            return [(i, P.prior[i]) for i in range(len(P.branches))]
        if self.tag == _NATURE:
            branch = P.branches[self.index]
            out = [(i, pr) for i, (_, pr) in enumerate(branch)]
            out += [(len(branch) + i, 0.0) for i in range(len(P.phantom_roots[self.index]))]
            return out
        src = P.src
        kids = self._source_children()
        if int(src.player[self.index]) == 0:  # frozen player-0 node (phantom)
            g = int(src.infoset[self.index])
            off = int(src.infoset_offset[g])
            fc = int(src.first_child[self.index])
            return [(int(src.action[c]), float(P.strategy[off + c - fc])) for c in kids]
        return [(int(src.action[c]), float(src.chance_prob[c])) for c in kids]

    def child(self, action: int) -> _GState:
        P = self.plan
        if self.tag == _ROOT:
            if P.kind is GadgetKind.UNSAFE:
                if action < len(P.unsafe_roots):
                    return _GState(P, _COPY, P.unsafe_roots[action][0])
                flat = [h for f in P.phantom_roots for h in f]
                return _GState(P, _COPY, flat[action - len(P.unsafe_roots)], True)
            if P.kind is GadgetKind.RESOLVE:
                return _GState(P, _RESOLVE, action)
            return _GState(P, _NATURE, action)
        if self.tag == _RESOLVE:
            return _GState(P, _EXIT if action == EXIT else _NATURE, self.index)
        if self.tag == _NATURE:
            kids = P.branches[self.index]
            if action < len(kids):
                return _GState(P, _COPY, kids[action][0])
            return _GState(P, _COPY, P.phantom_roots[self.index][action - len(kids)], True)
        src = P.src
        fc = int(src.first_child[self.index])
        for c in range(fc, fc + int(src.num_children[self.index])):
            if int(src.action[c]) == action:
                return _GState(P, _COPY, c, self.phantom)
        raise SubgameError(f"no action {action} at source node {self.index}")

    def infoset_key(self, player: int) -> Hashable:
        if self.tag == _COPY:
            kid = int(self.plan.src.kinfo[self.index, player])
            if self.phantom and player == 0:
                return ("phantom", kid)
            return ("src", kid)
        if player == 1 and self.tag != _ROOT:
            return ("gadget", self.tag, self.index)
        return ("gadget", _ROOT)

    def infoset_name(self, player: int) -> str:
        if self.tag == _ROOT:
            return "gadget:root"
        if self.tag == _RESOLVE:
            return f"gadget:resolve:{self.index}"
        src = self.plan.src
        h = self.index
        g = int(src.infoset[h])
        if g >= 0 and int(src.infoset_player[g]) == player:
            return src.infoset_names[g]
        return f"p{player}:kinfo{int(src.kinfo[h, player])}"

    def utility(self) -> float:
        if self.tag == _COPY:
            return float(self.plan.src.utility[self.index])
        return 0.0

    def action_string(self, action: int) -> str:
        if self.tag == _RESOLVE:
            return "EXIT" if action == EXIT else "PLAY"
        return str(action)


@dataclass(frozen=True)
class _GadgetGame:
    plan: _Plan

    @property
    def name(self) -> str:
        return self.plan.name

    def new_initial_state(self) -> _GState:
        return _GState(self.plan, _ROOT)


def _walk(tree: GameTree, root: _GState) -> list[_GState]:
    """The gadget states in the tree's BFS node order."""
    states = [root]
    for h in range(tree.num_nodes):
        s = states[h]
        fc = int(tree.first_child[h])
        for c in range(fc, fc + int(tree.num_children[h])):
            states.append(s.child(int(tree.action[c])))
    return states


# ---------------------------------------------------------------------------------------------
# MakeSubgame


def _options(k_or_options: SubgameOptions | float) -> SubgameOptions:
    if isinstance(k_or_options, SubgameOptions):
        return k_or_options
    return SubgameOptions(k=k_or_options)


def _check_extra(tree: GameTree, extra: sp.spmatrix | None) -> sp.csr_matrix | None:
    if extra is None:
        return None
    B = sp.csr_matrix(extra, dtype=np.float64)
    if B.shape != (tree.num_sequences[0], tree.num_sequences[1]):
        raise SubgameError(
            f"extra payoffs have shape {B.shape}, the tree has {tree.num_sequences} sequences"
        )
    B.eliminate_zeros()
    rows = np.repeat(np.arange(B.shape[0]), np.diff(B.indptr))
    if np.any(rows != 0):
        raise SubgameError("only extra payoffs in the top row (player 0's empty sequence) "
                           "can be carried into a gadget")
    return B


def infoset_id(tree: GameTree, infoset: int | str) -> int:
    """The id of a player-0 decision infoset given by id or by name (`tree.infoset_names`)."""
    if isinstance(infoset, str):
        g = tree.infoset_index().get(infoset)
        if g is None:
            raise SubgameError(f"{tree.name!r} has no infoset named {infoset!r}")
        infoset = g
    if isinstance(infoset, bool) or not isinstance(infoset, int | np.integer):
        raise SubgameError(f"an infoset is an int id or a name, got {infoset!r}")
    if not (0 <= infoset < tree.num_infosets) or int(tree.infoset_player[infoset]) != 0:
        raise SubgameError(f"infoset {infoset!r} is not a player-0 decision infoset of "
                           f"{tree.name!r} (player 1 solves on `resolve.swap_players(tree)`)")
    return int(infoset)


def make_subgame(
    tree: GameTree,
    blueprint: FloatArray,
    infoset: int | str,
    k_or_options: SubgameOptions | float = 1,
    B: sp.spmatrix | None = None,
) -> Subgame:
    """Build the gadget of player 0 at her decision infoset `infoset` (Algorithm 12).

    `infoset` is an id or a name of `tree.infoset_names`; `blueprint` is a full profile over
    `tree`'s slots (player 1's part is used for blueprint alternate values, the Resolve prior
    and unsafe solving); `k_or_options` is k or a `SubgameOptions`; `B` the extra payoffs of
    `tree` when it is itself a gadget.
    """
    opts = _options(k_or_options)
    infoset = infoset_id(tree, infoset)
    s = np.ascontiguousarray(check_strategy(tree, blueprint))
    Bin = _check_extra(tree, B)
    x = realization_plan(tree, s, 0)
    y = realization_plan(tree, s, 1)
    xr = x[tree.seq[:, 0]]
    yr = y[tree.seq[:, 1]]
    p = tree.chance_reach

    # line 4: the knowledge set and its roots
    kept = order_k_set(tree, infoset_nodes(tree, infoset), opts.order)
    inK = np.zeros(tree.num_nodes, dtype=np.bool_)
    inK[kept] = True
    covered = _below_mask(tree, kept)
    roots = np.flatnonzero(inK & ~covered).astype(np.int32)
    under = inK | covered

    # line 9: the opponent's root infosets, in order of first appearance
    groups: dict[int, list[int]] = defaultdict(list)
    for h in roots:
        groups[int(tree.kinfo[h, 1])].append(int(h))
    order = sorted(groups, key=lambda kid: groups[kid][0])
    if opts.merge_transpositions:  # lines 10-14
        seen: set[Hashable] = set()
        merged = []
        for kid in order:
            sig = tuple(subtree_signature(tree, h) for h in groups[kid])
            if sig in seen:
                continue
            seen.add(sig)
            merged.append(kid)
        order = merged
    kin1 = tree.kinfo[:, 1]
    full_nodes = {kid: np.flatnonzero(kin1 == kid).astype(np.int32) for kid in order}

    # line 16: normalization constants; roots the blueprint does not reach are dropped. "Does
    # not reach" means player 0's own reach of I0 ∩ roots (the chance-weighted mean of x over
    # its nodes; of x y for unsafe solving) is at most REACH_TOL: below that it is LP rounding
    # noise, and D = sum p x of noise would scale B by 1/D (about 1e15).
    kept_roots: list[int] = []
    for kid in order:
        nodes = np.asarray(groups[kid], dtype=np.int32)
        own = xr[nodes] * yr[nodes] if opts.kind is GadgetKind.UNSAFE else xr[nodes]
        chance = float(np.sum(p[nodes]))
        if chance > 0.0 and float(np.sum(p[nodes] * own)) > REACH_TOL * chance:
            kept_roots.append(kid)
    m = len(kept_roots)
    root_nodes = [np.asarray(groups[kid], dtype=np.int32) for kid in kept_roots]
    D = np.array([float(np.sum(p[n] * xr[n])) for n in root_nodes])
    outside = [full_nodes[kid][~under[full_nodes[kid]]] for kid in kept_roots]

    # line 3: alternate values from the whole of each I0; the blueprint's best response and
    # realization plans are computed once here and passed down (values and gifts share them)
    by_br = opts.alternate_values is AlternateValues.BEST_RESPONSE
    br = best_response(tree, s, 1, extra=Bin, plan=x) if by_br or opts.reach else None
    resp = br.strategy if by_br and br is not None else s
    V, R = region_values(tree, s, resp, [full_nodes[kid] for kid in kept_roots], Bin, x=x)
    with np.errstate(divide="ignore", invalid="ignore"):
        alt = np.where(R > 0, V / np.where(R > 0, R, 1.0), np.nan)
    base_seq = [int(tree.seq[n[0], 1]) for n in root_nodes]
    gifts = (
        _gifts(tree, s, Bin, opts.alternate_values, base_seq, br, x)
        if opts.reach and br is not None else np.zeros(m)
    )

    # the Resolve prior (line 30 / Obscuro, appendix C.3)
    prior = np.ones(m)
    if opts.kind is GadgetKind.RESOLVE and m:
        prior = np.full(m, 1.0 / m)
        if opts.resolve_prior is ResolvePrior.BLUEPRINT_MIX:
            P = np.array([float(np.sum(p[n] * xr[n] * yr[n])) for n in root_nodes])
            if P.sum() > 0:
                prior = 0.5 * (P / P.sum() + 1.0 / m)

    # phantom (probability-0) copies of frozen nodes: one path to each player-1 infoset that
    # has no node in the kept subtrees (its sequences must exist for B's entries)
    keep_phantom = _phantom_paths(tree, under, outside)

    unsafe_roots: tuple[tuple[int, float], ...] = ()
    if opts.kind is GadgetKind.UNSAFE:
        allr = np.concatenate(root_nodes) if m else np.zeros(0, dtype=np.int32)
        w = p[allr] * xr[allr] * yr[allr]
        total = float(w.sum())
        unsafe_roots = tuple(
            (int(h), float(wi / total)) for h, wi in zip(allr, w, strict=True) if wi > 0
        )
    branches = tuple(
        tuple((int(h), float(p[h] * xr[h] / D[r])) for h in root_nodes[r]) for r in range(m)
    )
    phantom_roots = tuple(
        tuple(int(h) for h in outside[r] if keep_phantom[h]) for r in range(m)
    )
    plan = _Plan(
        src=tree, kind=opts.kind, strategy=s, branches=branches, phantom_roots=phantom_roots,
        prior=tuple(float(a) for a in prior), unsafe_roots=unsafe_roots,
        keep_phantom=keep_phantom,
        name=f"{tree.name}[{opts.kind.value} k={opts.order} at {tree.infoset_names[infoset]}]",
    )  # fmt: skip
    game = _GadgetGame(plan)
    gt = build_tree(game)
    states = _walk(gt, game.new_initial_state())
    node_map = np.array([st.index if st.tag == _COPY else -1 for st in states], dtype=np.int32)
    phantom = np.array([st.phantom for st in states], dtype=np.bool_)
    infoset_map = np.full(gt.num_infosets, -1, dtype=np.int32)
    for hh in np.flatnonzero(gt.infoset >= 0):
        gg = int(gt.infoset[hh])
        if node_map[hh] >= 0 and infoset_map[gg] < 0:
            infoset_map[gg] = int(tree.infoset[node_map[hh]])
    pos = {kid: r for r, kid in enumerate(kept_roots)}
    copies: list[list[int]] = [[] for _ in range(m)]
    for hi in range(1, gt.num_nodes):
        st, pst = states[hi], states[int(gt.parent[hi])]
        if st.tag == _COPY and pst.tag in (_NATURE, _ROOT):
            copies[pos[int(tree.kinfo[st.index, 1])]].append(hi)
    src_to_gadget_p1: dict[int, int] = {}
    for g1 in gt.infosets_of(1):
        if infoset_map[g1] >= 0:
            src_to_gadget_p1[int(infoset_map[g1])] = int(g1)

    # the branch sequence of each root
    branch_seq = np.zeros(m, dtype=np.int32)
    if opts.kind is GadgetKind.MAXMARGIN and m:
        branch_seq[:] = gt.infoset_seq[gt.infoset[0]] + np.arange(m)
    elif opts.kind is GadgetKind.RESOLVE:
        for hi in range(gt.num_nodes):
            if states[hi].tag == _RESOLVE:
                branch_seq[states[hi].index] = gt.infoset_seq[gt.infoset[hi]] + PLAY

    def gadget_seq(r: int, src_seq: int) -> int:
        if src_seq == base_seq[r]:
            return int(branch_seq[r])
        j = int(tree.seq_infoset[1][src_seq])
        gj = src_to_gadget_p1.get(j)
        if gj is None:
            raise SubgameError(f"player-1 sequence {src_seq} has no infoset in the gadget")
        return int(gt.infoset_seq[gj] + src_seq - tree.infoset_seq[j])

    # B of the gadget (lines 21-27), all in the top row
    top = np.zeros(gt.num_sequences[1], dtype=np.float64)
    base_outside = np.zeros(m)
    src_top = _top_row(Bin, tree.num_sequences[1])
    region = _region_of(tree, [full_nodes[kid] for kid in kept_roots])
    unsafe_total = 0.0
    if opts.kind is GadgetKind.UNSAFE and m:
        allr = np.concatenate(root_nodes)
        unsafe_total = float(np.sum(p[allr] * xr[allr] * yr[allr]))
    sigma = R / D if m else np.zeros(0)
    all_z = tree.terminals()
    out_region = _region_of(tree, outside) if m else np.full(tree.num_nodes, -1)
    # the region of each carried-over B column: that of the first node of its infoset
    carried = np.flatnonzero(src_top)
    carried = carried[carried != 0]
    carried_node = first_node_of_infoset(tree)[tree.seq_infoset[1][carried]]
    carried_region = np.where(carried_node >= 0, region[np.maximum(carried_node, 0)], -1)
    for r in range(m):
        if opts.kind is GadgetKind.UNSAFE:
            ybase = float(yr[root_nodes[r][0]])
            scale = ybase / unsafe_total
        else:
            scale = prior[r] / D[r]
            top[branch_seq[r]] += prior[r] * (-V[r] / D[r] + gifts[r] * sigma[r])
        # lines 26-27: frozen terminals below I0 \ K, summed per player-1 sequence first
        zs = all_z[out_region[all_z] == r]
        if zs.size:
            val = p[zs] * xr[zs] * tree.utility[zs] * scale
            per_seq = np.bincount(tree.seq[zs, 1], weights=val, minlength=tree.num_sequences[1])
            for sq in np.flatnonzero(per_seq):
                gs_ = gadget_seq(r, int(sq))
                top[gs_] += per_seq[sq]
                if gs_ == branch_seq[r]:
                    base_outside[r] += per_seq[sq]
        # lines 24-25: carried-over B strictly below s(I0)
        for sq in carried[carried_region == r]:
            if sq == base_seq[r]:
                continue
            top[gadget_seq(r, int(sq))] += src_top[sq] * scale
    nz = np.flatnonzero(top)
    extra = sp.csr_matrix(
        (top[nz], (np.zeros(nz.size, dtype=np.int64), nz)),
        shape=(gt.num_sequences[0], gt.num_sequences[1]),
    )
    root_infoset = -1
    for g in gt.infosets_of(0):
        if infoset_map[g] == infoset:
            root_infoset = int(g)
            break
    return Subgame(
        tree=gt,
        extra=extra,
        options=opts,
        source_infoset=int(infoset),
        root_infoset=root_infoset,
        node_map=node_map,
        phantom=phantom,
        infoset_map=infoset_map,
        root_kinfo=np.asarray(kept_roots, dtype=np.int32),
        root_names=tuple(_root_name(tree, full_nodes[kid]) for kid in kept_roots),
        alternate_values=alt,
        gifts=gifts,
        root_reach=R,
        root_weight=D,
        prior=prior,
        branch_seq=branch_seq,
        root_base_outside=base_outside,
        kept_nodes=kept.astype(np.int32),
        copy_roots=tuple(np.asarray(c, dtype=np.int32) for c in copies),
        source_num_slots=tree.num_slots,
    )


def _root_name(tree: GameTree, nodes: IntArray) -> str:
    for h in nodes:
        g = int(tree.infoset[h])
        if g >= 0 and int(tree.infoset_player[g]) == 1:
            return tree.infoset_names[g]
    return f"p1:kinfo{int(tree.kinfo[nodes[0], 1])}"


def lift(
    tree: GameTree,
    blueprint: FloatArray,
    sub: Subgame,
    solution: FloatArray | object,
    tol: float = 1e-12,
) -> FloatArray:
    """The blueprint over `tree` with player 0's play replaced by the gadget solution's.

    `solution` is a `SubgameSolution` or a strategy vector over the gadget's slots. Gadget
    infosets the solution does not reach keep the blueprint (their behaviour is undefined).
    """
    if tree.num_slots != sub.source_num_slots:
        raise SubgameError("the subgame was not built from this tree")
    strat = getattr(solution, "strategy", solution)
    gs = np.asarray(strat, dtype=np.float64)
    if gs.shape != (sub.tree.num_slots,):
        raise SubgameError(f"gadget strategy has shape {gs.shape}, expected "
                           f"({sub.tree.num_slots},)")
    out = np.array(check_strategy(tree, blueprint), dtype=np.float64)
    xg = realization_plan(sub.tree, gs, 0)
    gt = sub.tree
    for g in gt.infosets_of(0):
        src = int(sub.infoset_map[g])
        if src < 0 or xg[gt.infoset_parent_seq[g]] <= tol:
            continue
        n = int(gt.infoset_num_actions[g])
        out[tree.infoset_offset[src] : tree.infoset_offset[src] + n] = gs[
            gt.infoset_offset[g] : gt.infoset_offset[g] + n
        ]
    return out


def subgame_margins(sub: Subgame, gadget_strategy: FloatArray) -> FloatArray:
    """M(I0) = u*(x'|I0) - u*(x|I0) per root, for a gadget strategy of player 0 (any kind).

    u*(x'|I0) is read off the gadget: player 1's best response to x' (with the gadget's B) over
    the copies of I0's nodes (kept, and frozen ones through B), normalized by their reach and
    scaled back by D / R. The alternate-value and gift entries are left out, so gifts are not
    included: M is the plain margin of Ha 2016, Definition 5 (per root infoset).
    """
    if sub.is_empty:
        return np.zeros(0)
    gt = sub.tree
    gs = np.asarray(gadget_strategy, dtype=np.float64)
    B = sub.extra if sub.margin_extra is None else sub.margin_extra
    br = best_response(gt, gs, 1, extra=B)
    Vg, Rg = region_values(gt, gs, br.strategy, list(sub.copy_roots), B)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = (Vg + sub.root_base_outside) / Rg
    return cond * (sub.root_weight / sub.root_reach) - sub.alternate_values
