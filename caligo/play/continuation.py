"""Continuing a match from its result file (`caligo match --continue FILE`).

A match resumes from its SQLite database (`caligo.play.runner`), but a database is a working
file: the result a project keeps is the `--json` file. When the database is gone (another
machine, a fresh checkout), `read_prior` turns that file into the counts the match starts
from: W-D-L, the pentanomial pair counts, White's points and the terminations. The SPRT's
log-likelihood ratio is a function of the pentanomial counts alone (Fishtest's GSPRT), so a
match continued this way stops exactly where one uninterrupted run would have, provided the
new pairs are pairs the earlier run did not play. A pair's seeds and opening come from the
match seed and its number (`MatchConfig.pair`), so a pair played twice at a fixed budget is
the same two games, counted twice: the file's `pair_numbers` say which pairs it holds
(`unlisted_below`: the others all lie below that number), and a file written before they
were recorded needs `--from-pair N`, the first pair number to play (above every pair the
earlier run can have finished).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caligo.play.errors import MatchConfigError
from caligo.play.match import MatchConfig
from caligo.play.stats import SprtCrossing, SprtDecision, Tally

MAX_RESULT_BYTES = 1 << 20
"""A result file is a few kilobytes; a larger one is not one (and is not read whole)."""


@dataclass(frozen=True)
class Prior:
    """Counts a match starts from: an earlier run's `tally` and `terminations`, the 0-based
    indices of the pairs they hold that are known (`counted`), and the first index a new pair
    may have (`first_new`: every counted pair not in `counted` lies below it; 0 when all are
    known)."""

    tally: Tally = field(default_factory=Tally)
    terminations: dict[str, int] = field(default_factory=dict)
    counted: frozenset[int] = frozenset()
    first_new: int = 0
    crossing: SprtCrossing | None = None
    """Where the earlier run's SPRT decided, if it did: a decided test plays no more pairs."""

    @property
    def pairs(self) -> int:
        return self.tally.pairs

    @property
    def unlisted(self) -> int:
        """Counted pairs whose numbers are not known (all below `first_new`)."""
        return self.pairs - len(self.counted)

    def playable(self, k: int) -> bool:
        """Whether pair `k` (0-based) is new to these counts."""
        return k >= self.first_new and k not in self.counted


MAX_COUNT = 10**9
"""No match has more games than this; a larger count is not one (and would overflow floats)."""


