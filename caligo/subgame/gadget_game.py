"""The gadget game of `caligo.subgame.gadget.make_subgame` as an `caligo.core.game.State` over
the source tree's arrays: the plan the construction builds once (`_Plan`), the gadget's states
(`_GState`: the root, Resolve's choice, exits, nature's draw of a root, copies of source nodes),
the game object, and the walk that lists every state (built into a `GameTree` by `build_tree`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import FloatArray, GameTree
from caligo.subgame.options import (
    EXIT,
    PLAY,
    GadgetKind,
    SubgameError,
)

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
