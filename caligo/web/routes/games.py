"""The games: creation and rematch (admitted by the hub), the list of finished games, a
finished game's reveal, its PGN (Fog of War and standard) and each side's transcript. A game
still running reveals nothing (409)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from caligo.agents.base import color_from_name
from caligo.play.pgn import standard_pgn
from caligo.web.errors import BadRequestError
from caligo.web.hub import GameHub
from caligo.web.live import LiveGame
from caligo.web.reveal import finished_row, game_summary, reveal_payload, transcript
from caligo.web.routes.deps import Client, Hub, NewGameRequest, Rematch
from caligo.web.schemas import GameRequestBody, RematchBody

MAX_LIST = 1000
"""The most games `GET /api/games` lists at once."""

router = APIRouter(prefix="/api/games")


def _body(model: type[GameRequestBody] | type[RematchBody]) -> dict[str, Any]:
    """The request body's schema for the API docs (the body is read by a dependency, within
    the hostile-input limits, so FastAPI does not see the model by itself)."""
    return {"requestBody": {"required": False, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


def _seat(live: LiveGame, token: str) -> dict[str, Any]:
    return {"game": live.game_id, "seat": token, "color": ("white", "black")[live.human]}


def _download(text: str, media_type: str, name: str) -> Response:
    return Response(text, media_type=media_type,
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.post("", status_code=201, openapi_extra=_body(GameRequestBody))
async def new_game(request: NewGameRequest, hub: Hub, client: Client) -> dict[str, Any]:
    """`{"color", "tc", "strength"}` -> `{"game", "seat", "color"}` (the seat token is the
    only key to the game's WebSocket)."""
    live, token = await hub.create(request, client)
    return _seat(live, token)


@router.post("/{game_id}/rematch", status_code=201, openapi_extra=_body(RematchBody))
async def rematch(game_id: str, body: Rematch, hub: Hub, client: Client) -> dict[str, Any]:
    """`{"seat": TOKEN}` of a finished game -> a new game, same settings, colours swapped."""
    live, token = await hub.rematch(game_id, body.seat, client)
    return _seat(live, token)


@router.get("")
async def games(hub: Hub, limit: int = 100) -> list[dict[str, Any]]:
    """Finished games, newest first (`limit`: 1 to 1,000)."""
    if not 1 <= limit <= MAX_LIST:
        raise BadRequestError(f"invalid limit {limit}: 1 to {MAX_LIST} games")
    rows = hub.store.games.games(status="finished", limit=limit)
    return [game_summary(r) for r in rows]


@router.get("/{game_id}")
async def game(game_id: str, hub: Hub) -> dict[str, Any]:
    """The reveal of a finished game (409 while it runs)."""
    meta = hub.store.meta(game_id)
    return reveal_payload(hub.store.games, game_id, None if meta is None else meta.human)


def _pgn(hub: GameHub, game_id: str) -> tuple[str, str]:
    row = finished_row(hub.store.games, game_id)
    return row.id, row.pgn


@router.get("/{game_id}/pgn")
async def pgn(game_id: str, hub: Hub) -> Response:
    """Its PGN (`[Variant "Fog of War"]`)."""
    gid, text = _pgn(hub, game_id)
    return _download(text, "application/x-chess-pgn", f"caligo-{gid}.pgn")


@router.get("/{game_id}/pgn/standard")
async def pgn_standard(game_id: str, hub: Hub) -> Response:
    """Its PGN for standard chess programs."""
    gid, text = _pgn(hub, game_id)
    return _download(standard_pgn(text), "application/x-chess-pgn",
                     f"caligo-{gid}-standard.pgn")


@router.get("/{game_id}/transcript/{color}")
async def transcript_file(game_id: str, color: str, hub: Hub) -> Response:
    """One side's observation transcript (JSON)."""
    try:
        side = color_from_name(color)
    except ValueError:
        raise BadRequestError(f"invalid colour {color!r} (white or black)") from None
    text = transcript(hub.store.games, game_id, side).to_json()
    return _download(text, "application/json", f"caligo-{game_id}-{color}.json")
