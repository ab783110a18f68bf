"""Live games of the web app: a human seat on a WebSocket against an engine in a worker pool.

A `LiveGame` drives the play layer's `GameSession` asynchronously (docs/design.md, "The web app"):

- every frame the browser receives is built by `caligo.web.seat_view.SeatTracker` from the
  session's `project(human)` messages, plus the public clocks;
- the engine seat is an agent hosted by the server's engine workers (`caligo.play.workers`),
  fed from `project(engine)` as jobs: the workers are shared by all games, a game waiting for
  its player holds no process, each worker plays one move at a time (first come, first
  served), a watchdog replaces a worker that hangs, and the event loop never blocks on an
  engine;
- the engine's budget is the game's "strength": a move time (capped by its own clock in a timed
  game, so it never flags: `caligo.agents.timing.strength_clock`) or an iteration budget; its
  clock runs like the human's, and a request that waited for its worker reaches the engine
  with that wait taken off its clock (`Clock.aged`);
- after its move the engine takes in its own move's observation in the background, on the
  human's time (as an engine process ponders), never on its next move's clock;
- every ply goes to the play layer's SQLite `GameStore` (the event log), so a game in progress
  survives a restart: `GameHub.get` rebuilds it by replaying its plies when a seat reconnects;
- a flag timer ends a timed game when the side to move runs out of time.

All changes to one session happen on the event loop under the game's lock; engine diagnostics
go into the stored plies and reach the browser only through the reveal, after the game.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import json
import logging
import random
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from caligo.agents import registry
from caligo.agents.base import (
    COLOR_NAMES,
    UNTIMED,
    Decision,
    TcKind,
    TimeControl,
)
from caligo.agents.protocol import Force, GameOver, Go, NewGame, RefereeMessage
from caligo.agents.timing import strength_clock
from caligo.agents.untrusted_json import UntrustedJsonError, loads_untrusted
from caligo.fow.position import move_to_uci
from caligo.play.errors import IllegalMoveError, SessionError
from caligo.play.session import EndReason, GameSession, SessionConfig
from caligo.play.storage import GameStore
from caligo.play.workers import (
    Job,
    JobKind,
    JobResult,
    WorkerError,
    WorkerLost,
    make_workers,
    parse_workers,
)
from caligo.web.admission import UNKNOWN_CLIENT, RateLimiter
from caligo.web.errors import (
    BadRequestError,
    GameNotFoundError,
    GameRunningError,
    RateLimitError,
    SeatError,
    ServerBusyError,
    WebConfigError,
    WebError,
)
from caligo.web.seat_view import SeatTracker

log = logging.getLogger(__name__)

MAX_INITIAL_MS = 3 * 3600 * 1000
MAX_INCREMENT_MS = 60 * 1000
MAX_MOVETIME_MS = 60 * 1000
MAX_ITERATIONS = 10_000_000
UNTIMED_MOVE_TIMEOUT_MS = 7 * 24 * 3600 * 1000
"""An untimed human may think for days; the session's hang guard must not end the game."""
LAG_MARGIN_MS = 250
"""Grace added to a clock before the flag falls (network lag, as chess.com allows)."""
HUMAN_NAME = "Human"
STARTUP_S = 120.0
"""What an engine's worker may add to a job in which the agent starts (or replays) its game."""
DEFAULT_STRENGTH = TimeControl(TcKind.MOVETIME, movetime_ms=1000)
FIRST_MOVE_MS = 30_000
ADMIT_WINDOW_S = 30.0
"""The span over which the engines' load is measured for admission (`GameHub.engine_full`)."""
ADMIT_WAIT_S = 1.0
"""A recent wait for a worker this long means a queue: no new game until it clears."""
ADMIT_BURST_S = 20.0
"""New games count against `WebConfig.games_per_worker` for this long (their load is then
in the measured span)."""
ADMIT_RETRY_S = 30
"""What a refused creation is told to wait (Retry-After)."""
"""Time each side has for its first move in a timed game before the game is aborted (lichess's
and chess.com's rule: a side's clock starts only after its first move)."""
AGENT_NAMES = {"obscuro": "Obscuro", "zs21": "ZS21", "stockfish-pi": "Stockfish-PI"}
"""How the page names the registry's agents."""
NO_BUDGET_AGENTS = frozenset({"random"})
"""Agents that play the same at any strength: the page offers no strength and names none."""


def uses_strength(agent: str) -> bool:
    """Whether the engine `agent` (a registry spec) plays differently at different strengths."""
    return registry.parse_spec(agent).name not in NO_BUDGET_AGENTS


def strength_text(strength: TimeControl) -> str:
    """A strength in words: "1 s per move", "0.2 s per move", "4,000 search steps"."""
    if strength.kind is TcKind.ITERATIONS:
        return f"{strength.iterations:,} search steps"
    return f"{strength.movetime_ms / 1000:g} s per move"


def engine_label(agent: str, strength: TimeControl) -> str:
    """How the engine is named on the page and in game records: "Caligo (Obscuro, 1 s per
    move)", "Caligo (random moves)" for an agent that ignores the strength."""
    spec = registry.parse_spec(agent)
    if spec.name in NO_BUDGET_AGENTS:
        return f"Caligo ({spec.name} moves)"
    name = AGENT_NAMES.get(spec.name, spec.label)
    return f"Caligo ({name}, {strength_text(strength)})"


