"""The exploitability study of the search agent (docs/search.md): the grid, a
resumable runner, the tables and the log-log figure.

Every row is one (game, variant, iteration budget): the agent's exact exploitability
(`caligo.search.exploitability.search_exploitability`) over the variant's seeds. Variants are
named configurations: Obscuro's defaults with full expansion (purification off / on), the
subgame kinds (1-KLSS, common knowledge, and the classic safe form: common knowledge with
best-response alternate values and Maxmargin), the first decision without a previous tree
(sampled roots, singleton or true opponent infosets), small expansion budgets with the
perfect-information evaluator, and each ablation switch. Baselines per game and budget: uniform
play, full-game PCFR+ (last iterate and average) at the same iteration count and at the same
work (node visits), and nested 1-KLSS from the uniform blueprint (exact LP).

Results are appended to a JSON-lines file as they finish, and a run skips rows already there,
so a long grid can be interrupted and resumed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from caligo.core.games import load_game
from caligo.core.strategy import uniform_strategy
from caligo.search.config import (
    AlternateValues,
    CarryOver,
    EvaluatorKind,
    Expansion,
    FirstDecision,
    GadgetMode,
    Iterate,
    Iterations,
    Purification,
    ResolvePrior,
    RootExpansion,
    RootInfosets,
    SearchConfig,
    SearchError,
    SubgameKind,
)
from caligo.search.exploitability import (
    exploitability_of,
    make_evaluator,
    nested_klss_exploitability,
    pcfr_exploitability,
    search_exploitability,
)

log = logging.getLogger(__name__)

GAMES = (
    "kuhn_poker",
    "leduc_poker",
    "liars_dice(dice_sides=3)",
    "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
)
BUDGETS = (10, 30, 100, 300, 1000, 3000, 10000)
SHORT_BUDGETS = (10, 100, 1000)
ABLATION_BUDGETS = (100, 1000)


@dataclass(frozen=True)
class Variant:
    """A named configuration of the agent for the study.

    expand_ratio: leaf expansions per iteration (`expansions` = ratio x budget, at least 1), as
    the FoW engine sets them; None keeps the overrides' (or the full expansion's) count.
    """

    label: str
    overrides: dict[str, Any]
    evaluator: EvaluatorKind = EvaluatorKind.ZERO
    seeds: int = 1
    budgets: tuple[int, ...] = BUDGETS
    note: str = ""
    expand_ratio: float | None = None

    def config(self, budget: int) -> SearchConfig:
        base: dict[str, Any] = {"budget": Iterations(budget), "expansion": Expansion.FULL,
                                "purification": Purification.NONE}
        base.update(self.overrides)
        if self.expand_ratio is not None:
            base["expansions"] = max(1, round(self.expand_ratio * budget))
        return SearchConfig(**base)


def _gt(expansions: int, **kw: Any) -> dict[str, Any]:
    return {"expansion": Expansion.ONE_SIDED, "expansions": expansions, **kw}


VARIANTS: tuple[Variant, ...] = (
    Variant("obscuro", {}, note="2-KLUSS, blend gadget, C.2 values and gifts, last iterate"),
    Variant("obscuro+purify", {"purification": Purification.STABLE_TOP3}),
    Variant("klss", {"subgame": SubgameKind.KLSS}, note="ablation 2: 1-KLSS freezing"),
    Variant("common_knowledge", {"subgame": SubgameKind.COMMON_KNOWLEDGE}),
    Variant("ck_safe", {"subgame": SubgameKind.COMMON_KNOWLEDGE,
                        "alternate_values": AlternateValues.BEST_RESPONSE, "gifts": False,
                        "gadget": GadgetMode.MAXMARGIN},
            note="classic safe nested subgame solving"),
    Variant("sampled_first", {"first_decision": FirstDecision.SAMPLED},
            EvaluatorKind.PERFECT_INFO,
            note="Fig. 9 with no previous tree: singleton opponent infosets, v_alt = v~(s)"),
    Variant("sampled_first+true", {"first_decision": FirstDecision.SAMPLED,
                                   "root_infosets": RootInfosets.TRUE},
            EvaluatorKind.PERFECT_INFO),
    Variant("gtcfr32", _gt(32), EvaluatorKind.PERFECT_INFO, 3,
            note="one-sided GT-CFR, 32 expansions, perfect-information leaves"),
    Variant("gtcfr128", _gt(128), EvaluatorKind.PERFECT_INFO, 3),
    Variant("gtcfr128+purify", _gt(128, purification=Purification.STABLE_TOP3),
            EvaluatorKind.PERFECT_INFO, 3),
    Variant("gtcfr128+true", _gt(128, root_infosets=RootInfosets.TRUE),
            EvaluatorKind.PERFECT_INFO, 3,
            note="sampled roots get the game's true opponent infosets"),
    Variant("gtcfr128+ck_safe", _gt(128, subgame=SubgameKind.COMMON_KNOWLEDGE,
                                    alternate_values=AlternateValues.BEST_RESPONSE, gifts=False,
                                    gadget=GadgetMode.MAXMARGIN), EvaluatorKind.PERFECT_INFO, 3),
    # ablations (Obscuro, section 4.1 and the rest of SearchConfig), on GT-CFR with 128
    # expansions where expansion matters, else on full expansion
    Variant("abl:two_sided", _gt(128, expansion=Expansion.TWO_SIDED), EvaluatorKind.PERFECT_INFO,
            3, ABLATION_BUDGETS),
    Variant("abl:uniform_prior", {"resolve_prior": ResolvePrior.UNIFORM},
            budgets=ABLATION_BUDGETS),
    Variant("abl:average", {"iterate": Iterate.AVERAGE}, budgets=ABLATION_BUDGETS),
    Variant("abl:carry_regrets", {"carry_over": CarryOver.PROFILE_AND_REGRETS},
            budgets=ABLATION_BUDGETS),
    Variant("abl:maxmargin", {"gadget": GadgetMode.MAXMARGIN}, budgets=ABLATION_BUDGETS),
    Variant("abl:resolve", {"gadget": GadgetMode.RESOLVE}, budgets=ABLATION_BUDGETS),
    Variant("abl:no_gifts", {"gifts": False}, budgets=ABLATION_BUDGETS),
    Variant("abl:br_values", {"alternate_values": AlternateValues.BEST_RESPONSE},
            budgets=ABLATION_BUDGETS),
)


# --- the construction grid: subgames between 1-KLSS and KLUSS -------------------

CONSTRUCTION_GAMES = (
    "kuhn_poker",
    "leduc_poker",
    "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
)
CONSTRUCTION_BUDGETS = (10, 100, 1000, 10000)
ONE_SIDED_BUDGETS = (1000, 10000)
ONE_SIDED_RATIO = 0.25  # expansions per iteration, as the FoW engine's default
_FIX: dict[str, Any] = {"root_expansion": RootExpansion.INFOSET, "root_floor": 0.05}
CONSTRUCTIONS: tuple[tuple[str, dict[str, Any], str, bool], ...] = (
    # (label, overrides, note, also with one-sided GT-CFR)
    ("kluss", {}, "Obscuro's 2-KLUSS (appendix C.6)", True),
    ("klss", {"subgame": SubgameKind.KLSS}, "1-KLSS (Zhang and Sandholm 2021)", True),
    ("klss_root", {"subgame": SubgameKind.KLSS_ROOT},
     "1-KLSS at the order-2 root decisions, re-optimized below", True),
    ("blend0.5", {"subgame": SubgameKind.BLEND, "order2_blend": 0.5},
     "order-2 play 1/2 blueprint + 1/2 re-optimized", False),
    ("blend0.1", {"subgame": SubgameKind.BLEND, "order2_blend": 0.1},
     "order-2 play 9/10 blueprint + 1/10 re-optimized", True),
    ("safe_kluss", {"subgame": SubgameKind.SAFE_KLUSS, "order2_floor": 0.0},
     "KLUSS with the Safe-KLSS floor (Liu et al. 2023) at the order-2 infosets", False),
    ("klss3", {"subgame": SubgameKind.KLSS, "knowledge_order": 3},
     "3-KLSS (Zhang and Sandholm 2021, k = 3): order-2 re-optimized with complete infosets",
     True),
    ("kluss3", {"subgame": SubgameKind.KLUSS, "knowledge_order": 3},
     "4-KLUSS: I^4 kept, nothing frozen", False),
    ("common_knowledge", {"subgame": SubgameKind.COMMON_KNOWLEDGE},
     "the common-knowledge closure in the carried tree (reference)", False),
    ("kluss+fix", dict(_FIX), "KLUSS with the decided-loss fix (roots expanded, floor 0.05)",
     True),
    ("klss+fix", {"subgame": SubgameKind.KLSS, **_FIX}, "1-KLSS with the decided-loss fix",
     True),
    ("klss3+fix", {"subgame": SubgameKind.KLSS, "knowledge_order": 3, **_FIX},
     "3-KLSS with the decided-loss fix", True),
    ("kluss+expand", {"root_expansion": RootExpansion.INFOSET},
     "KLUSS with the fix's first half only (roots of our infoset expanded)", True),
    ("kluss+floor", {"root_floor": 0.05},
     "KLUSS with the fix's second half only (root floor 0.05)", True),
    ("klss+expand", {"subgame": SubgameKind.KLSS, "root_expansion": RootExpansion.INFOSET},
     "1-KLSS with the fix's first half only", True),
)


def construction_variants(constructions: tuple[tuple[str, dict[str, Any], str, bool], ...]
                          = CONSTRUCTIONS) -> tuple[Variant, ...]:
    """Each construction with full expansion (zero evaluator, one seed) and, where its flag
    says so, with one-sided GT-CFR (`ONE_SIDED_RATIO` expansions per iteration,
    perfect-information leaves, three seeds, label prefix `os:`), purification off and on
    (suffix `+purify`)."""
    out = []
    for label, over, note, one_sided in constructions:
        for purify in (False, True):
            tag = "+purify" if purify else ""
            ov = {**over, "purification": Purification.STABLE_TOP3} if purify else dict(over)
            out.append(Variant(label + tag, ov, budgets=CONSTRUCTION_BUDGETS, note=note))
            if one_sided:
                out.append(Variant("os:" + label + tag, {**ov, "expansion": Expansion.ONE_SIDED},
                                   EvaluatorKind.PERFECT_INFO, 3, ONE_SIDED_BUDGETS, note,
                                   expand_ratio=ONE_SIDED_RATIO))
    return tuple(out)


@dataclass(frozen=True)
class Grid:
    """A study: its games, variants, plotted labels, and what else it runs.

    baselines: also the issue-7 baselines (uniform, full-game PCFR+, nested 1-KLSS and the LP
    oracles); work_label: the variant whose node visits give PCFR+ its equal-work budget;
    profiles: keep every agent profile (`profiles/`) for the strength table.
    """

    name: str
    games: tuple[str, ...]
    variants: tuple[Variant, ...]
    plotted: tuple[str, ...]
    baselines: bool = True
    work_label: str = "obscuro"
    profiles: bool = False
    budgets: tuple[int, ...] = BUDGETS
    out: str = "docs/search"  # the default output directory (relative to the repository)


@dataclass(frozen=True)
class Row:
    """One finished cell of the grid."""

    game: str
    label: str
    budget: int
    kind: str  # "agent" or a baseline name
    nashconv_half: float
    ci95: float = 0.0
    seat0: float = float("nan")
    seat1: float = float("nan")
    mixture: float = float("nan")
    seeds: int = 1
    searches: int = 0
    node_visits: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.game, self.label, self.budget)


def load_rows(path: Path) -> list[Row]:
    """Rows already in a JSON-lines results file (none if it does not exist), one per cell."""
    if not path.exists():
        return []
    rows: dict[tuple[str, str, int], Row] = {}
    text = path.read_text(errors="replace")
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if line.strip():
            where = f"{str(path)!r} line {number}"
            try:
                data = json.loads(line)
            except (ValueError, RecursionError) as exc:
                last = number == len(lines) and not text.endswith("\n")
                hint = (" (a partial last line: the run stopped while writing it; delete the "
                        "line to resume)" if last else "")
                raise SearchError(f"{where} is not a JSON row: {exc}{hint}") from None
            row = _row(data, where)
            rows.setdefault(row.key, row)  # a cell run twice keeps its first result
    return list(rows.values())


_ROW_TYPES = {f.name: str(f.type) for f in dataclasses.fields(Row)}


def _row(data: Any, where: str) -> Row:
    """A `Row` from one JSON object, its fields' types checked; SearchError names `where`."""
    if not isinstance(data, dict):
        raise SearchError(f"{where} is not a study row (a JSON object)")
    unknown = sorted(set(data) - set(_ROW_TYPES))
    missing = sorted(k for k in ("game", "label", "budget", "kind", "nashconv_half")
                     if k not in data)
    if unknown or missing:
        raise SearchError(f"{where}: unknown fields {unknown} or missing fields {missing}")
    for key, value in data.items():
        kind = _ROW_TYPES[key]
        ok = {"str": isinstance(value, str),
              "int": isinstance(value, int) and not isinstance(value, bool),
              "float": isinstance(value, int | float) and not isinstance(value, bool),
              "dict[str, Any]": isinstance(value, dict)}[kind]
        if not ok:
            raise SearchError(f"{where}: {key!r} must be a {kind}, got {value!r}")
    return Row(**data)


