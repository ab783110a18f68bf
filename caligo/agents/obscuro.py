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

**Time** (`caligo.agents.timing`): the move starts when the opponent's move is observed;
`MoveTimer.plan` turns the referee's clock (and the agent's own `budget` option) into the
move's limits, and every stage runs inside them: the P update of the opponent's ply in its
share (`belief_share`; cut short, P is the children of an evenly spread part of the parents,
completed after our move on the opponent's time, or reported as a subsample), the sampled
roots' evaluation up to the construction's share, then the search to the soft instant, never
past the hard one. Each move's analysis says how the time was split (`time_ms`) and what was
planned (`plan`). The move's work runs on the agent's watchdog thread (`caligo.limits.Watchdog`):
a stall that no poll can cut is answered at the plan's answer instant with the emergency move
(`overdue` in the analysis), and the work ends on the opponent's time.

P's memory cap: when the capped subsample loses every position consistent with an
observation, the observations since the last exact P are replayed with fresh sampling salts;
if none survives, P is given up for the rest of the game (the agent then captures a visible king
or plays a uniformly drawn legal move) rather than crashing.

Stockfish processes: the search starts fresh expander threads at every move, and
`StockfishPool` binds an engine to a thread, so a plain pool would start new processes every
move. `SlotPool` (`caligo.fow.stockfish`) binds engines to expander *slots* instead (slot i of
every search reuses the same process), and the calling thread to one more engine. The
processes are started once per agent (its first game) and get `ucinewgame` at every later
one, so a game's scores are those of fresh processes and a game starts without starting a
process.

Options (`obscuro:key=value,...`, `ObscuroConfig.from_options`): see `OPTIONS_HELP`.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, belief_map
from caligo.agents.fow_search import (
    FowBelief,
    FowEvaluator,
    FowSearchGame,
    compact_arena,
    emergency_move,
    join_overdue,
    overdue_answer,
)
from caligo.agents.options import EvalChoice, OptionReader
from caligo.agents.resources import EngineResources
from caligo.agents.timing import (
    OBSCURO,
    UNTIMED,
    MovePlan,
    MoveTimer,
    TcKind,
    TimeControl,
    TimingPolicy,
    collect_garbage,
)
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.belief_kernels import load_rare_kernels
from caligo.fow.errors import FowError
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.fow.position import move_to_uci
from caligo.fow.stockfish import (
    SlotPool,
    StockfishConfig,
    StockfishError,
    StockfishPool,
    find_stockfish,
)
from caligo.limits import Deadline, Limits, Overdue, Watchdog
from caligo.search.agent import SearchAgent
from caligo.search.config import (
    PRESETS,
    Expansion,
    Iterations,
    Preset,
    Purification,
    ResolvePrior,
    Schedule,
    SearchConfig,
    SearchResult,
    Seconds,
    SubgameKind,
)
from caligo.search.purify import purify

log = logging.getLogger(__name__)

__all__ = [
    "OPTIONS_HELP",
    "Ablation",
    "EvalChoice",
    "ObscuroAgent",
    "ObscuroConfig",
    "ObscuroConfigError",
    "SlotPool",
    "parse_budget",
    "stockfish_available",
]


class ObscuroConfigError(CaligoError, ValueError):
    """A malformed Obscuro option or configuration field; the message quotes it."""


class ObscuroSearchMismatch(CaligoError):
    """The searched infoset's moves differ from the referee's legal moves (a bug)."""


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


NODES_PER_S_STOCKFISH = 60_000
NODES_PER_S_SIMPLE = 300_000
"""Tree growth to size an arena for a time budget (about what `caligo bench engine` measures
on 2 cores)."""
MIN_CAPACITY = 32_768
MIN_TIMED_CAPACITY = 32_768
"""Arena rows on top of the growth under an iteration / a time budget (the iteration floor was
100,000 rows: about 30 MB more per hosted game of the web's iters=200 engine for nothing)."""
REPAIR_ATTEMPTS = 3
"""Replays of a lost subsample of P with fresh salts before P is given up."""
PONDER_MIN_MS = 200.0
"""After our move, a partial P update may go on for at least this long (the opponent's time),
and for twice our last move's planned time when that is longer; then the rest is given up."""


def parse_budget(text: str) -> TimeControl:
    """The agent's own budget option: ``auto`` (the referee's), ``iters=N`` or
    ``mt=SECONDS``; raise ObscuroConfigError quoting anything else."""
    t = text.strip().lower()
    if t in ("auto", "", "none"):
        return UNTIMED
    try:
        tc = TimeControl.parse(t)
    except CaligoError:
        tc = UNTIMED
    if tc.kind in (TcKind.ITERATIONS, TcKind.MOVETIME):
        return tc
    raise ObscuroConfigError(f"invalid budget {text!r} (expected auto, iters=N or mt=SECONDS)")


# --- Stockfish engines bound to expander slots -----------------------------------------------


def _started(pool: SlotPool, slots: int) -> SlotPool:
    pool.start(slots)
    return pool


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
    "subgame when no ablation overrides it), preset=obscuro|safe|obscuro_fix (the subgame "
    "construction of `caligo.search.config.PRESETS`; not with subgame=), expand=R (expansions "
    "per iteration under an iteration budget), roots=N, expanders=N, nodes=N (arena "
    "capacity), belief=N (P cap), seed=N, stockfish=PATH"
)


