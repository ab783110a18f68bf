"""Sub-commands of the web area: `caligo web serve [--host --port --db --agent ...]`."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from caligo.cli._util import (
    HelpFormatter,
    count,
    nonnegative_count,
    output_file,
    positive_count,
    probability,
    seconds,
)

UNLIMITED = ("--games-per-minute", "0", "--games-per-client", "0", "--sockets-per-client", "0",
             "--connections-per-client", "0")
"""`caligo web serve` options that lift the per-client limits (a load test from one address)."""


def serve_argv(
    db: str | Path,
    port: int = 0,
    agent: str = "random",
    seed: int = 1,
    workers: str = "processes:1",
    first_move_seconds: float | None = None,
    options: tuple[str, ...] = (),
) -> list[str]:
    """The command that runs `caligo web serve` on loopback with this Python (tests, benchmarks);
    it prints `Caligo web: http://127.0.0.1:PORT/` once it listens. `options` are more
    `caligo web serve` options (`UNLIMITED`, `--idle-seconds 2` ...)."""
    extra = [] if first_move_seconds is None else ["--first-move-seconds", str(first_move_seconds)]
    extra += options
    return [
        sys.executable,
        "-m",
        "caligo.cli",
        "web",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--db",
        str(db),
        "--agent",
        agent,
        "--seed",
        str(seed),
        "--workers",
        workers,
        *extra,
    ]


def _port(text: str) -> int:
    value = count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {text!r}")
    return value


def _host(text: str) -> str:
    if not text.strip() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"expected an address or a host name, got {text!r} "
                                         "(0.0.0.0 or :: listen on every interface)")
    return text


def default_db() -> Path:
    """The game database when --db is not given: $XDG_DATA_HOME/caligo/web.sqlite."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "caligo" / "web.sqlite"


def bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on host:port (port 0 picks a free one); OSError if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def allowed_hosts(host: str, extra: list[str] | None) -> tuple[str, ...]:
    """The `Host` names served: the bound address (unless it is a wildcard), localhost names,
    and the `--allowed-host` values."""
    from caligo.web.guard import LOCAL_HOSTS

    bound = [] if host in ("0.0.0.0", "::", "") else [host.strip("[]")]
    names = [*bound, *LOCAL_HOSTS, *(extra or [])]
    return tuple(dict.fromkeys(n.lower() for n in names))


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from caligo.agents import registry
    from caligo.play.workers import WorkerStats
    from caligo.web import WebConfig, create_app
    from caligo.web.guard import GuardConfig
    from caligo.web.store import WebStore
    from caligo.web.transport import default_max_connections, server_config

    agent = args.agent or registry.strongest()
    registry.create(agent).close()  # fail now, with the spec quoted, not at the first game
    db = Path(args.db) if args.db else default_db()
    WebStore(db).close()  # a file that is not a game database fails here, before the URL
    config = WebConfig(
        db=str(db),
        agent=agent,
        workers=args.workers,
        seed=args.seed,
        first_move_ms=round(args.first_move_seconds * 1000),
        max_live_games=args.max_live_games,
        games_per_minute=args.games_per_minute,
        games_per_client=args.games_per_client,
        engine_load=args.engine_load,
        games_per_worker=args.games_per_worker,
    )
    def record(stats: WorkerStats) -> None:  # the engine workers' record (benchmarks read it)
        waits = sorted(stats.waits_s)
        p99 = waits[min(len(waits) - 1, int(0.99 * len(waits)))] if waits else 0.0
        print(f"engine workers: workers={stats.workers} jobs={stats.jobs} "
              f"replaced={stats.replaced} p99_wait_ms={1000 * p99:.1f} "
              f"max_wait_ms={1000 * stats.max_wait_s:.1f}", flush=True)

    limits = GuardConfig(
        allowed_hosts=allowed_hosts(args.host, args.allowed_host),
        api_docs=args.api_docs,
        idle_timeout_s=args.idle_seconds,
        sockets_per_client=args.sockets_per_client,
        connections_per_client=args.connections_per_client,
        max_connections=args.max_connections or default_max_connections(),
        trusted_proxies=tuple(args.forwarded_allow_ips or ()),
    )
    app = create_app(config, limits, on_close=record)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"Caligo web: http://{shown}:{port}/", flush=True)
    print(f"  engine {agent}; games in {db}; Ctrl-C stops the server", flush=True)
    print(f"  serving the hosts {', '.join(limits.allowed_hosts)}", flush=True)
    level = "info" if args.verbose else "warning"
    logging.getLogger("caligo").setLevel(logging.INFO if args.verbose else logging.WARNING)
    server = uvicorn.Server(
        server_config(app, limits, log_level=level, access_log=bool(args.verbose))
    )
    server.run(sockets=[sock])
    return 0


