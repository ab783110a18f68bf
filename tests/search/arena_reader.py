"""A second reading of an arena as a game, for the tests: through the game protocol.

`arena_to_gametree(arena)` walks the arena below its roots as a game (`_ArenaState` answers the
protocol of `caligo.core.game`) and compiles it with the core's `build_tree`, so the node order
and the infoset numbering are the core's, not the arena's. A root gadget becomes its Maxmargin
form: the opponent picks J at the root, then chance picks a root of J with q_h; the thresholds
are not payoffs of that tree: `gadget_extra` gives them as the top row of an extra payoff
matrix B (`caligo.subgame` convention: branch J pays -c_J to player 0). Unexpanded leaves are
terminals worth their heuristic value.

It shares no code with `caligo.search.export.export_trunk` (vectorized, node h at offset + h),
which is what makes it a check of it: both must give games with the same value and the same
best responses.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import GameTree, build_tree
from caligo.search.arena import EXPANDED, Arena
from caligo.search.config import SearchError

_TOP = -1


@dataclass(frozen=True)
class _ArenaState:
    arena: Arena
    node: int  # -1: the gadget root

    def _gadget(self) -> bool:
        return self.arena.has_gadget

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def current_player(self) -> int:
        a = self.arena
        if self.node == _TOP:
            return 1 - a.searcher
        if not a.nodes.flags[self.node] & EXPANDED:
            return TERMINAL
        return int(a.nodes.player[self.node])

    def legal_actions(self) -> Sequence[int]:
        a = self.arena
        if self.node == _TOP:
            return list(range(a.n_j))
        return [int(a.nodes.action[c]) for c in a.children(self.node)]

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        a = self.arena
        return [(int(a.nodes.action[c]), float(a.nodes.chance_prob[c]))
                for c in a.children(self.node)]

    def child(self, action: int) -> _ArenaState:
        a = self.arena
        if self.node == _TOP:
            return _ArenaJ(a, int(action))  # type: ignore[return-value]
        for c in a.children(self.node):
            if int(a.nodes.action[c]) == action:
                return _ArenaState(a, c)
        raise SearchError(f"no action {action} at arena node {self.node}")

    def infoset_key(self, player: int) -> Hashable:
        a = self.arena
        if self.node == _TOP:
            return ("gadget-root",)
        return ("k", int(a.nodes.key[self.node, player]))

    def infoset_name(self, player: int) -> str:
        a = self.arena
        if self.node == _TOP:
            return "gadget:root"
        return f"p{player}:{int(a.nodes.key[self.node, player])}"

    def utility(self) -> float:
        return float(self.arena.nodes.value[self.node])

    def action_string(self, action: int) -> str:
        return str(action)


@dataclass(frozen=True)
class _ArenaJ:
    """The chance node h_J of the gadget: picks a root of J with probability q."""

    arena: Arena
    j: int

    def is_terminal(self) -> bool:
        return False

    def current_player(self) -> int:
        return CHANCE

    def _roots(self) -> range:
        p = self.arena.roots.ptr
        return range(int(p[self.j]), int(p[self.j + 1]))

    def legal_actions(self) -> Sequence[int]:
        return list(self._roots())

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        return [(r, float(self.arena.nodes.chance_prob[r])) for r in self._roots()]

    def child(self, action: int) -> _ArenaState:
        return _ArenaState(self.arena, int(action))

    def infoset_key(self, player: int) -> Hashable:
        if player == 1 - self.arena.searcher:
            return ("gadget-j", self.j)
        return ("gadget-root",)

    def infoset_name(self, player: int) -> str:
        return f"gadget:J{self.j}"

    def utility(self) -> float:
        return 0.0

    def action_string(self, action: int) -> str:
        return str(action)


@dataclass(frozen=True)
class _ArenaGame:
    arena: Arena

    @property
    def name(self) -> str:
        return "arena"

    def new_initial_state(self) -> object:
        a = self.arena
        if a.has_gadget:
            return _ArenaState(a, _TOP)
        if a.n_roots != 1:
            raise SearchError("an arena without a gadget has exactly one root")
        return _ArenaState(a, 0)


def arena_to_gametree(arena: Arena) -> GameTree:
    """The arena as a `GameTree` (module docstring)."""
    return build_tree(_ArenaGame(arena), max_nodes=arena.n_nodes + 2 * arena.n_j + 16)  # type: ignore[arg-type]


def gadget_extra(arena: Arena, exported: GameTree) -> sp.csr_matrix:
    """B with -c_J (player 0's utility) at the opponent's root sequence of each J."""
    if not arena.has_gadget:
        return sp.csr_matrix((exported.num_sequences[0], exported.num_sequences[1]))
    opp = 1 - arena.searcher
    g = int(exported.infoset[0])
    sign = 1.0 if arena.searcher == 0 else -1.0
    seqs = exported.infoset_seq[g] + np.arange(arena.n_j)
    vals = -sign * arena.roots.threshold[: arena.n_j]
    shape = (exported.num_sequences[0], exported.num_sequences[1])
    if opp == 1:
        return sp.csr_matrix((vals, (np.zeros(arena.n_j, dtype=np.int64), seqs)), shape=shape)
    return sp.csr_matrix((vals, (seqs, np.zeros(arena.n_j, dtype=np.int64))), shape=shape)
