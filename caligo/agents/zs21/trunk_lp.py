"""The trunk as a sequence-form game, solved exactly (Zhang & Sandholm 2021, appendix D.2).

ZS21 solves its trunk "exactly (e.g., with an LP solver)": Algorithm 15 reasons about the
support of the solution (which nodes to expand next), so an exact method is wanted (Zhang &
Sandholm 2021, appendix E; Algorithm 15, line 23). `export(arena, layer, searcher, penalty)`
turns the trunk held in a search `Arena` into a `caligo.core.tree.GameTree` plus extra payoffs
B, and `solve` solves it with `caligo.core.lp.solve_player` (HiGHS) for both players, so the LP
is the core's.

The exported game is Algorithm 12's gadget (Zhang & Sandholm 2021, appendix E):

    Gadget.MAXMARGIN   node 0: the opponent (▼) picks a root infoset J (one action per J);
                       nodes 1..m: chance over J's roots with probability q_h; then the trunk.
    Gadget.RESOLVE     node 0: chance with the prior alpha(J); nodes 1..m: ▼ chooses EXIT
                       (a terminal worth 0) or PLAY (MaxmarginToResolve, lines 29-37); then
                       the chance node over J's roots and the trunk.
    Gadget.NONE        the trunk grown from the game's start (one root, no gadget).

B has the branch thresholds -t_J at ▼'s branch sequence (times alpha(J) under Resolve): the
alternate value and gift of J, scaled (`caligo.agents.zs21.subgame`), and the information term
at our root infoset's sequences (Algorithm 15 line 20). Trunk leaves (unexpanded nodes) are
terminals worth their heuristic value. Our (▲'s) frozen infosets (1-KLSS: the nodes of J
outside our infoset keep the blueprint) become chance nodes at the blueprint, which is what
Algorithm 12 lines 26-27 add through B. The chance probabilities under a J are q_h = c x / D
with D summed over J's nodes in our infoset only (line 16), so they sum to R / D >= 1 when J has
nodes outside it; the payoffs are those of the seed's B, written as nodes.

`solve` writes the solution back into the arena: our strategy and the opponent's into their
slots, the opponent's root weights w_J into the root layer (what `construct.profile` reads).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.optimize import linprog

from caligo.agents.zs21.config import Gadget
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.lp import PRIMAL_TOL, LPError, TieBreak, solve_player
from caligo.core.sequence_form import SequenceForm, sequence_form
from caligo.core.strategy import behavioral_from_realization, uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.arena import EXPANDED, FROZEN, Arena
from caligo.search.intern import splitmix64

__all__ = ["LPSolution", "RootLayer", "TrunkGame", "canonical_weights", "export", "solve"]

EXIT, PLAY = 0, 1
_HIGHS = {"primal_feasibility_tolerance": PRIMAL_TOL, "dual_feasibility_tolerance": 1e-10,
          "presolve": True}  # caligo.core.lp's settings


@dataclass(frozen=True, eq=False)
class RootLayer:
    """The trunk's root gadget: kind, and per root infoset J (arena root order) the threshold
    t_J (our utility) and the Resolve prior alpha_J."""

    kind: Gadget
    threshold: np.ndarray
    alpha: np.ndarray


@dataclass(frozen=True, eq=False)
class TrunkGame:
    """An exported trunk: the game, B, and the maps back to the arena.

    slot_of: int64[tree slots] the arena slot of each exported slot (-1 for gadget slots);
    infoset_of: int64[tree infosets] the arena infoset (-1 for gadget infosets); offset: the
    exported id of arena node 0 (arena node h is exported node offset + h); root_infoset: the
    exported id of our root infoset (-1 if not in the trunk).
    """

    tree: GameTree
    extra: sp.csr_matrix
    searcher: int
    layer: RootLayer
    slot_of: np.ndarray
    infoset_of: np.ndarray
    offset: int
    root_infoset: int


@dataclass(frozen=True, eq=False)
class LPSolution:
    """Both players' exact strategies of an exported trunk (over its slots) and our value."""

    strategy: np.ndarray
    value: float  # our guaranteed value of the gadget game, our utility
    seconds: float