def _count(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        shown = value if not isinstance(value, int) or value <= MAX_COUNT else f"over {MAX_COUNT}"
        raise MatchConfigError(f"{where}: {key!r} must be a count, got {shown!r}")
    return value


def read_prior(path: Path, config: MatchConfig, from_pair: int | None = None) -> Prior:
    """The counts of `path`, a `--json` result of this same match (same engines, time
    controls, seed, openings and timing: the same `match_id`, and the same SPRT if both have
    one). `from_pair` (1-based) is the first pair to play; it is needed when the file does not
    list its pairs, and must then be above all of them. MatchConfigError names the file and
    what is wrong."""
    where = str(path)
    if from_pair is not None and (isinstance(from_pair, bool) or not isinstance(from_pair, int)
                                  or from_pair < 1):
        raise MatchConfigError(f"--from-pair must be a pair number >= 1, got {from_pair!r}")
    if from_pair is not None and from_pair > config.rounds:
        raise MatchConfigError(f"--from-pair {from_pair} is past --rounds {config.rounds}: "
                               "no pair would be played")
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_RESULT_BYTES + 1)
    except OSError as exc:
        raise MatchConfigError(f"cannot read the result to continue, {where}: {exc}") from None
    if len(raw) > MAX_RESULT_BYTES:
        raise MatchConfigError(f"{where}: over {MAX_RESULT_BYTES} bytes: not a match result")
    try:
        data = json.loads(raw, parse_constant=lambda c: math.nan)
    except (ValueError, RecursionError) as exc:
        raise MatchConfigError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MatchConfigError(f"{where}: not a match result (a JSON object)")
    if data.get("match_id") != config.match_id:
        raise MatchConfigError(
            f"{where} is the result of match {data.get('match_id')!r}, this one is "
            f"{config.match_id}: the engines, time controls, seed, openings and timing must "
            "be the same"
        )
    sprt = data.get("sprt")
    if isinstance(sprt, dict) and config.sprt is not None and sprt.get("config") != str(
            config.sprt):
        raise MatchConfigError(
            f"{where} ran the SPRT {sprt.get('config')!r}, this match asks {str(config.sprt)!r}:"
            " a test's hypotheses cannot change once its games are counted"
        )
    wins, draws, losses = (_count(data, k, where) for k in ("wins", "draws", "losses"))
    pairs = _count(data, "pairs", where)
    crossing = recorded_crossing(sprt, pairs, where) if config.sprt is not None else None
    penta_raw = data.get("pentanomial")
    if not (isinstance(penta_raw, list) and len(penta_raw) == 5):
        raise MatchConfigError(f"{where}: 'pentanomial' must be five counts, got {penta_raw!r}")
    penta = tuple(_count({"n": n}, "n", f"{where}: pentanomial") for n in penta_raw)
    if sum(penta) != pairs or wins + draws + losses != 2 * pairs:
        raise MatchConfigError(
            f"{where}: {pairs} pairs, pentanomial {list(penta)} and {wins}-{draws}-{losses} "
            "do not agree"
        )
    share = data.get("white_share", math.nan)
    if pairs and (not isinstance(share, int | float) or not 0.0 <= share <= 1.0):
        raise MatchConfigError(f"{where}: 'white_share' must be in [0, 1], got {share!r}")
    terms = data.get("terminations", {})
    if not isinstance(terms, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in terms.items()):
        raise MatchConfigError(f"{where}: 'terminations' must map reasons to counts")
    numbers = data.get("pair_numbers", [])
    if not (isinstance(numbers, list) and len(numbers) <= pairs and all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in numbers)
            and len(set(numbers)) == len(numbers)):
        raise MatchConfigError(f"{where}: 'pair_numbers' must list pair numbers once each")
    counted = frozenset(n - 1 for n in numbers)
    below = data.get("unlisted_below", 0)
    if isinstance(below, bool) or not isinstance(below, int) or below < 0:
        raise MatchConfigError(f"{where}: 'unlisted_below' must be a pair number, got {below!r}")
    first_new = max(below - 1, 0)
    if len(counted) < pairs and below == 0:  # an older file: where its pairs end is unknown
        if from_pair is None:
            raise MatchConfigError(
                f"{where} does not list its pairs (written before they were recorded): give "
                f"--from-pair N, above every pair it can hold (it counts {pairs})"
            )
        if from_pair <= pairs:
            raise MatchConfigError(f"--from-pair {from_pair}: {where} counts {pairs} pairs, "
                                   "so its pairs reach at least that number")
        first_new = from_pair - 1
    elif from_pair is not None:
        top = max([first_new, *(k + 1 for k in counted)])
        if from_pair <= top:
            raise MatchConfigError(f"--from-pair {from_pair}: {where} may hold pair {top}")
        first_new = from_pair - 1
    white = float(share) * 2 * pairs if pairs else 0.0
    tally = Tally(wins, draws, losses, (penta[0], penta[1], penta[2], penta[3], penta[4]), white)
    return Prior(tally, dict(terms), counted, first_new, crossing)


def recorded_crossing(sprt: Any, pairs: int, where: str) -> SprtCrossing | None:
    """The SPRT crossing a result's `sprt` entry records (`MatchResult.to_dict`), or None; a
    result of `pairs` pairs; MatchConfigError names `where` if the entry is malformed."""
    crossed = sprt.get("crossed") if isinstance(sprt, dict) else None
    if crossed is None:
        return None
    decisions = {d.value: d for d in SprtDecision if d is not SprtDecision.CONTINUE}
    decision = sprt.get("decision")
    llr = crossed.get("llr") if isinstance(crossed, dict) else None
    if not (isinstance(crossed, dict) and isinstance(decision, str) and decision in decisions
            and isinstance(llr, int | float) and not isinstance(llr, bool)
            and math.isfinite(_as_float(llr))):
        raise MatchConfigError(f"{where}: 'sprt' records a crossing {_shown(crossed)} with "
                               f"decision {_shown(decision)}: not an SPRT decision")
    at = _count(crossed, "pairs", f"{where}: sprt crossing")
    if not 0 < at <= pairs:
        raise MatchConfigError(f"{where}: the SPRT crossed at {at} pairs of {pairs}")
    return SprtCrossing(at, float(llr), decisions[decision])


def _as_float(x: int | float) -> float:
    """`x` as a float; NaN for an integer too large for one (a hostile file's 10^400)."""
    try:
        return float(x)
    except OverflowError:
        return math.nan


def _shown(value: Any) -> str:
    """`value` for an error message, cut to 80 characters (a hostile file's may be huge)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["MAX_COUNT", "MAX_RESULT_BYTES", "Prior", "read_prior", "recorded_crossing"]
