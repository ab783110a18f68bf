"""Engine workers: a fixed pool that plays the engine's moves of many games at once.

A worker owns engine resources (its Stockfish processes: `caligo.agents.resources`) and hosts
the agents of the games assigned to it, at most `max_hosted` (the least recently used is
closed past that). A game is assigned to one worker at its first job, the worker with the
fewest games, and stays there, so its agent keeps its belief and search tree between moves;
each worker runs its jobs one at a time, first come first served. A game that waits for a
person holds no process: its agent is an object in a worker that serves every game assigned to
it, and the number of processes is the pool's, whatever the number of games.

Jobs (`Job`), built by the caller from the referee's projection of the engine's seat
(`caligo.play.session.project`): MOVE (the seat's new messages, ending with `go` or `force`),
OBSERVE (new messages and no request: the engine takes in its own move on the opponent's
time), END (`gameover`: the agent is closed and dropped). A worker that does not host the game
(a new worker after a crash, a game it dropped) answers `missing`: the caller sends the seat's
whole transcript again, `newgame` first, and the agent replays it (P is rebuilt exactly; the
search tree starts over). A `go` is aged by the time its job waited in the queue
(`Clock.aged`): the engine's clock ran meanwhile.

Watchdog: every job has a limit in seconds (a move: its deadline plus a grace; a first job or
a replay: a start-up limit too). A worker past it is killed with its process group (its
Stockfish processes) and replaced; the job fails with `WorkerLost` and the games the worker
hosted replay at their next job; the caller decides (retry, or end the game with the reason).

Backends (`make_workers`): `processes:N` (multiprocessing with spawn, the default: a hung
worker can be killed), `threads:N` (in the caller's process: for tests and agents registered
at run time; a hung thread is abandoned, not killed), `ray[:ADDRESS]` (Ray actors of the
optional `caligo[ray]` extra; `ray` starts a local instance).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Container, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from caligo.play.worker_host import (
    MAX_HOSTED,
    Host,
    Job,
    JobKind,
    JobResult,
    WorkerError,
    WorkerLost,
    WorkerStats,
    _process_main,
    _run_init,
    _warm,
)

log = logging.getLogger(__name__)

__all__ = [
    "Host",
    "Job",
    "JobKind",
    "JobResult",
    "PoolLoad",
    "ProcessWorkers",
    "RayWorkers",
    "ThreadWorkers",
    "WorkerError",
    "WorkerLost",
    "WorkerStats",
    "Workers",
    "make_workers",
    "parse_workers",
]

LOAD_WINDOW_S = 60.0
"""The span over which `Workers.load` measures the workers' busy time."""


@dataclass(frozen=True)
class PoolLoad:
    """The workers' busy time over a recent span: `busy_s` seconds of work done by all
    `workers` in the last `span_s` seconds (less than asked while the pool is young), the
    longest wait for a worker among the jobs started in it, and how many games those jobs
    served (`games`: 0 when unknown)."""

    workers: int
    busy_s: float
    span_s: float
    max_wait_s: float
    games: int = 0
    by_game: Mapping[str, float] | None = None
    """The busy seconds of each game served (None when unknown)."""

    @property
    def utilisation(self) -> float:
        """The busy share of the workers' time (0 when nothing was measured)."""
        return self.busy_s / (self.span_s * self.workers) if self.span_s > 0 else 0.0

    def utilisation_of(self, games: Container[str]) -> float:
        """The busy share of the workers' time spent on `games` (all of it when the split by
        game is unknown)."""
        if self.by_game is None:
            return self.utilisation
        busy = sum(b for g, b in self.by_game.items() if g in games)
        return busy / (self.span_s * self.workers) if self.span_s > 0 else 0.0


class Workers(Protocol):
    """The pool's interface (`ProcessWorkers`, `ThreadWorkers`, `RayWorkers`)."""

    async def submit(self, job: Job, limit_s: float) -> JobResult:
        """Run `job` on the game's worker within `limit_s` seconds (from when it starts);
        raise WorkerLost when the worker hung past it or died (it is replaced)."""
        ...

    def stats(self) -> WorkerStats:
        """The pool's counters."""
        ...

    def load(self, window_s: float = LOAD_WINDOW_S) -> PoolLoad:
        """How busy the workers were over the last `window_s` seconds."""
        ...

    async def close(self) -> None:
        """Stop every worker."""
        ...


@dataclass
class _Pending:
    job: Job
    limit_s: float
    future: asyncio.Future[JobResult]
    queued: float = field(default_factory=time.monotonic)


class _Slot(Protocol):
    index: int

    async def start(self) -> None: ...

    async def run(self, job: Job, limit_s: float) -> JobResult: ...

    async def replace(self) -> None: ...

    async def stop(self) -> None: ...


