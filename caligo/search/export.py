"""Export an arena as a compiled game, and read a strategy back: the search's one exporter.

`export_trunk(arena, layer, searcher, penalty)` writes the arena's expanded part (the trunk)
as a `caligo.core.tree.GameTree` plus an extra payoff matrix B, under the root gadget of
Algorithm 12 (Zhang & Sandholm 2021, appendix E) that `layer` names. Every solver of the core
(the sequence-form LP, the CFR family, best response) then runs on it; ZS21 solves it exactly
by LP (`caligo.agents.zs21.trunk_lp`). The forms (▼ is the opponent of `searcher`):

    RootGadget.MAXMARGIN   node 0: ▼ picks a root infoset J (one action per J); nodes 1..m:
                           chance over J's roots with probability q_h; then the trunk.
    RootGadget.RESOLVE     node 0: chance with the prior alpha(J); nodes 1..m: ▼ chooses EXIT
                           (a terminal worth 0) or PLAY (Algorithm 12, MaxmarginToResolve,
                           lines 29-37); then the chance node over J's roots and the trunk.
    RootGadget.NONE        the trunk grown from the game's start (one root, no gadget).

B has the branch thresholds -t_J at ▼'s branch sequence (times alpha(J) under Resolve) and the
optional information term at our root infoset's sequences (Zhang & Sandholm 2021, Algorithm 15
line 20). Unexpanded leaves are terminals worth their heuristic value. Our frozen infosets
(1-KLSS: the nodes of J outside our infoset keep the blueprint) become chance nodes at the
blueprint, which is what Algorithm 12 lines 26-27 add through B. The chance probabilities under
a J are the arena's q_h, so they sum to more than 1 when J has nodes outside our infoset; the
payoffs are those of the paper's B, written as nodes. Arena node h is exported node
`offset + h`, infosets are the arena's, in id order after the gadget's.

`write_back(trunk, arena, strategy)` stores a strategy of the exported game in the arena: both
players' slots, and the opponent's root weights w_J in the root layer. `strategy_on_tree(arena,
tree, base)` reads the arena's strategy at every infoset of a `TreeGame`'s source tree it
contains (matched by knowledge-infoset id and action label).

The tests read the same arena a second, independent way (through the game protocol and the
core's `build_tree`) and check that both games have the same value and best responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.sequence_form import SequenceForm
from caligo.core.tree import FloatArray, GameTree
from caligo.search.arena import EXPANDED, FROZEN, Arena
from caligo.search.config import RootGadget, SearchError
from caligo.subgame.options import EXIT, PLAY

__all__ = ["RootLayer", "TrunkGame", "export_trunk", "strategy_on_tree", "write_back"]


@dataclass(frozen=True, eq=False)
class RootLayer:
    """The trunk's root gadget: kind, and per root infoset J (arena root order) the threshold
    t_J (our utility) and the Resolve prior alpha_J."""

    kind: RootGadget
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


@dataclass(frozen=True, eq=False)
class _Layout:
    """Where everything of an export goes: the gadget's size, the exported infosets (the gadget's
    first, then the arena's decision infosets in id order) and their sequences, and the maps
    from arena slots and infosets to them."""

    kind: RootGadget
    searcher: int
    n: int  # arena nodes
    m: int  # root infosets J under the gadget (0 without one)
    off: int  # exported id of arena node 0
    expanded: np.ndarray  # bool[n]
    frozen_dec: np.ndarray  # bool[n]: our decisions at the blueprint (chance nodes)
    real_dec: np.ndarray  # bool[n]: decisions that stay decisions
    g_arena: np.ndarray  # the exported arena infosets, in id order
    n_gadget_inf: int
    inf_player: np.ndarray  # int8[infosets]
    n_act: np.ndarray  # int32[infosets]
    offsets: np.ndarray  # int32[infosets]: first slot
    first: np.ndarray  # int32[infosets]: first sequence (its player's numbering)
    num_seq: tuple[int, int]
    inf_map: np.ndarray  # int64[arena infosets]: exported infoset or -1
    seq_of: np.ndarray  # int32[2, arena slots + 1]: exported sequence (last column: slot -1)
    slot_of: np.ndarray  # int64[exported slots]: arena slot or -1

    @property
    def opp(self) -> int:
        return 1 - self.searcher


def _layout(arena: Arena, kind: RootGadget, searcher: int) -> _Layout:
    """The export's infosets, sequences and index maps (gadget infosets first)."""
    nd, inf = arena.nodes, arena.infosets
    n = arena.n_nodes
    m = arena.n_j if kind is not RootGadget.NONE else 0
    off = {RootGadget.NONE: 0, RootGadget.MAXMARGIN: 1 + m, RootGadget.RESOLVE: 1 + 3 * m}[kind]
    flags = nd.flags[:n]
    expanded = (flags & EXPANDED) != 0
    pl = nd.player[:n]
    dec = expanded & ((pl == 0) | (pl == 1))
    frozen_dec = dec & ((flags & FROZEN) != 0) & (pl == searcher)
    real_dec = dec & ~frozen_dec
    g_arena = np.unique(nd.infoset[:n][real_dec])
    n_gadget_inf = {RootGadget.NONE: 0, RootGadget.MAXMARGIN: 1, RootGadget.RESOLVE: m}[kind]
    ginf = g_arena.size + n_gadget_inf
    inf_player = np.empty(ginf, dtype=np.int8)
    n_act = np.empty(ginf, dtype=np.int32)
    inf_player[:n_gadget_inf] = 1 - searcher
    if kind is RootGadget.MAXMARGIN:
        n_act[0] = m
    elif kind is RootGadget.RESOLVE:
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
    seq_of = np.zeros((2, max(arena.n_slots, 1) + 1), dtype=np.int32)
    slot_of = np.full(int(n_act.sum()), -1, dtype=np.int64)
    for i, g in enumerate(g_arena.tolist()):
        s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
        seq_of[int(inf.player[g]), s0 : s0 + k] = first[n_gadget_inf + i] + np.arange(k)
        o = int(offsets[n_gadget_inf + i])
        slot_of[o : o + k] = s0 + np.arange(k)
    if kind is RootGadget.MAXMARGIN:
        seq_of[1 - searcher, :m] = first[0] + np.arange(m)
    elif kind is RootGadget.RESOLVE:
        seq_of[1 - searcher, :m] = first[:m] + PLAY
    return _Layout(kind=kind, searcher=searcher, n=n, m=m, off=off, expanded=expanded,
                   frozen_dec=frozen_dec, real_dec=real_dec, g_arena=g_arena,
                   n_gadget_inf=n_gadget_inf, inf_player=inf_player, n_act=n_act,
                   offsets=offsets, first=first, num_seq=(num_seq[0], num_seq[1]),
                   inf_map=inf_map, seq_of=seq_of, slot_of=slot_of)


