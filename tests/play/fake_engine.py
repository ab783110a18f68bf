"""A tiny third-party engine for the protocol tests: standard library only, no Caligo import.

It speaks caligo-fow v1 as docs/protocol.md describes it, and misbehaves on request:

    python fake_engine.py MODE [N]

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
"""

from __future__ import annotations

import json
import random
import sys
import time


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
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
        elif kind == "go":
            gos += 1
            game, ply, legal = msg["game"], msg["ply"], msg["legal"]
            if mode == "hang" and gos >= n:
                time.sleep(3600)
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
