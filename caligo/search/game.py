"""The game interface the search needs (`SearchGame`, `Belief`, `Evaluator`), and `TreeGame`.

The search never holds a game object per node. A *state* is an integer id into a store the game
owns (a node of a compiled `GameTree`; for FoW chess a row of a position store). Everything the
search asks is one batch call over many states, returning flat arrays:

- `expand(states)` -> `ChildBatch`: for each state its children in CSR form (`ptr`), with the
  child state, the game's action label, the acting player at the child (0, 1, `CHANCE`,
  `TERMINAL`), the probability of the edge when the parent is a chance node, both players'
  64-bit observation keys at the child, and player 0's utility at terminal children.
- `describe(states)` -> `StateInfo`: acting player, terminal utility and observation keys of
  states that become roots.
- `key_mode`: `KeyMode.INCREMENTAL` when an observation key is what a player observes on
  reaching the child (the search hashes the sequence: key = mix(parent key, own action, obs);
  FoW chess), or `KeyMode.CUMULATIVE` when it already identifies the player's whole
  observation sequence (a `GameTree`'s knowledge infoset ids).
- `state_key(states)`: an identity of each state, to tell sampled states from carried ones.
- `true_infoset_states(state, player)`: the states of the player's infoset at `state` where the
  game can give them (`TreeGame` can; FoW chess cannot), else None.

`Belief` is the searching player's set P of possible states (Obscuro, section 3): its size, its
states' weights (chance reach; 1 where P has no chance), and uniform sampling without
replacement of states not already in the tree (Fig. 9 line 11).

`Evaluator` values states in player 0's utility (FoW: [-1, 1]; a `TreeGame` evaluator uses the
game's own units): `children` for all children of a batch of expanded leaves (FoW: one MultiPV
call per leaf), `states` for new roots. Expander threads call it; give each thread its own
instance when the evaluator holds a process (`evaluator_factory` in `caligo.search.engine`).

`TreeGame(tree)` implements `SearchGame` over any compiled `GameTree`, so every OpenSpiel and
built-in game is searchable; `TreeBelief` tracks a seat's infoset in it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
from numba import njit

from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import GameTree
from caligo.search._fastcall import FastKernel
from caligo.search.config import SearchError

__all__ = [
    "CHANCE",
    "TERMINAL",
    "Belief",
    "ChildBatch",
    "Evaluator",
    "KeyMode",
    "SearchGame",
    "StateInfo",
    "TreeBelief",
    "TreeGame",
]

I64 = npt.NDArray[np.int64]


class KeyMode(enum.Enum):
    """What an observation key identifies (see the module docstring)."""

    INCREMENTAL = "incremental"
    CUMULATIVE = "cumulative"


@dataclass(frozen=True, eq=False)
class ChildBatch:
    """The children of k expanded states, CSR: state i's children are ptr[i] .. ptr[i+1]-1.

    ptr: int64[k+1]; state: int64[n]; action: int32[n]; player: int8[n]; chance_prob:
    float64[n] (1 unless the parent is a chance node); obs: uint64[n, 2]; utility:
    float64[n] player 0's utility at terminal children (0 elsewhere).
    """

    ptr: np.ndarray
    state: np.ndarray
    action: np.ndarray
    player: np.ndarray
    chance_prob: np.ndarray
    obs: np.ndarray
    utility: np.ndarray

    def parents(self, i: int, j: int) -> ChildBatch:
        """The children of parents i .. j-1 (ptr rebased to 0)."""
        lo, hi = int(self.ptr[i]), int(self.ptr[j])
        return ChildBatch(self.ptr[i : j + 1] - lo, self.state[lo:hi], self.action[lo:hi],
                          self.player[lo:hi], self.chance_prob[lo:hi], self.obs[lo:hi],
                          self.utility[lo:hi])


@dataclass(frozen=True, eq=False)
class StateInfo:
    """player: int8[k]; utility: float64[k] (terminal states); obs: uint64[k, 2]."""

    player: np.ndarray
    utility: np.ndarray
    obs: np.ndarray


class SearchGame(Protocol):
    """A game as the search sees it (module docstring)."""

    @property
    def key_mode(self) -> KeyMode: ...

    def start_state(self) -> int:
        """The game's true start state."""
        ...

    def describe(self, states: I64) -> StateInfo:
        """Acting player, terminal utility and observation keys of each state."""
        ...

    def expand(self, states: I64) -> ChildBatch:
        """All children of each (non-terminal) state."""
        ...

    def state_key(self, states: I64) -> np.ndarray:
        """uint64 identity of each state."""
        ...

    def true_infoset_states(self, state: int, player: int) -> I64 | None:
        """The states of `player`'s infoset at `state`, or None if the game cannot tell."""
        ...


