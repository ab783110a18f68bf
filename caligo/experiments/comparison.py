"""A wider comparison nobody has published: Table 1's blueprints and protocol, other gadgets.

Same blueprints (epsilon = 0.25 floors) and protocol as `table1` (nested solving at every player-0
infoset, the floor kept at every subgame infoset but the root, LP solves); the variants are
unsafe endgame solving (Ha 2016, chapter G), common-knowledge Resolve, Maxmargin and
Reach-Maxmargin (k = inf), maxmargin 1-KLSS, 2-KLUSS (Obscuro, appendix C.6) and Safe-1-KLSS (Liu et
al. 2023). Exploitabilities are in the [-1, 1] utility scale.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import TieBreak
from caligo.core.tree import GameTree
from caligo.errors import CaligoError
from caligo.experiments.runner import (
    Bars,
    Column,
    ExperimentError,
    Progress,
    Table,
    no_progress,
    plot_grouped_bars,
    write_json,
    write_outputs,
)
from caligo.experiments.table1 import SMALL_ROWS, TABLE1_ROWS, blueprint, row_by_key, scale_of

log = logging.getLogger(__name__)


def variants() -> tuple[tuple[str, Any], ...]:
    """(label, gadget options) of every compared variant (`safe_1klss`: Safe-1-KLSS gadgets)."""
    from caligo.subgame import gadget

    K = gadget.GadgetKind
    O = gadget.SubgameOptions
    return (
        ("unsafe", O(kind=K.UNSAFE, k=math.inf)),
        ("resolve", O(kind=K.RESOLVE, k=math.inf)),
        ("maxmargin", O(kind=K.MAXMARGIN, k=math.inf)),
        ("reach_maxmargin", O(kind=K.MAXMARGIN, k=math.inf, reach=True)),
        ("1klss", O(kind=K.MAXMARGIN, k=1)),
        ("2kluss", O(kind=K.MAXMARGIN, k=1, kluss=True)),
        ("safe_1klss", O(kind=K.MAXMARGIN, k=1)),
    )


SAFE_LABELS = ("safe_1klss",)


@dataclass(frozen=True)
class ComparisonResult:
    """rows: one dict per game (label, blueprint, one column per variant, seconds per variant)."""

    rows: tuple[dict[str, Any], ...]
    labels: tuple[str, ...]


@lru_cache(maxsize=2)
def _row_setup(key: str) -> tuple[GameTree, Any]:
    """The row's tree and blueprint (cached per process: every variant reuses them)."""
    row = row_by_key(key)
    tree = load_game(row.spec)
    return tree, blueprint(tree, row.floor)


