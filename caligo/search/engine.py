"""`GrowingTreeSearch`: one solver and its expanders on an arena (Obscuro, sections 3.2-3.4).

A search at a decision: the subgame is built (`start` at a state, `reroot` from the previous
tree: `caligo.search.construct`), then PCFR+ iterations (`caligo.search.solver`) and expansion
steps (`caligo.search.expand`) share the budget, then the searcher's root infoset is read out
and purified (`caligo.search.purify`).

Schedules (`Schedule`):

- DETERMINISTIC: one thread. Iteration t runs one PCFR+ iteration, then
  floor((t+1) E / T_e) - floor(t E / T_e) expansion steps (E = `expansions`, T_e = the first
  (1 - solver_tail) of the T iterations: the expanders stop first, the solver runs a tail,
  section 3.4), then commits them. Every random choice comes from the seed: two runs are
  bit-identical (the `Bench:` property of docs/design.md, "Conventions").
- THREADED: the calling thread is the solver; `expanders` threads walk and expand. Publication
  protocol (docs/design.md, "The arena, the solver and the expanders"): an expander claims a leaf
  under `claim_lock`, expands it outside any lock (game, evaluator), reserves rows under
  `alloc_lock`, writes them, and queues the expansion; the solver commits the queue between
  iterations, so the solver's passes read only solver-written fields, and expanders read the
  solver's strategies lock-free (stale reads are harmless, as in Obscuro). The expanders stop at (1
  - solver_tail) of the time budget, the solver at the end; an expansion in flight evaluates its
  leaves one at a time while the next fits before that instant at the measured pace
  (`Expander.expand`'s deadline), so the solver's final join does not wait out a whole batch of
  Stockfish calls. Each expander gets its own evaluator from `evaluator_factory` (a Stockfish
  process per thread).

With `Expansion.FULL` the whole subgame is expanded before the first iteration (small games:
leaf values never matter and the solver and gadget are measured alone).
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from caligo.limits import Deadline, Limits, Pace
from caligo.search import construct as C
from caligo.search import expand as X
from caligo.search import materialize as M
from caligo.search import solver as S
from caligo.search._fastcall import FastKernel
from caligo.search.arena import (
    F_PMAX,
    M_EXPANSIONS,
    M_HAS_GADGET,
    M_MAX_DEPTH,
    M_SEARCHER,
    M_VISITS,
    Arena,
    Capacity,
)
from caligo.search.config import (
    Expansion,
    InitialStrategy,
    Iterate,
    Iterations,
    RootGadget,
    Schedule,
    SearchConfig,
    SearchError,
    SearchResult,
    TimeSplit,
)
from caligo.search.game import Belief, Evaluator, SearchGame
from caligo.search.purify import purify

log = logging.getLogger(__name__)

_ITERATE = FastKernel(S._iterate_kernel)


class KernelStatusError(SearchError):
    """A search kernel reported a failure (a game breaking perfect recall, or a bug)."""


@dataclass(frozen=True)
class ExpansionStats:
    """Counters of the expansion side of one search."""

    steps: int
    expansions: int
    seconds: float


class GrowingTreeSearch:
    """The arena, the solver and the expanders of one player (module docstring).

    searcher: the player who searches (▲). capacity: the arena's node capacity (default
    `config.max_nodes`). util_scale: the game's largest absolute utility (1 for values in
    [-1, 1]); PUCT statistics are taken in units of it.
    """

    def __init__(
        self,
        game: SearchGame,
        evaluator: Evaluator,
        config: SearchConfig,
        searcher: int,
        *,
        evaluator_factory: Callable[[], Evaluator] | None = None,
        capacity: int | None = None,
        util_scale: float = 1.0,
    ) -> None:
        if searcher not in (0, 1):
            raise SearchError(f"searcher must be 0 or 1, got {searcher!r}")
        if not (isinstance(util_scale, int | float) and math.isfinite(util_scale)
                and util_scale > 0):
            raise SearchError(f"util_scale must be a positive number, got {util_scale!r}")
        self.game = game
        self.evaluator = evaluator
        self.evaluator_factory = evaluator_factory
        self.config = config
        self.searcher = searcher
        self.util_scale = float(util_scale)
        cap = Capacity.for_nodes(capacity if capacity is not None else config.max_nodes)
        self.arena = Arena(cap)
        self.root_pace = Pace(M.ROOT_PACE_S)  # seconds per sampled root's evaluation (reroot)
        self.leaf_pace = Pace(X.LEAF_PACE_S)  # seconds per expanded leaf (timed expanders)
        self._spare: Arena | None = None
        self._stack_node = np.zeros(cap.nodes, dtype=np.int32)
        self._stack_reach = np.zeros(cap.nodes, dtype=np.float64)
        self._util = np.zeros(cap.roots, dtype=np.float64)
        self.started = False
        self.run_end = 0.0  # perf_counter instant the last `run` returned

    # building the subgame -------------------------------------------------------------------
    def start(self, state: int) -> None:
        """A tree of one node at `state` with no gadget (the game's true start)."""
        C.init_plain(self.arena, self.game, self.evaluator, int(state), self.searcher,
                     self.config, self.util_scale)
        self.started = True

    def reroot(self, belief: Belief, cur_key: int, rng: np.random.Generator,
               v_prev: float | None = None, deadline: Deadline | None = None) -> M.BuildInfo:
        """Build the KLUSS subgame at our infoset `cur_key` from the current tree (Fig. 9).

        Without a previous tree every root is sampled from the belief. `deadline`: the
        evaluation of sampled roots stops at its soft instant (fewer roots are added).
        """
        if self.started:
            old = self.arena
            new = self._spare if self._spare is not None else Arena(self.arena.capacity)
        else:  # no tree yet: every root is sampled into our own (empty) arena
            old = Arena(Capacity.for_nodes(16))
            old.meta[M_SEARCHER] = self.searcher
            new = self.arena
        info = C.build_kluss(old, new, self.game, belief, self.evaluator, int(cur_key),
                             self.config, v_prev, rng, self.util_scale, deadline,
                             self.root_pace, self.leaf_pace)
        if self.started:
            self._spare = old
        self.arena = new
        self.started = True
        return info

    def prepare(self) -> None:
        """Allocate the second arena now (re-rooting builds into it): off the clock."""
        if self._spare is None:
            self._spare = Arena(self.arena.capacity)

    # running --------------------------------------------------------------------------------
    def iterate(self, n: int = 1) -> None:
        """Run n PCFR+ iterations on the committed tree."""
        a = self.arena
        status = _ITERATE(
            int(n), self.config.iterate is Iterate.AVERAGE, a.nodes, a.infosets, a.slots,
            a.roots, a.meta, a.fmeta, self._stack_node, self._stack_reach, self._util)
        if status != S.OK:
            raise KernelStatusError(f"solver kernel returned status {status}")

    def _commit(self, pending: X.Pending) -> None:
        status = X.commit(self.arena, pending,
                          self.config.initial_strategy is InitialStrategy.UNIFORM)
        if status == X.MISMATCH:
            raise KernelStatusError("the game gave one infoset two action sets or broke "
                                    "perfect recall")

    def expand_full(self) -> None:
        """Expand every reachable leaf (`Expansion.FULL`)."""
        ex = X.Expander(self.arena, self.game, self.evaluator, self.config.seed)
        status = X.expand_fully(ex, self.config.initial_strategy is InitialStrategy.UNIFORM)
        if status == X.MISMATCH:
            raise KernelStatusError("the game gave one infoset two action sets or broke "
                                    "perfect recall")
        if status == X.FULL:
            log.warning("arena full (%d nodes) before the subgame was fully expanded",
                        self.arena.capacity.nodes)

    def ensure_infoset(self, cur_key: int) -> None:
        """Expand a node of our infoset if none is expanded yet (so it has a strategy): the
        first leaf of it, a root when one is ours (rows are breadth first). Nothing to do when
        no node of it is in the tree yet (a chance root: the search grows them); raises
        `SearchError` naming the full table when one is there but cannot be expanded."""
        a = self.arena
        if a.infoset_of_key(self.searcher, cur_key) >= 0:
            return
        mine = self._infoset_nodes(cur_key, a.n_roots)  # in FoW always among the roots
        if mine.size == 0:
            mine = self._infoset_nodes(cur_key)
        if mine.size == 0:
            return
        h = int(mine[0])
        a.nodes.claim[h] = 1
        ex = X.Expander(a, self.game, self.evaluator, self.config.seed)
        pending = ex.expand(np.array([h], dtype=np.int32))
        status = X.FULL if pending is None else X.commit(
            a, pending, self.config.initial_strategy is InitialStrategy.UNIFORM)
        if status == X.MISMATCH:
            raise KernelStatusError("the game gave one infoset two action sets or broke "
                                    "perfect recall")
        if status == X.FULL:
            raise SearchError(f"no room to expand our infoset's node {h}: "
                              f"{self._occupancy()}")

    def _infoset_mask(self, cur_key: int, n: int) -> np.ndarray:
        """Which of the first `n` rows are nodes of the searcher's infoset `cur_key`."""
        a = self.arena
        mask: np.ndarray = ((a.nodes.player[:n] == self.searcher)
                            & (a.nodes.key[:n, self.searcher] == np.uint64(cur_key)))
        return mask

    def _infoset_nodes(self, cur_key: int, n: int | None = None) -> np.ndarray:
        """The nodes of the searcher's infoset `cur_key` among the first `n` rows (default:
        the whole tree), in row order."""
        return np.flatnonzero(self._infoset_mask(
            cur_key, self.arena.n_nodes if n is None else n))

    def _occupancy(self) -> str:
        a, cap = self.arena, self.arena.capacity
        return (f"the arena holds {a.n_nodes} of {cap.nodes} node rows, {a.n_infosets} of "
                f"{cap.infosets} infosets, {a.n_slots} of {cap.slots} slots")

    def limits_of_config(self) -> Limits:
        """The configuration's own budget as limits (a `Seconds` budget starts now)."""
        b = self.config.budget
        if isinstance(b, Iterations):
            return Limits(iterations=int(b.n))
        return Limits(deadline=Deadline.within(float(b.s)))

    def run(self, rng_seed: int, limits: Limits | None = None
            ) -> tuple[int, ExpansionStats, float]:
        """Spend `limits` (default: the configuration's budget): returns (T_1/2, expansion
        stats, solver seconds).

        An iteration count runs in the configured schedule (deterministic by default), with a
        deadline, if any, as a guard checked between iterations; a deadline alone runs the
        threaded schedule: the expanders stop at (1 - solver_tail) of the time to the soft
        instant, the solver at the soft instant, and no iteration batch may reach past the
        hard one.
        """
        c = self.config
        lim = limits if limits is not None else self.limits_of_config()
        try:
            if c.expansion is Expansion.FULL:
                t0 = time.perf_counter()
                self.expand_full()
                exp_s = time.perf_counter() - t0
                t1 = time.perf_counter()
                if lim.iterations is not None:
                    t_half = self._counted_solve(lim)
                else:
                    assert lim.deadline is not None
                    t_half = self._timed_solve(lim.deadline)
                solve_s = time.perf_counter() - t1
                return t_half, ExpansionStats(0, 0, exp_s), solve_s
            if lim.iterations is not None and c.schedule is Schedule.DETERMINISTIC:
                return self._run_deterministic(rng_seed, lim)
            return self._run_threaded(rng_seed, lim)
        finally:
            self.run_end = time.perf_counter()

    def _counted_solve(self, lim: Limits) -> int:
        n = int(lim.iterations or 0)
        if lim.deadline is None:
            self.iterate(n)
            return (n + 1) // 2
        done = 0
        half = -1
        while done < n and not lim.deadline.passed():
            k = min(64, n - done)
            self.iterate(k)
            done += k
            if half < 0 and done >= (n + 1) // 2:
                half = self.arena.iteration
        return half if half >= 0 else self.arena.iteration

    def _timed_solve(self, deadline: Deadline) -> int:
        start = deadline.now()
        mid = start + (deadline.soft - start) / 2
        half = -1
        per_iter = 1e-4
        while True:
            now = deadline.now()
            if now >= deadline.soft:
                break
            if half < 0 and now >= mid:
                half = self.arena.iteration
            k = max(1, min(1000, int(min(1e-3, deadline.soft - now) / max(per_iter, 1e-7))))
            t0 = deadline.now()
            self.iterate(k)
            per_iter = max((deadline.now() - t0) / k, 1e-9)
        return half if half >= 0 else self.arena.iteration

    def _walks(self, ex: X.Expander, count: int, step0: int) -> np.ndarray:
        c = self.config
        return ex.select_many(count, step0, self.searcher, c.expansion is Expansion.TWO_SIDED,
                              c.puct_c, c.explore_mix, self.util_scale, c.puct_prior or 0.0)

    def _expansion_count(self, iterations: int) -> int:
        c = self.config
        if c.expand_ratio is not None:
            return max(1, round(c.expand_ratio * iterations))
        return int(c.expansions or 0)

    def _run_deterministic(self, rng_seed: int, lim: Limits
                           ) -> tuple[int, ExpansionStats, float]:
        c = self.config
        assert lim.iterations is not None
        T = int(lim.iterations)
        E = self._expansion_count(T)
        T_e = max(1, math.ceil((1.0 - c.solver_tail) * T))
        guard = lim.deadline
        ex = X.Expander(self.arena, self.game, self.evaluator, rng_seed)
        steps = 0
        exp_s = 0.0
        solve_s = 0.0
        t_half = 0
        half_at = (T + 1) // 2
        for t in range(T):
            if guard is not None and guard.passed():  # a hang guard, not a budget
                break
            t0 = time.perf_counter()
            self.iterate(1)
            solve_s += time.perf_counter() - t0
            if t + 1 == half_at:
                t_half = self.arena.iteration
            if t < T_e and E > 0 and not ex.full:
                k = (t + 1) * E // T_e - t * E // T_e
                if k:
                    t1 = time.perf_counter()
                    leaves = self._walks(ex, k, steps)
                    steps += k
                    if leaves.size:
                        pending = ex.expand(leaves)
                        if pending is not None:
                            self._commit(pending)
                    exp_s += time.perf_counter() - t1
        return t_half, ExpansionStats(steps, int(self.arena.meta[M_EXPANSIONS]), exp_s), solve_s

    # Long by design: the solver thread and the expander threads share locks, a queue and
    # counters defined here; the closures are the threads' bodies (Obscuro, section 3).
    def _run_threaded(self, rng_seed: int, lim: Limits) -> tuple[int, ExpansionStats, float]:
        c = self.config
        deadline = lim.deadline
        n_iter = lim.iterations
        cap_steps = c.expansions if n_iter is None else self._expansion_count(n_iter)
        if n_iter is None and c.expand_ratio is not None:
            cap_steps = None  # a ratio is per iteration: a timed search has no count
        arena = self.arena
        claim_lock = threading.Lock()
        alloc_lock = threading.Lock()
        queue: collections.deque[X.Pending] = collections.deque()
        stop = threading.Event()
        steps_done = [0]
        exp_seconds = [0.0]
        count_lock = threading.Lock()
        errors: list[BaseException] = []

        now_fn = deadline.now if deadline is not None else time.perf_counter
        start = now_fn()
        # instants on the deadline's scale: the expanders stop first (section 3.4)
        soft = deadline.soft if deadline is not None else math.inf
        hard = deadline.hard if deadline is not None else math.inf
        expand_until = start + (1.0 - c.solver_tail) * (soft - start)
        # an expansion's leaves are evaluated one at a time while the next fits before the
        # expanders' stop (the solver joins them at the end: a batch must not outlast it)
        exp_deadline = (None if deadline is None else
                        Deadline(expand_until, max(expand_until, hard), now_fn))

        def expander(idx: int) -> None:
            ev = self.evaluator_factory() if self.evaluator_factory is not None else (
                self.evaluator)
            ex = X.Expander(arena, self.game, ev, rng_seed * 7919 + idx + 1, alloc_lock)
            step = idx
            try:
                while not stop.is_set() and not ex.full:
                    with count_lock:
                        todo = c.expander_batch
                        if cap_steps is not None:
                            todo = min(todo, cap_steps - steps_done[0])
                        if todo <= 0:
                            break
                        steps_done[0] += todo
                    t0 = time.perf_counter()
                    with claim_lock:
                        leaves = self._walks(ex, todo, step)
                    step += todo
                    if leaves.size:
                        pending = ex.expand(leaves, exp_deadline, self.leaf_pace)
                        if pending is not None:
                            queue.append(pending)
                    else:
                        time.sleep(0)  # nothing to expand right now: let the solver run
                    with count_lock:
                        exp_seconds[0] += time.perf_counter() - t0
            except BaseException as exc:  # surfaced in the solver thread
                errors.append(exc)

        mid = start + (soft - start) / 2
        threads = [threading.Thread(target=expander, args=(i,), daemon=True)
                   for i in range(c.expanders)]
        for th in threads:
            th.start()
        solve_s = 0.0
        per_iter = 1e-4
        t_half = -1
        stopped = False
        try:
            while True:
                now = now_fn()
                it = arena.iteration
                if now >= soft or now >= hard:
                    break
                if n_iter is not None and it >= n_iter:
                    break
                if not stopped and (now >= expand_until or (
                        n_iter is not None and it >= (1.0 - c.solver_tail) * n_iter)):
                    stop.set()
                    stopped = True
                if t_half < 0 and (now >= mid if n_iter is None else it >= n_iter // 2):
                    t_half = it
                while queue:
                    self._commit(queue.popleft())
                if errors:
                    raise errors[0]
                # Run enough iterations per call that the call (which releases the GIL) lasts
                # about a millisecond: on small trees a call per iteration keeps the GIL busy
                # in Python and starves the expanders.
                k = max(1, min(1000, int(1e-3 / max(per_iter, 1e-7))))
                if n_iter is not None:
                    k = min(k, max(1, n_iter - it))
                if deadline is not None:
                    k = min(k, max(1, int((min(soft, hard) - now) / max(per_iter, 1e-7))))
                t0 = time.perf_counter()
                c0 = now_fn()
                self.iterate(k)
                solve_s += time.perf_counter() - t0
                per_iter = max((now_fn() - c0) / k, 1e-9)  # on the deadline's scale
                time.sleep(0)  # let the expanders take the GIL between calls
        finally:
            stop.set()
            for th in threads:
                th.join()
            while queue:
                self._commit(queue.popleft())
            arena.nodes.claim[: arena.n_nodes] = 0
        if errors:
            raise errors[0]
        return (max(t_half, 0),
                ExpansionStats(steps_done[0], int(arena.meta[M_EXPANSIONS]), exp_seconds[0]),
                solve_s)

    # reading out ----------------------------------------------------------------------------
    def value_of(self, cur_key: int) -> float:
        """The searcher's value of its infoset `cur_key` under the played profile."""
        a = self.arena
        prof = C.profile(a, C.played_profile(a, self.config.iterate))
        mine = prof.alive & self._infoset_mask(cur_key, a.n_nodes)
        w = (prof.c * prof.y)[mine]
        if w.sum() <= 0.0:
            return math.nan
        return float(np.dot(w, prof.v[mine]) / w.sum())

    def result(self, cur_key: int, t_half: int, stats: ExpansionStats, solve_s: float,
               construct_s: float, build: M.BuildInfo | None, total_s: float) -> SearchResult:
        """Read out the searcher's infoset `cur_key` (policy, purified policy, statistics)."""
        a = self.arena
        g = a.infoset_of_key(self.searcher, cur_key)
        if g < 0:
            mine = self._infoset_nodes(cur_key)
            raise SearchError(f"the searcher's infoset is not in the tree: {mine.size} nodes "
                              f"of it ({np.count_nonzero(mine < a.n_roots)} roots), none "
                              f"expanded; {self._occupancy()}")
        sl = a.infoset_slots(g)
        actions = a.slots.action[sl].copy()
        strat = C.played_profile(a, self.config.iterate)
        policy = strat[sl].copy()
        since = a.slots.support_since[sl]
        stable = (since >= 0) & (since <= t_half + 1)
        p_max = float(a.fmeta[F_PMAX]) if a.has_gadget else 0.0
        if a.meta[M_HAS_GADGET] and self.config.gadget.value == "maxmargin":
            p_max = 0.0
        play = purify(policy, stable, p_max, self.config.purification, self.config.max_support)
        if not a.has_gadget:
            gadget = RootGadget.NONE
        elif p_max > 0.0:
            gadget = RootGadget.RESOLVE
        else:
            gadget = RootGadget.MAXMARGIN
        return SearchResult(
            actions=actions, policy=policy, play=play, stable=stable,
            value=self.value_of(cur_key), nodes=a.n_nodes, infosets=a.n_infosets,
            carried_nodes=build.carried_nodes if build else 0,
            carried_infosets=build.carried_infosets if build else 0,
            roots=a.n_roots, sampled=build.sampled if build else 0,
            iterations=a.iteration, expansions=stats.expansions, t_half=t_half,
            depth=int(a.meta[M_MAX_DEPTH]), p_max=p_max, gadget=gadget,
            node_visits=int(a.meta[M_VISITS]),
            time=TimeSplit(construct=construct_s, solve=solve_s, expand=stats.seconds,
                           total=total_s),
        )
