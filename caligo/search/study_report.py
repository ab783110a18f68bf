"""The tables and plots of the search studies (`caligo.search.study`): study.csv, study.json and
study.md, the strength tables of a grid that keeps profiles (what a construction buys on a
small game, both seats), the exploitability plot, and the constructions' plot by game and
family."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from caligo.core.games import load_game
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.study import CONSTRUCTIONS, GRIDS, Grid, Row, profile_path

log = logging.getLogger(__name__)


def write_tables(rows: list[Row], out: Path, grid: Grid | None = None) -> list[Path]:
    """study.csv (every row), study.json (grouped by game and label), study.md (tables); for a
    grid that keeps profiles also strength.csv and strength.md (`strength_rows`)."""
    grid = grid if grid is not None else GRIDS["exploitability"]
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "study.csv"
    fields = ["game", "label", "budget", "kind", "nashconv_half", "ci95", "seat0", "seat1",
              "mixture", "seeds", "searches", "node_visits", "seconds"]
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for r in sorted(rows, key=lambda r: (r.game, r.label, r.budget)):
            w.writerow([getattr(r, k) for k in fields])
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        grouped.setdefault(r.game, {}).setdefault(r.label, []).append(
            {"budget": r.budget, "nashconv_half": r.nashconv_half, "ci95": r.ci95,
             "seat0": r.seat0, "seat1": r.seat1, "mixture": r.mixture})
    for g in grouped.values():
        for lst in g.values():
            lst.sort(key=lambda d: d["budget"])
    json_path = out / "study.json"
    json_path.write_text(json.dumps(grouped, indent=1, sort_keys=True))
    md_path = out / "study.md"
    md_path.write_text(markdown(rows, grid))
    paths = [csv_path, json_path, md_path]
    srows = strength_rows(rows, out, grid) if grid.profiles else []
    if srows:  # a checkout without the (uncommitted) profiles keeps the tables it has
        spath = out / "strength.csv"
        with spath.open("w", newline="") as f:
            dw = csv.DictWriter(f, fieldnames=list(StrengthRow.__dataclass_fields__))
            dw.writeheader()
            for sr in srows:
                dw.writerow(dataclasses.asdict(sr))
        smd = out / "strength.md"
        smd.write_text(strength_markdown(srows))
        paths += [spath, smd]
    return paths


FAMILIES = (("", ""), ("", "+purify"), ("os:", ""), ("os:", "+purify"))
"""(prefix, suffix) of a construction's labels: full expansion / one-sided GT-CFR, purification
off / on (`construction_variants`)."""


@dataclass(frozen=True)
class StrengthRow:
    """What a construction buys on a small game, from the kept profiles (module docstring).

    Values are the construction's expected payoff per game averaged over both seats (player 0's
    utility as player 0, minus it as player 1), in the game's units: head_to_head against the
    same family's `kluss` agent at the same budget, vs_uniform against uniform play,
    vs_pcfr10 against full-game PCFR+'s average after 10 iterations (a weak opponent with
    systematic errors). With several seeds, seed s meets seed s.
    """

    game: str
    family: str  # "full", "full+purify", "os", "os+purify"
    label: str
    budget: int
    nashconv_half: float
    head_to_head: float
    vs_uniform: float
    vs_pcfr10: float
    head_to_head_ci: float = 0.0  # half-width of the 95% interval over seeds (0: one seed)


def _seat_mean(tree: GameTree, mine: np.ndarray, theirs: np.ndarray) -> float:
    """Average over seats of `mine`'s expected payoff against `theirs` (full profiles)."""
    from caligo.core.best_response import expected_value
    from caligo.search.exploitability import combine

    return 0.5 * (expected_value(tree, combine(tree, mine, theirs))
                  - expected_value(tree, combine(tree, theirs, mine)))


