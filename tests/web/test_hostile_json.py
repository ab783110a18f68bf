"""Untrusted JSON at the web layer: a request body or a WebSocket frame nested too deeply, with a
huge integer or a non-finite number gets a 400 / an `error` frame, never a 500 or a dropped
socket, and the server goes on serving.

Expected values: Python's `json` module fails on these inputs by itself (RecursionError past the
interpreter's recursion limit, ValueError past 4,300 digits, `inf` for `1e400`), which is what
reached the client before; the codes are the web layer's documented ones (`bad_json`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from caligo.web import WebConfig, create_app
from caligo.web.errors import BadRequestError
from caligo.web.guard import GuardConfig
from caligo.web.schemas import ClientKind, parse_client_message

FRAME_LIMIT = 4096
DEEP = "[" * 2000 + "]" * 2000  # 4,000 bytes: under the frame limit, past the recursion limit
HOSTILE = [
    ("deep", DEEP, "nested too deeply"),
    ("deep object", '{"type":"move","uci":' * 100 + '"e2e4"' + "}" * 100, "nested too deeply"),
    ("huge integer", '{"type":"move","uci":"e2e4","ply":' + "1" * 3000 + "}", "integer too long"),
    ("infinity", '{"type":"move","uci":"e2e4","ply":Infinity}', "non-finite"),
    ("1e400", '{"type":"move","uci":"e2e4","ply":1e400}', "non-finite"),
    ("nan", '{"type":"sync","x":NaN}', "non-finite"),
]


def test_plain_json_loads_fails_on_these_inputs_by_itself() -> None:
    assert sys.getrecursionlimit() < 2000
    with pytest.raises(RecursionError):
        json.loads(DEEP)
    with pytest.raises(ValueError, match="4300"):
        json.loads("1" * 5000)
    assert json.loads("1e400") == float("inf")


@pytest.mark.parametrize(("text", "named"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_frame_is_a_bad_json_error(text: str, named: str) -> None:
    with pytest.raises(BadRequestError, match=named) as info:
        parse_client_message(text, FRAME_LIMIT)
    assert info.value.code == "bad_json"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    config = WebConfig(db=str(tmp_path / "g.sqlite"), agent="random", seed=7, games_per_minute=0,
                       games_per_client=0)
    limits = GuardConfig(allowed_hosts=("testserver",))
    with TestClient(create_app(config, limits)) as c:
        yield c


def test_a_deeply_nested_websocket_frame_gets_an_error_frame_and_the_socket_stays_open(
    client: TestClient,
) -> None:
    r = client.post("/api/games", json={"color": "white", "tc": "none", "strength": "mt=0.05"})
    assert r.status_code == 201
    game = r.json()
    with client.websocket_connect(f"/ws/games/{game['game']}?seat={game['seat']}") as ws:
        before = json.loads(ws.receive_text())
        for _, text, named in HOSTILE:
            ws.send_text(text)
            err = json.loads(ws.receive_text())
            assert err["type"] == "error" and err["code"] == "bad_json", err
            assert named in err["message"]
            ws.send_text('{"type":"sync"}')
            assert json.loads(ws.receive_text()) == before  # same socket, nothing changed
        ws.send_text(json.dumps({"type": "move", "uci": "e2e4", "ply": 0}))
        assert json.loads(ws.receive_text())["ply"] == 1


@pytest.mark.parametrize(("text", "named"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_request_body_is_a_400_not_a_500(
    client: TestClient, text: str, named: str
) -> None:
    body = text.replace('"type":"move","uci":"e2e4","ply"', '"tc"').replace('"type":"sync",', "")
    r = client.post("/api/games", content=body.encode(),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 400, (body[:40], r.status_code, r.text[:200])
    assert named in r.json()["error"]
    assert client.post("/api/games", json={}).status_code == 201  # and the server goes on


_fragments = st.sampled_from(
    ["[", "]", "{", "}", ",", ":", '"type"', '"move"', '"uci"', '"e2e4"', '"ply"', "1", "-",
     "e400", "NaN", "Infinity", "null", "9" * 60, "[" * 50, "]" * 50, '"sync"', "\\", '"']
)
_frames = st.one_of(
    st.lists(_fragments, max_size=80).map("".join),
    st.builds(
        lambda d, v: "[" * d + v + "]" * d,
        st.integers(0, 2000),
        st.sampled_from(["1", '"x"', "Infinity", "1e400", "9" * 50]),
    ),
    st.builds(
        lambda v: '{"type":"move","uci":"e2e4","ply":' + v + "}",
        st.sampled_from(["NaN", "-Infinity", "1e309", "7" * 5000, "[" * 3000, "1.5", "-3"]),
    ),
    st.text(st.characters(exclude_categories=()), max_size=300),  # surrogates too
)


@given(_frames)
@settings(max_examples=400, deadline=None)
def test_any_frame_either_parses_or_is_a_bad_request(text: Any) -> None:
    try:
        message = parse_client_message(text, FRAME_LIMIT)
    except BadRequestError as exc:
        assert exc.code in ("bad_json", "bad_frame", "bad_type", "bad_move", "too_large")
        return
    assert isinstance(message.kind, ClientKind)
