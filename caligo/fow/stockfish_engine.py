"""One Stockfish process (`caligo.fow.stockfish`): where the binary is, its settings, its
errors, and `StockfishEngine`, which starts the process, pipelines `go` commands and reads the
answers, and restarts it when it dies or hangs. The pools over engines are in
`caligo.fow.stockfish`."""

from __future__ import annotations

import logging
import math
import os
import select
import shutil
import subprocess
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from caligo.errors import CaligoError

logger = logging.getLogger(__name__)

DEBIAN_DIR = "/usr/games"
"""Where Debian's `stockfish` package installs the binary (not on every PATH)."""

PIPELINE = 64
"""Positions per pipelined write: about 6 KB of commands, so the write never blocks on a full
pipe (64 KB) while the engine waits for us to read its answers."""
class StockfishError(CaligoError):
    """Stockfish could not be started or kept answering; the message says what happened."""


class StockfishNotFoundError(StockfishError, FileNotFoundError):
    """No Stockfish executable where it was looked for."""


class _EngineFailure(Exception):
    """Internal: the process died, hung or refused; the caller restarts and retries."""


@dataclass(frozen=True)
class StockfishConfig:
    """How to run Stockfish. Defaults are Obscuro, appendix C.5's setting on one core per engine."""

    path: str | None = None
    """Executable; None: `stockfish` on PATH, then Debian's /usr/games/stockfish."""
    hash_mb: int = 1
    threads: int = 1
    multipv: int = 256
    depth: int = 1
    scale_cp: float = 600.0
    """tau of tanh(cp / tau), Zhang & Sandholm 2021, appendix D.1 (6 pawns)."""
    call_timeout_s: float = 2.0
    """Longest wait for one answer before the engine counts as hung."""
    start_timeout_s: float = 20.0
    max_retries: int = 3
    """Restarts per call before falling back to the built-in evaluator."""
    cache_entries: int = 50_000
    """Entries of each LRU cache (leaves, single positions); 0 turns caching off."""
    max_engines: int = 16
    """At most this many processes (one per calling thread)."""
    own_call_cap: int | None = None
    """At most this many own calls per leaf; None: no cap (every child is Stockfish's). Past
    the cap, in move order, children get the built-in evaluator's value. A leaf whose side to
    move can capture the king needs an own call per child, and its other moves are all
    dominated by the capture; opowell's engine caps these calls at 8 (docs/design.md, "Leaf values
    and Stockfish")."""

    def __post_init__(self) -> None:
        for name in ("hash_mb", "threads", "multipv", "depth", "max_engines"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"StockfishConfig.{name} must be an int >= 1: {value!r}")
        for name in ("max_retries", "cache_entries"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"StockfishConfig.{name} must be an int >= 0: {value!r}")
        for name in ("scale_cp", "call_timeout_s", "start_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
                raise ValueError(f"StockfishConfig.{name} must be a number > 0: {value!r}")
        if self.own_call_cap is not None and (
            not isinstance(self.own_call_cap, int) or self.own_call_cap < 0
        ):
            raise ValueError(f"StockfishConfig.own_call_cap must be None or an int >= 0: "
                             f"{self.own_call_cap!r}")
        if self.path is not None and not isinstance(self.path, str):
            raise ValueError(f"StockfishConfig.path must be a string: {self.path!r}")


def find_stockfish(path: str | None = None) -> str:
    """Return the Stockfish executable: `path`, else `stockfish` on PATH, else Debian's."""
    if path is not None:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise StockfishNotFoundError(f"no Stockfish executable at {path!r}")
    found = shutil.which("stockfish") or shutil.which("stockfish", path=DEBIAN_DIR)
    if found is None:
        raise StockfishNotFoundError(
            f"stockfish not found on PATH or in {DEBIAN_DIR}; install Debian's `stockfish`"
        )
    return found


# --- one engine process ----------------------------------------------------------------------


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process and reap it (also when stopped); close its pipes."""
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            logger.error("Stockfish pid %d did not die after SIGKILL", proc.pid)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


class StockfishEngine:
    """One Stockfish process over raw UCI pipes. Not thread-safe: one per thread (the pool)."""

    def __init__(self, path: str, config: StockfishConfig) -> None:
        self.path = path
        self.config = config
        self.restarts = 0
        self.calls = 0
        self.seconds = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None  # type: ignore[type-arg]
        self._buf = bytearray()
        self._closed = False
        # one request at a time: a slot's engine may be asked from two threads when a move's
        # overdue work still runs as the next job of the same worker starts (caligo.limits)
        self._request = threading.RLock()
        self._run(b"", 0)  # start now: a broken binary shows at once, not mid-search

    @property
    def pid(self) -> int | None:
        """The running process id, None while there is none."""
        return None if self._proc is None else self._proc.pid

    @property
    def closed(self) -> bool:
        """True after `close`."""
        return self._closed

    # pipe I/O ------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Write raw UCI text to the engine's stdin."""
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:  # BrokenPipeError once the process died
            raise _EngineFailure(f"cannot write to the engine: {exc}") from None

    def _read_blocks(self, token: bytes, count: int, timeout: float) -> list[bytes]:
        """Read until `count` lines starting with `token` arrived; return the text up to and
        including each of them. Each block must arrive within `timeout` seconds."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf = self._buf
        blocks: list[bytes] = []
        scan = 0
        deadline = time.monotonic() + timeout
        while len(blocks) < count:
            idx = buf.find(token, scan)
            while idx > 0 and buf[idx - 1] != 10:  # not at a line start
                idx = buf.find(token, idx + 1)
            if idx >= 0:
                end = buf.find(b"\n", idx)
                if end >= 0:
                    blocks.append(bytes(buf[: end + 1]))
                    del buf[: end + 1]
                    scan = 0
                    deadline = time.monotonic() + timeout
                    continue
                scan = idx  # the token's line is still arriving
            else:
                scan = max(0, len(buf) - len(token))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _EngineFailure(f"no {token.decode()!r} within {timeout:g} s (hung)")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _EngineFailure(f"no {token.decode()!r} within {timeout:g} s (hung)")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = self._proc.poll()
                raise _EngineFailure(f"the engine exited (status {code})")
            buf += chunk
        return blocks

    # life cycle ----------------------------------------------------------------------------

    def _start(self) -> None:
        """Start the process and configure it; raise _EngineFailure if it does not answer."""
        self._buf.clear()
        try:
            proc = subprocess.Popen(
                [self.path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
            )
        except OSError as exc:
            raise StockfishError(f"cannot start Stockfish {self.path!r}: {exc}") from exc
        self._proc = proc
        self._finalizer = weakref.finalize(self, _kill, proc)
        cfg = self.config
        self._write(b"uci\n")
        self._read_blocks(b"uciok", 1, cfg.start_timeout_s)
        self._write(
            b"setoption name Hash value %d\n"
            b"setoption name Threads value %d\n"
            b"setoption name MultiPV value %d\n"
            b"ucinewgame\nisready\n" % (cfg.hash_mb, cfg.threads, cfg.multipv)
        )
        self._read_blocks(b"readyok", 1, cfg.start_timeout_s)

    def _stop_process(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps
            self._finalizer = None
        self._proc = None
        self._buf.clear()

    def new_game(self) -> None:
        """Forget the previous game: `ucinewgame` clears Stockfish's hash table and its search
        histories (`Search::clear`), so a depth-limited search answers as a fresh process
        would; restart the process if it does not answer."""
        if self._closed:
            raise StockfishError("the engine was closed")
        if self._proc is None:
            self._run(b"", 0)
            return
        try:
            self._write(b"ucinewgame\nisready\n")
            self._read_blocks(b"readyok", 1, self.config.start_timeout_s)
        except _EngineFailure as exc:
            logger.warning("Stockfish pid %s failed on ucinewgame (%s); restarting", self.pid, exc)
            self.restart()

    def restart(self) -> None:
        """Kill the process and start a new one (history and hash start empty)."""
        self._stop_process()
        self.restarts += 1
        self._start()

    def close(self) -> None:
        """Ask the engine to quit, kill it if it does not within a second; idempotent."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                self._write(b"quit\n")
                proc.wait(timeout=1.0)
            except (_EngineFailure, subprocess.TimeoutExpired):
                pass
        self._stop_process()

    # searching -----------------------------------------------------------------------------

    def search(self, fens: Sequence[bytes], movetime_ms: int | None = None) -> list[bytes]:
        """Run `go depth D` on each FEN (`go depth D movetime T` with a time limit: the first
        one reached stops the search), pipelined; return each raw answer (up to bestmove).

        Commands go out in chunks of `PIPELINE` positions, each chunk written at once and its
        answers read in order (a chunk fits the pipe, so writing it never waits on the engine,
        which may itself be waiting for us to read). A crash or hang restarts the engine and
        repeats the chunk, up to `max_retries` times; then StockfishError.
        """
        if self._closed:
            raise StockfishError("the engine was closed")
        depth = b"go depth %d\n" % self.config.depth
        if movetime_ms is not None:
            depth = b"go depth %d movetime %d\n" % (self.config.depth, max(1, int(movetime_ms)))
        blocks: list[bytes] = []
        for i in range(0, len(fens), PIPELINE):
            chunk = fens[i : i + PIPELINE]
            payload = b"".join(b"position fen " + fen + b"\n" + depth for fen in chunk)
            blocks += self._run(payload, len(chunk))
        self.calls += len(fens)
        return blocks

    def _run(self, payload: bytes, answers: int) -> list[bytes]:
        """Write `payload`, read `answers` bestmove blocks; restart and repeat on failure (one
        request at a time, whichever thread asks)."""
        with self._request:
            return self._run_locked(payload, answers)

    def _run_locked(self, payload: bytes, answers: int) -> list[bytes]:
        failure: _EngineFailure | None = None
        tries = self.config.max_retries + 1
        for attempt in range(tries):
            t = time.perf_counter()
            try:
                if self._proc is None:
                    self._start()
                if not answers:
                    return []
                self._write(payload)
                return self._read_blocks(b"bestmove", answers, self.config.call_timeout_s)
            except _EngineFailure as exc:
                failure = exc
                logger.warning(
                    "Stockfish pid %s failed (%s) on %r; restarting (attempt %d of %d)",
                    self.pid, exc, payload[:100], attempt + 1, tries,
                )
                self._stop_process()
                self.restarts += 1
            finally:
                self.seconds += time.perf_counter() - t
        raise StockfishError(f"Stockfish failed {tries} times on {payload[:100]!r}: {failure}")