@dataclass(frozen=True)
class ObscuroConfig:
    """Everything an `ObscuroAgent` needs; validated at construction.

    budget: the agent's own budget (`auto`: the referee's time control). evaluator, ablation:
    above. subgame: the subgame built at a decision (KLUSS in Obscuro; the `klss` ablations
    override it). preset: a named construction (`caligo.search.config.Preset`: its subgame,
    knowledge order, root expansion and root floor) in place of `subgame`. expand_ratio: leaf
    expansions per solver iteration under an iteration budget (the deterministic schedule
    spreads them over the iterations). min_roots: Fig. 9's MININFOSETSIZE. expanders: expander
    threads under a time budget. max_nodes: the arena's capacity. belief_cap: P's memory cap
    in positions. seed: mixed into every game's seed.
    stockfish: the StockfishPool settings (path, own-call cap, ...). time: the timing policy
    (`caligo.agents.timing`).
    """

    budget: TimeControl = UNTIMED
    evaluator: EvalChoice = EvalChoice.AUTO
    ablation: Ablation = Ablation.NONE
    subgame: SubgameKind = SubgameKind.KLUSS
    preset: Preset | None = None
    expand_ratio: float = 0.25
    min_roots: int = 256
    expanders: int = 1
    expander_batch: int = 4
    max_nodes: int = 2_000_000
    belief_cap: int = 2_000_000
    seed: int = 0
    stockfish: StockfishConfig = field(
        default_factory=lambda: StockfishConfig(own_call_cap=8))
    time: TimingPolicy = OBSCURO

    def __post_init__(self) -> None:
        for name, kind in (("evaluator", EvalChoice), ("ablation", Ablation),
                           ("subgame", SubgameKind),
                           ("budget", TimeControl), ("stockfish", StockfishConfig),
                           ("time", TimingPolicy)):
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
        if self.preset is not None and not isinstance(self.preset, Preset):
            raise ObscuroConfigError(f"preset must be a Preset: {self.preset!r}")
        if self.preset is not None and self.subgame is not SubgameKind.KLUSS:
            raise ObscuroConfigError(f"a preset ({self.preset.value}) decides the subgame; "
                                     f"do not also set subgame={self.subgame.value}")
        if self.budget.kind is TcKind.CLOCK:
            raise ObscuroConfigError(f"the budget option is auto, iters=N or mt=SECONDS, not a "
                                     f"clock: {self.budget}")

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
            budget=Iterations(1000), expansions=250, expand_ratio=self.expand_ratio,
            min_roots=self.min_roots, subgame=self.subgame,
            expanders=self.expanders, expander_batch=self.expander_batch,
            max_nodes=self.max_nodes, seed=self.seed,
        )
        if self.preset is not None:
            base = replace(base, **PRESETS[self.preset])  # type: ignore[arg-type]
        return self.ablation.apply(base)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ObscuroConfig:
        """Parse registry options (`OPTIONS_HELP`, read by `caligo.agents.options`); raise
        OptionError or ObscuroConfigError quoting them."""
        opts = OptionReader("obscuro", options, (
            "budget", "eval", "ablation", "subgame", "preset", "expand", "roots", "expanders",
            "nodes", "belief", "seed", "stockfish"))
        kw: dict[str, Any] = {}
        if "budget" in opts:
            kw["budget"] = parse_budget(opts.text("budget"))
        for key, name, kind in (("eval", "evaluator", EvalChoice), ("ablation", "ablation",
                                Ablation), ("subgame", "subgame", SubgameKind),
                                ("preset", "preset", Preset)):
            if key in opts:
                kw[name] = opts.choice(key, kind)
        if "expand" in opts:
            kw["expand_ratio"] = opts.number("expand")
        for key, name in (("roots", "min_roots"), ("expanders", "expanders"),
                          ("nodes", "max_nodes"), ("belief", "belief_cap"), ("seed", "seed")):
            if key in opts:
                kw[name] = opts.integer(key)
        if "stockfish" in opts:
            kw["stockfish"] = StockfishConfig(path=opts.text("stockfish"), own_call_cap=8)
        config = cls(**kw)
        if config.evaluator is EvalChoice.STOCKFISH and not stockfish_available(
            config.stockfish.path
        ):
            raise ObscuroConfigError("obscuro: eval=stockfish but no Stockfish executable was "
                                     "found (install Debian's `stockfish`)")
        return config


