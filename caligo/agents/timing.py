"""Time as a contract: the one owner of a move's budget, from `--tc` to every loop of the move.
(`TimeControl`, `Clock` and their parser live in `caligo.agents.time_control`; this module
exports them.)

The path of a budget (Stockfish's `go` limits -> `LimitsType` -> `TimeManagement` ->
`check_time`, in Caligo's words):

    "--tc 180+2"  ->  TimeControl            the game's rule for one side (text, PGN, protocol)
                  ->  Clock                  what the referee says in each `go`: the time left
                                             now, the increment, the deadline of this answer
                  ->  MoveTimer.plan(clock)  one `MovePlan`: an iteration count, or an optimum
                                             and a maximum as absolute instants
                  ->  caligo.limits.Limits   what the search gets; every loop polls its
                                             `Deadline` (solver, expanders, ZS21's deepening
                                             and LPs, the belief update, root sampling)

A `TimingPolicy` (frozen) holds the rule's knobs; `OBSCURO`, `ZS21`, `STOCKFISH_PI` and `WEB`
are its presets. A `MoveTimer` holds one agent's per-game state: the move's start (the
instant the opponent's move was received: the belief update that follows is part of the
move), the own-move count (the game's phase) and the learned move overhead.

The rule (times in ms; `overhead` = the policy's `overhead_ms` plus the learned tail):

- iterations N: the count; the referee's deadline, if any, only as a hang guard (each stage
  within its share of it: `MovePlan.stage`).
- move time T: optimum = T (1 - safety_share) - overhead, maximum = T - overhead.
- clock R + I: usable = R - reserve; moves_left = max(min_moves_left, game_moves - own_moves);
  optimum = (usable / moves_left + inc_share I) x phase(own_moves) (more in the middle game,
  `phase_factor`), at most max_share usable + inc_share I, less when the move is forced (one
  legal move: `forced_ms`) or the position is known (|P| = 1: half); maximum =
  min(hard_factor x optimum, max_share usable + I, usable / 2 + I); both minus the overhead.
- none: the policy's `untimed_ms` as a move time.
- the agent's own budget option (`TimeControl`): an iteration count replaces the clock's
  budget; a move time is used as long as the game clock allows it (never past the clock's
  optimum).
- always: never below `min_ms`, but first of all never past the referee's deadline minus the
  overhead.

Stages of a move share its time from the start: the belief update may use the first
`belief_share` of the optimum, the subgame's root sampling up to `belief_share +
construct_share` of it, and the search the rest (`MovePlan.stage`). The overhead is learned
from what each move measures: how far past its soft instant the answer came out (thread
joins, read-out, a loaded machine's stalls), as a decaying maximum (ZS21 learned this first;
every engine now does). A stall that no poll can cut (about one move in a thousand on a loaded
2-core machine: a kernel call that found no child, a first-use cache load) is answered by the
watchdog instead: a timed move's work runs under `caligo.limits.Watchdog` and the answer is due
at `MovePlan.answer_by`, half the policy's overhead before the move's limit; past it the
engine plays its fallback move and finishes the work on the opponent's time.

Python's own pauses are housekeeping too: a full collection of the cyclic garbage walks every
object of the process (the evaluator's caches, the position store: 60 ms under load was seen
inside a 100 ms move). `collect_garbage()` runs one after our own ply, off the clock, and
freezes what survives (`gc.freeze`), so the collections during the next move scan only what
that move allocates; the next call unfreezes first, so nothing is kept that became garbage.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from caligo.agents.time_control import (
    UNTIMED,
    Clock,
    TcKind,
    TimeControl,
    TimeControlError,
)
from caligo.errors import CaligoError
from caligo.limits import Deadline, Limits

__all__ = [
    "ITERATION_GUARD_MS",
    "OBSCURO",
    "STOCKFISH_PI",
    "UNTIMED",
    "WEB",
    "ZS21",
    "Clock",
    "MovePlan",
    "MoveTimer",
    "TcKind",
    "TimeControl",
    "TimeControlError",
    "TimingPolicy",
    "TimingPolicyError",
    "collect_garbage",
    "phase_factor",
    "strength_clock",
]

class TimingPolicyError(CaligoError, ValueError):
    """A `TimingPolicy` field out of range; the message quotes it."""


# --- the policy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimingPolicy:
    """The knobs of the time rule (module docstring); times in ms, shares in (0, 1].

    reserve_ms: clock never planned. game_moves / min_moves_left: the own moves a clock is
    spread over (FoW games last about 58 moves a side: Obscuro, appendix D). inc_share: the
    share of the increment a move may plan. max_share: the largest share of the usable clock
    one move may take. hard_factor: the maximum as a multiple of the optimum. phase: more
    time in the middle game (`phase_factor`). overhead_ms: time outside the engine's view
    (pipes, the referee, process start of the answer), always kept; overhead_decay: how fast
    the learned tail forgets a slow move. safety_share: the part of a fixed move time kept as
    slack. min_ms: the shortest planned move. forced_ms: the plan for a forced move (one legal
    move). belief_share / construct_share: the stages' shares of the optimum (module
    docstring). untimed_ms: the move time without any budget.
    """

    reserve_ms: float = 300.0
    game_moves: int = 60
    min_moves_left: int = 15
    inc_share: float = 0.75
    max_share: float = 0.2
    hard_factor: float = 3.0
    phase: bool = True
    overhead_ms: float = 20.0
    overhead_decay: float = 0.9
    safety_share: float = 0.08
    min_ms: float = 5.0
    forced_ms: float = 20.0
    belief_share: float = 0.4
    construct_share: float = 0.25
    untimed_ms: float = 1000.0

    def __post_init__(self) -> None:
        for name in ("game_moves", "min_moves_left"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise TimingPolicyError(f"TimingPolicy.{name} must be an int >= 1: {v!r}")
        for name in ("inc_share", "max_share", "overhead_decay", "belief_share",
                     "construct_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 < v <= 1.0:
                raise TimingPolicyError(f"TimingPolicy.{name} must be in (0, 1]: {v!r}")
        if not 0.0 <= self.safety_share < 0.5:
            raise TimingPolicyError(f"TimingPolicy.safety_share must be in [0, 0.5): "
                                    f"{self.safety_share!r}")
        if self.belief_share + self.construct_share >= 1.0:
            raise TimingPolicyError("TimingPolicy: belief_share + construct_share must leave "
                                    f"the search a share: {self!r}")
        for name in ("reserve_ms", "overhead_ms", "min_ms", "forced_ms", "untimed_ms",
                     "hard_factor"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not (
                math.isfinite(v) and v >= 0
            ):
                raise TimingPolicyError(f"TimingPolicy.{name} must be a finite number >= 0: "
                                        f"{v!r}")
        if self.hard_factor < 1.0 or self.untimed_ms <= 0:
            raise TimingPolicyError(f"TimingPolicy: hard_factor must be >= 1 and untimed_ms > "
                                    f"0: {self!r}")
        if not isinstance(self.phase, bool):
            raise TimingPolicyError(f"TimingPolicy.phase must be a bool: {self.phase!r}")

    def clock_optimum(self, remaining_ms: float, increment_ms: float, own_moves: int) -> float:
        """A clock's optimum before the overhead (ms): the module docstring's rule."""
        usable = max(0.0, remaining_ms - self.reserve_ms)
        moves_left = max(self.min_moves_left, self.game_moves - own_moves)
        inc = self.inc_share * increment_ms
        base = usable / moves_left + inc
        if self.phase:
            base *= phase_factor(own_moves)
        return min(base, self.max_share * usable + inc)

    def clock_maximum(self, remaining_ms: float, increment_ms: float, optimum: float) -> float:
        """A clock's maximum before the overhead (ms)."""
        usable = max(0.0, remaining_ms - self.reserve_ms)
        return max(optimum, min(self.hard_factor * optimum,
                                self.max_share * usable + increment_ms,
                                usable / 2 + increment_ms))


