"""Compile a game into flat arrays (`GameTree`), the form every solver and statistic runs on.

Layout (docs/design.md, "The game model"; docs/design.md, "Performance model"):

    nodes        0 .. num_nodes-1 in breadth-first order: parent < child, and the children of a
                 node are contiguous, `first_child[h] .. first_child[h] + num_children[h] - 1`.
    infosets     decision infosets of both players in one numbering, in order of discovery, so a
                 player's infoset below a sequence of theirs has a larger id than the infoset of
                 that sequence (reverse id order is a valid bottom-up order of each treeplex).
    action slots infoset g owns slots `infoset_offset[g] .. + infoset_num_actions[g] - 1`; regrets,
                 strategies and averages are vectors over slots.
    sequences    per player; 0 is the empty sequence, and (g, a) is `infoset_seq[g] + a`.
    knowledge    `kinfo[h, p]`: player p's infoset (observation sequence) at *every* node h, the
                 hyperedges of Zhang & Sandholm 2021, Definition 1; decision infosets are the kinfo
                 classes at which p acts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from caligo.core.game import CHANCE, TERMINAL, Game, GameTooLargeError, State, UnsupportedGameError

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]

DEFAULT_MAX_NODES = 3_000_000
PROGRESS_EVERY = 50_000  # nodes between two calls of build_tree's progress callback


@dataclass(frozen=True, eq=False)
class GameTree:
    """A game compiled to flat arrays. Build with `build_tree`; never mutate."""

    name: str
    # per node
    player: npt.NDArray[np.int8]  # 0, 1, CHANCE or TERMINAL
    parent: IntArray  # -1 at the root
    depth: IntArray
    action: IntArray  # the game's action label of the incoming edge (-1 at the root)
    first_child: IntArray
    num_children: IntArray
    chance_prob: FloatArray  # probability of the incoming chance edge, 1.0 otherwise
    chance_reach: FloatArray  # product of chance probabilities on the path, p(h)
    utility: FloatArray  # player 0's utility at terminals, 0 elsewhere
    infoset: IntArray  # decision infoset of the acting player, -1 at chance/terminal nodes
    kinfo: IntArray  # shape (num_nodes, 2): each player's knowledge infoset at every node
    seq: IntArray  # shape (num_nodes, 2): each player's last own sequence at the node
    # per decision infoset
    infoset_player: npt.NDArray[np.int8]
    infoset_num_actions: IntArray
    infoset_offset: IntArray
    infoset_seq: IntArray  # sequence id of the infoset's first action
    infoset_parent_seq: IntArray
    infoset_kinfo: IntArray
    infoset_names: tuple[str, ...]
    slot_action: IntArray  # the game's action label of each slot
    # per player
    num_sequences: tuple[int, int]
    seq_infoset: tuple[IntArray, IntArray]  # infoset owning each sequence (-1 for the empty one)
    num_kinfo: tuple[int, int]
    _cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"<GameTree {self.name!r}: {self.num_nodes} nodes, {self.num_infosets} "
                f"infosets, {self.num_slots} action slots>")

    @property
    def num_nodes(self) -> int:
        return int(self.player.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def num_slots(self) -> int:
        return int(self.slot_action.shape[0])

    def infosets_of(self, player: int) -> IntArray:
        """Ids of the player's decision infosets, ascending."""
        return np.flatnonzero(self.infoset_player == player).astype(np.int32)

    def slot_infoset(self) -> IntArray:
        """The infoset owning each action slot."""
        cached = self._cache.get("slot_infoset")
        if cached is None:
            cached = np.repeat(
                np.arange(self.num_infosets, dtype=np.int32), self.infoset_num_actions
            )
            self._cache["slot_infoset"] = cached
        return cached  # type: ignore[return-value]

    def slot_seq(self) -> IntArray:
        """The sequence id (in its player's numbering) of each action slot."""
        cached = self._cache.get("slot_seq")
        if cached is None:
            g = self.slot_infoset()
            cached = (
                self.infoset_seq[g] + np.arange(self.num_slots) - self.infoset_offset[g]
            ).astype(np.int32)
            self._cache["slot_seq"] = cached
        return cached  # type: ignore[return-value]

    def terminals(self) -> IntArray:
        """Ids of the terminal nodes."""
        cached = self._cache.get("terminals")
        if cached is None:
            cached = np.flatnonzero(self.player == TERMINAL).astype(np.int32)
            self._cache["terminals"] = cached
        return cached  # type: ignore[return-value]

    def infoset_index(self) -> dict[str, int]:
        """Map each decision infoset's name to its id."""
        cached = self._cache.get("infoset_index")
        if cached is None:
            cached = {name: g for g, name in enumerate(self.infoset_names)}
            self._cache["infoset_index"] = cached
        return cached  # type: ignore[return-value]

    def payoff_range(self) -> tuple[float, float]:
        """Smallest and largest terminal utility for player 0."""
        u = self.utility[self.terminals()]
        return float(u.min()), float(u.max())

    def stats(self) -> dict[str, int]:
        """Node and infoset counts under the Table 2 convention (docs/design.md)."""
        return {
            "nodes": self.num_nodes,
            "decision_nodes": int(np.count_nonzero(self.player <= 1)),
            "chance_nodes": int(np.count_nonzero(self.player == CHANCE)),
            "terminals": int(np.count_nonzero(self.player == TERMINAL)),
            "infosets": self.num_infosets,
            "sequences_0": self.num_sequences[0],
            "sequences_1": self.num_sequences[1],
        }