@njit(cache=True, nogil=True)
def _reach_kernel(parent: np.ndarray, prob: np.ndarray, out: np.ndarray) -> int:
    """out[i] = out[parent[i]] * prob[i] (parents precede children; parent -1 = root)."""
    for i in range(parent.shape[0]):
        p = parent[i]
        out[i] = prob[i] if p < 0 else out[p] * prob[i]
    return 0


def _constraints(num_seq: int, first: np.ndarray, n_act: np.ndarray, parent_seq: np.ndarray,
                 ) -> tuple[sp.csr_matrix, np.ndarray]:
    """(E, e) of one player's treeplex, vectorized (`caligo.core.sequence_form` row order)."""
    k = first.shape[0]
    rows = np.concatenate([[0], np.arange(1, k + 1), np.repeat(np.arange(1, k + 1), n_act)])
    kid = np.arange(int(n_act.sum())) - np.repeat(np.cumsum(n_act) - n_act, n_act)
    cols = np.concatenate([[0], parent_seq, np.repeat(first, n_act) + kid])
    vals = np.concatenate([[1.0], -np.ones(k), np.ones(int(n_act.sum()))])
    E = sp.csr_matrix((vals, (rows, cols)), shape=(k + 1, num_seq))
    e = np.zeros(k + 1)
    e[0] = 1.0
    return E, e


