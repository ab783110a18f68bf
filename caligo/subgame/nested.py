"""Nested subgame solving at every player-0 infoset (Zhang & Sandholm 2021, section 7).

For each player-0 infoset I, the unique chain I_1 < I_2 < ... < I_m = I of player-0 infosets
above it is solved in order: Gamma_0 is the full game with the blueprint x_0, and
Gamma_j = MakeSubgame(Gamma_{j-1}, x_{j-1}, I_j, k) (Zhang & Sandholm 2021, Algorithm 12) is solved
for x_j. The strategy at I is read from the last solve of its chain, x_m at the copy of I in
Gamma_m.

Chains share prefixes, so the infosets are visited depth first over the forest of player-0
infosets (the parent of I is the infoset owning I's parent sequence) and each subgame is built
and solved once: one gadget solve per player-0 infoset, with only the current chain kept alive.

`solve_set` restricts the solves to a set of infosets closed under ancestors (Algorithm 14 /
Theorem 5): an infoset outside the set, and everything below it, keeps the strategy of the last
solve above it (the blueprint when there is none).

Floors (Table 1's protocol): the floor of every player-0 slot of the original tree is carried to
its copies in each subgame, except at the subgame's root infoset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from caligo.core.lp import REACH_TOL, TieBreak, solve_player
from caligo.core.strategy import realization_plan
from caligo.core.tree import FloatArray, GameTree, IntArray
from caligo.errors import CaligoError

log = logging.getLogger(__name__)


class NestedSolveError(CaligoError, RuntimeError):
    """A subgame solve inside the nested chain failed."""


@dataclass(frozen=True)
class NestedConfig:
    """What to solve at each infoset.

    options: the gadget options of `caligo.subgame` (kind, k, reach, ...); None means maxmargin
        1-KLSS, the seed's Table 1 protocol.
    floors: per-slot floors over the *original* tree (e.g. `epsilon_floors`), carried into
        every subgame except at its root; None for none.
    method: passed to the gadget solver (its default, LP, when None).
    step: replaces `solve_step` (one gadget build + solve), e.g. in tests.
    tie_break: which optimal solution each gadget LP returns (`caligo.core.lp.TieBreak`);
        with `TieBreak.RANDOM` the gadget at original infoset g draws its objective from
        `numpy.random.default_rng([seed, g])`, so a run is reproducible from `seed`.
    safe_klss: build Safe-1-KLSS gadgets (`caligo.subgame.safe_klss`, Liu et al. 2023)
        instead. Each is solved with its safe payoffs, and the next game of the chain is that
        same safe gadget with its solution, so every deeper level splits the gift of the level
        above it, never more. Guarantee (proved by induction over the chain in
        docs/experiments.md, tested on random blueprints): the assembled strategy is never more
        exploitable than the blueprint, up to the LP tolerance.
    """

    options: Any = None
    floors: FloatArray | None = None
    method: Any = None
    step: Callable[[GameState, int, NestedConfig, GameTree], GameState] | None = None
    safe_klss: bool = False
    tie_break: TieBreak = TieBreak.SIMPLEX
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.tie_break, TieBreak):
            raise NestedSolveError(f"tie_break must be a TieBreak, got {self.tie_break!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise NestedSolveError(f"seed must be an int, got {self.seed!r}")


@dataclass(frozen=True)
class GameState:
    """A game with extra payoffs B, a strategy over its slots, and its link to the original.

    origin: int32[num_infosets], the original tree's infoset of each infoset (-1 if none).
    """

    tree: GameTree
    extra: sp.spmatrix | None
    strategy: FloatArray
    origin: IntArray
    _index: dict[int, int] = field(default_factory=dict, repr=False, compare=False)

    def copy_of(self, infoset: int) -> int:
        """This game's player-0 infoset copied from the original `infoset` (-1 if absent)."""
        if not self._index:
            mine = self.tree.infoset_player == 0
            for g in np.flatnonzero(mine & (self.origin >= 0)):
                self._index.setdefault(int(self.origin[g]), int(g))
            self._index[-2] = -2  # marks the index as built
        return self._index.get(int(infoset), -1)


@dataclass(frozen=True)
class NestedResult:
    """The assembled full-game strategy and what it cost."""

    strategy: FloatArray
    solves: int
    skipped: int
    seconds: float

    def __repr__(self) -> str:
        return (f"<NestedResult: {self.solves} solves, {self.skipped} skipped, "
                f"{self.seconds:.2f} s>")


