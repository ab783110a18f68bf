"""`caligo strength`: tables from `caligo match` outputs.

Expected values come from the match runner's own records of the same games (the JSON result
and the `PairResult` decisions), not from the command's arithmetic.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
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
    # stable actions a move: the mean of the analyses' own counts, read back from the database
    assert stats["stable"] == pytest.approx(_mean_info(db, "stable")) and stats["stable"] >= 1
    assert f"| stable | {stats['stable']:,.1f} |" in text
    assert "0 watchdog answers" in text and stats["overdue_answers"] == 0
    with pytest.raises(StrengthError, match="no analysed move of engine 'nobody'"):
        move_stats(str(db), "nobody")
    # not a database, or one without a match's tables: an error naming the file
    (tmp_path / "text.db").write_text("not sqlite\n")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)").connection.commit()
    for name, why in (("text.db", "file is not a database"), ("other.db", "no such table")):
        with pytest.raises(StrengthError, match=f"'{tmp_path / name}' is not a readable .*{why}"):
            move_stats(str(tmp_path / name), "obscuro")
    assert main(["strength", "table", str(tmp_path / "missing.json")]) == 2


def test_moves_without_a_search_are_counted_and_left_out_of_the_means(tmp_path: Path) -> None:
    """A watchdog answer or a move with P lost stores the agents' own analysis forms
    (`caligo.agents.fow_search.overdue_answer`, the P-lost decision): counted apart, and not
    averaged with the searched moves."""
    import threading

    from caligo.agents.fow_search import overdue_answer
    from caligo.limits import Overdue

    engines = engine_configs(["obscuro:eval=simple", "random"], [TimeControl.parse("iters=20")])
    db = tmp_path / "m.db"
    run_match(MatchConfig(engines=engines, rounds=1, seed=3), Outputs(db=db))
    before = move_stats(str(db), "obscuro:eval=simple")
    out: Overdue[object] = Overdue({}, threading.Event())
    out.late_s = 0.25
    decision = overdue_answer("obscuro", out, 900.0, [], 0, [12], np.random.default_rng(0), 1)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT game_id, ply, engine_info FROM plies WHERE engine_info LIKE "
                       "'%\"nodes\"%' ORDER BY game_id, ply LIMIT 2").fetchall()
    for (gid, ply, _), info in zip(rows, (decision.info, {"belief_lost": True, "repairs": 3}),
                                   strict=True):
        con.execute("UPDATE plies SET engine_info = ? WHERE game_id = ? AND ply = ?",
                    (json.dumps({"info": info}), gid, ply))
    # P's counters as the agent reports them, so far in the game: 1 redraw, then 2 and a repair
    more = con.execute("SELECT game_id, ply, engine_info FROM plies WHERE engine_info LIKE "
                       "'%\"nodes\"%' ORDER BY game_id, ply LIMIT 2 OFFSET 2").fetchall()
    assert more[0][0] == more[1][0]
    for (gid, ply, text), extra in zip(more, ({"belief_redraws": 1},
                                              {"belief_redraws": 2, "belief_repairs": 1}),
                                       strict=True):
        data = json.loads(text)
        data["info"].update(extra)
        con.execute("UPDATE plies SET engine_info = ? WHERE game_id = ? AND ply = ?",
                    (json.dumps(data), gid, ply))
    con.commit()
    con.close()
    assert before["belief_redraws"] == before["redraw_games"] == 0
    after = move_stats(str(db), "obscuro:eval=simple")
    assert after["overdue_answers"] == 1 and after["late_ms_max"] == 250.0
    assert after["belief_lost_moves"] == 1 and after["moves"] == before["moves"] - 2
    assert (after["belief_redraws"], after["redraw_games"], after["belief_repairs"]) == (2, 1, 1)


def test_table_row_of_a_clean_sweep() -> None:
    # every pair 2-0: the pentanomial variance is 0, so no finite Elo or interval exists
    data = {"engines": ["a", "b"], "time_controls": ["iters=5", "iters=5"], "pairs": 3,
            "games": 6, "wins": 6, "draws": 0, "losses": 0, "pentanomial": [0, 0, 0, 0, 3],
            "score": 1.0, "elo": {"logistic": 1200.0, "ci95": [1200.0, 1200.0]}}
    assert "| 100.0% | unbounded (every pair 2-0) |" in table_row(data)
    data.update(wins=0, losses=6, pentanomial=[3, 0, 0, 0, 0], score=0.0)
    assert "| 0.0% | unbounded (every pair 0-2) |" in table_row(data)


def _mean_info(db: Path, key: str) -> float:
    """The mean of `key` over the analyses stored in the plies table that have it."""

    con = sqlite3.connect(db)
    infos = [json.loads(r[0]).get("info") or {} for r in con.execute(
        "SELECT engine_info FROM plies WHERE engine_info IS NOT NULL")]
    con.close()
    vals = [i[key] for i in infos if key in i]
    return sum(vals) / len(vals)


def _plies(db: Path) -> list[tuple[int, bool]]:
    """(plies, obscuro is White) of each game, from the games table."""

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
    # by the size of P: the classes hold every timed move once, in order, each its means
    rows = stats["by_belief_size"]
    assert sum(r["moves"] for r in rows) == stats["timed_moves"] == stats["moves"]
    assert [r["from"] for r in rows] == sorted(r["from"] for r in rows)
    assert sum(r["moves"] * r["search_ms"] for r in rows) == pytest.approx(
        stats["time_ms"]["search"] * stats["timed_moves"])
    assert all(0.0 <= r["exact_share"] <= 1.0 and r["belief_ms"] >= 0.0 for r in rows)
    assert main(["strength", "moves", str(db), "--engine", "obscuro:eval=simple"]) == 0
    text = capsys.readouterr().out
    assert "search's share of the planned optimum" in text
    assert "| P from | moves (share) | P exact | belief | search |" in text


def _ladder_result(hi: int, lo: int, penta: list[int]) -> dict[str, Any]:
    """A `caligo match --json` result of level `hi` against `lo` with these pentanomial counts
    (Elo from the match runner's estimator, `caligo.play.stats.elo_estimate`)."""
    from caligo.play.stats import elo_estimate

    est = elo_estimate(penta)
    pairs = sum(penta)
    # a pair's buckets as games: 0-2, draw and loss, win and loss, win and draw, 2-0
    wins, draws = penta[2] + penta[3] + 2 * penta[4], penta[1] + penta[3]
    return {"engines": [f"caligo:level={hi}", f"caligo:level={lo}"], "pairs": pairs,
            "games": 2 * pairs, "wins": wins, "draws": draws, "losses": 2 * pairs - wins - draws,
            "score": est.score, "pentanomial": penta,
            "elo": {"logistic": est.elo, "ci95": [est.elo_low, est.elo_high]}}


def test_the_ladder_chains_neighbour_matches_from_random(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from caligo.agents.ladder import LEVELS
    from caligo.cli.cmd_strength import ladder_rows

    pentas = {n: [1, 2, 10, 12, 25 - n] for n in range(2, len(LEVELS) + 1)}
    results = [_ladder_result(n, n - 1, p) for n, p in pentas.items()]
    rows, monotone = ladder_rows(results)
    assert monotone and len(rows) == len(LEVELS)
    steps = [r["elo"]["logistic"] for r in results]
    top = rows[-1].split("|")[5].split()[0]  # the last level's rating: the sum of the steps
    assert int(top) == round(sum(steps))
    paths = []
    for n, data in zip(pentas, results, strict=True):
        path = tmp_path / f"l{n}.json"
        path.write_text(json.dumps(data))
        paths.append(str(path))
    assert main(["strength", "ladder", *paths]) == 0
    assert "monotone within the intervals: yes" in capsys.readouterr().out
    # a level weaker than the one below beyond its interval breaks monotonicity
    results[3] = _ladder_result(5, 4, [20, 2, 2, 1, 0])
    assert ladder_rows(results)[1] is False
    # a sweep has no finite step: the ratings above it are unbounded
    results[3] = _ladder_result(5, 4, [0, 0, 0, 0, 9])
    rows, monotone = ladder_rows(results)
    assert monotone and rows[-1].endswith("| unbounded |")
    # a near-sweep: its interval's upper end is the estimator's cap, not a bound
    results[3] = _ladder_result(5, 4, [0, 0, 1, 0, 49])
    rows, monotone = ladder_rows(results)
    assert monotone and ", unbounded] | unbounded |" in rows[4] and rows[-1].endswith(
        "| unbounded |")
    results[3] = _ladder_result(5, 4, pentas[5])
    # a file that is JSON with engines but no pentanomial counts: an error naming the field
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({k: v for k, v in results[0].items() if k != "pentanomial"}))
    assert main(["strength", "ladder", str(broken), *paths[1:]]) == 2
    assert "'pentanomial'" in capsys.readouterr().err
    for bad, words in ((results[:-1], "no match for level(s) [7]"),
                       ([{**results[0], "engines": ["caligo:level=1", "caligo:level=2"]}],
                        "level 1 against 2: engine A must be the higher level"),
                       ([*results[:-1], {**results[-1], "pairs": 0, "elo": None}],
                        "the match of level 7 has no finished pair"),
                       ([*results, results[0]], "two matches of level 2"),
                       ([{**results[0], "engines": ["caligo:level=3", "caligo:level=1"]}],
                        "not neighbours"),
                       ([{**results[0], "engines": ["obscuro", "caligo:level=1"]}],
                        "not a ladder match")):
        with pytest.raises(StrengthError, match=re.escape(words)):
            ladder_rows(bad)


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.update(time_controls=None), "time_controls"),  # was a TypeError traceback
    (lambda d: d.update(engines=["a"]), "engines"),  # was 'not enough values to unpack'
    (lambda d: d.update(wins="abc"), "wins"),  # was printed as '+abc'
    (lambda d: d.update(pentanomial=[1, 2]), "pentanomial"),
    (lambda d: d.update(score="x"), "elo"),  # was "Unknown format code 'f'"
    (lambda d: d["elo"].update(logistic=float("nan")), "elo"),  # the ladder said 'monotone'
    (lambda d: d.update(sprt={"llr": 1.0}), "sprt"),
])
def test_table_names_a_result_file_with_a_bad_field(
    change: Any, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-edited or damaged `--json` result is refused with the file and the field named,
    never a traceback; the files in docs/strength/ are the well-formed reference."""
    good = Path(__file__).resolve().parents[2] / "docs" / "strength" / "ladder_2_1.json"
    data = json.loads(good.read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["strength", "table", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and repr(field) in err


def test_moves_names_the_game_and_ply_of_a_damaged_row(tmp_path: Path) -> None:
    """Damaged rows of a match database ended in AttributeError or TypeError tracebacks (or a
    JSON message naming nothing); each now gives a StrengthError with the game and the ply."""
    import shutil

    engines = engine_configs(["obscuro:eval=simple", "random"], [TimeControl.parse("iters=20")])
    good = tmp_path / "good.db"
    run_match(MatchConfig(engines=engines, rounds=1, seed=5), Outputs(db=good))
    damage = [
        ("UPDATE plies SET engine_info = '[1,2]' WHERE ply = {ply} AND game_id = '{gid}'",
         "not an object with an 'info'"),
        ("UPDATE plies SET engine_info = '{{not json' WHERE ply = {ply} AND game_id = '{gid}'",
         "is not JSON"),
        ("UPDATE plies SET ply = NULL WHERE ply = {ply} AND game_id = '{gid}'",
         "a ply numbered None"),
        ("UPDATE games SET start_fen = NULL WHERE id = '{gid}'", "has no start FEN"),
    ]
    for k, (sql, named) in enumerate(damage):
        db = tmp_path / f"bad{k}.db"
        shutil.copy(good, db)
        con = sqlite3.connect(db)
        gid, ply = con.execute("SELECT game_id, ply FROM plies WHERE engine_info LIKE "
                               "'%\"nodes\"%' ORDER BY game_id, ply LIMIT 1").fetchone()
        con.execute(sql.format(ply=ply, gid=gid))
        con.commit()
        con.close()
        with pytest.raises(StrengthError, match=re.escape(named)) as info:
            move_stats(str(db), "obscuro:eval=simple")
        assert repr(gid) in str(info.value), info.value
