"""A human seat's WebSocket, `/ws/games/{id}?seat=TOKEN`: `state` frames out, moves in
(`caligo.web.schemas.parse_client_message`). A missing or foreign token gets one `error` frame
and the socket is closed (4403), nothing of the game; a malformed, illegal, out-of-turn or
oversized message gets an `error` frame and changes nothing; a socket silent for the idle
timeout after opening gets an `idle` error frame and is closed (4408)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from caligo.web.errors import BadRequestError, NotFoundError, SeatError
from caligo.web.routes.deps import Hub, Limits, SeatToken
from caligo.web.schemas import encode, error_frame, parse_client_message

SEAT_CLOSE_CODE = 4403
IDLE_CLOSE_CODE = 4408
"""Close code of a WebSocket that sent nothing within the idle timeout of opening."""

router = APIRouter()


@router.websocket("/ws/games/{game_id}")
async def seat_socket(websocket: WebSocket, game_id: str, hub: Hub, limits: Limits,
                      seat: SeatToken) -> None:
    """Serve one seat connection until it closes (the game goes on without it)."""
    await websocket.accept()
    try:
        hub.check_seat(game_id, seat)
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
