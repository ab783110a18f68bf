"""`ObscuroAgent`: the Obscuro engine of Zhang & Sandholm 2025 playing Fog of War chess.

One move, as Obscuro, Fig. 8 and docs/design.md, "One move of Obscuro's search" describe it:

1. **P update** (`observe`): the exact set P of positions consistent with the agent's
   observations (`caligo.fow.BeliefSet` through `FowBelief`), updated after every ply. Its memory
   cap (`ObscuroConfig.belief_cap` positions) is reported: past it P is a uniform subsample and
   the analysis says `belief_exact: false`.
2. **Subgame** (`act`): the KLUSS subgame of Fig. 9 from the previous tree, topped up with
   positions sampled from P (`caligo.search.construct.build_kluss`, run by `SearchAgent`).
3. **Search** with the move's budget: a fixed number of PCFR+ iterations (the deterministic
   schedule: machine-independent, bit-identical for a seed; for matches) or a time budget (one
   solver thread and `expanders` expander threads; the expanders stop first, section 3.4).
4. **Purify** (Fig. 8, C.8) and play.

The evaluator is Stockfish (`StockfishPool`, one depth-1 MultiPV call per expanded leaf, Obscuro,
appendix C.5) when the binary is found, the built-in `SimpleEvaluator` otherwise (`eval=auto`), or
either one on request. `Ablation` presets turn off one technique of Obscuro, section 4.1 each (or
all four, or swap in the simple evaluation).

**Time management** (`TimeManager`): solvency first. For a clock, a move may use
`(remaining - reserve) / moves_left + inc_share * increment`, capped at `max_share` of the
usable clock; a move time is the allotment itself; the referee's deadline bounds both. The
search's budget is fixed when the search starts, from what is left of the allotment after the
subgame's construction, minus the P update of the opponent's ply just received (on the clock for
an engine behind a pipe), a safety margin and the expected read-out. Under a short allotment
fewer roots are sampled, so their evaluation never eats the move.

P's memory cap: when the capped subsample loses every position consistent with an
observation, the observations since the last exact P are replayed with fresh sampling salts;
if none survives, P is given up for the rest of the game (the agent then captures a visible king
or plays a uniformly drawn legal move) rather than crashing.

Stockfish processes: the search starts fresh expander threads at every move, and
`StockfishPool` binds an engine to a thread, so a plain pool would start new processes every
move. `SlotPool` binds engines to expander *slots* instead (slot i of every search reuses the
same process), and the calling thread to one more engine.

Options (`obscuro:key=value,...`, `ObscuroConfig.from_options`): see `OPTIONS_HELP`.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision, TcKind, TimeControl
from caligo.agents.fow_search import FowBelief, FowEvaluator, FowSearchGame, compact_arena
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.errors import FowError
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.fow.position import KING, move_to_uci
from caligo.fow.stockfish import (
    StockfishConfig,
    StockfishEngine,
    StockfishError,
    StockfishPool,
    find_stockfish,
)
from caligo.search.agent import SearchAgent
from caligo.search.config import (
    Expansion,
    FirstDecision,
    Iterations,
    Purification,
    ResolvePrior,
    Schedule,
    SearchConfig,
    SearchResult,
    Seconds,
    SubgameKind,
)
from caligo.search.engine import ExpansionStats, GrowingTreeSearch
from caligo.search.purify import purify

log = logging.getLogger(__name__)

__all__ = [
    "OPTIONS_HELP",
    "Ablation",
    "Budget",
    "BudgetKind",
    "EvalChoice",
    "ObscuroAgent",
    "ObscuroConfig",
    "ObscuroConfigError",
    "SlotPool",
    "TimeManager",
    "TimeManagerConfig",
    "stockfish_available",
]


class ObscuroConfigError(CaligoError, ValueError):
    """A malformed Obscuro option or configuration field; the message quotes it."""


class ObscuroSearchMismatch(CaligoError):
    """The searched infoset's moves differ from the referee's legal moves (a bug)."""


class EvalChoice(Enum):
    """Which leaf evaluator the search uses."""

    AUTO = "auto"  # Stockfish when the binary is found, else the built-in evaluation
    STOCKFISH = "stockfish"  # Obscuro, appendix C.5 (an error when the binary is missing)
    SIMPLE = "simple"  # material + visible squares (Obscuro, section 4.1, ablation 6)


class Ablation(Enum):
    """Obscuro, section 4.1: the agent with one technique turned off (or all four)."""

    NONE = "none"  # full Obscuro
    NO_PURIFY = "no_purify"  # 1: mix over all stable actions, also under Resolve, no top-3
    KLSS = "klss"  # 2: 1-KLSS, the searcher's nodes in I^2 minus I frozen at the blueprint
    TWO_SIDED = "two_sided"  # 3: two-sided GT-CFR (both players explore)
    UNIFORM_PRIOR = "uniform_prior"  # 4: Resolve picks the root infoset uniformly
    ALL_OFF = "all_off"  # 5: all four of the above
    SIMPLE_EVAL = "simple_eval"  # 6: the simple evaluation instead of Stockfish

    def apply(self, config: SearchConfig) -> SearchConfig:
        """The search configuration with this ablation's switches turned."""
        changes: dict[str, Any] = {}
        if self in (Ablation.KLSS, Ablation.ALL_OFF):
            changes["subgame"] = SubgameKind.KLSS
        if self in (Ablation.TWO_SIDED, Ablation.ALL_OFF):
            changes["expansion"] = Expansion.TWO_SIDED
        if self in (Ablation.UNIFORM_PRIOR, Ablation.ALL_OFF):
            changes["resolve_prior"] = ResolvePrior.UNIFORM
        return replace(config, **changes) if changes else config

    @property
    def purifies(self) -> bool:
        """False for the ablations that play Obscuro's "purification off" policy."""
        return self not in (Ablation.NO_PURIFY, Ablation.ALL_OFF)


