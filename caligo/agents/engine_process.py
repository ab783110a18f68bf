"""An engine process speaking `caligo-fow` over pipes (`caligo.agents.external`): its errors,
the line reader with deadlines and a size limit (no thread: `select` on the pipe, a pidfd on
the process where the OS has one), the bounded stderr tail kept for crash reports, the log of
skipped lines, and `EngineProcess`, which starts the process in its own group, talks to it and
kills the group when it stops."""

from __future__ import annotations

import collections
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import IO

from caligo.agents.protocol import (
    MAX_LINE_BYTES,
    EngineMessage,
    ProtocolError,
    Quit,
    RefereeMessage,
    UnknownMessage,
    decode_engine_message,
    encode,
    shorten,
)
from caligo.errors import CaligoError

log = logging.getLogger("caligo.agents.external")
"""The external engines' one log (`caligo.agents.external` and this module): where a user
filters an engine's skipped lines, restarts and crashes."""


class EngineError(CaligoError):
    """An external engine failed; the message says which engine and why."""


class EngineTimeout(EngineError):
    """The engine did not answer within the deadline."""


class EngineCrashed(EngineError):
    """The engine process exited or closed its pipes (message: exit code and stderr tail)."""


class EngineProtocolError(EngineError):
    """The engine broke the protocol in a way that cannot be skipped (wrong version, error)."""


class EngineIllegalMove(EngineError):
    """The engine answered a move outside the legal list; `uci` is its answer."""

    def __init__(self, message: str, uci: str) -> None:
        super().__init__(message)
        self.uci = uci


POLL_S = 0.05
"""How often a read checks the process where `os.pidfd_open` is unavailable (seconds)."""
STDERR_TAIL_LINES = 20
"""Lines of an engine's stderr kept for crash reports."""
STDERR_LINE_CHARS = 400
"""Longest stderr line kept (longer ones are cut)."""


class SkipKind(Enum):
    """Why a line from an engine was skipped."""

    OVERSIZED = "oversized"
    MALFORMED = "malformed"
    UNKNOWN_TYPE = "unknown type"
    UNEXPECTED = "unexpected"
    """Well-formed, but not what the referee waits for (another game or ply, an old id)."""


