"""Sub-commands of the subgame area: `caligo experiment table1|comparison|counterexample|affine|
margins [--json PATH] [--out DIR] [--quick]`.

Each experiment prints its markdown table and writes CSV/JSON (and PNG plots where it has them)
into `--out` (default ./out/). Progress bars (tqdm) live here, never in the library.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXPERIMENTS = ("table1", "comparison", "counterexample", "affine", "margins")


def _bar(total: int, desc: str) -> Callable[[int], None]:
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, leave=False)
    return lambda n: bar.update(n)


def _table1(args: argparse.Namespace) -> int:
    from caligo.experiments import table1 as t1

    config = t1.Table1Config(epsilon=args.epsilon)
    if args.quick:
        config = t1.quick_config(config)
    if args.rows:
        config = t1.Table1Config(rows=tuple(args.rows.split(",")), epsilon=args.epsilon)
    result = t1.run_table1(config, lambda row, total: _bar(total, row.key))
    print(result.table().markdown())
    for p in t1.write_table1(result, args.out, args.json):
        print(f"wrote {p}")
    bad = [r.key for r in result.rows if not r.blueprint_ok]
    if bad:
        print(f"blueprint column off the paper's by more than one unit: {', '.join(bad)}")
        return 1
    return 0


def _comparison(args: argparse.Namespace) -> int:
    from caligo.experiments import comparison as cmp

    rows = tuple(args.rows.split(",")) if args.rows else None
    result = cmp.run_comparison(quick=args.quick,
                                progress_factory=lambda label, total: _bar(total, label),
                                rows=rows, workers=args.workers)
    table = cmp.comparison_table(result)
    print(table.markdown())
    for p in cmp.write_comparison(result, args.out, args.json):
        print(f"wrote {p}")
    return 0


def _counterexample(args: argparse.Namespace) -> int:
    from caligo.experiments import counterexample as ce

    ns = (4, 8, 16, 32) if args.quick else (4, 8, 16, 32, 64, 128, 256)
    rows = ce.run_counterexample(ns, _bar(len(ns), "N"))
    print(ce.counterexample_table(rows).markdown())
    for p in ce.write_counterexample(rows, args.out):
        print(f"wrote {p}")
    return 0


def _affine(args: argparse.Namespace) -> int:
    from caligo.experiments import affine as af

    games = af.AFFINE_GAMES[:2] if args.quick else (*af.AFFINE_GAMES, "leduc_poker")
    rows = af.run_affine(games, progress=_bar(len(games), "games"))
    print(af.affine_table(rows).markdown())
    for p in af.write_affine(rows, args.out):
        print(f"wrote {p}")
    return 0


def _margins(args: argparse.Namespace) -> int:
    from caligo.experiments import margins as mg

    configs = [mg.quick_config() if args.quick else mg.MarginsConfig()]
    if not args.quick:  # the exact (LP) gadget solutions beside the seed's CFR+ protocol
        configs.append(mg.MarginsConfig(solver=mg.GadgetSolver.LP))
    for i, config in enumerate(configs):
        result = mg.run_margins(config, progress_factory=lambda label, total: _bar(total, label))
        print(result.table().markdown())
        for p in mg.write_margins(result, args.out, args.json if i == 0 else None):
            print(f"wrote {p}")
    return 0


_RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "table1": _table1,
    "comparison": _comparison,
    "counterexample": _counterexample,
    "affine": _affine,
    "margins": _margins,
}


def _run(args: argparse.Namespace) -> int:
    if args.json is not None:
        args.json = Path(args.json)
    args.out = Path(args.out)
    return _RUNNERS[args.name](args)


def register(sub: Any) -> None:
    """Add `caligo experiment NAME`."""
    p = sub.add_parser("experiment", help="reproduce a seed experiment (" + ", ".join(
        EXPERIMENTS) + ")")
    p.add_argument("name", choices=EXPERIMENTS)
    p.add_argument("--out", default="out", help="output directory (default ./out/)")
    p.add_argument("--json", default=None, help="also write the per-row results to this JSON")
    p.add_argument("--quick", action="store_true", help="small games / few points only")
    p.add_argument("--epsilon", type=float, default=0.25,
                   help="table1: blueprint floor epsilon (0 checks that equilibria survive)")
    p.add_argument("--rows", default=None,
                   help="table1/comparison: comma-separated Table 1 row keys (default all)")
    p.add_argument("--workers", type=int, default=1,
                   help="comparison: run the (game, variant) jobs in this many processes")
    p.set_defaults(func=_run)
