"""No input gets a 500 or drops a socket: every parse error is a 4xx or an `error` frame.

Before: `mt=inf`, `mt=1e400`, `movetime=infinity` and deeply nested JSON gave 500s. Here: the
time controls a person could type that are not finite, wrong JSON types in every field of every
route, and a hypothesis property over the routes' bodies and query strings and the WebSocket's
frames: the status is below 500, a socket answers every frame it can parse and survives the
others, and the server still serves a game afterwards.

Expected values: `TimeControl.parse` refuses non-finite and overlong numbers with
`TimeControlError` (tests/agents), which the web answers with 400 quoting the field; the frame
codes are the web layer's documented ones (docs/web.md, "Protocol").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caligo.web import WebConfig, create_app
from caligo.web.guard import GuardConfig

FRAME_CODES = {"bad_json", "bad_frame", "bad_type", "bad_move", "too_large", "illegal_move",
               "not_your_turn", "stale", "game_over", "bad_request"}
NON_FINITE = ["mt=inf", "mt=1e400", "movetime=infinity", "mt=nan", "mt=-inf", "mt=1e-400",
              "movetime=INF", "mt=0x10", "iters=1e9", "iters=" + "9" * 40,
              "1e400+0", "inf+0", "60+inf", "nan+nan", "mt=" + "9" * 3000]
WRONG = [None, True, 0, -1, 1.5, 10**40, [], {}, ["white"], {"a": 1}, "", " ", "\x00", "é" * 50]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("hostile") / "g.sqlite"
    config = WebConfig(db=str(db), agent="random", seed=9, games_per_minute=0,
                       games_per_client=0)
    app = create_app(config, GuardConfig(allowed_hosts=("testserver",)))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def still_serving(c: TestClient) -> None:
    r = c.post("/api/games", json={"color": "white", "tc": "60+0", "strength": "mt=0.1"})
    assert r.status_code == 201, r.text
    game = r.json()
    with c.websocket_connect(f"/ws/games/{game['game']}?seat={game['seat']}") as ws:
        assert json.loads(ws.receive_text())["type"] == "state"
        ws.send_text('{"type": "abort"}')
        assert json.loads(ws.receive_text())["status"] == "over"


@pytest.mark.parametrize("text", NON_FINITE)
@pytest.mark.parametrize("field", ["tc", "strength"])
def test_a_time_control_that_is_not_a_finite_number_is_a_400(
    client: TestClient, field: str, text: str
) -> None:
    r = client.post("/api/games", json={field: text})
    assert r.status_code == 400, (field, text, r.status_code, r.text[:200])
    assert repr(text[:30])[:-1] in r.json()["error"]  # the bad value is quoted


@pytest.mark.parametrize("value", WRONG, ids=repr)
@pytest.mark.parametrize("field", ["color", "tc", "strength", "other"])
def test_a_wrong_type_in_any_field_of_a_game_request_is_a_400(
    client: TestClient, field: str, value: Any
) -> None:
    r = client.post("/api/games", json={field: value})
    assert r.status_code == 400, (field, value, r.status_code, r.text[:200])
    assert r.json()["error"]


@pytest.mark.parametrize("value", [*WRONG, "x" * 100], ids=repr)
def test_a_wrong_type_in_a_rematch_request_is_a_4xx(client: TestClient, value: Any) -> None:
    r = client.post("/api/games", json={"tc": "none"})
    game = r.json()["game"]
    for body in ({"seat": value}, value, {"seat": value, "x": 1}):
        r = client.post(f"/api/games/{game}/rematch", content=json.dumps(body),
                        headers={"Content-Type": "application/json"})
        assert r.status_code in (400, 403), (body, r.status_code, r.text[:200])
    r = client.post(f"/api/games/{'x' * 300}/rematch", json={"seat": "t"})
    assert r.status_code == 403


@pytest.mark.parametrize(
    "path",
    ["/api/games?limit=abc", "/api/games?limit=1e400", "/api/games?limit=1.5",
     "/api/games?limit=" + "9" * 5000, "/api/games?limit=",
     "/api/games/%00", "/api/games/" + "x" * 2000, "/api/games/..%2F..%2Fetc",
     "/api/games/x/transcript/" + "w" * 500, "/api/games/x/transcript/%F0",
     "/api/games/x/pgn", "/api/games/x/pgn/standard", "/pieces/..%2Fapp.svg",
     "/pieces/" + "w" * 1000 + ".svg", "/static/..%2F..%2Fapp.py", "/static/%00"],
)
def test_malformed_query_strings_and_paths_are_4xx(client: TestClient, path: str) -> None:
    """Each a 4xx in the server's one error shape, `{"error", "code"}` (unknown paths and
    unreadable query values gave FastAPI's `{"detail": ...}`)."""
    r = client.get(path)
    assert 400 <= r.status_code < 500, (path, r.status_code, r.text[:200])
    if r.headers.get("content-type", "").startswith("application/json"):
        body = r.json()
        assert set(body) >= {"error", "code"} and "detail" not in body, (path, body)
        assert body["code"].islower() and " " not in body["code"], body  # a tag, not a class


