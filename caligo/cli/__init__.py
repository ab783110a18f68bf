"""The `caligo` command line.

Each area adds its sub-commands from its own module `caligo.cli.cmd_*` (a `register` function),
so the areas never edit one another's files; this module assembles them and runs one.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from collections.abc import Sequence

from caligo.cli import (
    cmd_bench,
    cmd_core,
    cmd_fow,
    cmd_play,
    cmd_search,
    cmd_strength,
    cmd_subgame,
    cmd_web,
    cmd_zs21,
)
from caligo.cli._util import HelpFormatter, add_verbose, subparsers_of

_MODULES = (
    cmd_core,
    cmd_subgame,
    cmd_fow,
    cmd_search,
    cmd_bench,
    cmd_play,
    cmd_web,
    cmd_zs21,
    cmd_strength,
)

DESCRIPTION = """\
Caligo: solve two-player zero-sum imperfect-information games (OpenSpiel games and built-ins),
refine strategies by safe and knowledge-limited subgame solving, reproduce the papers' tables,
and work with Fog of War chess."""

EPILOG = """\
examples:
  caligo games list                                  games Caligo can load
  caligo solve leduc_poker --algo cfr+ --iters 1e4   CFR+ with NashConv and exploitability
  caligo solve kuhn_poker --algo lp --json           exact equilibrium by LP, as JSON
  caligo experiment table1 --tie-break ipm           Zhang & Sandholm 2021, Table 1
  caligo bench --help                                the benchmarks

Ctrl-C stops any command cleanly (exit status 130); `caligo COMMAND --help` for each command.
"""


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every area's sub-commands."""
    from caligo import __version__

    parser = argparse.ArgumentParser(prog="caligo", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=HelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument("--version", action="version", version=f"caligo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _MODULES:
        module.register(sub)
    for child in subparsers_of(parser):  # `-v` after the sub-command too
        add_verbose(child)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status.

    Errors Caligo raises on bad input (`CaligoError`), file errors and interrupts end in one
    line on stderr, never a traceback: status 2 for an error, 130 for Ctrl-C.
    """
    from caligo.errors import CaligoError

    try:
        parser = build_parser()
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
        args.command_line = "caligo " + shlex.join(argv)  # recorded by commands that write results
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
        status = args.func(args)
    except KeyboardInterrupt:
        print("caligo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `caligo ... | head`: the reader left; nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    # ValueError: input errors of code whose exceptions do not (yet) derive from CaligoError
    except (CaligoError, OSError, ValueError) as exc:
        print(f"caligo: error: {exc}", file=sys.stderr)
        return 2
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
