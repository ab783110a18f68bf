"""Helpers shared by the `caligo` sub-commands: argument types, output paths, progress, notices.

Progress bars and notices go to stderr (stdout stays clean for tables and `--json`); library
code never prints (it takes progress callbacks, which these helpers provide).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


class HelpFormatter(argparse.HelpFormatter):
    """Show meaningful defaults; wrap prose paragraphs but keep indented lines (examples) as
    written in descriptions and epilogs."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (default in (None, False, argparse.SUPPRESS) or "%(default)" in text
                or action.option_strings == [] or "default" in text):
            return text
        return f"{text} (default: %(default)s)"

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if len(lines) > 1 and any(line.startswith(" ") or line.endswith(":")
                                      for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(textwrap.fill(" ".join(lines), width, initial_indent=indent,
                                         subsequent_indent=indent))
        return "\n\n".join(out)


MAX_COUNT = 10**12  # iterations, nodes, games...: days of work at a million a second


def count(text: str, minimum: int = 0) -> int:
    """An integer count in [minimum, MAX_COUNT] that also reads 1e6, 1_000_000 and 1,000,000."""
    raw = text.strip().replace(",", "")
    try:
        value = int(raw)
    except ValueError:
        try:
            f = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not math.isfinite(f) or not f.is_integer():
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        value = int(f)
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT:.0e}, got {text!r}")
    return value


def count_list(text: str, option: str, what: str, minimum: int = 0) -> list[int]:
    """Comma-separated counts of at least `minimum` (`count`'s forms); ValueError naming
    `option` for an empty list, an empty item ('1,,2') or a bad count."""
    try:
        out = [count(item, minimum) for item in text.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{option} takes comma-separated {what} (at least {minimum}), got "
                         f"{text!r}: {exc}") from None
    return out


def positive_count(text: str) -> int:
    """A count of at least 1 (`count`)."""
    return count(text, 1)


def nonnegative_count(text: str) -> int:
    """A count of at least 0 (`count`)."""
    return count(text, 0)


def probability(text: str) -> float:
    """A float in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text!r}")
    return value


MAX_SECONDS = 1e6
"""The longest duration an option accepts (about 11.6 days): past it a wait is a mistake."""


def seconds(text: str) -> float:
    """A duration in seconds: finite, > 0 and at most `MAX_SECONDS`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and 0.0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, {MAX_SECONDS:g}], "
                                         f"got {text!r}")
    return value


def read_text(path: str) -> str:
    """A UTF-8 text file's contents; ValueError naming the file if it is not UTF-8 text."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})"
                         ) from None


def output_file(path: str, suffixes: tuple[str, ...] = ()) -> Path:
    """Check, before any work, that a file can be written at `path` (its folder is created).

    Raises `argparse.ArgumentTypeError` for a directory, a wrong suffix or an unwritable folder.
    """
    p = Path(path)
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{path!r} is a directory, expected a file name")
    if suffixes and p.suffix.lower() not in suffixes:
        raise argparse.ArgumentTypeError(
            f"{path!r} should end in {' or '.join(suffixes)}")
    _writable_folder(p.parent, path)
    return p


def output_dir(path: str) -> Path:
    """Check, before any work, that `path` is (or can be made) a writable directory."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{path!r} exists and is not a directory")
    _writable_folder(p, path)
    return p


def _writable_folder(folder: Path, original: str) -> None:
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {original!r}: {str(probe)!r} is not a "
                                         "writable directory")


def plot_file(path: str) -> Path:
    """An output image path (.png, .pdf or .svg), checked up front."""
    return output_file(path, PLOT_SUFFIXES)


def json_file(path: str) -> Path:
    """An output JSON path, checked up front."""
    return output_file(path)


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """Give a (sub-)parser its own `-v/--verbose`, so the flag works after the sub-command too.

    The default is suppressed, so a sub-command without the flag keeps the top level's value.
    """
    if "-v" in parser._option_string_actions or "--verbose" in parser._option_string_actions:
        return
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log at INFO level")


def subparsers_of(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser below `parser` (depth first)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield child
                yield from subparsers_of(child)


def say(message: str) -> None:
    """A one-line notice on stderr (never on stdout, which holds results)."""
    print(f"caligo: {message}", file=sys.stderr, flush=True)


@contextmanager
def notice(message: str, after: float = 1.0) -> Iterator[None]:
    """Say `message` on stderr if the block is still running `after` seconds later; then say
    how long it took. Quick blocks print nothing."""
    state = {"shown": False}
    start = time.perf_counter()

    def show() -> None:
        state["shown"] = True
        say(message)

    timer = threading.Timer(after, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if state["shown"]:
            say(f"  done in {time.perf_counter() - start:.1f} s")


class Bars:
    """One tqdm bar at a time: a new bar closes the previous one (no stacked or stale bars).

    A bar appears only once its task has run for `delay` seconds, so quick steps stay silent;
    when stderr is not a terminal (a log file) it redraws every 15 s instead of 10 times a
    second.
    """

    def __init__(self, delay: float = 1.0) -> None:
        self._bar: Any = None
        self.delay = delay

    def __call__(self, total: int | None, desc: str, unit: str = "it") -> Callable[[int], None]:
        """A progress callback taking increments, drawing a bar of `total` steps."""
        from tqdm import tqdm

        self.close()
        # in a log (stderr not a terminal) a redraw is a new line: redraw rarely there
        interval = 0.1 if sys.stderr.isatty() else 15.0
        self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=sys.stderr,
                         dynamic_ncols=True, unit_scale=unit == "node", delay=self.delay,
                         mininterval=interval, maxinterval=max(10.0, interval))
        bar = self._bar
        return lambda n: bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def print_json(payload: Any) -> None:
    """Write `payload` to stdout as JSON (inf and nan as strings, numpy scalars as numbers)."""
    from caligo.experiments.runner import jsonable

    print(json.dumps(jsonable(payload), indent=2))
