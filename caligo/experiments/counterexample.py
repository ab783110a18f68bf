"""Zhang & Sandholm 2021, Proposition 3: nested 1-KLSS can blow a Theta(1/N)-equilibrium up to
Theta(1).

The game (proof of Proposition 3): chance draws n in 1..N uniformly and tells player 0 (⊕) but
not player 1 (⊖); then both play matching pennies, ⊖ winning (⊕ gets -1) on a match and ⊕
winning (+1) otherwise. Game value 0. The blueprint plays heads with probability 1/2 + 2/N at
every n: ⊖'s best reply (heads) gets 1 - 2(1/2 + 2/N) = -4/N, so its exploitability is 4/N.

By hand, the maxmargin 1-KLSS subgame at n keeps only node n and folds the other N - 1 copies,
played by the blueprint, into the top row of B: ⊖'s values for heads and tails are
(1 - 2q) - 4(N-1)/N and (2q - 1) + 4(N-1)/N for ⊕'s heads probability q, so the maxmargin
solution is q = 0 (tails) for every N >= 4. Playing tails everywhere is exploited by ⊖ playing
tails: exploitability 1, a blow-up by the factor N/4, linear in the size of the game.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caligo.core.best_response import player_exploitability
from caligo.core.builtin_games import HEADS, TAILS, TableGame
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import FloatArray, GameTree, build_tree
from caligo.experiments.runner import (
    Column,
    ExperimentError,
    Progress,
    Series,
    Table,
    no_progress,
    plot_series,
    write_outputs,
)


def matching_pennies_copies(n: int) -> TableGame:
    """N copies of matching pennies; ⊕ is told which copy, ⊖ wins (+1 for her) on a match."""
    if n < 1:
        raise ExperimentError(f"the counterexample needs N >= 1, got {n!r}")

    def player_fn(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        return list(range(1, n + 1)) if len(h) == 0 else [HEADS, TAILS]

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        return h[0] if len(h) == 1 and p == 0 else None

    def utility_fn(h: tuple[int, ...]) -> float:
        return -1.0 if h[1] == h[2] else 1.0

    return TableGame(f"matching_pennies_copies(n={n})", player_fn, actions_fn, observe_fn,
                     utility_fn, {HEADS: "H", TAILS: "T"})


def counterexample_tree(n: int) -> GameTree:
    """The compiled game of Proposition 3 with N copies."""
    return build_tree(matching_pennies_copies(n))


def counterexample_blueprint(tree: GameTree, n: int) -> FloatArray:
    """⊕ plays heads with probability 1/2 + 2/N everywhere (⊖'s slots uniform)."""
    p = 0.5 + 2.0 / n
    if p > 1.0:
        raise ExperimentError(f"the blueprint needs N >= 4, got {n!r}")
    s = np.full(tree.num_slots, 0.5)
    for g in tree.infosets_of(0):
        off = int(tree.infoset_offset[g])
        s[off + HEADS] = p
        s[off + TAILS] = 1.0 - p
    return s


@dataclass(frozen=True)
class CounterexampleRow:
    """Exploitability of the blueprint and of nested 1-KLSS for one N."""

    n: int
    blueprint: float
    after: float
    blueprint_expected: float  # 4/N
    after_expected: float  # 1

    @property
    def ratio(self) -> float:
        return self.after / self.blueprint


def run_counterexample(ns: Sequence[int] = (4, 8, 16, 32, 64, 128),
                       progress: Progress = no_progress) -> tuple[CounterexampleRow, ...]:
    """Nested maxmargin 1-KLSS on the Proposition 3 game for each N."""
    from caligo.subgame.nested import NestedConfig, nested_solve

    rows = []
    for n in ns:
        tree = counterexample_tree(n)
        bp = counterexample_blueprint(tree, n)
        res = nested_solve(tree, bp, NestedConfig())
        rows.append(CounterexampleRow(n, player_exploitability(tree, bp, 0),
                                      player_exploitability(tree, res.strategy, 0), 4.0 / n, 1.0))
        progress(1)
    return tuple(rows)


def counterexample_table(rows: Sequence[CounterexampleRow]) -> Table:
    """The markdown/CSV table of the rows."""
    data = tuple(
        {"N": r.n, "blueprint": r.blueprint, "blueprint_expected": r.blueprint_expected,
         "after": r.after, "after_expected": r.after_expected, "ratio": r.ratio}
        for r in rows
    )
    cols = (Column("N", "N"), Column("blueprint", "blueprint", "{:.6f}"),
            Column("blueprint_expected", "4/N", "{:.6f}"),
            Column("after", "after nested 1-KLSS", "{:.6f}"),
            Column("ratio", "ratio after/blueprint", "{:.2f}"))
    notes = ("Zhang & Sandholm 2021, Proposition 3: player exploitability (utilities already "
             "in [-1, 1]) of the blueprint, which plays heads with probability 1/2 + 2/N at "
             "every copy (exploitability 4/N), and of nested maxmargin 1-KLSS at every infoset.",)
    return Table("counterexample", data, cols, notes)


def write_counterexample(rows: Sequence[CounterexampleRow], out_dir: Path | None = None,
                         ) -> list[Path]:
    """Write the table and `counterexample.png` (exploitability against N)."""
    table = counterexample_table(rows)
    paths = write_outputs(table, out_dir)
    out = paths[0].parent
    ns = tuple(float(r.n) for r in rows)
    paths.append(plot_series(
        out / "counterexample.png",
        [Series("blueprint (exploitability 4/N)", ns, tuple(r.blueprint for r in rows)),
         Series("after nested 1-KLSS (exploitability 1)", ns, tuple(r.after for r in rows))],
        "N (copies of matching pennies)", "player-0 exploitability",
        "Zhang & Sandholm 2021, Proposition 3: nested 1-KLSS blows up", logx=True, logy=True))
    return paths
