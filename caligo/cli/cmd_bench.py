"""`caligo bench NAME [--short]`: run a benchmark script from the source checkout's benchmarks/.

Each benchmark `benchmarks/bench_NAME.py` has a module docstring (first line: its summary) and
`main(argv) -> int` with its own parser (`bench_parser`): `--help` describes it without running
it, `--short` (or CALIGO_SHORT=1) runs a reduced version, unknown arguments are rejected. It
measures Caligo and its reference in the same run, prints ratios, and ends with one
machine-readable line.

The scripts are not part of the installed package: they need a source checkout (the folder is
found beside the package, or named by CALIGO_BENCH_DIR).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any

from caligo.cli._util import HelpFormatter
from caligo.errors import CaligoError


class BenchError(CaligoError, ValueError):
    """An unknown benchmark, or no benchmarks folder (not a source checkout)."""


def bench_dir() -> Path:
    """The benchmarks folder: CALIGO_BENCH_DIR, else `benchmarks/` beside the package."""
    env = os.environ.get("CALIGO_BENCH_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "benchmarks"


def available() -> list[str]:
    """Names of the benchmarks found in the benchmarks folder."""
    return sorted(p.stem.removeprefix("bench_") for p in bench_dir().glob("bench_*.py"))


def summary(name: str) -> str:
    """The first line of a benchmark's docstring, read without importing it."""
    try:
        doc = ast.get_docstring(ast.parse((bench_dir() / f"bench_{name}.py").read_text()))
    except (OSError, SyntaxError):
        return ""
    return (doc or "").strip().splitlines()[0] if doc else ""


def bench_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser every benchmark's `main` starts from: `--short` plus the description."""
    p = argparse.ArgumentParser(prog=f"caligo bench {name}", description=doc,
                                formatter_class=HelpFormatter)
    p.add_argument("--short", action="store_true",
                   help="a reduced run (also implied by the environment variable CALIGO_SHORT=1)")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    return p


def short_run(args: argparse.Namespace) -> bool:
    """Whether a benchmark runs its reduced version: `--short` or CALIGO_SHORT=1 (and, with
    `-v`, turn on INFO logging)."""
    if getattr(args, "verbose", False):
        logging.getLogger().setLevel(logging.INFO)
    return bool(args.short) or os.environ.get("CALIGO_SHORT") == "1"


def _missing() -> BenchError:
    return BenchError(f"no benchmarks at {str(bench_dir())!r}: the benchmark scripts live in "
                      "the source checkout's benchmarks/ folder, which a non-editable install "
                      "does not have; run from a checkout (make run) or set CALIGO_BENCH_DIR")


def _run_one(name: str, rest: list[str]) -> int:
    path = bench_dir() / f"bench_{name}.py"
    if not path.exists():
        if not bench_dir().is_dir():
            raise _missing()
        raise BenchError(f"unknown benchmark {name!r}; available: {', '.join(available())}")
    spec = importlib.util.spec_from_file_location(f"caligo_bench_{name}", path)
    if spec is None or spec.loader is None:
        raise BenchError(f"cannot load {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    # registered before it runs, as an import would: dataclasses and pickling look the
    # module up by name
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        return int(module.main(rest) or 0)
    except SystemExit as exc:  # the bench's own --help or argument error
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2


def _run(args: argparse.Namespace) -> int:
    if args.name is None:
        args.parser.print_help()
        return 2
    if args.name != "all":
        return _run_one(args.name, list(args.rest))
    p = bench_parser("all", "Run every benchmark in turn; --short is passed to each.")
    opts = p.parse_args(list(args.rest))
    names = available()
    if not names:
        raise _missing()
    status = 0
    for name in names:
        print(f"== caligo bench {name}", flush=True)
        status |= _run_one(name, ["--short"] if opts.short else [])
    return status


def register(sub: Any) -> None:
    """Add `caligo bench`."""
    names = available()
    listing = "\n".join(f"  {n:<10} {summary(n)}" for n in names) or (
        "  (none found: " + str(_missing()) + ")")
    p = sub.add_parser(
        "bench", help="run a benchmark against its reference (" + ", ".join([*names, "all"]) +
        ")", description="Run a benchmark: Caligo and its reference measured in the same run, "
        "their ratio, and a last machine-readable line. Needs a source checkout.",
        epilog=f"benchmarks:\n{listing}\n  all        every benchmark in turn\n\n"
        "examples:\n  caligo bench core --help       what a benchmark measures\n"
        "  caligo bench all --short       every benchmark, reduced (as CALIGO_SHORT=1)",
        formatter_class=HelpFormatter)
    p.add_argument("name", nargs="?", metavar="NAME", help="a benchmark, or all")
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="the benchmark's own options (see caligo bench NAME --help)")
    p.set_defaults(func=_run, parser=p)
