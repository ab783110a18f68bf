"""Sub-commands of the search area.

- `caligo search exploitability GAME [--budget 10,100,1000] [--seeds R] [switches]`: the exact
  exploitability of the search agent (both seats, seed 000's definition per seat and NashConv /
  2), one row per budget; `--json` / `--csv` write the rows.
- `caligo search study [--out DIR] [--games ...] [--short]`: the full grid of docs/search.md,
  resumable (rows are appended to DIR/study.jsonl as they finish), then CSV, JSON and the PNG.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import enum
import json
from pathlib import Path
from typing import Any

from caligo.search.config import (
    AlternateValues,
    CarryOver,
    EvaluatorKind,
    Expansion,
    FirstDecision,
    GadgetMode,
    InitialStrategy,
    Iterate,
    Iterations,
    Purification,
    ResolvePrior,
    RootInfosets,
    SearchConfig,
    SubgameKind,
)

_SWITCHES: tuple[tuple[str, type[enum.Enum], str], ...] = (
    ("expansion", Expansion, "full"),
    ("subgame", SubgameKind, "kluss"),
    ("gadget", GadgetMode, "blend"),
    ("resolve_prior", ResolvePrior, "blueprint_mix"),
    ("alternate_values", AlternateValues, "blueprint"),
    ("purification", Purification, "none"),
    ("iterate", Iterate, "last"),
    ("carry_over", CarryOver, "profile_only"),
    ("first_decision", FirstDecision, "true_start"),
    ("root_infosets", RootInfosets, "singleton"),
    ("initial_strategy", InitialStrategy, "best_child"),
)


def _budgets(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise ValueError(f"--budget takes comma-separated iteration counts, got {text!r}") from exc
    if not out or min(out) < 1:
        raise ValueError(f"--budget needs positive iteration counts, got {text!r}")
    return out


def _config(args: argparse.Namespace, budget: int) -> SearchConfig:
    kw: dict[str, Any] = {"budget": Iterations(budget), "expansions": args.expansions,
                          "gifts": not args.no_gifts, "min_roots": args.min_roots}
    for name, kind, _ in _SWITCHES:
        kw[name] = kind(getattr(args, name))
    return SearchConfig(**kw)


def _exploitability(args: argparse.Namespace) -> int:
    from caligo.core.games import load_game
    from caligo.search.exploitability import EvaluatorKind, make_evaluator, search_exploitability

    tree = load_game(args.game)
    ev = make_evaluator(tree, EvaluatorKind(args.evaluator))
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    rows = []
    print(f"{'budget':>7} {'nashconv/2':>11} {'±ci95':>9} {'seat0':>9} {'seat1':>9} "
          f"{'mixture':>9} {'searches':>8} {'seconds':>8}")
    for b in _budgets(args.budget):
        rep = search_exploitability(tree, _config(args, b), ev, list(range(args.seeds)))
        secs = sum(r.seconds for r in rep.runs)
        row = {"game": args.game, "budget": b, "nashconv_half": rep.mean.nashconv_half,
               "ci95": rep.ci95, "seat0": rep.mean.seat0, "seat1": rep.mean.seat1,
               "mixture": rep.mixture.nashconv_half,
               "searches": sum(r.searches for r in rep.runs), "seconds": secs}
        rows.append(row)
        print(f"{b:>7} {row['nashconv_half']:>11.6f} {row['ci95']:>9.2g} {row['seat0']:>9.5f} "
              f"{row['seat1']:>9.5f} {row['mixture']:>9.5f} {row['searches']:>8} "
              f"{secs:>8.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"config": {k: (v.value if isinstance(v, enum.Enum) else repr(v)) for k, v in
                        dataclasses.asdict(_config(args, 1)).items() if k != "budget"},
             "evaluator": args.evaluator, "rows": rows}, indent=1))
        print(f"wrote {args.json}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


def _study(args: argparse.Namespace) -> int:
    from caligo.search import study

    out = Path(args.out)
    games = tuple(args.games.split(";")) if args.games else study.GAMES
    variants = study.VARIANTS
    if args.variants:
        want = set(args.variants.split(","))
        unknown = want - {v.label for v in variants}
        if unknown:
            raise ValueError(f"unknown variants {sorted(unknown)}; known: "
                             f"{', '.join(v.label for v in variants)}")
        variants = tuple(v for v in variants if v.label in want)
    if not args.plot_only:
        study.run_study(out, games, variants, short=args.short,
                        progress=lambda msg: print(msg, flush=True))
    rows = study.load_rows(out / "study.jsonl")
    for p in [*study.write_tables(rows, out), study.plot(rows, out / "study.png")]:
        print(f"wrote {p}")
    return 0


def register(sub: Any) -> None:
    """Add `caligo search exploitability|study`."""
    p = sub.add_parser("search", help="growing-tree search: exact exploitability of the agent")
    ss = p.add_subparsers(dest="search_command", required=True)
    e = ss.add_parser("exploitability", help="exact exploitability of the search agent")
    e.add_argument("game", help="a game string (OpenSpiel or built-in)")
    e.add_argument("--budget", default="10,100,1000",
                   help="comma-separated iteration budgets per search (default 10,100,1000)")
    e.add_argument("--seeds", type=int, default=1, help="number of seeds (default 1)")
    e.add_argument("--expansions", type=int, default=128,
                   help="leaf expansions per search when not --expansion full (default 128)")
    e.add_argument("--evaluator", default="perfect_info",
                   choices=[k.value for k in EvaluatorKind],
                   help="leaf evaluator (default perfect_info, the Stockfish analogue)")
    e.add_argument("--min-roots", dest="min_roots", type=int, default=256)
    e.add_argument("--no-gifts", dest="no_gifts", action="store_true",
                   help="no gift estimates in the alternate values")
    for name, kind, default in _SWITCHES:
        e.add_argument("--" + name.replace("_", "-"), dest=name, default=default,
                       choices=[k.value for k in kind])
    e.add_argument("--json", default=None, help="write the rows and the config as JSON")
    e.add_argument("--csv", default=None, help="write the rows as CSV")
    e.set_defaults(func=_exploitability)
    s = ss.add_parser("study", help="the exploitability grid of docs/search.md (resumable)")
    s.add_argument("--out", default="docs/search", help="output directory (default docs/search)")
    s.add_argument("--games", default=None, help="';'-separated game strings (default: all)")
    s.add_argument("--variants", default=None, help="comma-separated variant labels")
    s.add_argument("--short", action="store_true", help="budgets 10, 100, 1000 only")
    s.add_argument("--plot-only", dest="plot_only", action="store_true",
                   help="rebuild the tables and figure from the results file")
    s.set_defaults(func=_study)
