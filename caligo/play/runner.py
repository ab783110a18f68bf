"""Running a match (`caligo.play.match` defines it): `run_match` resumes from the store, starts
the backend (`caligo.play.backends`), submits colour-swapped pairs, writes every finished game
to the outputs (PGN, JSON, SQLite) and stops at the last round or an SPRT decision;
`progress_line` is what it reports after each pair."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import IO, Any

from caligo.agents.registry import AgentSpecError
from caligo.play.backends import make_backend
from caligo.play.continuation import Prior, recorded_crossing
from caligo.play.errors import MatchConfigError, PlayError
from caligo.play.match import MatchConfig, MatchResult, Outputs, PairResult, _white_score
from caligo.play.stats import (
    SprtCrossing,
    SprtDecision,
    SprtResult,
    Tally,
    binomial_p,
    elo_estimate,
    sprt,
)
from caligo.play.storage import GameRow, GameStore

log = logging.getLogger(__name__)



def progress_line(
    done: int, total: int, names: tuple[str, str], tally: Tally, sprt_result: SprtResult | None
) -> str:
    """One line per finished pair: W-D-L, pentanomial, Elo +/- CI, LOS, LLR, White's share."""
    parts = [
        f"pair {done}/{total}",
        f"{names[0]} vs {names[1]}",
        f"+{tally.wins} ={tally.draws} -{tally.losses}",
        "penta [" + ",".join(str(c) for c in tally.penta) + "]",
    ]
    if tally.pairs:
        e = elo_estimate(tally.penta)
        parts.append(f"Elo {e.elo:+.1f} +/- {e.elo_error:.1f}")
        parts.append(f"LOS {100 * e.los:.1f}%")
    if sprt_result is not None:
        parts.append(
            f"LLR {sprt_result.llr:.2f} [{sprt_result.lower:.2f}, {sprt_result.upper:.2f}]"
        )
    parts.append(f"white {100 * tally.white_share:.1f}%")
    return "  ".join(parts)


def _crossing(tally: Tally, result: SprtResult | None) -> SprtCrossing | None:
    """The crossing when `result` (the SPRT on `tally`) has left its bounds, else None."""
    if result is None or result.decision is SprtDecision.CONTINUE:
        return None
    return SprtCrossing(tally.pairs, result.llr, result.decision)


def _stored_crossing(store: GameStore | None, config: MatchConfig,
                     pairs: int) -> SprtCrossing | None:
    """The crossing the database's finished result of this match records (`pairs`: the
    pairs counted now): a decided test resumed from its database plays no more pairs,
    whatever the pairs finished after its crossing did to the LLR."""
    if store is None or not pairs:
        return None
    data = store.match_result(config.match_id)
    sprt_data = data.get("sprt") if isinstance(data, dict) else None
    if not isinstance(sprt_data, dict) or sprt_data.get("config") != str(config.sprt):
        return None
    try:
        return recorded_crossing(sprt_data, pairs, f"the database's match {config.match_id}")
    except MatchConfigError as exc:
        log.warning("ignoring the stored SPRT crossing: %s", exc)
        return None


def _crossing_entry(config: MatchConfig, crossing: SprtCrossing) -> dict[str, Any]:
    """The "sprt" entry of a result that records `crossing` (what `_stored_crossing` reads)."""
    return {"config": str(config.sprt), "decision": crossing.decision.value,
            "crossed": crossing.to_dict()}


class _Sinks:
    """The PGN, transcripts and database writers of a running match (driver side)."""

    def __init__(self, outputs: Outputs, store: GameStore | None, fresh: bool) -> None:
        self.store = store
        mode = "w" if fresh else "a"
        self._pgn: IO[str] | None = None
        self._tr: IO[str] | None = None
        if outputs.pgn is not None:
            outputs.pgn.parent.mkdir(parents=True, exist_ok=True)
            self._pgn = open(outputs.pgn, mode)
            assert outputs.transcripts is not None
            self._tr = open(outputs.transcripts, mode)

    def write(self, match_id: str, pair: PairResult) -> None:
        for game in pair.games:
            if self._pgn is not None and game.pgn is not None:
                self._pgn.write(game.pgn + "\n")
            if self._tr is not None and game.transcripts is not None:
                line = {
                    "round": game.round,
                    "game": game.game_id,
                    "white": game.transcripts[0],
                    "black": game.transcripts[1],
                }
                self._tr.write(json.dumps(line, separators=(",", ":")) + "\n")
            if self.store is not None and game.stored is not None:
                self.store.insert(game.stored)
        for f in (self._pgn, self._tr):
            if f is not None:
                f.flush()

    def close(self) -> None:
        for f in (self._pgn, self._tr):
            if f is not None:
                f.close()


def _resume(store: GameStore, config: MatchConfig) -> dict[int, tuple[GameRow, GameRow]]:
    """Finished pairs already in the database (k -> its two games); half pairs are dropped."""
    if not store.open_match(config.match_id, config.identity()):
        return {}
    by_pair: dict[int, dict[int, GameRow]] = {}
    for row in store.match_games(config.match_id):
        try:
            k, g = (int(x) for x in (row.round or "").split("."))
        except ValueError:
            continue
        by_pair.setdefault(k - 1, {})[g] = row
    done = {}
    for k, games in by_pair.items():
        if set(games) == {1, 2}:
            done[k] = (games[1], games[2])
        else:  # a half-played pair is played again whole
            for row in games.values():
                store.delete_game(row.id)
    return done


