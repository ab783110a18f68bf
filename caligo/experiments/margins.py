"""Ha 2016, section I.6: subgame margins of endgame solving, Resolve and Maxmargin on Leduc's river.

Ha 2016, Definition 5 (I.2): for player 0's (⊕, the re-solving player) blueprint x and a
re-solved x' of a subgame S, the subgame margin is

    SM(x, x', S) = min over player 1's root infosets I0 of S of  u*(x'|I0) - u*(x|I0),

with u*(.|I0) player 1's counterfactual best-response value at I0, normalized by the
counterfactual reach, in player 0's utility (player 1 minimizes it, so a positive margin is an
improvement for the re-solving player). Ha 2016, section I.6 measures it for endgame solving
(chapter G), re-solving (chapter H, Resolve) and max-margin refinement (chapter I, Maxmargin) on
every river subgame of a fixed no-limit hold'em blueprint, each gadget solved by CFR+ (10000
iterations), and reports means with 95% intervals: endgame solving negative, re-solving small and
positive, max-margin largest.

Here, on Leduc poker (OpenSpiel's `leduc_poker`, six cards): the blueprint is CFR+ run for T
iterations on the whole game (a range of T; the seed has one fixed blueprint); the subgames are
the second-round common-knowledge subgames (one per first-round betting history that reaches
the public card x public card: 5 x 6 = 30), each built by `make_subgame` with k = inf at a
player-0 infoset just below a chance node deeper than the first deal (its closure is the whole
public state). Each gadget is solved by CFR+ (`caligo.subgame.solve.cfr_solver`: the core's
CFR+ with the gadget's B, average strategy) read at a few iteration checkpoints (the seed's x
axis), or exactly by LP (`GadgetSolver.LP`). The margin is computed on the *original* tree
(`direct_margins`): the solution is lifted into the blueprint, player 1 best-responds to the
blueprint and to the lifted profile in the full game, and their counterfactual values over each
root infoset are compared. This is the same quantity for all three gadgets and uses the same root
infosets (every player-1 infoset of the subgame's root the blueprint's player 0 reaches; the
unsafe gadget leaves out roots that player 1's blueprint never reaches, the margin does not).
Only player 0 re-solves, as in the seed (which refines its player 1, the first to act).

Intervals are Student-t 95% intervals over subgames (mean +- t_{0.975, n-1} s / sqrt(n)).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from caligo.core.best_response import best_response
from caligo.core.cfr import CFRConfig, CFRSolver
from caligo.core.game import CHANCE
from caligo.core.games import load_game
from caligo.core.knowledge import infoset_nodes, order_k_set
from caligo.core.tree import FloatArray, GameTree, IntArray
from caligo.experiments.runner import (
    Column,
    ExperimentError,
    Progress,
    Series,
    Table,
    no_progress,
    plot_series,
    write_json,
    write_outputs,
)
from caligo.subgame.gadget import (
    GadgetKind,
    SubgameOptions,
    lift,
    make_subgame,
    region_values,
)
from caligo.subgame.solve import CFRSettings, SolveMethod, cfr_solver, solve_subgame

LEDUC = "leduc_poker"
METHODS = (GadgetKind.UNSAFE, GadgetKind.RESOLVE, GadgetKind.MAXMARGIN)
METHOD_LABEL = {
    GadgetKind.UNSAFE: "endgame solving (unsafe)",
    GadgetKind.RESOLVE: "Resolve",
    GadgetKind.MAXMARGIN: "Maxmargin",
}


class MarginsError(ExperimentError):
    """Bad configuration of the margins experiment."""


class GadgetSolver(enum.Enum):
    """How each gadget is solved."""

    CFR_PLUS = "cfr_plus"  # the core's CFR+ on the gadget, average strategy at checkpoints
    LP = "lp"  # exact sequence-form LP (HiGHS); one "checkpoint", reported as 0 iterations


@dataclass(frozen=True)
class MarginsConfig:
    """The experiment's grid; validated at construction.

    blueprint_iterations: CFR+ iterations of the whole-game blueprint (one row group per T).
    gadget_iterations: CFR+ checkpoints on each gadget (ignored with GadgetSolver.LP).
    max_subgames: use only the first n subgames (None: all).
    """

    game: str = LEDUC
    blueprint_iterations: tuple[int, ...] = (10, 30, 100, 300, 1000)
    gadget_iterations: tuple[int, ...] = (10, 100, 1000, 10000)
    methods: tuple[GadgetKind, ...] = METHODS
    solver: GadgetSolver = GadgetSolver.CFR_PLUS
    confidence: float = 0.95
    max_subgames: int | None = None

    def __post_init__(self) -> None:
        for name in ("blueprint_iterations", "gadget_iterations"):
            its = getattr(self, name)
            if not its or any(isinstance(t, bool) or not isinstance(t, int) or t < 1
                              for t in its) or list(its) != sorted(set(its)):
                raise MarginsError(f"{name} must be increasing positive ints, got {its!r}")
        if not self.methods or any(not isinstance(m, GadgetKind) for m in self.methods):
            raise MarginsError(f"methods must be GadgetKinds, got {self.methods!r}")
        if not isinstance(self.solver, GadgetSolver):
            raise MarginsError(f"solver must be a GadgetSolver, got {self.solver!r}")
        if not 0.0 < self.confidence < 1.0:
            raise MarginsError(f"confidence must lie in (0, 1), got {self.confidence!r}")
        if self.max_subgames is not None and self.max_subgames < 1:
            raise MarginsError(f"max_subgames must be positive, got {self.max_subgames!r}")

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """The gadget iteration counts reported (0 stands for the exact LP solution)."""
        return (0,) if self.solver is GadgetSolver.LP else self.gadget_iterations


def quick_config() -> MarginsConfig:
    """A short run: two blueprints, gadget checkpoints up to 1000 CFR+ iterations."""
    return MarginsConfig(blueprint_iterations=(10, 100), gadget_iterations=(10, 100, 1000))


@dataclass(frozen=True)
class SecondRoundSubgame:
    """One common-knowledge subgame: a player-0 infoset at its root and player 1's root sets.

    infoset: the player-0 infoset passed to `make_subgame`; roots: per player-1 root infoset
    (kinfo), its nodes in the subgame's root set, in kinfo order.
    """

    name: str
    infoset: int
    roots: tuple[IntArray, ...]


def _root_name(tree: GameTree, infoset: int) -> str:
    # "[...][Public: c][Round1: ...]" -> "public=c round1=..."; the private card is dropped
    parts = [p.strip("[]") for p in tree.infoset_names[infoset].split("][")]
    keep = [p for p in parts if p.startswith(("Public", "Round1"))]
    return " ".join(keep) if keep else tree.infoset_names[infoset]


def _has_kept_ancestor(tree: GameTree, inK: np.ndarray, v: int) -> bool:
    p = int(tree.parent[v])
    while p >= 0:
        if inK[p]:
            return True
        p = int(tree.parent[p])
    return False


def second_round_subgames(tree: GameTree) -> tuple[SecondRoundSubgame, ...]:
    """The common-knowledge subgames rooted below chance nodes deeper than the first deal.

    For each such chance node, the player-0 infoset of each child is closed under common
    knowledge (order_k_set with k = inf); each closure is one subgame. Its root set is the
    closure's nodes without an ancestor in it, grouped by player 1's kinfo.
    """
    chance = np.flatnonzero((tree.player == CHANCE) & (tree.depth > 2))
    covered = np.zeros(tree.num_nodes, dtype=np.bool_)
    out: list[SecondRoundSubgame] = []
    for c in chance:
        first, n = int(tree.first_child[c]), int(tree.num_children[c])
        for h in range(first, first + n):
            g = int(tree.infoset[h])
            if covered[h] or g < 0 or int(tree.infoset_player[g]) != 0:
                continue
            kept = order_k_set(tree, infoset_nodes(tree, g), math.inf)
            covered[kept] = True
            inK = np.zeros(tree.num_nodes, dtype=np.bool_)
            inK[kept] = True
            roots = np.array([v for v in kept if not _has_kept_ancestor(tree, inK, int(v))],
                             dtype=np.int32)
            kids = tree.kinfo[roots, 1]
            groups = tuple(roots[kids == k].astype(np.int32) for k in np.unique(kids))
            out.append(SecondRoundSubgame(_root_name(tree, g), g, groups))
    return tuple(out)


def blueprint_values(
    tree: GameTree, strategy: FloatArray, roots: Sequence[IntArray]
) -> tuple[FloatArray, FloatArray]:
    """(u*(x|I0), R(I0)) per root set: player 1's normalized counterfactual BR value and reach."""
    br = best_response(tree, strategy, 1)
    V, R = region_values(tree, strategy, br.strategy, list(roots))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(R > 0, V / np.where(R > 0, R, 1.0), np.nan), R