def phase_factor(own_moves: int) -> float:
    """The optimum's multiplier by game phase: 0.6 over the first 4 own moves (the position is
    still nearly known, P small), rising to 1.3 at move 12, 1.3 through move 35 (the middle
    game, where FoW is decided), back to 1.0 by move 50."""
    m = own_moves
    if m <= 4:
        return 0.6
    if m <= 12:
        return 0.6 + 0.7 * (m - 4) / 8
    if m <= 35:
        return 1.3
    if m <= 50:
        return 1.3 - 0.3 * (m - 35) / 15
    return 1.0


OBSCURO = TimingPolicy()
"""The Obscuro engine's rule."""
ZS21 = TimingPolicy(game_moves=30, min_moves_left=30, phase=False, reserve_ms=0.0,
                    max_share=0.2, hard_factor=2.0, safety_share=0.1, overhead_ms=30.0)
"""ZS21's rule (R / 30 + 0.75 I, at most 0.2 R, no phase), with a larger overhead: its final LP
solve cannot stop at once."""
STOCKFISH_PI = TimingPolicy(belief_share=0.5, construct_share=0.1)
"""StockfishPI: the belief update and one Stockfish search (no subgame to build)."""
WEB = TimingPolicy(game_moves=30, min_moves_left=30, phase=False, reserve_ms=0.0,
                   inc_share=0.8, max_share=0.25, min_ms=50.0)
