"""`ExternalAgent`: any engine that speaks `caligo-fow` v1 (docs/protocol.md), as a subprocess.

The engine runs as a child process with JSON lines on its stdin/stdout (docs/design.md, "The
referee" `EngineProcess`). Reads have deadlines (`select` on the pipe, never a blocking read), lines
have a size limit, stderr is drained by a thread (its tail is quoted when the engine dies), and the
process is checked with `isready` before every game and restarted if it crashed or stopped answering
(fastchess's `-recover`).

What the engine sends is judged, never trusted: a malformed, oversized or unknown line, a stale
or out-of-order answer is logged with the reason and skipped; an `error` answer to `go`, a
crash or a missed deadline raises an `EngineError` subclass, which the referee turns into a lost
game with that reason (`caligo.play.referee`); an answer outside the legal moves raises
`EngineIllegalMove`.
"""

from __future__ import annotations

import collections
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from caligo.agents.base import Clock, Decision, TimeControl
from caligo.agents.protocol import (
    MAX_LINE_BYTES,
    PROTOCOL,
    VERSION,
    EngineHello,
    EngineMessage,
    ErrorReply,
    Force,
    GameOver,
    Go,
    Hello,
    InfoReply,
    IsReady,
    MoveReply,
    NewGame,
    Observe,
    ProtocolError,
    Quit,
    ReadyOk,
    RefereeMessage,
    ResignReply,
    SetOption,
    UnknownMessage,
    decode_engine_message,
    encode,
    shorten,
)
from caligo.errors import CaligoError
from caligo.fow.observation import Observation, observe
from caligo.fow.position import from_fen, move_to_uci

log = logging.getLogger(__name__)


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