class BudgetKind(Enum):
    """Where a move's budget comes from."""

    AUTO = "auto"  # the referee's time control (iterations, move time or clock)
    ITERATIONS = "iterations"  # a fixed number of solver iterations (deterministic)
    MOVETIME = "movetime"  # a fixed time per move (kept inside the referee's clock)


DEFAULT_UNTIMED_MS = 1000
"""Move time when neither the options nor the referee give a budget."""
NODES_PER_S_STOCKFISH = 60_000
NODES_PER_S_SIMPLE = 300_000
"""Tree growth to size an arena for a time budget (about what `caligo bench engine` measures
on 2 cores)."""
MIN_CAPACITY = 100_000
MIN_TIMED_CAPACITY = 32_768
"""Arena rows on top of the growth under an iteration / a time budget (a time budget's arena
is allocated on the clock: 100k rows cost about 15 ms)."""
MIN_SEARCH_S = 0.002
REPAIR_ATTEMPTS = 3
"""Replays of a lost subsample of P with fresh salts before P is given up."""


@dataclass(frozen=True)
class Budget:
    """The agent's own budget option: ``auto``, ``iters=N`` or ``mt=SECONDS``."""

    kind: BudgetKind = BudgetKind.AUTO
    iterations: int = 0
    movetime_ms: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, BudgetKind):
            raise ObscuroConfigError(f"invalid budget kind: {self.kind!r}")
        if self.kind is BudgetKind.ITERATIONS and not (
            isinstance(self.iterations, int) and self.iterations >= 1
        ):
            raise ObscuroConfigError(f"an iteration budget must be >= 1: {self.iterations!r}")
        if self.kind is BudgetKind.MOVETIME and not (
            isinstance(self.movetime_ms, int) and self.movetime_ms >= 1
        ):
            raise ObscuroConfigError(f"a move time must be >= 1 ms: {self.movetime_ms!r}")

    @classmethod
    def parse(cls, text: str) -> Budget:
        """``auto`` | ``iters=N`` | ``mt=SECONDS`` (the forms of `TimeControl.parse`)."""
        t = text.strip().lower()
        if t in ("auto", "", "none"):
            return cls()
        try:
            tc = TimeControl.parse(t)
        except CaligoError:
            tc = TimeControl()
        if tc.kind is TcKind.ITERATIONS:
            return cls(BudgetKind.ITERATIONS, iterations=tc.iterations)
        if tc.kind is TcKind.MOVETIME:
            return cls(BudgetKind.MOVETIME, movetime_ms=tc.movetime_ms)
        raise ObscuroConfigError(f"invalid budget {text!r} (expected auto, iters=N or mt=SECONDS)")

    def __str__(self) -> str:
        if self.kind is BudgetKind.ITERATIONS:
            return f"iters={self.iterations}"
        if self.kind is BudgetKind.MOVETIME:
            return f"mt={self.movetime_ms / 1000:g}"
        return "auto"