@dataclass(frozen=True, eq=False)
class _Nodes:
    """The exported game's node arrays (`GameTree`'s fields of the same names)."""

    player: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    action: np.ndarray
    first_child: np.ndarray
    num_children: np.ndarray
    prob: np.ndarray
    utility: np.ndarray
    infoset: np.ndarray
    seq: np.ndarray


def _trunk_nodes(arena: Arena, lay: _Layout) -> _Nodes:
    """The arena's nodes at `off + h`: unexpanded leaves become terminals worth their value,
    our frozen decisions chance nodes at the blueprint; the gadget's rows are left for
    `_gadget_nodes`."""
    nd, inf = arena.nodes, arena.infosets
    n, off = lay.n, lay.off
    N = off + n
    out = _Nodes(player=np.empty(N, dtype=np.int8), parent=np.empty(N, dtype=np.int32),
                 depth=np.empty(N, dtype=np.int32), action=np.empty(N, dtype=np.int32),
                 first_child=np.zeros(N, dtype=np.int32),
                 num_children=np.zeros(N, dtype=np.int32), prob=np.ones(N, dtype=np.float64),
                 utility=np.zeros(N, dtype=np.float64), infoset=np.full(N, -1, dtype=np.int32),
                 seq=np.zeros((N, 2), dtype=np.int32))
    expanded, frozen_dec = lay.expanded, lay.frozen_dec
    pl = nd.player[:n]
    ids = off + np.arange(n)
    out.player[ids] = np.where(~expanded | (pl == TERMINAL), TERMINAL,
                               np.where(frozen_dec, CHANCE, pl))
    out.utility[ids] = np.where(out.player[ids] == TERMINAL, nd.value[:n], 0.0)
    out.parent[ids] = np.where(nd.parent[:n] >= 0, off + nd.parent[:n], 0)
    out.depth[ids] = nd.depth[:n] + {RootGadget.NONE: 0, RootGadget.MAXMARGIN: 2,
                                     RootGadget.RESOLVE: 3}[lay.kind]
    out.action[ids] = nd.action[:n]
    out.first_child[ids] = np.where(expanded, off + nd.first_child[:n], 0)
    out.num_children[ids] = np.where(expanded, nd.num_children[:n], 0)
    out.infoset[ids] = np.where(lay.real_dec, lay.inf_map[np.maximum(nd.infoset[:n], 0)], -1)
    for p in (0, 1):
        out.seq[ids, p] = lay.seq_of[p, nd.seq[:n, p]]
    # incoming probabilities: chance edges, frozen blueprint edges (the roots' q: the gadget's)
    par = nd.parent[:n]
    has_par = par >= 0
    pp = np.where(has_par, par, 0)
    chance_edge = has_par & (pl[pp] == CHANCE) & expanded[pp]
    out.prob[ids] = np.where(chance_edge, nd.chance_prob[:n], 1.0)
    fz = has_par & frozen_dec[pp]
    if fz.any():
        kids = np.flatnonzero(fz)
        pk = par[kids]
        slot = inf.slot0[nd.infoset[pk]] + (kids - nd.first_child[pk])
        out.prob[off + kids] = arena.slots.strat[slot]
    return out


