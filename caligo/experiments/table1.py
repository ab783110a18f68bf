"""Zhang & Sandholm 2021, Table 1: blueprint exploitability before and after nested 1-KLSS at every
infoset.

Protocol (Zhang & Sandholm 2021, section 7; conventions in docs/design.md and docs/design.md,
"Reference values"):

- player 0 (⊕) is refined; utilities are mapped affinely onto [-1, 1] from the game's smallest
  and largest terminal payoff, so an exploitability is scaled by 2 / (max - min);
- the blueprint is the least-exploitable player-0 strategy under a floor: epsilon/|A(I)| on every
  action at every player-0 infoset (epsilon-uniform), or only on the betting action (opening bet
  or raise) or the folding action wherever it is legal (epsilon-bet / epsilon-fold);
- "after" is nested maxmargin 1-KLSS at every player-0 infoset (`caligo.subgame.nested`), with
  the same floor at every infoset of each subgame but its root; ratio = blueprint / after.

With epsilon = 0 the blueprint is an exact equilibrium and the nested strategy must stay one.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from caligo.core.best_response import player_exploitability
from caligo.core.games import load_game
from caligo.core.lp import TieBreak, epsilon_floors, solve_player
from caligo.core.tree import FloatArray, GameTree
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

log = logging.getLogger(__name__)

EPSILON = 0.25


class FloorKind(enum.Enum):
    """Which player-0 actions carry the epsilon/|A(I)| floor."""

    UNIFORM = "uniform"
    BET = "bet"
    FOLD = "fold"


@dataclass(frozen=True)
class GameRow:
    """One row of Table 1: the game, its floor kind and the paper's printed numbers.

    paper_*: the strings exactly as printed (".0683"); the blueprint check allows one unit of
    the last printed digit.
    """

    key: str
    label: str
    spec: str
    floor: FloorKind
    paper_blueprint: str
    paper_after: str
    paper_ratio: str

    @property
    def paper_blueprint_value(self) -> float:
        return float(self.paper_blueprint)

    @property
    def paper_after_value(self) -> float:
        return float(self.paper_after)

    @property
    def paper_unit(self) -> float:
        """One unit of the last printed digit of the paper's blueprint entry."""
        decimals = len(self.paper_blueprint.split(".")[1])
        return 10.0 ** (-decimals)


KUHN = "kuhn_poker"
LEDUC = "leduc_poker"
TABLE1_ROWS: tuple[GameRow, ...] = (
    GameRow("dark_hex", "2x2 Abrupt Dark Hex", "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
            FloorKind.UNIFORM, ".0683", ".0625", "1.093"),
    GameRow("goofspiel_random", "4-card Goofspiel, random order",
            "goofspiel(num_cards=4,imp_info=True,points_order=random)",
            FloorKind.UNIFORM, ".171", ".077", "2.2"),
    GameRow("goofspiel_increasing", "4-card Goofspiel, increasing order",
            "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
            FloorKind.UNIFORM, ".17", ".0", "inf"),
    GameRow("kuhn", "Kuhn poker", KUHN, FloorKind.UNIFORM, ".0124", ".0015", "8.3"),
    GameRow("kuhn_bet", "Kuhn poker (eps-bet)", KUHN, FloorKind.BET, ".0035", ".0", "inf"),
    GameRow("leduc", "3-rank limit Leduc poker", LEDUC, FloorKind.UNIFORM,
            ".0207", ".0191", "1.087"),
    GameRow("leduc_fold", "3-rank limit Leduc poker (eps-fold)", LEDUC, FloorKind.FOLD,
            ".0065", ".0057", "1.087"),
    GameRow("leduc_bet", "3-rank limit Leduc poker (eps-bet)", LEDUC, FloorKind.BET,
            ".0097", ".0096", "1.011"),
    GameRow("liars_dice", "Liar's Dice, 5-sided die", "liars_dice(dice_sides=5)",
            FloorKind.UNIFORM, ".181", ".125", "1.45"),
    GameRow("matching_pennies", "100-Matching pennies", "matching_pennies_n(n=100)",
            FloorKind.UNIFORM, ".0013", ".0098", "0.13"),
)
SMALL_ROWS = ("dark_hex", "goofspiel_increasing", "kuhn", "kuhn_bet", "matching_pennies")


