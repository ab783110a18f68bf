"""Subgame solving: wall time of the whole Table 1 run and of one 1-KLSS gadget on Liar's Dice.

Last line: `subgame table1_s=T gadget_liars_dice_ms=G`. The gadget figure is one root-level
maxmargin 1-KLSS build plus LP solve on Liar's Dice (5-sided), best of 3. `--short` runs only
the small Table 1 rows (table1_s then covers those) and one gadget repetition.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence


def _gadget_ms(repeats: int = 3) -> float:
    from caligo.core.games import load_game
    from caligo.experiments.table1 import FloorKind, blueprint
    from caligo.subgame.nested import NestedConfig, root_state, solve_step

    tree = load_game("liars_dice(dice_sides=5)")
    bp = blueprint(tree, FloorKind.UNIFORM)
    g = int(tree.infosets_of(0)[0])
    cfg = NestedConfig(floors=bp.floors)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        solve_step(root_state(tree, bp.strategy), g, cfg, tree)
        best = min(best, time.perf_counter() - t0)
    return best * 1000.0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print per-row times."""
    from caligo.cli.cmd_bench import bench_parser, short_run
    from caligo.experiments import table1 as t1

    args = bench_parser("subgame", __doc__).parse_args(argv)
    short = short_run(args)
    config = t1.Table1Config()
    if short:
        config = t1.quick_config(config)
    gadget_ms = _gadget_ms(1 if short else 3)
    t0 = time.perf_counter()
    result = t1.run_table1(config)
    total = time.perf_counter() - t0
    for r in result.rows:
        print(f"{r.key:22s} solves={r.solves:5d} {r.seconds:8.1f} s")
    print(f"subgame table1_s={total:.1f} gadget_liars_dice_ms={gadget_ms:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
