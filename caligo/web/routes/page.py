"""The page and what it shows before a game: `/` (static, no CDN), the piece images and
`/api/info` (the engine played and the choices offered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response

from caligo.agents import registry
from caligo.agents.base import UNTIMED, TimeControl
from caligo.agents.ladder import LEVELS
from caligo.web.config import (
    AGENT_NAMES,
    engine_label,
    level_of,
    strength_text,
    uses_levels,
    uses_strength,
)
from caligo.web.pieces import piece_svg
from caligo.web.routes.deps import Hub

STATIC = Path(__file__).resolve().parent.parent / "static"
TIME_CONTROLS = (("1+2", "60+2"), ("3+2", "180+2"), ("5+0", "300+0"), ("Untimed", "none"))
"""(label in minutes+seconds as players say it, `TimeControl` text in seconds) pairs."""
STRENGTHS = ("mt=0.2", "mt=1", "mt=3", "iters=1000", "iters=4000")
ABOUT = {
    "obscuro": "Caligo plays Obscuro, a search for Fog of War that keeps track of every position "
    "you could be in and plans against all of them at once.",
    "zs21": "Caligo plays ZS21, a search for Fog of War over the positions you could be in.",
    "stockfish-pi": "Caligo guesses one position you could be in and plays Stockfish's move there.",
    "random": "Caligo plays random legal moves: a test opponent, not a strong one.",
    "caligo": "Pick Caligo's level: 1 plays random moves, 6 and 7 are Obscuro, a search for Fog "
    "of War that keeps track of every position you could be in and plans against all of them at "
    "once. "
    "Each level was measured in matches against its neighbours.",
}
"""What the lobby tells a player about each engine (no option syntax, no internals)."""

router = APIRouter()


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The page (re-validated at each load: a new server's page is never stale)."""
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


@router.get("/pieces/{name}.svg", include_in_schema=False)
async def piece(name: str) -> Response:
    """A vector piece (`wN`, `bQ`, ...); NotFoundError for any other name."""
    return Response(
        piece_svg(name),
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


@router.get("/api/info")
async def info(hub: Hub) -> dict[str, Any]:
    """The engine played, in words, and the time controls and strengths offered."""
    agent = hub.config.agent
    entry = registry.parse_spec(agent)
    description = ""
    if not entry.external:
        description = registry.info(entry.name).description
    name = AGENT_NAMES.get(entry.name, entry.label)
    out: dict[str, Any] = {
        "engine": agent,
        "description": description,
        "about": ABOUT.get(entry.name, f"Caligo plays the engine {name}."),
        "time_controls": [{"label": label, "tc": tc} for label, tc in TIME_CONTROLS],
    }
    if uses_levels(agent):
        levels = [f"level={lvl.number}" for lvl in LEVELS]
        return out | {
            "engine_name": engine_label(agent, UNTIMED),
            "strength_kind": "level",
            "strengths": levels,
            "default_strength": f"level={level_of(agent)}",
            "strength_labels": {s: s.removeprefix("level=") for s in levels},
            "strength_titles": {f"level={lvl.number}": f"Level {lvl.number}: {lvl.title}"
                                for lvl in LEVELS},
        }
    strengths = list(STRENGTHS) if uses_strength(agent) else []
    return out | {
        "engine_name": engine_label(agent, TimeControl.parse(STRENGTHS[1])),
        "strength_kind": "time",
        "strengths": strengths,
        "default_strength": STRENGTHS[1] if strengths else None,
        "strength_labels": {s: strength_text(TimeControl.parse(s)) for s in strengths},
        "strength_titles": {},
    }
