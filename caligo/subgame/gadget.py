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

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from caligo.core.best_response import best_response
from caligo.core.knowledge import infoset_nodes, order_k_set
from caligo.core.lp import REACH_TOL
from caligo.core.strategy import check_strategy, realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray, build_tree
from caligo.subgame.gadget_game import _COPY, _NATURE, _RESOLVE, _ROOT, _GadgetGame, _Plan, _walk
from caligo.subgame.options import (
    PLAY,
    AlternateValues,
    GadgetKind,
    ResolvePrior,
    SubgameError,
    SubgameOptions,
)
from caligo.subgame.regions import (
    _below_mask,
    _gifts,
    _phantom_paths,
    _region_of,
    _top_row,
    first_node_of_infoset,
    region_values,
    subtree_signature,
)


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


# Long by design: it follows Zhang & Sandholm 2021, Algorithm 12 (MakeSubgame) line by line,
# the numbered steps in order; split up, each step would take the whole plan again.
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


__all__ = [
    "AlternateValues",
    "GadgetKind",
    "ResolvePrior",
    "Subgame",
    "SubgameError",
    "SubgameOptions",
    "first_node_of_infoset",
    "infoset_id",
    "lift",
    "make_subgame",
    "region_values",
    "subgame_margins",
]
