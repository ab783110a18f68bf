"""Agent names -> factories, with an options string, and the strongest available agent.

A spec is ``NAME`` or ``NAME:key=value,key=value`` (a value may itself contain ``=``, as in
``obscuro:budget=iters=4000``), or ``cmd:COMMAND ARGS`` for an external engine speaking
`caligo-fow` v1 (split like a shell line). `create(spec)` builds a fresh agent; the match runner
sends spec strings to its worker processes, so every agent is built where it plays.

Registering an agent is one call, made here for Caligo's own agents (factories are
``"module:attribute"`` strings, imported only when used) or by a plug-in through the
``caligo.agents`` entry-point group (the entry point is a function that calls `register`)::

    register("obscuro", "caligo.agents.obscuro:ObscuroAgent.from_options", strength=100,
             requires=stockfish_missing, description="Obscuro search (Zhang & Sandholm 2025)")

`strongest()` names the registered agent with the highest `strength` whose `requires` check
passes: the web page plays it, so a new, stronger agent takes over without changes to callers.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from caligo.agents.base import Agent
from caligo.agents.resources import EngineResources
from caligo.errors import CaligoError

log = logging.getLogger(__name__)

Factory = Callable[[Mapping[str, str]], Agent]
_NAME_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")
EXTERNAL = "cmd"
"""The spec prefix of an external engine command."""


class AgentSpecError(CaligoError, ValueError):
    """A malformed or unknown agent spec; the message quotes it."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec: agent name and options, or the command of an external engine."""

    text: str
    name: str
    options: tuple[tuple[str, str], ...] = ()
    command: tuple[str, ...] = ()

    @property
    def external(self) -> bool:
        """True for ``cmd:`` specs."""
        return self.name == EXTERNAL

    @property
    def label(self) -> str:
        """A short display name (PGN tags, progress lines)."""
        if self.external:
            return self.command[0].rsplit("/", 1)[-1] if self.command else EXTERNAL
        return self.text


def parse_spec(text: str) -> AgentSpec:
    """Parse an agent spec (see the module docstring); raise AgentSpecError quoting it."""
    if not isinstance(text, str) or not text.strip():
        raise AgentSpecError(f"empty agent spec: {text!r}")
    text = text.strip()
    name, sep, rest = text.partition(":")
    name = name.strip()
    if name == EXTERNAL:
        try:
            command = tuple(shlex.split(rest))
        except ValueError as exc:
            raise AgentSpecError(f"invalid engine command in {text!r}: {exc}") from None
        if not command:
            raise AgentSpecError(f"no command after 'cmd:' in {text!r}")
        return AgentSpec(text, EXTERNAL, (), command)
    if not _NAME_RE.match(name):
        raise AgentSpecError(f"invalid agent name {name!r} in spec {text!r}")
    options: list[tuple[str, str]] = []
    if sep and rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key:
                raise AgentSpecError(f"invalid option {item!r} in spec {text!r} (want key=value)")
            if any(k == key for k, _ in options):
                raise AgentSpecError(f"option {key!r} given twice in spec {text!r}")
            options.append((key, value.strip()))
    return AgentSpec(text, name, tuple(options))


@dataclass(frozen=True)
class AgentInfo:
    """A registered agent."""

    name: str
    factory: str | Factory
    strength: int = 0
    description: str = ""
    requires: Callable[[], str | None] | None = None
    """Returns why the agent cannot run here (e.g. "stockfish not found"), or None."""

    def unavailable(self) -> str | None:
        """Why the agent cannot run on this machine, or None when it can."""
        return None if self.requires is None else self.requires()

    def build(self, options: Mapping[str, str], resources: EngineResources | None = None
              ) -> Agent:
        """Resolve the factory and call it with the options (and the worker's shared
        `resources`, when given and the factory takes a `resources` argument)."""
        factory = self.factory
        if isinstance(factory, str):
            factory = _resolve(factory)
        if resources is not None and _takes_resources(factory):
            return factory(options, resources=resources)  # type: ignore[call-arg]
        return factory(options)


def _takes_resources(factory: Callable[..., Any]) -> bool:
    try:
        return "resources" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _resolve(path: str) -> Factory:
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


_REGISTRY: dict[str, AgentInfo] = {}
_PLUGINS_LOADED = False


def register(
    name: str,
    factory: str | Factory,
    strength: int = 0,
    description: str = "",
    requires: Callable[[], str | None] | None = None,
    replace: bool = False,
) -> None:
    """Add an agent under `name` (an error if the name is taken, unless `replace`)."""
    if not _NAME_RE.match(name) or name == EXTERNAL:
        raise AgentSpecError(f"invalid agent name: {name!r}")
    if name in _REGISTRY and not replace:
        raise AgentSpecError(f"agent {name!r} is already registered")
    _REGISTRY[name] = AgentInfo(name, factory, strength, description, requires)