def _append(path: Path, row: Row) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(dataclasses.asdict(row)) + "\n")


def profile_path(out: Path, game: str, label: str, budget: int) -> Path:
    """Where a cell's agent profiles are kept: float64[seeds, slots] (.npy)."""
    slug = "".join(ch if ch.isalnum() else "_" for ch in game).strip("_")
    safe = "".join(ch if ch.isalnum() or ch in "+-." else "_" for ch in label)
    return out / "profiles" / slug / f"{safe}@{budget}.npy"


def agent_row(game: str, variant: Variant, budget: int, profiles: Path | None = None) -> Row:
    """Run one agent cell (and keep its profiles under `profiles`, a study directory)."""
    tree = load_game(game)
    ev = make_evaluator(tree, variant.evaluator)
    t0 = time.perf_counter()
    rep = search_exploitability(tree, variant.config(budget), ev, list(range(variant.seeds)))
    if profiles is not None:
        path = profile_path(profiles, game, variant.label, budget)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, np.stack([r.profile for r in rep.runs]))
    return Row(game=game, label=variant.label, budget=budget, kind="agent",
               nashconv_half=rep.mean.nashconv_half, ci95=rep.ci95, seat0=rep.mean.seat0,
               seat1=rep.mean.seat1, mixture=rep.mixture.nashconv_half, seeds=variant.seeds,
               searches=sum(r.searches for r in rep.runs),
               node_visits=sum(r.node_visits for r in rep.runs) // max(len(rep.runs), 1),
               seconds=time.perf_counter() - t0)