# --- the agent -------------------------------------------------------------------------------


def _first_half(plan: MovePlan) -> Limits:
    """The limits of the search from the true start before a game's first decision: an
    iteration count as it is, or half of the time left to the soft instant."""
    d = plan.deadline
    if plan.iterations is not None or d is None:
        return plan.limits
    now = d.now()
    mid = now + max(0.0, d.soft - now) / 2
    return Limits(deadline=d.capped(soft=mid, hard=mid))


def _mix_seed(*parts: int) -> int:
    seq = np.random.SeedSequence([p & 0xFFFFFFFF for p in parts])
    return int(seq.generate_state(1, dtype=np.uint64)[0] & np.uint64(0x7FFFFFFFFFFFFFFF))


def _same(ev: FowEvaluator) -> FowEvaluator:
    return ev


_WARMED: set[str] = set()
"""Which warm-ups this process has run (numba loads a cached kernel on its first call)."""


def _warm_up(pool: StockfishPool | None) -> None:
    """Load every compiled kernel the agent calls before the first timed move: numba loads a
    cached kernel on its first call, 10-60 ms each, which on the clock would cost the first
    moves of a game. Once per process: a few plies between two tiny searches with the
    built-in evaluator in each schedule (so re-rooting, sampling, carrying and compaction all
    run), and one Stockfish leaf and root evaluation through the agent's own pool (its caches
    are cleared after, by `new_game`)."""
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
        load_rare_kernels()  # the belief's paths six plies do not reach
        _WARMED.add("search")
    if pool is not None and "stockfish" not in _WARMED:
        game = FowSearchGame()
        batch = game.expand(np.array([0]))
        kids = game.positions(batch.state)
        pool.children(game.positions(np.array([0]))[0], kids, batch.action.astype(np.uint16))
        pool.evaluate(kids[:2])
        _WARMED.add("stockfish")


