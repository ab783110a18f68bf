"""Sub-commands of the play area: `caligo engine` (serve an agent on stdio) and `caligo match`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from caligo.cli._util import HelpFormatter, json_file, output_file, seconds

_ENGINE_HELP = (
    "an agent: a registry name with options (random, random:seed=3) or cmd:COMMAND ARGS for an "
    "external engine speaking caligo-fow"
)


def _engine(args: argparse.Namespace) -> int:
    from caligo.agents.registry import agents
    from caligo.play.server import serve

    if args.list:
        for entry in agents():
            missing = entry.unavailable()
            status = f"  (unavailable: {missing})" if missing else ""
            print(f"{entry.name:<16} strength {entry.strength:>4}  {entry.description}{status}")
        return 0
    # protocol lines own stdout; everything else goes to stderr
    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]
    return serve(args.agent, sys.stdin.buffer, sys.stdout.buffer)


def _version() -> str:
    from importlib.metadata import version

    return version("caligo")


def _match(args: argparse.Namespace) -> int:
    from caligo.agents.base import TimeControl
    from caligo.play.continuation import read_prior
    from caligo.play.errors import PlayError
    from caligo.play.match import (
        Backend,
        MatchConfig,
        Outputs,
        engine_configs,
        read_openings,
    )
    from caligo.play.runner import run_match
    from caligo.play.stats import SprtConfig

    engines = engine_configs(args.engine, [TimeControl.parse(t) for t in args.tc or []])
    config = MatchConfig(
        engines=engines,
        rounds=args.rounds,
        concurrency=args.concurrency,
        seed=args.seed,
        openings=read_openings(args.openings) if args.openings else (),
        sprt=SprtConfig.parse(args.sprt) if args.sprt else None,
        timemargin_ms=args.timemargin,
        move_timeout_ms=round(args.timeout * 1000),
        share_opponent_clock=args.share_opponent_clock,
        backend=Backend(args.backend),
        address=args.address,
        cpus_per_pair=args.cpus_per_pair,
    )
    outputs = Outputs(
        pgn=Path(args.pgn) if args.pgn else None,
        db=Path(args.db) if args.db else None,
        json=Path(args.json) if args.json else None,
        meta=(("command", args.command_line), ("version", _version())),
    )
    a, b = engines
    print(
        f"# match {config.match_id}: {a.name} ({a.time_control}) vs {b.name} "
        f"({b.time_control}), {config.rounds} pairs, concurrency {config.concurrency}, "
        f"backend {config.backend.value}, seed {config.seed}"
        + (f", SPRT {config.sprt}" if config.sprt else ""),
        flush=True,
    )

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    try:
        if args.from_pair is not None and not args.continue_:
            raise PlayError("--from-pair goes with --continue FILE")
        prior = read_prior(Path(args.continue_), config, args.from_pair) if args.continue_ else None
        result = run_match(config, outputs, on_pair=progress, prior=prior)
    except PlayError as exc:
        print(f"caligo: error: {exc}", file=sys.stderr)
        return 2
    for line in summary(result):
        print(line)
    return 0


def summary(result: Any) -> list[str]:
    """The final report of a match (W-D-L, pentanomial, Elo, LOS, SPRT, binomial, White)."""
    t = result.tally
    resumed = f", {result.resumed_pairs} resumed" if result.resumed_pairs else ""
    lines = [
        f"Games: {t.games} ({t.pairs} pairs{resumed})"
        f"  {result.engines[0]} vs {result.engines[1]}: +{t.wins} ={t.draws} -{t.losses}",
        "Pentanomial [LL, LD+DL, LW+DD+WL, DW+WD, WW]: [" + ", ".join(map(str, t.penta)) + "]",
    ]
    e = result.elo
    if e is not None:
        lines.append(
            f"Score {100 * e.score:.1f}%  Elo {e.elo:+.1f} [{e.elo_low:+.1f}, {e.elo_high:+.1f}]"
            f"  nElo {e.nelo:+.1f} [{e.nelo_low:+.1f}, {e.nelo_high:+.1f}]  LOS {100 * e.los:.1f}%"
        )
    lines.append(f"Exact binomial test (wins vs losses): p = {result.binomial_p:.4g}")
    if result.sprt is not None:
        s, c = result.sprt, result.sprt_crossing
        decided = (f"  {c.decision.value} at {c.pairs} pairs (LLR {c.llr:.2f}; the pairs "
                   "being played then are counted above)" if c is not None
                   else f"  {s.decision.value}")
        lines.append(
            f"SPRT ({result.sprt_config}): LLR {s.llr:.2f} [{s.lower:.2f}, {s.upper:.2f}]"
            f"{decided}{' (stopped early)' if result.stopped_early else ''}"
        )
    lines.append(f"White's share: {100 * t.white_share:.1f}%")
    lines.append("Terminations: " + ", ".join(f"{k} {v}" for k, v in result.terminations))
    lines.append(f"Time: {result.elapsed_s:.1f} s ({result.games_per_s:.1f} games/s)")
    return lines


ENGINE_EPILOG = """\
examples:
  caligo engine --list                          the agents and their options
  caligo engine --agent obscuro:budget=iters=4000
  caligo engine --agent random:seed=7           then send it {"type":"hello", ...} lines