def run_variant(key: str, label: str, progress: Progress = no_progress,
                tie_break: TieBreak = TieBreak.SIMPLEX) -> tuple[float | None, float]:
    """Nested solving with one variant on one row: (exploitability or None, seconds).

    A variant whose gadget or LP fails on the game (a `CaligoError`) is logged and reported as
    None (a blank cell); anything else is a bug and propagates.
    """
    from caligo.subgame.nested import NestedConfig, nested_solve

    options = dict(variants())[label]
    tree, bp = _row_setup(key)
    t0 = time.perf_counter()
    value: float | None
    try:
        cfg = NestedConfig(options=options, floors=bp.floors, safe_klss=label in SAFE_LABELS,
                           tie_break=tie_break)
        res = nested_solve(tree, bp.strategy, cfg, progress=progress)
        value = player_exploitability(tree, res.strategy, 0) * scale_of(tree)
    except CaligoError as exc:
        log.warning("comparison %s %s failed: %s", key, label, exc)
        value = None
    return value, time.perf_counter() - t0


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (it terminates the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_job(job: tuple[str, str, TieBreak]) -> tuple[tuple[str, str], tuple[float | None,
                                                                              float]]:
    key, label, tie_break = job
    return (key, label), run_variant(key, label, tie_break=tie_break)


def run_comparison(quick: bool = False,
                   progress_factory: Callable[[str, int], Progress] | None = None,
                   rows: Sequence[str] | None = None, workers: int = 1,
                   tie_break: TieBreak = TieBreak.SIMPLEX) -> ComparisonResult:
    """Every variant on every Table 1 row (`quick`: the small games only).

    workers > 1 runs the (row, variant) jobs in that many processes; then progress_factory is
    asked once, for a bar over the jobs ("jobs", total), which gets one increment per finished
    job. With one worker it is asked per job for a bar over its solves. Ctrl-C terminates the
    workers. The results do not depend on `workers`.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ExperimentError(f"workers must be a positive int, got {workers!r}")
    keys = tuple(rows) if rows is not None else (
        SMALL_ROWS if quick else tuple(r.key for r in TABLE1_ROWS))
    for key in keys:
        row_by_key(key)
    labels = tuple(v[0] for v in variants())
    results: dict[tuple[str, str], tuple[float | None, float]] = {}
    if workers > 1:
        # biggest games first so the processes finish together
        size = {k: load_game(row_by_key(k).spec).num_nodes for k in keys}
        jobs = sorted(((k, lb, tie_break) for k in keys for lb in labels),
                      key=lambda j: -size[j[0]])
        bar = progress_factory("jobs", len(jobs)) if progress_factory else no_progress
        pool = multiprocessing.Pool(workers, initializer=_ignore_sigint)
        try:
            for job, value in pool.imap_unordered(_run_job, jobs):
                results[job] = value
                bar(1)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    else:
        for key in keys:
            tree, _ = _row_setup(key)
            for label in labels:
                cb: Progress = no_progress
                if progress_factory is not None:
                    cb = progress_factory(f"{key}/{label}", len(tree.infosets_of(0)))
                results[(key, label)] = run_variant(key, label, cb, tie_break)
    out = []
    for key in keys:
        row = row_by_key(key)
        _, bp = _row_setup(key)
        rec: dict[str, Any] = {"key": key, "label": row.label, "blueprint": bp.exploitability}
        for label in labels:
            rec[label], rec[f"{label}_s"] = results[(key, label)]
        out.append(rec)
    return ComparisonResult(tuple(out), labels)


LABELS = {
    "unsafe": "unsafe",
    "resolve": "Resolve (k=inf)",
    "maxmargin": "Maxmargin (k=inf)",
    "reach_maxmargin": "Reach-Maxmargin (k=inf)",
    "1klss": "1-KLSS",
    "2kluss": "2-KLUSS",
    "safe_1klss": "Safe-1-KLSS",
}
"""The column headings of the docs for the variants' keys."""


def comparison_table(result: ComparisonResult) -> Table:
    """The markdown/CSV table."""
    cols = [Column("label", "game"), Column("blueprint", "blueprint", "{:.4f}")]
    cols += [Column(label, LABELS.get(label, label), "{:.4f}") for label in result.labels]
    notes = ("Exploitability after nested solving at every player-0 infoset (epsilon = 0.25 "
             "blueprints, floor kept below each subgame's root); blank = not run.",)
    return Table("comparison", result.rows, tuple(cols), notes)


def plot_comparison(result: ComparisonResult, path: Path) -> Path:
    """Grouped bars: per game, the blueprint and every variant (symlog y axis; missing = 0)."""
    rows = result.rows
    bars = [Bars("blueprint", tuple(float(r["blueprint"]) for r in rows))]
    for label in result.labels:
        bars.append(Bars(LABELS.get(label, label), tuple(
            float(r[label]) if r.get(label) is not None else float("nan") for r in rows)))
    return plot_grouped_bars(path, tuple(str(r["label"]) for r in rows), bars,
                             "player-0 exploitability, utilities in [-1, 1]",
                             "Nested solving at every infoset, Table 1 blueprints "
                             "(lower is better)", symlog=1e-3)


def write_comparison(result: ComparisonResult, out_dir: Path | None = None,
                     json_path: Path | None = None) -> list[Path]:
    """Write comparison.md/.csv/.json and comparison.png (and the rows to `json_path`)."""
    paths = write_outputs(comparison_table(result), out_dir)
    paths.append(plot_comparison(result, paths[0].parent / "comparison.png"))
    if json_path is not None:
        paths.append(write_json(Path(json_path), list(result.rows)))
    return paths
