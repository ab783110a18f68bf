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

Each resource has its router in `caligo.web.routes` (`page`, `games`, `seat`), with the hub,
the request bodies (Pydantic models over the bounded JSON parser) and the seat token as
dependencies (`caligo.web.routes.deps`); the live-game driver (`caligo.web.live`), the hub
(`caligo.web.hub`) and their storage (`caligo.web.store`) sit below the routes.

The whole app runs inside `caligo.web.guard.GuardMiddleware` (trusted hosts, security headers,
bounded bodies, the page's own origin and JSON for POSTs and WebSockets); game creation is
admitted by `GameHub.create` (a rate and a cap of live games per client, the server's cap).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp

from caligo.play.workers import WorkerStats
from caligo.web.config import WebConfig
from caligo.web.errors import (
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
from caligo.web.hub import GameHub
from caligo.web.routes import games, page, seat
from caligo.web.schemas import short

log = logging.getLogger(__name__)

_STATUS: tuple[tuple[type[WebError], int], ...] = (
    (NotFoundError, 404),
    (GameRunningError, 409),
    (SeatError, 403),
    (OriginError, 403),
    (MediaTypeError, 415),
    (RateLimitError, 429),
    (ServerBusyError, 503),
)
"""The HTTP status of each kind of refusal; any other `WebError` is a 400."""


def _status(exc: WebError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400


async def web_error(request: Request, exc: Exception) -> JSONResponse:
    """A refusal as JSON, `{"error": message, "code": tag}` (and `retry_after` with its
    header when the client should wait)."""
    assert isinstance(exc, WebError)
    body: dict[str, Any] = {"error": str(exc), "code": exc.code}
    headers = {}
    if isinstance(exc, RefusedError) and exc.retry_after is not None:
        body["retry_after"] = exc.retry_after
        headers["Retry-After"] = str(exc.retry_after)
    return JSONResponse(body, status_code=_status(exc), headers=headers)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own refusals (an unknown path, a wrong method) in the same shape as ours."""
    assert isinstance(exc, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    message = {404: f"no such page or API: {short(request.url.path)}",
               405: f"{request.method} is not allowed on {short(request.url.path)}"}
    return JSONResponse(
        {"error": message.get(exc.status_code, str(exc.detail)),
         "code": codes.get(exc.status_code, "bad_request")},
        status_code=exc.status_code, headers=getattr(exc, "headers", None))


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """A query parameter FastAPI could not read (`?limit=abc`): 400 naming it, as ours."""
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    field = ".".join(str(p) for p in first.get("loc", ()) if p != "query")
    return JSONResponse(
        {"error": f"invalid {field or 'request'} {short(first.get('input'))}: "
                  f"{first.get('msg', 'malformed')}", "code": "bad_request"},
        status_code=400)


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
    app.add_exception_handler(WebError, web_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    for module in (page, games, seat):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=page.STATIC), name="static")
    return app


__all__ = ["create_app"]
