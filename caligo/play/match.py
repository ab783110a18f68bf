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
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from caligo.agents.base import UNTIMED, Agent, TimeControl
from caligo.agents.registry import AgentSpecError, create, info, parse_spec
from caligo.play.errors import MatchConfigError
from caligo.play.openings import Opening, read_openings
from caligo.play.pgn import session_pgn
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig
from caligo.play.stats import (
    EloEstimate,
    SprtConfig,
    SprtCrossing,
    SprtDecision,
    SprtResult,
    Tally,
)
from caligo.play.storage import StoredGame, stored_game

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
    cpus_per_pair: int = 1
    """CPUs a Ray actor reserves for its pair (an engine's threads: Obscuro's solver and
    `expanders`); the local backends run one pair per process."""

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
        if not isinstance(self.cpus_per_pair, int) or self.cpus_per_pair < 1:
            raise MatchConfigError(
                f"cpus per pair must be a positive integer, got {self.cpus_per_pair!r}"
            )
        if self.cpus_per_pair != 1 and self.backend is not Backend.RAY:
            raise MatchConfigError(
                f"cpus per pair ({self.cpus_per_pair}) is a Ray reservation: the local "
                "backend runs one pair per process"
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
    pair_numbers: tuple[int, ...] = ()
    """The 1-based numbers of the pairs counted, so that a continuation (`caligo.play.
    continuation`) plays none of them again."""
    unlisted_below: int = 0
    """When a continued file did not list its pairs: the number all of them lie below (the
    counts hold more pairs than `pair_numbers`); 0 otherwise."""
    sprt_crossing: SprtCrossing | None = None
    """Where the SPRT decided, when it did: its decision is the test's, whatever the pairs
    finished after it (counted in `tally` and `sprt`) did to the LLR."""

    @property
    def sprt_decision(self) -> SprtDecision | None:
        """The test's decision: the crossing's, else where the final LLR stands."""
        if self.sprt_crossing is not None:
            return self.sprt_crossing.decision
        return self.sprt.decision if self.sprt is not None else None

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
        out["pair_numbers"] = list(self.pair_numbers)
        if self.unlisted_below:
            out["unlisted_below"] = self.unlisted_below
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
                "decision": (self.sprt_decision or self.sprt.decision).value,
            }
            if self.sprt_crossing is not None:
                out["sprt"]["crossed"] = self.sprt_crossing.to_dict()
        return out


def _white_score(result: str) -> float:
    return {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)


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
    "read_openings",
]
