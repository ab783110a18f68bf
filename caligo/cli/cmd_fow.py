"""Sub-commands of the fow area: `caligo fow belief`, `perft`, `view`, `last-seen` and
`plausible`.

- `belief PGN --as white|black|both`: the size of a player's set P of possible positions after
  every ply (a table, `--json`, `--plot` with a log y axis); PGN `-` reads standard input.
- `perft FEN DEPTH [--divide] [--chess]`: FoW perft (or standard chess with `--chess`).
- `view PGN --ply N --as white|black [-o board.svg]`: a player's view after ply N, as SVG or JSON.
- `last-seen PGN... [--every N]`: how often an unseen piece still stands where it was last seen
  (the prior of a redrawn P, `caligo.fow.last_seen`), and what a redraw gets right with it.
- `plausible PGN... [--stride S] [--holdout K]`: fit which positions of P are likely the truth
  (`caligo.fow.plausible`) on some games and score it on the others.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from caligo.cli._util import HelpFormatter, read_text

_SIDES = ("white", "black")


@contextmanager
def _quiet_broken_pipe() -> Iterator[None]:
    """Stop quietly when the reader of stdout goes away (`caligo fow belief x.pgn | head`)."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        # the interpreter flushes stdout again at exit: point it at /dev/null first
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141) from None  # 128 + SIGPIPE, what a killed writer reports


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "")) if text.isascii() else -1
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text) if text.isascii() and text.isdigit() else -1
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _read_game(source: str, number: int | None) -> Any:
    """Read game `number` (1-based) of the PGN file `source` ('-' = stdin)."""
    from caligo.fow.notation import read_pgn

    text = sys.stdin.read() if source == "-" else read_text(source)
    return read_pgn(text, number)


def _plot_path(path: str | None) -> Path | None:
    """Check a plot path before the work starts (matplotlib picks the format by suffix)."""
    if path is None:
        return None
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"plot file must end in .png, .svg or .pdf: {path!r}")
    if out.is_dir() or not out.parent.is_dir():
        raise ValueError(f"cannot write the plot to {path!r} (no such directory, or a directory)")
    return out


def _ending(game: Any, final: Any) -> str:
    """The closing line: result and how the game ended."""
    outcome = final.outcome
    if outcome is not None:
        return f"result {outcome.result} ({outcome.termination.value})"
    if game.result != "*":
        how = game.headers.get("Termination", "not decided on the board")
        return f"result {game.result} ({how})"
    return "result * (game unfinished)"