def _gadget_nodes(arena: Arena, lay: _Layout, layer: RootLayer, out: _Nodes) -> None:
    """Write the gadget's rows 0 .. off-1 and link the roots below them (module docstring)."""
    m, off, opp = lay.m, lay.off, lay.opp
    if lay.kind is RootGadget.NONE:
        out.parent[0] = -1
        out.prob[0] = 1.0
        return
    nr = arena.n_roots
    ptr = arena.roots.ptr[: m + 1].astype(np.int64)
    jr = np.repeat(np.arange(m), np.diff(ptr))  # J of each root
    out.prob[off : off + nr] = arena.nodes.chance_prob[:nr]
    out.action[off : off + nr] = np.arange(nr) - ptr[jr]
    gid = np.arange(m)
    player, parent, depth, action = out.player, out.parent, out.depth, out.action
    if lay.kind is RootGadget.MAXMARGIN:
        hj = 1 + gid
        player[0], parent[0], depth[0], action[0] = opp, -1, 0, -1
        out.first_child[0], out.num_children[0], out.infoset[0] = 1, m, 0
        player[hj], parent[hj], depth[hj], action[hj] = CHANCE, 0, 1, gid
        out.seq[hj, opp] = lay.first[0] + gid
    else:
        res, ex, hj = 1 + gid, 1 + m + 2 * gid, 2 + m + 2 * gid
        player[0], parent[0], depth[0], action[0] = CHANCE, -1, 0, -1
        out.first_child[0], out.num_children[0] = 1, m
        player[res], parent[res], depth[res], action[res] = opp, 0, 1, gid
        out.prob[res] = layer.alpha[:m]
        out.first_child[res], out.num_children[res], out.infoset[res] = ex, 2, gid
        player[ex], parent[ex], depth[ex], action[ex] = TERMINAL, res, 2, EXIT
        out.seq[ex, opp] = lay.first[gid] + EXIT
        player[hj], parent[hj], depth[hj], action[hj] = CHANCE, res, 2, PLAY
        out.seq[hj, opp] = lay.first[gid] + PLAY
    out.first_child[hj] = off + ptr[:-1]
    out.num_children[hj] = np.diff(ptr)
    parent[off + np.arange(nr)] = hj[jr]


