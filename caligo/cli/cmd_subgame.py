"""Sub-commands of the subgame area: `caligo experiment table1|comparison|counterexample|affine|
margins|decided_loss`, each with its own options.

Each experiment prints its Markdown table and writes CSV/JSON/Markdown (and PNG plots where it
has them) into `--out` (default ./out/). Progress bars (tqdm) live here, never in the library.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caligo.cli._util import (
    Bars,
    HelpFormatter,
    count_list,
    json_file,
    nonnegative_count,
    output_dir,
    positive_count,
    probability,
)

EXPERIMENTS = ("table1", "comparison", "counterexample", "affine", "margins", "decided_loss")
TIE_BREAKS = ("simplex", "ipm", "random")

ROW_KEYS = ("dark_hex, goofspiel_random, goofspiel_increasing, kuhn, kuhn_bet, leduc, "
            "leduc_fold, leduc_bet, liars_dice, matching_pennies")


def _tie_break(name: str) -> Any:
    from caligo.core.lp import TieBreak

    return TieBreak(name)


def _rows(text: str | None) -> tuple[str, ...] | None:
    """Comma-separated Table 1 row keys, each checked before any work."""
    if text is None:
        return None
    from caligo.experiments.table1 import row_by_key

    keys = tuple(k.strip() for k in text.split(","))
    if not any(keys):
        raise ValueError(f"--rows {text!r} names no row; rows: {ROW_KEYS}")
    for k in keys:
        row_by_key(k)
    return keys


def _wrote(paths: list[Path]) -> None:
    for p in paths:
        print(f"wrote {p}")


def _table1(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import table1 as t1

    config = t1.Table1Config(epsilon=args.epsilon, tie_break=_tie_break(args.tie_break),
                             seed=args.seed, spread=args.spread)
    rows = _rows(args.rows)
    if rows is not None:
        config = t1.Table1Config(rows=rows, epsilon=args.epsilon, tie_break=config.tie_break,
                                 seed=args.seed, spread=args.spread)
    elif args.quick:
        config = t1.quick_config(config)
    result = t1.run_table1(config, lambda row, total: bars(total, row.key, unit="solve"))
    bars.close()
    print(result.table().markdown())
    _wrote(t1.write_table1(result, args.out, args.json))
    bad = [r.key for r in result.rows if not r.blueprint_ok]
    if bad:
        print(f"blueprint column off the paper's by more than one unit: {', '.join(bad)}")
        return 1
    return 0


def _comparison(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import comparison as cmp

    result = cmp.run_comparison(
        quick=args.quick, rows=_rows(args.rows), workers=args.workers,
        tie_break=_tie_break(args.tie_break),
        progress_factory=lambda label, total: bars(total, label,
                                                   unit="job" if label == "jobs" else "solve"))
    bars.close()
    print(cmp.comparison_table(result).markdown())
    _wrote(cmp.write_comparison(result, args.out, args.json))
    return 0


def _counterexample(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import counterexample as ce

    ns = (4, 8, 16, 32) if args.quick else (4, 8, 16, 32, 64, 128, 256)
    rows = ce.run_counterexample(ns, bars(len(ns), "N", unit="game"))
    bars.close()
    print(ce.counterexample_table(rows).markdown())
    _wrote(ce.write_counterexample(rows, args.out))
    return 0


def _affine(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import affine as af

    games = af.AFFINE_GAMES[:2] if args.quick else (*af.AFFINE_GAMES, "leduc_poker")
    rows = af.run_affine(games, progress=bars(len(games), "games", unit="game"))
    bars.close()
    print(af.affine_table(rows).markdown())
    _wrote(af.write_affine(rows, args.out))
    return 0


def _margins(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import margins as mg

    configs = [mg.quick_config() if args.quick else mg.MarginsConfig()]
    if not args.quick:  # the exact (LP) gadget solutions beside the CFR+ protocol
        configs.append(mg.MarginsConfig(solver=mg.GadgetSolver.LP))
    for i, config in enumerate(configs):
        result = mg.run_margins(config, progress_factory=lambda label, total: bars(
            total, label, unit="subgame"))
        bars.close()
        print(result.table().markdown())
        _wrote(mg.write_margins(result, args.out, args.json if i == 0 else None))
    return 0


def _decided_loss(args: argparse.Namespace, bars: Bars) -> int:
    from caligo.experiments import decided_loss as dl

    moves = tuple(count_list(args.moves, "--moves", "move numbers", 1))
    config = dl.ReplayConfig(match_seed=args.match_seed, pair=args.pair, game=args.game,
                             moves=moves, time_control=args.tc)
    rows, roots, line = dl.run_replay(config)
    for table in dl.replay_tables(rows, roots, line):
        print(table.markdown())
    _wrote(dl.write_replay(rows, roots, line, args.out))
    return 0


_RUNNERS: dict[str, Callable[[argparse.Namespace, Bars], int]] = {
    "table1": _table1,
    "comparison": _comparison,
    "counterexample": _counterexample,
    "affine": _affine,
    "margins": _margins,
    "decided_loss": _decided_loss,
}


def _run(args: argparse.Namespace) -> int:
    with Bars() as bars:
        return _RUNNERS[args.name](args, bars)


DESCRIPTIONS = {
    "table1": ("Zhang & Sandholm 2021, Table 1: the exploitability of epsilon-floored "
               "blueprints before and after nested 1-KLSS at every player-0 infoset, the "
               "paper's numbers beside ours (about 30 s; --quick: small games, 2 s)."),
    "comparison": ("Table 1's blueprints and protocol with seven gadgets: unsafe, Resolve, "
                   "Maxmargin, Reach-Maxmargin (k = inf), 1-KLSS, 2-KLUSS, Safe-1-KLSS "
                   "(about 6 min on two workers; --quick: small games)."),
    "counterexample": ("Zhang & Sandholm 2021, Proposition 3: nested 1-KLSS turns a "
                       "4/N-exploitable blueprint into an exploitability of 1."),
    "affine": ("Zhang & Sandholm 2021, Theorem 9: nested 1-KLSS from an exact equilibrium "
               "earns exactly the game value against every equilibrium of the opponent."),
    "margins": ("Ha 2016 (Moravcik et al. 2016), section I.6: subgame margins of endgame "
                "solving, Resolve and Maxmargin on Leduc's second-round subgames (about 40 s)."),
    "decided_loss": ("Obscuro's one loss to a random mover (round 2.1 of "
                     "docs/strength/random_iters100.pgn): replay the match game and re-run the "
                     "chosen decisions with and without the decided-loss fix "
                     "(Stockfish as in the match when installed; about 1 min)."),
}

EPILOGS = {
    "table1": f"""\
