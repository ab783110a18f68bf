"""The web server's settings and the engine's naming: limits of what a browser may ask for,
the admission constants, `WebConfig`, and how the page names an engine at a strength."""

from __future__ import annotations

from dataclasses import dataclass

from caligo.agents import registry
from caligo.agents.base import TcKind, TimeControl
from caligo.agents.ladder import DEFAULT_LEVEL
from caligo.agents.ladder import level as ladder_level
from caligo.play.workers import WorkerError, parse_workers
from caligo.web.errors import WebConfigError

MIN_INITIAL_MS = 1000
"""The shortest clock a game may start with: a sub-second one cannot be played over a network."""
MAX_INITIAL_MS = 3 * 3600 * 1000
MAX_INCREMENT_MS = 60 * 1000
MAX_MOVETIME_MS = 60 * 1000
MAX_ITERATIONS = 10_000_000
UNTIMED_MOVE_TIMEOUT_MS = 7 * 24 * 3600 * 1000
"""An untimed human may think for days; the session's hang guard must not end the game."""
LAG_MARGIN_MS = 250
"""Grace added to a clock before the flag falls (network lag, as chess.com allows)."""
HUMAN_NAME = "Human"
STARTUP_S = 120.0
"""What an engine's worker may add to a job in which the agent starts (or replays) its game."""
DEFAULT_STRENGTH = TimeControl(TcKind.MOVETIME, movetime_ms=1000)
FIRST_MOVE_MS = 30_000
"""Time each side has for its first move in a timed game before the game is aborted (lichess's
and chess.com's rule: a side's clock starts only after its first move)."""
ADMIT_WINDOW_S = 30.0
"""The span over which the engines' load is measured for admission (`GameHub.engine_full`)."""
ADMIT_WAIT_S = 1.0
"""A recent wait for a worker this long means a queue: no new game until it clears."""
ADMIT_BURST_S = 20.0
"""New games count against `WebConfig.games_per_worker` for this long (their load is then
in the measured span)."""
ADMIT_RETRY_S = 30
"""What a refused creation is told to wait (Retry-After)."""
AGENT_NAMES = {"obscuro": "Obscuro", "zs21": "ZS21", "stockfish-pi": "Stockfish-PI"}
"""How the page names the registry's agents."""
NO_BUDGET_AGENTS = frozenset({"random"})
"""Agents that play the same at any strength: the page offers no strength and names none."""
LADDER_AGENT = "caligo"
"""The agent whose strengths are levels (`caligo.agents.ladder`): the page offers its levels."""


def uses_levels(agent: str) -> bool:
    """Whether the engine `agent` (a registry spec) is the strength ladder."""
    return registry.parse_spec(agent).name == LADDER_AGENT


def level_of(agent: str) -> int:
    """The level a ladder spec names (`caligo:level=N`), the ladder's default when none."""
    options = dict(registry.parse_spec(agent).options)
    return int(options["level"]) if "level" in options else DEFAULT_LEVEL


def with_level(agent: str, number: int) -> str:
    """The ladder spec `agent` at level `number` (its other options kept)."""
    spec = registry.parse_spec(agent)
    options = [f"{k}={v}" for k, v in spec.options if k != "level"] + [f"level={number}"]
    return f"{spec.name}:{','.join(options)}"


def engine_works(agent: str) -> bool:
    """Whether the engine `agent` (a registry spec; a ladder level's engine for the ladder)
    searches at all: a random mover costs the workers nothing."""
    spec = registry.parse_spec(agent)
    if spec.name == LADDER_AGENT:
        spec = registry.parse_spec(ladder_level(level_of(agent)).spec)
    return spec.name not in NO_BUDGET_AGENTS


def uses_strength(agent: str) -> bool:
    """Whether the engine `agent` (a registry spec) plays differently at different strengths."""
    return registry.parse_spec(agent).name not in NO_BUDGET_AGENTS


def strength_text(strength: TimeControl) -> str:
    """A strength in words: "1 s per move", "0.2 s per move", "4,000 search steps"."""
    if strength.kind is TcKind.ITERATIONS:
        return f"{strength.iterations:,} search steps"
    return f"{strength.movetime_ms / 1000:g} s per move"


def engine_label(agent: str, strength: TimeControl) -> str:
    """How the engine is named on the page and in game records: "Caligo (Obscuro, 1 s per
    move)", "Caligo (random moves)" for an agent that ignores the strength."""
    spec = registry.parse_spec(agent)
    if spec.name in NO_BUDGET_AGENTS:
        return f"Caligo ({spec.name} moves)"
    if spec.name == LADDER_AGENT:
        return f"Caligo (level {level_of(agent)})"
    name = AGENT_NAMES.get(spec.name, spec.label)
    return f"Caligo ({name}, {strength_text(strength)})"


@dataclass(frozen=True)
class WebConfig:
    """The server's settings (validated here)."""

    db: str
    agent: str
    workers: str = "threads:1"
    """The engine workers (`caligo.play.workers.make_workers`): "processes:N", "threads:N",
    "ray[:ADDRESS]" or "auto" (`caligo web serve` defaults to "auto": processes)."""
    worker_init: str | None = None
    """"module:function" each worker runs first (registers agents a test defines)."""
    max_live_games: int = 200
    max_message_bytes: int = 4096
    seed: int | None = None
    """Seeds games deterministically (tests); None draws them from the OS."""
    first_move_ms: int = FIRST_MOVE_MS
    """A timed game whose side to move makes no first move within this time is aborted."""
    games_per_minute: int = 10
    """Games one client may create a minute, in bursts of as many (a token bucket); 0: any."""
    games_per_client: int = 3
    """Games of one client live at once (its idle ones are unloaded to make room); 0: any."""
    engine_load: float = 0.0
    """Admission by the engines' load (`GameHub.engine_full`): the share of the workers' time
    the games may ask for, in (0, 1]; 0 turns it off (`caligo web serve` uses 0.7)."""
    games_per_worker: int = 0
    """New games a worker takes within `ADMIT_BURST_S` seconds before any game's load was
    measured (with `engine_load`; once measured, new games are projected at the measured
    share of a game: `GameHub.engine_full`); 0: any."""

    def __post_init__(self) -> None:
        if not (0.0 <= self.engine_load <= 1.0) or self.games_per_worker < 0:
            raise WebConfigError(f"invalid web config: {self!r}")
        if (
            self.max_live_games < 1
            or self.max_message_bytes < 64
            or self.first_move_ms < 1
            or self.games_per_minute < 0
            or self.games_per_client < 0
        ):
            raise WebConfigError(f"invalid web config: {self!r}")
        registry.parse_spec(self.agent)  # raises AgentSpecError quoting it
        try:
            parse_workers(self.workers)
        except WorkerError as exc:
            raise WebConfigError(str(exc)) from None


__all__ = [
    "AGENT_NAMES",
    "DEFAULT_STRENGTH",
    "LADDER_AGENT",
    "NO_BUDGET_AGENTS",
    "WebConfig",
    "engine_label",
    "engine_works",
    "level_of",
    "strength_text",
    "uses_levels",
    "uses_strength",
    "with_level",
]