@pytest.mark.parametrize(("query", "status"), [
    ("limit=0", 400), ("limit=-1", 400), ("limit=1001", 400), ("limit=1000", 200),
    ("limit=abc", 400),
])
def test_the_game_list_limit_is_checked(client: TestClient, query: str, status: int) -> None:
    """`limit=-1` listed games as if no limit had been given; out of 1 to 1,000 is a 400."""
    r = client.get(f"/api/games?{query}")
    assert r.status_code == status, r.text[:200]
    if status == 400:
        assert r.json()["code"] == "bad_request" and "limit" in r.json()["error"]


# --- properties --------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False,
    allow_infinity=False), st.text(max_size=40),
    st.sampled_from(["white", "black", "random", "none", "60+2", "mt=1", "iters=4000", "mt=0.05",
                     "e2e4", "move", "sync"]),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["color", "tc", "strength", "seat", "type", "uci", "ply",
                                         "x"]), inner, max_size=4),
    ),
    max_leaves=12,
)
_raw = st.one_of(
    _json.map(json.dumps),
    st.text(max_size=200),
    st.builds(lambda d: "[" * d + "]" * d, st.integers(0, 3000)),
    st.builds(lambda d: '{"a":' * d + "1" + "}" * d, st.integers(0, 1500)),
    st.sampled_from(["1e400", "-Infinity", "NaN", "9" * 5000, '{"tc": 1e999}', '{"tc": "mt=inf"}',
                     '{"strength": "movetime=infinity"}']),
)


@given(route=st.sampled_from(["/api/games", "/api/games/ROUTE/rematch", "/api/games/nope/rematch"]),
       body=_raw)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_request_body_gets_a_server_error(client: TestClient, route: str, body: str) -> None:
    if "ROUTE" in route:
        finished = client.get("/api/games?limit=1").json()
        route = route.replace("ROUTE", finished[0]["id"] if finished else "w0")
    r = client.post(route, content=body.encode("utf-8", "surrogatepass"),
                    headers={"Content-Type": "application/json"})
    assert r.status_code < 500, (route, body[:100], r.status_code, r.text[:200])
    assert r.status_code in (201, 400, 403, 404, 409, 413), r.status_code
    assert client.get("/api/info").status_code == 200


_url_text = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=60)


@given(query=_url_text, game=_url_text)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_query_or_path_gets_a_server_error(client: TestClient, query: str, game: str) -> None:
    for path, params in (("/api/games", {"limit": query}), (f"/api/games/{game}", {}),
                         (f"/api/games/{game}/transcript/{query}", {}),
                         (f"/api/games/{game}/pgn", {})):
        r = client.get(path, params=params)
        assert r.status_code < 500, (path, params, r.status_code, r.text[:200])


_frame_objects = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["move", "sync", "resign", "abort", "castle"]), _scalars)},
    optional={"uci": st.one_of(st.sampled_from(["e2e4", "e7e5", "a1a8", "e2e4q"]), _json),
              "ply": _json, "x": _json},
).map(json.dumps)


@given(frames=st.lists(st.one_of(_frame_objects, _raw, st.binary(max_size=50)), min_size=1,
                       max_size=6))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_websocket_frame_drops_the_socket_or_the_server(
    client: TestClient, frames: list[Any]
) -> None:
    r = client.post("/api/games", json={"color": "white", "tc": "none", "strength": "mt=0.05"})
    game = r.json()
    with client.websocket_connect(f"/ws/games/{game['game']}?seat={game['seat']}") as ws:
        assert json.loads(ws.receive_text())["type"] == "state"
        for i, frame in enumerate(frames):
            if isinstance(frame, bytes):
                ws.send_bytes(frame)
            else:
                ws.send_text(frame)
            sentinel = f"sentinel-{i}"
            ws.send_text(json.dumps({"type": sentinel}))  # answered after the frame, in order
            while True:
                reply = json.loads(ws.receive_text())
                assert reply["type"] in ("state", "error"), reply
                if reply["type"] == "error":
                    assert reply["code"] in FRAME_CODES, reply
                    if sentinel in reply["message"]:
                        break
    still_serving(client)