def row_by_key(key: str) -> GameRow:
    """The Table 1 row with this key."""
    for r in TABLE1_ROWS:
        if r.key == key:
            return r
    raise ExperimentError(
        f"no Table 1 row {key!r}; rows: {', '.join(r.key for r in TABLE1_ROWS)}")


def floor_filter(tree: GameTree, kind: FloorKind) -> Callable[[int, int], bool] | None:
    """The `epsilon_floors` action filter of a floor kind on a poker tree.

    Kuhn (OpenSpiel actions 0 pass, 1 bet): the bet is action 1 where no bet is outstanding (no
    'b' in the infoset string). Leduc (0 fold, 1 call, 2 raise): the bet or raise is action 2,
    the fold action 0; OpenSpiel offers fold only facing a bet.
    """
    if kind is FloorKind.UNIFORM:
        return None
    kuhn = tree.name.startswith("kuhn_poker")
    if kind is FloorKind.BET:
        if kuhn:
            return lambda g, s: tree.slot_action[s] == 1 and "b" not in tree.infoset_names[g]
        return lambda g, s: bool(tree.slot_action[s] == 2)
    if kuhn:
        return lambda g, s: tree.slot_action[s] == 0 and "b" in tree.infoset_names[g]
    return lambda g, s: bool(tree.slot_action[s] == 0)


def scale_of(tree: GameTree) -> float:
    """The factor 2 / (max - min) that maps exploitabilities onto the [-1, 1] utility range."""
    lo, hi = tree.payoff_range()
    return 2.0 / (hi - lo)


@dataclass(frozen=True)
class Blueprint:
    """A floored least-exploitable player-0 strategy and its floors."""

    tree: GameTree
    floors: FloatArray
    strategy: FloatArray
    exploitability: float  # in the [-1, 1] scale


def blueprint(tree: GameTree, kind: FloorKind, epsilon: float = EPSILON) -> Blueprint:
    """The least-exploitable player-0 strategy with the kind's epsilon/|A(I)| floors (LP)."""
    floors = epsilon_floors(tree, 0, epsilon, action_filter=floor_filter(tree, kind))
    res = solve_player(tree, 0, floors=floors if epsilon > 0 else None)
    expl = player_exploitability(tree, res.strategy, 0) * scale_of(tree)
    return Blueprint(tree, floors, res.strategy, expl)


@dataclass(frozen=True)
class Table1Row:
    """Our measurements of one row beside the paper's.

    after_min, after_max: the spread of "after" over gadget tie-breaks (simplex, ipm and
    `Table1Config.spread` random optimal vertices; None when no spread was asked for).
    """

    key: str
    label: str
    paper_blueprint: float
    paper_after: float
    paper_ratio: str
    blueprint: float
    after: float | None
    ratio: float | None
    blueprint_ok: bool
    solves: int
    seconds: float
    after_min: float | None = None
    after_max: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Table1Config:
    """What to run; validated at construction.

    rows: Table 1 row keys. epsilon: the blueprint floor. nested: run the nested solves (else
    only the blueprint column). tie_break: which optimal vertex every gadget LP returns
    (`TieBreak.IPM` reproduces the paper's after column; `TieBreak.RANDOM` draws from `seed`).
    spread: also run every row with the simplex and ipm tie-breaks and `spread` random optimal
    vertices (seeds 0 .. spread-1) and report the smallest and largest "after" (0: do not).
    """

    rows: tuple[str, ...] = tuple(r.key for r in TABLE1_ROWS)
    epsilon: float = EPSILON
    nested: bool = True
    tie_break: TieBreak = TieBreak.SIMPLEX
    seed: int = 0
    spread: int = 0

    def __post_init__(self) -> None:
        for k in self.rows:
            row_by_key(k)
        if not 0.0 <= self.epsilon <= 1.0:
            raise ExperimentError(f"epsilon must be in [0, 1], got {self.epsilon!r}")
        if not isinstance(self.tie_break, TieBreak):
            raise ExperimentError(f"tie_break must be a TieBreak, got {self.tie_break!r}")
        if isinstance(self.spread, bool) or not isinstance(self.spread, int) or self.spread < 0:
            raise ExperimentError(f"spread must be a nonnegative int, got {self.spread!r}")

    @property
    def runs_per_row(self) -> int:
        """Nested runs per row: the configured one, plus simplex, ipm and the random spread."""
        return 1 + (2 + self.spread if self.spread else 0) if self.nested else 0