class Belief(Protocol):
    """The searching player's set P of possible states (module docstring)."""

    def size(self) -> int:
        """|P|."""
        ...

    def states(self) -> I64:
        """All of P (small games and tests; FoW chess may refuse)."""
        ...

    def weights(self, states: I64) -> np.ndarray:
        """Nonnegative weight of each state (chance reach; 1 without chance)."""
        ...

    def sample(self, n: int, exclude: np.ndarray, rng: np.random.Generator) -> I64:
        """Up to n distinct states of P whose `state_key` is not in `exclude`, uniformly."""
        ...


class Evaluator(Protocol):
    """Heuristic values in player 0's utility (module docstring). An evaluator may also have
    `width`: how many leaves a `children` call evaluates at once, on as many engines (1 when
    it has none; `Expander.expand` sizes its timed calls by it)."""

    def children(self, parents: I64, batch: ChildBatch) -> np.ndarray:
        """float64[n]: a value for every child in `batch` (terminal ones are overwritten)."""
        ...

    def states(self, states: I64) -> np.ndarray:
        """float64[k]: a value for each state."""
        ...


# ---------------------------------------------------------------------------------------------
# TreeGame


class TreeGame:
    """`SearchGame` over a compiled `GameTree`: a state is a node id.

    Observation keys are the tree's knowledge infoset ids (`GameTree.kinfo`), which identify a
    player's whole observation sequence (`KeyMode.CUMULATIVE`), so the search's infosets are
    exactly the tree's.
    """

    key_mode = KeyMode.CUMULATIVE

    def __init__(self, tree: GameTree) -> None:
        self.tree = tree
        self._obs = np.ascontiguousarray(tree.kinfo.astype(np.uint64))
        self._util = np.where(tree.player == TERMINAL, tree.utility, 0.0).astype(np.float64)
        self._by_kinfo: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None

    @property
    def name(self) -> str:
        return self.tree.name

    def start_state(self) -> int:
        return 0

    def _check(self, states: I64) -> np.ndarray:
        s = np.asarray(states, dtype=np.int64).ravel()
        n = self.tree.num_nodes
        if s.size and (s.min() < 0 or s.max() >= n):
            raise SearchError(f"state ids must lie in [0, {n}) for game {self.tree.name!r}, "
                              f"got {s[(s < 0) | (s >= n)]!r}")
        return s

    def describe(self, states: I64) -> StateInfo:
        s = self._check(states)
        return StateInfo(
            player=self.tree.player[s].astype(np.int8),
            utility=self._util[s],
            obs=self._obs[s],
        )

    def expand(self, states: I64) -> ChildBatch:
        s = self._check(states)
        t = self.tree
        total = int(t.num_children[s].sum())
        ptr = np.empty(s.size + 1, dtype=np.int64)
        child = np.empty(total, dtype=np.int64)
        action = np.empty(total, dtype=np.int32)
        player = np.empty(total, dtype=np.int8)
        prob = np.empty(total, dtype=np.float64)
        obs = np.empty((total, 2), dtype=np.uint64)
        util = np.empty(total, dtype=np.float64)
        _GATHER(s, t.first_child, t.num_children, t.action, t.player, t.chance_prob, self._obs,
                self._util, ptr, child, action, player, prob, obs, util)
        return ChildBatch(ptr=ptr, state=child, action=action, player=player, chance_prob=prob,
                          obs=obs, utility=util)

    def state_key(self, states: I64) -> np.ndarray:
        return self._check(states).astype(np.uint64)

    def _index(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        if self._by_kinfo is None:
            out = []
            for p in (0, 1):
                order = np.argsort(self.tree.kinfo[:, p], kind="stable").astype(np.int64)
                out.append((order, self.tree.kinfo[order, p]))
            self._by_kinfo = (out[0], out[1])
        return self._by_kinfo

    def kinfo_states(self, player: int, kinfo: int) -> I64:
        """All nodes where `player`'s knowledge infoset is `kinfo` (ascending)."""
        order, keys = self._index()[player]
        lo = int(np.searchsorted(keys, kinfo, side="left"))
        hi = int(np.searchsorted(keys, kinfo, side="right"))
        return np.sort(order[lo:hi])

    def true_infoset_states(self, state: int, player: int) -> I64:
        s = int(self._check(np.array([state]))[0])
        return self.kinfo_states(player, int(self.tree.kinfo[s, player]))


@njit(cache=True, nogil=True)
def _gather_kernel(
    states: np.ndarray, first_child: np.ndarray, num_children: np.ndarray, action: np.ndarray,
    player: np.ndarray, chance_prob: np.ndarray, obs: np.ndarray, util: np.ndarray,
    ptr: np.ndarray, out_state: np.ndarray, out_action: np.ndarray, out_player: np.ndarray,
    out_prob: np.ndarray, out_obs: np.ndarray, out_util: np.ndarray,
) -> int:
    """The children of `states` (int64[k]) in CSR form from a GameTree's arrays.

    ptr int64[k+1] and the out_* arrays (length = total children) are written. Returns 0.
    """
    j = 0
    ptr[0] = 0
    for i in range(states.shape[0]):
        h = states[i]
        c0 = first_child[h]
        for c in range(c0, c0 + num_children[h]):
            out_state[j] = c
            out_action[j] = action[c]
            out_player[j] = player[c]
            out_prob[j] = chance_prob[c]
            out_obs[j, 0] = obs[c, 0]
            out_obs[j, 1] = obs[c, 1]
            out_util[j] = util[c]
            j += 1
        ptr[i + 1] = j
    return 0


_GATHER = FastKernel(_gather_kernel)


class TreeBelief:
    """A seat's exact set P in a `GameTree`: the nodes of its current knowledge infoset."""

    def __init__(self, game: TreeGame, seat: int) -> None:
        if seat not in (0, 1):
            raise SearchError(f"seat must be 0 or 1, got {seat!r}")
        self.game = game
        self.seat = seat
        self._states = np.zeros(1, dtype=np.int64)  # the start state

    def reset(self) -> None:
        """Back to the start of the game: P = {start}."""
        self._states = np.zeros(1, dtype=np.int64)

    def update(self, obs: int) -> None:
        """P = the nodes whose knowledge infoset for the seat is `obs` (a kinfo id)."""
        nodes = self.game.kinfo_states(self.seat, int(obs))
        if nodes.size == 0:
            raise SearchError(f"observation {obs!r} names no infoset of player {self.seat} in "
                              f"game {self.game.name!r}")
        self._states = nodes

    def size(self) -> int:
        return int(self._states.size)

    def states(self) -> I64:
        return self._states.copy()

    def weights(self, states: I64) -> np.ndarray:
        return self.game.tree.chance_reach[np.asarray(states, dtype=np.int64)].astype(np.float64)

    def sample(self, n: int, exclude: np.ndarray, rng: np.random.Generator) -> I64:
        keys = self.game.state_key(self._states)
        free = self._states[~np.isin(keys, np.asarray(exclude, dtype=np.uint64))]
        if n >= free.size:
            return np.sort(free)
        pick = rng.choice(free.size, size=n, replace=False)
        return np.sort(free[pick])
