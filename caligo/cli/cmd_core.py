"""Sub-commands of the core: `caligo games stats|show` and `caligo solve`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

ALGOS = ("lp", "cfr", "cfr+", "dcfr", "pcfr+")


def _games_stats(args: argparse.Namespace) -> int:
    from caligo.core.table2 import format_table2, table2_rows

    print(format_table2(table2_rows()))
    return 0


def _games_show(args: argparse.Namespace) -> int:
    from caligo.core.games import load_game

    tree = load_game(args.game, max_nodes=args.max_nodes)
    lo, hi = tree.payoff_range()
    for key, value in tree.stats().items():
        print(f"{key:>16}: {value}")
    print(f"{'payoff range':>16}: [{lo:g}, {hi:g}]")
    return 0


def _solve(args: argparse.Namespace) -> int:
    from caligo.core.best_response import nash_conv, player_exploitability
    from caligo.core.games import load_game
    from caligo.core.lp import solve_lp

    start = time.perf_counter()
    tree = load_game(args.game, max_nodes=args.max_nodes)
    print(f"game {tree.name}: {tree.num_nodes} nodes, {tree.num_infosets} infosets "
          f"(built in {time.perf_counter() - start:.2f} s)")
    if args.algo == "lp":
        start = time.perf_counter()
        lp = solve_lp(tree)
        print(f"LP value for player 0: {lp.value:.12f} ({time.perf_counter() - start:.2f} s)")
        print(f"NashConv of the LP profile: {nash_conv(tree, lp.strategy):.3e}")
        return 0

    from caligo.core.cfr import Algorithm, CFRConfig, log_checkpoints, solve_cfr

    config = CFRConfig.preset(Algorithm(args.algo))
    points = log_checkpoints(args.iters) if args.plot or args.trace else (args.iters,)
    result = solve_cfr(tree, config, args.iters, record_at=points)
    value = solve_lp(tree).value
    avg = result.average
    print(f"{args.algo}: {result.iterations} iterations in {result.seconds:.2f} s "
          f"({result.iterations / max(result.seconds, 1e-9):.0f} it/s)")
    print(f"game value (LP) for player 0: {value:.9f}")
    print(f"NashConv of the average: {nash_conv(tree, avg):.6e}  "
          f"(OpenSpiel exploitability = NashConv/2 = {nash_conv(tree, avg) / 2:.6e})")
    print(f"exploitability of player 0's average (v* - u*(x)): "
          f"{player_exploitability(tree, avg, 0):.6e}")
    if args.trace:
        for p in result.trace:
            print(f"  t={p.iteration:>7}  exploitability={p.exploitability:.6e}")
    if args.plot:
        _plot(result.trace, args.plot, f"{args.algo} on {tree.name}")
        print(f"plot written to {args.plot}")
    return 0


def _plot(trace: Any, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p.iteration for p in trace]
    ys = [max(p.exploitability, 1e-16) for p in trace]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(xs, ys, marker=".")
    ax.set_xlabel("iterations")
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def register(sub: Any) -> None:
    """Add `games` and `solve`."""
    games = sub.add_parser("games", help="game statistics")
    gsub = games.add_subparsers(dest="games_command", required=True)
    stats = gsub.add_parser("stats", help="seed 000 Table 2 with the paper's numbers beside ours")
    stats.set_defaults(func=_games_stats)
    show = gsub.add_parser("show", help="sizes of one game")
    show.add_argument("game", help="OpenSpiel game string or built-in name")
    show.add_argument("--max-nodes", type=int, default=3_000_000)
    show.set_defaults(func=_games_show)

    solve = sub.add_parser("solve", help="solve a game and report value and exploitability")
    solve.add_argument("game", help="OpenSpiel game string or built-in name")
    solve.add_argument("--algo", choices=ALGOS, default="cfr+")
    solve.add_argument("--iters", type=int, default=1000)
    solve.add_argument("--plot", metavar="PNG", help="plot exploitability vs iterations (log-log)")
    solve.add_argument("--trace", action="store_true", help="print the exploitability trace")
    solve.add_argument("--max-nodes", type=int, default=3_000_000)
    solve.set_defaults(func=_solve)