# --- time management -------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeManagerConfig:
    """Knobs of the time manager (module docstring); times in milliseconds.

    game_moves: expected own moves in a game (Obscuro, appendix D: 116.6 plies on average);
    min_moves_left: the fewest moves the remaining clock is planned for; inc_share: the share
    of the increment a move may spend; max_share: the largest share of the usable clock one
    move may take; reserve_ms: clock never planned (process jitter, the referee's latency);
    safety_ms + safety_share * allotment: slack left between the search's end and the
    allotment's (a loaded machine delays the threads' stop and the read-out); min_search_ms: the
    shortest search; root_share: the largest share of a move the sampled roots' evaluation
    may take (fewer roots are sampled past it).
    """

    game_moves: int = 55
    min_moves_left: int = 12
    inc_share: float = 0.75
    max_share: float = 0.2
    reserve_ms: float = 300.0
    safety_ms: float = 20.0
    safety_share: float = 0.08
    min_search_ms: float = 2.0
    root_share: float = 0.3

    def __post_init__(self) -> None:
        for name in ("game_moves", "min_moves_left"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ObscuroConfigError(f"TimeManagerConfig.{name} must be an int >= 1: {v!r}")
        for name in ("inc_share", "max_share", "root_share", "safety_share"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not 0.0 < v <= 1.0:
                raise ObscuroConfigError(f"TimeManagerConfig.{name} must be in (0, 1]: {v!r}")
        for name in ("reserve_ms", "safety_ms", "min_search_ms"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise ObscuroConfigError(f"TimeManagerConfig.{name} must be >= 0: {v!r}")


@dataclass(frozen=True)
class TimePlan:
    """One move's plan (ms from the start of `act`): the allotment, when the search must end,
    and how many roots may be sampled."""

    allot_ms: float
    search_end_ms: float
    roots: int


class TimeManager:
    """Solvency-first budgets for a clock or a move time (module docstring).

    `plan(clock, own_moves, belief_ms, min_roots)` gives the move's plan; `record(construct_ms,
    sampled, tail_ms)` feeds back what the move cost around the search (the subgame's
    construction per sampled root, and the read-out after the search), so later plans leave
    room for it. The estimates follow an increase at once and a decrease slowly: flagging
    costs the game, a few wasted milliseconds do not.
    """

    def __init__(self, config: TimeManagerConfig | None = None) -> None:
        self.config = config if config is not None else TimeManagerConfig()
        self.per_root_ms = 0.7  # about one Stockfish call per sampled root (docs/engine.md)
        self.tail_ms = 10.0  # from the search's end to the answer

    def allotment(self, clock: Clock, own_moves: int) -> float:
        """Milliseconds this move may take in all, from the clock alone."""
        c = self.config
        if clock.kind is TcKind.MOVETIME and clock.movetime_ms is not None:
            total = float(clock.movetime_ms)
        elif clock.kind is TcKind.CLOCK and clock.remaining_ms is not None:
            usable = max(0.0, float(clock.remaining_ms) - c.reserve_ms)
            moves_left = max(c.min_moves_left, c.game_moves - own_moves)
            inc = float(clock.increment_ms)
            total = min(usable / moves_left + c.inc_share * inc,
                        c.max_share * usable + c.inc_share * inc,
                        max(0.0, float(clock.remaining_ms) - c.safety_ms) / 2)
        else:
            total = float(DEFAULT_UNTIMED_MS)
        if clock.deadline_ms is not None:
            total = min(total, float(clock.deadline_ms))
        return max(0.0, total)

    def plan(self, clock: Clock, own_moves: int, belief_ms: float, min_roots: int) -> TimePlan:
        """The move's plan (module docstring). The opponent ply's P update (`belief_ms`) ran
        before `act` but on the referee's clock for an engine behind a pipe, so it is paid."""
        c = self.config
        total = self.allotment(clock, own_moves)
        end = total - belief_ms - c.safety_ms - c.safety_share * total - self.tail_ms
        roots = min_roots
        if min_roots and self.per_root_ms * min_roots > c.root_share * max(end, 0.0):
            roots = int(c.root_share * max(end, 0.0) / max(self.per_root_ms, 1e-3))
            roots = max(1, min(min_roots, roots))
        return TimePlan(total, end, roots)

    def record(self, construct_ms: float, sampled: int, tail_ms: float) -> None:
        """Feed back one move's construction time, its sampled roots and its tail (ms)."""
        if sampled >= 8:
            per_root = construct_ms / sampled
            self.per_root_ms = per_root if per_root > self.per_root_ms else (
                0.8 * self.per_root_ms + 0.2 * per_root)
        self.tail_ms = tail_ms if tail_ms > self.tail_ms else 0.8 * self.tail_ms + 0.2 * tail_ms


# --- Stockfish engines bound to expander slots -----------------------------------------------


class SlotPool(StockfishPool):
    """A `StockfishPool` whose engines belong to expander slots, not threads (module docstring).

    `bind(slot)` makes the calling thread use slot `slot`'s engine; unbound threads share one
    more engine (the agent calls from one thread at a time outside the search). Caches and
    counters are the pool's.
    """

    def __init__(self, config: StockfishConfig | None = None) -> None:
        super().__init__(config)
        self._slots: dict[int, StockfishEngine] = {}
        self._slot_lock = threading.Lock()
        self._bound = threading.local()

    def start(self, slots: int) -> None:
        """Start the calling thread's engine and those of slots 0 .. slots-1 now (off the
        clock: a process takes about 0.1 s to start)."""
        bound = getattr(self._bound, "slot", None)
        try:
            for slot in range(-1, slots):
                self._bound.slot = slot
                self.engine()
        finally:
            self._bound.slot = -1 if bound is None else bound

    def bind(self, slot: int) -> None:
        """Use slot `slot`'s engine on the calling thread from now on."""
        self._bound.slot = int(slot)

    def engine(self) -> StockfishEngine:
        """The engine of the calling thread's slot, started on first use."""
        slot = int(getattr(self._bound, "slot", -1))
        with self._slot_lock:
            eng = self._slots.get(slot)
            if eng is not None and not eng.closed:
                return eng
            if self._closed:
                raise StockfishError("the Stockfish pool was closed")
            eng = StockfishEngine(self.path, self.config)
            self._slots[slot] = eng
            with self._lock:
                self._engines.append(eng)
        return eng


def stockfish_available(path: str | None = None) -> bool:
    """True when a Stockfish executable is found (`find_stockfish`)."""
    try:
        find_stockfish(path)
    except StockfishError:
        return False
    return True


# --- configuration ---------------------------------------------------------------------------


OPTIONS_HELP = (
    "budget=auto|iters=N|mt=SECONDS, eval=auto|stockfish|simple, ablation=none|no_purify|klss|"
    "two_sided|uniform_prior|all_off|simple_eval, subgame=kluss|klss|common_knowledge (the "
    "subgame when no ablation overrides it), expand=R (expansions per iteration under an "
    "iteration budget), roots=N, expanders=N, nodes=N (arena capacity), belief=N (P cap), "
    "seed=N, stockfish=PATH"
)


@dataclass(frozen=True)
class ObscuroConfig:
    """Everything an `ObscuroAgent` needs; validated at construction.

    budget: the agent's own budget (`auto`: the referee's time control). evaluator, ablation:
    above. subgame: the subgame built at a decision (KLUSS in Obscuro; the `klss` ablations
    override it). expand_ratio: leaf expansions per solver iteration under an iteration budget (the
    deterministic schedule spreads them over the iterations). min_roots: Fig. 9's
    MININFOSETSIZE. expanders: expander threads under a time budget. max_nodes: the arena's
    capacity. belief_cap: P's memory cap in positions. seed: mixed into every game's seed.
    stockfish: the StockfishPool settings (path, own-call cap, ...). time: the time manager.
    """

    budget: Budget = field(default_factory=Budget)
    evaluator: EvalChoice = EvalChoice.AUTO
    ablation: Ablation = Ablation.NONE
    subgame: SubgameKind = SubgameKind.KLUSS
    expand_ratio: float = 0.25
    min_roots: int = 256
    expanders: int = 1
    expander_batch: int = 4
    max_nodes: int = 2_000_000
    belief_cap: int = 2_000_000
    seed: int = 0
    stockfish: StockfishConfig = field(
        default_factory=lambda: StockfishConfig(own_call_cap=8))
    time: TimeManagerConfig = field(default_factory=TimeManagerConfig)

    def __post_init__(self) -> None:
        for name, kind in (("evaluator", EvalChoice), ("ablation", Ablation),
                           ("subgame", SubgameKind),
                           ("budget", Budget), ("stockfish", StockfishConfig),
                           ("time", TimeManagerConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ObscuroConfigError(f"{name} must be a {kind.__name__}: "
                                         f"{getattr(self, name)!r}")
        if not isinstance(self.expand_ratio, int | float) or not (
            math.isfinite(self.expand_ratio) and self.expand_ratio > 0
        ):
            raise ObscuroConfigError(f"expand_ratio must be > 0: {self.expand_ratio!r}")
        for name, lo in (("min_roots", 0), ("expanders", 1), ("expander_batch", 1),
                         ("max_nodes", 1024), ("belief_cap", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ObscuroConfigError(f"{name} must be an int >= {lo}: {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ObscuroConfigError(f"seed must be an int: {self.seed!r}")

    @property
    def uses_stockfish(self) -> bool:
        """Whether games use Stockfish (AUTO resolves to it when the binary is found)."""
        if self.ablation is Ablation.SIMPLE_EVAL or self.evaluator is EvalChoice.SIMPLE:
            return False
        if self.evaluator is EvalChoice.STOCKFISH:
            return True
        return stockfish_available(self.stockfish.path)

    def search_config(self) -> SearchConfig:
        """The search's configuration before a move's budget is set (ablation applied)."""
        base = SearchConfig(
            budget=Iterations(1000), expansions=250, min_roots=self.min_roots,
            subgame=self.subgame,
            expanders=self.expanders, expander_batch=self.expander_batch,
            max_nodes=self.max_nodes, seed=self.seed,
        )
        return self.ablation.apply(base)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ObscuroConfig:
        """Parse registry options (`OPTIONS_HELP`); raise ObscuroConfigError quoting them."""
        known = {"budget", "eval", "ablation", "subgame", "expand", "roots", "expanders", "nodes",
                 "belief", "seed", "stockfish"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ObscuroConfigError(f"unknown option(s) for obscuro: {unknown!r} "
                                     f"(known: {OPTIONS_HELP})")
        kw: dict[str, Any] = {}

        def choice(key: str, kind: type[Enum]) -> Any:
            text = options[key].strip().lower()
            try:
                return kind(text)
            except ValueError:
                names = ", ".join(m.value for m in kind)  # type: ignore[attr-defined]
                raise ObscuroConfigError(f"obscuro: invalid {key} {options[key]!r} "
                                         f"(one of {names})") from None

        def integer(key: str) -> int:
            try:
                return int(options[key])
            except ValueError:
                raise ObscuroConfigError(f"obscuro: {key} must be an integer, got "
                                         f"{options[key]!r}") from None

        if "budget" in options:
            kw["budget"] = Budget.parse(options["budget"])
        if "eval" in options:
            kw["evaluator"] = choice("eval", EvalChoice)
        if "ablation" in options:
            kw["ablation"] = choice("ablation", Ablation)
        if "subgame" in options:
            kw["subgame"] = choice("subgame", SubgameKind)
        if "expand" in options:
            try:
                kw["expand_ratio"] = float(options["expand"])
            except ValueError:
                raise ObscuroConfigError(f"obscuro: expand must be a number, got "
                                         f"{options['expand']!r}") from None
        for key, name in (("roots", "min_roots"), ("expanders", "expanders"),
                          ("nodes", "max_nodes"), ("belief", "belief_cap"), ("seed", "seed")):
            if key in options:
                kw[name] = integer(key)
        if "stockfish" in options:
            kw["stockfish"] = StockfishConfig(path=options["stockfish"], own_call_cap=8)
        config = cls(**kw)
        if config.evaluator is EvalChoice.STOCKFISH and not stockfish_available(
            config.stockfish.path
        ):
            raise ObscuroConfigError("obscuro: eval=stockfish but no Stockfish executable was "
                                     "found (install Debian's `stockfish`)")
        return config


# --- the agent -------------------------------------------------------------------------------


class _TimedSearch(GrowingTreeSearch):
    """`GrowingTreeSearch` whose time budget is fixed when the search starts, not when the
    move starts: the subgame's construction comes first and its length varies, so the search
    gets whatever is left until `deadline` (a `time.perf_counter()` instant)."""

    deadline: float | None = None
    run_end = 0.0

    def run(self, rng_seed: int) -> tuple[int, ExpansionStats, float]:
        if self.deadline is not None and self.config.schedule is Schedule.THREADED:
            left = max(MIN_SEARCH_S, self.deadline - time.perf_counter())
            self.config = replace(self.config, budget=Seconds(left))
        out = super().run(rng_seed)
        self.run_end = time.perf_counter()
        return out


class _Search(SearchAgent):
    """`SearchAgent` whose budget, root count and deadline change from move to move."""

    deadline: float | None = None

    def _engine(self) -> _TimedSearch:
        eng = _TimedSearch(self.game, self.evaluator, self.config, self.seat,
                           evaluator_factory=self._factory, capacity=self._capacity,
                           util_scale=self._util_scale)
        eng.deadline = self.deadline
        return eng

    def set_budget(self, config: SearchConfig, deadline: float | None) -> None:
        """Use `config` (same switches, new budget) and `deadline` from the next search on."""
        self.config = config
        self.deadline = deadline
        eng = self.engine
        if eng is not None:
            eng.config = config
            eng.deadline = deadline

    @property
    def engine(self) -> _TimedSearch | None:
        """The current search (None before the first one)."""
        eng = self._search
        return eng if isinstance(eng, _TimedSearch) else None

    def reset_tree(self) -> None:
        """Forget the tree and the previous value (after a failure)."""
        self._search = None
        self._v_prev = None


def _mix_seed(*parts: int) -> int:
    seq = np.random.SeedSequence([p & 0xFFFFFFFF for p in parts])
    return int(seq.generate_state(1, dtype=np.uint64)[0] & np.uint64(0x7FFFFFFFFFFFFFFF))


def _same(ev: FowEvaluator) -> FowEvaluator:
    return ev


_WARMED: set[str] = set()
"""Which warm-ups this process has run (numba loads a cached kernel on its first call)."""


def _warm_up(stockfish: StockfishConfig | None) -> None:
    """Load every compiled kernel the agent calls before the first timed move: numba loads a
    cached kernel on its first call, 10-60 ms each, which on the clock would cost the first
    moves of a game. Once per process: a few plies between two tiny searches with the
    built-in evaluator in each schedule (so re-rooting, sampling, carrying and compaction all
    run), and one Stockfish leaf and root evaluation through a throwaway pool."""
    from caligo.fow.game import Game
    from caligo.fow.observation import observe

    if "search" not in _WARMED:
        for schedule, budget in ((Schedule.DETERMINISTIC, Iterations(6)),
                                 (Schedule.THREADED, Seconds(0.005))):
            cfg = SearchConfig(budget=budget, schedule=schedule, max_nodes=8192, min_roots=4,
                               expansions=4 if schedule is Schedule.DETERMINISTIC else None)
            seats = []
            for seat in (0, 1):
                game = FowSearchGame()  # one store per player: compaction renumbers it
                ev = FowEvaluator(game, SimpleEvaluator())
                belief = FowBelief(game, seat)
                sa = SearchAgent(game, belief, ev, cfg, evaluator_factory=functools.partial(
                    _same, ev))
                sa.new_game(seat, 0)
                seats.append((sa, belief, game))
            truth = Game()
            for _ in range(6):
                mover = truth.turn
                sa, _, game = seats[mover]
                move = int(sa.act().action)
                truth.push(move)
                for seat, (agent, belief, _) in enumerate(seats):
                    obs = observe(truth.position, seat)
                    belief.expect(obs)
                    agent.observe(observation_key(obs), move if seat == mover else None)
                eng = sa._search
                if eng is not None:
                    compact_arena(game, eng.arena)
        _WARMED.add("search")
    if stockfish is not None and "stockfish" not in _WARMED:
        game = FowSearchGame()
        batch = game.expand(np.array([0]))
        kids = game.positions(batch.state)
        with StockfishPool(replace(stockfish, cache_entries=0)) as pool:
            pool.children(game.positions(np.array([0]))[0], kids,
                          batch.action.astype(np.uint16))
            pool.evaluate(kids[:2])
        _WARMED.add("stockfish")


class ObscuroAgent(AgentBase):
    """The Obscuro engine (module docstring). Build with `ObscuroAgent(config)` or, from the
    registry, `ObscuroAgent.from_options(options)`."""

    def __init__(self, config: ObscuroConfig | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ObscuroConfig()
        self.time_manager = TimeManager(self.config.time)
        self._leaf: LeafEvaluator | None = None
        self._pool: SlotPool | None = None
        self._game: FowSearchGame | None = None
        self._belief: FowBelief | None = None
        self._search: _Search | None = None
        self._checkpoint: tuple[BeliefSet, int] | None = None
        self._reset_game(0)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ObscuroAgent:
        """Build from registry options (`OPTIONS_HELP`)."""
        return cls(ObscuroConfig.from_options(options))

    @property
    def evaluator_name(self) -> str:
        """"stockfish" or "simple": what the leaves are scored with."""
        return "stockfish" if isinstance(self._leaf, StockfishPool) else "simple"

    # --- lifecycle -------------------------------------------------------------------------

    def _close_leaf(self) -> None:
        if self._leaf is not None:
            self._leaf.close()
        self._leaf = None
        self._pool = None

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Reset P, the tree and the evaluator (a fresh Stockfish per game, so a fixed-iteration
        game is a function of its seed: Stockfish's depth-1 scores depend on its history)."""
        super().new_game(color, start_fen, time_control, seed)
        cfg = self.config
        self._close_leaf()
        if cfg.uses_stockfish:
            self._pool = SlotPool(cfg.stockfish)
            self._leaf = self._pool
        else:
            self._leaf = SimpleEvaluator()
        game = FowSearchGame(start_fen)
        self._game = game
        self._belief = FowBelief(game, self.color, BeliefConfig(max_positions=cfg.belief_cap,
                                                               seed=seed & 0xFFFFFFFF))
        slots = itertools.count()
        pool = self._pool
        leaf = self._leaf

        def factory() -> FowEvaluator:  # called once in each expander thread of a search
            if pool is not None:
                pool.bind(next(slots) % cfg.expanders)
            return FowEvaluator(game, leaf)

        self._search = _Search(game, self._belief, FowEvaluator(game, leaf), cfg.search_config(),
                               evaluator_factory=factory, capacity=self._capacity(time_control))
        if self._pool is not None:
            self._pool.start(cfg.expanders)
        _warm_up(cfg.stockfish if self._pool is not None else None)  # off the clock
        game_seed = _mix_seed(cfg.seed, seed, self.color)
        self._search.new_game(self.color, game_seed)
        self._reset_game(game_seed)
        self._checkpoint = (self._belief.set, 0)

    def _reset_game(self, game_seed: int) -> None:
        """The per-game state: the game's generator, counters, and no pending repair."""
        self._rng = np.random.default_rng(game_seed)
        self._own_moves = 0
        self._belief_ms = 0.0
        self._resample = False
        self._fallbacks = 0
        self._lost = False
        self._repairs = 0

    def _capacity(self, tc: TimeControl) -> int:
        """Arena rows for this game's budget, at most `max_nodes`: two arenas are allocated (and
        filled) at the game's first moves, which 2M rows make cost ~0.15 s; a time budget
        reserves four times the growth it expects."""
        cfg = self.config
        rate = NODES_PER_S_STOCKFISH if cfg.uses_stockfish else NODES_PER_S_SIMPLE
        own = cfg.budget
        if own.kind is BudgetKind.ITERATIONS or (
            own.kind is BudgetKind.AUTO and tc.kind is TcKind.ITERATIONS
        ):
            iters = own.iterations if own.kind is BudgetKind.ITERATIONS else tc.iterations
            need = 64 * cfg.expand_ratio * iters
        else:
            if own.kind is BudgetKind.MOVETIME:
                ms = float(own.movetime_ms)
            elif tc.kind is TcKind.MOVETIME:
                ms = float(tc.movetime_ms)
            elif tc.kind is TcKind.CLOCK:
                ms = self.config.time.max_share * tc.initial_ms + tc.increment_ms
            else:
                ms = float(DEFAULT_UNTIMED_MS)
            need = 4.0 * rate * ms / 1000.0
            return int(min(cfg.max_nodes, need + MIN_TIMED_CAPACITY))
        return int(min(cfg.max_nodes, max(MIN_CAPACITY, need + MIN_CAPACITY)))

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Update P (timed: an opponent ply's update counts against the next move)."""
        super().observe(observation, own_move)
        assert self._search is not None and self._belief is not None and self._game is not None
        t0 = time.perf_counter()
        self._belief.expect(observation)
        try:
            self._search.observe(observation_key(observation), own_move)
        except FowError as exc:  # the key has moved on; P has not
            if not self._lost:  # once P is gone (below) only the key follows the game
                self._repair_belief(exc)
        bel = self._belief.set
        if bel.exact and not self._lost:
            self._checkpoint = (bel, len(self.history))
        ms = 1000.0 * (time.perf_counter() - t0)
        if own_move is None:
            self._belief_ms = ms
        else:
            self._own_moves += 1
            eng = self._search.engine
            if eng is not None:  # off the clock: drop store rows the tree no longer holds
                compact_arena(self._game, eng.arena)

    def _repair_belief(self, exc: FowError) -> None:
        """P was capped to a uniform subsample (more than `belief_cap` positions were possible)
        and no position of the subsample survived an observation. Replay the observations
        since the last exact P with fresh sampling salts; if no replay survives, give P up for
        the rest of the game (`act` then plays a safe fallback) instead of crashing."""
        assert self._belief is not None and self._checkpoint is not None
        base, start = self._checkpoint
        log.warning("obscuro: %s; replaying %d plies with new salts", exc,
                    len(self.history) - start)
        for attempt in range(1, REPAIR_ATTEMPTS + 1):
            cfg = replace(base.config, seed=base.config.seed + 7919 * attempt)
            bel = replace(base, config=cfg)
            try:
                for own, obs in self.history[start:]:
                    bel = (bel.update_opponent_move(obs) if own is None
                           else bel.update_own_move(own, obs))
            except FowError:
                continue
            self._belief.set = bel
            self._repairs += 1
            return
        log.error("obscuro: P is lost (no subsample survived %d replays); playing without it",
                  REPAIR_ATTEMPTS)
        self._lost = True

    def force(self, move: int) -> None:
        """Play `move` at this turn instead of searching."""
        assert self._search is not None
        self._search.force(int(move))

    def close(self) -> None:
        """Stop the Stockfish processes."""
        self._close_leaf()

    # --- deciding --------------------------------------------------------------------------

    def _budget(self, clock: Clock) -> tuple[SearchConfig, TimePlan | None]:
        """This move's search configuration and, for a time budget, its plan."""
        cfg = self.config
        base = cfg.search_config()
        if self._resample:
            base = replace(base, first_decision=FirstDecision.SAMPLED)
        own = cfg.budget
        iters: int | None = None
        timed: Clock | None = None
        if own.kind is BudgetKind.ITERATIONS:
            iters = own.iterations
        elif own.kind is BudgetKind.MOVETIME:
            timed = Clock(TcKind.MOVETIME, movetime_ms=own.movetime_ms,
                          deadline_ms=clock.deadline_ms)
            if clock.kind is TcKind.CLOCK:  # never beyond what the game clock allows
                allow = self.time_manager.allotment(clock, self._own_moves)
                timed = replace(timed, movetime_ms=max(1, int(min(own.movetime_ms, allow))))
        elif clock.kind is TcKind.ITERATIONS and clock.iterations:
            iters = int(clock.iterations)
        else:
            timed = clock
        if iters is not None:
            exp = max(1, round(cfg.expand_ratio * iters))
            return replace(base, budget=Iterations(iters), expansions=exp,
                           schedule=Schedule.DETERMINISTIC), None
        assert timed is not None
        plan = self.time_manager.plan(timed, self._own_moves, self._belief_ms, cfg.min_roots)
        budget = Seconds(max(MIN_SEARCH_S, plan.search_end_ms / 1000.0))  # replaced at the start
        return replace(base, budget=budget, expansions=None, schedule=Schedule.THREADED,
                       min_roots=plan.roots), plan

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Search and choose a move among `legal` (module docstring)."""
        t_start = time.perf_counter()
        assert self._search is not None and self._belief is not None
        if not legal:
            raise ValueError("act needs at least one legal move")
        if self._lost:
            return self._without_belief(legal, t_start)
        search_cfg, plan = self._budget(clock)
        sa = self._search
        end = None if plan is None else t_start + plan.search_end_ms / 1000.0
        warm_ms = 0.0
        try:
            if not self._resample and sa.engine is None and self.history:
                # a first decision after the start searches the start first
                # (FirstDecision.TRUE_START); under a time budget that takes half the search
                half = None if end is None else t_start + (end - t_start) / 2
                sa.set_budget(search_cfg, half)
                tw = time.perf_counter()
                sa.warm_start()
                warm_ms = 1000.0 * (time.perf_counter() - tw)
            sa.set_budget(search_cfg, end)
            res = sa.act().search
            move, play = self._choose(res, legal)
        except Exception as exc:
            # a failing search must not lose the game: play a legal move, log it, and let the
            # next decision sample its roots afresh (the tree may not match the game any more)
            log.exception("obscuro: search failed; playing a fallback move")
            return self._fallback(legal, t_start, exc)
        info = self._analysis(res, search_cfg, plan, warm_ms)
        value = res.value if math.isfinite(res.value) else None
        policy = {int(a): float(p) for a, p in zip(res.actions.tolist(), play.tolist(),
                                                  strict=True) if p > 0.0}
        decision = Decision(int(move), policy=policy, value=value, info=info)
        eng = sa.engine
        if plan is not None and eng is not None:
            tail_ms = 1000.0 * (time.perf_counter() - eng.run_end)
            self.time_manager.record(1000.0 * res.time.construct, res.sampled, tail_ms)
        return decision

    def _choose(self, res: SearchResult, legal: Sequence[int]) -> tuple[int, np.ndarray]:
        """Sample the move from the purified policy (or Obscuro's "purification off" one)."""
        assert self._search is not None
        if self.config.ablation.purifies:
            play = res.play
        else:  # mix over every stable action (and a*), whatever the gadget, no top-3 cut
            play = purify(res.policy, res.stable, 0.0, Purification.STABLE_TOP3,
                          max_support=max(1, res.policy.size))
        total = float(play.sum())
        if not total > 0.0 or not np.all(np.isfinite(play)):
            play = np.zeros_like(res.policy)
            play[int(np.argmax(res.policy))] = 1.0
            total = 1.0
        k = int(self._rng.choice(play.size, p=play / total))
        move = int(res.actions[k])
        legal_set = set(int(m) for m in legal)
        if move not in legal_set or set(res.actions.tolist()) != legal_set:
            raise ObscuroSearchMismatch(
                f"searched moves {sorted(res.actions.tolist())[:8]}... differ from the legal "
                f"moves {sorted(legal_set)[:8]}...")
        self._search.force(move)
        return move, play / total

    def _without_belief(self, legal: Sequence[int], t_start: float) -> Decision:
        """P is lost: capture a visible king, else draw a legal move uniformly."""
        obs = self.history[-1][1] if self.history else None
        move = int(legal[int(self._rng.integers(len(legal)))])
        if obs is not None:
            king = obs.pieces[(1 - self.color) * 6 + KING] & obs.visible
            if king:
                sq = king.bit_length() - 1
                move = next((int(m) for m in legal if (int(m) >> 6) & 63 == sq), move)
        assert self._search is not None
        self._search.force(move)
        return Decision(move, info={"belief_lost": True, "repairs": self._repairs,
                                    "ms": round(1000.0 * (time.perf_counter() - t_start), 1)})

    def _fallback(self, legal: Sequence[int], t_start: float, exc: BaseException) -> Decision:
        """A uniformly drawn legal move after a failed search; the tree is dropped."""
        assert self._search is not None
        move = int(legal[int(self._rng.integers(len(legal)))])
        self._search.force(move)
        self._search.reset_tree()
        self._resample = True
        self._fallbacks += 1
        info = {"fallback": f"{type(exc).__name__}: {exc}"[:300], "fallbacks": self._fallbacks,
                "ms": round(1000.0 * (time.perf_counter() - t_start), 1)}
        return Decision(move, info=info)

    def _analysis(self, res: SearchResult, cfg: SearchConfig, plan: TimePlan | None,
                  warm_ms: float) -> dict[str, Any]:
        """The per-move analysis (`Decision.info`): belief, tree, search and time split."""
        assert self._belief is not None and self._search is not None
        eng = self._search.engine
        run_ms = 1000.0 * (res.time.solve + res.time.expand)
        elapsed_ms = 1000.0 * res.time.total + warm_ms
        bel = self._belief.set
        order = np.argsort(-res.policy, kind="stable")
        top = {move_to_uci(int(res.actions[i])): round(float(res.policy[i]), 4)
               for i in order[:8].tolist() if res.policy[i] >= 1e-3}
        t = res.time
        info: dict[str, Any] = {
            "belief": len(bel),
            "belief_exact": bool(bel.exact),
            "belief_seen": int(bel.size_seen),
            "belief_cap": self.config.belief_cap,
            "belief_mb": round(bel.nbytes / 2**20, 2),
            "nodes": res.nodes,
            "infosets": res.infosets,
            "carried_nodes": res.carried_nodes,
            "carried_infosets": res.carried_infosets,
            "roots": res.roots,
            "sampled": res.sampled,
            "depth": res.depth,
            "iterations": res.iterations,
            "expansions": res.expansions,
            "t_half": res.t_half,
            "value": round(res.value, 4) if math.isfinite(res.value) else None,
            "policy": top,
            "stable": int(res.stable.sum()),
            "gadget": res.gadget.value,
            "p_max": round(res.p_max, 4),
            "evaluator": self.evaluator_name,
            "ablation": self.config.ablation.value,
            "budget": (f"iters={cfg.budget.n}" if isinstance(cfg.budget, Iterations)
                       else f"{1000 * eng.config.budget.s:.0f}ms" if eng is not None and
                       isinstance(eng.config.budget, Seconds) else "?"),
            "ms": round(elapsed_ms, 1),
            "time_ms": {
                "belief": round(self._belief_ms, 1),
                "warm_start": round(warm_ms, 1),
                "construct": round(1000 * t.construct, 1),
                "solve": round(1000 * t.solve, 1),
                "expand": round(1000 * t.expand, 1),
                "solve_plus_expand": round(run_ms, 1),
                "search_total": round(elapsed_ms, 1),
            },
        }
        if plan is not None:
            info["plan_ms"] = {"allot": round(plan.allot_ms, 1),
                               "search_end": round(plan.search_end_ms, 1), "roots": plan.roots}
            if eng is not None and eng.deadline is not None:  # > 0: the search ended late
                info["plan_ms"]["late"] = round(1000.0 * (eng.run_end - eng.deadline), 1)
        if self._pool is not None:
            st = self._pool.stats()
            info["stockfish"] = {"leaf_calls": st.leaf_calls, "own_calls": st.own_calls,
                                 "restarts": st.restarts, "fallbacks": st.fallbacks}
        if self._fallbacks:
            info["fallbacks"] = self._fallbacks
        if self._repairs:
            info["belief_repairs"] = self._repairs
        return info