def _belief(args: argparse.Namespace) -> int:
    from caligo.fow.belief import BeliefConfig, BeliefSet, SizeKind
    from caligo.fow.game import Game
    from caligo.fow.observation import observe
    from caligo.fow.position import Position, move_to_uci
    from caligo.fow.values import Color

    plot = _plot_path(args.plot)
    pgn = _read_game(args.pgn, args.game)
    sides = [Color.WHITE, Color.BLACK] if args.side == "both" else [Color[args.side.upper()]]
    config = BeliefConfig(max_positions=args.max_positions, seed=args.seed)
    beliefs = {side: BeliefSet.initial(side, pgn.start_fen, config) for side in sides}
    pos = Position(pgn.start_fen)
    game = Game(pgn.start_fen)
    rows: list[dict[str, Any]] = [
        {"ply": 0, "move": None, "uci": None, **{str(s): _size(beliefs[s]) for s in sides}}
    ]
    bound = {SizeKind.EXACT: "", SizeKind.LOWER_BOUND: ">= ", SizeKind.ESTIMATE: "~",
             SizeKind.REDRAWN: "redrawn "}
    width = 12
    source = "stdin" if args.pgn == "-" else args.pgn
    bar = _progress(len(pgn.moves), quiet=not args.json)

    with _quiet_broken_pipe():
        if not args.json:
            print(f"# |P| (positions the player cannot tell apart) after every ply of {source}")
            print(f"{'ply':>4}  {'move':<8}" + "".join(f" {s!s:>{width}}" for s in sides))
            print(f"{0:>4}  {'start':<8}" + "".join(f" {1:>{width}}" for _ in sides))
        for ply, move in enumerate(pgn.moves, start=1):
            san = pos.san(move)
            mover = pos.turn
            pos.push(move)
            game.push(move)
            notes = []
            for side in sides:
                obs = observe(pos, side)
                b = beliefs[side]
                if mover == side:
                    beliefs[side] = b.update_own_move(move, obs)
                else:
                    beliefs[side] = b.update_opponent_move(obs)
                if not beliefs[side].exact:
                    b = beliefs[side]
                    notes.append(
                        f"{side}'s P is a sample (cap {config.max_positions}): holding "
                        f"{len(b)} of {bound[b.size_kind]}{b.size_seen} consistent positions"
                    )
            row = {"ply": ply, "move": san, "uci": move_to_uci(move)}
            row.update({str(s): _size(beliefs[s]) for s in sides})
            rows.append(row)
            bar(1)
            if not args.json:
                cells = "".join(f" {len(beliefs[s]):>{width}}" for s in sides)
                print(f"{ply:>4}  {san:<8}{cells}" + (f"  ({'; '.join(notes)})" if notes else ""))
        bar(0)
        ending = _ending(pgn, game)
        if args.json:
            print(json.dumps(_belief_json(pgn, source, sides, rows, game, config), indent=1))
        else:
            print(f"# {ending}")
    if plot is not None:
        _plot_sizes(plot, rows, [str(s) for s in sides], source)
        print(f"plot written to {plot}", file=sys.stderr)
    return 0


def _size(belief: Any) -> dict[str, Any]:
    return {
        "stored": len(belief),
        "consistent": belief.size_seen,
        "kind": "exact" if belief.exact else belief.size_kind.value,
    }


def _belief_json(
    pgn: Any, source: str, sides: list[Any], rows: list[dict[str, Any]], game: Any, config: Any
) -> dict[str, Any]:
    outcome = game.outcome
    return {
        "source": source,
        "headers": dict(pgn.headers),
        "start_fen": pgn.start_fen,
        "sides": [str(s) for s in sides],
        "max_positions": config.max_positions,
        "plies": rows,
        "result": pgn.result,
        "termination": None if outcome is None else outcome.termination.value,
    }


def _progress(total: int, quiet: bool) -> Callable[[int], None]:
    """A tqdm bar on a terminal's stderr when stdout shows nothing until the end; call with
    an increment, 0 to close."""
    if quiet or not sys.stderr.isatty():
        return lambda n: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="ply", file=sys.stderr, leave=False)

    def step(n: int) -> None:
        if n:
            bar.update(n)
        else:
            bar.close()

    return step


