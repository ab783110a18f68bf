"""The core against OpenSpiel's C++ in one run: CFR+, exploitability, LP, tree build.

Measures CFR+ iterations per second on Leduc (ours over `pyspiel.CFRPlusSolver`, via
`_core_cfr.py`), the time of one exploitability evaluation of a Leduc strategy (ours over
`pyspiel.exploitability`), the Leduc sequence-form LP, and the Liar's Dice (5-sided) tree build
with its peak Python memory. The last line is machine-readable.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyspiel

from caligo.cli.cmd_bench import bench_parser, short_run
from caligo.core.best_response import openspiel_exploitability
from caligo.core.games import game_definition
from caligo.core.lp import solve_lp
from caligo.core.strategy import normalize_per_infoset, to_dict_policy
from caligo.core.tree import build_tree

HERE = Path(__file__).resolve().parent


def _best_time(fn: Callable[[], object], repeat: int, number: int) -> float:
    """Best-of-`repeat` mean seconds per call over `number` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _cfr_measure(short: bool) -> dict[str, float]:
    spec = importlib.util.spec_from_file_location("_core_cfr", HERE / "_core_cfr.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure(short)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    """Measure, print the ratios, end with the `core ...` line."""
    args = bench_parser("core", __doc__).parse_args(argv)
    short = short_run(args)
    results = _cfr_measure(short)

    game = game_definition("leduc_poker")
    tree = build_tree(game)
    rng = np.random.default_rng(0)
    strategy = normalize_per_infoset(tree, rng.random(tree.num_slots))
    policy = to_dict_policy(tree, strategy)
    pg = game.pyspiel_game  # type: ignore[attr-defined]
    ours_val = openspiel_exploitability(tree, strategy)
    ref_val = pyspiel.exploitability(pg, policy)
    assert abs(ours_val - ref_val) < 1e-9, (ours_val, ref_val)
    ours = _best_time(lambda: openspiel_exploitability(tree, strategy), 5, 20 if short else 100)
    ref = _best_time(lambda: pyspiel.exploitability(pg, policy), 3, 2 if short else 5)
    print("exploitability of a random Leduc strategy (NashConv/2)")
    print(f"  caligo             {ours * 1e3:9.3f} ms")
    print(f"  pyspiel (C++)      {ref * 1e3:9.3f} ms")
    print(f"  ratio              {ref / ours:9.1f}x   (target >= 50)")
    results["exploitability_leduc_ratio"] = ref / ours

    lp_times = []
    for _ in range(1 if short else 3):
        fresh = build_tree(game)
        start = time.perf_counter()
        solve_lp(fresh)
        lp_times.append(time.perf_counter() - start)
    results["lp_leduc_s"] = min(lp_times)
    print(f"Leduc sequence-form LP (HiGHS, both players): {min(lp_times):.3f} s")

    gc.collect()
    ld = game_definition("liars_dice(dice_sides=5)")
    build_times = []
    for _ in range(1 if short else 3):
        start = time.perf_counter()
        ld_tree = build_tree(ld)
        build_times.append(time.perf_counter() - start)
    results["build_liars_dice_s"] = min(build_times)
    tracemalloc.start()  # a separate build: tracemalloc slows allocation-heavy code a lot
    build_tree(ld)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"liars_dice(dice_sides=5) tree build: {ld_tree.num_nodes} nodes in "
          f"{min(build_times):.2f} s; peak Python memory while building {peak / 2**20:.1f} MiB")

    print(
        "core "
        f"cfr_plus_leduc_ratio={results['cfr_plus_leduc_ratio']:.4g} "
        f"exploitability_leduc_ratio={results['exploitability_leduc_ratio']:.4g} "
        f"lp_leduc_s={results['lp_leduc_s']:.4g} "
        f"build_liars_dice_s={results['build_liars_dice_s']:.4g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
