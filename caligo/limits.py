"""Limits of one computation: a work count and/or a deadline that every loop polls.

Stockfish's model (`Search::LimitsType` + `TimeManagement` + `check_time`): the limits of a
move are fixed once, as absolute instants, and every loop of the move compares the time with
them; nothing converts them back and forth or stores them in a configuration.

- `Deadline(soft, hard, now)`: instants on the scale of the clock function `now` (by default
  `time.perf_counter`). `soft` is where work aims to end (Stockfish's optimum); `hard` is never
  passed (its maximum): a loop that can overrun checks `hard` between its steps and returns the
  best it has. Tests inject `now` (a fake clock, or `time.process_time`, whose value does not
  move while other processes hold the CPU), so timing logic is checked without wall time.
- `Limits(iterations, deadline)`: what one search gets. `iterations` is a work count in the
  engine's own unit (solver iterations, leaf expansions); with no deadline the work is
  deterministic. Both may be set: then the first one reached stops the work.
- `Pace(per)`: the measured seconds per unit of a work that cannot be stopped inside a call
  (an evaluator call on a batch of positions); the loop sizes each call with `units_by` so
  that the call ends by the soft instant. Polling between calls alone lets one call overrun.
- `Watchdog.run_by(work, by, now)`: the last line of defence. Polling bounds every loop,
  but a step that cannot be cut (a kernel call, a page fault storm, a stalled child process)
  can still carry a move past its limit. `run_by` runs the move's work on the watchdog's
  worker thread and returns its value, or, if the instant `by` comes first, an `Overdue`
  handle at once: the caller answers with a fallback and `join`s the work later, off its
  clock (Stockfish's main thread likewise stops waiting for its helpers when time is up).

Like `caligo.errors`, this module sits outside the package layers: every layer may import it,
and it imports nothing of Caligo but `caligo.errors`.
"""

from __future__ import annotations

import logging
import math
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Generic, TypeVar

from caligo.errors import CaligoError

_log = logging.getLogger(__name__)

__all__ = ["PEAK_DECAY", "Deadline", "Limits", "LimitsError", "Overdue", "Pace", "Watchdog"]

T = TypeVar("T")


class LimitsError(CaligoError, ValueError):
    """A malformed deadline or limit; the message quotes it."""