class SkipLog:
    """Counts the lines skipped from one engine and logs them without flooding the log.

    The first `first` skipped lines are logged one by one with their reason; after that they
    are only counted, and a summary (how many of each kind) is logged at most every
    `interval_s` seconds and when the engine stops (`flush`). A chatty engine writing a bad line
    per millisecond costs a few log lines a minute, not one warning per line.
    """

    def __init__(
        self,
        name: Callable[[], str],
        first: int = 10,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._name = name
        self.first = first
        self.interval_s = interval_s
        self._clock = clock
        self.total = 0
        self.by_kind: collections.Counter[SkipKind] = collections.Counter()
        self._pending: collections.Counter[SkipKind] = collections.Counter()
        self._since = clock()

    def skip(self, kind: SkipKind, detail: str) -> None:
        """Count one skipped line; log it while fewer than `first` were logged."""
        self.total += 1
        self.by_kind[kind] += 1
        if self.total <= self.first:
            more = (
                f" (further skipped lines are counted and summarised every "
                f"{self.interval_s:.0f} s)"
                if self.total == self.first
                else ""
            )
            log.warning("engine %s: skipped %s%s", self._name(), detail, more)
            self._since = self._clock()
            return
        self._pending[kind] += 1
        if self._clock() - self._since >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        """Log the summary of the lines counted since the last one (nothing if none)."""
        now = self._clock()
        if self._pending:
            count = sum(self._pending.values())
            kinds = ", ".join(f"{n} {k.value}" for k, n in self._pending.most_common())
            log.warning(
                "engine %s: skipped %d more lines in %.0f s (%s; %d in all)",
                self._name(),
                count,
                now - self._since,
                kinds,
                self.total,
            )
            self._pending.clear()
        self._since = now


class _Reader:
    """Line framing on a pipe with deadlines and a size limit (no thread, `select` + `read`).

    With `proc`, a read also watches the process (through a pidfd where the OS has one, else by
    polling every `POLL_S`): when it exits, what it left in the pipe is still returned, then
    "exited" — even if a child of the engine keeps the pipe open, so EOF never comes.
    """

    def __init__(
        self, stream: IO[bytes], limit: int, proc: subprocess.Popen[bytes] | None = None
    ) -> None:
        self._fd = stream.fileno()
        self._buf = bytearray()
        self._limit = limit
        self._skipping = False
        self._proc = proc
        self._pidfd = _pidfd_open(proc.pid) if proc is not None else None
        self._after_exit = 0
        self.eof = False
        self.exited = False

    def close(self) -> None:
        """Release the pidfd."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def _gone(self, ready: list[int]) -> bool:
        if self._proc is None:
            return False
        if self._pidfd is not None:
            return self._pidfd in ready
        return self._proc.poll() is not None

    def readline(self, deadline: float) -> tuple[str, bytes]:
        """Return ("line", bytes) | ("oversized", prefix) | ("eof" | "exited" | "timeout", b"")."""
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                if self._skipping:
                    self._skipping = False
                    continue
                if len(line.rstrip(b"\r")) > self._limit:
                    return "oversized", line[:80]
                return "line", line.rstrip(b"\r")
            if len(self._buf) > self._limit:
                prefix = bytes(self._buf[:80])
                self._buf.clear()
                if not self._skipping:
                    self._skipping = True
                    return "oversized", prefix
            if self.eof:
                return "eof", b""
            if self.exited:
                # after the exit, only what is in the pipe now, and not forever: a child that
                # keeps writing cannot hold the referee
                if self._after_exit > 4 * self._limit:
                    return "exited", b""
                wait = 0.0
            else:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return "timeout", b""
                if self._proc is not None and self._pidfd is None:
                    wait = min(wait, POLL_S)
            fds = [self._fd] if self._pidfd is None or self.exited else [self._fd, self._pidfd]
            ready, _, _ = select.select(fds, [], [], wait)
            if self._fd in ready:
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    self.eof = True
                elif self.exited:
                    self._after_exit += len(chunk)
                self._buf.extend(chunk)
            elif self.exited:
                return "exited", b""
            elif self._gone(ready):
                self.exited = True


def _pidfd_open(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits (Linux 5.3+), else None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


class _StderrTail:
    """Drains an engine's stderr in 64 KiB reads and keeps its last lines for crash reports.

    `bytes` and `reads` count what was drained (a chatty engine must not be slowed down by its
    referee: one read per byte, as a raw `readline` does, drains under 1 MB/s). The tail is
    bounded in lines and in characters per line, and so is an unfinished line.
    """

    def __init__(self, name: Callable[[], str]) -> None:
        self._name = name
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.bytes = 0
        self.reads = 0
        self._partial = b""
        self._lock = threading.Lock()

    def run(self, stream: IO[bytes]) -> None:
        """Read `stream` to its end, then close it (the drain thread owns it)."""
        fd = stream.fileno()
        try:
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                self.feed(chunk)
        except OSError:  # the pipe went away under us: nothing more to read
            pass
        finally:
            self.feed(b"\n" if self._partial else b"", count=False)
            stream.close()

    def feed(self, chunk: bytes, count: bool = True) -> None:
        """Add one chunk of output: count it, keep its last complete lines."""
        if count:
            self.bytes += len(chunk)
            self.reads += 1
        parts = (self._partial + chunk).split(b"\n")
        self._partial = parts.pop()[-4 * STDERR_LINE_CHARS :]
        debug = log.isEnabledFor(logging.DEBUG)
        keep = parts if debug else parts[-STDERR_TAIL_LINES:]
        texts = [raw[: 4 * STDERR_LINE_CHARS].decode("utf-8", "replace").rstrip() for raw in keep]
        with self._lock:
            self.lines.extend(t[:STDERR_LINE_CHARS] for t in texts)
        if debug:
            for text in texts:
                log.debug("engine %s stderr: %s", self._name(), text)

    def tail(self, n: int) -> list[str]:
        with self._lock:
            return list(self.lines)[-n:]


class EngineProcess:
    """A `caligo-fow` engine subprocess: start, send, receive with a deadline, stop.

    The engine runs in a session (and process group) of its own: `stop` kills the whole group,
    so processes the engine started (a Stockfish, a shell pipeline) do not outlive it, and an
    engine whose process exits is reported as crashed at once even while a child still holds
    its output open. (A child that moves itself to another session escapes the group; nothing
    short of a container stops that.)
    """

    def __init__(
        self,
        command: Sequence[str],
        name: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        if not command:
            raise EngineError("empty engine command")
        self.command = list(command)
        self.name = name or os.path.basename(self.command[0])
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._max_line = max_line
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: _Reader | None = None
        self.stderr = _StderrTail(lambda: self.name)
        self.skips = SkipLog(lambda: self.name)
        self._drainer: threading.Thread | None = None

    def start(self) -> None:
        """Start the process (stdin/stdout pipes, stderr drained into a tail buffer)."""
        try:
            self._proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=self._env,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            raise EngineCrashed(
                f"engine {self.name}: cannot start {self.command!r}: {exc}"
            ) from None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._reader = _Reader(self._proc.stdout, self._max_line, self._proc)
        self.stderr = _StderrTail(lambda: self.name)
        self._drainer = threading.Thread(
            target=self.stderr.run,
            args=(self._proc.stderr,),
            daemon=True,
            name=f"{self.name}-stderr",
        )
        self._drainer.start()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def alive(self) -> bool:
        """Return True while the process runs."""
        return self._proc is not None and self._proc.poll() is None

    def crash_detail(self) -> str:
        """Exit status and the tail of stderr, for error messages."""
        code = None if self._proc is None else self._proc.poll()
        if code is not None and self._drainer is not None:
            # the process is gone: let the drain thread read its last words (up to EOF) first,
            # or a loaded machine quotes an empty tail
            self._drainer.join(timeout=1.0)
        tail = " | ".join(self.stderr.tail(3))
        status = "still running" if code is None else f"exit code {code}"
        return f"{status}; stderr: {tail!r}" if tail else status

    def send(self, message: RefereeMessage) -> None:
        """Write one message line; raise EngineCrashed if the pipe is closed."""
        self.send_line(encode(message))

    def send_line(self, line: str) -> None:
        """Write one raw protocol line (newline added if missing); raise EngineCrashed."""
        if self._proc is None or self._proc.stdin is None:
            raise EngineCrashed(f"engine {self.name} is not running")
        if not line.endswith("\n"):
            line += "\n"
        log.debug("-> %s: %s", self.name, line.rstrip())
        try:
            self._proc.stdin.write(line.encode("utf-8"))
        except (BrokenPipeError, ValueError, OSError):
            time.sleep(0.01)
            raise EngineCrashed(
                f"engine {self.name} closed its input ({self.crash_detail()})"
            ) from None

    def skipped(self, kind: SkipKind, detail: str) -> None:
        """Count one skipped line (logged as `SkipLog` allows)."""
        self.skips.skip(kind, detail)

    def receive(self, deadline: float) -> EngineMessage:
        """Return the next valid message before `deadline` (monotonic seconds).

        Malformed, oversized and unknown lines are skipped and counted (`skips`). Raise
        EngineTimeout at the deadline and EngineCrashed when the process exits or closes its
        output.
        """
        assert self._reader is not None
        while True:
            kind, data = self._reader.readline(deadline)
            if kind == "timeout":
                raise EngineTimeout(f"engine {self.name}: no answer before the deadline")
            if kind in ("eof", "exited"):
                proc = self._proc
                if proc is not None:
                    try:
                        proc.wait(timeout=1.0)
                    except subprocess.TimeoutExpired:
                        pass
                    if kind == "exited":  # what it left running only holds the pipes open
                        _kill_group(proc)
                what = "exited" if kind == "exited" else "stopped"
                raise EngineCrashed(f"engine {self.name} {what} ({self.crash_detail()})")
            if kind == "oversized":
                self.skipped(
                    SkipKind.OVERSIZED,
                    f"a line longer than {self._max_line} bytes: {shorten(data)}",
                )
                continue
            log.debug("<- %s: %s", self.name, data[:300])
            try:
                msg = decode_engine_message(data)
            except ProtocolError as exc:
                self.skipped(SkipKind.MALFORMED, f"a bad line: {exc}")
                continue
            if isinstance(msg, UnknownMessage):
                self.skipped(SkipKind.UNKNOWN_TYPE, f"unknown message type {msg.type!r}")
                continue
            return msg

    def stop(self, timeout: float = 1.0) -> None:
        """Send `quit`, wait up to `timeout` seconds, then kill the process group."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                self.send(Quit())
                proc.wait(timeout=timeout)
            except (EngineError, subprocess.TimeoutExpired):
                pass
        _kill_group(proc)  # the engine's children too, whether or not it exited by itself
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):  # stderr belongs to the drain thread
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if self._reader is not None:
            self._reader.close()
        if self._drainer is not None:
            self._drainer.join(timeout=timeout)
        self.skips.flush()
        self._proc = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group `proc` leads (`start_new_session`): the engine and its children.

    The group id is the leader's pid, which the kernel does not hand out again while any member
    of the group lives; once the group is empty the call finds nothing.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
