"""The web app's seams: request models (`caligo.web.schemas`), one router per resource
(`caligo.web.routes`), and the layering inside the package (routes above the hub and the
live-game driver, never touching a session or the rules).

Expected values: the routes are the ones docs/web.md and `caligo.web.app`'s docstring list; the
defaults are the lobby form's (random colour, untimed, 1 s per move); time-control texts are
parsed by `caligo.agents.timing.TimeControl`, the one parser of the project.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from caligo.agents.base import UNTIMED, TcKind, TimeControl
from caligo.web import WebConfig, create_app
from caligo.web.errors import BadRequestError
from caligo.web.schemas import ColorChoice, GameRequest, RematchBody, validate_body

ROUTES_DIR = Path(__file__).resolve().parents[2] / "caligo" / "web" / "routes"


def test_an_empty_game_request_is_the_lobby_s_default() -> None:
    """No strength: the server's default (1 s a move, or the ladder's level: the hub decides,
    tests/web/test_levels.py)."""
    assert GameRequest.from_json({}) == GameRequest(ColorChoice.RANDOM, UNTIMED, None, None)
    assert GameRequest.from_json({"strength": "level=3"}).level == 3


def test_a_full_game_request() -> None:
    req = GameRequest.from_json({"color": "black", "tc": "180+2", "strength": "iters=4000"})
    assert req.color is ColorChoice.BLACK
    assert req.time_control == TimeControl.parse("180+2")
    assert req.strength == TimeControl(TcKind.ITERATIONS, iterations=4000)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"color": 1}, ["color", "1"]),  # strict: a number is not a colour
        ({"tc": 180}, ["tc", "180"]),  # nor a time control
        ({"strength": None}, ["strength", "None"]),
        ({"color": "white", "side": "w"}, ["unknown field", "'side'"]),
        ("white", ["JSON object", "'white'"]),
        ({"tc": "mt=1"}, ["clock or none", "mt=1"]),
        ({"strength": "none"}, ["mt=SECONDS or iters=N", "'none'"]),
        ({"tc": "0.001+0"}, ["too short", "at least 1 s"]),  # a 1 ms clock was accepted
        ({"tc": "0.5+5"}, ["too short"]),
    ],
)
def test_a_bad_game_request_names_the_field_and_quotes_the_value(data: Any,
                                                                 words: list[str]) -> None:
    with pytest.raises(BadRequestError) as info:
        GameRequest.from_json(data)
    for word in words:
        assert word in str(info.value), (data, str(info.value))


def test_a_bad_time_control_is_named_once() -> None:
    """The message said "invalid time control: invalid time control: ..."."""
    with pytest.raises(BadRequestError) as info:
        GameRequest.from_json({"tc": "0+0"})
    assert str(info.value).count("invalid time control") == 1 and "'0+0'" in str(info.value)
    assert GameRequest.from_json({"tc": "1+0"}).time_control.initial_ms == 1000  # the shortest


def test_a_rematch_body_takes_any_seat_value_and_nothing_else() -> None:
    assert validate_body(RematchBody, {"seat": 42}, "a rematch request").seat == 42
    with pytest.raises(BadRequestError, match=r"unknown field.*'x'"):
        validate_body(RematchBody, {"seat": "t", "x": 1}, "a rematch request")
    with pytest.raises(BadRequestError, match="seat"):
        validate_body(RematchBody, {}, "a rematch request")


def test_the_routes_are_the_documented_ones(tmp_path: Path) -> None:
    app = create_app(WebConfig(db=str(tmp_path / "w.sqlite"), agent="random"))
    g = {"game_id": "w1"}
    expected = {
        "index": ({}, "/"), "piece": ({"name": "wN"}, "/pieces/wN.svg"),
        "info": ({}, "/api/info"), "new_game": ({}, "/api/games"), "games": ({}, "/api/games"),
        "rematch": (g, "/api/games/w1/rematch"), "game": (g, "/api/games/w1"),
        "pgn": (g, "/api/games/w1/pgn"), "pgn_standard": (g, "/api/games/w1/pgn/standard"),
        "transcript_file": ({**g, "color": "white"}, "/api/games/w1/transcript/white"),
        "seat_socket": (g, "/ws/games/w1"),
    }
    for name, (params, path) in expected.items():
        assert app.url_path_for(name, **params) == path, name


def test_the_api_docs_show_the_request_bodies(tmp_path: Path) -> None:
    """With the API docs on (`GuardConfig(api_docs=True)`), creation and rematch document their
    bodies: the models' fields, which the bounded parser and `validate_body` enforce."""
    from caligo.web import GuardConfig

    app = create_app(WebConfig(db=str(tmp_path / "w.sqlite"), agent="random"),
                     GuardConfig(api_docs=True))
    paths = app.openapi()["paths"]
    body = paths["/api/games"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["properties"]) == {"color", "tc", "strength"}
    assert body["additionalProperties"] is False
    rematch = paths["/api/games/{game_id}/rematch"]["post"]["requestBody"]
    assert "seat" in rematch["content"]["application/json"]["schema"]["properties"]


def test_routes_stay_above_the_hub() -> None:
    """No router imports the play layer's session, the rules or the engines: it asks the hub."""
    for path in sorted(ROUTES_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(
                    ("caligo.play.session", "caligo.fow", "caligo.agents.obscuro",
                     "caligo.agents.zs21", "caligo.search")), (path.name, node.module)