def _instant(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LimitsError(f"Deadline.{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Deadline:
    """Two instants on `now`'s scale: aim to finish by `soft`, never pass `hard` (>= soft)."""

    soft: float
    hard: float
    now: Callable[[], float] = field(default=time.perf_counter, compare=False)

    def __post_init__(self) -> None:
        soft = _instant("soft", self.soft)
        hard = _instant("hard", self.hard)
        if hard < soft:
            raise LimitsError(f"Deadline.hard ({hard!r}) is before soft ({soft!r})")
        if not callable(self.now):
            raise LimitsError(f"Deadline.now must be a clock function, got {self.now!r}")

    @classmethod
    def within(
        cls,
        seconds: float,
        hard_seconds: float | None = None,
        now: Callable[[], float] = time.perf_counter,
    ) -> Deadline:
        """A deadline `seconds` from now (hard: `hard_seconds` from now, default the same)."""
        for name, value in (("seconds", seconds), ("hard_seconds", hard_seconds)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or value < 0
            ):
                raise LimitsError(f"Deadline.within: {name} must be a finite number >= 0, "
                                  f"got {value!r}")
        t = now()
        hard = seconds if hard_seconds is None else max(seconds, hard_seconds)
        return cls(t + seconds, t + hard, now)

    def left(self) -> float:
        """Seconds until the hard instant (negative once it passed)."""
        return self.hard - self.now()

    def soft_left(self) -> float:
        """Seconds until the soft instant (negative once it passed)."""
        return self.soft - self.now()

    def passed(self) -> bool:
        """True once the hard instant has come."""
        return self.now() >= self.hard

    def soft_passed(self) -> bool:
        """True once the soft instant has come."""
        return self.now() >= self.soft

    def capped(self, soft: float | None = None, hard: float | None = None) -> Deadline:
        """This deadline, ending no later than `soft` / `hard` (instants on the same scale)."""
        h = self.hard if hard is None else min(self.hard, hard)
        s = self.soft if soft is None else min(self.soft, soft)
        return Deadline(min(s, h), h, self.now)

    def stage(self, start: float, share: float) -> Deadline:
        """The deadline of a stage that may use `share` of the time from `start` to each
        instant (the belief update's share of a move, say)."""
        if not 0.0 <= share <= 1.0:
            raise LimitsError(f"Deadline.stage: share must be in [0, 1], got {share!r}")
        soft = start + share * max(0.0, self.soft - start)
        hard = start + share * max(0.0, self.hard - start)
        return Deadline(soft, max(soft, hard), self.now)


PEAK_DECAY = 0.998
"""`Pace.peak`'s fall a sample: a dear sample is forgotten only after hundreds of cheap ones."""


class Pace:
    """Seconds per unit of work (an evaluated position, say), measured as the work goes: it
    rises at once to a slower sample and falls slowly (a loaded machine's slow call is the one
    to plan for). A loop that cannot stop inside a call sizes the call with `units_by`, so the
    call ends by its deadline's soft instant at `margin` times the pace."""

    def __init__(self, per: float, margin: float = 1.5) -> None:
        for name, value in (("per", per), ("margin", margin)):
            if not math.isfinite(value) or value <= 0.0:
                raise LimitsError(f"Pace.{name} must be a finite number > 0, got {value!r}")
        self.per = float(per)
        self.margin = float(margin)
        self.samples = 0
        """How many calls `record` has measured (0: `per` is still the first guess)."""
        self.peak = 0.0
        """The dearest recent sample per unit (0 before any): it rises at once and falls
        `PEAK_DECAY` a sample, so a run of cheap units among dear ones (a Stockfish
        evaluator's cache hits and decided positions between its engine calls) does not
        make the work look cheap, as `per`, which follows the runs, does."""

    def record(self, seconds: float, units: int) -> None:
        """`units` of work took `seconds`."""
        if units <= 0 or not math.isfinite(seconds) or seconds < 0.0:
            return
        sample = max(seconds / units, 1e-9)
        self.per = max(sample, 0.7 * self.per + 0.3 * sample)
        self.peak = max(sample, PEAK_DECAY * self.peak)
        self.samples += 1

    def units_by(self, deadline: Deadline) -> int:
        """How many units fit before `deadline`'s soft instant (0 once it passed)."""
        left = deadline.soft_left()
        return 0 if left <= 0.0 else int(left / (self.margin * self.per))


@dataclass(frozen=True)
class Limits:
    """One search's limits: a work count in the engine's unit and/or a deadline."""

    iterations: int | None = None
    deadline: Deadline | None = None

    def __post_init__(self) -> None:
        n = self.iterations
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise LimitsError(f"Limits.iterations must be a positive int or None, got {n!r}")
        if self.deadline is not None and not isinstance(self.deadline, Deadline):
            raise LimitsError(f"Limits.deadline must be a Deadline or None, got "
                              f"{self.deadline!r}")
        if n is None and self.deadline is None:
            raise LimitsError("Limits need an iteration count, a deadline or both")

    @property
    def timed(self) -> bool:
        """True when the work stops at a deadline rather than after a fixed count."""
        return self.iterations is None

    def passed(self) -> bool:
        """True once the deadline's hard instant has come (never for a count alone)."""
        return self.deadline is not None and self.deadline.passed()


class Overdue(Generic[T]):
    """Work that `Watchdog.run_by` left running past its instant. `join()` waits for it to
    end and returns its value (or raises what it raised); `done` says whether it has ended."""

    def __init__(self, box: dict[str, object], ended: threading.Event) -> None:
        self._box = box
        self._ended = ended
        self.late_s = 0.0
        """How long after the instant the caller got control back (the worker held the GIL)."""
        self.where = ""
        """The worker's innermost frames when the caller got control back (for the log)."""
        self.note = ""
        """What the caller says about the overdue move, logged by `join` (off the clock)."""

    @property
    def done(self) -> bool:
        """True once the work has returned or raised."""
        return self._ended.is_set()

    def join(self) -> T:
        """Wait for the work to end; its value, or the exception it raised. The `note`, if
        any, is logged first (a log write inside the timed answer would cost its GIL
        handoffs)."""
        if self.note:
            _log.warning("%s", self.note)
            self.note = ""
        self._ended.wait()
        if "error" in self._box:
            raise self._box["error"]  # type: ignore[misc]
        return self._box["value"]  # type: ignore[return-value]


SWITCH_INTERVAL_S = 0.0005
"""The process's switch interval once a `Watchdog` exists (`sys.setswitchinterval`)."""


def _innermost(frame: FrameType | None, depth: int = 4) -> str:
    """`file:line function` of the `depth` innermost frames, innermost first (no source lines
    read: `traceback.extract_stack` would read them, inside a timed answer)."""
    parts: list[str] = []
    while frame is not None and len(parts) < depth:
        code = frame.f_code
        parts.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return " <- ".join(parts)


class Watchdog:
    """One long-lived worker thread that runs a move's work while the caller watches the time
    (module docstring). One thread for every move, so what binds itself to its calling thread
    (a Stockfish process per thread, say) is bound once. Work is run one at a time: `join`
    an `Overdue` handle before the next `run_by`."""

    def __init__(self, name: str = "caligo-move") -> None:
        self.name = name
        # the caller waiting for an instant must get Python's lock back at once when it comes:
        # a thread asking for it waits up to the switch interval (5 ms by default) per handoff,
        # and answering a move takes a few; with the worker in Python code that was 18 ms past
        # a 100 ms move's answer instant (a timing run's forfeit). 0.5 ms costs nothing while
        # the caller only waits (a waiting thread does not ask for the lock).
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._jobs: queue.SimpleQueue[
            tuple[Callable[[], object], dict[str, object], threading.Event] | None
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            work, box, ended = job
            try:
                box["value"] = work()
            except BaseException as exc:  # handed to the caller (run_by or Overdue.join)
                box["error"] = exc
            finally:
                ended.set()

    def run_by(self, work: Callable[[], T], by: float,
               now: Callable[[], float] = time.perf_counter) -> T | Overdue[T]:
        """Run `work` on the worker thread; its value if it ends before the instant `by` (on
        `now`'s scale), else an `Overdue` handle as soon as `by` has come. What `work` raises
        before `by` is raised here."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()
        box: dict[str, object] = {}
        ended = threading.Event()
        self._jobs.put((work, box, ended))
        out: Overdue[T] = Overdue(box, ended)
        while not ended.wait(max(0.0, by - now())):
            t = now()
            if t >= by:
                out.late_s = t - by
                thread = self._thread
                frame = sys._current_frames().get(thread.ident or -1) if thread else None
                out.where = _innermost(frame)
                return out
        return out.join()

    def close(self) -> None:
        """Let the worker thread end once its current work is done."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None
