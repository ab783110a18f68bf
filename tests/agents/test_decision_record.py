"""The engines' deterministic decisions, recorded: a refactor must leave them bit for bit.

Obscuro and ZS21 at iteration budgets (the deterministic schedule: the same moves on any
machine, whatever its load; the built-in evaluator, so that a new Stockfish release does not
move the record) play short games against a seeded random mover through the
referee; every engine decision is recorded as its move, the search's tree size and a digest of
its policy. `tests/agents/golden/decisions.json` holds the record made before the engines were
rebuilt as presets of one search (`python tests/agents/test_decision_record.py --regen`
rewrites it; do that only for a change that is *meant* to change play, and say so in the
commit). The record is our own output, so this test proves nothing about correctness; it
proves that a refactor changed nothing a player could see (the correctness tests elsewhere
check the decisions against OpenSpiel, python-chess and the papers).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from caligo.agents.base import TimeControl
from caligo.agents.random_agent import RandomAgent
from caligo.agents.registry import create
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig

GOLDEN = Path(__file__).resolve().parent / "golden" / "decisions.json"

CASES: tuple[tuple[str, int, int], ...] = (
    # (engine spec, game seed, engine's colour: 0 White, 1 Black)
    ("obscuro:eval=simple,budget=iters=40,seed=1", 11, 0),
    ("obscuro:eval=simple,budget=iters=40,seed=2", 12, 1),
    ("obscuro:eval=simple,budget=iters=40,preset=safe,seed=3", 13, 0),
    ("zs21:evaluator=simple,budget=iters=2,seed=4", 14, 0),
    ("zs21:evaluator=simple,budget=iters=2,seed=5", 15, 1),
)
MAX_PLIES = 16
INT_KEYS = ("nodes", "infosets", "iterations", "expansions", "belief", "belief_size",
            "trunk_nodes", "lp_solves", "roots", "stable")
VALUE_KEYS = ("value", "gadget_value")


def _digest(policy: Any) -> str:
    """The policy's bytes as float64 (a change in its last bit changes the digest)."""
    arr = np.ascontiguousarray(np.asarray(policy, dtype=np.float64))
    return hashlib.sha256(arr.tobytes()).hexdigest()[:16]


def _record(spec: str, seed: int, colour: int) -> list[dict[str, Any]]:
    engine = create(spec)
    agents = (engine, RandomAgent(seed)) if colour == 0 else (RandomAgent(seed), engine)
    t = TimeControl.parse("none")
    session = GameSession(SessionConfig(f"record-{seed}", time_controls=(t, t),
                                        seeds=(seed, seed + 1)))
    out: list[dict[str, Any]] = []

    def on_ply(s: GameSession) -> None:
        ply = s.plies[-1]
        if ply.mover == colour and len(out) * 2 < MAX_PLIES:
            info = ply.decision.info if ply.decision is not None else {}
            row: dict[str, Any] = {"ply": len(s.plies), "move": ply.uci}
            for key in INT_KEYS:
                if key in info:
                    row[key] = info[key]
            for key in VALUE_KEYS:  # an LP's or a solver's value, to 1e-9
                if key in info:
                    row[key] = round(float(info[key]), 9)
            if "policy_vector" in info:
                row["policy"] = _digest(info["policy_vector"])
            elif "policy" in info:
                row["policy"] = hashlib.sha256(
                    json.dumps(info["policy"], sort_keys=True).encode()).hexdigest()[:16]
            out.append(row)
        if len(s.plies) >= MAX_PLIES and s.end is None:
            s.abort("recorded")

    try:
        play_game(session, agents, on_ply=on_ply)
    finally:
        engine.close()
    return out


def _all() -> dict[str, list[dict[str, Any]]]:
    return {f"{spec} | seed {seed} | colour {colour}": _record(spec, seed, colour)
            for spec, seed, colour in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c[0].split(":")[0] + f"-{c[1]}" for c in CASES])
def test_decisions_are_those_recorded(case: tuple[str, int, int]) -> None:
    spec, seed, colour = case
    golden = json.loads(GOLDEN.read_text())
    expected = golden[f"{spec} | seed {seed} | colour {colour}"]
    assert expected, "an empty record proves nothing"
    assert _record(spec, seed, colour) == expected


if __name__ == "__main__":
    if sys.argv[1:] != ["--regen"]:
        sys.exit("usage: python tests/agents/test_decision_record.py --regen")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(_all(), indent=1) + "\n")
    print(f"wrote {GOLDEN}")
