"""Sub-commands of the core: `caligo games list|stats|show` and `caligo solve`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from caligo.cli._util import (
    Bars,
    HelpFormatter,
    nonnegative_count,
    notice,
    output_file,
    plot_file,
    positive_count,
    print_json,
    say,
)

ALGOS = ("lp", "cfr", "cfr+", "dcfr", "pcfr+")
DEFAULT_MAX_NODES = 3_000_000  # caligo.core.tree.DEFAULT_MAX_NODES, without importing numpy

# the names of the three quantities, as in docs/api.md (usability #7)
NASHCONV = "NashConv"
OS_EXPL = "OpenSpiel exploitability (NashConv/2)"
P0_EXPL = "player-0 exploitability (v* - u*(x))"

GAME_HELP = ("a game string: a built-in (see `caligo games list`) or any two-player zero-sum "
             "OpenSpiel game with information-state strings, e.g. leduc_poker or "
             "'liars_dice(dice_sides=5)'")


def _load(spec: str, max_nodes: int, bars: Bars) -> Any:
    """Load a game with a progress bar over the nodes built (shown for big trees)."""
    from caligo.core.games import load_game

    start = time.perf_counter()
    update = bars(None, f"building {spec}", unit="node")
    tree = load_game(spec, max_nodes=max_nodes, progress=update)
    bars.close()
    return tree, time.perf_counter() - start


def _games_list(args: argparse.Namespace) -> int:
    import pyspiel

    from caligo.core.games import BUILTINS
    from caligo.core.table2 import PAPER_TABLE2

    kinds = (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)
    openspiel = sorted(
        t.short_name for t in pyspiel.registered_games()
        if t.min_num_players <= 2 <= t.max_num_players and t.utility in kinds
        and t.provides_information_state_string and t.short_name not in BUILTINS)
    builtins = {name: (f.__doc__ or "").strip().splitlines()[0] for name, f in BUILTINS.items()}
    tables = [(p.label, p.spec) for p in PAPER_TABLE2]
    if args.json:
        print_json({"builtin": builtins, "paper_games": dict(tables), "openspiel": openspiel})
        return 0
    print("Built-in games:")
    for name, doc in builtins.items():
        print(f"  {name:<20} {doc}")
    print("\nThe games of Zhang & Sandholm 2021, Tables 1 and 2:")
    for label, spec in tables:
        print(f"  {spec:<58} {label}")
    print("\nOpenSpiel games of the right kind (two players, zero-sum, information-state "
          "strings;\nthe whole tree is built, so only small instances fit in --max-nodes):")
    width = max(len(n) for n in openspiel) + 2
    per_line = max(1, 96 // width)
    for i in range(0, len(openspiel), per_line):
        print("  " + "".join(n.ljust(width) for n in openspiel[i : i + per_line]).rstrip())
    return 0


def _games_stats(args: argparse.Namespace) -> int:
    from caligo.core.table2 import format_table2, table2_rows

    with notice("building the seven games and their knowledge sets ..."):
        rows = table2_rows()
    plotted = _plot_table2(rows, args.plot) if args.plot is not None else None
    if args.json:
        print_json([{"game": r.label, "spec": r.spec, "nodes": r.nodes, "infosets": r.infosets,
                     "diameter": r.diameter, "avg_k": list(r.avg), "paper": {
                         "nodes": r.paper.nodes, "infosets": r.paper.infosets,
                         "diameter": r.paper.diameter, "avg_k": list(r.paper.avg)}}
                    for r in rows])
        return 0
    print(format_table2(rows, markdown=args.markdown))
    if plotted is not None:
        print(f"plot: {plotted}")
    return 0


def _plot_table2(rows: Any, path: Path) -> Path:
    """Average |I^k| against k per game (log y): ours as lines, the paper's cells as rings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = ["1", "2", "3", "4", "inf"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, r in enumerate(rows):
        color = f"C{i}"
        ax.plot(ks[: len(r.avg_full)], r.avg_full, marker=".", color=color,
                label=f"{r.label} (diameter {r.diameter})")
        paper = [(k, v) for k, v in zip(ks, r.paper.avg, strict=False) if v is not None]
        if paper:
            ax.scatter([k for k, _ in paper], [v for _, v in paper], s=80, facecolors="none",
                       edgecolors=color)
    ax.set_yscale("log")
    ax.set_xlabel("k (order of the knowledge set)")
    ax.set_ylabel("average |I^k| over decision nodes")
    ax.set_title("Knowledge-set growth; rings: Zhang & Sandholm 2021, Table 2")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _games_show(args: argparse.Namespace) -> int:
    with Bars() as bars:
        tree, seconds = _load(args.game, args.max_nodes, bars)
    lo, hi = tree.payoff_range()
    stats = tree.stats()
    if args.json:
        print_json({"game": tree.name, **stats, "payoff_range": [lo, hi],
                    "build_seconds": seconds})
        return 0
    for key, value in stats.items():
        print(f"{key:>16}: {value}")
    print(f"{'payoff range':>16}: [{lo:g}, {hi:g}]")
    return 0


