"""Every live game of the server (`GameHub`): creation and its admission, rematches, seats,
resuming a stored game, unloading idle ones, and the engine workers and store they share.
One `LiveGame` (`caligo.web.live`) drives each game."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

from caligo.agents.base import COLOR_NAMES, TcKind, TimeControl
from caligo.agents.ladder import LEVELS, level
from caligo.play.session import GameSession, SessionConfig
from caligo.play.storage import RUNNING, GameRow
from caligo.play.workers import make_workers
from caligo.web.admission import UNKNOWN_CLIENT, RateLimiter
from caligo.web.config import (
    ADMIT_BURST_S,
    ADMIT_RETRY_S,
    ADMIT_WAIT_S,
    ADMIT_WINDOW_S,
    DEFAULT_STRENGTH,
    HUMAN_NAME,
    LAG_MARGIN_MS,
    UNTIMED_MOVE_TIMEOUT_MS,
    WebConfig,
    engine_label,
    engine_works,
    level_of,
    uses_levels,
    with_level,
)
from caligo.web.errors import (
    BadRequestError,
    GameNotFoundError,
    GameRunningError,
    RateLimitError,
    SeatError,
    ServerBusyError,
)
from caligo.web.live import LiveGame, flag_delay_s, spawn
from caligo.web.schemas import ColorChoice, GameRequest, short
from caligo.web.store import WebGameMeta, WebStore

log = logging.getLogger(__name__)


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
        self._wakes: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False

    def forget(self, live: LiveGame) -> None:
        """Drop a finished game from memory (it stays in the store)."""
        if self.live.get(live.game_id) is live:
            del self.live[live.game_id]

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        """Schedule a wake (`wake_later`) on the event loop (tests replace it to run wakes when
        they choose, on an injected clock)."""
        return asyncio.get_running_loop().call_later(delay_s, callback)

    def wake_later(self, game_id: str, delay_s: float) -> None:
        """Bring the unloaded game `game_id` back after `delay_s` seconds, when its mover's
        time runs out, unless a seat brings it back first: its flag then falls (or its first
        move's window aborts it) on time, whether anybody watches or not."""
        self._cancel_wake(game_id)

        def wake() -> None:
            self._wakes.pop(game_id, None)
            self._spawn(self._wake(game_id))

        self._wakes[game_id] = self.call_later(delay_s, wake)

    def _cancel_wake(self, game_id: str) -> None:
        handle = self._wakes.pop(game_id, None)
        if handle is not None:
            handle.cancel()

    async def _wake(self, game_id: str) -> None:
        if game_id in self.live or self._closing:
            return  # a seat brought it back (its own flag timer runs), or the server stops
        try:
            await self.get(game_id)  # resumed with the time it spent: its flag falls now
        except Exception:  # a wake must never take the server down
            log.exception("game %s could not be woken for its flag", game_id)

    def engine_for(self, request: GameRequest) -> tuple[str, TimeControl]:
        """The agent spec and the strength a game of `request` is played with: the server's
        agent at the requested budget (`DEFAULT_STRENGTH` when none), or, when the server
        plays the ladder, at the requested level (its default when none) with the level's
        own budget. BadRequestError for a level asked of an engine without levels, or a
        budget asked of the ladder."""
        agent = self.config.agent
        if not uses_levels(agent):
            if request.level is not None:
                raise BadRequestError(f"this server's engine has no levels: strength is "
                                      f"mt=SECONDS or iters=N, got level={request.level}")
            return agent, request.strength or DEFAULT_STRENGTH
        if request.strength is not None:
            raise BadRequestError(f"this server's engine plays levels: strength is level=1 to "
                                  f"level={len(LEVELS)}, got {str(request.strength)!r}")
        number = request.level if request.level is not None else level_of(agent)
        return with_level(agent, number), level(number).budget

    async def create(
        self, request: GameRequest, client: str = UNKNOWN_CLIENT
    ) -> tuple[LiveGame, str]:
        """Start a new game for `client` (`caligo.web.admission.client_key`); return it and the
        human's seat token.

        Admission, in order: the client's rate (RateLimitError, with the seconds to wait), its
        live games (its idle ones are unloaded to make room, else RateLimitError), the server's
        live games (idle ones of anybody unloaded, else ServerBusyError).
        """
        agent, strength = self.engine_for(request)
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
        why = self.engine_full(agent)
        if why is not None:
            raise ServerBusyError(f"the server is full: {why}; try again in {ADMIT_RETRY_S} "
                                  "seconds", "busy", retry_after=ADMIT_RETRY_S)
        self.rates.take(client)
        if engine_works(agent):  # a random mover's game loads no engine
            self._admitted.append(self.now())
        if request.color is ColorChoice.RANDOM:
            human = self._rng.randrange(2)
        else:
            human = 0 if request.color is ColorChoice.WHITE else 1
        game_id = f"w{self._rng.getrandbits(48):012x}"
        token = secrets.token_urlsafe(24)
        names = [HUMAN_NAME, HUMAN_NAME]
        names[1 - human] = engine_label(agent, strength)
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
        meta = WebGameMeta(game_id, human, agent, strength)
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
            raise SeatError(f"a rematch needs the game's seat token, got {short(token)}")
        self.check_seat(game_id, token)
        meta = self.store.meta(game_id)
        if meta is None:
            raise GameNotFoundError(f"no web game {game_id!r}")
        row = self.store.games.game(game_id)
        if not row.finished:
            raise GameRunningError(f"game {game_id!r} is still running: no rematch yet")
        config = SessionConfig.from_dict(json.loads(row.config))
        color = ColorChoice.BLACK if meta.human == 0 else ColorChoice.WHITE
        tc = config.time_controls[meta.human]
        if uses_levels(meta.agent) != uses_levels(self.config.agent):
            request = GameRequest(color, tc)  # the server plays another engine since: its default
        elif uses_levels(meta.agent):
            request = GameRequest(color, tc, level=level_of(meta.agent))
        else:
            request = GameRequest(color, tc, meta.strength)
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
            self._cancel_wake(game_id)  # its own flag timer takes over
            if not session.is_over():
                self.live[game_id] = live
                log.info("game %s resumed at ply %d", game_id, session.ply)
        await live.start()
        return live

    def engine_full(self, agent: str) -> str | None:
        """Why a new game of engine `agent` would overload the engines, or None (admission by
        load).

        The engines' queue is first come, first served, and its waits come out of the
        engine's clock, so a game is admitted only while the games still running leave the
        workers room: their busy share over the last `ADMIT_WINDOW_S` seconds is under
        `engine_load` (a game that ended or was unloaded no longer loads them, so a player
        whose game just ended starts the next one), no job of that span waited `ADMIT_WAIT_S`
        for a worker, and the load
        projected with the games admitted in the last `ADMIT_BURST_S` seconds (whose load
        does not show at once) and this one stays within `engine_load`. A game is projected
        at the measured share of a game that played in the window (busy share / games), or,
        before any game was measured, at `engine_load / (games_per_worker x workers)`: a
        quick player's games then take more of the workers than a slow one's, and a server
        of slow players admits more of them. Games nobody plays cost nothing and never count;
        an engine that does no work (`engine_works`: a random mover, the ladder's level 1) is
        never refused.
        """
        target = self.config.engine_load
        if target <= 0.0 or not engine_works(agent):
            return None  # off, or an engine that does no work (random)
        load = self.workers.load(ADMIT_WINDOW_S)
        running = load.utilisation_of(self.live)
        if running >= target:
            return (f"its engines were busy {100 * running:.0f}% of the last "
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
        projected = running + per_game * (len(self._admitted) + 1)
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
        """Start the engine workers (each warms its engine before it serves), and, in the
        background, the clocks of the timed games left running by the last server run
        (`wake_stored`)."""
        await self.workers.start()
        self._spawn(self.wake_stored())

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        return spawn(self._tasks, coro)

    async def wake_stored(self) -> None:
        """Run again the clocks of the stored timed games still running (left by an earlier
        server run, or a crash), one game at a time between requests: on the player's turn,
        their time runs from now and the game is woken when it runs out (`wake_later`), so an
        abandoned game ends without its player coming back; on the engine's turn, the game is
        brought back now and the engine moves (its clock as it was at the stop). A game that
        cannot be replayed is logged and left as it is."""
        for row in self.store.games.games(status=RUNNING, limit=1 << 30):
            if self._closing:
                return
            await asyncio.sleep(0)
            try:
                self._wake_stored(row)
            except Exception:  # one damaged game must stop neither the others nor the server
                log.exception("game %s: its clock could not be restarted", row.id)

    def _wake_stored(self, row: GameRow) -> None:
        timed = any(TimeControl.parse(tc).kind is TcKind.CLOCK for tc in row.tc.split(" / "))
        meta = self.store.meta(row.id)
        if not timed or meta is None or row.id in self.live or row.id in self._wakes:
            return  # untimed: nothing to end on time
        session = self.store.games.load_session(row.id, now=self.now)
        if session.is_over():
            return
        if session.to_move != meta.human:
            self.wake_later(row.id, 0.0)
            return
        session.begin_turn(self.store.carry_over(row.id, session.ply, self.boot, self.now()))
        delay = flag_delay_s(session)
        if delay is not None:
            self.wake_later(row.id, delay)

    async def close(self) -> None:
        """Stop timers, the workers (their games stay running in the store, with the time
        their movers spent until now) and the store."""
        self._closing = True
        for task in list(self._tasks):  # a wake under way: its game stays as stored
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        for live in list(self.live.values()):
            await live.unload()
        self.live.clear()
        for game_id in list(self._wakes):
            self._cancel_wake(game_id)
        self.store.stop_boot(self.boot, self.now())
        await self.workers.close()
        self.store.close()


__all__ = ["GameHub"]