def baseline_rows(game: str, budgets: Iterable[int], equal_work: dict[int, int]) -> list[Row]:
    """Uniform, PCFR+ (last, average) at each budget and at equal work, nested 1-KLSS."""
    tree = load_game(game)
    rows = []
    u = exploitability_of(tree, uniform_strategy(tree))
    for b in budgets:
        rows.append(Row(game, "uniform", b, "uniform", u.nashconv_half, seat0=u.seat0,
                        seat1=u.seat1))
        last, avg = pcfr_exploitability(tree, b)
        rows.append(Row(game, "pcfr+_last", b, "pcfr", last.nashconv_half, seat0=last.seat0,
                        seat1=last.seat1))
        rows.append(Row(game, "pcfr+_avg", b, "pcfr", avg.nashconv_half, seat0=avg.seat0,
                        seat1=avg.seat1))
        if b in equal_work:
            it = max(1, equal_work[b] // max(tree.num_nodes, 1))
            last, avg = pcfr_exploitability(tree, it)
            rows.append(Row(game, "pcfr+_equal_work", b, "pcfr", min(last.nashconv_half,
                                                                     avg.nashconv_half),
                            seat0=avg.seat0, seat1=avg.seat1, extra={"iterations": it}))
    return rows


def run_study(
    out: Path,
    games: Iterable[str] | None = None,
    variants: Iterable[Variant] | None = None,
    short: bool = False,
    progress: Callable[[str], None] | None = None,
    grid: Grid | None = None,
) -> list[Row]:
    """Run every missing cell of `grid` (default: the exploitability grid), restricted to
    `games` / `variants` when given, appending to out/study.jsonl; return all rows."""
    grid = grid if grid is not None else GRIDS["exploitability"]
    games = grid.games if games is None else tuple(games)
    variants = grid.variants if variants is None else tuple(variants)
    path = out / "study.jsonl"
    done = {r.key for r in load_rows(path)}
    for game in games:
        for v in variants:
            budgets = [b for b in v.budgets if not short or b in SHORT_BUDGETS]
            for b in budgets:
                if (game, v.label, b) in done:
                    continue
                row = agent_row(game, v, b, out if grid.profiles else None)
                _append(path, row)
                done.add(row.key)
                if progress is not None:
                    progress(f"{game} {v.label} T={b}: {row.nashconv_half:.5g} "
                             f"({row.seconds:.1f} s)")
        base_budgets = grid.budgets if not short else SHORT_BUDGETS
        if not grid.baselines:
            if (game, "pcfr+_last", base_budgets[-1]) not in done:
                for row in baseline_rows(game, base_budgets, {}):
                    if row.key not in done:
                        _append(path, row)
                        done.add(row.key)
            continue
        if (game, "nested_1klss", 0) not in done:
            t0 = time.perf_counter()
            e = nested_klss_exploitability(load_game(game))
            row = Row(game, "nested_1klss", 0, "nested", e.nashconv_half, seat0=e.seat0,
                      seat1=e.seat1, seconds=time.perf_counter() - t0)
            _append(path, row)
            done.add(row.key)
        for label, row in _lp_oracles(game, done):
            _append(path, row)
            done.add(row.key)
            if progress is not None:
                progress(f"{game} {label}: {row.nashconv_half:.5g} ({row.seconds:.1f} s)")
        work = {r.budget: r.node_visits for r in load_rows(path)
                if r.game == game and r.label == grid.work_label}
        if (game, "uniform", base_budgets[-1]) not in done:
            for row in baseline_rows(game, base_budgets, work):
                if row.key not in done:
                    _append(path, row)
                    done.add(row.key)
    return load_rows(path)


LP_BLUEPRINT_ITERATIONS = 1000


def _lp_oracles(game: str, done: set[tuple[str, str, int]]) -> list[tuple[str, Row]]:
    """The same nested constructions with exact LP solves (`caligo.subgame`), from a PCFR+
    last-iterate blueprint of 1000 iterations: Maxmargin 2-KLUSS and common-knowledge
    subgames with the C.2 blueprint values and gifts, and common knowledge with best-response
    values and no gifts (classic safe nested solving). Budget column = blueprint iterations."""

    from caligo.core.cfr import CFRConfig, CFRSolver
    from caligo.search.exploitability import nested_klss_exploitability
    from caligo.subgame.gadget import AlternateValues as AV
    from caligo.subgame.gadget import GadgetKind, SubgameOptions

    b = LP_BLUEPRINT_ITERATIONS
    cases = (("lp_nested_2kluss", 1, AV.BLUEPRINT), ("lp_nested_ck", math.inf, AV.BLUEPRINT),
             ("lp_nested_ck_br", math.inf, AV.BEST_RESPONSE))
    todo = [(label, k, av) for label, k, av in cases if (game, label, b) not in done]
    if not todo:
        return []
    tree = load_game(game)
    solver = CFRSolver(tree, CFRConfig.pcfr_plus())
    solver.iterate(b)
    out = []
    for label, k, av in todo:
        opts = SubgameOptions(kind=GadgetKind.MAXMARGIN, k=k, kluss=k == 1,
                              alternate_values=av, reach=av is AV.BLUEPRINT)
        t0 = time.perf_counter()
        e = nested_klss_exploitability(tree, opts, solver.current_strategy())
        out.append((label, Row(game, label, b, "lp_oracle", e.nashconv_half, seat0=e.seat0,
                               seat1=e.seat1, seconds=time.perf_counter() - t0)))
    return out


PLOTTED = ("obscuro", "obscuro+purify", "klss", "common_knowledge", "ck_safe", "sampled_first",
           "gtcfr128", "gtcfr128+purify", "pcfr+_last", "pcfr+_avg")

GRIDS: dict[str, Grid] = {
    "exploitability": Grid("exploitability", GAMES, VARIANTS, PLOTTED),
    "constructions": Grid("constructions", CONSTRUCTION_GAMES, construction_variants(),
                          (*(c[0] for c in CONSTRUCTIONS
                             if c[0] != "kluss3" and not c[0].endswith(("+expand", "+floor"))),
                           "pcfr+_last"),
                          baselines=False, work_label="kluss", profiles=True,
                          budgets=CONSTRUCTION_BUDGETS, out="docs/search/safe"),
}
"""The studies `caligo search study --grid NAME` runs: the exploitability grid
(docs/search/) and the constructions between 1-KLSS and KLUSS (docs/search/safe/)."""
