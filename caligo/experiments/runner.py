"""Shared output plumbing for the experiments: markdown tables, CSV, JSON and PNG plots.

Every experiment returns a frozen result holding a list of flat rows (dicts of str -> scalar);
`write_outputs` writes `<name>.csv`, `<name>.json` and `<name>.md` into an output directory
(default `./out/`, never the repository from tests: tests pass `tmp_path`).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caligo.errors import CaligoError

DEFAULT_OUT = Path("out")


class ExperimentError(CaligoError, ValueError):
    """A bad experiment configuration (unknown row key, out-of-range parameter)."""

Row = Mapping[str, Any]
Progress = Callable[[int], None]
"""A progress callback: called with the number of steps done since its last call (increments)."""


def no_progress(_: int) -> None:
    """A progress callback that does nothing (library code never prints)."""


@dataclass(frozen=True)
class Column:
    """One column of a markdown table: a row key, a header and a number format."""

    key: str
    header: str
    fmt: str = "{}"

    def render(self, row: Row) -> str:
        value = row.get(self.key)
        if value is None:
            return ""
        if isinstance(value, float):
            if math.isinf(value):
                return "inf" if value > 0 else "-inf"
            if math.isnan(value):
                return "nan"
        try:
            return self.fmt.format(value)
        except (ValueError, TypeError):
            return str(value)


@dataclass(frozen=True)
class Table:
    """Rows plus the columns that show them; `markdown()` renders it."""

    name: str
    rows: tuple[dict[str, Any], ...]
    columns: tuple[Column, ...]
    notes: tuple[str, ...] = field(default=())

    def markdown(self) -> str:
        head = "| " + " | ".join(c.header for c in self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(c.render(r) for c in self.columns) + " |" for r in self.rows]
        out = [head, sep, *body]
        if self.notes:
            out += ["", *self.notes]
        return "\n".join(out) + "\n"


def jsonable(value: Any) -> Any:
    """`value` with inf and nan as strings and numpy scalars as Python numbers (for JSON)."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return jsonable(value.item())
    return value


def write_json(path: Path, payload: Any) -> Path:
    """Write `payload` as indented JSON (inf and nan as strings); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(payload), indent=2) + "\n")
    return path


def write_csv(path: Path, rows: Sequence[Row]) -> Path:
    """Write rows as CSV with the union of their keys as header, in first-seen order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: jsonable(r.get(k)) for k in keys})
    return path


def write_outputs(table: Table, out_dir: Path | None = None, extra: Any = None) -> list[Path]:
    """Write `<name>.md`, `.csv` and `.json` (rows plus `extra`) into `out_dir`; return paths."""
    out = DEFAULT_OUT if out_dir is None else Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / f"{table.name}.md"
    md.write_text(table.markdown())
    paths = [md, write_csv(out / f"{table.name}.csv", table.rows)]
    payload: dict[str, Any] = {"name": table.name, "rows": list(table.rows)}
    if extra is not None:
        payload["extra"] = extra
    paths.append(write_json(out / f"{table.name}.json", payload))
    return paths


@dataclass(frozen=True)
class Series:
    """One line of a plot: x values, y values and optional symmetric error bars."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    err: tuple[float, ...] | None = None


def plot_series(
    path: Path,
    series: Sequence[Series],
    xlabel: str,
    ylabel: str,
    title: str = "",
    logx: bool = False,
    logy: bool = False,
    symlog: float | None = None,
) -> Path:
    """Save a line plot of the series as PNG (matplotlib, non-interactive backend).

    symlog: a linear threshold for a symmetric-log y axis (values of both signs spanning
    decades stay readable); the legend sits outside the axes so it never hides a point.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    for s in series:
        if s.err is not None:
            ax.errorbar(s.x, s.y, yerr=s.err, label=s.label, marker="o", capsize=3)
        else:
            ax.plot(s.x, s.y, label=s.label, marker="o")
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    elif symlog is not None:
        ax.set_yscale("symlog", linthresh=symlog)
        ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@dataclass(frozen=True)
class Bars:
    """One bar per group: a label, the heights, and optional (below, above) error extents."""

    label: str
    values: tuple[float, ...]
    err: tuple[tuple[float, ...], tuple[float, ...]] | None = None


def plot_grouped_bars(
    path: Path,
    groups: Sequence[str],
    bars: Sequence[Bars],
    ylabel: str,
    title: str = "",
    symlog: float | None = None,
) -> Path:
    """Save a grouped bar chart as PNG: one group per label, one bar per `Bars` in each group.

    symlog: a linear threshold for a symmetric-log y axis (small values stay visible next to
    large ones, and 0 is drawable); None for a linear axis.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    n = max(1, len(bars))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(6.4, 1.0 + 0.9 * len(groups)) + 2.4, 4.8))
    x = np.arange(len(groups))
    for i, b in enumerate(bars):
        err = None if b.err is None else np.array([b.err[0], b.err[1]])
        ax.bar(x + (i - (n - 1) / 2) * width, b.values, width, label=b.label, yerr=err,
               capsize=2 if err is not None else 0)
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    top = max((v for b in bars for v in b.values if np.isfinite(v)), default=1.0)
    if symlog is not None:
        ax.set_yscale("symlog", linthresh=symlog)
        ax.set_ylim(0.0, top * 2.0)
    else:
        ax.set_ylim(0.0, top * 1.1)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