"""The web app's strength setting inside a game clock (`strength_clock`): 1/30 of the clock
plus 80% of the increment, at least 50 ms."""


ITERATION_GUARD_MS = 60_000
"""The longest an iteration strength's move may take (`strength_clock`) when the referee allows
longer or sets no limit (an untimed web game, a GUI's `go` without a deadline): the match
runner's move timeout. It bounds what a count does not: the belief update of a P past its cap,
and a replay of P (`MovePlan.repair_deadline`, half of it)."""


def strength_clock(strength: TimeControl, clock: Clock, policy: TimingPolicy = WEB) -> Clock:
    """The `Clock` an engine of a given strength is asked with inside the game's `clock` (the
    web app, the strength ladder): an iteration strength as it is, with the referee's deadline
    as its guard but never longer than `ITERATION_GUARD_MS`; a move-time strength capped at
    the clock's optimum (so the engine never flags at any strength), the deadline kept."""
    if strength.kind is TcKind.ITERATIONS:
        guard = (ITERATION_GUARD_MS if clock.deadline_ms is None
                 else min(clock.deadline_ms, ITERATION_GUARD_MS))
        return Clock(TcKind.ITERATIONS, iterations=strength.iterations, deadline_ms=guard)
    movetime = float(strength.movetime_ms if strength.kind is TcKind.MOVETIME
                     else policy.untimed_ms)
    if clock.kind is TcKind.CLOCK and clock.remaining_ms is not None:
        cap = policy.clock_optimum(clock.remaining_ms, clock.increment_ms, 0)
        movetime = max(policy.min_ms, min(movetime, cap))
    return Clock(TcKind.MOVETIME, movetime_ms=max(1, int(movetime)),
                 deadline_ms=clock.deadline_ms)


# --- one move's plan, and the timer ----------------------------------------------------------


REPAIR_SHARE = 0.5
"""The share of a move (of an iteration move's guard) a replay of P may use
(`MovePlan.repair_deadline`)."""


