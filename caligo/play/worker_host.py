"""What an engine worker runs (`caligo.play.workers`): the jobs it is given and what it answers,
its errors and counters, `Host` (the agents of the games a worker holds, least recently used
closed past `MAX_HOSTED`), and the main loop of a worker process (its init and warm-up first,
then one job at a time from its pipe)."""

from __future__ import annotations

import contextlib
import enum
import importlib
import logging
import os
import signal
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

from caligo.agents import registry
from caligo.agents.base import Decision
from caligo.agents.protocol import Force, GameOver, Go, NewGame, RefereeMessage
from caligo.agents.resources import EngineResources
from caligo.errors import CaligoError
from caligo.play.referee import AgentSeat

log = logging.getLogger("caligo.play.workers")

MAX_HOSTED = 64
"""Games whose agents one worker keeps in memory; the least recently used is closed past it."""


class WorkerError(CaligoError, ValueError):
    """A bad worker specification or job; the message quotes it."""


class WorkerLost(CaligoError):
    """The worker running a job hung past the job's limit or died; it was replaced."""


class JobKind(enum.Enum):
    """What a job asks of the game's agent."""

    MOVE = "move"
    OBSERVE = "observe"
    END = "end"


@dataclass(frozen=True)
class Job:
    """One request for a game's engine seat (module docstring). `sent_at`: `time.time()` when
    the job was made (the `go` is aged by the wait from then)."""

    kind: JobKind
    game: str
    spec: str
    messages: tuple[RefereeMessage, ...]
    sent_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class JobResult:
    """What a worker answers: the decision of a MOVE with `go` (None after `force` and for
    the other kinds), or `missing` (replay the transcript), or `error` (the agent failed: the
    game's problem, not the worker's). `started` / `ended`: `time.time()` around the work;
    `worker`: the worker's index."""

    game: str
    decision: Decision | None = None
    missing: bool = False
    error: str | None = None
    started: float = 0.0
    ended: float = 0.0
    worker: int = -1


@dataclass(frozen=True)
class WorkerStats:
    """The pool's counters: workers, replacements, jobs, the longest wait for a worker (s),
    the most jobs running at once, games assigned."""

    workers: int
    replaced: int
    jobs: int
    max_wait_s: float
    max_running: int
    games: int
    waits_s: tuple[float, ...] = ()


class Host:
    """The worker side: the agents of the games this worker hosts, and its resources."""

    def __init__(self, index: int, max_hosted: int = MAX_HOSTED) -> None:
        self.index = index
        self.max_hosted = max_hosted
        self.resources = EngineResources()
        self.seats: OrderedDict[str, AgentSeat] = OrderedDict()

    def handle(self, job: Job) -> JobResult:
        """Carry out one job (never raises: an agent's failure is the result's `error`)."""
        started = time.time()
        try:
            decision, missing = self._handle(job)
            return JobResult(job.game, decision, missing, None, started, time.time(),
                             self.index)
        except Exception as exc:
            log.warning("worker %d: game %s: %s: %s", self.index, job.game,
                        type(exc).__name__, exc)
            self._drop(job.game)
            return JobResult(job.game, None, False, f"{type(exc).__name__}: {exc}", started,
                             time.time(), self.index)

    def _handle(self, job: Job) -> tuple[Decision | None, bool]:
        messages = job.messages
        seat = self.seats.get(job.game)
        if messages and isinstance(messages[0], NewGame):
            self._drop(job.game)
            seat = AgentSeat(registry.create(job.spec, resources=self.resources))
            self.seats[job.game] = seat
        if seat is None:
            return None, job.kind is not JobKind.END
        self.seats.move_to_end(job.game)
        self._evict()
        for message in messages:
            if isinstance(message, Go):
                waited_ms = max(0.0, 1000.0 * (time.time() - job.sent_at))
                return seat.ask(replace(message, clock=message.clock.aged(waited_ms))), False
            seat.deliver(message)
            if isinstance(message, Force):
                return None, False
            if isinstance(message, GameOver):
                self._drop(job.game)
                return None, False
        if job.kind is JobKind.END:
            self._drop(job.game)
        return None, False

    def _evict(self) -> None:
        while len(self.seats) > self.max_hosted:
            game, seat = self.seats.popitem(last=False)
            self._close(game, seat)

    def _drop(self, game: str) -> None:
        seat = self.seats.pop(game, None)
        if seat is not None:
            self._close(game, seat)

    def _close(self, game: str, seat: AgentSeat) -> None:
        try:
            seat.agent.close()
        except Exception as exc:  # pragma: no cover - a failing close must not stop the worker
            log.warning("worker %d: game %s: close failed: %s", self.index, game, exc)

    def close(self) -> None:
        """Close every hosted agent and the resources."""
        for game in list(self.seats):
            self._drop(game)
        self.resources.close()


def _run_init(init: str | None) -> None:
    """Run a worker initializer named "module:function" (registers test agents, say)."""
    if init:
        module, _, name = init.partition(":")
        getattr(importlib.import_module(module), name)()


def _warm(host: Host, warm: str | None) -> None:
    """Build one agent of `warm` and start a game with it: its kernels load and its
    Stockfish processes start before the worker serves (off every clock)."""
    if not warm:
        return
    from caligo.agents.timing import UNTIMED
    from caligo.fow.position import STARTING_FEN

    agent = registry.create(warm, resources=host.resources)
    try:
        agent.new_game(0, STARTING_FEN, UNTIMED, 0)
    finally:
        agent.close()


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MMAP_THRESHOLD = 1 << 20
"""A worker's allocations from this size up are mapped apart and go back to the system when
freed (glibc otherwise raises the threshold as large blocks are freed, up to 32 MB, and a
hosted game's belief buffers then stay in the heap after its update)."""


def _libc() -> Any:
    """glibc, or None (another C library: nothing to tune)."""
    try:
        import ctypes

        lib = ctypes.CDLL("libc.so.6")
        lib.mallopt  # noqa: B018 - glibc only
        lib.malloc_trim  # noqa: B018
        return lib
    except (OSError, AttributeError):
        return None


def _process_main(conn: Any, index: int, init: str | None, warm: str | None,
                  max_hosted: int) -> None:
    """A worker process: its own process group (a kill takes its Stockfish processes along),
    then one job at a time from the pipe until it is closed. After each answer the freed heap
    goes back to the system (`malloc_trim`): a worker hosts many games, and what one game's
    move freed would otherwise count in the server's memory until the next."""
    with contextlib.suppress(OSError):
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops its workers itself
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    _run_init(init)
    host = Host(index, max_hosted)
    try:
        _warm(host, warm)
        conn.send(("ready", os.getpid()))
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                break
            if job is None:
                break
            conn.send(host.handle(job))
            if libc is not None:
                libc.malloc_trim(0)  # after the answer: off the game's clock
    finally:
        host.close()
