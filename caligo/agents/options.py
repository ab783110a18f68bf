"""The options of an engine spec (``NAME:key=value,...``), one vocabulary for every engine.

Every engine reads its options through an `OptionReader`, so a key means the same thing and
is checked the same way everywhere, and a bad one is refused with an `OptionError` that names
the engine, the key and the value. The keys the engines share:

| key       | value                     | meaning                        | engines           |
|-----------|---------------------------|--------------------------------|-------------------|
| budget    | iters=N, mt=SECONDS, ...  | the engine's own move budget   | obscuro, zs21     |
| eval      | auto, stockfish, simple,  | the leaf evaluator             | obscuro, zs21     |
|           | simple-see                |                                |                   |
| seed      | integer                   | the engine's base seed         | all               |
| belief    | integer >= 1              | P's memory cap, in positions   | obscuro, zs21     |
| nodes     | integer                   | the search tree's capacity     | obscuro, zs21     |
| stockfish | a path                    | the Stockfish executable       | all but random    |

Engine-specific keys (Obscuro's `preset`, ZS21's `penalty`, ...) are each engine's own;
docs/engine.md has the whole table. Older names stay accepted as aliases (ZS21's `evaluator`,
`max_positions`, `max_nodes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import TypeVar

from caligo.errors import CaligoError
from caligo.fow.evaluate import SEE_EVAL, SimpleEvalConfig, SimpleEvaluator

__all__ = ["EvalChoice", "OptionError", "OptionReader"]

E = TypeVar("E", bound=Enum)


class OptionError(CaligoError, ValueError):
    """An unknown key or a bad value in an engine spec; the message names both."""


class EvalChoice(Enum):
    """Which leaf evaluator a search uses (the `eval` option)."""

    AUTO = "auto"  # Stockfish when the binary is found, else the built-in evaluation
    STOCKFISH = "stockfish"  # Obscuro, appendix C.5; ZS21, appendix D.1 (an error if missing)
    SIMPLE = "simple"  # material + visible squares (Obscuro, section 4.1, ablation 6)
    SIMPLE_SEE = "simple-see"  # the same, plus the side to move's best capture by exchange

    @property
    def builtin(self) -> bool:
        """Whether the choice is a built-in evaluator (never Stockfish)."""
        return self in (EvalChoice.SIMPLE, EvalChoice.SIMPLE_SEE)

    def builtin_evaluator(self) -> SimpleEvaluator:
        """The built-in evaluator this choice scores with when no Stockfish does: `SIMPLE`
        the plain one (Obscuro's ablation 6), every other choice the one with static exchanges
        (`caligo.fow.evaluate.SEE_EVAL`, also the Stockfish pool's fallback)."""
        return SimpleEvaluator(SimpleEvalConfig() if self is EvalChoice.SIMPLE else SEE_EVAL)


class OptionReader:
    """The options of one engine's spec, checked against the keys it knows.

    `known`: the keys the engine reads; `aliases`: older names -> keys (a spec may not give
    both). Unknown keys are refused at once, naming the known ones.
    """

    def __init__(self, engine: str, options: Mapping[str, str], known: Iterable[str],
                 aliases: Mapping[str, str] | None = None) -> None:
        self.engine = engine
        self.known = tuple(known)
        aliases = dict(aliases or {})
        values: dict[str, str] = {}
        self._given: dict[str, str] = {}  # key -> the name it was given under
        unknown = []
        for name, value in options.items():
            key = aliases.get(name, name)
            if key not in self.known:
                unknown.append(name)
                continue
            if key in values:
                raise OptionError(f"{engine}: option {key!r} given twice (as "
                                  f"{self._given[key]!r} and {name!r})")
            values[key] = value
            self._given[key] = name
        if unknown:
            raise OptionError(f"unknown option(s) for {engine}: {sorted(unknown)!r} "
                              f"(known: {', '.join(self.known)})")
        self.values = values

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def _bad(self, key: str, expected: str) -> OptionError:
        return OptionError(f"{self.engine}: {self._given.get(key, key)} must be {expected}, "
                           f"got {self.values[key]!r}")

    def text(self, key: str) -> str:
        """The value as given."""
        return self.values[key]

    def integer(self, key: str, least: int | None = None) -> int:
        """An integer (at least `least`)."""
        try:
            value = int(self.values[key].strip())
        except ValueError:
            raise self._bad(key, "an integer") from None
        if least is not None and value < least:
            raise self._bad(key, f"an integer >= {least}")
        return value

    def number(self, key: str) -> float:
        """A finite number."""
        try:
            value = float(self.values[key].strip())
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            raise self._bad(key, "a finite number")
        return value

    def choice(self, key: str, kind: type[E]) -> E:
        """One of `kind`'s values (case-insensitive)."""
        text = self.values[key].strip().lower()
        try:
            return kind(text)
        except ValueError:
            names = ", ".join(str(m.value) for m in kind)
            raise OptionError(f"{self.engine}: invalid {self._given.get(key, key)} "
                              f"{self.values[key]!r} (one of {names})") from None