# Long by design: one pass writes the trunk's nodes, the gadget layer of its kind and the
# extra-payoff entries B together, with the index maps they share; the kinds differ only in
# their offsets.
def export(arena: Arena, layer: RootLayer, searcher: int,
           penalty: tuple[int, np.ndarray] | None = None) -> TrunkGame:
    """The trunk of `arena` as a `GameTree` + B (module docstring).

    penalty: (arena infoset of our root infoset, per-action payoff in our utility) or None.
    """
    opp = 1 - searcher
    nd, inf, sl = arena.nodes, arena.infosets, arena.slots
    n = arena.n_nodes
    kind = layer.kind
    m = arena.n_j if kind is not Gadget.NONE else 0
    off = {Gadget.NONE: 0, Gadget.MAXMARGIN: 1 + m, Gadget.RESOLVE: 1 + 3 * m}[kind]
    N = off + n
    strat = sl.strat
    flags = nd.flags[:n]
    expanded = (flags & EXPANDED) != 0
    pl = nd.player[:n]
    dec = expanded & ((pl == 0) | (pl == 1))
    frozen_dec = dec & ((flags & FROZEN) != 0) & (pl == searcher)
    real_dec = dec & ~frozen_dec
    g_arena = np.unique(nd.infoset[:n][real_dec])

    # infosets: gadget ones first, then the arena's in id order
    n_gadget_inf = {Gadget.NONE: 0, Gadget.MAXMARGIN: 1, Gadget.RESOLVE: m}[kind]
    ginf = g_arena.size + n_gadget_inf
    inf_player = np.empty(ginf, dtype=np.int8)
    n_act = np.empty(ginf, dtype=np.int32)
    inf_player[:n_gadget_inf] = opp
    if kind is Gadget.MAXMARGIN:
        n_act[0] = m
    elif kind is Gadget.RESOLVE:
        n_act[:m] = 2
    inf_player[n_gadget_inf:] = inf.player[g_arena]
    n_act[n_gadget_inf:] = inf.n_actions[g_arena]
    offsets = (np.cumsum(n_act) - n_act).astype(np.int32)
    first = np.zeros(ginf, dtype=np.int32)
    num_seq = [1, 1]
    for p in (0, 1):
        mask = inf_player == p
        cum = np.cumsum(np.where(mask, n_act, 0))
        first[mask] = (1 + cum - n_act)[mask]
        num_seq[p] = 1 + int(n_act[mask].sum())
    inf_map = np.full(max(arena.n_infosets, 1), -1, dtype=np.int64)
    inf_map[g_arena] = n_gadget_inf + np.arange(g_arena.size)
    # arena slot -> exported sequence, per player (frozen and unexported slots: empty)
    seq_of = np.zeros((2, max(arena.n_slots, 1) + 1), dtype=np.int32)  # last column: slot -1
    for i, g in enumerate(g_arena.tolist()):
        p = int(inf.player[g])
        s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
        seq_of[p, s0 : s0 + k] = first[n_gadget_inf + i] + np.arange(k)
    if kind is Gadget.MAXMARGIN:
        seq_of[opp, :m] = first[0] + np.arange(m)
    elif kind is Gadget.RESOLVE:
        seq_of[opp, :m] = first[:m] + PLAY
    slot_of = np.full(int(n_act.sum()), -1, dtype=np.int64)
    for i, g in enumerate(g_arena.tolist()):
        s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
        o = int(offsets[n_gadget_inf + i])
        slot_of[o : o + k] = s0 + np.arange(k)

    # nodes
    player = np.empty(N, dtype=np.int8)
    parent = np.empty(N, dtype=np.int32)
    depth = np.empty(N, dtype=np.int32)
    action = np.empty(N, dtype=np.int32)
    first_child = np.zeros(N, dtype=np.int32)
    num_children = np.zeros(N, dtype=np.int32)
    prob = np.ones(N, dtype=np.float64)
    utility = np.zeros(N, dtype=np.float64)
    infoset = np.full(N, -1, dtype=np.int32)
    seq = np.zeros((N, 2), dtype=np.int32)
    ar = np.arange(n)
    ids = off + ar
    player[ids] = np.where(~expanded | (pl == TERMINAL), TERMINAL,
                           np.where(frozen_dec, CHANCE, pl))
    utility[ids] = np.where(player[ids] == TERMINAL, nd.value[:n], 0.0)
    parent[ids] = np.where(nd.parent[:n] >= 0, off + nd.parent[:n], 0)
    depth[ids] = nd.depth[:n] + (0 if kind is Gadget.NONE else (2 if kind is Gadget.MAXMARGIN
                                                                  else 3))
    action[ids] = nd.action[:n]
    first_child[ids] = np.where(expanded, off + nd.first_child[:n], 0)
    num_children[ids] = np.where(expanded, nd.num_children[:n], 0)
    infoset[ids] = np.where(real_dec, inf_map[np.maximum(nd.infoset[:n], 0)], -1)
    for p in (0, 1):
        seq[ids, p] = seq_of[p, nd.seq[:n, p]]
    # incoming probabilities: chance edges, frozen blueprint edges, roots' q
    par = nd.parent[:n]
    has_par = par >= 0
    pp = np.where(has_par, par, 0)
    chance_edge = has_par & (pl[pp] == CHANCE) & expanded[pp]
    prob[ids] = np.where(chance_edge, nd.chance_prob[:n], 1.0)
    fz = has_par & frozen_dec[pp]
    if fz.any():
        kids = np.flatnonzero(fz)
        pk = par[kids]
        slot = inf.slot0[nd.infoset[pk]] + (kids - nd.first_child[pk])
        prob[off + kids] = strat[slot]
    nr = arena.n_roots
    if kind is Gadget.NONE:
        parent[0] = -1
        prob[0] = 1.0
    else:
        ptr = arena.roots.ptr[: m + 1].astype(np.int64)
        jr = np.repeat(np.arange(m), np.diff(ptr))  # J of each root
        prob[off : off + nr] = nd.chance_prob[:nr]
        action[off : off + nr] = np.arange(nr) - ptr[jr]
        gid = np.arange(m)
        if kind is Gadget.MAXMARGIN:
            hj = 1 + gid
            player[0], parent[0], depth[0], action[0] = opp, -1, 0, -1
            first_child[0], num_children[0], infoset[0] = 1, m, 0
            player[hj], parent[hj], depth[hj], action[hj] = CHANCE, 0, 1, gid
            seq[hj, opp] = first[0] + gid
        else:
            res, ex, hj = 1 + gid, 1 + m + 2 * gid, 2 + m + 2 * gid
            player[0], parent[0], depth[0], action[0] = CHANCE, -1, 0, -1
            first_child[0], num_children[0] = 1, m
            player[res], parent[res], depth[res], action[res] = opp, 0, 1, gid
            prob[res] = layer.alpha[:m]
            first_child[res], num_children[res], infoset[res] = ex, 2, gid
            player[ex], parent[ex], depth[ex], action[ex] = TERMINAL, res, 2, EXIT
            seq[ex, opp] = first[gid] + EXIT
            player[hj], parent[hj], depth[hj], action[hj] = CHANCE, res, 2, PLAY
            seq[hj, opp] = first[gid] + PLAY
        first_child[hj] = off + ptr[:-1]
        num_children[hj] = np.diff(ptr)
        parent[off + ar[:nr]] = hj[jr]
    reach = np.empty(N, dtype=np.float64)
    _reach_kernel(parent, prob, reach)

    # knowledge ids (a GameTree carries them; the LP does not read them)
    kinfo = np.empty((N, 2), dtype=np.int32)
    for p in (0, 1):
        _, inv = np.unique(nd.key[:n, p], return_inverse=True)
        kinfo[ids, p] = inv + off
        kinfo[:off, p] = np.arange(off)
    inf_kinfo = np.zeros(ginf, dtype=np.int32)
    owner = np.flatnonzero(infoset >= 0)
    inf_kinfo[infoset[owner]] = kinfo[owner, inf_player[infoset[owner]]]
    names = tuple(["gadget:root"] if kind is Gadget.MAXMARGIN else
                  [f"gadget:resolve:{j}" for j in range(n_gadget_inf)]) + tuple(
        f"p{int(inf.player[g])}:{int(inf.key[g]):016x}" for g in g_arena.tolist())
    slot_action = np.empty(int(n_act.sum()), dtype=np.int32)
    if kind is Gadget.MAXMARGIN:
        slot_action[:m] = np.arange(m)
    elif kind is Gadget.RESOLVE:
        slot_action[: 2 * m] = np.tile([EXIT, PLAY], m)
    ok = slot_of >= 0
    slot_action[ok] = sl.action[slot_of[ok]]
    parent_seq = np.zeros(ginf, dtype=np.int32)
    ps = inf.parent_seq[g_arena]
    pls = inf.player[g_arena].astype(np.int64)
    parent_seq[n_gadget_inf:] = seq_of[pls, ps]
    seq_infoset = []
    for p in (0, 1):
        own = np.full(num_seq[p], -1, dtype=np.int32)
        mask = inf_player == p
        gg = np.flatnonzero(mask)
        na = n_act[gg]
        kid = np.arange(int(na.sum())) - np.repeat(np.cumsum(na) - na, na)
        own[np.repeat(first[gg], na) + kid] = np.repeat(gg, na)
        seq_infoset.append(own)
    tree = GameTree(
        name="zs21-trunk", player=player, parent=parent, depth=depth, action=action,
        first_child=first_child, num_children=num_children, chance_prob=prob,
        chance_reach=reach, utility=utility, infoset=infoset, kinfo=kinfo, seq=seq,
        infoset_player=inf_player, infoset_num_actions=n_act, infoset_offset=offsets,
        infoset_seq=first, infoset_parent_seq=parent_seq, infoset_kinfo=inf_kinfo,
        infoset_names=names, slot_action=slot_action, num_sequences=(num_seq[0], num_seq[1]),
        seq_infoset=(seq_infoset[0], seq_infoset[1]),
        num_kinfo=(int(kinfo[:, 0].max()) + 1, int(kinfo[:, 1].max()) + 1),
    )  # fmt: skip
    # the sequence form, vectorized, cached where caligo.core.lp looks for it
    z = np.flatnonzero(player == TERMINAL)
    A = sp.csr_matrix((reach[z] * utility[z], (seq[z, 0], seq[z, 1])),
                      shape=(num_seq[0], num_seq[1]))
    cons = []
    for p in (0, 1):
        gg = np.flatnonzero(inf_player == p)
        cons.append(_constraints(num_seq[p], first[gg], n_act[gg], parent_seq[gg]))
    tree._cache["sequence_form"] = SequenceForm(A, cons[0][0], cons[0][1], cons[1][0],
                                                cons[1][1])
    # B: thresholds at the opponent's branch sequences, the information term at ours
    sign = 1.0 if searcher == 0 else -1.0
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    if kind is not Gadget.NONE and m:
        branch = (first[0] + np.arange(m)) if kind is Gadget.MAXMARGIN else first[:m] + PLAY
        scale = np.ones(m) if kind is Gadget.MAXMARGIN else layer.alpha[:m]
        v = -sign * scale * layer.threshold[:m]
        rows.append(np.zeros(m, dtype=np.int64) if opp == 1 else branch.astype(np.int64))
        cols.append(branch.astype(np.int64) if opp == 1 else np.zeros(m, dtype=np.int64))
        vals.append(v)
    root_inf = -1
    if penalty is not None and 0 <= penalty[0] < inf_map.size:
        root_inf = int(inf_map[penalty[0]])
    if root_inf >= 0 and penalty is not None:
        k = int(n_act[root_inf])
        mine = (first[root_inf] + np.arange(k)).astype(np.int64)
        none = np.zeros(k, dtype=np.int64)
        rows.append(mine if searcher == 0 else none)
        cols.append(none if searcher == 0 else mine)
        vals.append(sign * np.asarray(penalty[1], dtype=np.float64)[:k])
    if vals:
        B = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(num_seq[0], num_seq[1]))
    else:
        B = sp.csr_matrix((num_seq[0], num_seq[1]))
    infoset_of = np.full(ginf, -1, dtype=np.int64)
    infoset_of[n_gadget_inf:] = g_arena
    return TrunkGame(tree=tree, extra=B, searcher=searcher, layer=layer, slot_of=slot_of,
                     infoset_of=infoset_of, offset=off, root_infoset=root_inf)


