"""The FastAPI app: a static page, REST for games and reveals, one WebSocket per seat.

Routes::

    GET  /                                  the page (static files, no CDN)
    GET  /pieces/{wN|bQ|...}.svg            vector pieces (python-chess)
    GET  /api/info                          the engine played and the choices offered
    POST /api/games                         {"color", "tc", "strength"} -> {"game", "seat", "color"}
    POST /api/games/{id}/rematch            {"seat"} -> a new game, same settings, colours swapped
    GET  /api/games                         finished games, newest first
    GET  /api/games/{id}                    the reveal of a finished game (409 while running)
    GET  /api/games/{id}/pgn                its PGN ([Variant "Fog of War"])
    GET  /api/games/{id}/pgn/standard       its PGN for standard chess programs
    GET  /api/games/{id}/transcript/{color} one side's observation transcript (JSON)
    WS   /ws/games/{id}?seat=TOKEN          the human seat: `state` frames out, moves in

The WebSocket sends `state` frames (`caligo.web.seat_view`) and `error` frames; it accepts
`move` (`{"type": "move", "uci": "e2e4", "ply": 0}`), `resign`, `abort` and `sync`. A missing or
foreign token gets one `error` frame and the socket is closed (code 4403): nothing of the game.
A malformed, illegal, out-of-turn or oversized message gets an `error` frame and changes
nothing; the socket and the server go on. A socket that sends no frame within the idle timeout
of opening gets an `idle` error frame and is closed (code 4408); the page sends `sync` at once.

The whole app runs inside `caligo.web.guard.GuardMiddleware` (trusted hosts, security headers,
bounded bodies, the page's own origin and JSON for POSTs and WebSockets); game creation is
admitted by `GameHub.create` (a rate and a cap of live games per client, the server's cap).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp

from caligo.agents import registry
from caligo.agents.base import TimeControl, color_from_name
from caligo.agents.untrusted_json import UntrustedJsonError, loads_untrusted
from caligo.play.pgn import standard_pgn
from caligo.play.workers import WorkerStats
from caligo.web.admission import client_key
from caligo.web.errors import (
    BadRequestError,
    GameRunningError,
    MediaTypeError,
    NotFoundError,
    OriginError,
    RateLimitError,
    RefusedError,
    SeatError,
    ServerBusyError,
    WebError,
)
from caligo.web.guard import GuardConfig, GuardMiddleware
from caligo.web.live import (
    AGENT_NAMES,
    GameHub,
    GameRequest,
    WebConfig,
    encode,
    engine_label,
    error_frame,
    parse_client_message,
    strength_text,
    uses_strength,
)
from caligo.web.pieces import piece_svg
from caligo.web.reveal import finished_row, game_summary, reveal_payload, transcript

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
TIME_CONTROLS = (("1+2", "60+2"), ("3+2", "180+2"), ("5+0", "300+0"), ("Untimed", "none"))
"""(label in minutes+seconds as players say it, `TimeControl` text in seconds) pairs."""
STRENGTHS = ("mt=0.2", "mt=1", "mt=3", "iters=1000", "iters=4000")
ABOUT = {
    "obscuro": "Caligo plays Obscuro, a search for Fog of War that keeps track of every position "
    "you could be in and plans against all of them at once.",
    "zs21": "Caligo plays ZS21, a search for Fog of War over the positions you could be in.",
    "stockfish-pi": "Caligo guesses one position you could be in and plays Stockfish's move there.",
    "random": "Caligo plays random legal moves: a test opponent, not a strong one.",
}
"""What the lobby tells a player about each engine (no option syntax, no internals)."""
MAX_BODY_BYTES = 4096
SEAT_CLOSE_CODE = 4403
IDLE_CLOSE_CODE = 4408
"""Close code of a WebSocket that sent nothing within the idle timeout of opening."""
_STATUS: tuple[tuple[type[WebError], int], ...] = (
    (NotFoundError, 404),
    (GameRunningError, 409),
    (SeatError, 403),
    (OriginError, 403),
    (MediaTypeError, 415),
    (RateLimitError, 429),
    (ServerBusyError, 503),
)


def _status(exc: WebError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400


class CaligoApp(FastAPI):
    """FastAPI with `GuardMiddleware` outermost: its headers and limits hold for every response,
    the server-error page included."""

    guard_config: GuardConfig = GuardConfig()

    def build_middleware_stack(self) -> ASGIApp:
        return GuardMiddleware(super().build_middleware_stack(), self.guard_config)


def create_app(
    config: WebConfig,
    limits: GuardConfig | None = None,
    now: Callable[[], float] = time.monotonic,
    on_close: Callable[[WorkerStats], None] | None = None,
) -> FastAPI:
    """Build the app for `config` within `limits` (default `GuardConfig()`: localhost only);
    the hub, its store, its limits and its engine workers live as long as the app. `now` is
    the clock of the games (monotonic seconds; injectable for tests); `on_close` receives the
    engine workers' record when the app stops."""
    limits = limits or GuardConfig()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub = GameHub(config, now=now)
        app.state.hub = hub
        await hub.start()
        log.info("caligo web: engine %s, database %s", config.agent, config.db)
        try:
            yield
        finally:
            stats = hub.workers.stats()
            await hub.close()
            if on_close is not None:
                on_close(stats)

    docs = {} if limits.api_docs else {"docs_url": None, "redoc_url": None, "openapi_url": None}
    app = CaligoApp(title="Caligo: Fog of War chess", lifespan=lifespan, **docs)  # type: ignore[arg-type]
    app.guard_config = limits

    def hub_of(request: Request | WebSocket) -> GameHub:
        return request.app.state.hub  # type: ignore[no-any-return]

    @app.exception_handler(WebError)
    async def _web_error(request: Request, exc: WebError) -> JSONResponse:
        code = getattr(exc, "code", type(exc).__name__)
        body: dict[str, Any] = {"error": str(exc), "code": code}
        headers = {}
        if isinstance(exc, RefusedError) and exc.retry_after is not None:
            body["retry_after"] = exc.retry_after
            headers["Retry-After"] = str(exc.retry_after)
        return JSONResponse(body, status_code=_status(exc), headers=headers)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/pieces/{name}.svg", include_in_schema=False)
    async def piece(name: str) -> Response:
        return Response(
            piece_svg(name),
            media_type="image/svg+xml",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    @app.get("/api/info")
    async def info(request: Request) -> dict[str, Any]:
        agent = hub_of(request).config.agent
        entry = registry.parse_spec(agent)
        description = ""
        if not entry.external:
            description = registry.info(entry.name).description
        name = AGENT_NAMES.get(entry.name, entry.label)
        strengths = list(STRENGTHS) if uses_strength(agent) else []
        return {
            "engine": agent,
            "description": description,
            "engine_name": engine_label(agent, TimeControl.parse(STRENGTHS[1])),
            "about": ABOUT.get(entry.name, f"Caligo plays the engine {name}."),
            "time_controls": [{"label": label, "tc": tc} for label, tc in TIME_CONTROLS],
            "strengths": strengths,
            "strength_labels": {s: strength_text(TimeControl.parse(s)) for s in strengths},
        }

    async def json_body(request: Request) -> Any:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise BadRequestError(f"request too large: {len(body)} bytes (limit {MAX_BODY_BYTES})")
        try:
            return loads_untrusted(body or b"{}", max_bytes=MAX_BODY_BYTES)
        except UntrustedJsonError as exc:
            raise BadRequestError(f"invalid JSON body: {exc}") from None

    @app.post("/api/games", status_code=201)
    async def new_game(request: Request) -> dict[str, Any]:
        data = await json_body(request)
        game = GameRequest.from_json(data)
        live, token = await hub_of(request).create(game, client_key(request.scope.get("client")))
        return {"game": live.game_id, "seat": token, "color": ("white", "black")[live.human]}

    @app.post("/api/games/{game_id}/rematch", status_code=201)
    async def rematch(request: Request, game_id: str) -> dict[str, Any]:
        data = await json_body(request)
        if not isinstance(data, dict) or set(data) != {"seat"}:
            raise BadRequestError(f'a rematch request is {{"seat": TOKEN}}, got {data!r:.80}')
        client = client_key(request.scope.get("client"))
        live, token = await hub_of(request).rematch(game_id, data["seat"], client)
        return {"game": live.game_id, "seat": token, "color": ("white", "black")[live.human]}

    @app.get("/api/games")
    async def games(request: Request, limit: int = 100) -> list[dict[str, Any]]:
        store = hub_of(request).store.games
        rows = store.games(status="finished", limit=max(1, min(limit, 1000)))
        return [game_summary(r) for r in rows]

    @app.get("/api/games/{game_id}")
    async def game(request: Request, game_id: str) -> dict[str, Any]:
        hub = hub_of(request)
        meta = hub.store.meta(game_id)
        return reveal_payload(hub.store.games, game_id, None if meta is None else meta.human)

    @app.get("/api/games/{game_id}/pgn")
    async def pgn(request: Request, game_id: str) -> Response:
        row = finished_row(hub_of(request).store.games, game_id)
        return Response(
            row.pgn,
            media_type="application/x-chess-pgn",
            headers={"Content-Disposition": f'attachment; filename="caligo-{row.id}.pgn"'},
        )

    @app.get("/api/games/{game_id}/pgn/standard")
    async def pgn_standard(request: Request, game_id: str) -> Response:
        row = finished_row(hub_of(request).store.games, game_id)
        name = f"caligo-{row.id}-standard.pgn"
        return Response(
            standard_pgn(row.pgn),
            media_type="application/x-chess-pgn",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.get("/api/games/{game_id}/transcript/{color}")
    async def transcript_file(request: Request, game_id: str, color: str) -> Response:
        try:
            side = color_from_name(color)
        except ValueError:
            raise BadRequestError(f"invalid colour {color!r} (white or black)") from None
        text = transcript(hub_of(request).store.games, game_id, side).to_json()
        name = f"caligo-{game_id}-{color}.json"
        return Response(
            text,
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.websocket("/ws/games/{game_id}")
    async def seat_socket(websocket: WebSocket, game_id: str) -> None:
        hub = hub_of(websocket)
        await websocket.accept()
        try:
            hub.check_seat(game_id, websocket.query_params.get("seat"))
            live = await hub.attach(game_id, websocket)
        except (SeatError, NotFoundError) as exc:
            await websocket.send_text(encode(error_frame("forbidden", str(exc))))
            await websocket.close(code=SEAT_CLOSE_CODE)
            return
        heard = False
        try:
            while True:
                if heard:
                    message = await websocket.receive()
                else:  # a socket that never sends anything is not kept
                    with anyio.move_on_after(limits.idle_timeout_s):
                        message = await websocket.receive()
                        heard = True
                    if not heard:
                        note = f"no message within {limits.idle_timeout_s:g} s: closed"
                        await websocket.send_text(encode(error_frame("idle", note)))
                        await websocket.close(code=IDLE_CLOSE_CODE)
                        break
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    text = message.get("bytes")
                try:
                    request = parse_client_message(text, hub.config.max_message_bytes)
                    await live.handle(request, websocket)
                except BadRequestError as exc:
                    await websocket.send_text(encode(error_frame(exc.code, str(exc))))
        except WebSocketDisconnect:
            pass
        finally:
            live.detach(websocket)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


__all__ = ["STRENGTHS", "TIME_CONTROLS", "create_app"]