SERVE_EPILOG = """\
examples:
  caligo web serve                              open http://127.0.0.1:8000/
  caligo web serve --port 8080 --agent obscuro:budget=mt=1
  caligo web serve --port 0 --db games.sqlite --agent random   a free port, its own database
  caligo web serve --workers 4                  four engine worker processes
  caligo web serve --workers ray:auto           engines on the running Ray cluster
  caligo web serve --host 0.0.0.0 --allowed-host chess.example.org   on a LAN, under that name
  caligo web serve --forwarded-allow-ips 127.0.0.1 --allowed-host chess.example.org   (proxy)
  caligo web serve {unlimited}  a load test from one address (no limits)
  caligo web serve --api-docs                  with /docs, /redoc and /openapi.json (development)

(proxy): behind a TLS reverse proxy on this machine. Limits (docs/web.md, "Admission and
hardening"): a client is an address (an IPv6 /64); 0 lifts a per-client limit.\
""".replace("{unlimited}", " ".join(UNLIMITED))


def register(sub: Any) -> None:
    """Add this area's sub-commands."""
    web = sub.add_parser("web", help="play Fog of War chess against Caligo in the browser",
                         epilog=SERVE_EPILOG, formatter_class=HelpFormatter)
    wsub = web.add_subparsers(dest="web_command", required=True)
    p = wsub.add_parser("serve", help="start the web app and print its URL",
                        epilog=SERVE_EPILOG, formatter_class=HelpFormatter)
    p.add_argument("--host", type=_host, default="127.0.0.1",
                   help="address to listen on (default loopback)")
    p.add_argument("--port", type=_port, default=8000, help="port (0 picks a free one)")
    p.add_argument("--db", type=output_file,
                   help=f"SQLite game database (default {default_db()})")
    p.add_argument("--agent", help="agent spec the page plays (default: strongest available)")
    p.add_argument(
        "--workers", default="auto", metavar="SPEC",
        help="the engine workers, shared by every game: N or processes:N (worker processes; "
        "auto: one per two cores), threads:N (in the server's process), ray or ray:ADDRESS "
        "(Ray actors, the caligo[ray] extra); a game waiting for a person holds no process",
    )
    p.add_argument("--seed", type=int, help="seed games deterministically (tests)")
    p.add_argument(
        "--first-move-seconds",
        type=seconds,
        default=30.0,
        help="a timed game is aborted when the side to move makes no first move in this time "
        "(its clock starts after that move; default 30)",
    )
    p.add_argument("--allowed-host", action="append", metavar="HOST",
                   help="also serve requests for this Host name (repeatable; '*.example.org' "
                   "for sub-domains); by default only the bound address and localhost names")
    p.add_argument("--api-docs", action="store_true",
                   help="serve /docs, /redoc and /openapi.json (off: no map of the API)")
    p.add_argument("--max-live-games", metavar="N", type=positive_count, default=200,
                   help="games in memory at once (idle ones are unloaded to make room)")
    p.add_argument("--games-per-minute", metavar="N", type=nonnegative_count, default=10,
                   help="new games one client may start a minute, in bursts of as many (0: any)")
    p.add_argument("--games-per-client", metavar="N", type=nonnegative_count, default=3,
                   help="games one client may have running at once (0: any)")
    p.add_argument("--engine-load", metavar="SHARE", type=probability, default=0.7,
                   help="admit a new game only while the engines were busy less than this "
                   "share of the last 30 s and no move waited a second for a worker; past "
                   "it the page says the server is full (0: off; default 0.7)")
    p.add_argument("--games-per-worker", metavar="N", type=nonnegative_count, default=4,
                   help="new games each engine worker takes in 20 s before any game's load "
                   "was measured; after, new games count at the measured share of a game "
                   "(0: any; default 4)")
    p.add_argument("--sockets-per-client", metavar="N", type=nonnegative_count, default=8,
                   help="game connections (WebSockets) one client may hold open (0: any)")
    p.add_argument("--connections-per-client", metavar="N", type=nonnegative_count, default=32,
                   help="TCP connections one client may hold open (0: any)")
    p.add_argument("--max-connections", metavar="N", type=nonnegative_count, default=0,
                   help="connections at once, all clients; from three quarters of it the oldest "
                   "idle ones are closed for new ones (0: the descriptor limit minus 64)")
    p.add_argument("--idle-seconds", metavar="SECONDS", type=seconds, default=30.0,
                   help="a connection must send its request (a WebSocket its first message) "
                   "within this time")
    p.add_argument("--forwarded-allow-ips", action="append", metavar="ADDRESS",
                   help="a reverse proxy (address or network; repeatable) whose X-Forwarded-For "
                   "and X-Forwarded-Proto are believed; by default the socket's peer is the "
                   "client")
    p.set_defaults(func=_serve)
