"""Matches between two engines: colour-swapped pairs, statistics, SPRT, outputs, resume.

The unit of work is a *pair* (fastchess `-rounds N -games 2`, cutechess `-repeat`; docs/design.md,
"Matches"): in pair k, engine A has White in game k.1 and Black in game k.2, from the same opening,
and each engine keeps the same seed in both games (seeds derive from the match seed, k and the
engine, never from the backend or the worker), so a fixed-iteration match is reproducible on any
machine, locally or on Ray. A pair is played whole by one worker (`PairWorker`), which keeps its
engines warm between pairs; a pair whose worker fails is played again from scratch.

Results are counted for engine A against B: W-D-L, the pentanomial pair counts, White's share,
Elo with 95% intervals, LOS, the exact binomial test and, with `SprtConfig`, the GSPRT, which
stops the match as soon as its LLR leaves its bounds (pending pairs are cancelled; pairs already
running finish and count). `run_match` drives any backend (`caligo.play.backends`) and writes
the PGN, the per-side transcripts beside it, the SQLite rows and the JSON result. Rerunning the
same match against the same database skips the pairs it already holds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

import numpy as np

from caligo.agents.base import UNTIMED, Agent, TimeControl
from caligo.agents.registry import AgentSpecError, create, info, parse_spec
from caligo.fow.errors import FowError
from caligo.fow.notation import read_pgns
from caligo.fow.position import STARTING_FEN, from_fen, move_to_uci
from caligo.play.errors import MatchConfigError, PlayError
from caligo.play.pgn import session_pgn
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig
from caligo.play.stats import (
    EloEstimate,
    SprtConfig,
    SprtDecision,
    SprtResult,
    Tally,
    binomial_p,
    elo_estimate,
    sprt,
)
from caligo.play.storage import GameRow, GameStore, StoredGame, stored_game

log = logging.getLogger(__name__)


class Backend(Enum):
    """Where pairs run."""

    LOCAL = "local"
    RAY = "ray"


@dataclass(frozen=True)
class EngineConfig:
    """One side of a match: an agent spec (registry name or ``cmd:...``), its name, its budget."""

    spec: str
    name: str
    time_control: TimeControl = UNTIMED

    def __post_init__(self) -> None:
        try:
            spec = parse_spec(self.spec)
            if not spec.external:
                info(spec.name)  # an unknown name fails here, not in every worker
        except AgentSpecError as exc:
            raise MatchConfigError(str(exc)) from None


@dataclass(frozen=True)
class Opening:
    """A start position and the opening plies forced on both engines (UCI)."""

    fen: str = STARTING_FEN
    moves: tuple[str, ...] = ()


def read_openings(path: str | Path) -> tuple[Opening, ...]:
    """Read openings: a PGN file (each game's start and moves) or EPD/FEN lines.

    Raise MatchConfigError quoting the file and the bad line.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise MatchConfigError(f"cannot read openings {str(path)!r}: {exc}") from None
    out: list[Opening] = []
    try:
        if path.suffix.lower() == ".pgn" or text.lstrip().startswith("["):
            for game in read_pgns(text):
                out.append(Opening(game.start_fen, tuple(move_to_uci(m) for m in game.moves)))
        else:
            for lineno, line in enumerate(text.splitlines(), start=1):
                fields = line.split()
                if not fields or line.lstrip().startswith("#"):
                    continue
                fen = " ".join(fields[:4])
                fen += (
                    " " + " ".join(fields[4:6])
                    if len(fields) >= 6 and fields[4].isdigit()
                    else " 0 1"
                )
                try:
                    from_fen(fen)
                except FowError as exc:
                    raise MatchConfigError(f"{str(path)!r} line {lineno}: {exc}") from None
                out.append(Opening(fen))
    except FowError as exc:
        raise MatchConfigError(f"bad openings file {str(path)!r}: {exc}") from None
    if not out:
        raise MatchConfigError(f"no openings in {str(path)!r}")
    return tuple(out)


@dataclass(frozen=True)
class MatchConfig:
    """A match: two engines, the number of pairs, seeds, openings, SPRT and timing rules."""

    engines: tuple[EngineConfig, EngineConfig]
    rounds: int
    concurrency: int = 1
    seed: int = 0
    openings: tuple[Opening, ...] = ()
    sprt: SprtConfig | None = None
    timemargin_ms: int = 0
    move_timeout_ms: int = 60_000
    share_opponent_clock: bool = False
    backend: Backend = Backend.LOCAL
    address: str | None = None

    def __post_init__(self) -> None:
        if len(self.engines) != 2:
            raise MatchConfigError(f"a match needs two engines, got {len(self.engines)}")
        if self.engines[0].name == self.engines[1].name:
            raise MatchConfigError(
                f"the two engines need different names: {self.engines[0].name!r}"
            )
        if not isinstance(self.rounds, int) or self.rounds < 1:
            raise MatchConfigError(f"rounds must be a positive integer, got {self.rounds!r}")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise MatchConfigError(
                f"concurrency must be a positive integer, got {self.concurrency!r}"
            )
        if self.timemargin_ms < 0 or self.move_timeout_ms <= 0:
            raise MatchConfigError(
                f"invalid timing: margin {self.timemargin_ms} ms, timeout {self.move_timeout_ms} ms"
            )

    def identity(self) -> dict[str, Any]:
        """What makes two matches the same experiment (not rounds, workers or backend)."""
        return {
            "engines": [
                {"spec": e.spec, "name": e.name, "tc": str(e.time_control)} for e in self.engines
            ],
            "seed": self.seed,
            "openings": [{"fen": o.fen, "moves": list(o.moves)} for o in self.openings],
            "timemargin_ms": self.timemargin_ms,
            "move_timeout_ms": self.move_timeout_ms,
            "share_opponent_clock": self.share_opponent_clock,
        }

    @property
    def match_id(self) -> str:
        """A short hash of `identity()`: the database key that lets a match resume."""
        text = json.dumps(self.identity(), sort_keys=True)
        return "m-" + hashlib.sha256(text.encode()).hexdigest()[:12]

    def pair(self, k: int, outputs: Outputs | None = None) -> PairSpec:
        """The work item for pair `k` (0-based)."""
        seeds = tuple(
            int(np.random.SeedSequence([self.seed & 0xFFFFFFFF, k, side]).generate_state(1)[0])
            for side in (0, 1)
        )
        opening = self.openings[k % len(self.openings)] if self.openings else Opening()
        out = outputs or Outputs()
        return PairSpec(
            match_id=self.match_id,
            index=k,
            engines=self.engines,
            seeds=(seeds[0], seeds[1]),
            opening=opening,
            timemargin_ms=self.timemargin_ms,
            move_timeout_ms=self.move_timeout_ms,
            share_opponent_clock=self.share_opponent_clock,
            want_pgn=out.pgn is not None,
            want_transcripts=out.pgn is not None,
            want_rows=out.db is not None,
        )


@dataclass(frozen=True)
class Outputs:
    """Where a match writes: PGN (transcripts beside it), SQLite database, JSON result."""

    pgn: Path | None = None
    db: Path | None = None
    json: Path | None = None
    #: extra fields for the JSON result, e.g. the command line that ran the match
    meta: tuple[tuple[str, str], ...] = ()

    @property
    def transcripts(self) -> Path | None:
        """`FILE.pgn` -> `FILE.transcripts.jsonl`: one line per game with both transcripts."""
        return None if self.pgn is None else self.pgn.with_suffix(".transcripts.jsonl")


@dataclass(frozen=True)
class PairSpec:
    """Everything a worker needs to play one pair (picklable)."""

    match_id: str
    index: int
    engines: tuple[EngineConfig, EngineConfig]
    seeds: tuple[int, int]
    opening: Opening
    timemargin_ms: int
    move_timeout_ms: int
    share_opponent_clock: bool
    want_pgn: bool = False
    want_transcripts: bool = False
    want_rows: bool = False

    def session_config(self, game: int) -> SessionConfig:
        """The session of game 1 (A has White) or 2 (B has White) of this pair."""
        a, b = self.engines
        sa, sb = self.seeds
        order = (a, b, sa, sb) if game == 1 else (b, a, sb, sa)
        return SessionConfig(
            game_id=f"{self.match_id}-{self.index + 1}.{game}",
            start_fen=self.opening.fen,
            time_controls=(order[0].time_control, order[1].time_control),
            seeds=(order[2], order[3]),
            forced=self.opening.moves,
            names=(order[0].name, order[1].name),
            share_opponent_clock=self.share_opponent_clock,
            timemargin_ms=self.timemargin_ms,
            move_timeout_ms=self.move_timeout_ms,
        )


@dataclass(frozen=True)
class GameRecord:
    """One finished match game, as a worker hands it back."""

    round: str
    game_id: str
    white: str
    black: str
    a_white: bool
    result: str
    termination: str
    detail: str
    plies: int
    pgn: str | None = None
    transcripts: tuple[dict[str, Any], dict[str, Any]] | None = None
    stored: StoredGame | None = None

    @property
    def white_score(self) -> float:
        return _white_score(self.result)

    @property
    def a_score(self) -> float:
        return self.white_score if self.a_white else 1.0 - self.white_score


@dataclass(frozen=True)
class PairResult:
    """Both games of a pair."""

    index: int
    games: tuple[GameRecord, GameRecord]
    elapsed_s: float = 0.0


class PairWorker:
    """Plays pairs with engines kept warm between them (one per process or Ray actor)."""

    def __init__(self) -> None:
        self._agents: dict[tuple[int, str], Agent] = {}

    def _agent(self, side: int, spec: str) -> Agent:
        key = (side, spec)
        if key not in self._agents:
            self._agents[key] = create(spec)
        return self._agents[key]

    def play(self, spec: PairSpec) -> PairResult:
        """Play both games of `spec`; return their records."""
        start = time.perf_counter()
        a = self._agent(0, spec.engines[0].spec)
        b = self._agent(1, spec.engines[1].spec)
        records = []
        for game in (1, 2):
            config = spec.session_config(game)
            session = GameSession(config)
            end = play_game(session, (a, b) if game == 1 else (b, a))
            rnd = f"{spec.index + 1}.{game}"
            headers = {"Event": f"caligo match {spec.match_id}", "Round": rnd}
            pgn = session_pgn(session, headers) if spec.want_pgn else None
            transcripts = None
            if spec.want_transcripts:
                transcripts = (session.transcript_dict(0), session.transcript_dict(1))
            stored = stored_game(session, spec.match_id, rnd, headers) if spec.want_rows else None
            records.append(
                GameRecord(
                    round=rnd,
                    game_id=config.game_id,
                    white=config.names[0],
                    black=config.names[1],
                    a_white=game == 1,
                    result=end.result,
                    termination=end.reason.value,
                    detail=end.detail,
                    plies=session.ply,
                    pgn=pgn,
                    transcripts=transcripts,
                    stored=stored,
                )
            )
        return PairResult(spec.index, (records[0], records[1]), time.perf_counter() - start)

    def close(self) -> None:
        """Close every engine (stops external processes)."""
        for agent in self._agents.values():
            try:
                agent.close()
            except Exception as exc:  # closing is best effort
                log.warning("closing an engine failed: %s", exc)
        self._agents.clear()


@dataclass(frozen=True)
class MatchResult:
    """The outcome of a match, from engine A's point of view."""

    match_id: str
    engines: tuple[str, str]
    time_controls: tuple[str, str]
    rounds: int
    tally: Tally
    elo: EloEstimate | None
    sprt_config: SprtConfig | None
    sprt: SprtResult | None
    binomial_p: float
    terminations: tuple[tuple[str, int], ...]
    stopped_early: bool
    resumed_pairs: int
    elapsed_s: float
    plies: int = 0

    @property
    def games_per_s(self) -> float:
        played = (self.tally.pairs - self.resumed_pairs) * 2
        return played / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready result (the `--json` file)."""
        t = self.tally
        out: dict[str, Any] = {
            "match_id": self.match_id,
            "engines": list(self.engines),
            "time_controls": list(self.time_controls),
            "rounds": self.rounds,
            "pairs": t.pairs,
            "games": t.games,
            "wins": t.wins,
            "draws": t.draws,
            "losses": t.losses,
            "pentanomial": list(t.penta),
            "white_share": t.white_share,
            "binomial_p": self.binomial_p,
            "terminations": dict(self.terminations),
            "stopped_early": self.stopped_early,
            "resumed_pairs": self.resumed_pairs,
            "elapsed_s": self.elapsed_s,
            "games_per_s": self.games_per_s,
            "plies": self.plies,
        }
        if self.elo is not None:
            e = self.elo
            out["score"] = e.score
            out["elo"] = {"logistic": e.elo, "ci95": [e.elo_low, e.elo_high], "los": e.los}
            out["nelo"] = {"normalized": e.nelo, "ci95": [e.nelo_low, e.nelo_high]}
        if self.sprt is not None and self.sprt_config is not None:
            out["sprt"] = {
                "config": str(self.sprt_config),
                "llr": self.sprt.llr,
                "bounds": [self.sprt.lower, self.sprt.upper],
                "decision": self.sprt.decision.value,
            }
        return out


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


class _Sinks:
    """The PGN, transcripts and database writers of a running match (driver side)."""

    def __init__(self, outputs: Outputs, store: GameStore | None, fresh: bool) -> None:
        self.store = store
        mode = "w" if fresh else "a"
        self._pgn: IO[str] | None = None
        self._tr: IO[str] | None = None
        if outputs.pgn is not None:
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


def _white_score(result: str) -> float:
    return {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)


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


def run_match(
    config: MatchConfig,
    outputs: Outputs | None = None,
    on_pair: Callable[[str], None] | None = None,
) -> MatchResult:
    """Play a match to its end (all rounds, or an SPRT decision); return the result.

    `on_pair(line)` receives a progress line after every finished pair.
    """
    from caligo.play.backends import make_backend

    outputs = outputs or Outputs()
    start = time.perf_counter()
    store = GameStore(outputs.db) if outputs.db is not None else None
    done = _resume(store, config) if store is not None else {}
    if done:
        log.info("match %s: %d finished pairs found in %s", config.match_id, len(done), outputs.db)
    tally = Tally()
    terminations: dict[str, int] = {}
    for k in sorted(done):
        r1, r2 = done[k]
        w1, w2 = _white_score(r1.result), _white_score(r2.result)
        tally = tally.add_pair(w1, 1.0 - w2, w1, w2)
        for row in (r1, r2):
            terminations[row.termination] = terminations.get(row.termination, 0) + 1
    sprt_result = sprt(tally.penta, config.sprt) if config.sprt and tally.pairs else None
    todo = [k for k in range(config.rounds) if k not in done]
    stopped = sprt_result is not None and sprt_result.decision is not SprtDecision.CONTINUE
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
            g1, g2 = outcome.games
            tally = tally.add_pair(g1.a_score, g2.a_score, g1.white_score, g2.white_score)
            for g in outcome.games:
                terminations[g.termination] = terminations.get(g.termination, 0) + 1
                plies += g.plies
            if config.sprt is not None:
                sprt_result = sprt(tally.penta, config.sprt)
            if on_pair is not None:
                on_pair(progress_line(tally.pairs, config.rounds, names, tally, sprt_result))
            if (
                not stopped
                and sprt_result is not None
                and sprt_result.decision is not SprtDecision.CONTINUE
            ):
                stopped = True
                queue.clear()
                cancelled = backend.cancel_pending()
                log.info(
                    "SPRT %s: cancelled %d pending pairs", sprt_result.decision.value, cancelled
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
        binomial_p=binomial_p(tally.wins, tally.losses),
        terminations=tuple(sorted(terminations.items())),
        stopped_early=stopped,
        resumed_pairs=len(done),
        elapsed_s=time.perf_counter() - start,
        plies=plies,
    )
    if store is not None:
        store.finish_match(config.match_id, result.to_dict())
        store.close()
    if outputs.json is not None:
        outputs.json.write_text(
            json.dumps({**dict(outputs.meta), **result.to_dict()}, indent=1) + "\n"
        )
    return result


def engine_configs(
    specs: Sequence[str], time_controls: Sequence[TimeControl]
) -> tuple[EngineConfig, EngineConfig]:
    """Build the two `EngineConfig`s from spec texts and one or two time controls (odds)."""
    if len(specs) != 2:
        raise MatchConfigError(f"a match needs exactly two --engine options, got {len(specs)}")
    if not time_controls:
        time_controls = [UNTIMED]
    if len(time_controls) > 2:
        raise MatchConfigError(
            f"at most two time controls (one per engine), got {len(time_controls)}"
        )
    tcs = list(time_controls) * (2 if len(time_controls) == 1 else 1)
    labels = []
    for text in specs:
        try:
            labels.append(parse_spec(text).label)
        except AgentSpecError as exc:
            raise MatchConfigError(str(exc)) from None
    if labels[0] == labels[1]:
        labels = [f"{labels[0]}#1", f"{labels[1]}#2"]
    return (
        EngineConfig(specs[0], labels[0], tcs[0]),
        EngineConfig(specs[1], labels[1], tcs[1]),
    )


__all__ = [
    "Backend",
    "EngineConfig",
    "GameRecord",
    "MatchConfig",
    "MatchResult",
    "Opening",
    "Outputs",
    "PairResult",
    "PairSpec",
    "PairWorker",
    "engine_configs",
    "progress_line",
    "read_openings",
    "run_match",
]
