"""`caligo strength`: tables from `caligo match` outputs.

Expected values come from the match runner's own records of the same games (the JSON result
and the `PairResult` decisions), not from the command's arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caligo.agents.base import TimeControl
from caligo.cli import main
from caligo.cli.cmd_strength import StrengthError, move_stats, table_row
from caligo.play.match import MatchConfig, Outputs, engine_configs
from caligo.play.runner import run_match


def test_table_and_move_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engines = engine_configs(["obscuro:eval=simple", "random"], [TimeControl.parse("iters=20")])
    db, out = tmp_path / "m.db", tmp_path / "m.json"
    result = run_match(MatchConfig(engines=engines, rounds=1, seed=3), Outputs(db=db, json=out))
    data = json.loads(out.read_text())
    row = table_row(data)
    t = result.tally
    assert f"| {t.games} | +{t.wins} ={t.draws} -{t.losses} |" in row
    assert row.startswith("| obscuro:eval=simple | random | iters=20 |")

    stats = move_stats(str(db), "obscuro:eval=simple")
    assert stats["games"] == 2 and stats["iterations"] == 20.0
    assert stats["plies_per_game"] == result.plies / 2
    assert stats["moves"] == sum((p + 1) // 2 if w else p // 2 for p, w in _plies(db))
    assert 1 <= stats["nodes"] and stats["belief_exact_share"] == 1.0
    split = stats["time_ms"]  # every analysed move says how its time was split
    assert stats["timed_moves"] == stats["moves"]
    assert split["belief"] + split["construct"] + split["search"] <= split["total"] + 1e-6
    assert "search_share" not in stats  # iteration budgets plan no time

    assert main(["strength", "table", str(out)]) == 0
    assert "| obscuro:eval=simple | random |" in capsys.readouterr().out
    assert main(["strength", "moves", str(db), "--engine", "obscuro:eval=simple"]) == 0
    text = capsys.readouterr().out
    assert "| carried_nodes |" in text and "| belief | construct | search |" in text
    with pytest.raises(StrengthError, match="no analysed move of engine 'nobody'"):
        move_stats(str(db), "nobody")
    assert main(["strength", "table", str(tmp_path / "missing.json")]) == 2


def test_table_row_of_a_clean_sweep() -> None:
    # every pair 2-0: the pentanomial variance is 0, so no finite Elo or interval exists
    data = {"engines": ["a", "b"], "time_controls": ["iters=5", "iters=5"], "pairs": 3,
            "games": 6, "wins": 6, "draws": 0, "losses": 0, "pentanomial": [0, 0, 0, 0, 3],
            "score": 1.0, "elo": {"logistic": 1200.0, "ci95": [1200.0, 1200.0]}}
    assert "| 100.0% | unbounded (every pair 2-0) |" in table_row(data)
    data.update(wins=0, losses=6, pentanomial=[3, 0, 0, 0, 0], score=0.0)
    assert "| 0.0% | unbounded (every pair 0-2) |" in table_row(data)


def _plies(db: Path) -> list[tuple[int, bool]]:
    """(plies, obscuro is White) of each game, from the games table."""
    import sqlite3

    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, white FROM games").fetchall()
    out = []
    for gid, white in rows:
        n = con.execute("SELECT COUNT(*) FROM plies WHERE game_id = ?", (gid,)).fetchone()[0]
        out.append((int(n), white.startswith("obscuro")))
    con.close()
    return out


def test_move_statistics_of_a_timed_match(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """At a move time, each move's plan (its optimum) is stored, and the search's share of it
    is reported; nothing here depends on the machine's speed but its sign and the sums."""
    engines = engine_configs(["obscuro:eval=simple", "random"], [TimeControl.parse("mt=0.05")])
    db = tmp_path / "m.db"
    run_match(MatchConfig(engines=engines, rounds=1, seed=4, timemargin_ms=5000), Outputs(db=db))
    stats = move_stats(str(db), "obscuro:eval=simple")
    share = stats["search_share"]
    assert share["moves"] == stats["moves"] and 0.0 <= share["min"] <= share["p05"]
    assert main(["strength", "moves", str(db), "--engine", "obscuro:eval=simple"]) == 0
    assert "search's share of the planned optimum" in capsys.readouterr().out
