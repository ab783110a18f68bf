"""The caligo-fow v1 wire format: every message round-trips, encodes to fixed bytes, and bad
lines raise ProtocolError quoting them.

Expected values: the message shapes written out in docs/protocol.md and docs/design.md, "The
referee" (field names, "white"/"black", UCI moves, dark FENs from `Observation.dark_fen`).
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caligo.agents.base import Clock, TcKind, TimeControl
from caligo.agents.protocol import (
    MAX_LINE_BYTES,
    EngineHello,
    ErrorReply,
    Force,
    GameOver,
    Go,
    Hello,
    InfoReply,
    IsReady,
    MoveReply,
    NewGame,
    Observe,
    OptionInfo,
    ProtocolError,
    Quit,
    ReadyOk,
    ResignReply,
    SetOption,
    UnknownMessage,
    decode_engine_message,
    decode_referee_message,
    encode,
)
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.position import STARTING_FEN


def _obs(player: int = 1):  # type: ignore[no-untyped-def]
    game = Game()
    game.push_uci("e2e4")
    return observe(game.position, player)


def test_referee_messages_round_trip() -> None:
    obs = _obs()
    start = observe(Game().position, 1)
    messages = [
        Hello(),
        SetOption("Budget", "iterations=4000"),
        IsReady(7),
        NewGame("g-1", 1, STARTING_FEN, 918273, TimeControl.parse("180+2"), start),
        Observe("g-1", 1, None, obs),
        Go("g-1", 2, ("a7a6", "e7e5"), Clock(TcKind.CLOCK, 180000, 2000, None, None, None, 179000)),
        Force("g-1", 2, "e7e5"),
        GameOver("g-1", "0-1", "king capture"),
        Quit(),
    ]
    for m in messages:
        line = encode(m)
        assert line.endswith("\n") and line.count("\n") == 1 and " " not in line.split('"')[0]
        assert decode_referee_message(line, 1) == m
        assert encode(decode_referee_message(line.encode(), 1)) == line
    assert encode(messages[4]) == (
        '{"type":"observe","game":"g-1","ply":1,"own_move":null,"observation":"'
        + obs.dark_fen()
        + '"}\n'
    )


def test_engine_messages_round_trip() -> None:
    messages = [
        EngineHello(
            "Caligo",
            engine_version="0.2",
            author="me",
            options=(OptionInfo("Budget", "string", "time"),),
        ),
        ReadyOk(7),
        MoveReply("g-1", 1, "g8f6", {"g8f6": 0.71, "c7c6": 0.29}, 0.12, {"belief": 17264}),
        MoveReply("g-1", 1, "g8f6"),
        InfoReply("g-1", 1, {"nodes": 300000, "ms": 1500}),
        ResignReply("g-1", 5),
        ErrorReply("out of memory", "g-1", 5),
    ]
    for m in messages:
        assert decode_engine_message(encode(m)) == m
    unknown = decode_engine_message('{"type":"ponderhit","x":1}')
    assert isinstance(unknown, UnknownMessage) and unknown.type == "ponderhit"
    # unknown fields are ignored (forward compatibility)
    assert decode_engine_message('{"type":"readyok","id":3,"extra":[1,2]}') == ReadyOk(3)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("not json", "malformed JSON"),
        ("[1, 2]", "not a message object"),
        ('{"kind":"move"}', "not a message object"),
        ('{"type":"move","game":"g","ply":"1","move":"e2e4"}', "'ply' must be an integer"),
        ('{"type":"move","game":"g","ply":1}', "'move' must be a string"),
        ('{"type":"move","game":"g","ply":1,"move":"e2e4","value":"high"}', "finite number"),
        ('{"type":"move","game":"g","ply":1,"move":"e2e4","policy":{"e2e4":"x"}}', "policy"),
        ('{"type":"hello","protocol":"caligo-fow"}', "'version' must be an integer"),
    ],
)
def test_bad_engine_lines(line: str, match: str) -> None:
    with pytest.raises(ProtocolError, match=match) as info:
        decode_engine_message(line)
    assert line[:20] in str(info.value)  # the message quotes the line


def test_bad_referee_lines() -> None:
    with pytest.raises(ProtocolError, match="observe before newgame"):
        decode_referee_message('{"type":"observe","game":"g","ply":1,"observation":"x"}')
    with pytest.raises(ProtocolError, match="invalid dark fen"):
        decode_referee_message('{"type":"observe","game":"g","ply":1,"observation":"x"}', 0)
    with pytest.raises(ProtocolError, match="colour"):
        decode_referee_message('{"type":"newgame","game":"g","color":"red"}')
    with pytest.raises(ProtocolError, match="unknown result"):
        decode_referee_message('{"type":"gameover","game":"g","result":"2-0","termination":"x"}')
    big = json.dumps({"type": "info", "pad": "x" * MAX_LINE_BYTES})
    with pytest.raises(ProtocolError, match="longer than 65536 bytes"):
        decode_engine_message(big)
    with pytest.raises(ProtocolError, match="not UTF-8"):
        decode_engine_message(b'{"type":"readyok","id":1,"x":"\xff"}')


# --- untrusted lines: every input decodes or raises ProtocolError ----------------------------

_HOLE = "\u0000HOLE\u0000"
_hostile_values = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e309", "1e300", "-1", "0.5"]),
    st.builds(lambda n: "9" * n, st.integers(1, 6000)),
    st.builds(lambda d: "[" * d + "]" * d, st.integers(0, 3000)),
    st.builds(lambda d: '{"a":' * d + "1" + "}" * d, st.integers(0, 200)),
    st.builds(json.dumps, st.text(max_size=10) | st.integers() | st.booleans() | st.none()),
)


def _valid_lines() -> list[str]:
    obs, start = _obs(0), observe(Game().position, 0)
    clock = Clock(TcKind.CLOCK, 180000, 2000, None, None, 5000, 179000)
    return [
        encode(m)
        for m in (
            NewGame("g", 0, STARTING_FEN, 9, TimeControl.parse("180+2"), start),
            NewGame("g", 0, STARTING_FEN, 9, TimeControl.parse("mt=2.5"), start),
            Observe("g", 1, "e2e4", obs),
            Go("g", 1, ("e2e4",), clock),
            Force("g", 1, "e2e4"),
            IsReady(3),
            SetOption("x", "1"),
            MoveReply("g", 1, "e2e4", {"e2e4": 1.0}, 0.5, {"nodes": 3}),
            InfoReply("g", 1, {"nodes": 3}),
            ErrorReply("x", "g", 1),
            EngineHello("e", options=(OptionInfo("a"),)),
        )
    ]


_VALID = _valid_lines()


def _paths(data: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for key, value in data.items():
        out.append((*prefix, key))
        if isinstance(value, dict):
            out.extend(_paths(value, (*prefix, key)))
    return out


@st.composite
def _hostile_lines(draw: st.DrawFn) -> str:
    """A valid message with one field (at any depth) replaced by a hostile JSON value."""
    data = json.loads(draw(st.sampled_from(_VALID)))
    path = draw(st.sampled_from(_paths(data)))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = _HOLE
    return json.dumps(data).replace(json.dumps(_HOLE), draw(_hostile_values))


_any_text = st.text(st.characters(exclude_categories=()), max_size=200)  # surrogates too


@given(_hostile_lines() | _any_text, st.sampled_from([None, 0, 1]))
@settings(max_examples=400, deadline=None)
def test_any_line_decodes_or_raises_protocol_error(line: str, player: int | None) -> None:
    """Never RecursionError, ValueError, OverflowError or TypeError: only ProtocolError."""
    for decode in (lambda t: decode_referee_message(t, player), decode_engine_message):
        for form in (line, line.encode("utf-8", "surrogatepass")):
            try:
                message = decode(form)
            except ProtocolError as exc:
                assert type(exc) is ProtocolError
                continue
            wire = message.to_wire() if hasattr(message, "to_wire") else message.data
            json.dumps(wire, allow_nan=False)  # what was accepted is finite JSON


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("own_ms", "Infinity", "non-finite"),
        ("own_ms", "1e400", "non-finite"),
        ("own_ms", "NaN", "non-finite"),
        ("own_ms", "1e300", "must be in [0, 1000000000]"),
        ("own_ms", "-1", "must be in [0, 1000000000]"),
        ("increment_ms", "2.5", "whole number"),
        ("increment_ms", '"5"', "must be a number"),
        ("own_ms", "9" * 5000, "integer too long"),
        ("opponent_ms", "1000000001", "must be in [0, 1000000000]"),
    ],
)
def test_clock_times_are_finite_whole_and_bounded(field: str, value: str, named: str) -> None:
    line = (
        '{"type":"go","game":"g","ply":1,"legal":["e2e4"],'
        '"clock":{"kind":"clock","own_ms":1000,"increment_ms":0,"' + field + '":' + value + "}}"
    )
    with pytest.raises(ProtocolError, match=re.escape(named)):
        decode_referee_message(line, 0)
    ok = line.replace(value, "1000000000")
    assert decode_referee_message(ok, 0)  # the bound itself is accepted
    assert decode_referee_message(line.replace(value, "2500.0"), 0)  # an integral float too