def _plot_sizes(path: Path, rows: list[dict[str, Any]], sides: list[str], source: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    plies = [r["ply"] for r in rows]
    for side in sides:
        ax.plot(plies, [r[side]["consistent"] for r in rows], marker=".", label=side)
    ax.set_yscale("log")
    ax.set_xlabel("ply")
    ax.set_ylabel("|P|: consistent positions")
    ax.set_title(f"Positions each player cannot tell apart: {Path(source).name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _last_seen(args: argparse.Namespace) -> int:
    from caligo.fow.last_seen import STAY, measure, placement
    from caligo.fow.notation import read_pgns

    games = [(g.start_fen, g.moves) for path in args.pgn
             for g in read_pgns(read_text(path))]
    hints, held = measure(games)
    names = ("pawn", "knight", "bishop", "rook", "queen", "king")
    out: dict[str, Any] = {"games": len(games), "hints": hints.tolist(), "held": held.tolist()}
    if not args.json:
        print(f"# {len(games)} games: the share of last-known squares in the fog that still hold "
              f"the piece (hints), by our own moves since the sighting; STAY in brackets")
        print(f"{'':<7}" + "".join(f"{f'{4 * b}-{4 * b + 3}' if b < 5 else '20+':>20}"
                                   for b in range(6)))
        for t, name in enumerate(names):
            cells = [f"{held[t, b] / max(hints[t, b], 1):.2f} [{STAY[t][b]:.2f}] {hints[t, b]:>6}"
                     for b in range(6)]
            print(f"{name:<7}" + "".join(f"{c:>20}" for c in cells))
    if args.every:
        got = placement(games, args.every)
        out["placement"] = got
        if not args.json:
            print(f"redrawn P at {got['decisions']} decisions (every {args.every}th): unseen "
                  f"pieces on a true square {got['uniform_pieces']:.3f} uniform, "
                  f"{got['hinted_pieces']:.3f} last-seen; the king on its square "
                  f"{got['uniform_king']:.3f} and {got['hinted_king']:.3f} "
                  f"({got['king_unseen']} decisions with the king unseen)")
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


def _plausible(args: argparse.Namespace) -> int:
    import numpy as np

    from caligo.fow.notation import read_pgns
    from caligo.fow.plausible import BINS, THETA, collect, fit, score

    games = [(g.start_fen, g.moves) for path in args.pgn
             for g in read_pgns(read_text(path))][::args.stride]
    train: list[Any] = []
    test: list[Any] = []
    for k, game in enumerate(games):
        (test if k % args.holdout == args.holdout - 1 else train).extend(
            collect([game], cap=args.cap))
    if not train or not test:
        raise ValueError(
            f"{len(games)} games give {len(train)} decisions to fit and {len(test)} held out "
            f"(every {args.holdout}th game): both are needed; give more games or another "
            "--holdout")
    theta = fit(train)
    now = np.asarray(THETA, dtype=np.float64).reshape(-1)
    scores = {"train": score(train, theta), "test": score(test, theta),
              "test_with_THETA": score(test, now)}
    out = {"games": len(games), "theta": theta.reshape(6, BINS).round(3).tolist(), **scores}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"# {len(games)} games, {len(train)} decisions fitted, {len(test)} held out (every "
          f"{args.holdout}th game); theta by piece type and the sighting's age (own moves)")
    print(f"{'':<7}" + "".join(f"{f'{4 * b}-{4 * b + 3}' if b < BINS - 1 else '20+':>8}"
                               for b in range(BINS)))
    for t, name in enumerate(("pawn", "knight", "bishop", "rook", "queen", "king")):
        print(f"{name:<7}" + "".join(f"{x:>8.2f}" for x in theta[t * BINS:(t + 1) * BINS]))
    for name, r in scores.items():
        print(f"{name}: {int(r['decisions'])} decisions, log-likelihood of the truth "
              f"{r['loglik_weighted']:.3f} weighted, {r['loglik_uniform']:.3f} uniform; "
              f"the truth among 256 roots {r['hit_weighted']:.3f} weighted, "
              f"{r['hit_uniform']:.3f} uniform")
    return 0


def _perft(args: argparse.Namespace) -> int:
    from caligo.fow.movegen import divide, perft, perft_legal
    from caligo.fow.position import STARTING_FEN, Position

    pos = Position(STARTING_FEN if args.fen == "startpos" else args.fen)
    count = perft_legal if args.chess else perft
    with _quiet_broken_pipe():
        t0 = time.perf_counter()
        if args.divide and args.depth > 0:
            parts = divide(pos, args.depth, legal=args.chess)
            for move in sorted(parts, key=lambda m: m.uci()):
                print(f"{move.uci()}: {parts[move]}")
            total = sum(parts.values())
            print()
        else:
            total = count(pos, args.depth)
        seconds = time.perf_counter() - t0
        rules = "standard chess" if args.chess else "FoW"
        print(f"{rules} perft {args.depth}: {total}")
        rate = f", {total / seconds:,.0f} leaves/s" if seconds > 0 else ""
        print(f"# {seconds:.3f} s{rate}", file=sys.stderr)
    return 0


def _view(args: argparse.Namespace) -> int:
    from caligo.fow.observation import observe
    from caligo.fow.position import Position, move_to_uci
    from caligo.fow.values import Color
    from caligo.fow.view import view_data, view_svg

    pgn = _read_game(args.pgn, args.game)
    if args.ply > len(pgn.moves):
        raise ValueError(f"--ply {args.ply}: the game has {len(pgn.moves)} plies")
    side = Color[args.side.upper()]
    pos = Position(pgn.start_fen)
    own_last: str | None = None
    own_obs = None  # the player's observation right after their own last move
    for move in pgn.moves[: args.ply]:
        mover = pos.turn
        pos.push(move)
        if mover == side:
            own_last = move_to_uci(move)
            own_obs = observe(pos, side)
    obs = observe(pos, side)
    prev = own_obs if obs != own_obs else None
    out = Path(args.output) if args.output else None
    if args.json or (out is not None and out.suffix.lower() == ".json"):
        text = json.dumps(view_data(obs, prev, own_last), indent=1) + "\n"
    else:
        text = view_svg(obs, prev, own_last)
    if out is None:
        with _quiet_broken_pipe():
            sys.stdout.write(text)
    else:
        out.write_text(text)
        print(f"{side}'s view after ply {args.ply} written to {out}", file=sys.stderr)
    return 0


FOW_EPILOG = """\
examples:
  caligo match --engine random --engine random --rounds 5 --pgn games.pgn   games to look at
  caligo fow perft startpos 4                   197,742 FoW move sequences
  caligo fow belief games.pgn --as white        |P| after every ply
  caligo fow view games.pgn --ply 10 --as black -o board.svg"""

BELIEF_EPILOG = """\
examples:
  caligo fow belief games.pgn --as white
  caligo fow belief games.pgn --game 3 --json
  caligo fow belief games.pgn --as black --plot belief.png"""

PERFT_EPILOG = """\
examples:
  caligo fow perft startpos 4                   197,742 (FoW allows moves into check)
  caligo fow perft startpos 4 --chess           197,281, the published chess count
  caligo fow perft startpos 2 --divide          the count below each first move"""

LAST_SEEN_EPILOG = """\
examples:
  caligo fow last-seen docs/strength/prior_mt1.pgn
  caligo fow last-seen docs/strength/zs21_mt03.pgn --every 25 --json"""

PLAUSIBLE_EPILOG = """\
examples:
  caligo fow plausible docs/strength/prior_mt1.pgn --holdout 4
  caligo fow plausible docs/strength/*.pgn --stride 4 --json"""

VIEW_EPILOG = """\
examples:
  caligo fow view games.pgn --ply 10 --as white -o board.svg
  caligo fow view games.pgn --game 2 --ply 0 --as black --json"""


def register(sub: Any) -> None:
    """Add this area's sub-commands."""
    fow = sub.add_parser("fow", help="Fog of War chess tools", epilog=FOW_EPILOG,
                         formatter_class=HelpFormatter)
    fsub = fow.add_subparsers(dest="fow_command", required=True)
    fmt = HelpFormatter

    p = fsub.add_parser(
        "belief",
        help="print the size of a player's set P after every ply",
        description="Replay a FoW game and print, after every ply, how many positions each "
        "player cannot tell apart (the belief set P of Obscuro, section 3), then the result.",
        epilog=BELIEF_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("pgn", help="PGN file of FoW games ('-' reads standard input)")
    p.add_argument("--game", type=_positive_int, default=None,
                   help="which game of a multi-game PGN (1 = first)")  # fmt: skip
    p.add_argument("--as", dest="side", choices=(*_SIDES, "both"), default="both",
                   help="whose P to follow")  # fmt: skip
    p.add_argument("--max-positions", type=_positive_int, default=2_000_000,
                   help="memory cap of P (positions); past it P is a uniform sample")  # fmt: skip
    p.add_argument("--seed", type=_nonnegative_int, default=0,
                   help="seed of the sample past the cap")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument("--plot", metavar="FILE", help="also plot |P| per ply (log y) to FILE.png")
    p.set_defaults(func=_belief)

    p = fsub.add_parser(
        "perft",
        help="count move sequences from a position (FoW rules; --chess for chess)",
        description="Count the FoW move sequences of length DEPTH from FEN (king captures end "
        "a line). --divide prints the count below each first move.",
        epilog=PERFT_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("fen", help="position as FEN, or 'startpos'")
    p.add_argument("depth", type=_nonnegative_int, help="plies")
    p.add_argument("--divide", action="store_true", help="per-move counts first")
    p.add_argument("--chess", action="store_true", help="standard chess moves instead")
    p.set_defaults(func=_perft)

    p = fsub.add_parser(
        "view",
        help="draw what one player sees after a ply of a game (SVG or JSON)",
        description="Replay a FoW game to ply N and write the player's view: only what they "
        "observe, fog hatched, their legal moves, own last move and lost pieces as hints.",
        epilog=VIEW_EPILOG,
        formatter_class=fmt,
    )
    p.add_argument("pgn", help="PGN file ('-' reads standard input)")
    p.add_argument("--game", type=_positive_int, default=None, help="which game (1 = first)")
    p.add_argument("--ply", type=_nonnegative_int, required=True, help="plies played (0 = start)")
    p.add_argument("--as", dest="side", choices=_SIDES, required=True, help="whose view")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (.svg; .json: view data); default stdout")  # fmt: skip
    p.add_argument("--json", action="store_true", help="the view data as JSON instead of SVG")
    p.set_defaults(func=_view)

    def replay_command(name: str, summary: str, description: str, epilog: str,
                       func: Callable[[argparse.Namespace], int]) -> Any:
        """A sub-command that replays PGN files of FoW games (and can answer in JSON)."""
        q = fsub.add_parser(name, help=summary, description=description, epilog=epilog,
                            formatter_class=fmt)
        q.add_argument("pgn", nargs="+", help="PGN files of FoW games")
        q.add_argument("--json", action="store_true", help="print one JSON document instead")
        q.set_defaults(func=func)
        return q

    p = replay_command(
        "last-seen",
        "how often unseen pieces stand where they were last seen (a redraw's prior)",
        "Replay FoW games and count, at every decision from ply 10, how often a square where "
        "the player last saw an opponent's piece, now in the fog, still holds it (the prior "
        "`caligo.fow.last_seen.STAY` of a redrawn P), beside STAY; with --every N, what a P "
        "redrawn at every Nth decision gets right, uniform and with the prior.",
        LAST_SEEN_EPILOG, _last_seen)
    p.add_argument("--every", type=_positive_int, default=None,
                   help="redraw P at every Nth decision and compare")  # fmt: skip

    p = replay_command(
        "plausible",
        "fit which positions of P are likely the truth (the roots' weights)",
        "Replay FoW games and, at every decision from ply 10 where the player's P is exact "
        "with at most --cap positions, record which of P's positions keep the opponent's "
        "pieces on their last-known squares, and which is the truth; fit a conditional logit "
        "on the games but every --holdout-th (`caligo.fow.plausible`) and score it on those: "
        "the log-likelihood of the truth and its chance to be among 256 roots, weighted and "
        "uniform.",
        PLAUSIBLE_EPILOG, _plausible)
    p.add_argument("--stride", type=_positive_int, default=1, help="use every Sth game")
    p.add_argument("--holdout", type=_positive_int, default=4,
                   help="hold out every Kth game (of those used) for the score")  # fmt: skip
    p.add_argument("--cap", type=_positive_int, default=100_000,
                   help="the largest P followed (exact P only)")  # fmt: skip