class ObscuroAgent(AgentBase):
    """The Obscuro engine (module docstring). Build with `ObscuroAgent(config)` or, from the
    registry, `ObscuroAgent.from_options(options)`."""

    def __init__(self, config: ObscuroConfig | None = None, *,
                 clock: Callable[[], float] = time.perf_counter,
                 resources: EngineResources | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ObscuroConfig()
        self.timer = MoveTimer(self.config.time, self.config.budget, now=clock)
        self.resources = resources
        self._watchdog = Watchdog("obscuro-move")
        self._leaf: LeafEvaluator | None = None
        self._pool: SlotPool | None = None
        self._game: FowSearchGame | None = None
        self._belief: FowBelief | None = None
        self._search: SearchAgent | None = None
        self._checkpoint: tuple[BeliefSet, int] | None = None
        self._reset_game(0)

    @classmethod
    def from_options(cls, options: Mapping[str, str],
                     resources: EngineResources | None = None) -> ObscuroAgent:
        """Build from registry options (`OPTIONS_HELP`); `resources`: a worker's shared
        Stockfish processes (`caligo.agents.resources`)."""
        return cls(ObscuroConfig.from_options(options), resources=resources)

    @property
    def evaluator_name(self) -> str:
        """"stockfish" or "simple": what the leaves are scored with."""
        return "stockfish" if isinstance(self._leaf, StockfishPool) else "simple"

    # --- lifecycle -------------------------------------------------------------------------

    def _close_leaf(self) -> None:
        if self._leaf is not None and self.resources is None:  # a shared pool is the worker's
            self._leaf.close()
        self._leaf = None
        self._pool = None

    def _evaluator(self) -> LeafEvaluator:
        """The leaf evaluator: the Stockfish processes are started at the first game (or
        borrowed from the worker's shared resources) and given `ucinewgame` at each game (a
        game's scores are then a fresh process's: a fixed-iteration game is a function of its
        seed)."""
        cfg = self.config
        if self._leaf is None:
            if cfg.uses_stockfish:
                if self.resources is not None:
                    self._pool = self.resources.get(
                        ("obscuro", cfg.stockfish, cfg.expanders),
                        lambda: _started(SlotPool(cfg.stockfish), cfg.expanders))
                else:
                    self._pool = _started(SlotPool(cfg.stockfish), cfg.expanders)
                    self._leaf = self._pool
                    return self._leaf
                self._leaf = self._pool
            else:
                self._leaf = SimpleEvaluator()
        return self._leaf

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """Start a game: P = {start}, no tree, the evaluator ready, the arenas allocated and
        every kernel loaded (all of it before the referee's clock runs)."""
        self._join_overdue()
        super().new_game(color, start_fen, time_control, seed)
        cfg = self.config
        leaf = self._evaluator()
        self.timer.new_game(time_control)
        game = FowSearchGame(start_fen)
        self._game = game
        self._belief = FowBelief(game, self.color, BeliefConfig(max_positions=cfg.belief_cap,
                                                               seed=seed & 0xFFFFFFFF))
        slots = itertools.count()
        pool = self._pool

        def factory() -> FowEvaluator:  # called once in each expander thread of a search
            if pool is not None:
                pool.bind(next(slots) % cfg.expanders)
            return FowEvaluator(game, leaf)

        self._search = SearchAgent(game, self._belief, FowEvaluator(game, leaf),
                                   cfg.search_config(), evaluator_factory=factory,
                                   capacity=self._capacity(time_control))
        _warm_up(self._pool)  # off the clock
        if self._pool is not None:
            self._pool.new_game()  # after the warm-up: this game starts as a fresh process
        game_seed = _mix_seed(cfg.seed, seed, self.color)
        self._search.new_game(self.color, game_seed)
        self._search.prepare()
        self._reset_game(game_seed)
        self._checkpoint = (self._belief.set, 0)

    def _reset_game(self, game_seed: int) -> None:
        """The per-game state: the game's generator, counters, and no pending repair."""
        self._rng = np.random.default_rng(game_seed)
        self._late_rng = np.random.default_rng(game_seed ^ 0x5DEECE66D)
        self._late = 0
        self._overdue: Overdue[Decision] | None = None  # joined before any reset
        self._fallbacks = 0
        self._lost = False
        self._repairs = 0
        self._belief_ms = 0.0
        self._ponder_ms = 0.0
        self._ponder_done = True
        self._prev_map: dict[str, Any] | None = None
        self._picture: dict[str, Any] | None = None
        self._map_ms = 0.0

    def _capacity(self, tc: TimeControl) -> int:
        """Arena rows for this game's budget, at most `max_nodes`: an iteration count needs
        64 rows per expansion; a time budget four times the growth its longest move expects."""
        cfg = self.config
        iters = self.timer.iterations(tc)
        if iters is not None:
            need = 64 * cfg.expand_ratio * iters
            return int(min(cfg.max_nodes, max(MIN_CAPACITY, need + MIN_CAPACITY)))
        rate = NODES_PER_S_STOCKFISH if cfg.uses_stockfish else NODES_PER_S_SIMPLE
        need = 4.0 * rate * self.timer.expected_ms(tc) / 1000.0
        return int(min(cfg.max_nodes, need + MIN_TIMED_CAPACITY))

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """The opponent's ply starts our move (its P update is queued for `act`, inside the
        move's budget); after our own ply, a partial update is completed on the opponent's
        time, then P follows our move."""
        self._join_overdue()  # an overdue move's work ends first (off the clock)
        super().observe(observation, own_move)
        assert self._search is not None and self._belief is not None and self._game is not None
        if own_move is None:
            self.timer.start()
            self._belief.expect(observation)
            if self._lost:
                self._belief.drop()  # P is given up: only the key follows the game
            self._search.observe(observation_key(observation), None)  # queued: see act
            return
        t0 = time.perf_counter()
        self._ponder()
        self._belief.expect(observation)
        try:
            self._search.observe(observation_key(observation), own_move)
        except FowError as exc:  # the key has moved on; P has not
            if not self._lost:  # once P is gone (below) only the key follows the game
                self._repair_belief(exc)
        self._note_checkpoint()
        if not self._lost:  # off the clock: the belief the next analysis reports as "prev"
            self._prev_map = belief_map(self._belief.set)
            last = self.timer.last
            if last is not None and last.iterations is None:  # a timed update comes next
                self._belief.prepare()
        eng = self._search.engine
        if eng is not None:  # off the clock: drop store rows the tree no longer holds
            compact_arena(self._game, eng.arena)
        collect_garbage()  # off the clock too (caligo.agents.timing)
        self._ponder_ms += 1000.0 * (time.perf_counter() - t0)

    def _ponder(self) -> None:
        """Complete a partial P update after our move (the opponent's time), for at least
        `PONDER_MIN_MS` and twice our last planned move; past that, P keeps what it has and
        says so."""
        assert self._belief is not None
        if not self._belief.partial or self._lost:
            return
        last = self.timer.last
        deadline = None
        if last is not None and last.iterations is None:
            deadline = Deadline.within(max(PONDER_MIN_MS, 2.0 * last.optimum_ms) / 1000.0,
                                       now=self.timer.now)
        try:
            self._ponder_done = self._belief.finish(deadline)
        except FowError as exc:
            self._repair_belief(exc)

    def _note_checkpoint(self) -> None:
        assert self._belief is not None
        bel = self._belief.set
        if bel.exact and not self._lost:
            self._checkpoint = (bel, len(self.history))

    def _settle_belief(self, plan: MovePlan) -> None:
        """The queued P update of the opponent's ply, inside the move's belief stage."""
        assert self._belief is not None
        if self._lost:
            self._belief.drop()
            return
        if not self._belief.queued:
            return
        try:
            self._belief.settle(plan.belief_deadline, spread=plan.iterations is None)
        except FowError as exc:
            self._repair_belief(exc)
            return
        self._note_checkpoint()

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
        self._belief.drop()

    def force(self, move: int) -> None:
        """Play `move` at this turn instead of searching."""
        assert self._search is not None
        self._join_overdue()
        self._search.force(int(move))

    def close(self) -> None:
        """Stop the Stockfish processes (after an overdue move's work has ended)."""
        self._join_overdue()
        self._watchdog.close()
        self._close_leaf()

    # --- deciding --------------------------------------------------------------------------

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Decide within the move's plan: P's update, the subgame, the search, purification
        (module docstring). A timed move's work runs under the watchdog
        (`caligo.limits.Watchdog`): if it is not done at the plan's answer instant, the agent
        answers with its emergency move and the work ends on the opponent's time."""
        assert self._search is not None and self._belief is not None
        if not legal:
            raise ValueError("act needs at least one legal move")
        self._join_overdue()
        plan = self.timer.plan(clock, len(legal), self._belief.size_hint())
        by = plan.answer_by
        if by is None:
            return self._finish(plan, self._decide(plan, legal))
        out = self._watchdog.run_by(lambda: self._decide(plan, legal), by, self.timer.now)
        if isinstance(out, Overdue):
            self._overdue = out
            self._late += 1
            answer = overdue_answer("obscuro", out, plan.answer_ms, self.history, self.color,
                                    legal, self._late_rng, self._late)
            return self._finish(plan, answer, overdue=True)
        return self._finish(plan, out)

    def _decide(self, plan: MovePlan, legal: Sequence[int]) -> Decision:
        """The move's work (on the watchdog's thread for a timed move)."""
        assert self._search is not None and self._belief is not None
        t0 = time.perf_counter()
        self._settle_belief(plan)
        t_belief = time.perf_counter()
        self._belief_ms = 1000.0 * (t_belief - t0)
        if self._lost:
            return self._without_belief(legal)
        # the belief's picture for the review, before the search: its cost (about 1 ms at
        # |P| = 10^6) comes out of the search's time, never past the move's deadline
        self._picture = belief_map(self._belief.set)
        self._map_ms = 1000.0 * (time.perf_counter() - t_belief)
        sa = self._search
        warm_ms = 0.0
        try:
            if sa.engine is None and self.history and sa.wants_warm_start:
                # a first decision after the start searches the start first
                # (FirstDecision.TRUE_START); under a deadline that takes half the search
                tw = time.perf_counter()
                sa.warm_start(_first_half(plan))
                warm_ms = 1000.0 * (time.perf_counter() - tw)
            res = sa.act(plan.limits, construct=plan.construct_deadline).search
            move, play = self._choose(res, legal)
        except Exception as exc:
            # a failing search must not lose the game: play a legal move, log it, and let the
            # next decision sample its roots afresh (the tree may not match the game any more)
            log.exception("obscuro: search failed; playing a fallback move")
            return self._fallback(legal, exc)
        value = res.value if math.isfinite(res.value) else None
        policy = {int(a): float(p) for a, p in zip(res.actions.tolist(), play.tolist(),
                                                  strict=True) if p > 0.0}
        info = self._analysis(res, plan, warm_ms)
        return Decision(int(move), policy=policy, value=value, info=info)

    def _join_overdue(self) -> None:
        """Let an overdue move's work end (off the clock: called after our own ply and before
        anything touches P or the tree); its decision is dropped, the move played was the
        emergency one (the tree follows the played move: `observe` names it)."""
        out, self._overdue = self._overdue, None
        if out is None:
            return
        join_overdue("obscuro", out)
        self._picture = None  # the overdue work's, of a move answered without it
        self._map_ms = 0.0

    def _finish(self, plan: MovePlan, decision: Decision, overdue: bool = False) -> Decision:
        """End the move: learn from its time, and add the time split and the belief's
        pictures (`caligo.agents.belief_map`) to the analysis (not for an overdue move: its
        work is still running)."""
        info = dict(decision.info)
        if overdue:
            total_ms = self.timer.finish(plan)
            info["time_ms"] = {"total": round(total_ms, 1)}
            info["plan"] = plan.to_info()
            return replace(decision, info=info)
        if self._picture is not None:
            info[BELIEF_MAP] = self._picture
        if self._prev_map is not None:
            info[BELIEF_MAP_PREV] = self._prev_map
        self._picture = self._prev_map = None
        total_ms = self.timer.finish(plan)
        split = dict(info.get("time_ms", {}))
        split["belief"] = round(self._belief_ms, 1)
        split["belief_map"] = round(self._map_ms, 2)
        self._map_ms = 0.0
        split["total"] = round(total_ms, 1)
        if self._ponder_ms:
            split["after_move"] = round(self._ponder_ms, 1)  # on the opponent's time
        info["time_ms"] = split
        info["plan"] = plan.to_info()
        if self._belief is not None and self._belief.cut:
            info["belief_cut"] = self._belief.cut
        self._ponder_ms = 0.0
        return replace(decision, info=info)

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

    def _without_belief(self, legal: Sequence[int]) -> Decision:
        """P is lost: the emergency move."""
        move = emergency_move(self.history, self.color, legal, self._rng)
        assert self._search is not None
        self._search.force(move)
        return Decision(move, info={"belief_lost": True, "repairs": self._repairs})

    def _fallback(self, legal: Sequence[int], exc: BaseException) -> Decision:
        """A uniformly drawn legal move after a failed search; the tree is dropped (the next
        decisions sample their roots afresh)."""
        assert self._search is not None
        move = int(legal[int(self._rng.integers(len(legal)))])
        self._search.force(move)
        self._search.reset_tree()
        self._fallbacks += 1
        info = {"fallback": f"{type(exc).__name__}: {exc}"[:300], "fallbacks": self._fallbacks}
        return Decision(move, info=info)

    def _analysis(self, res: SearchResult, plan: MovePlan, warm_ms: float) -> dict[str, Any]:
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
            "budget": (f"iters={plan.iterations}" if plan.iterations is not None
                       else f"{plan.optimum_ms:.0f}ms"),
            "ms": round(elapsed_ms, 1),
            "time_ms": {
                "belief": round(self._belief_ms, 1),
                "warm_start": round(warm_ms, 1),
                "construct": round(1000 * t.construct, 1),
                "solve": round(1000 * t.solve, 1),
                "expand": round(1000 * t.expand, 1),
                "solve_plus_expand": round(run_ms, 1),  # two threads: not wall time
                "search": round(1000 * (res.time.total - res.time.construct), 1),
                "search_total": round(elapsed_ms, 1),
            },
        }
        if plan.deadline is not None and plan.iterations is None and eng is not None:
            # > 0: the search ended after its soft instant
            info["late_ms"] = round(1000.0 * (eng.run_end - plan.deadline.soft), 1)
        if self._pool is not None:
            st = self._pool.stats()  # this game's calls (the pool is reset at each game)
            info["stockfish"] = {"leaf_calls": st.leaf_calls, "own_calls": st.own_calls,
                                 "restarts": st.restarts, "fallbacks": st.fallbacks}
        if self._fallbacks:
            info["fallbacks"] = self._fallbacks
        if self._repairs:
            info["belief_repairs"] = self._repairs
        return info