# Long by design: one breadth-first pass fills every per-node, per-infoset and per-sequence
# array and checks perfect recall as it goes; the checks need the arrays being built.
def build_tree(
    game: Game,
    max_nodes: int = DEFAULT_MAX_NODES,
    progress: Callable[[int], None] | None = None,
) -> GameTree:
    """Expand the whole game breadth-first into a `GameTree`.

    Raises `GameTooLargeError` past `max_nodes` nodes and `UnsupportedGameError` when the game
    breaks perfect recall, gives an infoset two different action sets, or has a non-terminal
    node without moves. `progress(n)` is told every `PROGRESS_EVERY` nodes that n more nodes
    were expanded.
    """
    root = game.new_initial_state()
    states: deque[State] = deque([root])
    player: list[int] = []
    parent: list[int] = [-1]
    depth: list[int] = [0]
    action: list[int] = [-1]
    chance_prob: list[float] = [1.0]
    first_child: list[int] = []
    num_children: list[int] = []
    utility: list[float] = []
    node_infoset: list[int] = []
    kinfo: list[tuple[int, int]] = []
    seq: list[tuple[int, int]] = [(0, 0)]

    kinfo_ids: tuple[dict[Hashable, int], dict[Hashable, int]] = ({}, {})
    decision_of_kinfo: tuple[dict[int, int], dict[int, int]] = ({}, {})
    inf_player: list[int] = []
    inf_actions: list[tuple[int, ...]] = []
    inf_seq: list[int] = []
    inf_parent_seq: list[int] = []
    inf_kinfo: list[int] = []
    inf_names: list[str] = []
    next_seq = [1, 1]
    seq_infoset: tuple[list[int], list[int]] = ([-1], [-1])

    h = 0
    while states:
        s = states.popleft()
        k = []
        for p in (0, 1):
            key = s.infoset_key(p)
            ids = kinfo_ids[p]
            kid = ids.get(key)
            if kid is None:
                kid = len(ids)
                ids[key] = kid
            k.append(kid)
        kinfo.append((k[0], k[1]))
        cur = TERMINAL if s.is_terminal() else s.current_player()
        player.append(cur)
        utility.append(float(s.utility()) if cur == TERMINAL else 0.0)
        first_child.append(len(parent))
        g = -1
        if cur == TERMINAL:
            children: list[tuple[int, float]] = []
        elif cur == CHANCE:
            children = [(int(a), float(pr)) for a, pr in s.chance_outcomes()]
            if not children:
                raise UnsupportedGameError(f"game {game.name!r}: a chance node has no outcomes")
        elif cur in (0, 1):
            acts = tuple(int(a) for a in s.legal_actions())
            if not acts:
                raise UnsupportedGameError(
                    f"game {game.name!r}: player {cur} has no legal action at a non-terminal "
                    "node (check the game's parameters)")
            children = [(a, 1.0) for a in acts]
            g = decision_of_kinfo[cur].get(k[cur], -1)
            if g < 0:
                g = len(inf_player)
                decision_of_kinfo[cur][k[cur]] = g
                inf_player.append(cur)
                inf_actions.append(acts)
                inf_seq.append(next_seq[cur])
                for _ in acts:
                    seq_infoset[cur].append(g)
                next_seq[cur] += len(acts)
                inf_parent_seq.append(seq[h][cur])
                inf_kinfo.append(k[cur])
                inf_names.append(s.infoset_name(cur))
            else:
                if inf_actions[g] != acts:
                    raise UnsupportedGameError(
                        f"game {game.name!r}: infoset {inf_names[g]!r} has two action sets"
                    )
                if inf_parent_seq[g] != seq[h][cur]:
                    raise UnsupportedGameError(
                        f"game {game.name!r}: infoset {inf_names[g]!r} breaks perfect recall"
                    )
        else:
            raise UnsupportedGameError(f"game {game.name!r}: unexpected player {cur}")
        node_infoset.append(g)
        num_children.append(len(children))
        if len(parent) + len(children) > max_nodes:
            raise GameTooLargeError(
                f"game {game.name!r} has more than {max_nodes} nodes (the node limit)"
            )
        for idx, (a, pr) in enumerate(children):
            child_seq = list(seq[h])
            if g >= 0:
                child_seq[cur] = inf_seq[g] + idx
            states.append(s.child(a))
            parent.append(h)
            depth.append(depth[h] + 1)
            action.append(a)
            chance_prob.append(pr)
            seq.append((child_seq[0], child_seq[1]))
        h += 1
        if progress is not None and h % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)

    n = len(player)
    if progress is not None and h % PROGRESS_EVERY:
        progress(h % PROGRESS_EVERY)
    parent_a = np.asarray(parent, dtype=np.int32)
    cprob = np.asarray(chance_prob, dtype=np.float64)
    creach = np.ones(n, dtype=np.float64)
    for i in range(1, n):  # parents precede children
        creach[i] = creach[parent_a[i]] * cprob[i]
    num_actions = np.asarray([len(a) for a in inf_actions], dtype=np.int32)
    offsets = np.zeros(len(inf_actions), dtype=np.int32)
    if len(inf_actions) > 1:
        offsets[1:] = np.cumsum(num_actions)[:-1]
    slot_action = np.asarray([a for acts in inf_actions for a in acts], dtype=np.int32)
    return GameTree(
        name=game.name,
        player=np.asarray(player, dtype=np.int8),
        parent=parent_a,
        depth=np.asarray(depth, dtype=np.int32),
        action=np.asarray(action, dtype=np.int32),
        first_child=np.asarray(first_child, dtype=np.int32),
        num_children=np.asarray(num_children, dtype=np.int32),
        chance_prob=cprob,
        chance_reach=creach,
        utility=np.asarray(utility, dtype=np.float64),
        infoset=np.asarray(node_infoset, dtype=np.int32),
        kinfo=np.asarray(kinfo, dtype=np.int32).reshape(n, 2),
        seq=np.asarray(seq, dtype=np.int32).reshape(n, 2),
        infoset_player=np.asarray(inf_player, dtype=np.int8),
        infoset_num_actions=num_actions,
        infoset_offset=offsets,
        infoset_seq=np.asarray(inf_seq, dtype=np.int32),
        infoset_parent_seq=np.asarray(inf_parent_seq, dtype=np.int32),
        infoset_kinfo=np.asarray(inf_kinfo, dtype=np.int32),
        infoset_names=tuple(inf_names),
        slot_action=slot_action,
        num_sequences=(next_seq[0], next_seq[1]),
        seq_infoset=(
            np.asarray(seq_infoset[0], dtype=np.int32),
            np.asarray(seq_infoset[1], dtype=np.int32),
        ),
        num_kinfo=(len(kinfo_ids[0]), len(kinfo_ids[1])),
    )

