"""`ExternalAgent`: any engine that speaks `caligo-fow` v1 (docs/protocol.md), as a subprocess.

The engine runs as a child process with JSON lines on its stdin/stdout (docs/design.md, "The
referee" `EngineProcess`). Reads have deadlines (`select` on the pipe, never a blocking read), lines
have a size limit, stderr is drained by a thread (its tail is quoted when the engine dies), and the
process is checked with `isready` before every game and restarted if it crashed or stopped answering
(fastchess's `-recover`).

What the engine sends is judged, never trusted: a malformed, oversized or unknown line, a stale
or out-of-order answer is skipped and counted (`SkipLog`: the first few are logged with their
reason, then a counted summary); an `error` answer to `go`, a crash (the process exited, even
while a child of it holds its output open, or it closed its output) or a missed deadline raises
an `EngineError` subclass, which the referee turns into a lost game with that reason
(`caligo.play.referee`); an answer outside the legal moves raises `EngineIllegalMove`. The
engine runs in a process group of its own, killed as a whole when it stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from caligo.agents.base import Clock, Decision, TimeControl
from caligo.agents.engine_process import (
    EngineCrashed,
    EngineError,
    EngineIllegalMove,
    EngineProcess,
    EngineProtocolError,
    EngineTimeout,
    SkipKind,
    SkipLog,
)
from caligo.agents.protocol import (
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
    ReadyOk,
    ResignReply,
    SetOption,
    shorten,
)
from caligo.fow.observation import Observation, observe
from caligo.fow.position import from_fen, move_to_uci

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExternalSettings:
    """How an `ExternalAgent` runs its process: display name, directory, environment, timeouts.

    `move_timeout_s` bounds a `go` whose clock carries no deadline (outside the referee);
    `startup_timeout_s` the engine's per-game start-up (`newgame` until its `readyok`), which
    the referee times apart from the moves; `settle_timeout_s` the engine's work after its own
    move (`observe` of its own ply until its `readyok`), which is on nobody's clock, as an
    in-process agent's `observe` is.
    """

    name: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    handshake_timeout_s: float = 10.0
    ready_timeout_s: float = 5.0
    move_timeout_s: float = 60.0
    startup_timeout_s: float = 120.0
    settle_timeout_s: float = 30.0


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
        self._startup_timeout = cfg.startup_timeout_s
        self._settle_timeout = cfg.settle_timeout_s
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
            self.process.skipped(SkipKind.UNEXPECTED, f"{_describe(msg)} before hello")
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
                self.process.skipped(
                    SkipKind.UNEXPECTED, f"{_describe(msg)} while waiting for readyok {want}"
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
        """Check the engine (restart it if needed), send `newgame`, and wait for the engine to
        be ready for it (`isready` -> `readyok`, as UCI does after `ucinewgame`): the engine's
        per-game start-up happens here, before the referee starts its clock. Raise
        EngineTimeout when it takes longer than the start-up timeout."""
        if not self.process.alive():
            self.restart(f"process not running: {self.process.crash_detail()}")
        elif not self.is_ready():
            self.restart("no readyok before the game")
        self._games += 1
        self._game = f"g{self._games}"
        self._ply = 0
        initial: Observation = observe(from_fen(start_fen), color)
        self.process.send(NewGame(self._game, color, start_fen, seed, time_control, initial))
        if not self.is_ready(self._startup_timeout):
            raise EngineTimeout(f"engine {self.name}: no readyok within "
                                f"{self._startup_timeout:g} s after newgame (start-up)")

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Send `observe` for the next ply; after the engine's own ply, wait for it to take
        the ply in (`isready` -> `readyok`).

        The referee starts the opponent's clock when this returns, so the engine's work after
        its own move (its belief update, pondering) runs on nobody's clock, exactly as an
        in-process agent's `observe` does. Without the wait that work overlapped the
        opponent's move, the engine read its next `go` late and lost on time: 8 of the first 8
        games of an out-of-process match at 0.3 s a move on a busy machine. Raise EngineTimeout
        when the engine takes longer than `settle_timeout_s`."""
        self._ply += 1
        own = None if own_move is None else move_to_uci(own_move)
        self.process.send(Observe(self._game, self._ply, own, observation))
        if own is not None and not self.is_ready(self._settle_timeout):
            raise EngineTimeout(f"engine {self.name}: no readyok within "
                                f"{self._settle_timeout:g} s after observing its own ply "
                                f"{self._ply}")

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
            self.process.skipped(
                SkipKind.UNEXPECTED, f"{_describe(msg)} while waiting for the move of ply {ply}"
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


def _describe(msg: EngineMessage) -> str:
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
    "SkipKind",
    "SkipLog",
]