def strength_rows(rows: list[Row], out: Path, grid: Grid) -> list[StrengthRow]:
    """Head-to-head and fixed-opponent values of every kept profile (`StrengthRow`)."""
    from caligo.core.cfr import CFRConfig, CFRSolver

    nash = {r.key: r.nashconv_half for r in rows}
    labels = [c[0] for c in CONSTRUCTIONS]
    out_rows = []
    for game in grid.games:
        tree = load_game(game)
        uni = uniform_strategy(tree)
        solver = CFRSolver(tree, CFRConfig.pcfr_plus())
        solver.iterate(10)
        weak = solver.average_strategy()
        for prefix, suffix in FAMILIES:
            family = ("os" if prefix else "full") + suffix
            for budget in sorted({r.budget for r in rows if r.game == game and r.budget > 0}):
                base_path = profile_path(out, game, prefix + "kluss" + suffix, budget)
                if not base_path.exists():
                    continue
                base = np.load(base_path)
                for label in labels:
                    full = prefix + label + suffix
                    path = profile_path(out, game, full, budget)
                    if not path.exists():
                        continue
                    prof = np.load(path)
                    n = min(len(prof), len(base))
                    h2h = [_seat_mean(tree, prof[i], base[i]) for i in range(n)]
                    ci = float(1.96 * np.std(h2h, ddof=1) / math.sqrt(n)) if n > 1 else 0.0
                    out_rows.append(StrengthRow(
                        game, family, label, budget, nash.get((game, full, budget), math.nan),
                        float(np.mean(h2h)),
                        float(np.mean([_seat_mean(tree, p, uni) for p in prof])),
                        float(np.mean([_seat_mean(tree, p, weak) for p in prof])), ci))
    return out_rows


def strength_markdown(srows: list[StrengthRow]) -> str:
    """Per game and family, a table of NashConv / 2 and the three values per construction."""
    out = []
    for game in dict.fromkeys(r.game for r in srows):
        for family in dict.fromkeys(r.family for r in srows if r.game == game):
            mine = [r for r in srows if r.game == game and r.family == family]
            budgets = sorted({r.budget for r in mine})
            out.append(f"**{game}, {family}** (per budget: NashConv / 2 | head-to-head vs "
                       "kluss | vs uniform | vs PCFR+(10) average)\n")
            out.append("| construction | " + " | ".join(f"T={b}" for b in budgets) + " |")
            out.append("|---|" + "---|" * len(budgets))
            for label in dict.fromkeys(r.label for r in mine):
                cells = {r.budget: r for r in mine if r.label == label}
                row = []
                for b in budgets:
                    r = cells.get(b)
                    if r is None:
                        row.append("")
                        continue
                    h2h = f"{r.head_to_head:+.4f}" + (
                        f" ± {r.head_to_head_ci:.3f}" if r.head_to_head_ci > 0 else "")
                    row.append(f"{_fmt(r.nashconv_half)} \\| {h2h} \\| "
                               f"{r.vs_uniform:+.4f} \\| {r.vs_pcfr10:+.4f}")
                out.append(f"| {label} | " + " | ".join(row) + " |")
            out.append("")
    return "\n".join(out)


