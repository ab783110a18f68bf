"""A test engine for the page: random legal moves with an analysis shaped like Obscuro's.

Standard library only, no Caligo import; it speaks caligo-fow v1 (docs/protocol.md):

    python analysis_engine.py [DELAY_MS] [SEED]

Every move waits DELAY_MS (default 0: time to queue a premove) and carries a value in [-1, 1],
a policy over a few legal moves, and an `info` object with the keys the page turns into words
(`belief`, `nodes`) beside nested and very long ones (what once made the review wider than the
window). It never takes a king it sees (unless nothing else is legal), so a test can play a
long game against it.
"""

from __future__ import annotations

import json
import random
import sys
import time


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def king_square(dark_fen: str, letter: str) -> str | None:
    """Where the observation shows the king `letter` ("K" or "k"), if it does."""
    rows = dark_fen.split()[0].split("/")
    for r, row in enumerate(rows):
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
                continue
            if ch == letter:
                return "abcdefgh"[f] + str(8 - r)
            f += 1
    return None


def main() -> int:
    delay = int(sys.argv[1]) / 1000.0 if len(sys.argv) > 1 else 0.0
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    rng = random.Random(base)
    enemy_king = "k"
    seen = ""
    for raw in sys.stdin:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        kind = msg.get("type")
        if kind == "hello":
            send({"type": "hello", "protocol": "caligo-fow", "version": 1, "name": "analysis"})
        elif kind == "isready":
            send({"type": "readyok", "id": msg.get("id", 0)})
        elif kind == "newgame":
            rng = random.Random(f"{base}:{msg['seed']}")
            enemy_king = "k" if msg["color"] == "white" else "K"
            seen = msg["observation"]
        elif kind == "observe":
            seen = msg["observation"]
        elif kind == "go":
            if delay:
                time.sleep(delay)
            king = king_square(seen, enemy_king)
            legal = [m for m in msg["legal"] if m[2:4] != king] or msg["legal"]
            move = rng.choice(legal)
            top = rng.sample(legal, min(5, len(legal)))
            if move not in top:
                top[-1] = move
            weights = [rng.random() + 0.1 for _ in top]
            total = sum(weights)
            info = {
                "belief": rng.randrange(1, 40_000),
                "belief_exact": False,
                "nodes": rng.randrange(1_000, 200_000),
                "iterations": rng.randrange(100, 5_000),
                "t_half": 1234,
                "belief_mb": 3.25,
                "plan_ms": {"allot": 812.5, "search_end": 790.1, "roots": 64},
                "time_ms": {"belief": 10.0, "construct": 200.0, "solve": 400.0, "expand": 60.0},
                "evaluator": "stockfish-" + "x" * 180,
                "gadget": "resolve+maxmargin/" * 12,
            }
            send(
                {
                    "type": "move",
                    "game": msg["game"],
                    "ply": msg["ply"],
                    "move": move,
                    "policy": {m: w / total for m, w in zip(top, weights, strict=True)},
                    "value": round(rng.uniform(-1, 1), 4),
                    "info": info,
                }
            )
        elif kind == "quit":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
