"""The exploitability study's parts (`caligo.search.study`, `caligo.search.study_report`):
baselines, the resumable results file, the profile paths and the tables.

Expected values: the uniform baseline is OpenSpiel's `exploitability` of its
`UniformRandomPolicy` (NashConv / 2; `open_spiel.python.algorithms.exploitability`); PCFR+'s
rows must fall below it and its average must fall as the budget grows (PCFR+ converges, Farina,
Kroer & Sandholm 2021); the equal-work budget is the variant's node visits over the tree's
nodes (the study's stated rule). The tables are read back as a user would read them.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability as os_exploitability

from caligo.core.games import load_game
from caligo.search.config import (
    Expansion,
    Iterations,
    Purification,
    SearchError,
    SubgameKind,
)
from caligo.search.exploitability import pcfr_exploitability
from caligo.search.study import (
    GRIDS,
    Row,
    Variant,
    _append,
    baseline_rows,
    load_rows,
    profile_path,
)
from caligo.search.study_report import markdown, write_tables


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_the_uniform_baseline_is_openspiel_s(game: str) -> None:
    rows = {(r.label, r.budget): r for r in baseline_rows(game, [10, 100], {100: 0})}
    os_game = pyspiel.load_game(game)
    want = os_exploitability.exploitability(os_game, os_policy.UniformRandomPolicy(os_game))
    for b in (10, 100):
        assert rows[("uniform", b)].nashconv_half == pytest.approx(want, abs=1e-12)
        assert rows[("pcfr+_avg", b)].nashconv_half < want
        assert rows[("pcfr+_last", b)].nashconv_half < want
    assert rows[("pcfr+_avg", 100)].nashconv_half < rows[("pcfr+_avg", 10)].nashconv_half
    assert ("pcfr+_equal_work", 10) not in rows
    assert rows[("pcfr+_equal_work", 100)].extra == {"iterations": 1}  # at least one


def test_the_equal_work_budget_is_node_visits_over_tree_nodes() -> None:
    tree = load_game("kuhn_poker")
    rows = baseline_rows("kuhn_poker", [30], {30: 7 * tree.num_nodes + 3})
    equal = [r for r in rows if r.label == "pcfr+_equal_work"]
    assert len(equal) == 1 and equal[0].extra == {"iterations": 7}
    # the row is the better of PCFR+'s last and average iterate after those 7 iterations
    last7, avg7 = pcfr_exploitability(tree, 7)
    assert equal[0].nashconv_half == min(last7.nashconv_half, avg7.nashconv_half)
    uniform = next(r for r in rows if r.label == "uniform")
    assert equal[0].nashconv_half < uniform.nashconv_half


def test_a_variant_s_config_is_the_study_s_base_with_its_overrides() -> None:
    v = Variant("x", {"subgame": SubgameKind.KLSS, "purification": Purification.STABLE_TOP3},
                expand_ratio=0.25)
    cfg = v.config(100)
    assert cfg.budget == Iterations(100) and cfg.expansion is Expansion.FULL
    assert cfg.subgame is SubgameKind.KLSS and cfg.purification is Purification.STABLE_TOP3
    assert cfg.expansions == 25
    assert Variant("y", {}, expand_ratio=0.25).config(1).expansions == 1  # at least one
    plain = Variant("z", {}).config(10)
    assert plain.purification is Purification.NONE and plain.expansion is Expansion.FULL


def test_the_results_file_resumes_and_keeps_the_first_result_of_a_cell(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "study.jsonl"
    assert load_rows(path) == []
    first = Row("kuhn_poker", "obscuro", 10, "agent", 0.25, seat0=math.nan,
                extra={"note": "first"})
    _append(path, first)
    _append(path, Row("kuhn_poker", "obscuro", 10, "agent", 0.5))  # the same cell again
    _append(path, Row("kuhn_poker", "uniform", 10, "uniform", 0.458))
    rows = load_rows(path)
    assert [(r.label, r.nashconv_half) for r in rows] == [("obscuro", 0.25), ("uniform", 0.458)]
    assert math.isnan(rows[0].seat0) and rows[0].extra == {"note": "first"}
    assert rows[0].key == ("kuhn_poker", "obscuro", 10)


GOOD_ROW = json.dumps({"game": "kuhn_poker", "label": "obscuro", "budget": 10,
                       "kind": "agent", "nashconv_half": 0.25})


@pytest.mark.parametrize(("lines", "named"), [
    ("[1, 2]\n", "not a study row"),  # was a TypeError from Row(**...)
    ('{"game": "x"}\n', "missing fields"),
    (GOOD_ROW.replace("0.25", '"abc"') + "\n", "'nashconv_half' must be a float"),
    (GOOD_ROW.replace("10", "null") + "\n", "'budget' must be a int"),
    (GOOD_ROW[:-1] + ', "colour": 1}\n', "unknown fields ['colour']"),
    (GOOD_ROW + "\n" + GOOD_ROW[:20], "line 2 is not a JSON row"),  # cut while written
])
def test_a_bad_results_file_is_refused_with_its_line(
    lines: str, named: str, tmp_path: Path
) -> None:
    """A damaged study.jsonl stopped `caligo search study` with a traceback, or with a JSON
    message naming neither the file nor the line; it now names both, and a partial last line
    (a run killed while it wrote) says how to resume."""
    path = tmp_path / "study.jsonl"
    path.write_text(lines)
    with pytest.raises(SearchError, match=re.escape(named)) as info:
        load_rows(path)
    assert str(path) in str(info.value)
    assert ("delete the line to resume" in str(info.value)) == (not lines.endswith("\n"))


@pytest.mark.parametrize("game,label", [
    ("liars_dice(dice_sides=3)", "os:klss+purify"),
    ("kuhn_poker", "../../etc/passwd"),
    ("a/b", "c\\d e"),
])
def test_profile_paths_stay_inside_the_study(tmp_path: Path, game: str, label: str) -> None:
    path = profile_path(tmp_path, game, label, 100)
    assert path.resolve().is_relative_to((tmp_path / "profiles").resolve())
    assert path.name.endswith("@100.npy") and "/" not in path.name
    assert len(path.relative_to(tmp_path / "profiles").parts) == 2


def _rows() -> list[Row]:
    return [Row("kuhn_poker", "obscuro", b, "agent", v, ci95=0.01, seeds=3)
            for b, v in ((10, 0.2), (100, 0.05))] + [
        Row("kuhn_poker", "uniform", b, "uniform", 0.4583333) for b in (10, 100)] + [
        Row("kuhn_poker", "klss", 100, "agent", 0.0)]


def test_the_markdown_table_has_a_row_per_variant_and_a_column_per_budget() -> None:
    text = markdown(_rows(), GRIDS["exploitability"])
    lines = [ln for ln in text.splitlines() if ln]
    assert lines[0].startswith("**kuhn_poker**")
    assert lines[1] == "| variant | 10 | 100 |"
    body = {ln.split(" | ")[0].lstrip("| "): ln for ln in lines[3:] if ln.startswith("|")}
    assert body["obscuro"] == "| obscuro | 0.2 ± 0.01 | 0.05 ± 0.01 |"
    assert body["klss"] == "| klss |  | 0 |"  # a missing cell is empty, an exact 0 prints 0
    assert body["uniform"] == "| uniform | 0.458 | 0.458 |"
    assert list(body).index("obscuro") < list(body).index("uniform")  # the grid's order


def test_the_tables_are_written_and_read_back(tmp_path: Path) -> None:
    paths = write_tables(_rows(), tmp_path, GRIDS["exploitability"])
    assert [p.name for p in paths] == ["study.csv", "study.json", "study.md"]
    with (tmp_path / "study.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 5 and table[0]["game"] == "kuhn_poker"
    assert [(t["label"], t["budget"]) for t in table][:2] == [("klss", "100"), ("obscuro", "10")]
    grouped = json.loads((tmp_path / "study.json").read_text())
    assert [d["budget"] for d in grouped["kuhn_poker"]["obscuro"]] == [10, 100]
    assert grouped["kuhn_poker"]["obscuro"][1]["nashconv_half"] == 0.05
    assert (tmp_path / "study.md").read_text() == markdown(_rows(), GRIDS["exploitability"])