class ColorChoice(Enum):
    """The colour a player asks for."""

    WHITE = "white"
    BLACK = "black"
    RANDOM = "random"


@dataclass(frozen=True)
class WebConfig:
    """The server's settings (validated here)."""

    db: str
    agent: str
    workers: str = "threads:1"
    """The engine workers (`caligo.play.workers.make_workers`): "processes:N", "threads:N",
    "ray[:ADDRESS]" or "auto" (`caligo web serve` defaults to "auto": processes)."""
    worker_init: str | None = None
    """"module:function" each worker runs first (registers agents a test defines)."""
    max_live_games: int = 200
    max_message_bytes: int = 4096
    seed: int | None = None
    """Seeds games deterministically (tests); None draws them from the OS."""
    first_move_ms: int = FIRST_MOVE_MS
    """A timed game whose side to move makes no first move within this time is aborted."""
    games_per_minute: int = 10
    """Games one client may create a minute, in bursts of as many (a token bucket); 0: any."""
    games_per_client: int = 3
    """Games of one client live at once (its idle ones are unloaded to make room); 0: any."""
    engine_load: float = 0.0
    """Admission by the engines' load (`GameHub.engine_full`): the share of the workers' time
    the games may ask for, in (0, 1]; 0 turns it off (`caligo web serve` uses 0.7)."""
    games_per_worker: int = 0
    """New games a worker takes within `ADMIT_BURST_S` seconds before any game's load was
    measured (with `engine_load`; once measured, new games are projected at the measured
    share of a game: `GameHub.engine_full`); 0: any."""

    def __post_init__(self) -> None:
        if not (0.0 <= self.engine_load <= 1.0) or self.games_per_worker < 0:
            raise WebConfigError(f"invalid web config: {self!r}")
        if (
            self.max_live_games < 1
            or self.max_message_bytes < 64
            or self.first_move_ms < 1
            or self.games_per_minute < 0
            or self.games_per_client < 0
        ):
            raise WebConfigError(f"invalid web config: {self!r}")
        registry.parse_spec(self.agent)  # raises AgentSpecError quoting it
        try:
            parse_workers(self.workers)
        except WorkerError as exc:
            raise WebConfigError(str(exc)) from None


@dataclass(frozen=True)
class GameRequest:
    """A new game as the lobby form asks for it."""

    color: ColorChoice = ColorChoice.RANDOM
    time_control: TimeControl = UNTIMED
    strength: TimeControl = DEFAULT_STRENGTH

    @classmethod
    def from_json(cls, data: Any) -> GameRequest:
        """Parse `{"color": ..., "tc": "3+2"|"none", "strength": "mt=1"|"iters=N"}`."""
        if not isinstance(data, dict):
            raise BadRequestError(f"a game request is a JSON object, got {_short(data)}")
        unknown = set(data) - {"color", "tc", "strength"}
        if unknown:
            raise BadRequestError(f"unknown field(s) in game request: {sorted(unknown)!r}")
        try:
            color = ColorChoice(data.get("color", "random"))
        except ValueError:
            raise BadRequestError(
                f"invalid colour {data.get('color')!r} (white, black or random)"
            ) from None
        tc = _parse_tc(data.get("tc", "none"), "time control")
        if tc.kind not in (TcKind.NONE, TcKind.CLOCK):
            raise BadRequestError(f"a game's time control is a clock or none, got {str(tc)!r}")
        if tc.initial_ms > MAX_INITIAL_MS or tc.increment_ms > MAX_INCREMENT_MS:
            raise BadRequestError(f"time control too long: {str(tc)!r}")
        strength = _parse_tc(data.get("strength", "mt=1"), "engine strength")
        if strength.kind not in (TcKind.MOVETIME, TcKind.ITERATIONS):
            raise BadRequestError(
                f"engine strength is mt=SECONDS or iters=N, got {data.get('strength')!r}"
            )
        if strength.movetime_ms > MAX_MOVETIME_MS or strength.iterations > MAX_ITERATIONS:
            raise BadRequestError(f"engine strength too large: {str(strength)!r}")
        return cls(color, tc, strength)


def _parse_tc(text: Any, what: str) -> TimeControl:
    try:
        return TimeControl.parse(text)
    except ValueError as exc:
        raise BadRequestError(f"invalid {what}: {exc}") from None


def _short(value: Any, limit: int = 80) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


# --- client frames ---------------------------------------------------------------------------


class ClientKind(Enum):
    """What a browser may send on its seat's WebSocket."""

    MOVE = "move"
    RESIGN = "resign"
    ABORT = "abort"
    SYNC = "sync"


@dataclass(frozen=True)
class ClientMessage:
    """One parsed browser frame."""

    kind: ClientKind
    uci: str = ""
    ply: int | None = None


_UCI_RE = re.compile(r"^[a-h][1-8][a-h][1-8][nbrq]?$")


