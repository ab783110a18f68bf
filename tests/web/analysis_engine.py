"""A test engine for the page: random legal moves with an analysis shaped like Obscuro's.

Standard library only, no Caligo import; it speaks caligo-fow v1 (docs/protocol.md):

    python analysis_engine.py [DELAY_MS] [SEED]

Every move waits DELAY_MS (default 0: time to queue a premove) and carries a value in [-1, 1],
a policy over a few legal moves, and an `info` object with the keys the page turns into words
(`belief`, `nodes`) beside nested and very long ones (what once made the review wider than the
window). It never takes a king it sees (unless nothing else is legal), so a test can play a
long game against it. Each move also carries belief pictures shaped like
`caligo.agents.belief_map`'s (`belief_map`, and `belief_map_prev` after its first move): the
enemy pieces it sees, counted in every position, and made-up counts on a few fog squares, so
the review's belief board is drawn at every width.
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


def picture(dark_fen: str, enemy_white: bool, ply: int, rng: random.Random) -> dict:
    """A belief picture about the position after `ply` plies, from the observation `dark_fen`."""
    sample = rng.choice([1, 37, 4096])
    size = sample if sample < 4096 else rng.randrange(4096, 2_000_000)
    counts: dict[str, dict[str, int]] = {k: {} for k in "pnbrqk"}
    fog = []
    for r, row in enumerate(dark_fen.split()[0].split("/")):
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
                continue
            square = "abcdefgh"[f] + str(8 - r)
            if ch == "?":
                fog.append(square)
            elif ch.isupper() == enemy_white:
                counts[ch.lower()][square] = sample
            f += 1
    for square in rng.sample(fog, min(len(fog), 12)):
        counts[rng.choice("pnbrqk")][square] = rng.randrange(1, sample + 1)
    return {"ply": ply, "color": "white" if enemy_white else "black", "size": size,
            "seen": size, "size_kind": "exact", "exact": True, "sample": sample,
            "counts": counts}


def main() -> int:
    delay = int(sys.argv[1]) / 1000.0 if len(sys.argv) > 1 else 0.0
    base = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    rng = random.Random(base)
    enemy_king = "k"
    seen = ""
    after_own: dict | None = None
    drawn = random.Random(f"pictures:{base}")  # apart from the moves' generator
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
            after_own = None
        elif kind == "observe":
            seen = msg["observation"]
            if msg.get("own_move"):  # the picture after its own move, sent with the next move
                after_own = picture(seen, enemy_king == "K", msg["ply"], drawn)
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
                "belief_map": picture(seen, enemy_king == "K", msg["ply"] - 1, drawn),
            }
            if after_own is not None:
                info["belief_map_prev"] = after_own
                after_own = None
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
