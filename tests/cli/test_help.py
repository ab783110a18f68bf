"""Every command's `--help` ends with examples, and every example is a command line the parser
accepts (a renamed option or sub-command breaks this test, not the user's first try)."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from caligo.cli import build_parser
from caligo.cli._util import subparsers_of


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    """The command lines of the help's `examples:` block (each up to its two-space comment)."""
    lines = parser.format_help().splitlines()
    if "examples:" not in lines:
        return []
    out = []
    for line in lines[lines.index("examples:") + 1:]:
        if not line.startswith("  "):
            break
        out.append(re.split(r"\s{2,}", line.strip())[0])
    return out


def _all_parsers() -> list[argparse.ArgumentParser]:
    root = build_parser()
    return [root, *subparsers_of(root)]


def test_every_command_has_examples() -> None:
    parsers = _all_parsers()
    assert len(parsers) >= 30  # the top level, 7 groups (games, fow, ...) and 22 commands
    missing = [p.prog for p in parsers
               if not any(e.startswith("caligo ") for e in _examples(p))]
    assert not missing, f"no 'caligo ...' example in the --help of: {missing}"


def test_every_example_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # output paths in the examples are checked against the cwd
    examples = sorted({e for p in _all_parsers() for e in _examples(p)})
    assert len(examples) >= 50
    bad = []
    for example in examples:
        argv = shlex.split(example)
        assert argv[0] == "caligo", example
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                build_parser().parse_args(argv[1:])
        except SystemExit as exc:  # `--help` exits 0; a parse error exits 2
            if exc.code != 0:
                bad.append(f"{example}: {sink.getvalue().strip().splitlines()[-1]}")
    assert not bad, "\n".join(bad)
