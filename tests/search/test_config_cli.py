"""`SearchConfig` validation and the `caligo search` command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caligo.cli import main
from caligo.errors import CaligoError
from caligo.search.config import (
    Expansion,
    Iterations,
    Schedule,
    SearchConfig,
    SearchConfigError,
    Seconds,
)


@pytest.mark.parametrize("kw", [
    {"budget": 5},
    {"budget": Iterations(10), "expansions": None},
    {"expansions": -1},
    {"puct_c": -1.0},
    {"explore_mix": 1.5},
    {"solver_tail": 1.0},
    {"max_support": 0},
    {"max_roots": 0},
    {"expansion": "full"},
    {"budget": Seconds(1.0)},  # deterministic schedule needs iterations
    {"gifts": 1},
    {"order2_blend": 1.5},
    {"order2_blend": float("nan")},
    {"order2_floor": -0.1},
    {"knowledge_order": 2},
    {"knowledge_order": 0},
    {"root_floor": 1.5},
    {"root_expansion_share": 0.0},
    {"root_expansion_share": 1.01},
    {"root_expansion_share": float("inf")},
    {"puct_prior": 0.0},
    {"puct_prior": -1.0},
    {"puct_prior": float("nan")},
    {"puct_prior": True},
    {"root_expansion": "infoset"},
    {"subgame": "klss_root"},
])
def test_bad_configs_raise(kw: dict[str, object]) -> None:
    with pytest.raises(SearchConfigError):
        SearchConfig(**kw)  # type: ignore[arg-type]


def test_budget_types_validate_and_errors_are_caligo_errors() -> None:
    with pytest.raises(SearchConfigError):
        Iterations(0)
    with pytest.raises(SearchConfigError):
        Seconds(float("nan"))
    assert issubclass(SearchConfigError, CaligoError)
    ok = SearchConfig(budget=Seconds(0.5), schedule=Schedule.THREADED, expansions=None)
    assert ok.expansion is Expansion.ONE_SIDED


def test_cli_exploitability_writes_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        ) -> None:
    out = tmp_path / "k.json"
    rc = main(["search", "exploitability", "kuhn_poker", "--budget", "10,30",
               "--subgame", "klss", "--json", str(out), "--csv", str(tmp_path / "k.csv")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "nashconv/2" in text
    data = json.loads(out.read_text())
    assert [r["budget"] for r in data["rows"]] == [10, 30]
    assert data["config"]["subgame"] == "klss"
    assert all(0.0 <= r["nashconv_half"] <= 11 / 24 + 1e-9 for r in data["rows"])


@pytest.mark.parametrize("argv", [
    ["search", "exploitability", "not_a_game"],
    ["search", "exploitability", "kuhn_poker", "--budget", "ten"],
    ["search", "exploitability", "kuhn_poker", "--seeds", "0"],
    ["search", "exploitability", "kuhn_poker", "--budget", "10,1e13"],  # ran for ever
    # empty selections: they ran the whole grid (--games '') or nothing, with rc 0
    ["search", "study", "--games", ""],
    ["search", "study", "--games", "kuhn_poker;;leduc_poker"],
    ["search", "study", "--variants", ""],
])
def test_cli_bad_input_is_a_clear_error(argv: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "caligo: error:" in capsys.readouterr().err


def test_cli_study_short_resumes(tmp_path: Path) -> None:
    args = ["search", "study", "--out", str(tmp_path), "--games", "kuhn_poker", "--short",
            "--variants", "klss"]
    assert main(args) == 0
    first = (tmp_path / "study.jsonl").read_text().splitlines()
    assert main(args) == 0  # nothing left to run: the file does not grow
    assert (tmp_path / "study.jsonl").read_text().splitlines() == first
    assert (tmp_path / "study.png").stat().st_size > 0


def test_cli_run_prints_a_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "run", "kuhn_poker", "--seat", "1", "--budget", "50"]) == 0
    out = capsys.readouterr().out
    assert "policy" in out and "gadget" in out and "nodes" in out
    assert main(["search", "run", "kuhn_poker", "--infoset", "nope"]) == 2


@pytest.mark.parametrize(("args", "message"), [
    # random_game(seed=1) gives seat 1 no decision: an IndexError traceback before
    (["random_game(seed=1)", "--seat", "1"], "has no decision for seat 1"),
    # Kuhn's infoset '0' is player 0's (OpenSpiel's naming): --seat 1 was silently ignored
    (["kuhn_poker", "--seat", "1", "--infoset", "0"], "is seat 0's, not seat 1's"),
])
def test_cli_run_names_a_seat_without_the_decision(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "run", *args, "--budget", "10"]) == 2
    assert message in capsys.readouterr().err


def test_presets_set_only_the_construction() -> None:
    """`preset` fills the construction fields of `PRESETS` and keeps every other default; the
    obscuro preset is SearchConfig's defaults (Obscuro's)."""
    from caligo.search.config import PRESETS, Preset, RootExpansion, SubgameKind, preset

    assert preset(Preset.OBSCURO) == SearchConfig()
    safe = preset(Preset.SAFE, budget=Iterations(50), expansions=10)
    assert safe.subgame is SubgameKind.KLSS and safe.root_expansion is RootExpansion.INFOSET
    assert safe.root_floor == PRESETS[Preset.SAFE]["root_floor"] > 0
    assert safe.budget == Iterations(50) and safe.purification == SearchConfig().purification
    fix = preset(Preset.OBSCURO_FIX)
    assert fix.subgame is SubgameKind.KLUSS and fix.root_expansion is RootExpansion.INFOSET
    with pytest.raises(SearchConfigError):
        preset("safe")  # type: ignore[arg-type]


def test_cli_preset_and_construction_flags(tmp_path: Path) -> None:
    out = tmp_path / "k.json"
    assert main(["search", "exploitability", "kuhn_poker", "--budget", "10", "--preset", "safe",
                 "--evaluator", "zero", "--json", str(out)]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert (cfg["subgame"], cfg["root_expansion"], cfg["root_floor"]) == ("klss", "infoset",
                                                                          "0.05")
    assert main(["search", "exploitability", "kuhn_poker", "--budget", "10", "--preset", "safe",
                 "--subgame", "blend", "--order2-blend", "0.25", "--knowledge-order", "3",
                 "--root-floor", "0", "--json", str(out)]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert (cfg["subgame"], cfg["order2_blend"], cfg["knowledge_order"], cfg["root_floor"]) == (
        "blend", "0.25", "3", "0.0")


def test_cli_constructions_grid_keeps_profiles_and_strength(tmp_path: Path) -> None:
    args = ["search", "study", "--grid", "constructions", "--out", str(tmp_path), "--games",
            "kuhn_poker", "--short", "--variants", "kluss,klss"]
    assert main(args) == 0
    assert (tmp_path / "profiles").is_dir()
    text = (tmp_path / "strength.md").read_text()
    assert "| kluss |" in text and "| klss |" in text
    assert main(["search", "study", "--grid", "nope", "--out", str(tmp_path)]) == 2


@pytest.mark.parametrize(("args", "option"), [
    (["search", "exploitability", "kuhn_poker", "--budget", "1,,2"], "--budget"),
    (["zs21", "exploitability", "kuhn_poker", "--budget", "1,,2"], "--budget"),
    (["experiment", "decided_loss", "--moves", "1,,2"], "--moves"),
    (["search", "exploitability", "kuhn_poker", "--budget", "10,0"], "--budget"),
])
def test_count_lists_are_read_alike_and_refuse_empty_items(
    args: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The search and ZS21 budgets took '1,,2' as '1,2' while decided_loss refused it: one
    reader (`caligo.cli._util.count_list`) now refuses it everywhere, naming the option."""
    assert main(args) == 2
    assert f"{option} takes comma-separated" in capsys.readouterr().err