def infoset_parents(tree: GameTree, player: int = 0) -> IntArray:
    """The player's infoset owning each of the player's infosets' parent sequence (-1: root)."""
    par = np.full(tree.num_infosets, -1, dtype=np.int32)
    owner = tree.seq_infoset[player]
    for g in tree.infosets_of(player):
        ps = int(tree.infoset_parent_seq[g])
        par[g] = int(owner[ps]) if ps > 0 else -1
    return par


def infoset_children(tree: GameTree, player: int = 0) -> tuple[list[int], dict[int, list[int]]]:
    """Roots and children lists of the forest of the player's infosets."""
    par = infoset_parents(tree, player)
    roots: list[int] = []
    kids: dict[int, list[int]] = {}
    for g in tree.infosets_of(player):
        p = int(par[g])
        if p < 0:
            roots.append(int(g))
        else:
            kids.setdefault(p, []).append(int(g))
    return roots, kids


def chain_of(tree: GameTree, infoset: int, player: int = 0) -> list[int]:
    """The player's infosets from the root down to `infoset` (inclusive)."""
    par = infoset_parents(tree, player)
    chain = [int(infoset)]
    while par[chain[-1]] >= 0:
        chain.append(int(par[chain[-1]]))
    return chain[::-1]


def root_state(tree: GameTree, blueprint: FloatArray, extra: sp.spmatrix | None = None,
               ) -> GameState:
    """The full game as the start of every chain."""
    origin = np.arange(tree.num_infosets, dtype=np.int32)
    return GameState(tree, extra, np.asarray(blueprint, dtype=np.float64).copy(), origin)


def subgame_floors(state: GameState, base: FloatArray | None, root: int, original: GameTree,
                   ) -> FloatArray | None:
    """The original tree's floors carried to `state.tree`'s player-0 slots, none at `root`.

    root: the infoset id *in `state.tree`* of the subgame's root.
    """
    if base is None or not np.any(base > 0.0):
        return None
    t = state.tree
    out = np.zeros(t.num_slots, dtype=np.float64)
    for g in t.infosets_of(0):
        o = int(state.origin[g])
        if o < 0 or int(g) == root:
            continue
        n = int(t.infoset_num_actions[g])
        off = int(t.infoset_offset[g])
        ooff = int(original.infoset_offset[o])
        out[off : off + n] = base[ooff : ooff + n]
    return out