@dataclass(frozen=True)
class MovePlan:
    """One move's limits (`MoveTimer.plan`).

    start: the move's start on the timer's clock. iterations: a work count (None: timed).
    optimum_ms / maximum_ms: the planned and the longest time of the whole move from `start`
    (0 for a count without a deadline). overhead_ms: kept off both (latency plus the learned
    tail). deadline: soft = start + optimum - overhead, hard = start + maximum - overhead
    (None for a count without a referee deadline). forced: one legal move. kind: what the
    budget came from (`TcKind`). answer_ms: when a timed move's answer is due whatever its
    work (`caligo.limits.Watchdog`'s instant): half the policy's overhead before the move's
    limit, never before the hard instant; 0 for a count (deterministic work is not cut).
    """

    start: float
    iterations: int | None
    optimum_ms: float
    maximum_ms: float
    overhead_ms: float
    deadline: Deadline | None
    forced: bool
    kind: TcKind
    belief_share: float
    construct_share: float
    answer_ms: float = 0.0

    @property
    def answer_by(self) -> float | None:
        """The instant the answer is due whatever the work (None: no such instant)."""
        return None if self.answer_ms <= 0.0 else self.start + self.answer_ms / 1000.0

    @property
    def limits(self) -> Limits:
        """The search's limits: the count (with the deadline as a guard) or the deadline."""
        return Limits(self.iterations, self.deadline)

    def stage(self, share: float) -> Deadline | None:
        """The deadline of the first `share` of the move (from its start); None without one.
        Under an iteration count the share is of the referee's guard: a stage that reaches it
        (a belief update of a P at its cap grew from 6 to 50 s over four moves at 100
        iterations, then took the whole 60 s guard and the move) leaves the rest their time."""
        d = self.deadline
        if d is None:
            return None
        return d.stage(self.start, share)

    @property
    def belief_deadline(self) -> Deadline | None:
        """Where the belief update of the opponent's ply must end."""
        return self.stage(self.belief_share)

    @property
    def repair_deadline(self) -> Deadline | None:
        """Where a replay of P that lost the truth must end: `REPAIR_SHARE` of the move (of
        the referee's guard under an iteration count) from its start. The replay re-runs up
        to a dozen capped updates, seconds to minutes in all, and the move must still answer
        in time: a replay that cannot finish there gives way to a P drawn afresh from the
        observation (`caligo.agents.fow_belief`) instead of running into the watchdog. None
        for a count without a guard."""
        return self.stage(REPAIR_SHARE)

    @property
    def construct_deadline(self) -> Deadline | None:
        """Where the subgame's root sampling must end."""
        return self.stage(self.belief_share + self.construct_share)

    def to_info(self) -> dict[str, Any]:
        """The plan for a move's analysis (ms from the start)."""
        out: dict[str, Any] = {"budget": self.kind.value}
        if self.iterations is not None:
            out["iterations"] = self.iterations
        if self.deadline is not None:
            out["optimum"] = round(self.optimum_ms, 1)
            out["maximum"] = round(self.maximum_ms, 1)
            out["overhead"] = round(self.overhead_ms, 1)
        if self.forced:
            out["forced"] = True
        return out