def _warm_up(config: Any) -> None:
    """Compile (or load from numba's cache) the CFR and best-response kernels on Kuhn poker, so
    the first-run compile is announced rather than mistaken for a slow solve."""
    from caligo.core.best_response import nash_conv
    from caligo.core.cfr import CFRSolver
    from caligo.core.games import load_game

    with notice("compiling the solver kernels (first run only; cached afterwards) ..."):
        kuhn = load_game("kuhn_poker")
        solver = CFRSolver(kuhn, config)
        solver.iterate(1)
        nash_conv(kuhn, solver.average_strategy())


def _solve(args: argparse.Namespace) -> int:
    if args.algo == "lp" and (args.plot or args.trace or args.load):
        flag = "--plot" if args.plot else "--trace" if args.trace else "--load"
        raise ValueError(f"{flag} needs an iterative algorithm (cfr, cfr+, dcfr, pcfr+), not lp")
    tree, built, saved = _solve_input(args)
    out: dict[str, Any] = {"game": tree.name, "nodes": tree.num_nodes,
                           "infosets": tree.num_infosets, "algorithm": args.algo}
    if not args.json:
        print(f"game {tree.name}: {tree.num_nodes} nodes, {tree.num_infosets} infosets "
              f"(built in {built:.2f} s)")
    strategy, value, result = _solve_run(args, tree, saved, out)
    interrupted = result is not None and result.interrupted
    _solve_report(args, tree, strategy, value, result, out)
    if args.json:
        print_json(out)
    if interrupted:
        say(f"interrupted after {out['iterations']} iterations")
        return 130
    return 0


def _solve_input(args: argparse.Namespace) -> tuple[Any, float, Any]:
    """The tree to solve, the seconds it took to build, and the saved strategy (`--load`)."""
    with Bars() as bars:
        if args.load is not None:
            from caligo.core.strategy_file import load_strategy

            saved = load_strategy(args.load)
            if args.game is not None:
                from caligo.core.games import game_definition

                # the game's own name, as the tree has it (random_game orders its parameters)
                if game_definition(args.game).name != saved.tree.name:
                    raise ValueError(f"{str(args.load)!r} holds a strategy for "
                                     f"{saved.tree.name!r}, not {args.game!r}")
            return saved.tree, 0.0, saved
        if args.game is None:
            raise ValueError("name a GAME, or --load a saved strategy")
        tree, built = _load(args.game, args.max_nodes, bars)
        return tree, built, None


def _solve_run(args: argparse.Namespace, tree: Any, saved: Any,
               out: dict[str, Any]) -> tuple[Any, float | None, Any]:
    """Solve (or evaluate the saved strategy): the strategy, the game value (None when not
    computed) and the iterative solver's result (None for the LP or an evaluation)."""
    if args.algo == "lp":
        from caligo.core.lp import solve_lp

        start = time.perf_counter()
        with notice(f"solving both players' sequence-form LPs for {tree.name} ..."):
            lp = solve_lp(tree)
        out.update(seconds=time.perf_counter() - start, iterations=0)
        if not args.json:
            print(f"lp: both players' equilibrium strategies in {out['seconds']:.2f} s")
        return lp.strategy, lp.value, None
    from caligo.core.lp import game_value

    if saved is not None and args.iters == 0:
        out.update(iterations=0, seconds=0.0, evaluated=str(args.load))
        if not args.json:
            print(f"evaluating the strategy saved in {args.load} ({dict(saved.meta)})")
        value = None
        if not args.no_value:
            with notice(f"solving the LP for the game value of {tree.name} ..."):
                value = game_value(tree)
        return saved.strategy, value, None
    from caligo.core.cfr import Algorithm, CFRConfig, log_checkpoints, solve_cfr

    config = CFRConfig.preset(Algorithm(args.algo))
    _warm_up(config)
    points = log_checkpoints(args.iters) if args.plot or args.trace else ()
    initial = saved.strategy if saved is not None else None
    with Bars() as bars:
        result = solve_cfr(tree, config, args.iters, record_at=points, initial=initial,
                           progress=bars(args.iters, args.algo), interruptible=True)
    rate = result.iterations / max(result.seconds, 1e-9)
    out.update(iterations=result.iterations, seconds=result.seconds,
               trace=[{"iteration": p.iteration, "openspiel_exploitability": p.value}
                      for p in result.trace])
    if not args.json:
        stop = " (interrupted)" if result.interrupted else ""
        start_from = f" from {args.load}" if saved is not None else ""
        print(f"{args.algo}{start_from}: {result.iterations} iterations in "
              f"{result.seconds:.2f} s ({rate:.0f} it/s){stop}")
    value = None
    if not args.no_value and not result.interrupted:
        with notice(f"solving the LP for the game value of {tree.name} (skip it with "
                    "--no-value) ..."):
            value = game_value(tree)
    return result.average, value, result