def _game_tree(arena: Arena, lay: _Layout, nodes: _Nodes) -> GameTree:
    """The `GameTree` of the exported nodes, with its sequence form computed here (vectorized)
    and cached where `caligo.core.lp` looks for it."""
    nd, inf = arena.nodes, arena.infosets
    n, off, m, kind = lay.n, lay.off, lay.m, lay.kind
    N = off + n
    reach = np.empty(N, dtype=np.float64)
    _reach_kernel(nodes.parent, nodes.prob, reach)
    # knowledge ids (a GameTree carries them; the LP does not read them)
    kinfo = np.empty((N, 2), dtype=np.int32)
    for p in (0, 1):
        _, inv = np.unique(nd.key[:n, p], return_inverse=True)
        kinfo[off:, p] = inv + off
        kinfo[:off, p] = np.arange(off)
    ginf = lay.inf_player.size
    inf_kinfo = np.zeros(ginf, dtype=np.int32)
    owner = np.flatnonzero(nodes.infoset >= 0)
    inf_kinfo[nodes.infoset[owner]] = kinfo[owner, lay.inf_player[nodes.infoset[owner]]]
    names = tuple(["gadget:root"] if kind is RootGadget.MAXMARGIN else
                  [f"gadget:resolve:{j}" for j in range(lay.n_gadget_inf)]) + tuple(
        f"p{int(inf.player[g])}:{int(inf.key[g]):016x}" for g in lay.g_arena.tolist())
    slot_action = np.empty(int(lay.n_act.sum()), dtype=np.int32)
    if kind is RootGadget.MAXMARGIN:
        slot_action[:m] = np.arange(m)
    elif kind is RootGadget.RESOLVE:
        slot_action[: 2 * m] = np.tile([EXIT, PLAY], m)
    ok = lay.slot_of >= 0
    slot_action[ok] = arena.slots.action[lay.slot_of[ok]]
    parent_seq = np.zeros(ginf, dtype=np.int32)
    pls = inf.player[lay.g_arena].astype(np.int64)
    parent_seq[lay.n_gadget_inf :] = lay.seq_of[pls, inf.parent_seq[lay.g_arena]]
    first, n_act, num_seq = lay.first, lay.n_act, lay.num_seq
    seq_infoset = []
    for p in (0, 1):
        own = np.full(num_seq[p], -1, dtype=np.int32)
        gg = np.flatnonzero(lay.inf_player == p)
        na = n_act[gg]
        kid = np.arange(int(na.sum())) - np.repeat(np.cumsum(na) - na, na)
        own[np.repeat(first[gg], na) + kid] = np.repeat(gg, na)
        seq_infoset.append(own)
    tree = GameTree(
        name="arena-trunk", player=nodes.player, parent=nodes.parent, depth=nodes.depth,
        action=nodes.action, first_child=nodes.first_child, num_children=nodes.num_children,
        chance_prob=nodes.prob, chance_reach=reach, utility=nodes.utility,
        infoset=nodes.infoset, kinfo=kinfo, seq=nodes.seq, infoset_player=lay.inf_player,
        infoset_num_actions=n_act, infoset_offset=lay.offsets, infoset_seq=first,
        infoset_parent_seq=parent_seq, infoset_kinfo=inf_kinfo, infoset_names=names,
        slot_action=slot_action, num_sequences=num_seq,
        seq_infoset=(seq_infoset[0], seq_infoset[1]),
        num_kinfo=(int(kinfo[:, 0].max()) + 1, int(kinfo[:, 1].max()) + 1),
    )  # fmt: skip
    z = np.flatnonzero(nodes.player == TERMINAL)
    A = sp.csr_matrix((reach[z] * nodes.utility[z], (nodes.seq[z, 0], nodes.seq[z, 1])),
                      shape=num_seq)
    cons = []
    for p in (0, 1):
        gg = np.flatnonzero(lay.inf_player == p)
        cons.append(_constraints(num_seq[p], first[gg], n_act[gg], parent_seq[gg]))
    tree._cache["sequence_form"] = SequenceForm(A, cons[0][0], cons[0][1], cons[1][0],
                                                cons[1][1])
    return tree


