"""`caligo bench NAME`: run a benchmark script from the repository's `benchmarks/` folder.

Each benchmark `benchmarks/bench_NAME.py` defines `main(argv) -> int`; it measures Caligo and its
reference in the same run, prints ratios, and ends with one machine-readable line.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


def available() -> list[str]:
    """Names of the benchmarks found in `benchmarks/`."""
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def _run(args: argparse.Namespace) -> int:
    names = available() if args.name == "all" else [args.name]
    status = 0
    for name in names:
        path = BENCH_DIR / f"bench_{name}.py"
        if not path.exists():
            raise ValueError(f"unknown benchmark {name!r}; available: {', '.join(available())}")
        spec = importlib.util.spec_from_file_location(f"caligo_bench_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        status |= int(module.main(args.rest) or 0)
    return status


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="run a benchmark (core, fow, subgame, all)")
    p.add_argument("name", help="benchmark name, or 'all'")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="arguments passed to the benchmark")
    p.set_defaults(func=_run)