def plot(rows: list[Row], path: Path, grid: Grid | None = None) -> Path:
    """The log-log figure: NashConv / 2 against the iteration budget, one panel per game (per
    game and family for the constructions grid, `plot_constructions`)."""
    grid = grid if grid is not None else GRIDS["exploitability"]
    if grid.profiles:
        return plot_constructions(rows, path, grid)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [g for g in grid.games if any(r.game == g for r in rows)]
    ncol = 3
    nrow = (len(games) + 1 + ncol - 1) // ncol  # one more panel for the legend
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.3 * ncol, 3.6 * nrow), squeeze=False)
    flat = [ax for row in axes for ax in row]
    handles: dict[str, object] = {}
    for ax, game in zip(flat, games, strict=False):
        for label in grid.plotted:
            pts = sorted((r.budget, r.nashconv_half) for r in rows
                         if r.game == game and r.label == label and r.budget > 0)
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            style = "--" if label.startswith("pcfr") else "-"
            (line,) = ax.plot(xs, [max(y, 1e-6) for y in ys], style, marker="o", ms=3,
                              label=label)
            handles.setdefault(label, line)
        for label, ls in (("uniform", ":"), ("nested_1klss", "-.")):
            vals = [r.nashconv_half for r in rows if r.game == game and r.label == label]
            if vals:
                line = ax.axhline(max(vals[0], 1e-6), ls=ls, color="gray", lw=1, label=label)
                handles.setdefault(label, line)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(game, fontsize=8)
        ax.set_xlabel("iterations per search", fontsize=8)
        ax.set_ylabel("NashConv / 2 (exact)", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax in flat[len(games):]:
        ax.axis("off")
    legend_ax = flat[len(games)] if len(games) < len(flat) else flat[-1]
    legend_ax.legend(list(handles.values()), list(handles), fontsize=8, loc="center",
                     title="full expansion unless gtcfr*; values below 1e-6 drawn at 1e-6",
                     title_fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _fmt(x: float) -> str:
    """3 significant digits; |x| < 1e-12 (rounding of an exact 0) prints as 0."""
    return "0" if abs(x) < 1e-12 else f"{x:.3g}"


def plot_constructions(rows: list[Row], path: Path, grid: Grid) -> Path:
    """One row of panels per game, one column per family (full expansion / one-sided GT-CFR,
    purification off / on): NashConv / 2 of each construction against the budget, log-log,
    full-game PCFR+'s last iterate dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [g for g in grid.games if any(r.game == g for r in rows)]
    fams = FAMILIES
    fig, axes = plt.subplots(len(games), len(fams), figsize=(4.0 * len(fams), 3.2 * len(games)),
                             squeeze=False)
    handles: dict[str, Any] = {}
    cmap = plt.get_cmap("tab10")
    bases = [lab for lab in grid.plotted if "+" not in lab and not lab.startswith("pcfr")]
    for gi, game in enumerate(games):
        for fi, (prefix, suffix) in enumerate(fams):
            ax = axes[gi][fi]
            for label in grid.plotted:
                full = label if label.startswith("pcfr") else prefix + label + suffix
                pts = sorted((r.budget, r.nashconv_half) for r in rows
                             if r.game == game and r.label == full and r.budget > 0)
                if not pts:
                    continue
                xs, ys = zip(*pts, strict=True)
                base = label.split("+")[0]
                fix = "+" in label
                color = ("black" if label.startswith("pcfr") else
                         cmap(bases.index(base) % 10) if base in bases else "gray")
                style = "--" if label.startswith("pcfr") else "-." if fix else "-"
                (line,) = ax.plot(xs, [max(y, 1e-6) for y in ys], style,
                                  marker="x" if fix else "o", ms=4 if fix else 3, color=color,
                                  label=label)
                handles.setdefault(label, line)
            goal = {"kuhn_poker": 0.01, "leduc_poker": 0.05}.get(game)
            if goal is not None:
                ax.axhline(goal, ls=":", color="red", lw=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
            fam = ("one-sided, 0.25 expansions/iteration" if prefix else "full expansion") + (
                ", purified" if suffix else "")
            ax.set_title(f"{game.split('(')[0]}: {fam}", fontsize=8)
            ax.set_xlabel("iterations per search", fontsize=7)
            ax.set_ylabel("NashConv / 2 (exact)", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="both", alpha=0.3)
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="lower center",
               ncol=min(len(handles), 6),
               title="values below 1e-6 drawn at 1e-6 (several constructions reach 0 and "
                     "overlap there); dash-dot x: with the decided-loss fix; red dotted: the goal "
                     "(Kuhn 0.01, Leduc 0.05)", title_fontsize=7)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def markdown(rows: list[Row], grid: Grid | None = None) -> str:
    """Per game, a table of NashConv / 2 by variant (rows) and budget (columns)."""
    grid = grid if grid is not None else GRIDS["exploitability"]
    out = []
    games = [g for g in grid.games if any(r.game == g for r in rows)]
    order = [v.label for v in grid.variants] + ["lp_nested_2kluss", "lp_nested_ck",
                                           "lp_nested_ck_br", "pcfr+_last",
                                           "pcfr+_avg", "pcfr+_equal_work", "uniform",
                                           "nested_1klss"]
    for game in games:
        mine = [r for r in rows if r.game == game]
        budgets = sorted({r.budget for r in mine if r.budget > 0})
        out.append(f"**{game}** (NashConv / 2, exact; ± is the 95% interval over seeds)\n")
        out.append("| variant | " + " | ".join(str(b) for b in budgets) + " |")
        out.append("|---|" + "---|" * len(budgets))
        for label in order:
            cells = {r.budget: r for r in mine if r.label == label}
            if not cells:
                continue
            if label == "nested_1klss":
                r0 = next(iter(cells.values()))
                out.append("| nested 1-KLSS from uniform (LP; any budget) | " + " | ".join(
                    _fmt(r0.nashconv_half) for _ in budgets) + " |")
                continue
            row = []
            for b in budgets:
                r = cells.get(b)
                if r is None:
                    row.append("")
                elif r.seeds > 1 and r.ci95 > 1e-12:
                    row.append(f"{_fmt(r.nashconv_half)} ± {r.ci95:.2g}")
                else:
                    row.append(_fmt(r.nashconv_half))
            out.append(f"| {label} | " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)