class _Pool:
    """The queueing and assignment shared by the backends: one FIFO per worker, games
    assigned to the worker with the fewest games, a consumer task per worker."""

    def __init__(self, slots: list[_Slot]) -> None:
        if not slots:
            raise WorkerError("a pool needs at least one worker")
        self._slots = slots
        self._queues: list[asyncio.Queue[_Pending]] = [asyncio.Queue() for _ in slots]
        self._home: dict[str, int] = {}
        self._load = [0] * len(slots)
        self._tasks: list[asyncio.Task[None]] = []
        self._replaced = 0
        self._jobs = 0
        self._waits: list[float] = []
        self._running = 0
        self._max_running = 0
        self._started = False
        self._start_lock = asyncio.Lock()
        self._born = time.monotonic()
        # (end, seconds of work, wait before it) of recent jobs, oldest first (`load`)
        self._recent: collections.deque[tuple[float, float, float, str]] = collections.deque()

    async def start(self) -> None:
        """Start every worker now (each warms its engine), instead of at the first job."""
        await self._ensure()

    async def _ensure(self) -> None:
        async with self._start_lock:
            if self._started:
                return
            await asyncio.gather(*(slot.start() for slot in self._slots))
            self._tasks = [asyncio.get_running_loop().create_task(self._consume(i))
                           for i in range(len(self._slots))]
            self._started = True

    def _assign(self, game: str) -> int:
        home = self._home.get(game)
        if home is None:
            home = min(range(len(self._slots)),
                       key=lambda i: (self._load[i], self._queues[i].qsize(), i))
            self._home[game] = home
            self._load[home] += 1
        return home

    def _release(self, game: str) -> None:
        home = self._home.pop(game, None)
        if home is not None:
            self._load[home] -= 1

    async def submit(self, job: Job, limit_s: float) -> JobResult:
        await self._ensure()
        home = self._assign(job.game)
        fut: asyncio.Future[JobResult] = asyncio.get_running_loop().create_future()
        await self._queues[home].put(_Pending(job, limit_s, fut))
        try:
            return await fut
        finally:
            if job.kind is JobKind.END:
                self._release(job.game)

    async def _consume(self, i: int) -> None:
        queue = self._queues[i]
        while True:
            item = await queue.get()
            if item.future.done():  # the caller gave up (cancelled)
                continue
            wait = time.monotonic() - item.queued
            self._waits.append(wait)
            if len(self._waits) > 100_000:
                del self._waits[: len(self._waits) // 2]
            self._jobs += 1
            self._running += 1
            self._max_running = max(self._max_running, self._running)
            try:
                result = await self._slots[i].run(item.job, item.limit_s)
            except WorkerLost as exc:
                self._running -= 1
                self._replaced += 1
                log.warning("worker %d lost (%s); replacing it", i, exc)
                # its games stay assigned to it: the new worker answers `missing`, and each
                # replays its transcript at its next job
                try:
                    await self._slots[i].replace()
                except Exception as rexc:  # pragma: no cover - a failed restart is logged
                    log.error("worker %d could not be replaced: %s", i, rexc)
                if not item.future.done():
                    item.future.set_exception(exc)
                continue
            except Exception as exc:  # pragma: no cover - a backend bug: fail the job only
                self._running -= 1
                if not item.future.done():
                    item.future.set_exception(exc)
                continue
            self._running -= 1
            self._note(wait, time.monotonic() - item.queued - wait, item.job.game)
            if not item.future.done():
                item.future.set_result(result)

    def _note(self, wait: float, work: float, game: str) -> None:
        now = time.monotonic()
        self._recent.append((now, work, wait, game))
        while self._recent and self._recent[0][0] < now - 4 * LOAD_WINDOW_S:
            self._recent.popleft()

    def load(self, window_s: float = LOAD_WINDOW_S) -> PoolLoad:
        """The workers' busy time over the last `window_s` seconds (`PoolLoad`); a job
        counts by its end, so a long one may count whole in a short window."""
        now = time.monotonic()
        since = now - window_s
        span = min(window_s, now - self._born)
        busy = wait = 0.0
        games: dict[str, float] = {}
        for end, work, w, game in reversed(self._recent):
            if end < since:
                break
            busy += work
            wait = max(wait, w)
            games[game] = games.get(game, 0.0) + work
        return PoolLoad(len(self._slots), busy, span, wait, len(games), games)

    def stats(self) -> WorkerStats:
        waits = tuple(self._waits)
        return WorkerStats(len(self._slots), self._replaced, self._jobs,
                           max(waits, default=0.0), self._max_running, len(self._home), waits)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # asyncio.wait, not `await task`: awaiting a cancelled task raises CancelledError
            # in the caller, which an anyio cancel scope around it (Starlette's lifespan) takes
            # for its own cancellation and then cancels the stop of the workers below
            await asyncio.wait(self._tasks, timeout=10)
        await asyncio.gather(*(slot.stop() for slot in self._slots), return_exceptions=True)


# --- processes -------------------------------------------------------------------------------


class _ProcessSlot:
    """One worker process and its pipe; killed with its group and restarted on demand."""

    def __init__(self, index: int, init: str | None, warm: str | None, max_hosted: int,
                 start_timeout_s: float) -> None:
        self.index = index
        self._init = init
        self._warm = warm
        self._max_hosted = max_hosted
        self._start_timeout = start_timeout_s
        self._proc: Any = None
        self._conn: Any = None
        self.pid: int | None = None

    async def start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_process_main, name=f"caligo-worker-{self.index}",
                           args=(child, self.index, self._init, self._warm, self._max_hosted),
                           daemon=True)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        ok = await asyncio.to_thread(parent.poll, self._start_timeout)
        if not ok:
            self._kill()
            raise WorkerLost(f"worker {self.index} did not start within "
                             f"{self._start_timeout:g} s")
        try:
            _ready, pid = await asyncio.to_thread(parent.recv)
        except (EOFError, OSError) as exc:
            self._kill()
            raise WorkerLost(f"worker {self.index} died while starting: {exc}") from None
        self.pid = int(pid)

    def _exchange(self, job: Job, limit_s: float) -> JobResult:
        conn = self._conn
        try:
            conn.send(job)
            if not conn.poll(limit_s):
                raise WorkerLost(f"worker {self.index} did not answer within {limit_s:.1f} s "
                                 f"(game {job.game}, {job.kind.value})")
            result: JobResult = conn.recv()
            return result
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = None if self._proc is None else self._proc.exitcode
            raise WorkerLost(f"worker {self.index} died (exit code {code}): {exc}") from None

    async def run(self, job: Job, limit_s: float) -> JobResult:
        return await asyncio.to_thread(self._exchange, job, limit_s)

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.pid is not None:
            with contextlib.suppress(OSError, ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the worker and its Stockfish processes
        with contextlib.suppress(Exception):
            proc.kill()
        proc.join(timeout=5)
        with contextlib.suppress(Exception):
            self._conn.close()
        self._proc = self._conn = None
        self.pid = None

    async def replace(self) -> None:
        await asyncio.to_thread(self._kill)
        await self.start()

    async def stop(self) -> None:
        def _stop() -> None:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.send(None)
            if self._proc is not None:
                self._proc.join(timeout=5)
            self._kill()

        await asyncio.to_thread(_stop)


class ProcessWorkers(_Pool):
    """`n` worker processes (spawn). `init`: "module:function" run in each worker first (to
    register agents); `warm`: an agent spec each worker starts a game with before serving (its
    kernels load, its Stockfish processes start)."""

    def __init__(self, n: int, init: str | None = None, warm: str | None = None,
                 max_hosted: int = MAX_HOSTED, start_timeout_s: float = 300.0) -> None:
        super().__init__([_ProcessSlot(i, init, warm, max_hosted, start_timeout_s)
                          for i in range(n)])

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests and benchmarks)."""
        return [s.pid for s in self._slots if isinstance(s, _ProcessSlot) and s.pid]

    async def kill(self, index: int) -> None:
        """Kill worker `index` (tests: a worker that dies is replaced at its next job)."""
        slot = self._slots[index]
        assert isinstance(slot, _ProcessSlot)
        await asyncio.to_thread(slot._kill)


# --- threads ---------------------------------------------------------------------------------


class _ThreadSlot:
    """A worker in the caller's process: one thread, one `Host`; a hung thread is abandoned
    (its resources closed, so a call it waits on fails) and a new one takes its place."""

    def __init__(self, index: int, warm: str | None, max_hosted: int) -> None:
        self.index = index
        self._warm = warm
        self._max_hosted = max_hosted
        self._host: Host | None = None
        self._pool: ThreadPoolExecutor | None = None

    async def start(self) -> None:
        self._host = Host(self.index, self._max_hosted)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"caligo-worker-{self.index}")
        host = self._host
        await asyncio.get_running_loop().run_in_executor(self._pool, _warm, host, self._warm)

    async def run(self, job: Job, limit_s: float) -> JobResult:
        assert self._host is not None and self._pool is not None
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._pool, self._host.handle, job)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), limit_s)
        except TimeoutError:
            raise WorkerLost(f"worker {self.index} did not answer within {limit_s:.1f} s "
                             f"(game {job.game}, {job.kind.value})") from None

    async def replace(self) -> None:
        old_host, old_pool = self._host, self._pool
        if old_host is not None:
            threading.Thread(target=old_host.close, daemon=True).start()
        if old_pool is not None:
            old_pool.shutdown(wait=False)
        await self.start()

    async def stop(self) -> None:
        host, pool = self._host, self._pool
        if pool is not None:
            pool.shutdown(wait=True)
        if host is not None:
            await asyncio.to_thread(host.close)


class ThreadWorkers(_Pool):
    """`n` workers as threads of this process (module docstring)."""

    def __init__(self, n: int, warm: str | None = None, max_hosted: int = MAX_HOSTED) -> None:
        super().__init__([_ThreadSlot(i, warm, max_hosted) for i in range(n)])


# --- Ray -------------------------------------------------------------------------------------


class _RayHost:
    """The Ray actor: a `Host` in a Ray worker process."""

    def __init__(self, index: int, init: str | None, warm: str | None,
                 max_hosted: int) -> None:
        _run_init(init)
        self.host = Host(index, max_hosted)
        _warm(self.host, warm)

    def handle(self, job: Job) -> JobResult:
        return self.host.handle(job)

    def close(self) -> None:
        self.host.close()


class _RaySlot:
    def __init__(self, index: int, init: str | None, warm: str | None, max_hosted: int,
                 actor_class: Any) -> None:
        self.index = index
        self._args = (index, init, warm, max_hosted)
        self._cls = actor_class
        self._actor: Any = None

    async def start(self) -> None:
        import ray

        self._actor = self._cls.remote(*self._args)
        await asyncio.wrap_future(self._actor.__ray_ready__.remote().future())
        del ray

    async def run(self, job: Job, limit_s: float) -> JobResult:
        ref = self._actor.handle.remote(job)
        try:
            result: JobResult = await asyncio.wait_for(asyncio.wrap_future(ref.future()),
                                                       limit_s)
            return result
        except TimeoutError:
            raise WorkerLost(f"Ray worker {self.index} did not answer within {limit_s:.1f} s "
                             f"(game {job.game}, {job.kind.value})") from None
        except Exception as exc:  # the actor died
            raise WorkerLost(f"Ray worker {self.index} failed: {exc}") from None

    async def replace(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self._actor)
        await self.start()

    async def stop(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            await asyncio.wrap_future(self._actor.close.remote().future())
        with contextlib.suppress(Exception):
            ray.kill(self._actor)


class RayWorkers(_Pool):
    """`n` workers as Ray actors, on the cluster at `address` (None: a local instance)."""

    def __init__(self, n: int, address: str | None = None, init: str | None = None,
                 warm: str | None = None, max_hosted: int = MAX_HOSTED) -> None:
        try:
            import ray
        except ImportError:
            raise WorkerError("the Ray workers need the optional extra: pip install "
                              "'caligo[ray]'") from None
        if not ray.is_initialized():
            from caligo.play.backends import start_ray

            start_ray(ray, address, ignore_reinit_error=True, log_to_driver=False,
                      include_dashboard=False)
        actor = ray.remote(num_cpus=1)(_RayHost)
        super().__init__([_RaySlot(i, init, warm, max_hosted, actor) for i in range(n)])


# --- choosing a backend ----------------------------------------------------------------------


def default_count() -> int:
    """Workers for this machine: one per two cores (a search uses a solver and an expander
    thread, and Stockfish), at least one."""
    return max(1, (os.cpu_count() or 2) // 2)


def parse_workers(spec: str) -> tuple[str, int, str | None]:
    """("processes" | "threads" | "ray", count, Ray address or None) from a pool's text: "N"
    or "processes:N", "threads:N", "ray" or "ray:ADDRESS", "auto" (processes,
    `default_count()`); WorkerError quoting anything else."""
    text = spec.strip() if isinstance(spec, str) else ""
    kind, _, arg = text.partition(":")
    if kind in ("auto", "") and not arg and isinstance(spec, str):
        return "processes", default_count(), None
    if kind == "ray":
        return "ray", default_count(), arg or None
    if kind.isdigit() and not arg:
        kind, arg = "processes", kind
    if kind in ("processes", "threads") and arg.isdigit() and 1 <= int(arg) <= 256:
        return kind, int(arg), None
    raise WorkerError(f"invalid workers {spec!r} (expected auto, N or processes:N with N in "
                      "1..256, threads:N, ray or ray:ADDRESS)")


def make_workers(spec: str, *, init: str | None = None, warm: str | None = None,
                 max_hosted: int = MAX_HOSTED) -> _Pool:
    """A pool from its text (`parse_workers`)."""
    kind, n, address = parse_workers(spec)
    if kind == "ray":
        return RayWorkers(n, address, init, warm, max_hosted)
    if kind == "threads":
        return ThreadWorkers(n, warm, max_hosted)
    return ProcessWorkers(n, init, warm, max_hosted)