def parse_client_message(text: Any, max_bytes: int) -> ClientMessage:
    """Parse a browser frame; raise BadRequestError (quoting it) for anything malformed."""
    if not isinstance(text, str):
        raise BadRequestError("only text frames holding JSON are accepted", "bad_frame")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise BadRequestError(f"message too large: {size} bytes (limit {max_bytes})", "too_large")
    try:
        data = loads_untrusted(text, max_bytes=max_bytes)
    except UntrustedJsonError as exc:
        raise BadRequestError(f"invalid JSON: {exc}", "bad_json") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise BadRequestError(f"a message is an object with a type: {_short(text)}", "bad_frame")
    try:
        kind = ClientKind(data["type"])
    except ValueError:
        raise BadRequestError(f"unknown message type {data['type']!r}", "bad_type") from None
    if kind is not ClientKind.MOVE:
        return ClientMessage(kind)
    uci = data.get("uci")
    if not isinstance(uci, str) or not _UCI_RE.match(uci):
        raise BadRequestError(f"invalid move {_short(uci)} (UCI such as e2e4)", "bad_move")
    ply = data.get("ply")
    if ply is not None and (not isinstance(ply, int) or isinstance(ply, bool) or ply < 0):
        raise BadRequestError(f"invalid ply {_short(ply)}", "bad_move")
    return ClientMessage(kind, uci, ply)


def encode(frame: dict[str, Any]) -> str:
    """One frame as compact JSON text."""
    return json.dumps(frame, separators=(",", ":"))


def error_frame(code: str, message: str) -> dict[str, Any]:
    """The frame telling one client what was wrong with its request."""
    return {"type": "error", "code": code, "message": message}


# --- storage ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebGameMeta:
    """What the web layer remembers of its own games beside the play layer's tables."""

    game_id: str
    human: int
    agent: str
    strength: TimeControl


_WEB_SCHEMA = """
CREATE TABLE IF NOT EXISTS web_games (
    id TEXT PRIMARY KEY, human TEXT, agent TEXT, strength TEXT);
CREATE TABLE IF NOT EXISTS web_paused (
    id TEXT PRIMARY KEY, ply INTEGER, spent_ms REAL, boot TEXT, at REAL);
"""


class WebStore:
    """The play layer's `GameStore` plus one table of the web's own (same SQLite file).

    `web_games` says which games are the web app's, which colour the human has and which agent
    at which strength plays the other side: what a restart needs to resume a game.
    """

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.games = GameStore(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_WEB_SCHEMA)
        self._lock = threading.Lock()

    def add(self, meta: WebGameMeta) -> None:
        """Remember a new web game."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO web_games (id, human, agent, strength) VALUES (?, ?, ?, ?)",
                (meta.game_id, COLOR_NAMES[meta.human], meta.agent, str(meta.strength)),
            )

    def create(self, session: GameSession, token: str, meta: WebGameMeta) -> None:
        """Store a new web game: the play layer's rows, the human's seat, the web record."""
        self.games.create(session)
        self.games.add_seat(token, meta.game_id, meta.human)
        self.add(meta)

    def meta(self, game_id: str) -> WebGameMeta | None:
        """The web record of `game_id`, None for a game the web app did not create."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, human, agent, strength FROM web_games WHERE id = ?", (game_id,)
            ).fetchone()
        if row is None:
            return None
        return WebGameMeta(row[0], COLOR_NAMES.index(row[1]), row[2], TimeControl.parse(row[3]))

    def pause(self, game_id: str, ply: int, spent_ms: float, boot: str, at: float) -> None:
        """Remember that game `game_id` was unloaded `spent_ms` into the turn after `ply` plies,
        by server `boot` at its monotonic time `at` (seconds)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO web_paused (id, ply, spent_ms, boot, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (game_id, ply, spent_ms, boot, at),
            )

    def resume(self, game_id: str, ply: int, boot: str, now: float) -> float:
        """Milliseconds already spent on the running turn of `game_id` (at `ply` plies) when it
        is resumed by server `boot` at its monotonic time `now`, and forget the pause: the time
        before the unload, plus the time since when the same server unloaded it (its clock ran
        on); 0 when the game was not unloaded at this ply."""
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT ply, spent_ms, boot, at FROM web_paused WHERE id = ?", (game_id,)
            ).fetchone()
            if row is None:
                return 0.0
            self._db.execute("DELETE FROM web_paused WHERE id = ?", (game_id,))
        if row[0] != ply:
            return 0.0
        spent = float(row[1])
        if row[2] == boot:
            spent += max(0.0, (now - float(row[3])) * 1000.0)
        return spent

    def stop_boot(self, boot: str, now: float) -> None:
        """Server `boot` stops at its monotonic time `now`: charge the games it unloaded with
        the time until now (their clocks ran while it served); the downtime after is free."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE web_paused SET spent_ms = spent_ms + MAX(0.0, (? - at) * 1000.0), "
                "boot = '' WHERE boot = ?",
                (now, boot),
            )

    def close(self) -> None:
        """Close both connections."""
        with self._lock:
            self._db.close()
        self.games.close()


# --- one live game ---------------------------------------------------------------------------

