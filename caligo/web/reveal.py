"""The post-game reveal: truth beside what each side saw, engine diagnostics, transcripts.

Built only for finished games, from the play layer's event log (`GameStore.reveal`, which
refuses a running game): for every ply the true move and SAN, the true FEN after it (replayed
from the start FEN with `caligo.fow.game.Game`), White's and Black's views as they were shown
(`caligo.fow.view.view_data` of the stored dark FENs, with each side's own-last-move and lost-
square hints), the clocks, the mover's think time and the engine's diagnostics (policy, value,
info, with the policy's moves in SAN). This is Mistboard's rule: "public only after terminal
state". `standard` says how many plies a standard chess program reads (`caligo.play.pgn.
standard_cut`), so the page can say where the PGN stops for them.

The engine's belief (`caligo.agents.belief_map`): each position of the game (the start and the
position after every ply) carries `beliefs`, by the believer's colour, the picture of the
engine's set P about that position: the `belief_map` of the engine's next decision there when it
was to move, or the `belief_map_prev` of its following decision when the opponent was (P after
the engine's own move, while the opponent thought). A picture is placed by its own `ply` and
shown only if `read_belief_map` accepts it and it is about the other side's pieces; the raw
pictures are taken out of the analysis' `info`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from caligo.agents.base import COLOR_NAMES
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, BeliefMapError, read_belief_map
from caligo.fow.game import Game
from caligo.fow.notation import move_to_san
from caligo.fow.observation import Observation, observe, parse_dark_fen
from caligo.fow.position import BLACK, WHITE, from_fen, move_to_uci
from caligo.fow.transcript import Transcript, TranscriptEntry
from caligo.fow.view import view_data
from caligo.play.errors import StorageError
from caligo.play.pgn import standard_cut
from caligo.play.storage import GameRow, GameStore
from caligo.web.errors import GameNotFoundError, GameRunningError

POLICY_TOP = 8
"""Moves of an engine policy shown per ply (highest probability first)."""
PICTURES = (BELIEF_MAP, BELIEF_MAP_PREV)
"""The analysis keys that hold belief pictures (shown per position, not in `info`)."""

log = logging.getLogger(__name__)


def finished_row(store: GameStore, game_id: str) -> GameRow:
    """The `games` row of a finished game; raise GameNotFoundError / GameRunningError."""
    try:
        row = store.game(game_id)
    except StorageError:
        raise GameNotFoundError(f"no game {game_id!r}") from None
    if not row.finished:
        raise GameRunningError(f"game {game_id!r} is still running: nothing is revealed yet")
    return row


def _diagnostics(info: dict[str, Any], sans: dict[str, str]) -> dict[str, Any] | None:
    """The engine's analysis of one ply; `sans` maps the mover's legal moves to SAN."""
    if not info:
        return None
    out: dict[str, Any] = {}
    policy = info.get("policy")
    if isinstance(policy, dict) and policy:
        top = sorted(policy.items(), key=lambda kv: (-kv[1], kv[0]))[:POLICY_TOP]
        out["policy"] = [[uci, p, sans.get(uci, uci)] for uci, p in top]
        out["policy_size"] = len(policy)
    if "value" in info:
        out["value"] = info["value"]
    if isinstance(info.get("info"), dict):
        out["info"] = {k: v for k, v in info["info"].items() if k not in PICTURES}
    return out or None


def _beliefs(plies: Sequence[Any], movers: Sequence[int]) -> list[dict[str, Any]]:
    """Per position (index = plies played), the belief pictures about it by believer colour
    (module docstring); `movers[i]` is the colour that made ply i + 1."""
    out: list[dict[str, Any]] = [{} for _ in range(len(plies) + 1)]
    for i, (p, mover) in enumerate(zip(plies, movers, strict=True)):
        info = (p.engine_info or {}).get("info")
        if not isinstance(info, dict):
            continue
        for key, at in ((BELIEF_MAP, i), (BELIEF_MAP_PREV, i - 1)):
            if key not in info:
                continue
            try:
                picture = read_belief_map(info[key])
            except BeliefMapError as exc:
                log.info("game ply %d: %s dropped: %s", p.ply, key, exc)
                continue
            if picture["ply"] != at or picture["color"] != COLOR_NAMES[1 - mover]:
                log.info("game ply %d: %s about ply %d of %s's pieces dropped", p.ply, key,
                         picture["ply"], picture["color"])
                continue
            out[at][COLOR_NAMES[mover]] = picture
    return out


class _SideViews:
    """One side's views along the game, with the hints that side was shown."""

    def __init__(self, color: int, initial: Observation) -> None:
        self.color = color
        self.after_own: Observation | None = None
        self.own_last: str | None = None
        self.initial = initial

    def add(self, mover: int, uci: str, obs: Observation) -> dict[str, Any]:
        if mover == self.color:
            self.after_own, self.own_last = obs, uci
        return _board(view_data(obs, self.after_own, self.own_last))