def _solve_report(args: argparse.Namespace, tree: Any, strategy: Any, value: float | None,
                  result: Any, out: dict[str, Any]) -> None:
    """NashConv and exploitabilities of `strategy` into `out` and on the terminal; the plot
    and the saved strategy when asked for."""
    from caligo.core.best_response import nash_conv, player_exploitability

    interrupted = result is not None and result.interrupted
    nc = nash_conv(tree, strategy)
    out.update(interrupted=interrupted, value=value, nash_conv=nc,
               openspiel_exploitability=nc / 2,
               player0_exploitability=None if value is None else player_exploitability(
                   tree, strategy, 0))
    which = ("the LP profile" if args.algo == "lp" else "the saved strategy"
             if "evaluated" in out else "the average strategy")
    if not args.json:
        if value is not None:
            print(f"game value for player 0 (LP): {value:.9f}")
        print(f"{NASHCONV} of {which}: {nc:.6e}")
        print(f"{OS_EXPL}: {nc / 2:.6e}")
        if out["player0_exploitability"] is not None:
            print(f"{P0_EXPL}: {out['player0_exploitability']:.6e}")
        elif interrupted:
            print(f"{P0_EXPL}: not computed (interrupted; it needs the LP)")
        if args.trace and args.algo != "lp" and result is not None:
            print(f"  {'iteration':>10}  {OS_EXPL}")
            for p in result.trace:
                print(f"  {p.iteration:>10}  {p.value:.6e}")
    if args.plot and result is not None and result.trace:
        path = _plot(result.trace, args.plot, f"{args.algo} on {tree.name}")
        out["plot"] = str(path)
        if not args.json:
            print(f"plot written to {path}")
    if args.save is not None:
        from caligo.core.strategy_file import save_strategy

        path = save_strategy(args.save, tree, strategy, {
            "algorithm": args.algo, "iterations": out.get("iterations", 0),
            "interrupted": interrupted})
        out["saved"] = str(path)
        if not args.json:
            print(f"strategy written to {path}")


def _plot(trace: Any, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p.iteration for p in trace]
    ys = [max(p.value, 1e-16) for p in trace]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(xs, ys, marker=".")
    ax.set_xlabel("iterations")
    ax.set_ylabel(OS_EXPL)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


SOLVE_EPILOG = """\
what it prints (docs/api.md names the three quantities):
  NashConv                              max_x u(x, y) - min_y u(x, y), both players' gains
  OpenSpiel exploitability              NashConv / 2, what pyspiel.exploitability reports
  player-0 exploitability (v* - u*(x))  player 0's loss against a best response (the papers')

examples:
  caligo solve leduc_poker --algo cfr+ --iters 1e4 --plot out/leduc.png --save leduc.npz
  caligo solve --load leduc.npz --iters 0          evaluate a saved strategy
  caligo solve --load leduc.npz --iters 1e4        continue CFR+ from it (its first iterate)
  caligo solve 'liars_dice(dice_sides=5)' --algo cfr --iters 100 --no-value --json

Ctrl-C prints the result reached so far (exit status 130)."""


