"""What the routes take as FastAPI dependencies: the app's `GameHub` and guard limits, the
request body parsed within its limits (`caligo.agents.untrusted_json`) and checked against its
model (`caligo.web.schemas`), the client's admission key, and a seat's token."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, Request
from starlette.requests import HTTPConnection

from caligo.agents.untrusted_json import UntrustedJsonError, loads_untrusted
from caligo.web.admission import client_key
from caligo.web.errors import BadRequestError
from caligo.web.guard import GuardConfig
from caligo.web.hub import GameHub
from caligo.web.schemas import GameRequest, RematchBody, validate_body

MAX_BODY_BYTES = 4096
"""The largest request body a route reads (the guard refuses larger ones before, with 413)."""


def get_hub(conn: HTTPConnection) -> GameHub:
    """The app's hub (made by the app's lifespan)."""
    return conn.app.state.hub  # type: ignore[no-any-return]


def get_limits(conn: HTTPConnection) -> GuardConfig:
    """The app's guard limits (`caligo.web.guard.GuardConfig`)."""
    return conn.app.guard_config  # type: ignore[no-any-return]


def get_client(conn: HTTPConnection) -> str:
    """The client's admission key (`caligo.web.admission.client_key`)."""
    return client_key(conn.scope.get("client"))


async def json_body(request: Request) -> Any:
    """The request's body as JSON, parsed within `MAX_BODY_BYTES` and the hostile-input limits
    (depth, sizes, non-finite numbers); an empty body is `{}`. BadRequestError quotes it."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BadRequestError(f"request too large: {len(body)} bytes (limit {MAX_BODY_BYTES})")
    try:
        return loads_untrusted(body or b"{}", max_bytes=MAX_BODY_BYTES)
    except UntrustedJsonError as exc:
        raise BadRequestError(f"invalid JSON body: {exc}") from None


def game_request(data: Annotated[Any, Depends(json_body)]) -> GameRequest:
    """The body of a game creation (`caligo.web.schemas.GameRequestBody`), checked."""
    return GameRequest.from_json(data)


def rematch_body(data: Annotated[Any, Depends(json_body)]) -> RematchBody:
    """The body of a rematch (`caligo.web.schemas.RematchBody`)."""
    return validate_body(RematchBody, data, "a rematch request")  # type: ignore[no-any-return]


def seat_token(seat: Annotated[str | None, Query()] = None) -> str | None:
    """The seat token of a WebSocket (`?seat=TOKEN`); the hub checks it (`GameHub.check_seat`)
    after the socket is accepted, so a refused client gets an error frame, not a bare close."""
    return seat


Hub = Annotated[GameHub, Depends(get_hub)]
Limits = Annotated[GuardConfig, Depends(get_limits)]
Client = Annotated[str, Depends(get_client)]
NewGameRequest = Annotated[GameRequest, Depends(game_request)]
Rematch = Annotated[RematchBody, Depends(rematch_body)]
SeatToken = Annotated[str | None, Depends(seat_token)]