def collect_garbage() -> None:
    """A full collection of the process's cyclic garbage, the survivors then frozen out of the
    automatic collections (module docstring). Call it off the clock: after our own ply."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class MoveTimer:
    """One agent's time keeper for a game (module docstring).

    `start()` when the opponent's move arrives (or at `plan` if nothing started the move),
    `plan(clock, ...)` at `act`, `finish(plan)` when the answer is ready. `now` is the clock
    (injectable: tests use a fake one).
    """

    def __init__(self, policy: TimingPolicy = OBSCURO, own: TimeControl = UNTIMED,
                 now: Callable[[], float] = time.perf_counter) -> None:
        if not isinstance(policy, TimingPolicy):
            raise TimingPolicyError(f"policy must be a TimingPolicy: {policy!r}")
        if not isinstance(own, TimeControl) or own.kind is TcKind.CLOCK:
            raise TimingPolicyError(f"an agent's own budget is none, iters=N or mt=SECONDS: "
                                    f"{own!r}")
        self.policy = policy
        self.own = own
        self.now = now
        self.time_control = UNTIMED
        self.own_moves = 0
        self.tail_ms = 0.0  # learned: how far past the soft instant answers came out
        self._start: float | None = None
        self.last: MovePlan | None = None

    def new_game(self, time_control: TimeControl) -> None:
        """A new game under `time_control` (the learned tail is kept: it is the machine's)."""
        self.time_control = time_control
        self.own_moves = 0
        self._start = None
        self.last = None

    def start(self) -> None:
        """The move starts now (the opponent's move has just been received)."""
        self._start = self.now()

    @property
    def started(self) -> float | None:
        """The start of the current move, None before `start`."""
        return self._start

    def plan(self, clock: Clock, legal_moves: int = 2, belief_size: int | None = None
             ) -> MovePlan:
        """This move's limits under `clock` (module docstring)."""
        p = self.policy
        start = self._start if self._start is not None else self.now()
        self._start = start
        overhead = p.overhead_ms + self.tail_ms
        forced = legal_moves <= 1
        own = self.own
        iterations: int | None = None
        if own.kind is TcKind.ITERATIONS:
            iterations = own.iterations
        elif own.kind is TcKind.NONE and clock.kind is TcKind.ITERATIONS and clock.iterations:
            iterations = int(clock.iterations)
        if iterations is not None:
            deadline = None
            maximum = 0.0
            if clock.deadline_ms is not None:
                maximum = float(clock.deadline_ms)
                hard = start + max(0.0, maximum - overhead) / 1000.0
                deadline = Deadline(hard, hard, self.now)
            plan = MovePlan(start, iterations, 0.0, maximum, overhead, deadline, forced,
                            TcKind.ITERATIONS, p.belief_share, p.construct_share)
            self.last = plan
            return plan
        kind = clock.kind
        if clock.kind is TcKind.CLOCK and clock.remaining_ms is not None:
            optimum = p.clock_optimum(clock.remaining_ms, clock.increment_ms, self.own_moves)
            if own.kind is TcKind.MOVETIME:  # the own move time, as long as the clock allows
                optimum = min(optimum, float(own.movetime_ms))
                kind = TcKind.MOVETIME
            if belief_size is not None and belief_size <= 1:
                optimum *= 0.5  # the position is known
            if forced:
                optimum = min(optimum, p.forced_ms)
            maximum = p.clock_maximum(clock.remaining_ms, clock.increment_ms, optimum)
            soft_ms = optimum - overhead
            hard_ms = maximum - overhead
        else:
            if own.kind is TcKind.MOVETIME:
                total = float(own.movetime_ms)
                kind = TcKind.MOVETIME
            elif clock.kind is TcKind.MOVETIME and clock.movetime_ms:
                total = float(clock.movetime_ms)
            else:
                total = p.untimed_ms
                kind = TcKind.NONE if clock.kind is TcKind.NONE else clock.kind
            optimum = total
            maximum = total
            soft_ms = total * (1.0 - p.safety_share) - overhead
            hard_ms = total - overhead
            if forced:
                soft_ms = min(soft_ms, p.forced_ms)
        soft_ms = max(soft_ms, p.min_ms)
        hard_ms = max(hard_ms, soft_ms)
        limit_ms = maximum
        if clock.deadline_ms is not None:  # the referee's limit, whatever the budget (last:
            # no floor may push a move past it)
            hard_ms = max(0.0, min(hard_ms, float(clock.deadline_ms) - overhead))
            soft_ms = min(soft_ms, hard_ms)
            limit_ms = min(limit_ms, float(clock.deadline_ms))
        answer_ms = max(hard_ms, limit_ms - p.overhead_ms / 2.0, 1.0)
        deadline = Deadline(start + soft_ms / 1000.0, start + hard_ms / 1000.0, self.now)
        plan = MovePlan(start, None, optimum, maximum, overhead, deadline, forced, kind,
                        p.belief_share, p.construct_share, answer_ms)
        self.last = plan
        return plan

    def finish(self, plan: MovePlan) -> float:
        """The answer is ready: count the move, learn the tail, end the move; return the
        move's time in ms (from its start)."""
        end = self.now()
        self.own_moves += 1
        self._start = None
        if plan.deadline is not None and plan.iterations is None:
            late_ms = 1000.0 * (end - plan.deadline.soft)
            decayed = self.policy.overhead_decay * self.tail_ms
            self.tail_ms = max(decayed, min(late_ms, 1000.0), 0.0)
        return 1000.0 * (end - plan.start)

    def expected_ms(self, time_control: TimeControl) -> float:
        """The longest a move is expected to take under `time_control` and the own budget
        (for sizing a search's memory); 0 for an iteration count."""
        p = self.policy
        if self.own.kind is TcKind.ITERATIONS or (
            self.own.kind is TcKind.NONE and time_control.kind is TcKind.ITERATIONS
        ):
            return 0.0
        if time_control.kind is TcKind.CLOCK:
            usable = max(0.0, time_control.initial_ms - p.reserve_ms)
            ms = p.max_share * usable + time_control.increment_ms
            if self.own.kind is TcKind.MOVETIME:
                ms = min(ms, float(self.own.movetime_ms))
            return ms
        if self.own.kind is TcKind.MOVETIME:
            return float(self.own.movetime_ms)
        if time_control.kind is TcKind.MOVETIME:
            return float(time_control.movetime_ms)
        return p.untimed_ms

    def iterations(self, time_control: TimeControl) -> int | None:
        """The iteration count of every move under `time_control` (None: timed)."""
        if self.own.kind is TcKind.ITERATIONS:
            return self.own.iterations
        if self.own.kind is TcKind.NONE and time_control.kind is TcKind.ITERATIONS:
            return time_control.iterations
        return None