def _after(tree: GameTree, bp: Blueprint, tie_break: TieBreak, seed: int,
           progress: Progress) -> tuple[float, int]:
    """Nested maxmargin 1-KLSS from the blueprint: (exploitability in [-1, 1] scale, solves)."""
    from caligo.subgame.nested import NestedConfig, nested_solve

    cfg = NestedConfig(floors=bp.floors, tie_break=tie_break, seed=seed)
    res = nested_solve(tree, bp.strategy, cfg, progress=progress)
    return player_exploitability(tree, res.strategy, 0) * scale_of(tree), res.solves


def run_row(row: GameRow, config: Table1Config, progress: Progress = no_progress) -> Table1Row:
    """Measure one row: the blueprint LP, then (optionally) nested 1-KLSS at every infoset."""
    t0 = time.perf_counter()
    tree = load_game(row.spec)
    bp = blueprint(tree, row.floor, config.epsilon)
    after: float | None = None
    ratio: float | None = None
    lo: float | None = None
    hi: float | None = None
    solves = 0
    if config.nested:
        after, solves = _after(tree, bp, config.tie_break, config.seed, progress)
        ratio = bp.exploitability / after if after > 1e-12 else float("inf")
        if config.spread:
            runs = [(TieBreak.SIMPLEX, 0), (TieBreak.IPM, 0)]
            runs += [(TieBreak.RANDOM, seed) for seed in range(config.spread)]
            values = [after] + [_after(tree, bp, tb, seed, progress)[0] for tb, seed in runs]
            lo, hi = min(values), max(values)
    ok = abs(bp.exploitability - row.paper_blueprint_value) <= row.paper_unit + 1e-12
    if config.epsilon != EPSILON:
        ok = True  # the paper's column is for epsilon = 0.25 only
    return Table1Row(row.key, row.label, row.paper_blueprint_value, row.paper_after_value,
                     row.paper_ratio, bp.exploitability, after, ratio, ok, solves,
                     time.perf_counter() - t0, lo, hi)


@dataclass(frozen=True)
class Table1Result:
    """All measured rows and the rendered table."""

    epsilon: float
    rows: tuple[Table1Row, ...]
    tie_break: TieBreak = TieBreak.SIMPLEX
    spread: int = 0

    @property
    def name(self) -> str:
        """The output stem: table1, with the epsilon and tie-break when not the defaults."""
        name = "table1" if self.epsilon == EPSILON else f"table1_eps{self.epsilon:g}"
        return name if self.tie_break is TieBreak.SIMPLEX else f"{name}_{self.tie_break.value}"

    def table(self) -> Table:
        cols = [
            Column("label", "game"),
            Column("paper_blueprint", "paper blueprint", "{:.4f}"),
            Column("blueprint", "ours blueprint", "{:.6f}"),
            Column("paper_after", "paper after 1-KLSS", "{:.4f}"),
            Column("after", "ours after 1-KLSS", "{:.6f}"),
        ]
        if self.spread:
            cols += [Column("after_min", "after min", "{:.6f}"),
                     Column("after_max", "after max", "{:.6f}")]
        cols += [
            Column("paper_ratio", "paper ratio"),
            Column("ratio", "ours ratio", "{:.3f}"),
            Column("seconds", "seconds", "{:.1f}"),
        ]
        notes = [f"epsilon = {self.epsilon:g}; player exploitability v* - min_y u(x, y) of player "
                 "0, utilities mapped onto [-1, 1]; nested maxmargin 1-KLSS at every player-0 "
                 "infoset, the floor kept at every subgame infoset but the root; gadget LPs "
                 f"break ties by {self.tie_break.value}."]
        if self.spread:
            notes.append(f"after min / max: over the simplex and ipm tie-breaks and {self.spread}"
                         " random optimal vertices of every gadget LP (the blueprint fixed).")
        return Table(self.name, tuple(r.as_dict() for r in self.rows), tuple(cols),
                     tuple(notes))


