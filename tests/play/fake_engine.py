"""A tiny third-party engine for the protocol tests: standard library only, no Caligo import.

It speaks caligo-fow v1 as docs/protocol.md describes it, and misbehaves on request:

    python fake_engine.py MODE [N [PIDFILE]]

good        random legal moves (seeded by newgame)
garbage     before every move: a malformed line, an unknown type, a 70 KB line, a stale move,
            an out-of-order readyok and an info line; then a legal move
hang        never answers its N-th go (default 1)
crash       exits with status 3 at its N-th go (default 1)
illegal     answers "e2e5"-style nonsense at its N-th go (default 1)
error       answers an error message at its N-th go (default 1)
resign      resigns at its N-th go (default 1)
badversion  says hello with protocol version 2
silent      never says hello
slow        sleeps N milliseconds before each move
slowstart   sleeps N milliseconds after each newgame (its per-game start-up), before it reads
            on (so the referee's isready is answered only then)
slowsettle  sleeps N milliseconds after each observe of its own ply (its work after its move),
            then appends the wall time (time.time()) to the file PIDFILE (third argument)
hostile     before every move: N lines no JSON parser should trust (500 nested brackets, a
            5,000-digit integer, Infinity, 1e400, NaN, in turn); then a legal move
chatty      writes N KiB of stderr lines (one write) before its first move
orphan      at its N-th go: starts a child that keeps stdout and stderr open, writes the child's
            pid to the file PIDFILE (third argument), and exits with status 5
spawn       at hello: starts a child that sleeps, writes its pid to PIDFILE; on quit it exits
            and leaves the child running (the referee must kill it)
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

HOSTILE = [
    "[" * 500 + "]" * 500,
    '{"type":"info","game":"g1","ply":1,"nodes":' + "7" * 5000 + "}",
    '{"type":"move","game":"g1","ply":1,"move":"a2a3","value":Infinity}',
    '{"type":"info","game":"g1","ply":1,"ms":1e400}',
    '{"type":"readyok","id":NaN}',
]


def start_child(pidfile: str) -> None:
    """A child that sleeps with our stdout and stderr (inherited) held open."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(pidfile, "w") as f:
        f.write(str(child.pid))


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    pidfile = sys.argv[3] if len(sys.argv) > 3 else ""
    rng = random.Random(0)
    gos = 0
    for raw in sys.stdin:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        kind = msg.get("type")
        if kind == "hello":
            if mode == "silent":
                continue
            if mode == "spawn":
                start_child(pidfile)
            version = 2 if mode == "badversion" else 1
            send(
                {
                    "type": "hello",
                    "protocol": "caligo-fow",
                    "version": version,
                    "name": f"fake-{mode}",
                    "options": [{"name": "Noise", "default": 0}],
                }
            )
        elif kind == "isready":
            send({"type": "readyok", "id": msg.get("id", 0)})
        elif kind == "newgame":
            rng = random.Random(msg["seed"])
            if mode == "slowstart":
                time.sleep(n / 1000.0)
        elif kind == "observe":
            if mode == "slowsettle" and msg.get("own_move"):
                time.sleep(n / 1000.0)
                with open(pidfile, "a") as f:
                    f.write(f"{time.time()!r}\n")
        elif kind == "go":
            gos += 1
            game, ply, legal = msg["game"], msg["ply"], msg["legal"]
            if mode == "hang" and gos >= n:
                time.sleep(3600)
            if mode == "orphan" and gos >= n:
                start_child(pidfile)
                return 5
            if mode == "crash" and gos >= n:
                sys.stderr.write("fake engine: simulated crash\n")
                sys.stderr.flush()
                return 3
            if mode == "illegal" and gos >= n:
                send({"type": "move", "game": game, "ply": ply, "move": "e2e5"})
                continue
            if mode == "error" and gos >= n:
                send({"type": "error", "game": game, "ply": ply, "message": "out of ideas"})
                continue
            if mode == "resign" and gos >= n:
                send({"type": "resign", "game": game, "ply": ply})
                continue
            if mode == "garbage":
                sys.stdout.write("this is not json\n")
                send({"type": "telemetry", "cpu": 99})
                sys.stdout.write('{"type":"info","pad":"' + "x" * 70_000 + '"}\n')
                send({"type": "move", "game": game, "ply": ply - 1, "move": legal[0]})
                send({"type": "readyok", "id": 999})
                send({"type": "info", "game": game, "ply": ply, "nodes": 12})
            if mode == "hostile":
                for i in range(n):
                    sys.stdout.write(HOSTILE[i % len(HOSTILE)] + "\n")
            if mode == "chatty" and gos == 1:
                line = b"fake engine: thinking very loudly about nothing in particular....\n"
                sys.stderr.buffer.write(line * (n * 1024 // len(line)))
                sys.stderr.buffer.flush()
            if mode == "slow":
                time.sleep(n / 1000.0)
            move = rng.choice(legal)
            send(
                {
                    "type": "move",
                    "game": game,
                    "ply": ply,
                    "move": move,
                    "policy": {m: 1.0 / len(legal) for m in legal},
                    "info": {"nodes": len(legal)},
                }
            )
        elif kind == "quit":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