def _extra(lay: _Layout, layer: RootLayer, penalty: tuple[int, np.ndarray] | None,
           ) -> tuple[sp.csr_matrix, int]:
    """B: the thresholds at the opponent's branch sequences, the information term at our root
    infoset's; and our root infoset's exported id (-1 when not exported)."""
    m, searcher, first = lay.m, lay.searcher, lay.first
    sign = 1.0 if searcher == 0 else -1.0
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    if lay.kind is not RootGadget.NONE and m:
        branch = (first[0] + np.arange(m) if lay.kind is RootGadget.MAXMARGIN
                  else first[:m] + PLAY).astype(np.int64)
        scale = np.ones(m) if lay.kind is RootGadget.MAXMARGIN else layer.alpha[:m]
        top = np.zeros(m, dtype=np.int64)
        rows.append(top if lay.opp == 1 else branch)
        cols.append(branch if lay.opp == 1 else top)
        vals.append(-sign * scale * layer.threshold[:m])
    root_inf = -1
    if penalty is not None and 0 <= penalty[0] < lay.inf_map.size:
        root_inf = int(lay.inf_map[penalty[0]])
    if root_inf >= 0 and penalty is not None:
        k = int(lay.n_act[root_inf])
        mine = (first[root_inf] + np.arange(k)).astype(np.int64)
        none = np.zeros(k, dtype=np.int64)
        rows.append(mine if searcher == 0 else none)
        cols.append(none if searcher == 0 else mine)
        vals.append(sign * np.asarray(penalty[1], dtype=np.float64)[:k])
    if not vals:
        return sp.csr_matrix(lay.num_seq), root_inf
    B = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=lay.num_seq)
    return B, root_inf


def export_trunk(arena: Arena, layer: RootLayer, searcher: int,
                 penalty: tuple[int, np.ndarray] | None = None) -> TrunkGame:
    """The trunk of `arena` as a `GameTree` + B under `layer`'s gadget (module docstring).

    penalty: (arena infoset of our root infoset, per-action payoff in our utility) or None.
    """
    lay = _layout(arena, layer.kind, searcher)
    nodes = _trunk_nodes(arena, lay)
    _gadget_nodes(arena, lay, layer, nodes)
    tree = _game_tree(arena, lay, nodes)
    B, root_inf = _extra(lay, layer, penalty)
    infoset_of = np.full(lay.inf_player.size, -1, dtype=np.int64)
    infoset_of[lay.n_gadget_inf :] = lay.g_arena
    return TrunkGame(tree=tree, extra=B, searcher=searcher, layer=layer, slot_of=lay.slot_of,
                     infoset_of=infoset_of, offset=lay.off, root_infoset=root_inf)


def write_back(trunk: TrunkGame, arena: Arena, strategy: FloatArray) -> None:
    """Store a strategy of the exported game (over its slots) in the arena: both players' play
    in the arena's slots, the opponent's root weights w_J in the root layer."""
    s = strategy
    ok = trunk.slot_of >= 0
    arena.slots.strat[trunk.slot_of[ok]] = s[ok]
    kind = trunk.layer.kind
    if kind is RootGadget.NONE:
        return
    m = arena.n_j
    t = trunk.tree
    if kind is RootGadget.MAXMARGIN:
        w = s[int(t.infoset_offset[0]) : int(t.infoset_offset[0]) + m]
    else:
        play = s[t.infoset_offset[:m] + PLAY]
        w = trunk.layer.alpha[:m] * play
    arena.roots.w[:m] = w
    tot = float(w.sum())
    arena.slots.strat[:m] = w / tot if tot > 0 else 1.0 / m


def strategy_on_tree(arena: Arena, tree: GameTree, base: FloatArray,
                     strat: FloatArray | None = None, players: Sequence[int] = (0, 1),
                     ) -> FloatArray:
    """`base` with every infoset of `tree` that the arena has replaced by the arena's play.

    The arena must come from a `TreeGame` over `tree` with unsalted keys (knowledge ids).
    `strat`: a strategy over the arena's slots (default: the current iterate).
    """
    out = np.array(base, dtype=np.float64)
    s = arena.slots.strat if strat is None else strat
    for g in range(tree.num_infosets):
        p = int(tree.infoset_player[g])
        if p not in players:
            continue
        ag = arena.infoset_of_key(p, int(tree.infoset_kinfo[g]))
        if ag < 0:
            continue
        off = int(tree.infoset_offset[g])
        n = int(tree.infoset_num_actions[g])
        sl = arena.infoset_slots(ag)
        acts = arena.slots.action[sl]
        want = tree.slot_action[off : off + n]
        if acts.size != n or not np.array_equal(np.sort(acts), np.sort(want)):
            raise SearchError(f"arena infoset {ag} has actions {acts}, the tree's infoset "
                              f"{tree.infoset_names[g]!r} has {want}")
        pos = {int(x): i for i, x in enumerate(acts)}
        out[off : off + n] = [s[sl.start + pos[int(x)]] for x in want]
    return out