def direct_margins(
    tree: GameTree, blueprint: FloatArray, resolved: FloatArray, roots: Sequence[IntArray]
) -> FloatArray:
    """M(I0) = u*(x'|I0) - u*(x|I0) per root set, from full-game best responses (NaN if R = 0).

    `resolved` is the blueprint with player 0's subgame play replaced (`lift`); the trunk is the
    blueprint's, so both have the same reach of every root.
    """
    before, _ = blueprint_values(tree, blueprint, roots)
    after, _ = blueprint_values(tree, resolved, roots)
    return after - before


@dataclass(frozen=True)
class MarginSample:
    """The subgame margin of one method on one subgame for one blueprint and checkpoint."""

    blueprint_iterations: int
    gadget_iterations: int
    method: GadgetKind
    subgame: str
    margin: float  # min over reached root infosets of M(I0)
    mean_root_margin: float  # the (unweighted) mean of M(I0) over the same roots


@dataclass(frozen=True)
class MarginSummary:
    """Mean subgame margin over subgames, with its confidence interval."""

    blueprint_iterations: int
    gadget_iterations: int
    method: GadgetKind
    n: int
    mean: float
    half_width: float

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


@dataclass(frozen=True)
class MarginsResult:
    """All samples and their summaries, plus each blueprint's exploitability (NashConv / 2)."""

    config: MarginsConfig
    samples: tuple[MarginSample, ...]
    summaries: tuple[MarginSummary, ...]
    blueprint_exploitability: tuple[float, ...] = field(default=())

    def summary(self, t: int, gadget_iterations: int, method: GadgetKind) -> MarginSummary:
        """The summary of one cell of the grid."""
        for s in self.summaries:
            if (s.blueprint_iterations, s.gadget_iterations, s.method) == (
                t, gadget_iterations, method
            ):
                return s
        raise MarginsError(f"no cell T={t}, gadget iterations={gadget_iterations}, "
                           f"{method.value} in this result")

    def table(self) -> Table:
        return margins_table(self)


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """(mean, half-width) of the Student-t interval of the mean (half-width 0 if n < 2)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return math.nan, math.nan
    mean = float(a.mean())
    if a.size < 2:
        return mean, 0.0
    sem = float(a.std(ddof=1)) / math.sqrt(a.size)
    return mean, float(stats.t.ppf(0.5 + confidence / 2, a.size - 1)) * sem


def _solve_checkpoints(
    tree: GameTree, blueprint: FloatArray, sg: SecondRoundSubgame, kind: GadgetKind,
    config: MarginsConfig,
) -> list[tuple[int, FloatArray]]:
    """(checkpoint, lifted full-game profile) per checkpoint for one gadget."""
    sub = make_subgame(tree, blueprint, sg.infoset, SubgameOptions(kind=kind, k=math.inf))
    if sub.is_empty:
        return [(c, blueprint) for c in config.checkpoints]
    if config.solver is GadgetSolver.LP:
        sol = solve_subgame(sub, SolveMethod.LP)
        return [(0, lift(tree, blueprint, sub, sol.strategy))]
    solver = cfr_solver(sub, CFRSettings(config=CFRConfig.cfr_plus()))
    out = []
    for c in config.gadget_iterations:
        solver.iterate(c - solver.iterations)
        out.append((c, lift(tree, blueprint, sub, solver.average_strategy())))
    return out


def margin_samples(
    tree: GameTree, blueprint: FloatArray, t: int, config: MarginsConfig,
    subgames: Sequence[SecondRoundSubgame],
    progress: Callable[[int], None] = no_progress,
) -> list[MarginSample]:
    """Margins of every method at every checkpoint on every subgame for one blueprint."""
    out: list[MarginSample] = []
    for sg in subgames:
        before, R = blueprint_values(tree, blueprint, sg.roots)
        reached = R > 0
        for kind in config.methods:
            for c, resolved in _solve_checkpoints(tree, blueprint, sg, kind, config):
                after, _ = blueprint_values(tree, resolved, sg.roots)
                m = (after - before)[reached]
                out.append(MarginSample(t, c, kind, sg.name,
                                        float(m.min()) if m.size else 0.0,
                                        float(m.mean()) if m.size else 0.0))
        progress(1)
    return out


def cfr_plus_blueprint(tree: GameTree, iterations: int) -> FloatArray:
    """The average strategy of CFR+ after `iterations` iterations on the whole game."""
    solver = CFRSolver(tree, CFRConfig.cfr_plus())
    solver.iterate(iterations)
    return solver.average_strategy()


def summarize(samples: Sequence[MarginSample], confidence: float = 0.95,
              ) -> tuple[MarginSummary, ...]:
    """Group samples by (T, checkpoint, method) and take the t-interval of the margins."""
    groups: dict[tuple[int, int, GadgetKind], list[float]] = {}
    for s in samples:
        groups.setdefault((s.blueprint_iterations, s.gadget_iterations, s.method),
                          []).append(s.margin)
    out = []
    for (t, c, kind), vals in groups.items():
        mean, hw = t_interval(vals, confidence)
        out.append(MarginSummary(t, c, kind, len(vals), mean, hw))
    return tuple(out)


def run_margins(config: MarginsConfig | None = None,
                progress_factory: Callable[[str, int], Progress] | None = None,
                ) -> MarginsResult:
    """Run the grid: for each blueprint T, every subgame, method and gadget checkpoint."""
    from caligo.core.best_response import nash_conv

    cfg = config if config is not None else MarginsConfig()
    tree = load_game(cfg.game)
    subgames = second_round_subgames(tree)
    if cfg.max_subgames is not None:
        subgames = subgames[: cfg.max_subgames]
    if not subgames:
        raise MarginsError(f"{cfg.game!r} has no second-round common-knowledge subgames")
    samples: list[MarginSample] = []
    expl: list[float] = []
    for t in cfg.blueprint_iterations:
        bp = cfr_plus_blueprint(tree, t)
        expl.append(nash_conv(tree, bp) / 2)
        bar = progress_factory(f"T={t}", len(subgames)) if progress_factory else no_progress
        samples += margin_samples(tree, bp, t, cfg, subgames, bar)
    return MarginsResult(cfg, tuple(samples), summarize(samples, cfg.confidence), tuple(expl))


def margins_table(result: MarginsResult) -> Table:
    """One row per (blueprint T, gadget checkpoint): mean and interval per method."""
    cfg = result.config
    rows: list[dict[str, Any]] = []
    for i, t in enumerate(cfg.blueprint_iterations):
        for c in cfg.checkpoints:
            row: dict[str, Any] = {"T": t, "gadget_iterations": c if c else "LP"}
            if i < len(result.blueprint_exploitability):
                row["blueprint_expl"] = result.blueprint_exploitability[i]
            for kind in cfg.methods:
                s = result.summary(t, c, kind)
                row["n"] = s.n
                row[f"{kind.value}_mean"] = s.mean
                row[f"{kind.value}_ci"] = s.half_width
                row[f"{kind.value}"] = f"{s.mean:+.5f} ± {s.half_width:.5f}"
            rows.append(row)
    cols = [Column("T", "blueprint CFR+ T"), Column("gadget_iterations", "gadget CFR+ its"),
            Column("blueprint_expl", "blueprint expl.", "{:.5f}"), Column("n", "subgames")]
    cols += [Column(k.value, METHOD_LABEL[k]) for k in cfg.methods]
    how = ("exact LP" if cfg.solver is GadgetSolver.LP
           else "CFR+ (average strategy) on the gadget")
    notes = (f"Ha 2016, section I.6, on Leduc's second-round common-knowledge subgames: mean "
             f"subgame margin (chips, player 0 re-solves; positive = improvement) with "
             f"{cfg.confidence:.0%} Student-t intervals over subgames; gadgets solved by {how}.",)
    return Table(_stem(cfg), tuple(rows), tuple(cols), notes)


def _stem(cfg: MarginsConfig) -> str:
    return "margins_lp" if cfg.solver is GadgetSolver.LP else "margins"


def write_margins(result: MarginsResult, out_dir: Path | None = None,
                  json_path: Path | None = None) -> list[Path]:
    """Write margins.md/.csv/.json (with every sample) and margins.png (margin against T).

    With GadgetSolver.LP the stem is `margins_lp`; with several CFR+ checkpoints also
    `margins_gadget_iterations.png` (margin against gadget iterations, smallest T).
    """
    table = margins_table(result)
    samples = [
        {"T": s.blueprint_iterations, "gadget_iterations": s.gadget_iterations,
         "method": s.method.value, "subgame": s.subgame, "margin": s.margin,
         "mean_root_margin": s.mean_root_margin}
        for s in result.samples
    ]
    paths = write_outputs(table, out_dir, extra={"samples": samples})
    if json_path is not None:
        paths.append(write_json(Path(json_path), {"rows": list(table.rows),
                                                  "samples": samples}))
    out = paths[0].parent
    cfg = result.config
    last = cfg.checkpoints[-1]
    ts = tuple(float(t) for t in cfg.blueprint_iterations)
    series = []
    for kind in cfg.methods:
        cells = [result.summary(t, last, kind) for t in cfg.blueprint_iterations]
        series.append(Series(METHOD_LABEL[kind], ts, tuple(s.mean for s in cells),
                             tuple(s.half_width for s in cells)))
    its = "LP" if last == 0 else f"{last} CFR+ iterations"
    paths.append(plot_series(out / f"{_stem(cfg)}.png", series, "blueprint CFR+ iterations T",
                             "mean subgame margin (chips, symlog)",
                             f"Leduc second-round subgames, gadgets solved by {its}", logx=True,
                             symlog=1e-4))
    if len(cfg.checkpoints) > 1:
        t0 = cfg.blueprint_iterations[0]
        cs = tuple(float(c) for c in cfg.checkpoints)
        series = []
        for kind in cfg.methods:
            cells = [result.summary(t0, c, kind) for c in cfg.checkpoints]
            series.append(Series(METHOD_LABEL[kind], cs, tuple(s.mean for s in cells),
                                 tuple(s.half_width for s in cells)))
        paths.append(plot_series(out / "margins_gadget_iterations.png", series,
                                 "gadget CFR+ iterations", "mean subgame margin (chips, symlog)",
                                 f"Margin against gadget iterations (blueprint: CFR+, T={t0})",
                                 logx=True, symlog=1e-3))
    return paths


__all__ = [
    "GadgetSolver",
    "MarginSample",
    "MarginSummary",
    "MarginsConfig",
    "MarginsError",
    "MarginsResult",
    "SecondRoundSubgame",
    "blueprint_values",
    "cfr_plus_blueprint",
    "direct_margins",
    "margin_samples",
    "margins_table",
    "quick_config",
    "run_margins",
    "second_round_subgames",
    "summarize",
    "t_interval",
    "write_margins",
]