def _load_plugins() -> None:
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    for ep in entry_points(group="caligo.agents"):
        try:
            ep.load()()
        except Exception as exc:  # a broken plug-in must not break the built-in agents
            log.warning("agent plug-in %s failed to register: %s", ep.name, exc)


def agents() -> list[AgentInfo]:
    """Every registered agent, strongest first."""
    _load_plugins()
    return sorted(_REGISTRY.values(), key=lambda a: (-a.strength, a.name))


def info(name: str) -> AgentInfo:
    """The registration of `name`; raise AgentSpecError naming the known agents."""
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) + f", {EXTERNAL}:COMMAND"
        raise AgentSpecError(f"unknown agent {name!r} (known: {known})") from None


def create(spec: str | AgentSpec, resources: EngineResources | None = None) -> Agent:
    """Build a fresh agent from a spec string or a parsed spec; `resources`: a worker's shared
    processes (`caligo.agents.resources`), which agents that use Stockfish then borrow."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.external:
        from caligo.agents.external import ExternalAgent

        return ExternalAgent(parsed.command)
    entry = info(parsed.name)
    reason = entry.unavailable()
    if reason:
        raise AgentSpecError(f"agent {parsed.name!r} is not available here: {reason}")
    try:
        return entry.build(dict(parsed.options), resources)
    except (ValueError, TypeError) as exc:
        raise AgentSpecError(f"invalid options in {parsed.text!r}: {exc}") from None


def strongest() -> str:
    """The name of the strongest registered agent that can run on this machine."""
    for entry in agents():
        if entry.unavailable() is None:
            return entry.name
    raise AgentSpecError("no agent can run on this machine")  # pragma: no cover - random always can


register(
    "random",
    "caligo.agents.random_agent:RandomAgent.from_options",
    strength=0,
    description="uniform over the legal moves (options: seed=N, policy=0|1)",
)
register(
    "zs21",
    "caligo.agents.zs21.agent:ZS21Agent.from_options",
    strength=50,
    description="ZS21 (Zhang & Sandholm 2021, appendix D): nested 1-KLSS with exact LP solves "
    "(options: budget=mt=1|iters=N, eval=auto|stockfish|simple, seed=N, particles=L, "
    "penalty=text|algorithm|off, nodes=N, belief=N, stockfish=PATH; docs/engine.md)",
)


def _stockfish_missing() -> str | None:
    from caligo.fow.stockfish import StockfishError, find_stockfish

    try:
        find_stockfish()
    except StockfishError as exc:
        return str(exc)
    return None


register(
    "obscuro",
    "caligo.agents.obscuro:ObscuroAgent.from_options",
    strength=100,
    description="Obscuro search (Zhang & Sandholm 2025): KLUSS + one-sided GT-CFR + PCFR+, "
    "Stockfish leaves "
    "when found (options: budget=auto|iters=N|mt=S, eval=auto|stockfish|simple|simple-see, "
    "ablation=none|no_purify|klss|two_sided|uniform_prior|all_off|simple_eval, "
    "subgame=kluss|klss|common_knowledge, preset=obscuro|safe|obscuro_fix, "
    "carry=profile_only|profile_and_regrets, expand=R, roots=N, rootshare=F, prior=T, "
    "expanders=N, engines=N, nodes=N, belief=N, bthreads=N, bshare=F, sfdepth=N, "
    "redraw=uniform|last_seen, sample=uniform|last_seen, seed=N, stockfish=PATH; "
    "docs/engine.md)",
)
register(
    "stockfish-pi",
    "caligo.agents.stockfish_pi:StockfishPIAgent.from_options",
    strength=20,
    description="Stockfish's move in one position sampled from P, the naive baseline "
    "(options: depth=N, seed=N, stockfish=PATH)",
    requires=_stockfish_missing,
)

register(
    "caligo",
    "caligo.agents.ladder:LevelAgent.from_options",
    strength=200,
    description="the strength ladder: level=1 (random moves) to level=7 (Obscuro, 400 search "
    "steps), each a fixed budget measured against its neighbours (options: level=N, seed=N)",
    requires=_stockfish_missing,
)

__all__ = [
    "EXTERNAL",
    "AgentInfo",
    "AgentSpec",
    "AgentSpecError",
    "agents",
    "create",
    "info",
    "parse_spec",
    "register",
    "strongest",
]
