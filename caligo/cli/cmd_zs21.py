"""Sub-commands of the ZS21 agent (docs/zs21.md).

- `caligo zs21 exploitability GAME [--budget 20,100] [--full] [switches]`: the exact
  exploitability of ZS21 on a small game (both seats; Zhang & Sandholm 2021's per seat and NashConv
  / 2), one row per leaf-expansion budget; with `--full` the trunk is fully expanded, the first
  decision solves the game from its start, and nested 1-KLSS from the same LP blueprint is printed
  beside (`caligo.subgame.nested`, the same subgames the ZS21 tests compare against).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from caligo.cli._util import HelpFormatter, count_list, positive_count


def _budgets(text: str) -> list[int]:
    return count_list(text, "--budget", "expansion counts", 0)


def _exploitability(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from caligo.agents.zs21 import Penalty, StartMode, ZS21Budget, ZS21Config
    from caligo.agents.zs21.tree import FULL_TRUNK, nested_one_klss, zs21_exploitability
    from caligo.core.games import load_game
    from caligo.core.strategy import uniform_strategy
    from caligo.search.exploitability import (
        combine,
        exploitability_of,
        nested_klss_exploitability,
    )

    tree = load_game(args.game)
    print(f"{'budget':>9} {'nashconv/2':>11} {'seat0':>9} {'seat1':>9} {'seconds':>8}")

    def row(label: str, cfg: ZS21Config) -> None:
        t0 = time.perf_counter()
        e = zs21_exploitability(tree, cfg, args.seed)
        print(f"{label:>9} {e.nashconv_half:>11.6f} {e.seat0:>9.6f} {e.seat1:>9.6f} "
              f"{time.perf_counter() - t0:>8.1f}", flush=True)

    if args.full:
        row("full", replace(FULL_TRUNK, seed=args.seed))
        ref = exploitability_of(tree, combine(tree, nested_one_klss(tree, 0),
                                              nested_one_klss(tree, 1)))
        print(f"nested 1-KLSS (Reach, merging) from the LP blueprint: NashConv/2 "
              f"{ref.nashconv_half:.6f} (seat0 {ref.seat0:.6f}, seat1 {ref.seat1:.6f})")
    else:
        for b in _budgets(args.budget):
            row(str(b), ZS21Config(particles=args.particles, penalty=Penalty(args.penalty),
                                   penalty_m=args.penalty_m, seed=args.seed,
                                   start=StartMode(args.start),
                                   budget=ZS21Budget(seconds=None, expansions=b)))
    u = nested_klss_exploitability(tree)
    unif = exploitability_of(tree, uniform_strategy(tree))
    print(f"nested 1-KLSS from the uniform blueprint (Table 1's protocol): NashConv/2 "
          f"{u.nashconv_half:.6f} (seat0 {u.seat0:.6f}, seat1 {u.seat1:.6f}); uniform play "
          f"{unif.nashconv_half:.6f}")
    return 0


ZS21_EPILOG = """\
examples:
  caligo zs21 exploitability kuhn_poker         budgets of 20 and 100 leaf expansions
  caligo zs21 exploitability kuhn_poker --full  a full trunk, beside nested 1-KLSS
  caligo zs21 exploitability leduc_poker --budget 20 --particles 50 --penalty off"""


def register(sub: Any) -> None:
    """Add `caligo zs21 exploitability`."""
    p = sub.add_parser("zs21", help="the ZS21 agent (Zhang & Sandholm 2021, appendix D) on "
                       "small games",
                       epilog=ZS21_EPILOG, formatter_class=HelpFormatter)
    ss = p.add_subparsers(dest="zs21_command", required=True)
    e = ss.add_parser("exploitability", help="exact exploitability of ZS21 on a small game",
                      epilog=ZS21_EPILOG, formatter_class=HelpFormatter)
    e.add_argument("game", help="a game string (OpenSpiel or built-in)")
    e.add_argument("--budget", default="20,100",
                   help="comma-separated leaf expansions per decision (default 20,100)")
    e.add_argument("--full", action="store_true",
                   help="fully expanded trunk from the game's start; compare nested 1-KLSS")
    e.add_argument("--particles", type=positive_count, default=200,
                   help="L (default 200; at least 1)")
    e.add_argument("--penalty", default="text", choices=["text", "algorithm", "off"])
    e.add_argument("--penalty-m", dest="penalty_m", type=float, default=1e7,
                   help="M (default 1e7)")
    e.add_argument("--start", default="root_only", choices=["root_only", "solve_from_start"])
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=_exploitability)
