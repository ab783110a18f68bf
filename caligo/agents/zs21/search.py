"""`ZS21Search`: nested depth-limited 1-KLSS, value function only (Zhang & Sandholm 2021, Alg. 15).

State kept between decisions (Algorithm 15 lines 1-4): the trunk Γ̂ (a search `Arena`), its
exact solution (x̂, ŷ) (in the arena's slots) and its root gadget (`RootLayer`); the exact
infoset I is the agent's belief. One decision at our infoset (`decide`):

1. `reroot`: the subgame from the previous trunk, with particles (`subgame.make_subgame`,
   lines 11-19), and the information term at our root infoset (line 20).
2. The deepening loop (lines 22-38), `run`: solve the trunk exactly by LP (`trunk_lp`); if a
   Maxmargin gadget's value is negative convert to Resolve and solve again, if a Resolve
   gadget's value is non-negative convert back (lines 24-30; D.4); stop when the budget is
   spent; else expand (`select`), and repeat. The loop always ends on a solve, so the strategy
   played is the exact solution of the final trunk.
3. Our strategy at our infoset is read out; the agent samples it (line 39; no purification).

Expansion rules (`select`; D.2, D.3, lines 32-44), over the solved trunk with x, y the two
players' reach probabilities (the gadget root's chance node h_J counts as a parent of J's roots,
with x = 1 and y = the opponent's weight on J):

- for each node h with an unexpanded non-terminal child: if x(h) > 0 and y(h) > 0, every such
  child; otherwise only the "most interesting" one: captures, checks and promotions first
  (the game's optional `forcing`), then the highest heuristic value ũ(ha) for the player to
  move at h (at chance nodes, the most likely child);
- MaybeExpand (lines 40-42): a child that neither player reaches (x = y = 0) is never
  expanded. Line 36 names the most interesting child before this filter; we pick it among the
  children that pass, otherwise a node one player reaches could never grow (its most
  interesting child may be one that nobody plays);
- catch-up (D.3): on the d-th deepening iteration only leaves at depth < d (roots have depth 0)
  are expanded, unless both players reach them, so newly sampled roots catch up with the
  carried tree. When that rule alone holds every reachable leaf back, d jumps to the shallowest
  one's depth + 1 (the loop would otherwise spin until the time is up).

Within an iteration the chosen leaves are expanded shallowest first (our infoset's roots before
all others), in batches (`ZS21Config.expand_batch`) of one game call and one evaluator call,
and the budget is checked between batches: time (keeping room for the final solve, estimated
from the last one; under a deadline a batch's leaves are evaluated one at a time until the
reserve begins, each started only when it fits at the measured time per leaf (`Pace`, kept
across moves), since an evaluator call is what cannot be stopped), leaf expansions,
deepening iterations.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from caligo.agents.zs21 import trunk_lp
from caligo.agents.zs21.config import (
    StartMode,
    ZS21Budget,
    ZS21Config,
    ZS21Error,
    ZS21Result,
)
from caligo.agents.zs21.subgame import (
    SubgameInfo,
    TranspositionKeys,
    information_term,
    infoset_value,
    make_subgame,
    search_config,
    transposition_keys,
)
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.lp import LPError
from caligo.limits import Deadline, Pace
from caligo.search import construct as C
from caligo.search import expand as X
from caligo.search import materialize as M
from caligo.search.arena import EXPANDED, M_MAX_DEPTH, Arena, Capacity
from caligo.search.config import RootGadget
from caligo.search.export import RootLayer, export_trunk, write_back
from caligo.search.game import Belief, Evaluator, SearchGame

__all__ = ["LoopStats", "ZS21Search"]

log = logging.getLogger(__name__)

_NO_LIMIT = 1 << 30  # a depth no trunk reaches
MAX_CHILDREN = 512  # the most children a state may have (`caligo.fow.movegen.MAX_MOVES`)
_LP_RESERVE = 2.5  # the final solve's time reserve, in last solves (a switch solves twice)


@dataclass(frozen=True)
class LoopStats:
    """What one run of the deepening loop did."""

    iterations: int
    expansions: int
    lp_solves: int
    lp_seconds: float
    expand_seconds: float
    switches: int
    value: float


class ZS21Search:
    """Algorithm 15's search state for one player (module docstring).

    capacity: the trunk's node limit (default `config.max_nodes`); expansion stops there.
    util_scale: the game's largest absolute utility. transpositions: the transposition test
    (default: the game's).
    """

    def __init__(self, game: SearchGame, evaluator: Evaluator, config: ZS21Config, searcher: int,
                 *, capacity: int | None = None, util_scale: float = 1.0,
                 transpositions: TranspositionKeys | None = None) -> None:
        if searcher not in (0, 1):
            raise ZS21Error(f"searcher must be 0 or 1, got {searcher!r}")
        self.game = game
        self.evaluator = evaluator
        self.config = config
        self.searcher = searcher
        self.util_scale = float(util_scale)
        self.max_nodes = int(capacity if capacity is not None else config.max_nodes)
        # room past the limit: one batch of expansions may overshoot it, and the next subgame
        # carries at most the whole trunk plus its particles
        slack = config.expand_batch * MAX_CHILDREN + 2 * config.particles + 1024
        self.arena = Arena(Capacity.for_nodes(self.max_nodes + slack))
        self._spare: Arena | None = None
        self.layer = RootLayer(RootGadget.NONE, np.zeros(1), np.ones(1))
        self.transpositions = (transpositions if transpositions is not None
                               else transposition_keys(game))
        self.penalty: tuple[int, np.ndarray] | None = None
        self.solved = False
        self._build_s: float | None = None  # the last LP's export and write-back (`_solve`)
        self._lp_s: float | None = None  # the last LP, export to write-back (`_solve`)
        self.last: SubgameInfo | None = None
        self.root_pace = Pace(M.ROOT_PACE_S)  # seconds per evaluated particle (`reroot`)
        self.leaf_pace = Pace(X.LEAF_PACE_S)  # seconds per expanded leaf (`run`)

    # building -------------------------------------------------------------------------------
    def start(self, state: int) -> None:
        """The trunk of Algorithm 15 at the start of a playthrough: one node, no gadget."""
        C.init_plain(self.arena, self.game, self.evaluator, int(state), self.searcher,
                     search_config(self.config), self.util_scale)
        self.layer = RootLayer(RootGadget.NONE, np.zeros(1), np.ones(1))
        self.penalty = None
        self.solved = False

    def reroot(self, belief: Belief, cur_key: int, rng: np.random.Generator,
               deadline: Deadline | None = None) -> SubgameInfo:
        """The subgame at our infoset `cur_key` from the trunk (`subgame.make_subgame`); the
        particles' evaluation stops at `deadline`'s soft instant."""
        # The trunk's slots hold (x̂, ŷ): the loop ends on a solve, or, when HiGHS was stopped,
        # on the last one that finished (the newest nodes keep their initial strategies).
        new = self._spare if self._spare is not None else Arena(self.arena.capacity)
        info, layer = make_subgame(self.arena, self.layer, new, self.game, belief,
                                   self.evaluator, int(cur_key), self.config, rng,
                                   self.util_scale, self.transpositions, deadline,
                                   self.root_pace)
        self._spare = self.arena
        self.arena = new
        self.layer = layer
        self.penalty = None
        self.solved = False
        self.last = info
        return info

    def our_roots(self, cur_key: int) -> np.ndarray:
        """The subgame roots in our infoset."""
        a = self.arena
        nr = a.n_roots
        return np.flatnonzero((a.nodes.player[:nr] == self.searcher)
                              & (a.nodes.key[:nr, self.searcher] == np.uint64(cur_key)))

    def set_information_term(self, cur_key: int, belief_size: int) -> np.ndarray:
        """Algorithm 15 line 20 at our root infoset; returns the term per action."""
        roots = self.our_roots(cur_key)
        if roots.size == 0:
            self.penalty = None
            return np.zeros(0)
        states = self.arena.nodes.state[roots].astype(np.int64)
        acts, _, term = information_term(self.game, states, self.searcher, belief_size,
                                         self.config)
        self._ensure_infoset(cur_key)
        g = self.arena.infoset_of_key(self.searcher, cur_key)
        sl = self.arena.infoset_slots(g)
        by_action = dict(zip(acts.tolist(), term.tolist(), strict=True))
        aligned = np.array([by_action[int(a)] for a in self.arena.slots.action[sl]])
        self.penalty = (g, aligned)
        return aligned

    def _ensure_infoset(self, cur_key: int) -> None:
        """Expand one root of our infoset if none is (so our infoset has its actions)."""
        a = self.arena
        if a.infoset_of_key(self.searcher, cur_key) >= 0:
            return
        roots = self.our_roots(cur_key)
        leaves = roots[(a.nodes.flags[roots] & EXPANDED) == 0][:1]
        if leaves.size:
            self._expand(leaves.astype(np.int32), 0)

    # solving --------------------------------------------------------------------------------
    def _solve(self, deadline: Deadline | None = None) -> trunk_lp.LPSolution:
        """Export the trunk, solve its LP (HiGHS stops at the deadline) and write it back.

        `trunk_lp.solve`'s limit covers building the LP and HiGHS's solve; exporting the
        trunk and writing the solution back are Python work outside it that grows with the
        trunk. An LP that
        would not end by the deadline at the last one's pace (`_lp_s`) is not started
        (LPError: the slots keep the last solution), and HiGHS's limit leaves room for the
        write-back (`_build_s`). Without that a loaded machine overran ZS21's moves by tens
        of ms."""
        last = self._lp_s
        if deadline is not None and last is not None and deadline.left() < 1.2 * last:
            raise LPError(f"no time left for an LP ({1000 * deadline.left():.0f} ms; the last "
                          f"took {1000 * last:.0f} ms)")
        clock = deadline.now if deadline is not None else time.perf_counter
        t0 = clock()
        trunk = export_trunk(self.arena, self.layer, self.searcher, self.penalty)
        t_export = clock() - t0
        limit = None if deadline is None else max(deadline.left() - 0.5 * t_export, 1e-3)
        sol = trunk_lp.solve(trunk, self.arena, self.config.tie_break, self.config.canonical,
                             limit)
        t1 = clock()
        write_back(trunk, self.arena, sol.strategy)
        self._build_s = t_export + (clock() - t1)
        self._lp_s = clock() - t0
        self.solved = True
        return sol

    def _switch(self, kind: RootGadget) -> None:
        self.layer = RootLayer(kind, self.layer.threshold, self.layer.alpha)

    # expanding ------------------------------------------------------------------------------
    def _expand(self, leaves: np.ndarray, seed: int, deadline: Deadline | None = None) -> int:
        """Expand `leaves`, or under `deadline` those that fit before its soft instant at the
        measured pace (at least one); how many, -1 when the trunk has no room."""
        ex = X.Expander(self.arena, self.game, self.evaluator, seed)
        pending = ex.expand(leaves, deadline, self.leaf_pace)
        if pending is None:
            return -1
        status = X.commit(self.arena, pending, False)
        if status != X.OK:
            raise ZS21Error("the game gave one infoset two action sets or broke perfect recall"
                            if status == X.MISMATCH else "the trunk is full")
        self.solved = False
        return int(pending.leaves.size)

    def select(self, d: int, cur_key: int | None) -> np.ndarray:
        """The leaves the d-th deepening iteration expands, in expansion order (module
        docstring)."""
        a = self.arena
        nd = a.nodes
        n = a.n_nodes
        strat = a.slots.strat[: a.n_slots]
        prof = C.profile(a, strat)
        x, y = prof.x, prof.y
        flags = nd.flags[:n]
        leaf = ((flags & EXPANDED) == 0) & (nd.player[:n] != TERMINAL)
        L = np.flatnonzero(leaf)
        if L.size == 0 or self.config.expand_all:
            return L[np.lexsort((L, nd.depth[L]))].astype(np.int32)
        par = nd.parent[L]
        root = par < 0
        pp = np.where(root, 0, par)
        px = np.where(root, 1.0, x[pp])
        py = np.where(root, y[L], y[pp])  # a root's y is the opponent's weight w_J on J
        both_parent = (px > 0.0) & (py > 0.0)
        xl, yl = x[L], y[L]
        both_leaf = (xl > 0.0) & (yl > 0.0)
        ok = ((xl > 0.0) | (yl > 0.0)) & ((nd.depth[L] < d) | both_leaf)
        group = np.where(root, -1 - nd.seq[L, 1 - a.searcher], par).astype(np.int64)
        pick = ok & both_parent
        single = ok & ~both_parent
        if single.any():
            S = np.flatnonzero(single)
            leaves, groups = L[S], group[S]
            forcing = np.zeros(S.size, dtype=np.bool_)
            fn = getattr(self.game, "forcing", None)
            real = ~root[S]
            if fn is not None and real.any():
                ps = nd.state[par[S][real]].astype(np.int64)
                forcing[real] = fn(ps, nd.state[leaves[real]].astype(np.int64),
                                   nd.action[leaves[real]])
            mover = np.where(root[S], CHANCE, nd.player[pp[S]])
            score = np.where(mover == 0, nd.value[leaves],
                             np.where(mover == 1, -nd.value[leaves], nd.chance_prob[leaves]))
            order = np.lexsort((leaves, -score, ~forcing, groups))
            g_sorted = groups[order]
            head = np.ones(order.size, dtype=np.bool_)
            head[1:] = g_sorted[1:] != g_sorted[:-1]
            pick[S[order[head]]] = True
        chosen = L[pick]
        ours = np.zeros(chosen.size, dtype=np.bool_)
        if cur_key is not None:
            ours = (nd.parent[chosen] < 0) & (nd.key[chosen, a.searcher] == np.uint64(cur_key))
        order = np.lexsort((chosen, nd.depth[chosen], ~ours))
        out: np.ndarray = chosen[order].astype(np.int32)
        return out

    # the loop -------------------------------------------------------------------------------
    # Long by design: Zhang & Sandholm 2021, Algorithm 15 lines 22-38 (the deepening loop) in
    # order, with the budget checks between its steps.
    def run(self, budget: ZS21Budget, cur_key: int | None, seed: int,
            deadline: Deadline | None = None) -> LoopStats:
        """Algorithm 15 lines 22-38 within `budget` and `deadline` (module docstring): the
        deepening stops when the next expansion batch and the final solve would pass the
        soft instant; an LP is stopped by HiGHS at the hard one."""
        if deadline is None and budget.seconds is not None:
            deadline = Deadline.within(budget.seconds)
        # the estimates below (an LP's, a leaf's time) are taken on the deadline's clock
        now = deadline.now if deadline is not None else time.perf_counter
        tol = self.config.switch_tol
        iterations = expansions = solves = switches = 0
        lp_s = exp_s = 0.0
        last_lp = 0.0
        lp_nodes = 1
        depth_limit = 0
        value = math.nan

        def reserve() -> float:
            """Time to keep for the final solve: the last one's, grown with the trunk (an LP
            costs more than linearly), times room for a Maxmargin/Resolve switch's second."""
            grow = max(self.arena.n_nodes, 1) / lp_nodes
            return float(_LP_RESERVE * last_lp * grow**1.5)

        while True:
            t_lp = time.perf_counter()
            c_lp = now()
            try:
                sol = self._solve(deadline)
                solves += 1
                last_lp = now() - c_lp
                lp_nodes = max(self.arena.n_nodes, 1)
                kind = self.layer.kind
                if kind is RootGadget.MAXMARGIN and sol.value < -tol:
                    self._switch(RootGadget.RESOLVE)
                elif kind is RootGadget.RESOLVE and sol.value >= -tol:
                    self._switch(RootGadget.MAXMARGIN)
                if self.layer.kind is not kind:
                    switches += 1
                    sol = self._solve(deadline)
                    solves += 1
            except LPError as exc:
                # out of time inside HiGHS, or HiGHS gave up on the grown trunk: the slots keep
                # the last solution (our infoset's strategy is from the last solve that ended,
                # or carried from the previous trunk)
                lp_s += time.perf_counter() - t_lp
                late = deadline is not None and deadline.left() <= max(
                    2e-3, 1.2 * (self._lp_s or 0.0))
                (log.debug if late else log.warning)(
                    "zs21: LP on a trunk of %d nodes stopped (%s); playing the last solution",
                    self.arena.n_nodes, exc)
                break
            lp_s += time.perf_counter() - t_lp
            value = sol.value
            if budget.iterations is not None and iterations >= budget.iterations:
                break
            if budget.expansions is not None and expansions >= budget.expansions:
                break
            if deadline is not None and reserve() >= deadline.soft_left():
                break
            iterations += 1
            t0 = time.perf_counter()
            depth_limit += 1
            todo = self.select(depth_limit, cur_key)
            if todo.size == 0:  # only the catch-up rule holds the leaves back: deepen further
                free = self.select(_NO_LIMIT, cur_key)
                if free.size:
                    depth_limit = int(self.arena.nodes.depth[free].min()) + 1
                    todo = self.select(depth_limit, cur_key)
            if budget.expansions is not None:
                todo = todo[: budget.expansions - expansions]
            done = 0
            lo = 0
            while lo < todo.size and self.arena.n_nodes < self.max_nodes:
                step = self.config.expand_batch
                until = None
                if deadline is not None:
                    # the batch's leaves are evaluated one at a time while the next fits before
                    # the final solve's reserve (a leaf's evaluator call cannot be stopped)
                    until = deadline.capped(soft=deadline.soft - reserve())
                    if self.leaf_pace.units_by(until) < 1:
                        break
                k = self._expand(todo[lo : lo + step], seed * 1_000_003 + expansions + done,
                                 until)
                if k < 0:
                    break
                done += k
                lo += k
            exp_s += time.perf_counter() - t0
            expansions += done
            if done == 0:
                break  # nothing left to expand (the trunk is solved) or no room or no time
        return LoopStats(iterations, expansions, solves, lp_s, exp_s, switches, value)

    # deciding -------------------------------------------------------------------------------
    def warm_start(self, budget: ZS21Budget, seed: int,
                   deadline: Deadline | None = None) -> LoopStats | None:
        """`StartMode.SOLVE_FROM_START`: deepen and solve the trunk from the game's start."""
        if self.layer.kind is not RootGadget.NONE or self.solved:
            return None
        if self.config.start is not StartMode.SOLVE_FROM_START:
            return None
        return self.run(budget, None, seed, deadline)

    def decide(self, belief: Belief, cur_key: int, rng: np.random.Generator, budget: ZS21Budget,
               seed: int, deadline: Deadline | None = None,
               construct: Deadline | None = None) -> ZS21Result:
        """One decision at our infoset `cur_key` (module docstring), within `budget`'s counts
        and `deadline` (default: `budget.seconds` from now, if set); `construct` bounds the
        particles' evaluation (default: `deadline`)."""
        t0 = time.perf_counter()
        if deadline is None and budget.seconds is not None:
            deadline = Deadline.within(budget.seconds)
        self.warm_start(budget, seed, deadline)
        t1 = time.perf_counter()
        info = self.reroot(belief, cur_key, rng, construct if construct is not None else deadline)
        if self.config.penalty.value != "off":
            pen = self.set_information_term(cur_key, belief.size())
        else:
            self._ensure_infoset(cur_key)
            pen = np.zeros(0)
        construct_s = time.perf_counter() - t1
        stats = self.run(budget, cur_key, seed, deadline)
        a = self.arena
        g = a.infoset_of_key(self.searcher, cur_key)
        if g < 0:
            raise ZS21Error("our infoset is not in the trunk (no root of it could be expanded)")
        sl = a.infoset_slots(g)
        if pen.size == 0:
            pen = np.zeros(sl.stop - sl.start)
        return ZS21Result(
            actions=a.slots.action[sl].copy(), policy=a.slots.strat[sl].copy(),
            value=stats.value, infoset_value=self.value_of(cur_key), gadget=self.layer.kind,
            switches=stats.switches, nodes=a.n_nodes, infosets=a.n_infosets - 1,
            carried_nodes=info.carried_nodes, roots=a.n_roots, particles=info.particles,
            merged=info.merged, iterations=stats.iterations, expansions=stats.expansions,
            lp_solves=stats.lp_solves, lp_seconds=stats.lp_seconds,
            expand_seconds=stats.expand_seconds, construct_seconds=construct_s,
            seconds=time.perf_counter() - t0, depth=int(a.meta[M_MAX_DEPTH]), penalty=pen,
        )  # fmt: skip

    def value_of(self, cur_key: int) -> float:
        """Our value of our infoset `cur_key` under the trunk's solution (nan if unreached)."""
        a = self.arena
        prof = C.profile(a, a.slots.strat[: a.n_slots])
        n = a.n_nodes
        mine = prof.alive & (a.nodes.player[:n] == self.searcher) & (
            a.nodes.key[:n, self.searcher] == np.uint64(cur_key))
        return infoset_value(prof, np.flatnonzero(mine))

    def snapshot(self) -> ZS21Search:
        """An independent copy (for walking a game's infosets)."""
        out = copy.copy(self)
        out.arena = self.arena.copy()
        out._spare = None
        return out
