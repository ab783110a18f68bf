"""The `caligo` command: one sub-command module per area, each with a `register` function.

Each module under `caligo.cli` named `cmd_*` adds its sub-commands to the shared parser, so the
areas (core, subgame, fow, bench) never edit one another's files.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from caligo.cli import cmd_bench, cmd_core, cmd_fow, cmd_search, cmd_subgame

_MODULES = (cmd_core, cmd_subgame, cmd_fow, cmd_search, cmd_bench)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every area's sub-commands."""
    parser = argparse.ArgumentParser(prog="caligo", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        status = args.func(args)
    except (ValueError, KeyError, OSError) as exc:  # user-facing errors carry their own message
        print(f"caligo: error: {exc}", file=sys.stderr)
        return 2
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