_OFF_BOARD = frozenset(
    {
        EndReason.TIME_FORFEIT,
        EndReason.RESIGNATION,
        EndReason.ABORTED,
        EndReason.CRASH,
        EndReason.ILLEGAL_MOVE,
    }
)
"""Endings that happen during a turn, not by a move on the board."""


class LiveGame:
    """One game between a browser seat and an engine seat (see the module docstring)."""

    def __init__(self, hub: GameHub, session: GameSession, meta: WebGameMeta) -> None:
        self.hub = hub
        self.session = session
        self.meta = meta
        self.human = meta.human
        self.engine = 1 - meta.human
        self.tracker = SeatTracker()
        self.lock = asyncio.Lock()
        self.conns: set[Any] = set()
        self._engine_sent = -1
        self._engine_task: asyncio.Task[None] | None = None
        self._catch_up: asyncio.Task[None] | None = None
        self._flag: asyncio.TimerHandle | None = None
        self._stored_end = session.is_over()
        self._final_clocks: tuple[int | None, int | None] | None = None
        self.last_active = time.monotonic()
        self.unloaded = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def game_id(self) -> str:
        return self.session.game_id

    # --- frames ------------------------------------------------------------------------------

    def _clocks(self) -> dict[str, Any] | None:
        tc = self.session.config.time_controls[self.human]
        if tc.kind is not TcKind.CLOCK:
            return None
        session = self.session
        mover = session.to_move
        white, black = self._final_clocks or (session.clock_ms(0), session.clock_ms(1))
        first = False
        first_ms = None
        if mover is not None and session.first_move_pending(mover):
            first = True
            window = session.config.first_move_timeout_ms[mover]
            first_ms = max(0, round(window - session.turn_elapsed_ms()))
        return {
            "white": white,
            "black": black,
            "running": None if mover is None or first else COLOR_NAMES[mover],
            "increment_ms": tc.increment_ms,
            "first_move_ms": first_ms,
        }

    def _snapshot(self) -> tuple[int | None, int | None]:
        return (self.session.clock_ms(0), self.session.clock_ms(1))

    def _settle(self, before: tuple[int | None, int | None]) -> None:
        """Fix the clocks shown after a change that may have ended the game off the board.

        `before` are the clocks just before the change. The session stops charging the side to
        move once a game is over, so after a resignation or a flag fall its clock would jump
        back to the turn's start; show the clocks as they were at the end instead, with the
        flagged side's at zero.
        """
        end = self.session.end
        if end is None or end.reason not in _OFF_BOARD or self._final_clocks is not None:
            return
        clocks = list(before)
        if end.reason is EndReason.TIME_FORFEIT and end.winner is not None:
            if clocks[1 - end.winner] is not None:
                clocks[1 - end.winner] = 0
        self._final_clocks = (clocks[0], clocks[1])

    def frame(self) -> dict[str, Any]:
        """The human seat's current `state` frame (built from `project` + public clocks)."""
        self.tracker.feed(self.session.project(self.human, self.tracker.synced_ply))
        session = self.session
        end = session.end
        return self.tracker.state_frame(
            clocks=self._clocks(),
            opponent=session.config.names[self.engine],
            tc=str(session.config.time_controls[self.human]),
            engine_thinking=end is None and session.to_move == self.engine,
            detail=end.detail if end is not None else "",
        )

    async def _send(self, ws: Any, text: str) -> None:
        try:
            await ws.send_text(text)
        except Exception:  # a closed socket: forget it, the game goes on
            self.conns.discard(ws)

    async def _broadcast(self) -> None:
        text = encode(self.frame())
        for ws in list(self.conns):
            await self._send(ws, text)

    async def attach(self, ws: Any) -> bool:
        """Add a seat connection and send it the current state; False if the game was unloaded
        meanwhile (then ask the hub again)."""
        async with self.lock:
            if self.unloaded:
                return False
            self.conns.add(ws)
            await self._send(ws, encode(self.frame()))
            self._arm_flag()
        return True

    def detach(self, ws: Any) -> None:
        """Forget a closed connection (the game and its clocks go on)."""
        self.conns.discard(ws)

    # --- driving the session -----------------------------------------------------------------

    async def start(self) -> None:
        """Bring the game to life (new or resumed): broadcast, then engine or timer."""
        async with self.lock:
            await self._after_change()

    def idle(self) -> bool:
        """True when no browser is connected and the engine is not thinking."""
        return not self.conns and self._engine_task is None and not self.lock.locked()

    async def unload(self) -> None:
        """Stop the flag timer (the game stays as stored, with the time already spent on the
        running turn, charged when it resumes; its engine stays with its worker, which drops it
        when it needs room: then it replays the transcript)."""
        self.unloaded = True
        session = self.session
        if not session.is_over() and session.to_move is not None:
            hub = self.hub
            hub.store.pause(self.game_id, session.ply, session.turn_elapsed_ms(), hub.boot,
                            hub.now())
        if self._flag is not None:
            self._flag.cancel()
            self._flag = None

    async def _record(self) -> None:
        """Commit the plies not stored yet (call under the lock, before the frame goes out).

        On the event loop: the commit is fast (WAL, synchronous=NORMAL) and mostly Python work
        (dark FENs, SAN), which a worker thread would only fight the loop for under the GIL
        (measured: p50 move latency 9 ms on the loop, 115 ms through a writer thread).
        """
        if not self.session.is_over():  # `_finish` stores the last plies with the result
            self.hub.store.games.record_ply(self.session)

    async def _after_change(self) -> None:
        """Call under the lock after every change of the session."""
        self.last_active = time.monotonic()
        if self.session.is_over():
            await self._finish()
            await self._broadcast()
            return
        await self._broadcast()
        if self.session.to_move == self.engine and self._engine_task is None:
            self._engine_task = self._spawn(self._engine_turn())
        self._arm_flag()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _finish(self) -> None:
        if self._flag is not None:
            self._flag.cancel()
            self._flag = None
        if not self._stored_end:
            self._stored_end = True
            date = datetime.date.today().strftime("%Y.%m.%d")
            headers = {"Event": "Caligo web game", "Site": "Caligo web", "Date": date}
            self.hub.store.games.finish(self.session, headers)
            log.info("game %s over: %s (%s)", self.game_id, self.session.end, self.meta.agent)
        self.hub.forget(self)
        self._spawn(self._close_engine())

    async def _close_engine(self) -> None:
        """Send the engine its last observations and `gameover` (its worker drops it)."""
        for task in (self._engine_task, self._catch_up):
            if task is not None and task is not asyncio.current_task():
                await asyncio.wait([task])
        messages = self.session.project(self.engine, self._engine_sent)
        self._engine_sent = self.session.ply
        try:
            await self.hub.workers.submit(
                Job(JobKind.END, self.game_id, self.meta.agent, tuple(messages)), STARTUP_S)
        except Exception as exc:  # the game is decided; a failing goodbye is only logged
            log.warning("game %s: engine failed on gameover: %s", self.game_id, exc)

    def _arm_flag(self) -> None:
        if self._flag is not None:
            self._flag.cancel()
            self._flag = None
        mover = self.session.to_move
        if mover is None or self.session.config.time_controls[mover].kind is not TcKind.CLOCK:
            return
        if self.session.first_move_pending(mover):  # aborted if the first move does not come
            left = self.session.config.first_move_timeout_ms[mover] - self.session.turn_elapsed_ms()
        else:
            left = self.session.clock_ms(mover) or 0
        delay = max(0.0, left + self.session.config.timemargin_ms) / 1000.0 + 0.02
        loop = asyncio.get_running_loop()
        self._flag = loop.call_later(delay, lambda: self._spawn(self._check_flag()))

    async def _check_flag(self) -> None:
        async with self.lock:
            if self.session.is_over():
                return
            before = self._snapshot()
            if self.session.check_flag() is not None:
                self._settle(before)
                await self._after_change()
            else:
                self._arm_flag()

    async def _engine_turn(self) -> None:
        session = self.session
        try:
            if self._catch_up is not None:  # the engine still takes in its last move
                await asyncio.wait([self._catch_up])
            async with self.lock:
                if session.is_over() or session.to_move != self.engine:
                    return
                messages = self._engine_messages(self._engine_sent)
                self._engine_sent = session.ply
                ply = session.ply
            error: BaseException | None = None
            decision: Decision | None = None
            try:
                decision = await self._engine_move(messages)
            except Exception as exc:  # any engine failure loses the game, the server goes on
                error = exc
            async with self.lock:
                self._engine_task = None
                if session.is_over() or session.ply != ply:
                    return  # resigned, aborted or flagged meanwhile
                before = self._snapshot()
                self._engine_result(decision, error)
                self._settle(before)
                await self._record()
                await self._after_change()
                if not session.is_over():
                    self._catch_up = self._spawn(self._engine_catch_up())
        finally:
            if self._engine_task is asyncio.current_task():
                self._engine_task = None

    def _engine_messages(self, since: int) -> list[RefereeMessage]:
        """The engine seat's messages after ply `since` as the engine sees them: its
        `newgame` with the game's strength as its budget (so it sizes its search for it) and
        its `go` with the strength inside its clock (`strength_clock`). Call under the lock."""
        messages = self.session.project(self.engine, since)
        if messages and isinstance(messages[0], NewGame):
            messages[0] = replace(messages[0], time_control=self.meta.strength)
        request = messages[-1] if messages else None
        if isinstance(request, Go):
            messages[-1] = replace(request, clock=strength_clock(self.meta.strength,
                                                                 request.clock))
        return messages

    def _watchdog_s(self, messages: Sequence[RefereeMessage]) -> float:
        """How long the engine's worker may take for these messages before it is replaced:
        the strength's time with room, never past the referee's deadline (plus the lag
        margin), more when the agent starts or replays its game."""
        limit = 30.0
        request = messages[-1] if messages else None
        if isinstance(request, Go):
            st = self.meta.strength
            limit = (2.0 * st.movetime_ms / 1000.0 + 10.0 if st.kind is TcKind.MOVETIME
                     else 120.0)
            if request.clock.deadline_ms is not None:
                limit = min(limit, request.clock.deadline_ms / 1000.0 + 2.0)
        if any(isinstance(m, NewGame) for m in messages):
            limit += STARTUP_S
        return limit

    async def _engine_move(self, messages: list[RefereeMessage]) -> Decision | None:
        """The engine's answer through the workers: the transcript again if its worker does
        not hold the game (a restart, a replaced or crowded worker), one retry if the worker
        is lost."""
        job = Job(JobKind.MOVE, self.game_id, self.meta.agent, tuple(messages))
        for attempt in (1, 2):
            try:
                result = await self.hub.workers.submit(job, self._watchdog_s(job.messages))
            except WorkerLost:
                if attempt == 2:
                    raise
                log.warning("game %s: the engine's worker was lost; replaying on a new one",
                            self.game_id)
                result = JobResult(self.game_id, missing=True)
            if result.missing:
                async with self.lock:
                    full = self._engine_messages(-1)
                job = replace(job, messages=tuple(full))
                continue
            if result.error is not None:
                raise WebError(f"the engine failed: {result.error}")
            return result.decision
        raise WebError("the engine's worker lost the game twice")  # pragma: no cover

    async def _engine_catch_up(self) -> None:
        """The engine takes in its own move's observation in its worker, on the human's
        time."""
        try:
            async with self.lock:
                if self.session.is_over():
                    return
                messages = [m for m in self.session.project(self.engine, self._engine_sent)
                            if not isinstance(m, Go | Force | GameOver)]
                if not messages:
                    return
                self._engine_sent = self.session.ply
            job = Job(JobKind.OBSERVE, self.game_id, self.meta.agent, tuple(messages))
            result = await self.hub.workers.submit(job, 60.0)
            if result.missing:  # replayed with its next move
                async with self.lock:
                    self._engine_sent = -1
        except Exception as exc:  # reported at the engine's next turn, if it matters
            log.warning("game %s: engine failed to observe its move: %s", self.game_id, exc)
            async with self.lock:
                self._engine_sent = -1  # the next move replays the transcript
        finally:
            if self._catch_up is asyncio.current_task():
                self._catch_up = None

    def _engine_result(self, decision: Decision | None, error: BaseException | None) -> None:
        session, color = self.session, self.engine
        name = COLOR_NAMES[color]
        if error is not None:
            detail = f"{name}: {type(error).__name__}: {error}"
            log.warning("game %s: engine loses: %s", self.game_id, detail)
            session.forfeit(color, EndReason.CRASH, detail)
        elif decision is None:
            session.play_forced()
        elif decision.resign:
            session.forfeit(color, EndReason.RESIGNATION, f"{name} resigns")
        else:
            try:
                session.play(color, decision.move, decision=decision)
            except IllegalMoveError as exc:
                log.warning("game %s: engine loses: %s", self.game_id, exc)
                session.forfeit(color, EndReason.ILLEGAL_MOVE, str(exc))

    # --- the human's requests ----------------------------------------------------------------

    async def handle(self, message: ClientMessage, ws: Any) -> None:
        """Carry out one browser request; raise BadRequestError (nothing changes) if refused."""
        if message.kind is ClientKind.SYNC:
            async with self.lock:
                await self._send(ws, encode(self.frame()))
            return
        async with self.lock:
            session = self.session
            if session.is_over():
                raise BadRequestError(f"game {self.game_id} is over", "game_over")
            before = self._snapshot()
            if message.kind is ClientKind.MOVE:
                self._human_move(message)
                await self._record()
            elif message.kind is ClientKind.RESIGN:
                session.resign(self.human)
            elif message.kind is ClientKind.ABORT:
                if session.ply >= 2:
                    raise BadRequestError("a game can be aborted only before each side moved")
                session.abort(f"{COLOR_NAMES[self.human]} aborted")
            self._settle(before)
            await self._after_change()

    def _human_move(self, message: ClientMessage) -> None:
        session = self.session
        if session.to_move != self.human:
            raise BadRequestError(f"not your turn (move {message.uci!r})", "not_your_turn")
        if message.ply is not None and message.ply != session.ply:
            raise BadRequestError(
                f"move {message.uci!r} was meant after ply {message.ply}, the game is at ply "
                f"{session.ply}",
                "stale",
            )
        legal = {move_to_uci(m): m for m in session.legal(self.human)}
        if message.uci not in legal:
            raise BadRequestError(f"illegal move {message.uci!r}", "illegal_move")
        try:
            session.play(self.human, legal[message.uci])
        except SessionError as exc:  # pragma: no cover - checked just above
            raise BadRequestError(str(exc)) from None