GAMES_EPILOG = """\
examples:
  caligo games list                             the games Caligo can load
  caligo games stats --plot out/table2.png      Zhang & Sandholm 2021, Table 2
  caligo games show 'liars_dice(dice_sides=5)'  one game's sizes"""

GAMES_LIST_EPILOG = """\
examples:
  caligo games list
  caligo games list --json"""

GAMES_STATS_EPILOG = """\
examples:
  caligo games stats                            the paper's numbers beside ours
  caligo games stats --markdown --plot out/ik.png"""

GAMES_SHOW_EPILOG = """\
examples:
  caligo games show leduc_poker
  caligo games show 'matching_pennies_n(n=100)' --json
  caligo games show 'goofspiel(num_cards=4,imp_info=True,points_order=random)'"""


def register(sub: Any) -> None:
    """Add `games` and `solve`."""
    games = sub.add_parser("games", help="list games, show a game's size, Table 2",
                           description="List games, show one game's size, or print Zhang & "
                           "Sandholm 2021's Table 2.", epilog=GAMES_EPILOG,
                           formatter_class=HelpFormatter)
    gsub = games.add_subparsers(dest="games_command", required=True, metavar="SUBCOMMAND")
    lst = gsub.add_parser("list", help="the games Caligo can load",
                          description="Built-in games, the papers' games and the OpenSpiel "
                          "games of the right kind.", epilog=GAMES_LIST_EPILOG,
                          formatter_class=HelpFormatter)
    lst.add_argument("--json", action="store_true", help="print JSON instead of text")
    lst.set_defaults(func=_games_list)
    stats = gsub.add_parser(
        "stats", help="Table 2 of Zhang & Sandholm 2021, the paper's numbers beside ours",
        description="Nodes, infosets, knowledge-graph diameter and average |I^k| of the seven "
        "games of Zhang & Sandholm 2021, Table 2 (about 3 s).", epilog=GAMES_STATS_EPILOG,
        formatter_class=HelpFormatter)
    fmt = stats.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table")
    fmt.add_argument("--json", action="store_true", help="print JSON")
    stats.add_argument("--plot", type=plot_file, metavar="PNG",
                       help="also draw average |I^k| against k per game (log y)")
    stats.set_defaults(func=_games_stats)
    show = gsub.add_parser("show", help="sizes of one game", description="Build a game's "
                           "tree and print its sizes.", epilog=GAMES_SHOW_EPILOG,
                           formatter_class=HelpFormatter)
    show.add_argument("game", metavar="GAME", help=GAME_HELP)
    show.add_argument("--max-nodes", type=positive_count, default=DEFAULT_MAX_NODES,
                      help="refuse games with more nodes")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_games_show)

    solve = sub.add_parser(
        "solve", help="solve a game and report its value, NashConv and exploitability",
        description="Solve a game by LP (exact) or by a CFR-family algorithm, and report the "
        "game value, NashConv, OpenSpiel's exploitability and player 0's exploitability.",
        epilog=SOLVE_EPILOG, formatter_class=HelpFormatter)
    solve.add_argument("game", metavar="GAME", nargs="?",
                       help=GAME_HELP + "; optional with --load")
    solve.add_argument("--algo", choices=ALGOS, default="cfr+",
                       help="lp: sequence-form LP (HiGHS); cfr, cfr+, dcfr, pcfr+: the CFR family")
    solve.add_argument("--iters", type=nonnegative_count, default=1000,
                       help="CFR iterations (1e6 and 1_000_000 are accepted)")
    solve.add_argument("--plot", metavar="FILE", type=plot_file,
                       help="plot OpenSpiel exploitability against iterations (.png/.pdf/.svg)")
    solve.add_argument("--trace", action="store_true",
                       help="print OpenSpiel exploitability at log-spaced iterations")
    solve.add_argument("--no-value", action="store_true",
                       help="skip the LP for the game value and player 0's exploitability")
    solve.add_argument("--save", metavar="FILE", type=output_file,
                       help="save the average strategy (LP: the equilibrium) as .npz")
    solve.add_argument("--load", metavar="FILE", type=Path,
                       help="start from a strategy saved with --save (its first iterate)")
    solve.add_argument("--json", action="store_true",
                       help="print the results as JSON on stdout (notices stay on stderr)")
    solve.add_argument("--max-nodes", type=positive_count, default=DEFAULT_MAX_NODES,
                       help="refuse games with more nodes")
    solve.set_defaults(func=_solve)