class _Reader:
    """Line framing on a pipe with deadlines and a size limit (no thread, `select` + `read`)."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._fd = stream.fileno()
        self._buf = bytearray()
        self._limit = limit
        self._skipping = False
        self.eof = False

    def readline(self, deadline: float) -> tuple[str, bytes]:
        """Return ("line", bytes) | ("oversized", prefix) | ("eof", b"") | ("timeout", b"")."""
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
            wait = deadline - time.monotonic()
            if wait <= 0:
                return "timeout", b""
            ready, _, _ = select.select([self._fd], [], [], wait)
            if not ready:
                return "timeout", b""
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                self.eof = True
            self._buf.extend(chunk)


class EngineProcess:
    """A `caligo-fow` engine subprocess: start, send, receive with a deadline, stop."""

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
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
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
        self._reader = _Reader(self._proc.stdout, self._max_line)
        self._stderr.clear()
        self._drainer = threading.Thread(
            target=self._drain, args=(self._proc.stderr,), daemon=True, name=f"{self.name}-stderr"
        )
        self._drainer.start()

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            for raw in iter(stream.readline, b""):
                text = raw.decode("utf-8", "replace").rstrip()
                self._stderr.append(text)
                log.debug("engine %s stderr: %s", self.name, text)
        except (OSError, ValueError):  # `stop` closed the pipe under us: nothing more to read
            pass

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
        tail = " | ".join(list(self._stderr)[-3:])
        status = "still running" if code is None else f"exit code {code}"
        return f"{status}; stderr: {tail!r}" if tail else status

    def send(self, message: RefereeMessage) -> None:
        """Write one message line; raise EngineCrashed if the pipe is closed."""
        if self._proc is None or self._proc.stdin is None:
            raise EngineCrashed(f"engine {self.name} is not running")
        line = encode(message)
        log.debug("-> %s: %s", self.name, line.rstrip())
        try:
            self._proc.stdin.write(line.encode("utf-8"))
        except (BrokenPipeError, ValueError, OSError):
            time.sleep(0.01)
            raise EngineCrashed(
                f"engine {self.name} closed its input ({self.crash_detail()})"
            ) from None

    def receive(self, deadline: float) -> EngineMessage | UnknownMessage:
        """Return the next valid message before `deadline` (monotonic seconds).

        Malformed and oversized lines are logged and skipped. Raise EngineTimeout at the
        deadline and EngineCrashed at end of output.
        """
        assert self._reader is not None
        while True:
            kind, data = self._reader.readline(deadline)
            if kind == "timeout":
                raise EngineTimeout(f"engine {self.name}: no answer before the deadline")
            if kind == "eof":
                if self._proc is not None:
                    try:
                        self._proc.wait(timeout=1.0)
                    except subprocess.TimeoutExpired:
                        pass
                raise EngineCrashed(f"engine {self.name} stopped ({self.crash_detail()})")
            if kind == "oversized":
                log.warning(
                    "engine %s: skipped a line longer than %d bytes: %s",
                    self.name,
                    self._max_line,
                    shorten(data),
                )
                continue
            log.debug("<- %s: %s", self.name, data[:300])
            try:
                return decode_engine_message(data)
            except ProtocolError as exc:
                log.warning("engine %s: skipped a bad line: %s", self.name, exc)

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
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._proc = None


@dataclass(frozen=True)
class ExternalSettings:
    """How an `ExternalAgent` runs its process: display name, directory, environment, timeouts.

    `move_timeout_s` bounds a `go` whose clock carries no deadline (outside the referee).
    """

    name: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    handshake_timeout_s: float = 10.0
    ready_timeout_s: float = 5.0
    move_timeout_s: float = 60.0


class ExternalAgent:
    """An `Agent` backed by an engine process speaking `caligo-fow` v1.

    `options` are sent as `setoption` after the handshake. The process starts at construction
    (or lazily with `start=False`), is checked with `isready` at every `new_game` and restarted
    when it died or stopped answering.
    """

    def __init__(
        self,
        command: Sequence[str],
        options: Mapping[str, str] | None = None,
        settings: ExternalSettings | None = None,
        start: bool = True,
    ) -> None:
        cfg = settings or ExternalSettings()
        self.process = EngineProcess(command, name=cfg.name, cwd=cfg.cwd, env=cfg.env)
        self.name = self.process.name
        self.options = dict(options or {})
        self.hello: EngineHello | None = None
        self.restarts = 0
        self._handshake_timeout = cfg.handshake_timeout_s
        self._ready_timeout = cfg.ready_timeout_s
        self._move_timeout = cfg.move_timeout_s
        self._games = 0
        self._game = ""
        self._ply = 0
        self._ready_id = 0
        if start:
            self.start()

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the engine, check its protocol version, send the options, wait for readyok."""
        self.process.start()
        self.process.send(Hello())
        deadline = time.monotonic() + self._handshake_timeout
        while True:
            msg = self.process.receive(deadline)
            if isinstance(msg, EngineHello):
                break
            log.warning("engine %s: ignored %s before hello", self.name, _describe(msg))
        if msg.protocol != PROTOCOL or msg.version != VERSION:
            self.process.stop()
            raise EngineProtocolError(
                f"engine {self.name} speaks {msg.protocol!r} version {msg.version!r}; "
                f"the referee speaks {PROTOCOL!r} version {VERSION}"
            )
        self.hello = msg
        if msg.name and msg.name != "?":
            self.name = msg.name
            self.process.name = msg.name
        for key, value in self.options.items():
            self.process.send(SetOption(key, value))
        if not self.is_ready():
            self.process.stop()
            raise EngineTimeout(f"engine {self.name}: no readyok after the handshake")

    def is_ready(self, timeout_s: float | None = None) -> bool:
        """Send `isready` and wait for the matching `readyok`; False on timeout or crash."""
        self._ready_id += 1
        want = self._ready_id
        deadline = time.monotonic() + (self._ready_timeout if timeout_s is None else timeout_s)
        try:
            self.process.send(IsReady(want))
            while True:
                msg = self.process.receive(deadline)
                if isinstance(msg, ReadyOk) and msg.id == want:
                    return True
                log.info(
                    "engine %s: skipped %s while waiting for readyok", self.name, _describe(msg)
                )
        except EngineError as exc:
            log.warning("engine %s: not ready: %s", self.name, exc)
            return False

    def restart(self, reason: str) -> None:
        """Stop the process and start it again."""
        log.warning("engine %s: restarting (%s)", self.name, reason)
        self.restarts += 1
        self.process.stop()
        self.start()

    # --- Agent -------------------------------------------------------------------------------

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Check the engine (restart it if needed) and send `newgame`."""
        if not self.process.alive():
            self.restart(f"process not running: {self.process.crash_detail()}")
        elif not self.is_ready():
            self.restart("no readyok before the game")
        self._games += 1
        self._game = f"g{self._games}"
        self._ply = 0
        initial: Observation = observe(from_fen(start_fen), color)
        self.process.send(NewGame(self._game, color, start_fen, seed, time_control, initial))

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Send `observe` for the next ply."""
        self._ply += 1
        own = None if own_move is None else move_to_uci(own_move)
        self.process.send(Observe(self._game, self._ply, own, observation))

    def force(self, move: int) -> None:
        """Send `force` for the next ply."""
        self.process.send(Force(self._game, self._ply + 1, move_to_uci(move)))

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Send `go` and wait for the engine's `move` until the clock's deadline."""
        ply = self._ply + 1
        by_uci = {move_to_uci(m): int(m) for m in legal}
        self.process.send(Go(self._game, ply, tuple(by_uci), clock))
        wait_s = self._move_timeout if clock.deadline_ms is None else clock.deadline_ms / 1000.0
        deadline = time.monotonic() + wait_s
        while True:
            try:
                msg = self.process.receive(deadline)
            except EngineTimeout:
                raise EngineTimeout(
                    f"engine {self.name}: no move for ply {ply} within {wait_s * 1000:.0f} ms"
                ) from None
            if isinstance(msg, MoveReply) and msg.game == self._game and msg.ply == ply:
                return self._decision(msg, by_uci)
            if isinstance(msg, ResignReply) and msg.game == self._game and msg.ply == ply:
                return Decision.resignation()
            if isinstance(msg, ErrorReply) and msg.game in (None, self._game):
                raise EngineProtocolError(
                    f"engine {self.name} reported an error at ply {ply}: {msg.message!r}"
                )
            if isinstance(msg, InfoReply):
                log.debug("engine %s info: %s", self.name, dict(msg.info))
                continue
            log.warning(
                "engine %s: skipped %s while waiting for the move of ply %d",
                self.name,
                _describe(msg),
                ply,
            )

    def _decision(self, msg: MoveReply, by_uci: Mapping[str, int]) -> Decision:
        move = by_uci.get(msg.move)
        if move is None:
            raise EngineIllegalMove(
                f"engine {self.name} answered {msg.move!r}, not a legal move at ply {msg.ply}",
                msg.move,
            )
        policy = {by_uci[u]: p for u, p in msg.policy.items() if u in by_uci}
        try:
            return Decision(move, policy=policy, value=msg.value, info=dict(msg.info))
        except (TypeError, ValueError) as exc:  # cannot happen for decoded JSON, but be safe
            log.warning("engine %s: dropped diagnostics: %s", self.name, exc)
            return Decision(move)

    def game_over(self, result: str, termination: str) -> None:
        """Send `gameover` (a dead engine is not an error any more: the game is decided)."""
        if self.process.alive():
            try:
                self.process.send(GameOver(self._game, result, termination))
            except EngineError as exc:
                log.info("engine %s: %s", self.name, exc)

    def close(self) -> None:
        """Send `quit` and stop the process."""
        self.process.stop()

    def __enter__(self) -> ExternalAgent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _describe(msg: EngineMessage | UnknownMessage) -> str:
    if isinstance(msg, UnknownMessage):
        return f"unknown message type {msg.type!r}"
    return f"{type(msg).__name__} {shorten(msg.to_wire(), 120)}"


__all__ = [
    "EngineCrashed",
    "EngineError",
    "EngineIllegalMove",
    "EngineProcess",
    "EngineProtocolError",
    "EngineTimeout",
    "ExternalAgent",
    "ExternalSettings",
]