# --- all games -------------------------------------------------------------------------------


class GameHub:
    """Every live game of the server, the store, the admission limits and the engine workers.

    `now` returns monotonic seconds: the clock of every session (injectable for tests).
    """

    def __init__(self, config: WebConfig, now: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.now = now
        self.boot = secrets.token_hex(8)
        """This server run: a game it unloaded and resumes was on the clock meanwhile."""
        self.rates = RateLimiter(config.games_per_minute, now)
        self.owners: dict[str, str] = {}
        """game id -> the client that created it (games created by this server run)."""
        self.store = WebStore(config.db)
        self.live: dict[str, LiveGame] = {}
        self.workers = make_workers(config.workers, init=config.worker_init, warm=config.agent)
        self._rng: random.Random = (
            random.Random(config.seed) if config.seed is not None else secrets.SystemRandom()
        )
        self._resume = asyncio.Lock()
        self._admitted: collections.deque[float] = collections.deque()
        """When the recent games were admitted (`engine_full`)."""

    def forget(self, live: LiveGame) -> None:
        """Drop a finished game from memory (it stays in the store)."""
        if self.live.get(live.game_id) is live:
            del self.live[live.game_id]

    def engine_name(self, strength: TimeControl) -> str:
        """How the engine is named in game records (`engine_label`)."""
        return engine_label(self.config.agent, strength)

    async def create(
        self, request: GameRequest, client: str = UNKNOWN_CLIENT
    ) -> tuple[LiveGame, str]:
        """Start a new game for `client` (`caligo.web.admission.client_key`); return it and the
        human's seat token.

        Admission, in order: the client's rate (RateLimitError, with the seconds to wait), its
        live games (its idle ones are unloaded to make room, else RateLimitError), the server's
        live games (idle ones of anybody unloaded, else ServerBusyError).
        """
        self.rates.check(client)
        await self._admit_client(client)
        if len(self.live) >= self.config.max_live_games:
            await self._evict_idle()
        if len(self.live) >= self.config.max_live_games:
            raise ServerBusyError(
                f"the server is full: it already runs {len(self.live)} games; try again in a "
                "minute",
                "busy",
                retry_after=60,
            )
        why = self.engine_full()
        if why is not None:
            raise ServerBusyError(f"the server is full: {why}; try again in {ADMIT_RETRY_S} "
                                  "seconds", "busy", retry_after=ADMIT_RETRY_S)
        self.rates.take(client)
        self._admitted.append(self.now())
        if request.color is ColorChoice.RANDOM:
            human = self._rng.randrange(2)
        else:
            human = 0 if request.color is ColorChoice.WHITE else 1
        game_id = f"w{self._rng.getrandbits(48):012x}"
        token = secrets.token_urlsafe(24)
        names = [HUMAN_NAME, HUMAN_NAME]
        names[1 - human] = self.engine_name(request.strength)
        # both clocks start after their side's first move; the engine's first move may wait
        # for a cold start (compiling its kernels), so it has its whole clock for it, as before
        first_move = [self.config.first_move_ms, self.config.first_move_ms]
        initial = request.time_control.initial_ms
        first_move[1 - human] = max(initial, self.config.first_move_ms)
        config = SessionConfig(
            game_id=game_id,
            time_controls=(request.time_control, request.time_control),
            seeds=(self._rng.getrandbits(31), self._rng.getrandbits(31)),
            names=(names[0], names[1]),
            timemargin_ms=LAG_MARGIN_MS,
            move_timeout_ms=UNTIMED_MOVE_TIMEOUT_MS,
            first_move_timeout_ms=(first_move[0], first_move[1]),
        )
        meta = WebGameMeta(game_id, human, self.config.agent, request.strength)
        session = GameSession(config, now=self.now)
        self.store.create(session, token, meta)
        live = LiveGame(self, session, meta)
        self.live[game_id] = live
        self.owners[game_id] = client
        await live.start()
        log.info("game %s: human %s vs %s", game_id, COLOR_NAMES[human], names[1 - human])
        return live, token

    async def rematch(
        self, game_id: str, token: Any, client: str = UNKNOWN_CLIENT
    ) -> tuple[LiveGame, str]:
        """A new game with the settings of finished game `game_id`, colours swapped.

        `token` must be the human seat of `game_id` (SeatError); the game must be a web game
        (GameNotFoundError) and over (GameRunningError).
        """
        if not isinstance(token, str):
            raise SeatError(f"a rematch needs the game's seat token, got {_short(token)}")
        self.check_seat(game_id, token)
        meta = self.store.meta(game_id)
        if meta is None:
            raise GameNotFoundError(f"no web game {game_id!r}")
        row = self.store.games.game(game_id)
        if not row.finished:
            raise GameRunningError(f"game {game_id!r} is still running: no rematch yet")
        config = SessionConfig.from_dict(json.loads(row.config))
        color = ColorChoice.BLACK if meta.human == 0 else ColorChoice.WHITE
        request = GameRequest(color, config.time_controls[meta.human], meta.strength)
        return await self.create(request, client)

    async def _admit_client(self, client: str) -> None:
        """Make room for one more game of `client` under `games_per_client` by unloading its
        idle games (oldest first); RateLimitError when its games are all in use."""
        cap = self.config.games_per_client
        self.owners = {g: c for g, c in self.owners.items() if g in self.live}
        mine = [self.live[g] for g, c in self.owners.items() if c == client]
        if not cap or len(mine) < cap:
            return
        idle = sorted((g for g in mine if g.idle()), key=lambda g: g.last_active)
        for live in idle[: len(mine) - cap + 1]:
            self.forget(live)
            await live.unload()
            log.info("game %s unloaded (idle; its client starts another)", live.game_id)
        running = sum(1 for g in mine if not g.unloaded)
        if running >= cap:
            games = "game" if running == 1 else "games"
            raise RateLimitError(
                f"you already have {running} {games} running (at most {cap} at once): finish, "
                "resign or close one first",
                "too_many_games",
            )

    def check_seat(self, game_id: str, token: str | None) -> None:
        """Raise SeatError unless `token` is the human seat of `game_id`."""
        if not token:
            raise SeatError("a seat token is required (?seat=TOKEN)")
        seat = self.store.games.seat(token)
        if seat is None or seat[0] != game_id:
            raise SeatError(f"this token holds no seat in game {game_id!r}")

    async def attach(self, game_id: str, ws: Any) -> LiveGame:
        """Attach a seat connection to `game_id` (resumed if needed) and send it the state."""
        while True:
            live = await self.get(game_id)
            if await live.attach(ws):
                return live

    async def get(self, game_id: str) -> LiveGame:
        """The live game `game_id`, resumed from the store when it is not in memory."""
        live = self.live.get(game_id)
        if live is not None:
            return live
        async with self._resume:
            live = self.live.get(game_id)
            if live is not None:
                return live
            meta = self.store.meta(game_id)
            if meta is None:
                raise GameNotFoundError(f"no web game {game_id!r}")
            session = self.store.games.load_session(game_id, now=self.now)
            if not session.is_over():  # the time its mover had spent before it was unloaded
                spent = self.store.resume(game_id, session.ply, self.boot, self.now())
                session.begin_turn(spent)
            live = LiveGame(self, session, meta)
            if not session.is_over():
                self.live[game_id] = live
                log.info("game %s resumed at ply %d", game_id, session.ply)
        await live.start()
        return live

    def engine_full(self) -> str | None:
        """Why a new game would overload the engines, or None (admission by load).

        The engines' queue is first come, first served, and its waits come out of the
        engine's clock, so a game is admitted only while the games already running leave the
        workers room: their busy share over the last `ADMIT_WINDOW_S` seconds is under
        `engine_load`, no job of that span waited `ADMIT_WAIT_S` for a worker, and the load
        projected with the games admitted in the last `ADMIT_BURST_S` seconds (whose load
        does not show at once) and this one stays within `engine_load`. A game is projected
        at the measured share of a game that played in the window (busy share / games), or,
        before any game was measured, at `engine_load / (games_per_worker x workers)`: a
        quick player's games then take more of the workers than a slow one's, and a server
        of slow players admits more of them. Games nobody plays cost nothing and never count;
        an engine without a budget (`NO_BUDGET_AGENTS`) is never the reason.
        """
        target = self.config.engine_load
        if target <= 0.0 or not uses_strength(self.config.agent):
            return None  # off, or an engine that does no work (random)
        load = self.workers.load(ADMIT_WINDOW_S)
        if load.utilisation >= target:
            return (f"its engines were busy {100 * load.utilisation:.0f}% of the last "
                    f"{load.span_s:.0f} s")
        if load.max_wait_s >= ADMIT_WAIT_S:
            return f"an engine move waited {load.max_wait_s:.1f} s for a worker"
        now = self.now()
        while self._admitted and self._admitted[0] < now - ADMIT_BURST_S:
            self._admitted.popleft()
        per_game = 0.0
        if load.games > 0 and load.busy_s > 0.0:
            per_game = load.utilisation / load.games
        elif self.config.games_per_worker and load.workers:
            per_game = target / (self.config.games_per_worker * load.workers)
        projected = load.utilisation + per_game * (len(self._admitted) + 1)
        if per_game and projected > target + 1e-9:
            return (f"{len(self._admitted)} games started in the last {ADMIT_BURST_S:.0f} s "
                    f"and this one would bring its engines to {100 * projected:.0f}%")
        return None

    async def _evict_idle(self) -> None:
        """Make room: unload games nobody watches and the engine is not thinking in.

        They stay running in the store and resume when their seat reconnects (as after a
        restart: the turn that was running starts afresh).
        """
        idle = sorted((g for g in self.live.values() if g.idle()), key=lambda g: g.last_active)
        for live in idle[: max(1, len(self.live) - self.config.max_live_games + 1)]:
            self.forget(live)
            await live.unload()
            log.info("game %s unloaded (idle)", live.game_id)

    async def start(self) -> None:
        """Start the engine workers (each warms its engine before it serves)."""
        await self.workers.start()

    async def close(self) -> None:
        """Stop timers, the workers (their games stay running in the store, with the time
        their movers spent until now) and the store."""
        for live in list(self.live.values()):
            await live.unload()
        self.live.clear()
        self.store.stop_boot(self.boot, self.now())
        await self.workers.close()
        self.store.close()


__all__ = [
    "ClientKind",
    "ClientMessage",
    "ColorChoice",
    "GameHub",
    "GameRequest",
    "LiveGame",
    "WebConfig",
    "WebGameMeta",
    "WebStore",
    "encode",
    "engine_label",
    "error_frame",
    "parse_client_message",
    "strength_text",
    "uses_strength",
]
