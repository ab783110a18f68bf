"""FoW chess speed and memory (perft, belief set), ours against references in the same run.

Perft parts live in `_fow_perft.py`, belief parts in `_fow_belief.py`; each exposes
`measure(short: bool) -> dict[str, float]`. This script runs both and prints the machine-readable
last line the issue fixes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from caligo.cli.cmd_bench import bench_parser, short_run

HERE = Path(__file__).resolve().parent


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """Measure, print the ratios, end with the `fow ...` line."""
    args = bench_parser("fow", __doc__).parse_args(argv)
    short = short_run(args)
    results: dict[str, float] = {}
    results.update(_load("_fow_perft").measure(short))
    results.update(_load("_fow_belief").measure(short))
    keys = (
        "perft_vs_stockfish",
        "perft_make_nps",
        "perft_vs_pychess",
        "belief_children_per_s",
        "belief_vs_openspiel",
        "belief_threads2_speedup",
        "belief_cut_threads2_ratio",
        "bytes_per_position",
        "belief_picture_ms",
    )
    print("fow " + " ".join(f"{k}={results[k]:.6g}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
