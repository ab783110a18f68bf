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
import datetime
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from caligo.agents.base import COLOR_NAMES, Decision, TcKind
from caligo.agents.protocol import Force, GameOver, Go, NewGame, RefereeMessage
from caligo.agents.timing import strength_clock
from caligo.fow.position import move_to_uci
from caligo.play.errors import IllegalMoveError, SessionError
from caligo.play.session import EndReason, GameSession
from caligo.play.workers import Job, JobKind, JobResult, WorkerLost
from caligo.web.config import STARTUP_S
from caligo.web.errors import BadRequestError, WebError
from caligo.web.schemas import ClientKind, ClientMessage, encode
from caligo.web.seat_view import SeatTracker
from caligo.web.store import WebGameMeta

if TYPE_CHECKING:
    from caligo.web.hub import GameHub

log = logging.getLogger(__name__)

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


def spawn(tasks: set[asyncio.Task[Any]], coro: Any) -> asyncio.Task[Any]:
    """Run `coro` as a task on the running loop, held in `tasks` (which an owner cancels at
    its close) until it is done."""
    task = asyncio.get_running_loop().create_task(coro)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


def flag_delay_s(session: GameSession) -> float | None:
    """Seconds until the side to move of `session` runs out of time (its clock, or the
    first-move window that aborts the game), with the session's margin; None when no clock
    runs (untimed, or over)."""
    mover = session.to_move
    if mover is None or session.config.time_controls[mover].kind is not TcKind.CLOCK:
        return None
    if session.first_move_pending(mover):  # aborted if the first move does not come
        left = session.config.first_move_timeout_ms[mover] - session.turn_elapsed_ms()
    else:
        left = session.clock_ms(mover) or 0
    return max(0.0, left + session.config.timemargin_ms) / 1000.0 + 0.02


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
        """Bring the game to life (new or resumed): broadcast, then engine or timer. A resumed
        game whose mover's time ran out while it was unloaded ends first, so no frame shows
        it still being played with a clock at zero."""
        async with self.lock:
            if not self.session.is_over():
                before = self._snapshot()
                if self.session.check_flag() is not None:
                    self._settle(before)
            await self._after_change()

    def idle(self) -> bool:
        """True when no browser is connected and the engine is not thinking."""
        return not self.conns and self._engine_task is None and not self.lock.locked()

    async def unload(self) -> None:
        """Stop the flag timer (the game stays as stored, with the time already spent on the
        running turn, charged when it resumes; its engine stays with its worker, which drops it
        when it needs room: then it replays the transcript). A timed game is woken by the hub
        when its mover's time runs out (`GameHub.wake_later`), so it ends on time unwatched."""
        self.unloaded = True
        session = self.session
        if not session.is_over() and session.to_move is not None:
            hub = self.hub
            hub.store.pause(self.game_id, session.ply, session.turn_elapsed_ms(), hub.boot,
                            hub.now())
            delay = flag_delay_s(session)
            if delay is not None:  # it still ends on time, watched or not; an engine to move
                hub.wake_later(self.game_id, delay if session.to_move == self.human else 0.0)
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
        return spawn(self._tasks, coro)

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
        if self._engine_sent < 0:  # resumed and ended before its engine was asked anything:
            # only the goodbye (its worker drops the engine if it still holds it), not a new
            # engine replaying the whole game to hear it
            messages = [m for m in messages if isinstance(m, GameOver)]
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
        delay = flag_delay_s(self.session)
        if delay is None:
            return
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


__all__ = ["LiveGame"]