def _board(view: dict[str, Any]) -> dict[str, Any]:
    """A view without the legal move list (nothing is playable in a replay)."""
    return {k: v for k, v in view.items() if k != "legal_moves"}


def reveal_payload(store: GameStore, game_id: str, human: int | None = None) -> dict[str, Any]:
    """Return the whole reveal of a finished game as JSON-ready data.

    `human` is the colour the web page's player had (None for games played elsewhere).
    """
    row = finished_row(store, game_id)
    plies = store.reveal(game_id)
    start = from_fen(row.start_fen)
    sides = (
        _SideViews(WHITE, observe(start, WHITE)),
        _SideViews(BLACK, observe(start, BLACK)),
    )
    game = Game(row.start_fen)
    out_plies = []
    movers = []
    for p in plies:
        mover = game.turn
        movers.append(mover)
        sans: dict[str, str] = {}
        if p.engine_info:
            pos = game.position
            sans = {move_to_uci(m): move_to_san(pos, m) for m in game.legal_moves()}
        game.push_uci(p.move_uci)
        obs = (parse_dark_fen(WHITE, p.obs_white), parse_dark_fen(BLACK, p.obs_black))
        out_plies.append(
            {
                "ply": p.ply,
                "mover": COLOR_NAMES[mover],
                "uci": p.move_uci,
                "san": p.san,
                "fen": game.fen(),
                "white": sides[WHITE].add(mover, p.move_uci, obs[WHITE]),
                "black": sides[BLACK].add(mover, p.move_uci, obs[BLACK]),
                "clocks": [p.ms_white, p.ms_black],
                "elapsed_ms": p.elapsed_ms,
                "engine": _diagnostics(p.engine_info, sans),
            }
        )
    beliefs = _beliefs(plies, movers)
    for entry, about in zip(out_plies, beliefs[1:], strict=True):
        entry["beliefs"] = about
    return {
        **game_summary(row),
        "detail": row.detail,
        "start_fen": row.start_fen,
        "human": None if human is None else COLOR_NAMES[human],
        "initial": {
            "fen": row.start_fen,
            "white": _board(view_data(sides[WHITE].initial)),
            "black": _board(view_data(sides[BLACK].initial)),
            "beliefs": beliefs[0],
        },
        "plies": out_plies,
        "standard": _standard(row.start_fen, [p.move_uci for p in plies]),
    }


def _standard(start_fen: str, ucis: list[str]) -> dict[str, Any]:
    cut = standard_cut(start_fen, ucis)
    return {"plies": cut.plies, "first": cut.first}


def transcript(store: GameStore, game_id: str, color: int) -> Transcript:
    """`color`'s observation transcript of a finished game (`caligo.fow.transcript` format)."""
    row = finished_row(store, game_id)
    entries = []
    mover = int(from_fen(row.start_fen)[12])
    for p in store.reveal(game_id):
        dark = p.obs_white if color == WHITE else p.obs_black
        own = p.move_uci if mover == color else None
        entries.append(TranscriptEntry(p.ply, own, parse_dark_fen(color, dark)))
        mover = 1 - mover
    return Transcript(color, row.start_fen, tuple(entries))


def game_summary(row: GameRow) -> dict[str, Any]:
    """The public summary of a finished game for the game list."""
    return {
        "id": row.id,
        "created": row.created,
        "white": row.white,
        "black": row.black,
        "tc": row.tc,
        "result": row.result,
        "termination": row.termination,
    }


__all__ = [
    "PICTURES",
    "POLICY_TOP",
    "finished_row",
    "game_summary",
    "reveal_payload",
    "transcript",
]