def canonical_weights(keys: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """A fixed generic weight in [-1, 1) for each (infoset key, action label) pair.

    The objective that picks one vertex of an LP's optimal face when `ZS21Config.canonical` is
    on: it depends only on what a sequence *is*, not on how a formulation numbers it.
    """
    k = np.asarray(keys, dtype=np.uint64)
    a = np.asarray(actions, dtype=np.int64).astype(np.uint64)
    h = np.array([splitmix64(np.uint64(x)) for x in (k ^ (a * np.uint64(0x9E3779B97F4A7C15)))],
                 dtype=np.uint64)
    return (h >> np.uint64(11)).astype(np.float64) * (2.0 / 9007199254740992.0) - 1.0


class _Direction:
    """Stands in for the rng `caligo.core.lp.solve_player` draws its tie-break objective from."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights

    def normal(self, size: int) -> np.ndarray:
        return self.weights[:size]


def _canonical_direction(trunk: TrunkGame, arena: Arena, player: int) -> _Direction:
    t = trunk.tree
    w = np.zeros(t.num_sequences[player], dtype=np.float64)
    for g in t.infosets_of(player):
        ag = int(trunk.infoset_of[g])
        if ag < 0:
            continue
        n = int(t.infoset_num_actions[g])
        off = int(t.infoset_offset[g])
        key = np.full(n, int(arena.infosets.key[ag]), dtype=np.uint64)
        first = int(t.infoset_seq[g])
        w[first : first + n] = canonical_weights(key, t.slot_action[off : off + n])
    return _Direction(w)


def _solve_with_duals(tree: GameTree, extra: sp.csr_matrix, me: int,
                      time_limit: float | None = None) -> tuple[np.ndarray, float]:
    """Our max-min LP (`caligo.core.lp.solve_player`'s formulation) in one HiGHS dual-simplex
    call; the opponent's min-max realization plan is the LP's dual: the multipliers of the rows
    F^T q - A^T x <= 0, one per opponent sequence (sequence-form LP duality, Ha 2016, chapter E).
    Returns (a strategy over the tree's slots with both players' parts, our value in player 0's
    utility)."""
    sf = sequence_form(tree)
    A = (sf.A + extra).tocsr()
    if me == 0:
        M, (C, c), (Dm, d), sign = A.T, (sf.E, sf.e), (sf.F, sf.f), 1.0
    else:
        M, (C, c), (Dm, d), sign = -A, (sf.F, sf.f), (sf.E, sf.e), -1.0
    nx, nq = C.shape[1], Dm.shape[0]
    cost = np.concatenate([np.zeros(nx), -d])
    A_ub = sp.hstack([-M, Dm.T]).tocsr()
    A_eq = sp.hstack([C, sp.csr_matrix((C.shape[0], nq))]).tocsr()
    bounds = [(0.0, None)] * nx + [(None, None)] * nq
    options = dict(_HIGHS) if time_limit is None else {**_HIGHS, "time_limit": time_limit}
    res = linprog(cost, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=c,
                  bounds=bounds, method="highs-ds", options=options)
    if res.status != 0:
        raise LPError(f"sequence-form LP of the ZS21 trunk ({tree.num_nodes} nodes): "
                      f"{res.message}")
    x = np.maximum(res.x[:nx], 0.0)
    y = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
    out = behavioral_from_realization(tree, x, me, into=uniform_strategy(tree))
    out = behavioral_from_realization(tree, y, 1 - me, into=out)
    return out, sign * float(-res.fun)


def solve(trunk: TrunkGame, arena: Arena, tie_break: TieBreak = TieBreak.SIMPLEX,
          canonical: bool = False, time_limit: float | None = None) -> LPSolution:
    """Both players' exact LP strategies of the exported trunk (ours maximizes our value).

    Default: one LP, the opponent's strategy from its duals; `time_limit` (seconds) stops
    HiGHS, and the solve then fails with `LPError`. With another `tie_break` or `canonical`,
    `caligo.core.lp.solve_player` for each player (the tie-break picks our vertex).
    """
    t0 = time.perf_counter()
    me = trunk.searcher
    tree = trunk.tree
    if tie_break is TieBreak.SIMPLEX and not canonical:
        strategy, v0 = _solve_with_duals(tree, trunk.extra, me, time_limit)
        value = v0 if me == 0 else -v0
        return LPSolution(strategy=strategy, value=float(value),
                          seconds=time.perf_counter() - t0)
    if canonical:
        r_me = solve_player(tree, me, extra=trunk.extra, tie_break=TieBreak.RANDOM,
                            rng=_canonical_direction(trunk, arena, me))  # type: ignore[arg-type]
    else:
        r_me = solve_player(tree, me, extra=trunk.extra, tie_break=tie_break)
    r_opp = solve_player(tree, 1 - me, extra=trunk.extra, tie_break=(
        TieBreak.SIMPLEX if tie_break is TieBreak.RANDOM else tie_break))
    strategy = r_me.strategy.copy()
    theirs = tree.infoset_player[tree.slot_infoset()] == 1 - me
    strategy[theirs] = r_opp.strategy[theirs]
    value = r_me.value if me == 0 else -r_me.value
    return LPSolution(strategy=strategy, value=float(value), seconds=time.perf_counter() - t0)


def write_back(trunk: TrunkGame, arena: Arena, solution: LPSolution) -> None:
    """Store the solution in the arena: strategies in the slots, w_J in the root layer."""
    s = solution.strategy
    ok = trunk.slot_of >= 0
    arena.slots.strat[trunk.slot_of[ok]] = s[ok]
    kind = trunk.layer.kind
    if kind is Gadget.NONE:
        return
    m = arena.n_j
    t = trunk.tree
    if kind is Gadget.MAXMARGIN:
        w = s[int(t.infoset_offset[0]) : int(t.infoset_offset[0]) + m]
    else:
        play = s[t.infoset_offset[:m] + PLAY]
        w = trunk.layer.alpha[:m] * play
    arena.roots.w[:m] = w
    tot = float(w.sum())
    arena.slots.strat[:m] = w / tot if tot > 0 else 1.0 / m