# Long by design: a match's lifecycle in order (resume from the store, start the backend,
# submit colour-swapped pairs, collect results into every sink, stop), sharing its state.
def run_match(
    config: MatchConfig,
    outputs: Outputs | None = None,
    on_pair: Callable[[str], None] | None = None,
    prior: Prior | None = None,
) -> MatchResult:
    """Play a match to its end (all rounds, or an SPRT decision); return the result.

    `on_pair(line)` receives a progress line after every finished pair. `prior`: counts of an
    earlier run of this match (`caligo.play.continuation`): they start the tally, and its pairs
    are not played again.
    """

    outputs = outputs or Outputs()
    start = time.perf_counter()
    store = GameStore(outputs.db) if outputs.db is not None else None
    prior = prior or Prior()
    done = _resume(store, config) if store is not None else {}
    done = {k: rows for k, rows in done.items() if prior.playable(k)}
    if done:
        log.info("match %s: %d finished pairs found in %s", config.match_id, len(done), outputs.db)
    tally = prior.tally
    terminations: dict[str, int] = dict(prior.terminations)
    counted = set(prior.counted) | set(done)
    for k in sorted(done):
        r1, r2 = done[k]
        w1, w2 = _white_score(r1.result), _white_score(r2.result)
        tally = tally.add_pair(w1, 1.0 - w2, w1, w2)
        for row in (r1, r2):
            terminations[row.termination] = terminations.get(row.termination, 0) + 1
    sprt_result = sprt(tally.penta, config.sprt) if config.sprt and tally.pairs else None
    todo = [k for k in range(config.rounds) if k not in done and prior.playable(k)]
    crossing = None
    if config.sprt is not None:
        crossing = prior.crossing or _stored_crossing(store, config, tally.pairs)
    if crossing is None:
        crossing = _crossing(tally, sprt_result)
    stopped = crossing is not None
    names = (config.engines[0].name, config.engines[1].name)
    plies = 0
    sinks = _Sinks(outputs, store, fresh=not done)
    backend = make_backend(config)
    attempts: dict[int, int] = {}
    try:
        queue = list(reversed(todo)) if not stopped else []
        window = 2 * config.concurrency
        while queue or backend.pending():
            while queue and backend.pending() < window:
                backend.submit(config.pair(queue.pop(), outputs))
            spec, outcome = backend.next_result()
            if isinstance(outcome, AgentSpecError):  # the spec cannot build: no replay helps
                raise PlayError(f"pair {spec.index + 1} cannot start: {outcome}") from outcome
            if isinstance(outcome, BaseException):
                attempts[spec.index] = attempts.get(spec.index, 0) + 1
                if attempts[spec.index] > 2:
                    raise PlayError(
                        f"pair {spec.index + 1} failed three times; last error: {outcome}"
                    ) from outcome
                log.warning("pair %d failed (%s); playing it again", spec.index + 1, outcome)
                queue.append(spec.index)
                continue
            sinks.write(config.match_id, outcome)
            counted.add(spec.index)
            g1, g2 = outcome.games
            tally = tally.add_pair(g1.a_score, g2.a_score, g1.white_score, g2.white_score)
            for g in outcome.games:
                terminations[g.termination] = terminations.get(g.termination, 0) + 1
                plies += g.plies
            if config.sprt is not None:
                sprt_result = sprt(tally.penta, config.sprt)
            if on_pair is not None:
                on_pair(progress_line(tally.pairs, config.rounds, names, tally, sprt_result))
            if not stopped and (crossing := _crossing(tally, sprt_result)) is not None:
                stopped = True
                if store is not None:
                    store.record_crossing(config.match_id, _crossing_entry(config, crossing))
                queue.clear()
                cancelled = backend.cancel_pending()
                log.info(
                    "SPRT %s at %d pairs: cancelled %d pending pairs; the pairs being played "
                    "are still counted", crossing.decision.value, crossing.pairs, cancelled
                )
    finally:
        sinks.close()
        backend.close()
    result = MatchResult(
        match_id=config.match_id,
        engines=names,
        time_controls=(str(config.engines[0].time_control), str(config.engines[1].time_control)),
        rounds=config.rounds,
        tally=tally,
        elo=elo_estimate(tally.penta) if tally.pairs else None,
        sprt_config=config.sprt,
        sprt=sprt_result,
        sprt_crossing=crossing,
        binomial_p=binomial_p(tally.wins, tally.losses),
        terminations=tuple(sorted(terminations.items())),
        stopped_early=stopped,
        resumed_pairs=len(done) + prior.pairs,
        elapsed_s=time.perf_counter() - start,
        plies=plies,
        pair_numbers=tuple(k + 1 for k in sorted(counted)),
        unlisted_below=prior.first_new + 1 if prior.unlisted else 0,
    )
    if store is not None:
        store.finish_match(config.match_id, result.to_dict())
        store.close()
    if outputs.json is not None:
        outputs.json.parent.mkdir(parents=True, exist_ok=True)
        outputs.json.write_text(
            json.dumps({**dict(outputs.meta), **result.to_dict()}, indent=1) + "\n"
        )
    return result
