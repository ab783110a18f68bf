"""Conversions between gadgets and small tree transforms (Zhang & Sandholm 2021, Algorithm 12, lines
29-43).

- `maxmargin_to_resolve(sub, prior=None)` (MaxmarginToResolve): the player-1 root becomes a
  chance node playing prior alpha (uniform 1/N by default, line 30); each branch gets a
  player-1 node with EXIT (utility 0) and PLAY (the old branch); every B entry of branch r is
  multiplied by alpha(r) (line 35, B <- B / N for the uniform prior).
- `resolve_to_maxmargin(sub)` (ResolveToMaxmargin): the chance root becomes a player-1 node, each
  resolve node is replaced by its PLAY child, and B entries of branch r are divided by alpha(r)
  (line 41, B <- N B).

Both return a new `Subgame` whose maps still point at the original source tree, so `lift` and
`subgame_margins` work unchanged. `make_subgame(..., kind=RESOLVE)` builds the same game directly.

`swap_players(tree)` renames the players (and negates utilities), so that player 1 can be the
solving player of `make_subgame` (e.g. Ha 2016, section F.2's re-solving of rock-paper-scissors,
where the re-solving player moves second).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import FloatArray, GameTree, build_tree
from caligo.subgame.gadget import GadgetKind, Subgame, SubgameError
from caligo.subgame.options import EXIT, PLAY
from caligo.subgame.regions import _region_of


@dataclass(frozen=True)
class _Copy:
    """A node of a source tree, optionally with the players swapped."""

    src: GameTree
    node: int
    swap: bool = False

    def _p(self, p: int) -> int:
        return 1 - p if self.swap and p in (0, 1) else p

    def is_terminal(self) -> bool:
        return int(self.src.player[self.node]) == TERMINAL

    def current_player(self) -> int:
        return self._p(int(self.src.player[self.node]))

    def _kids(self) -> range:
        fc = int(self.src.first_child[self.node])
        return range(fc, fc + int(self.src.num_children[self.node]))

    def legal_actions(self) -> Sequence[int]:
        return [int(self.src.action[c]) for c in self._kids()]

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        return [(int(self.src.action[c]), float(self.src.chance_prob[c])) for c in self._kids()]

    def child(self, action: int) -> _Copy:
        for c in self._kids():
            if int(self.src.action[c]) == action:
                return _Copy(self.src, c, self.swap)
        raise SubgameError(f"no action {action} at node {self.node}")

    def infoset_key(self, player: int) -> Hashable:
        return ("n", int(self.src.kinfo[self.node, self._p(player)]))

    def infoset_name(self, player: int) -> str:
        g = int(self.src.infoset[self.node])
        if g >= 0 and int(self.src.infoset_player[g]) == self._p(player):
            return self.src.infoset_names[g]
        return f"p{player}:kinfo{int(self.src.kinfo[self.node, self._p(player)])}"

    def utility(self) -> float:
        u = float(self.src.utility[self.node])
        return -u if self.swap else u

    def action_string(self, action: int) -> str:
        return str(action)


@dataclass(frozen=True)
class _CopyGame:
    root: _Copy
    name: str

    def new_initial_state(self) -> _Copy:
        return self.root


def swap_players(tree: GameTree) -> GameTree:
    """The same game with players 0 and 1 renamed and player 0's utility negated."""
    return build_tree(_CopyGame(_Copy(tree, 0, True), f"swapped({tree.name})"))


# ---------------------------------------------------------------------------------------------
# MaxmarginToResolve / ResolveToMaxmargin


@dataclass(frozen=True)
class _Top:
    """New top nodes over an old gadget: ROOT, resolve nodes, EXIT leaves; else a copy."""

    old: GameTree
    to_resolve: bool
    prior: tuple[float, ...]
    branch_nodes: tuple[int, ...]  # the old node starting each branch (below the old root)
    tag: str = "root"
    index: int = -1

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def current_player(self) -> int:
        if self.tag == "root":
            return CHANCE if self.to_resolve else 1
        if self.tag == "resolve":
            return 1
        if self.tag == "exit":
            return TERMINAL
        return _Copy(self.old, self.index).current_player()

    def legal_actions(self) -> Sequence[int]:
        if self.tag == "root":
            return list(range(len(self.branch_nodes)))
        if self.tag == "resolve":
            return [EXIT, PLAY]
        return _Copy(self.old, self.index).legal_actions()

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        if self.tag == "root":
            return list(enumerate(self.prior))
        return _Copy(self.old, self.index).chance_outcomes()

    def _with(self, tag: str, index: int) -> _Top:
        return dataclasses.replace(self, tag=tag, index=index)

    def child(self, action: int) -> _Top:
        if self.tag == "root":
            if self.to_resolve:
                return self._with("resolve", action)
            return self._with("copy", self.branch_nodes[action])
        if self.tag == "resolve":
            if action == EXIT:
                return self._with("exit", self.index)
            return self._with("copy", self.branch_nodes[self.index])
        return self._with("copy", _Copy(self.old, self.index).child(action).node)

    def infoset_key(self, player: int) -> Hashable:
        if self.tag == "copy":
            return _Copy(self.old, self.index).infoset_key(player)
        if player == 1 and self.tag != "root":
            return ("top", self.tag, self.index)
        return ("top", "root")

    def infoset_name(self, player: int) -> str:
        if self.tag == "copy":
            return _Copy(self.old, self.index).infoset_name(player)
        if self.tag == "resolve":
            return f"gadget:resolve:{self.index}"
        return "gadget:root"

    def utility(self) -> float:
        return float(self.old.utility[self.index]) if self.tag == "copy" else 0.0

    def action_string(self, action: int) -> str:
        return str(action)


