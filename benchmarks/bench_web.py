"""Concurrent WebSocket games against the web app, with a bare FastAPI echo server as reference.

The server is `caligo web serve` (uvicorn, the play layer's SQLite store, `RandomAgent`) in a
subprocess on a free loopback port. N scripted clients each play one game at a time, back to
back, for a bounded time: create a game over REST, open the seat's WebSocket, answer every own
turn with a random legal move (captures first, so games stay short) after `--think-ms`, and time
each move from sending it to receiving the `state` frame that acknowledges it. That frame goes
out before the engine is asked, so the figure excludes engine thinking; it includes everything
else the server does per move (session, SQLite write, projection, frame, JSON) and the loopback
round trip.

Reference, same run: a bare FastAPI WebSocket echo server (also uvicorn, in its own process)
with the same number of clients sending move-sized messages at the same pace; the ratio of the
two p99s is the cost of Caligo's per-move work over the framework's floor.

The engine scenario, same run: the default engine at a fixed budget (`obscuro`, strength
iters=200) on the server's pool of engine workers (`--workers`, default 2 processes),
`--engine-games` (20) clients playing human-paced games (a think of 0.5 to 1.5 x
`--engine-think-ms`, 5000 ms: a 3+2 player spends 180 s + 2 s a move over some 40 to 60 moves,
4 to 6.5 s a move; 1500 ms is a bullet player's pace) on a clock (`--engine-tc`, 3+2) for
`--engine-seconds` (120):
the engine's p99 wait for a worker (the server's own record, printed when it stops), the
engine's time forfeits, the peak RSS of the server and everything below it, and the most
Stockfish processes running at once (sampled every half second from /proc).

Idle sockets (issue 16), after the main run: a fresh server under a 256-descriptor limit
(RLIMIT_NOFILE set in its child), 300 sockets that never send a byte opened from 300 loopback
addresses (127.0.0.2 ... 127.0.1.45) and held open, then `--idle-games` clients play for
`--idle-seconds` as above; the line `web idle_sockets=300 games=G errors=E p99_move_ms=T
max_fds=F` says whether they were served and how many descriptors the server held at most.
Before the connection guards (`caligo.web.transport`) such a flood stopped all service.

The servers run with the per-client limits lifted (`caligo.cli.cmd_web.UNLIMITED`): every
client here is one address, 127.0.0.1.

Last line: `web games=N errors=E p99_move_ms=T engine_games=N2 engine_p99_wait_ms=W
forfeits=F peak_rss_mb=M stockfish_procs=S` (N concurrent games, E errors of any kind: error
frames, dropped sockets, failed requests, in every scenario). Targets: 50 games for 120 s, 0
errors, p99 under 50 ms (issue 10); 20 engine games for 120 s, 0 forfeits, p99 wait under 2 s,
the Stockfish processes bounded by the pool (one per worker), peak RSS under 2 GB (issue 16).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from caligo.cli.cmd_web import UNLIMITED, serve_argv

ECHO_SERVER = """
import socket, uvicorn
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
app = FastAPI()
@app.websocket("/echo")
async def echo(ws: WebSocket):
    await ws.accept()
    try:
        while True:
            await ws.send_text(await ws.receive_text())
    except WebSocketDisconnect:
        pass
