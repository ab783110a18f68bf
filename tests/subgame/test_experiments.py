"""Experiments of seed 000 section 7 and seed 004 I.6.

Sources: Table 1 of seed 000 (the paper's printed blueprint column, each checked to one unit of
its last printed digit; the conventions are DESIGN.md's and ../shared/reference/values.md's);
Proposition 3's exploitabilities worked out by hand in `caligo.experiments.counterexample`'s
docstring (blueprint 4/N, nested 1-KLSS 1); Theorem 9 / Proposition 8 (u(x', y*) = v*).
Long runs are marked slow and shrink when CALIGO_SHORT=1.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import game_value
from caligo.experiments import table1 as t1
from caligo.experiments.affine import equilibrium_vertices, payoff
from caligo.experiments.counterexample import counterexample_blueprint, counterexample_tree
from caligo.experiments.runner import Column, Table, write_outputs

SHORT = os.environ.get("CALIGO_SHORT") == "1"


@pytest.mark.parametrize("row", t1.TABLE1_ROWS, ids=lambda r: r.key)
def test_table1_blueprint_column(row: t1.GameRow) -> None:
    """All ten blueprint entries within one unit of the paper's last printed digit (LP only)."""
    tree = load_game(row.spec)
    bp = t1.blueprint(tree, row.floor)
    assert abs(bp.exploitability - row.paper_blueprint_value) <= row.paper_unit
    mine = np.isin(tree.slot_infoset(), tree.infosets_of(0))
    assert np.all(bp.strategy[mine] >= bp.floors[mine] - 1e-9)


def test_table1_blueprint_values_md() -> None:
    """The finer values of reference/values.md (computed there by the same LP)."""
    expected = {
        "kuhn": 0.012401,
        "kuhn_bet": 0.00347,
        "leduc": 0.020730,
        "leduc_fold": 0.00646,
        "leduc_bet": 0.00973,
        "dark_hex": 0.068359,
    }
    for key, value in expected.items():
        row = t1.row_by_key(key)
        bp = t1.blueprint(load_game(row.spec), row.floor)
        assert bp.exploitability == pytest.approx(value, abs=1e-5), key


def test_epsilon_zero_blueprint_is_equilibrium() -> None:
    for key in t1.SMALL_ROWS:
        row = t1.row_by_key(key)
        assert t1.blueprint(load_game(row.spec), row.floor, 0.0).exploitability < 1e-9


def test_runner_writes_outputs(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path))
    table = Table(
        "demo",
        ({"a": 1, "b": 0.5}, {"a": 2, "b": math.inf}),
        (Column("a", "A"), Column("b", "B", "{:.2f}")),
    )
    paths = write_outputs(table, out)
    assert {p.name for p in paths} == {"demo.md", "demo.csv", "demo.json"}
    assert "| 2 | inf |" in (out / "demo.md").read_text()
    assert json.loads((out / "demo.json").read_text())["rows"][1]["b"] == "inf"


def test_counterexample_blueprint_by_hand() -> None:
    """Proposition 3's blueprint: exploitability exactly 4/N (value 0)."""
    for n in (4, 8, 20):
        tree = counterexample_tree(n)
        assert game_value(tree) == pytest.approx(0.0, abs=1e-12)
        bp = counterexample_blueprint(tree, n)
        assert player_exploitability(tree, bp, 0) == pytest.approx(4.0 / n, abs=1e-12)
        assert tree.infosets_of(0).shape[0] == n and tree.infosets_of(1).shape[0] == 1


def test_equilibrium_vertices_are_equilibria() -> None:
    tree = load_game("goofspiel(num_cards=4,imp_info=True,points_order=ascending)")
    v = game_value(tree)
    xs = equilibrium_vertices(tree, 0, 3)
    ys = equilibrium_vertices(tree, 1, 3)
    assert len(xs) >= 2 and len(ys) >= 2  # several NE: Theorem 9 has something to check
    for x in xs:
        for y in ys:
            assert payoff(tree, x, y) == pytest.approx(v, abs=1e-8)


def test_theorem9_affine_equilibrium() -> None:
    """Nested 1-KLSS from NE blueprints earns exactly v* against every opponent NE vertex."""
    from caligo.experiments.affine import check_game

    row = check_game("goofspiel(num_cards=4,imp_info=True,points_order=ascending)", 2, 4)
    assert row.blueprints >= 2 and row.opponent_ne >= 2
    assert row.max_gap < 1e-8


@pytest.mark.parametrize(
    "key", ["kuhn", "kuhn_bet", "dark_hex", "goofspiel_increasing", "matching_pennies"]
)
def test_table1_epsilon_zero_small(key: str) -> None:
    """Seed 000 section 7: with epsilon = 0 nested 1-KLSS leaves exploitability at 0."""
    row = t1.run_row(t1.row_by_key(key), t1.Table1Config(epsilon=0.0))
    assert row.after is not None and row.after < 1e-9


def test_table1_small_rows_after(tmp_path: object) -> None:
    """The after column on the small games; dark hex and goofspiel-increasing match the paper's
    print (.0625 and .0) exactly; the JSON has the paper's numbers beside ours."""
    from pathlib import Path

    result = t1.run_table1(t1.quick_config(t1.Table1Config()))
    by = {r.key: r for r in result.rows}
    assert by["dark_hex"].after == pytest.approx(0.0625, abs=1e-9)
    assert by["goofspiel_increasing"].after == pytest.approx(0.0, abs=1e-9)
    assert all(r.blueprint_ok for r in result.rows)
    path = Path(str(tmp_path)) / "t1.json"
    t1.write_table1(result, Path(str(tmp_path)), path)
    rows = json.loads(path.read_text())
    assert {"game", "paper_blueprint", "paper_after", "blueprint", "after"} <= set(rows[0])


@pytest.mark.slow
def test_table1_leduc_rows() -> None:
    """Leduc rows of Table 1 (about 10 s each): after 1-KLSS lowers exploitability."""
    keys = ("leduc",) if SHORT else ("leduc", "leduc_fold", "leduc_bet")
    for key in keys:
        row = t1.run_row(t1.row_by_key(key), t1.Table1Config())
        assert row.blueprint_ok and row.after is not None
        assert row.after < row.blueprint