@dataclass(frozen=True)
class _TopGame:
    root: _Top
    name: str

    def new_initial_state(self) -> _Top:
        return self.root


def _branch_starts(sub: Subgame) -> tuple[int, ...]:
    """The old node beginning each branch: the chance node over I0's copies."""
    gt = sub.tree
    kids = [int(gt.first_child[0]) + r for r in range(sub.num_roots)]
    if sub.options.kind is GadgetKind.RESOLVE:  # skip the resolve node: take PLAY's child
        kids = [int(gt.first_child[h]) + PLAY for h in kids]
    return tuple(kids)


def _convert(sub: Subgame, to_resolve: bool, prior: FloatArray) -> Subgame:
    if sub.safe_klss:
        raise SubgameError("build Safe-KLSS gadgets of the wanted kind directly")
    old = sub.tree
    starts = _branch_starts(sub)
    top = _Top(old, to_resolve, tuple(float(a) for a in prior), starts)
    kind = GadgetKind.RESOLVE if to_resolve else GadgetKind.MAXMARGIN
    gt = build_tree(_TopGame(top, old.name + f"->{kind.value}"))
    states: list[_Top] = [top]
    for h in range(gt.num_nodes):
        fc = int(gt.first_child[h])
        for c in range(fc, fc + int(gt.num_children[h])):
            states.append(states[h].child(int(gt.action[c])))
    old_of = np.array([st.index if st.tag == "copy" else -1 for st in states], dtype=np.int32)
    node_map = np.where(old_of >= 0, sub.node_map[np.maximum(old_of, 0)], -1).astype(np.int32)
    phantom = np.where(old_of >= 0, sub.phantom[np.maximum(old_of, 0)], False)
    infoset_map = np.full(gt.num_infosets, -1, dtype=np.int32)
    new_of_old_infoset: dict[int, int] = {}
    for hn in np.flatnonzero(gt.infoset >= 0):
        g = int(gt.infoset[hn])
        if old_of[hn] >= 0:
            og = int(old.infoset[old_of[hn]])
            new_of_old_infoset[og] = g
            infoset_map[g] = sub.infoset_map[og]
    new_of_old_node = np.full(old.num_nodes, -1, dtype=np.int64)
    new_of_old_node[old_of[old_of >= 0]] = np.flatnonzero(old_of >= 0)
    m = sub.num_roots
    branch_seq = np.zeros(m, dtype=np.int32)
    if to_resolve:
        for h, st in enumerate(states):
            if st.tag == "resolve":
                branch_seq[st.index] = gt.infoset_seq[gt.infoset[h]] + PLAY
    elif m:
        branch_seq[:] = gt.infoset_seq[gt.infoset[0]] + np.arange(m)
    # B: branch entries move to the new branch sequence, others follow their infoset
    old_prior = sub.prior
    factor = prior / old_prior
    region = _region_of(old, list(sub.copy_roots))
    B = sp.csr_matrix(sub.extra).tocoo()
    top_row = np.zeros(gt.num_sequences[1])
    old_branch = {int(s): r for r, s in enumerate(sub.branch_seq)}
    for s, v in zip(B.col, B.data, strict=True):
        s = int(s)
        if s in old_branch:
            r = old_branch[s]
            top_row[branch_seq[r]] += v * factor[r]
            continue
        j = int(old.seq_infoset[1][s])
        node = int(np.flatnonzero(old.infoset == j)[0])
        r = int(region[node])
        nj = new_of_old_infoset[j]
        top_row[int(gt.infoset_seq[nj]) + s - int(old.infoset_seq[j])] += v * factor[r]
    nz = np.flatnonzero(top_row)
    extra = sp.csr_matrix((top_row[nz], (np.zeros(nz.size, dtype=np.int64), nz)),
                          shape=(gt.num_sequences[0], gt.num_sequences[1]))
    root_infoset = new_of_old_infoset.get(sub.root_infoset, -1)
    return dataclasses.replace(
        sub,
        tree=gt,
        extra=extra,
        options=dataclasses.replace(sub.options, kind=kind),
        root_infoset=root_infoset,
        node_map=node_map,
        phantom=phantom,
        infoset_map=infoset_map,
        prior=np.asarray(prior, dtype=np.float64),
        branch_seq=branch_seq,
        root_base_outside=sub.root_base_outside * factor,
        copy_roots=tuple(new_of_old_node[c].astype(np.int32) for c in sub.copy_roots),
        _cache={},
    )


def maxmargin_to_resolve(sub: Subgame, prior: FloatArray | None = None) -> Subgame:
    """MaxmarginToResolve (Algorithm 12 lines 29-37), with a uniform or given root prior."""
    if sub.options.kind is not GadgetKind.MAXMARGIN:
        raise SubgameError(f"expected a Maxmargin gadget, got {sub.options.kind.value}")
    m = sub.num_roots
    a = np.full(m, 1.0 / max(m, 1)) if prior is None else np.asarray(prior, dtype=np.float64)
    if a.shape != (m,) or np.any(a <= 0) or abs(a.sum() - 1.0) > 1e-9:
        raise SubgameError(f"prior must be a positive distribution over {m} roots, got {a!r}")
    return _convert(sub, True, a)


def resolve_to_maxmargin(sub: Subgame) -> Subgame:
    """ResolveToMaxmargin (Algorithm 12 lines 38-43)."""
    if sub.options.kind is not GadgetKind.RESOLVE:
        raise SubgameError(f"expected a Resolve gadget, got {sub.options.kind.value}")
    return _convert(sub, False, np.ones(sub.num_roots))