docs/protocol.md has the messages."""

MATCH_EPILOG = """\
examples:
  caligo match --engine random --engine random --rounds 100
  caligo match --engine obscuro:budget=iters=400 --engine zs21 --rounds 50 --tc none --db m.db
  caligo match --engine obscuro --engine stockfish-pi --tc 60+0.6 --sprt elo0=0,elo1=10
  caligo match --engine obscuro --engine obscuro --tc mt=2 --tc mt=1 --pgn scale.pgn   time odds
  caligo match --engine obscuro --engine zs21 --rounds 50 --continue r.json --json r2.json"""


def register(sub: Any) -> None:
    """Add this area's sub-commands."""
    p = sub.add_parser(
        "engine", help="serve an agent over the caligo-fow JSON-lines protocol on stdin/stdout",
        epilog=ENGINE_EPILOG, formatter_class=HelpFormatter,
    )
    p.add_argument("--agent", default="random", help=_ENGINE_HELP + " (default: random)")
    p.add_argument("--list", action="store_true", help="list the registered agents and exit")
    p.set_defaults(func=_engine)

    m = sub.add_parser(
        "match",
        help="play colour-swapped pairs between two engines (Elo, pentanomial, SPRT)",
        description="Play a match of colour-swapped pairs and report W-D-L, pentanomial counts,"
        " Elo with 95% intervals, LOS, SPRT and an exact binomial test.",
        epilog=MATCH_EPILOG, formatter_class=HelpFormatter,
    )
    m.add_argument("--engine", action="append", required=True, help=_ENGINE_HELP + "; give two")
    m.add_argument("--rounds", type=int, default=10, help="number of pairs (default 10)")
    m.add_argument(
        "--tc",
        action="append",
        help="time control: none, iters=N, mt=SECONDS, or INITIAL+INC seconds (e.g. 60+0.6); "
        "give it twice for time odds (first engine, second engine)",
    )
    m.add_argument("--concurrency", type=int, default=1, help="pairs played at once")
    m.add_argument(
        "--sprt", help="elo0=..,elo1=..[,alpha=0.05][,beta=0.05][,model=logistic|normalized]"
    )
    m.add_argument("--pgn", type=output_file,
                   help="write the games here (transcripts beside it, .transcripts.jsonl)")
    m.add_argument("--db", type=output_file,
                   help="SQLite file: store games, resume the match from it")
    m.add_argument("--json", type=json_file, help="write the match result as JSON here")
    m.add_argument(
        "--continue", dest="continue_", metavar="FILE",
        help="start from the counts of FILE, an earlier --json result of this same match "
        "(when its --db is gone); its pairs are not played again",
    )
    m.add_argument(
        "--from-pair", type=int, metavar="N",
        help="with --continue: the first pair number to play (needed when FILE does not list "
        "its pairs: files written before they were recorded)",
    )
    m.add_argument(
        "--openings", help="PGN (forced opening plies) or EPD/FEN file of start positions"
    )
    m.add_argument("--backend", choices=("local", "ray"), default="local")
    m.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS or a local Ray)")
    m.add_argument("--cpus-per-pair", type=int, default=1, metavar="N",
                   help="CPUs each Ray actor reserves for its pair (default 1; e.g. 5 for "
                   "Obscuro with expanders=4)")
    m.add_argument("--seed", type=int, default=0, help="match seed (default 0)")
    m.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        help="seconds an untimed or fixed-iteration move may take (default 60)",
    )
    m.add_argument("--timemargin", type=int, default=0, help="ms of grace past the clock")
    m.add_argument(
        "--share-opponent-clock", action="store_true", help="tell engines the opponent's clock"
    )
    m.add_argument("--quiet", action="store_true", help="no progress line per pair")
    m.set_defaults(func=_match)
