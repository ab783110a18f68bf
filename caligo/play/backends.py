"""Where a match's pairs run: inline, a local process pool (default), or Ray actors.

Every backend has the same small interface used by `caligo.play.runner.run_match`: `submit` a
`PairSpec`, ask how many are `pending`, take the `next_result` as it finishes (a `PairResult`
or the exception that failed the pair), `cancel_pending` pairs that have not started (SPRT
stop) and `close`. Each worker is a `PairWorker` that keeps its engines warm between pairs.

- `InlineBackend`: concurrency 1 runs pairs in the calling process (no start-up cost).
- `PoolBackend`: `concurrent.futures.ProcessPoolExecutor` with the `spawn` start method; a
  worker process holds one `PairWorker` and closes its engines when the pool shuts down.
- `RayBackend` (`pip install caligo[ray]`): one actor per worker reserving `cpus_per_pair` CPUs
  (1 by default; an engine's threads at the paper's scale need more), so a game's two engines
  share a node; `RAY_ADDRESS` or `--address` picks the cluster (a local
  instance otherwise); pending pairs are cancelled with `ray.cancel`. Ray needs the Caligo venv
  (and Stockfish, for engines that use it) on every node.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import multiprocessing.util
import os
import socket
from collections import deque
from typing import Any, Protocol

from caligo.play.errors import MatchConfigError, PlayError
from caligo.play.match import Backend, MatchConfig, PairResult, PairSpec, PairWorker

log = logging.getLogger(__name__)


class PairBackend(Protocol):
    """What `run_match` needs from a backend."""

    def submit(self, spec: PairSpec) -> None: ...

    def pending(self) -> int: ...

    def next_result(self) -> tuple[PairSpec, PairResult | BaseException]: ...

    def cancel_pending(self) -> int: ...

    def close(self) -> None: ...


class InlineBackend:
    """Play pairs one after the other in this process."""

    def __init__(self) -> None:
        self._worker = PairWorker()
        self._queue: deque[PairSpec] = deque()

    def submit(self, spec: PairSpec) -> None:
        self._queue.append(spec)

    def pending(self) -> int:
        return len(self._queue)

    def next_result(self) -> tuple[PairSpec, PairResult | BaseException]:
        spec = self._queue.popleft()
        try:
            return spec, self._worker.play(spec)
        except Exception as exc:  # a failed pair is reported, then played again
            return spec, exc

    def cancel_pending(self) -> int:
        n = len(self._queue)
        self._queue.clear()
        return n

    def close(self) -> None:
        self._worker.close()


_WORKER: PairWorker | None = None


def _init_worker() -> None:
    global _WORKER
    _WORKER = PairWorker()
    multiprocessing.util.Finalize(None, _WORKER.close, exitpriority=10)


def _play_in_worker(spec: PairSpec) -> PairResult:
    assert _WORKER is not None
    return _WORKER.play(spec)


class PoolBackend:
    """Pairs in a `spawn` process pool of `workers` processes."""

    def __init__(self, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker)
        self._futures: dict[cf.Future[PairResult], PairSpec] = {}

    def submit(self, spec: PairSpec) -> None:
        self._futures[self._pool.submit(_play_in_worker, spec)] = spec

    def pending(self) -> int:
        return len(self._futures)

    def next_result(self) -> tuple[PairSpec, PairResult | BaseException]:
        done, _ = cf.wait(self._futures, return_when=cf.FIRST_COMPLETED)
        future = next(iter(done))
        spec = self._futures.pop(future)
        exc = future.exception()
        if isinstance(exc, cf.process.BrokenProcessPool):
            raise PlayError(f"a worker process died while playing pair {spec.index + 1}: {exc}")
        return spec, exc if exc is not None else future.result()

    def cancel_pending(self) -> int:
        cancelled = [f for f in self._futures if f.cancel()]
        for f in cancelled:
            del self._futures[f]
        return len(cancelled)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def start_ray(ray: Any, address: str | None, **kwargs: Any) -> None:
    """`ray.init`, with the workers of a local instance at normal priority.

    Ray starts its worker processes at niceness 15 (`RAY_worker_niceness`); on a machine with
    other work running, timed games in such a worker get a sliver of a core and lose on time
    (a two-pair Ray match under two busy loops had not finished after ten minutes). An instance
    we start runs its workers at 0 unless the user set the variable; a cluster we join keeps
    its own setting.
    """
    if address is None:
        os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(address=address, **kwargs)


PROBE_TIMEOUT_S = 5.0


def probe_ray_address(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """MatchConfigError unless `address` ("host:port" or "ray://host:port"; "auto" and "local"
    are left to Ray) accepts a TCP connection within `timeout_s`: `ray.init` retries an
    unreachable cluster for about two minutes before it fails."""
    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not (port.isascii() and port.isdigit() and len(port) <= 5) or not (
            0 < int(port) < 65536):
        raise MatchConfigError(f"Ray address {address!r}: expected host:port, ray://host:port, "
                               "auto or local")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise MatchConfigError(f"Ray address {address!r} does not answer: {exc}") from None


class RayBackend:
    """Pairs on Ray actors, at most two in flight per actor (one running, one queued)."""

    def __init__(self, workers: int, address: str | None = None, cpus: int = 1) -> None:
        try:
            import ray
        except ImportError:
            raise MatchConfigError(
                "--backend ray needs the optional Ray extra: pip install 'caligo[ray]'"
            ) from None
        self._ray: Any = ray
        address = address or os.environ.get("RAY_ADDRESS") or None
        self._started = not ray.is_initialized()
        if self._started:
            if address is not None:
                probe_ray_address(address)
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                kwargs["num_cpus"] = max(workers * cpus, os.cpu_count() or 1)
            start_ray(ray, address, **kwargs)
        largest = max((float(n["Resources"].get("CPU", 0.0)) for n in ray.nodes()
                       if n.get("Alive")), default=0.0)
        if cpus > largest:  # its actors would wait for a node forever
            if self._started:
                ray.shutdown()
            raise MatchConfigError(f"cpus per pair {cpus}: no node of the Ray cluster has that "
                                   f"many CPUs (the largest has {largest:g})")
        actor_class = ray.remote(num_cpus=cpus)(_RayPairWorker)
        self._actors: list[Any] = [actor_class.remote() for _ in range(workers)]
        self._inflight: list[deque[Any]] = [deque() for _ in self._actors]
        self._refs: dict[Any, tuple[int, PairSpec]] = {}

    def submit(self, spec: PairSpec) -> None:
        i = min(range(len(self._actors)), key=lambda j: len(self._inflight[j]))
        ref = self._actors[i].play.remote(spec)
        self._inflight[i].append(ref)
        self._refs[ref] = (i, spec)

    def pending(self) -> int:
        return len(self._refs)

    def next_result(self) -> tuple[PairSpec, PairResult | BaseException]:
        ray = self._ray
        ready, _ = ray.wait(list(self._refs), num_returns=1)
        ref = ready[0]
        i, spec = self._refs.pop(ref)
        self._inflight[i].remove(ref)
        try:
            return spec, ray.get(ref)
        except Exception as exc:  # RayTaskError wraps the pair's failure
            return spec, exc

    def cancel_pending(self) -> int:
        n = 0
        for queue in self._inflight:
            for ref in list(queue)[1:]:  # the first of each actor is running: it finishes
                self._ray.cancel(ref)
                queue.remove(ref)
                del self._refs[ref]
                n += 1
        return n

    def close(self) -> None:
        ray = self._ray
        try:
            ray.get([a.close.remote() for a in self._actors], timeout=30)
        except Exception as exc:  # closing is best effort
            log.warning("closing Ray workers: %s", exc)
        for actor in self._actors:
            ray.kill(actor)
        if self._started:
            ray.shutdown()


class _RayPairWorker(PairWorker):
    """`PairWorker` as a Ray actor class (wrapped with `ray.remote` at run time)."""


def make_backend(config: MatchConfig) -> PairBackend:
    """The backend `config` asks for."""
    if config.backend is Backend.RAY:
        return RayBackend(config.concurrency, config.address, config.cpus_per_pair)
    if config.concurrency == 1:
        return InlineBackend()
    return PoolBackend(config.concurrency)


__all__ = ["InlineBackend", "PairBackend", "PoolBackend", "RayBackend", "make_backend"]
