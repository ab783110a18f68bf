"""The engines' settings: `ObscuroConfig` and `ZS21Config`/`ZS21Budget` refuse every bad field
naming it and quoting the value, their option parsers map each key of the shared vocabulary
(`caligo.agents.options`) to the field it names, and Obscuro's ablations turn exactly the
switches the paper names.

Expected values: the ablations of Zhang & Sandholm 2025 (Obscuro), section 4.1: (2) 1-KLSS
instead of KLUSS, (3) two-sided GT-CFR, (4) a uniform Resolve prior, (5) all of them; the
option table in docs/engine.md; the fields' documented ranges in the two classes' docstrings.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from caligo.agents.obscuro_config import (
    Ablation,
    ObscuroConfig,
    ObscuroConfigError,
    parse_budget,
)
from caligo.agents.options import EvalChoice, OptionError
from caligo.agents.timing import TcKind, TimeControl
from caligo.agents.zs21 import Penalty, ZS21Budget, ZS21Config, ZS21ConfigError
from caligo.search.config import (
    PRESETS,
    CarryOver,
    Expansion,
    Preset,
    ResolvePrior,
    RootExpansion,
    SubgameKind,
)

OBSCURO_BAD: list[tuple[str, Any]] = [
    ("evaluator", "simple"), ("ablation", "klss"), ("subgame", "kluss"), ("budget", "mt=1"),
    ("expand_ratio", 0), ("expand_ratio", math.nan), ("expand_ratio", math.inf),
    ("min_roots", -1), ("expanders", 0), ("engines", 0), ("engines", 1.5),
    ("expander_batch", 0), ("max_nodes", 1023),
    ("belief_cap", 0), ("max_nodes", True), ("belief_cap", 2.5), ("seed", "7"), ("seed", False),
    ("preset", "safe"), ("budget", TimeControl.parse("180+2")),
    ("carry_over", "profile_and_regrets"), ("belief_threads", 0), ("belief_threads", 65),
    ("belief_threads", True), ("belief_threads", 2.0),
]


@pytest.mark.parametrize("name,value", OBSCURO_BAD, ids=[f"{n}={v!r}" for n, v in OBSCURO_BAD])
def test_obscuro_config_refuses_each_bad_field(name: str, value: Any) -> None:
    with pytest.raises(ObscuroConfigError) as err:
        ObscuroConfig(**{name: value})
    text = str(err.value)
    assert name in text
    assert repr(value) in text or str(value) in text


def test_a_preset_and_a_subgame_are_not_both_given() -> None:
    with pytest.raises(ObscuroConfigError, match=r"preset \(safe\) decides the subgame"):
        ObscuroConfig(preset=Preset.SAFE, subgame=SubgameKind.KLSS)
    cfg = ObscuroConfig(preset=Preset.SAFE).search_config()
    for key, value in PRESETS[Preset.SAFE].items():
        assert getattr(cfg, key) == value
    assert cfg.subgame is SubgameKind.KLSS and cfg.root_expansion is RootExpansion.INFOSET


@pytest.mark.parametrize("ablation,subgame,expansion,prior", [
    (Ablation.NONE, SubgameKind.KLUSS, Expansion.ONE_SIDED, ResolvePrior.BLUEPRINT_MIX),
    (Ablation.NO_PURIFY, SubgameKind.KLUSS, Expansion.ONE_SIDED, ResolvePrior.BLUEPRINT_MIX),
    (Ablation.KLSS, SubgameKind.KLSS, Expansion.ONE_SIDED, ResolvePrior.BLUEPRINT_MIX),
    (Ablation.TWO_SIDED, SubgameKind.KLUSS, Expansion.TWO_SIDED, ResolvePrior.BLUEPRINT_MIX),
    (Ablation.UNIFORM_PRIOR, SubgameKind.KLUSS, Expansion.ONE_SIDED, ResolvePrior.UNIFORM),
    (Ablation.ALL_OFF, SubgameKind.KLSS, Expansion.TWO_SIDED, ResolvePrior.UNIFORM),
    (Ablation.SIMPLE_EVAL, SubgameKind.KLUSS, Expansion.ONE_SIDED, ResolvePrior.BLUEPRINT_MIX),
], ids=lambda v: getattr(v, "value", None))
def test_each_ablation_turns_the_paper_s_switches(ablation: Ablation, subgame: SubgameKind,
                                                  expansion: Expansion,
                                                  prior: ResolvePrior) -> None:
    cfg = ObscuroConfig(ablation=ablation)
    sc = cfg.search_config()
    assert (sc.subgame, sc.expansion, sc.resolve_prior) == (subgame, expansion, prior)
    assert ablation.purifies is (ablation not in (Ablation.NO_PURIFY, Ablation.ALL_OFF))
    if ablation is Ablation.SIMPLE_EVAL:  # ablation 6: the simple evaluation, never Stockfish
        assert not cfg.uses_stockfish


def test_obscuro_options_fill_the_fields_they_name() -> None:
    cfg = ObscuroConfig.from_options({
        "budget": "iters=300", "eval": "simple", "ablation": "two_sided", "expand": "0.5",
        "roots": "64", "expanders": "2", "nodes": "50000", "belief": "1000", "seed": "9",
        "stockfish": "/nowhere/stockfish", "engines": "3"})
    assert cfg.budget == TimeControl(TcKind.ITERATIONS, iterations=300)
    assert cfg.evaluator is EvalChoice.SIMPLE and cfg.ablation is Ablation.TWO_SIDED
    assert (cfg.expand_ratio, cfg.min_roots, cfg.expanders, cfg.max_nodes, cfg.belief_cap,
            cfg.seed) == (0.5, 64, 2, 50_000, 1000, 9)
    assert cfg.stockfish.path == "/nowhere/stockfish"
    assert cfg.engines == 3 and cfg.slots == 3
    assert ObscuroConfig(expanders=4).slots == 4 and ObscuroConfig().slots == 2
    # P's update runs on the search's threads (a solver and the expanders) unless told
    assert ObscuroConfig().update_threads == 2 and ObscuroConfig(expanders=4).update_threads == 5
    assert ObscuroConfig.from_options({"bthreads": "1"}).update_threads == 1
    # sfdepth=N: the depth of Stockfish's call on a leaf (Obscuro's 1 by default)
    # (with the built-in evaluator: a named Stockfish that is missing is refused otherwise)
    deep = ObscuroConfig.from_options({"eval": "simple", "stockfish": "/nowhere/sf",
                                       "sfdepth": "2"}).stockfish
    assert (deep.depth, deep.path, deep.own_call_cap) == (2, "/nowhere/sf", 8)
    assert ObscuroConfig().stockfish.depth == 1
    assert ObscuroConfig.from_options({"preset": "obscuro_fix"}).preset is Preset.OBSCURO_FIX
    for carry in CarryOver:  # carry=: the search's carry-over, Obscuro's by default
        got = ObscuroConfig.from_options({"carry": carry.value, "preset": "safe"})
        assert got.search_config().carry_over is carry
    assert ObscuroConfig().search_config().carry_over is CarryOver.PROFILE_ONLY
    with pytest.raises(OptionError, match="obscuro: invalid carry 'regrets'"):
        ObscuroConfig.from_options({"carry": "regrets"})
    with pytest.raises(OptionError, match="unknown option"):
        ObscuroConfig.from_options({"particles": "3"})
    with pytest.raises(OptionError, match="obscuro: invalid ablation 'none2'"):
        ObscuroConfig.from_options({"ablation": "none2"})
    with pytest.raises(ObscuroConfigError, match="no Stockfish executable at '/nowhere/sf"):
        ObscuroConfig.from_options({"eval": "stockfish", "stockfish": "/nowhere/sf"})


@pytest.mark.parametrize("text,want", [
    ("auto", TimeControl()), ("", TimeControl()), ("none", TimeControl()),
    ("iters=40", TimeControl(TcKind.ITERATIONS, iterations=40)),
    ("MT=0.25", TimeControl(TcKind.MOVETIME, movetime_ms=250)),
])
def test_the_budget_option_is_auto_iterations_or_a_move_time(text: str,
                                                             want: TimeControl) -> None:
    assert parse_budget(text) == want


@pytest.mark.parametrize("text", ["180+2", "mt=-1", "iters=0", "fast", "mt=nan"])
def test_any_other_budget_is_refused_quoting_it(text: str) -> None:
    with pytest.raises(ObscuroConfigError, match=f"invalid budget {text!r}".replace("+", r"\+")):
        parse_budget(text)


ZS21_BAD: list[tuple[str, Any]] = [
    ("particles", -1), ("particles", 1.5), ("max_nodes", 63), ("expand_batch", 0),
    ("penalty_m", 0.0), ("penalty_m", math.inf), ("switch_tol", -1e-3), ("switch_tol", math.nan),
    ("penalty", "text"), ("start", "root_only"), ("tie_break", "simplex"), ("budget", 1.0),
    ("gifts", 1), ("canonical", "yes"), ("merge_transpositions", None), ("seed", 2.0),
    ("seed", True), ("expand_all", 0),
]


@pytest.mark.parametrize("name,value", ZS21_BAD, ids=[f"{n}={v!r}" for n, v in ZS21_BAD])
def test_zs21_config_refuses_each_bad_field(name: str, value: Any) -> None:
    with pytest.raises(ZS21ConfigError) as err:
        replace(ZS21Config(), **{name: value})
    text = str(err.value)
    assert name in text and repr(value) in text


@pytest.mark.parametrize("kw,says", [
    ({"seconds": 0}, "seconds"), ({"seconds": math.inf}, "seconds"), ({"seconds": True},
                                                                        "seconds"),
    ({"expansions": -1}, "expansions"), ({"iterations": 2.0}, "iterations"),
    ({"seconds": None, "expansions": None, "iterations": None}, "at least one limit"),
])
def test_zs21_budget_refuses_each_bad_limit(kw: dict[str, Any], says: str) -> None:
    with pytest.raises(ZS21ConfigError, match=says):
        ZS21Budget(**kw)


def test_a_zs21_budget_without_seconds_is_deterministic() -> None:
    assert ZS21Budget(seconds=None, expansions=10).deterministic
    assert not ZS21Budget(seconds=0.5, expansions=None).deterministic
    assert ZS21Config().penalty is Penalty.TEXT