def run_table1(config: Table1Config = Table1Config(),
               progress_factory: Callable[[GameRow, int], Progress] | None = None,
               ) -> Table1Result:
    """Run the configured rows of Table 1.

    progress_factory(row, total_solves) returns the per-solve callback (the CLI's progress bar;
    it is called with increments); total_solves counts every nested run of the row.
    """
    rows = []
    for key in config.rows:
        row = row_by_key(key)
        cb: Progress = no_progress
        if progress_factory is not None:
            tree = load_game(row.spec)
            total = int(np.count_nonzero(tree.infoset_player == 0)) * config.runs_per_row
            cb = progress_factory(row, total)
        rows.append(run_row(row, config, cb))
        log.info("table1 %s: %s", key, rows[-1])
    return Table1Result(config.epsilon, tuple(rows), config.tie_break, config.spread)


def plot_table1(result: Table1Result, path: Path) -> Path:
    """Grouped bars per game: the paper's and our blueprint and after columns (symlog y axis);
    the after spread over tie-breaks as an error bar when measured."""
    rows = result.rows
    after = [r.after if r.after is not None else float("nan") for r in rows]
    spread = None
    if result.spread:
        lo = [a - (r.after_min if r.after_min is not None else a) for a, r in zip(after, rows,
                                                                                 strict=True)]
        hi = [(r.after_max if r.after_max is not None else a) - a for a, r in zip(after, rows,
                                                                                 strict=True)]
        spread = (tuple(lo), tuple(hi))
    bars = [
        Bars("paper blueprint", tuple(r.paper_blueprint for r in rows)),
        Bars("ours blueprint", tuple(r.blueprint for r in rows)),
        Bars("paper after 1-KLSS", tuple(r.paper_after for r in rows)),
        Bars(f"ours after 1-KLSS ({result.tie_break.value})", tuple(after), spread),
    ]
    return plot_grouped_bars(
        path, tuple(r.label for r in rows), bars,
        "player-0 exploitability, utilities in [-1, 1]",
        f"Zhang & Sandholm 2021, Table 1 (epsilon = {result.epsilon:g})", symlog=1e-3)


def write_table1(result: Table1Result, out_dir: Path | None = None,
                 json_path: Path | None = None) -> list[Path]:
    """Write the table's md/csv/json and a bar chart PNG into `out_dir`, and the per-row JSON
    to `json_path`."""
    table = result.table()
    paths = write_outputs(table, out_dir, extra={"epsilon": result.epsilon,
                                                 "tie_break": result.tie_break.value,
                                                 "spread": result.spread})
    paths.append(plot_table1(result, paths[0].parent / f"{result.name}.png"))
    if json_path is not None:
        payload = [
            {"game": r.label, "key": r.key, "paper_blueprint": r.paper_blueprint,
             "paper_after": r.paper_after, "blueprint": r.blueprint, "after": r.after,
             "after_min": r.after_min, "after_max": r.after_max, "ratio": r.ratio,
             "epsilon": result.epsilon, "tie_break": result.tie_break.value}
            for r in result.rows
        ]
        paths.append(write_json(Path(json_path), payload))
    return paths


def quick_config(config: Table1Config, keys: Sequence[str] = SMALL_ROWS) -> Table1Config:
    """The same configuration restricted to the small games."""
    return replace(config, rows=tuple(k for k in config.rows if k in keys))