def nested_solve(
    tree: GameTree,
    blueprint: FloatArray,
    config: NestedConfig | None = None,
    solve_set: Iterable[int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> NestedResult:
    """Nested subgame solving at every player-0 infoset (or only at `solve_set`).

    Returns the full-game strategy: player 0's slots from the last solve of each infoset's chain,
    player 1's slots from the blueprint.
    """
    t0 = time.perf_counter()
    config = NestedConfig() if config is None else config
    do_step = solve_step if config.step is None else config.step
    allowed = None if solve_set is None else {int(g) for g in solve_set}
    out = np.asarray(blueprint, dtype=np.float64).copy()
    roots, kids = infoset_children(tree, 0)
    solves = skipped = 0
    stack: list[tuple[int, GameState]] = [(g, root_state(tree, blueprint)) for g in reversed(roots)]
    while stack:
        g, parent_state = stack.pop()
        state = parent_state
        if allowed is None or g in allowed:
            here = parent_state.copy_of(g)
            if here >= 0 and _reach(parent_state, here) > REACH_TOL:
                state = do_step(parent_state, g, config, tree)
                solves += 1
            else:
                # unreachable under the previous solve (own reach at most REACH_TOL, LP noise):
                # its strategy is irrelevant, so it keeps the one of the last solve above it
                skipped += 1
            if progress is not None:
                progress(1)
            nxt = kids.get(g, [])
            for c in reversed(nxt):
                stack.append((c, state))
        else:
            # Outside the solve set: no more solving below; read strategies from `state`.
            _copy_subtree(tree, kids, g, state, out)
            continue
        _copy_infoset(tree, g, state, out)
    return NestedResult(out, solves, skipped, time.perf_counter() - t0)


def _reach(state: GameState, infoset: int) -> float:
    """Player 0's own reach of an infoset of `state.tree` under `state.strategy`."""
    plan = realization_plan(state.tree, state.strategy, 0)
    return float(plan[int(state.tree.infoset_parent_seq[infoset])])


def _copy_infoset(tree: GameTree, g: int, state: GameState, out: FloatArray) -> None:
    here = state.copy_of(g)
    if here < 0:
        return
    n = int(tree.infoset_num_actions[g])
    if int(state.tree.infoset_num_actions[here]) != n:
        raise NestedSolveError(f"infoset {tree.infoset_names[g]!r} changed its action count")
    off = int(tree.infoset_offset[g])
    soff = int(state.tree.infoset_offset[here])
    out[off : off + n] = state.strategy[soff : soff + n]


def _copy_subtree(tree: GameTree, kids: dict[int, list[int]], g: int, state: GameState,
                  out: FloatArray) -> None:
    todo = [g]
    while todo:
        h = todo.pop()
        _copy_infoset(tree, h, state, out)
        todo.extend(kids.get(h, []))


def default_options() -> Any:
    """Maxmargin 1-KLSS, the seed's Table 1 protocol, as `caligo.subgame.gadget` options."""
    from caligo.subgame import gadget

    return gadget.SubgameOptions(kind=gadget.GadgetKind.MAXMARGIN, k=1)


def _map_infosets(sub: Any, parent: GameState) -> IntArray:
    """Compose the subgame's infoset map (subgame -> parent game) with the parent's origin."""
    local = np.asarray(sub.infoset_map, dtype=np.int64)
    out = np.full(local.shape[0], -1, dtype=np.int32)
    ok = local >= 0
    out[ok] = parent.origin[local[ok]]
    return out


def solve_gadget_lp(sub: Any, floors: FloatArray | None, both: bool,
                    tie_break: TieBreak = TieBreak.SIMPLEX,
                    rng: np.random.Generator | None = None) -> FloatArray:
    """Solve a gadget (tree + B) exactly by the sequence-form LP (HiGHS).

    Player 0's floored max-min strategy; player 1's min-max strategy too when `both` (needed
    when the next gadget reads player 1's part, e.g. unsafe solving), uniform otherwise.
    `tie_break` and `rng` choose among optimal solutions (`caligo.core.lp.TieBreak`).
    """
    r0 = solve_player(sub.tree, 0, floors=floors, extra=sub.extra, tie_break=tie_break, rng=rng)
    s = r0.strategy.copy()
    if both:
        r1 = solve_player(sub.tree, 1, extra=sub.extra, tie_break=tie_break, rng=rng)
        mine = np.isin(sub.tree.slot_infoset(), sub.tree.infosets_of(1))
        s[mine] = r1.strategy[mine]
    return s


def solve_step(state: GameState, infoset: int, config: NestedConfig, tree: GameTree,
               ) -> GameState:
    """Build and solve the configured gadget at the original `infoset` inside `state`.

    Returns the subgame as the next game of the chain, with its solution as the strategy; an
    empty gadget (no root infoset reached) leaves `state` as it is.
    """
    from caligo.subgame import gadget

    options = default_options() if config.options is None else config.options
    here = state.copy_of(infoset)
    if here < 0:
        raise NestedSolveError(f"infoset {tree.infoset_names[infoset]!r} is not in the subgame")
    if config.safe_klss:
        from caligo.subgame.safe_klss import make_safe_klss_subgame

        sub = make_safe_klss_subgame(state.tree, state.strategy, here, options, B=state.extra)
    else:
        sub = gadget.make_subgame(state.tree, state.strategy, here, options, B=state.extra)
    if sub.is_empty:
        return state
    origin = _map_infosets(sub, state)
    nxt = GameState(sub.tree, sub.extra, np.empty(0), origin)
    floors = subgame_floors(nxt, config.floors, int(sub.root_infoset), tree)
    both = options.kind is gadget.GadgetKind.UNSAFE or (
        options.alternate_values is not gadget.AlternateValues.BEST_RESPONSE)
    rng = (np.random.default_rng([config.seed, int(infoset)])
           if config.tie_break is TieBreak.RANDOM else None)
    strategy = solve_gadget_lp(sub, floors, both, config.tie_break, rng)
    return GameState(sub.tree, sub.extra, strategy, origin)
