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
from caligo.play.match import MatchConfig, Outputs, engine_configs, run_match


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

    assert main(["strength", "table", str(out)]) == 0
    assert "| obscuro:eval=simple | random |" in capsys.readouterr().out
    assert main(["strength", "moves", str(db), "--engine", "obscuro:eval=simple"]) == 0
    assert "| carried_nodes |" in capsys.readouterr().out
    with pytest.raises(StrengthError, match="no analysed move of engine 'nobody'"):
        move_stats(str(db), "nobody")
    assert main(["strength", "table", str(tmp_path / "missing.json")]) == 2


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