row keys for --rows: {ROW_KEYS}

tie-breaks (which optimal vertex every gadget LP returns; docs/experiments.md):
  simplex  HiGHS dual simplex (the default)
  ipm      interior point + crossover: reproduces the paper's after column
  random   a random vertex of the optimal face (from --seed)

examples:
  caligo experiment table1 --tie-break ipm
  caligo experiment table1 --rows kuhn,leduc --spread 8      min/max over tie-breaks
  caligo experiment table1 --epsilon 0 --quick               equilibria stay equilibria""",
    "comparison": f"""\
row keys for --rows: {ROW_KEYS}

examples:
  caligo experiment comparison --quick
  caligo experiment comparison --workers 2 --json out/comparison_rows.json""",
    "counterexample": """\
examples:
  caligo experiment counterexample
  caligo experiment counterexample --quick --out out/counterexample""",
    "affine": """\
examples:
  caligo experiment affine --quick
  caligo experiment affine --out out/affine""",
    "margins": """\
examples:
  caligo experiment margins --quick
  caligo experiment margins --json out/margins.json     CFR+ protocol, then the exact LPs""",
    "decided_loss": """\
examples:
  caligo experiment decided_loss                        round 2.1, moves 10 and 11
  caligo experiment decided_loss --moves 9,10,11 --out out/decided_loss""",
}

EXPERIMENT_EPILOG = """\
examples:
  caligo experiment table1 --quick              small games, about 2 s
  caligo experiment counterexample --out out/   Proposition 3, tables written into out/
  caligo experiment margins --help"""


def register(sub: Any) -> None:
    """Add `caligo experiment NAME`, one sub-parser per experiment."""
    p = sub.add_parser("experiment", help="reproduce the papers' tables and figures (" +
                       ", ".join(EXPERIMENTS) + ")",
                       description="Reproduce the papers' experiments; each prints a table "
                       "and writes .md/.csv/.json (and .png) files into --out.",
                       epilog=EXPERIMENT_EPILOG, formatter_class=HelpFormatter)
    esub = p.add_subparsers(dest="name", required=True, metavar="EXPERIMENT")
    for name in EXPERIMENTS:
        e = esub.add_parser(name, help=DESCRIPTIONS[name].split(":")[0],
                            description=DESCRIPTIONS[name], epilog=EPILOGS.get(name),
                            formatter_class=HelpFormatter)
        e.add_argument("--out", type=output_dir, default=Path("out"),
                       help="output directory (checked before the run)")
        e.add_argument("--quick", action="store_true", help="small games / few points only")
        if name in ("table1", "comparison", "margins"):
            e.add_argument("--json", type=json_file, default=None,
                           help="also write the per-row results to this JSON file")
        if name in ("table1", "comparison"):
            e.add_argument("--rows", default=None, metavar="KEY,...",
                           help="comma-separated Table 1 row keys (default: all)")
            e.add_argument("--tie-break", choices=TIE_BREAKS, default="simplex",
                           help="which optimal vertex each gadget LP returns")
        if name == "table1":
            e.add_argument("--epsilon", type=probability, default=0.25,
                           help="blueprint floor epsilon (0: equilibria must stay equilibria)")
            e.add_argument("--seed", type=int, default=0,
                           help="seed of --tie-break random")
            e.add_argument("--spread", type=nonnegative_count, default=0, metavar="N",
                           help="also report min/max of 'after' over simplex, ipm and N "
                           "random optimal vertices (N + 2 more nested runs per row)")
        if name == "decided_loss":
            e.add_argument("--match-seed", dest="match_seed", type=int, default=7,
                           help="the match's --seed (default 7)")
            e.add_argument("--pair", type=positive_count, default=2,
                           help="the pair, 1-based (default 2: round 2.x)")
            e.add_argument("--game", type=int, choices=(1, 2), default=1,
                           help="game of the pair (1: obscuro has White; default 1)")
            e.add_argument("--moves", default="10,11", help="obscuro's moves to re-run")
            e.add_argument("--tc", default="iters=100", help="the match's --tc")
        if name == "comparison":
            e.add_argument("--workers", type=positive_count, default=1,
                           help="run the (game, variant) jobs in this many processes")
        e.set_defaults(func=_run)