sock = socket.create_server(("127.0.0.1", 0))
print(f"http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""


IDLE_NOFILE = 256
"""The descriptor limit of the idle-sockets run's server (issue 16's scenario)."""


class Stats:
    """What the clients measured (a plain class: `caligo bench` runs this file unregistered in
    sys.modules, where dataclasses cannot resolve their annotations)."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.errors = 0
        self.games = 0
        self.notes: list[str] = []
        self.max_fds = 0
        self.refused = 0  # game creations the server refused as full (503)
        self.playing = 0  # clients in a game now
        self.most_playing = 0

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.notes) < 5:
            self.notes.append(text)


REFUSED_RETRY_S = 10.0
"""A player the server refused (full) tries again this much later."""


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of `values`; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100.0 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def start(cmd: list[str], nofile: int | None = None, lines: list[str] | None = None
          ) -> tuple[subprocess.Popen[str], str]:
    """Start a server process (with at most `nofile` descriptors) and return it with the URL it
    prints; its later output is drained by a thread (into `lines` when given): a full pipe
    would stop the server."""

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=limit)
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"server exited with {proc.wait()}")
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if match:
            sink = lines if lines is not None else []
            threading.Thread(target=sink.extend, args=(proc.stdout,), daemon=True).start()
            return proc, match.group(0)
    proc.kill()
    raise RuntimeError("server printed no URL")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def post_game(url: str, color: str) -> dict[str, str]:
    body = json.dumps({"color": color, "tc": "none", "strength": "mt=0.05"}).encode()
    req = urllib.request.Request(
        url + "api/games", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


async def play_games(
    url: str, index: int, until: float, think: float, stats: Stats, rng: random.Random
) -> None:
    """One client: games back to back until `until` (monotonic seconds)."""
    from websockets.asyncio.client import connect

    ws_base = url.replace("http://", "ws://")
    while time.monotonic() < until:
        color = ("white", "black")[(index + stats.games) % 2]
        try:
            game = await asyncio.to_thread(post_game, url, color)
            uri = f"{ws_base}ws/games/{game['game']}?seat={game['seat']}"
            async with connect(uri, max_size=1 << 20) as ws:
                await play_one(ws, until, think, stats, rng)
        except Exception as exc:  # every failure counts; the client goes on with a new game
            stats.error(f"{type(exc).__name__}: {exc}")


async def play_one(ws: object, until: float, think: float, stats: Stats, rng: random.Random):
    sent_ply = -1
    sent_at = 0.0
    while True:
        frame = json.loads(await ws.recv())  # type: ignore[attr-defined]
        if frame["type"] != "state":
            stats.error(f"error frame: {frame}")
            return
        if sent_ply >= 0 and frame["ply"] > sent_ply:
            stats.latencies_ms.append((time.perf_counter() - sent_at) * 1000.0)
            sent_ply = -1
        if frame["status"] == "over":
            stats.games += 1
            return
        if time.monotonic() >= until:
            return
        if frame["your_turn"] and sent_ply < 0:
            legal = frame["view"]["legal_moves"]
            pieces = frame["view"]["pieces"]
            caps = [m for m in legal if m[2:4] in pieces]
            uci = rng.choice(caps) if caps and rng.random() < 0.7 else rng.choice(legal)
            await asyncio.sleep(think)
            sent_ply, sent_at = frame["ply"], time.perf_counter()
            await ws.send(json.dumps({"type": "move", "uci": uci, "ply": frame["ply"]}))  # type: ignore[attr-defined]


async def echo_client(url: str, until: float, think: float, stats: Stats) -> None:
    from websockets.asyncio.client import connect

    message = json.dumps({"type": "move", "uci": "e2e4", "ply": 0})
    try:
        async with connect(url.replace("http://", "ws://") + "echo") as ws:
            while time.monotonic() < until:
                await asyncio.sleep(think)
                t0 = time.perf_counter()
                await ws.send(message)
                if await ws.recv() != message:
                    stats.error("echo mismatch")
                stats.latencies_ms.append((time.perf_counter() - t0) * 1000.0)
    except Exception as exc:
        stats.error(f"{type(exc).__name__}: {exc}")


async def run_clients(coros: list) -> None:  # type: ignore[type-arg]
    await asyncio.gather(*coros)


def measure_caligo(
    games: int,
    seconds: float,
    think: float,
    max_searches: int,
    idle_sockets: int = 0,
    nofile: int | None = None,
) -> Stats:
    """Play `games` clients for `seconds`; with `idle_sockets`, that many sockets that never
    send anything are opened from as many loopback addresses and held open first (the server
    under a `nofile` descriptor limit), and `stats.notes` gets the server's most descriptors."""
    stats = Stats()
    with tempfile.TemporaryDirectory(prefix="caligo-bench-web-") as tmp:
        db = Path(tmp) / "games.sqlite"
        cmd = serve_argv(db, agent="random", seed=1, workers=f"processes:{max_searches}",
                         options=UNLIMITED)
        proc, url = start(cmd, nofile)
        flood: list[socket.socket] = []
        try:
            post_game(url, "white")  # warm up: numba caches, first SQLite pages
            port = int(url.rstrip("/").rsplit(":", 1)[1])
            flood = [idle_socket(port, i) for i in range(idle_sockets)]
            until = time.monotonic() + seconds
            rngs = [random.Random(i) for i in range(games)]
            fds = [descriptors(proc.pid)]
            asyncio.run(
                run_clients(
                    [play_games(url, i, until, think, stats, rngs[i]) for i in range(games)]
                    + [watch_descriptors(proc.pid, until, fds)]
                )
            )
            stats.max_fds = max(fds)
        finally:
            for s in flood:
                s.close()
            stop(proc)
    return stats


def idle_socket(port: int, index: int) -> socket.socket:
    """A connection from loopback address 127.0.x.y (index 0: 127.0.0.2) that sends nothing."""
    s = socket.socket()
    n = index + 2
    s.bind((f"127.0.{n // 256}.{n % 256}", 0))
    s.connect(("127.0.0.1", port))
    return s


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def watch_descriptors(pid: int, until: float, out: list[int]) -> None:
    while time.monotonic() < until:
        out.append(descriptors(pid))
        await asyncio.sleep(0.5)


def measure_echo(clients: int, seconds: float, think: float) -> Stats:
    stats = Stats()
    proc, url = start([sys.executable, "-c", ECHO_SERVER])
    try:
        until = time.monotonic() + seconds
        asyncio.run(run_clients([echo_client(url, until, think, stats) for _ in range(clients)]))
    finally:
        stop(proc)
    return stats


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [pid], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _sample(pid: int) -> tuple[float, int]:
    """(RSS in MB of `pid` and everything below it, Stockfish processes among them)."""
    rss_kb, stockfish = 0, 0
    for p in _tree(pid):
        try:
            status = (Path("/proc") / str(p) / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Name:") and line.split()[1].startswith("stockfish"):
                stockfish += 1
            if line.startswith("VmRSS:"):
                rss_kb += int(line.split()[1])
    return rss_kb / 1024.0, stockfish


def post_engine_game(url: str, color: str, tc: str, strength: str) -> dict[str, str]:
    body = json.dumps({"color": color, "tc": tc, "strength": strength}).encode()
    req = urllib.request.Request(
        url + "api/games", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


async def engine_client(url: str, index: int, until: float, think: float, tc: str,
                        strength: str, stats: Stats, rng: random.Random,
                        forfeits: list[str]) -> None:
    """One human-paced player against the engine, games back to back until `until`."""
    from websockets.asyncio.client import connect

    ws_base = url.replace("http://", "ws://")
    while time.monotonic() < until:
        color = ("white", "black")[(index + stats.games) % 2]
        try:
            try:
                game = await asyncio.to_thread(post_engine_game, url, color, tc, strength)
            except urllib.error.HTTPError as exc:
                if exc.code != 503:
                    raise
                # the page's "server is full": the player tries again a little later
                stats.refused += 1
                await asyncio.sleep(min(REFUSED_RETRY_S, max(0.0, until - time.monotonic())))
                continue
            uri = f"{ws_base}ws/games/{game['game']}?seat={game['seat']}"
            stats.playing += 1
            stats.most_playing = max(stats.most_playing, stats.playing)
            try:
                async with connect(uri, max_size=1 << 20) as ws:
                    while True:
                        frame = json.loads(await ws.recv())
                        if frame["type"] != "state":
                            stats.error(f"error frame: {frame}")
                            break
                        if frame["status"] == "over":
                            stats.games += 1
                            end = frame.get("end") or {}
                            loser = {"1-0": "black", "0-1": "white"}.get(end.get("result", ""))
                            if "time" in str(end.get("termination", "")) and loser != color:
                                forfeits.append(str(end))
                            break
                        if time.monotonic() >= until:
                            break
                        if frame["your_turn"]:
                            legal = frame["view"]["legal_moves"]
                            await asyncio.sleep(think * rng.uniform(0.5, 1.5))
                            uci = rng.choice(legal)
                            await ws.send(json.dumps({"type": "move", "uci": uci,
                                                      "ply": frame["ply"]}))
            finally:
                stats.playing -= 1
        except Exception as exc:
            stats.error(f"{type(exc).__name__}: {exc}")


def measure_engine(games: int, seconds: float, think: float, spec: str, tc: str,
                   strength: str, workers: str) -> dict[str, float]:
    """The engine scenario (module docstring)."""
    stats = Stats()
    forfeits: list[str] = []
    lines: list[str] = []
    peak = [0.0, 0]
    with tempfile.TemporaryDirectory(prefix="caligo-bench-web-") as tmp:
        db = Path(tmp) / "games.sqlite"
        proc, url = start(serve_argv(db, agent=spec, seed=1, workers=workers, options=UNLIMITED),
                          None, lines)
        done = threading.Event()

        def sampler() -> None:
            while not done.wait(0.5):
                rss, sf = _sample(proc.pid)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], sf)

        threading.Thread(target=sampler, daemon=True).start()
        try:
            until = time.monotonic() + seconds
            rngs = [random.Random(1000 + i) for i in range(games)]
            asyncio.run(run_clients([
                engine_client(url, i, until, think, tc, strength, stats, rngs[i], forfeits)
                for i in range(games)]))
        finally:
            done.set()
            stop(proc)
            time.sleep(0.5)
    record = next((ln for ln in lines if ln.startswith("engine workers:")), "")
    fields = dict(kv.split("=") for kv in record.split()[2:] if "=" in kv)
    for note in stats.notes:
        print(f"# engine scenario error: {note}")
    for f in forfeits[:5]:
        print(f"# forfeit: {f}")
    print(f"engine scenario: {stats.games} finished games, {stats.most_playing} played at once "
          f"at most, {stats.refused} creations refused as full; {record or 'no worker record'}")
    return {"games": games, "errors": stats.errors, "forfeits": len(forfeits),
            "refused": stats.refused, "most_playing": stats.most_playing,
            "p99_wait_ms": float(fields.get("p99_wait_ms", "nan")),
            "peak_rss_mb": peak[0], "stockfish_procs": peak[1], "finished": stats.games}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="caligo bench web", description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=50, help="concurrent games (clients)")
    parser.add_argument("--seconds", type=float, default=120.0, help="how long to play")
    parser.add_argument(
        "--think-ms", type=float, default=100.0, help="client pause before each move"
    )
    parser.add_argument("--max-searches", type=int, default=1,
                        help="engine worker processes of the random-engine scenario")
    parser.add_argument("--engine", default="obscuro", help="the engine scenario's agent")
    parser.add_argument("--engine-games", type=int, default=20, help="human-paced games")
    parser.add_argument("--engine-seconds", type=float, default=120.0)
    parser.add_argument("--engine-think-ms", type=float, default=5000.0)
    parser.add_argument("--engine-tc", default="3+2", help="the engine games' clock")
    parser.add_argument("--engine-strength", default="iters=200")
    parser.add_argument("--workers", default="processes:2", help="the engine scenario's pool")
    parser.add_argument("--idle-sockets", type=int, default=300,
                        help="idle sockets of the second run (0: no second run)")
    parser.add_argument("--idle-games", type=int, default=10, help="clients of the second run")
    parser.add_argument("--idle-seconds", type=float, default=30.0,
                        help="how long the second run plays")
    parser.add_argument("--short", action="store_true", help="10 games for 10 s (CI)")
    args = parser.parse_args(argv)
    if args.short or os.environ.get("CALIGO_SHORT") == "1":
        args.games, args.seconds = min(args.games, 10), min(args.seconds, 10.0)
        args.engine_games, args.engine_seconds = min(args.engine_games, 4), 20.0
        args.idle_seconds = min(args.idle_seconds, 10.0)
    think = args.think_ms / 1000.0
    print(
        f"# {args.games} concurrent games for {args.seconds:g} s, client think {args.think_ms:g}"
        f" ms, engine random, max searches {args.max_searches}",
        flush=True,
    )
    ours = measure_caligo(args.games, args.seconds, think, args.max_searches)
    ref_seconds = min(args.seconds, 30.0)
    echo = measure_echo(args.games, ref_seconds, think)
    p50, p99 = percentile(ours.latencies_ms, 50), percentile(ours.latencies_ms, 99)
    e50, e99 = percentile(echo.latencies_ms, 50), percentile(echo.latencies_ms, 99)
    print(
        f"caligo: {len(ours.latencies_ms)} moves, {ours.games} finished games, "
        f"{len(ours.latencies_ms) / args.seconds:.0f} moves/s; move->ack p50 {p50:.2f} ms, "
        f"p99 {p99:.2f} ms, max {max(ours.latencies_ms, default=float('nan')):.2f} ms"
    )
    print(
        f"echo reference: {len(echo.latencies_ms)} round trips in {ref_seconds:g} s; "
        f"p50 {e50:.2f} ms, p99 {e99:.2f} ms"
    )
    print(f"ratio caligo/echo: p50 {p50 / e50:.2f}x, p99 {p99 / e99:.2f}x")
    notes = ours.notes + echo.notes
    idle_errors = 0
    if args.idle_sockets:
        idle = measure_caligo(args.idle_games, args.idle_seconds, think, args.max_searches,
                              idle_sockets=args.idle_sockets, nofile=IDLE_NOFILE)
        notes += idle.notes
        idle_errors = idle.errors
        print(
            f"idle sockets: {args.idle_sockets} from as many addresses, server limited to "
            f"{IDLE_NOFILE} descriptors: {len(idle.latencies_ms)} moves, {idle.games} finished "
            f"games in {args.idle_seconds:g} s; p50 {percentile(idle.latencies_ms, 50):.2f} ms"
        )
        print(
            f"web idle_sockets={args.idle_sockets} games={args.idle_games} errors={idle.errors} "
            f"p99_move_ms={percentile(idle.latencies_ms, 99):.2f} max_fds={idle.max_fds}"
        )
    for note in notes:
        print(f"# error: {note}")
    print(f"# engine scenario: {args.engine_games} games of {args.engine} at "
          f"{args.engine_strength}, {args.engine_tc}, think ~{args.engine_think_ms:g} ms, "
          f"workers {args.workers}, {args.engine_seconds:g} s", flush=True)
    eng = measure_engine(args.engine_games, args.engine_seconds, args.engine_think_ms / 1000,
                         args.engine, args.engine_tc, args.engine_strength, args.workers)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    errors = ours.errors + echo.errors + idle_errors + int(eng["errors"])
    print(f"web games={args.games} errors={errors} p99_move_ms={p99:.2f} "
          f"engine_games={args.engine_games} engine_refused={int(eng['refused'])} "
          f"engine_p99_wait_ms={eng['p99_wait_ms']:.1f} "
          f"forfeits={int(eng['forfeits'])} peak_rss_mb={eng['peak_rss_mb']:.0f} "
          f"stockfish_procs={int(eng['stockfish_procs'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
