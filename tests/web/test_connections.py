"""Connections on a real server (`caligo web serve` in a subprocess): floods do not stop service.

Before: idle and slowloris sockets were never timed out (300 idle sockets under a 256-descriptor
limit stopped all service), and a 256 MB POST took the server from 205 to 718 MB.

Here the server runs with a 256-descriptor limit (RLIMIT_NOFILE set in the child); 300 sockets
that send nothing, or only the start of their headers, are opened from one address (127.0.0.2)
or from 300 (127.0.0.2 ... 127.0.1.45: Linux routes all of 127/8 to loopback) and kept open;
then a client from 127.0.0.1 gets the page and plays a whole game. The server's descriptors
(/proc/PID/fd) stay under its limit. No wall-clock deadline is asserted: the client's timeouts
only keep a broken server from hanging the suite.

Expected values: the game is checked as in test_api.py (it ends by the rules); the limits are
the server's options (`--connections-per-client`, its default max-connections of the descriptor
limit minus 64, and shedding from three quarters of it: docs/web.md).
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.web.conftest import Server

FLOOD = 300
NOFILE = 256


def flood_sources(many: bool) -> list[str]:
    if not many:
        return ["127.0.0.2"] * FLOOD
    return [f"127.0.{(i + 2) // 256}.{(i + 2) % 256}" for i in range(FLOOD)]


def open_flood(port: int, many: bool, slowloris: bool) -> list[socket.socket]:
    """FLOOD connections that never finish a request (nothing, or half the headers)."""
    out = []
    for source in flood_sources(many):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        if slowloris:
            try:
                s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            except OSError:  # already closed by the server (its per-client cap)
                pass
        out.append(s)
    return out


def closed_by_server(socks: list[socket.socket]) -> int:
    """How many of `socks` the server has closed (EOF or reset)."""
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def play_a_game(url: str) -> dict[str, Any]:
    """Get the page, create a game and play it to its end with random legal moves."""
    from websockets.sync.client import connect

    page = httpx2.get(url, timeout=60)
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "server" not in page.headers  # no software version advertised
    r = httpx2.post(url + "api/games", json={"color": "white", "tc": "none"}, timeout=60)
    assert r.status_code == 201, r.text
    game = r.json()
    rng = random.Random(4)
    ws_url = url.replace("http://", "ws://") + f"ws/games/{game['game']}?seat={game['seat']}"
    with connect(ws_url, open_timeout=60) as ws:
        while True:
            f = json.loads(ws.recv(timeout=60))
            assert f["type"] == "state", f
            if f["status"] == "over":
                return f  # type: ignore[no-any-return]
            if f["your_turn"]:
                legal = f["view"]["legal_moves"]
                caps = [m for m in legal if m[2:4] in f["view"]["pieces"]]
                uci = rng.choice(caps or legal)
                ws.send(json.dumps({"type": "move", "uci": uci, "ply": f["ply"]}))


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "g.sqlite", nofile=NOFILE)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.parametrize("slowloris", [False, True], ids=["idle", "slowloris"])
@pytest.mark.parametrize("many", [False, True], ids=["one-address", "300-addresses"])
def test_300_idle_sockets_under_256_descriptors_do_not_stop_service(
    limited: Server, many: bool, slowloris: bool
) -> None:
    assert limited.proc is not None
    pid = limited.proc.pid
    socks = open_flood(limited.port, many, slowloris)
    try:
        # the flood is in: the server accepted what it could and shed or refused the rest
        deadline = time.monotonic() + 30
        while closed_by_server(socks) < FLOOD - NOFILE and time.monotonic() < deadline:
            time.sleep(0.1)
        assert closed_by_server(socks) >= FLOOD - NOFILE
        assert descriptors(pid) < NOFILE
        end = play_a_game(limited.url)
        assert end["end"]["termination"] in ("king capture", "threefold repetition",
                                             "fifty-move rule", "insufficient material")
        assert descriptors(pid) < NOFILE
        if not many:  # one address holds at most --connections-per-client (32) of them
            assert FLOOD - closed_by_server(socks) <= 32
    finally:
        for s in socks:
            s.close()


def test_a_socket_that_never_sends_its_headers_is_closed_and_huge_headers_are_refused(
    tmp_path: Path,
) -> None:
    srv = Server(tmp_path / "g.sqlite", options=("--idle-seconds", "0.5"))
    try:
        idle = socket.create_connection(("127.0.0.1", srv.port))
        slow = socket.create_connection(("127.0.0.1", srv.port))
        slow.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
        for s in (idle, slow):
            s.settimeout(60)  # only so a broken server cannot hang the suite
            assert s.recv(1) == b""  # closed by the server: no request came in time
            s.close()
        big = socket.create_connection(("127.0.0.1", srv.port))  # 20 KB and no end of headers
        big.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"x" * 20_000)
        big.settimeout(60)
        assert big.recv(4096).startswith(b"HTTP/1.1 400")
        big.close()
        assert httpx2.get(srv.url, timeout=30).status_code == 200
    finally:
        srv.stop()


def test_a_huge_chunked_body_is_refused_without_buffering_it(tmp_path: Path) -> None:
    srv = Server(tmp_path / "g.sqlite")
    try:
        assert srv.proc is not None
        before = rss_kb(srv.proc.pid)
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /api/games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                  b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
        sent = 0
        try:
            for _ in range(256):  # up to 256 MB
                s.sendall(chunk)
                sent += 1
        except OSError:  # the server answered and closed the connection
            pass
        s.settimeout(30)
        reply = s.recv(4096)
        s.close()
        assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
        assert sent < 256  # it stopped reading long before the end
        grown_mb = (rss_kb(srv.proc.pid) - before) / 1024
        assert grown_mb < 32, grown_mb  # before: +513 MB for 256 MB
        assert httpx2.get(srv.url, timeout=30).status_code == 200
    finally:
        srv.stop()


@pytest.mark.parametrize("trusted", [True, False], ids=["behind-proxy", "direct"])
def test_forwarded_addresses_are_believed_only_from_a_trusted_proxy(
    tmp_path: Path, trusted: bool
) -> None:
    options = ("--games-per-minute", "1")
    if trusted:
        options += ("--forwarded-allow-ips", "127.0.0.1")
    srv = Server(tmp_path / "g.sqlite", options=options)
    try:
        def create(forwarded: str) -> int:
            r = httpx2.post(srv.url + "api/games", json={}, timeout=30,
                            headers={"X-Forwarded-For": forwarded})
            return r.status_code

        assert create("203.0.113.1") == 201
        # behind the proxy another player has their own bucket; directly, a forged header
        # does not give the same client a new one
        assert create("203.0.113.2") == (201 if trusted else 429)
        assert create("203.0.113.1") == 429
    finally:
        srv.stop()
