"""The CFR family over a `GameTree`: one configurable core, four presets.

- CFR (Zinkevich et al. 2007; Ha 2016, section E.4): regret matching on cumulative
  counterfactual regrets, uniform averaging of the iterates in sequence form.
- CFR+ (Tammelin et al. 2015; Ha 2016, section E.4): regret matching+ (cumulative regrets floored
  at 0 after every update), alternating updates, linear averaging (iterate t weighs t).
- DCFR(alpha, beta, gamma) (Brown and Sandholm 2019): after adding iteration t's regrets, positive
  cumulative regrets are multiplied by t^alpha / (t^alpha + 1) and negative ones by
  t^beta / (t^beta + 1); iterate t weighs t^gamma in the average. Defaults 1.5, 0, 2.
- Predictive CFR+ (Farina, Kroer and Sandholm 2021; Obscuro, section 3.2): regret matching+ where
  the next strategy is matched on the cumulative regrets *plus a prediction* of the next
  instantaneous regret, the prediction being the last instantaneous regret (PRM+ with
  m^{t+1} = r^t at every infoset); alternating updates (Obscuro, Figure 10 runs
  RUNCFRITERATION for one player, then the other); the average is the *uniform* average in
  sequence form, x_bar(h) = (1/T) sum_t x^t(h) (Obscuro, section 3.2 and footnote 16). Obscuro's
  agent plays the last iterate, `current_strategy()`.

All updates follow OpenSpiel's `CFRSolverBase` (`pyspiel.CFRSolver`, `pyspiel.CFRPlusSolver`):
with alternating updates player 0 is traversed and updated, then player 1 under player 0's new
strategy; regrets are weighted by the counterfactual (opponent and chance) reach; the average adds
the player's own reach times the iterate. OpenSpiel adds that at every history of an infoset, we
once per infoset: per infoset the two differ by the constant factor |I|, so the normalized
averages agree. An infoset whose regrets (or average weights) have no positive part plays
uniformly, as in OpenSpiel.

Strategies are float64 vectors over the tree's action slots, both players in one vector
(`caligo.core.strategy`).

Extra payoffs (gadgets, Zhang & Sandholm 2021, appendix C): `CFRSolver(tree, config, extra=B)` plays
the game with payoff <x, (A + B) y>, B a sparse matrix over (player-0 sequence, player-1 sequence).
The sequence-form traversal reads A as a list of (s0, s1, coefficient) terms, so B's entries are
appended to that list: player 0's sequence utilities become A y + B y and player 1's A^T x + B^T x.
The tree traversal walks histories and has no place for B, so it refuses one.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from caligo.core import _cfr_kernels as K
from caligo.core.game import TERMINAL
from caligo.core.strategy import check_strategy, normalize_per_infoset, uniform_strategy
from caligo.core.tree import FloatArray, GameTree, IntArray
from caligo.errors import CaligoError

log = logging.getLogger(__name__)


class CFRConfigError(CaligoError, ValueError):
    """A CFR configuration with an out-of-range parameter."""


class RegretUpdate(enum.Enum):
    """How an iteration's instantaneous regrets are folded into the cumulative regrets."""

    SUM = K.REGRET_SUM  # R += r (CFR)
    PLUS = K.REGRET_PLUS  # R = max(R + r, 0) (regret matching+)
    DISCOUNTED = K.REGRET_DISCOUNTED  # R = (R + r) * t^a/(t^a+1) if >= 0 else * t^b/(t^b+1)


class Traversal(enum.Enum):
    """How a traversal computes the counterfactual regrets (mathematically the same numbers).

    SEQUENCE_FORM: the opponent's realization plan, one sparse pass over the terminals
    (p's sequence utilities A y), then bottom-up over p's infosets; the fast default.
    TREE: history by history over the flat node arrays in OpenSpiel's arithmetic order, so
    regrets that are exactly zero in OpenSpiel are exactly zero here and regret matching+ breaks
    such ties the same way (Kuhn poker has them at iteration 2); bit-for-bit replays of
    `pyspiel.CFRSolver` / `pyspiel.CFRPlusSolver`.
    """

    SEQUENCE_FORM = K.TRAVERSE_SEQUENCE_FORM
    TREE = K.TRAVERSE_TREE


class Algorithm(enum.Enum):
    """The named presets of `CFRConfig.preset`."""

    CFR = "cfr"
    CFR_PLUS = "cfr+"
    DCFR = "dcfr"
    PCFR_PLUS = "pcfr+"


@dataclass(frozen=True)
class CFRConfig:
    """Every knob of the CFR core; validated at construction. Use the presets for the usual ones.

    regret: the cumulative-regret rule. alpha, beta: DCFR's discount exponents (only used with
    `RegretUpdate.DISCOUNTED`). average_power: iterate t weighs t**average_power in the average
    (0 uniform, 1 linear, 2 quadratic). predictive: regret-match on the cumulative regrets plus the
    last instantaneous regrets. alternating: update player 0, then player 1 under player 0's new
    strategy (otherwise both from the same profile). traversal: see `Traversal`.
    """

    regret: RegretUpdate = RegretUpdate.SUM
    alpha: float = 1.5
    beta: float = 0.0
    average_power: float = 0.0
    predictive: bool = False
    alternating: bool = True
    traversal: Traversal = Traversal.SEQUENCE_FORM

    def __post_init__(self) -> None:
        if not isinstance(self.regret, RegretUpdate):
            raise CFRConfigError(f"regret must be a RegretUpdate, got {self.regret!r}")
        if not isinstance(self.traversal, Traversal):
            raise CFRConfigError(f"traversal must be a Traversal, got {self.traversal!r}")
        for name in ("alpha", "beta", "average_power"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise CFRConfigError(f"{name} must be a finite number, got {v!r}")
        if self.average_power < 0:
            raise CFRConfigError(f"average_power must be >= 0, got {self.average_power!r}")
        for name in ("predictive", "alternating"):
            if not isinstance(getattr(self, name), bool):
                raise CFRConfigError(f"{name} must be a bool, got {getattr(self, name)!r}")

    @classmethod
    def cfr(cls) -> CFRConfig:
        """Vanilla CFR as `pyspiel.CFRSolver`: regret matching, uniform average, alternating."""
        return cls(RegretUpdate.SUM, average_power=0.0)

    @classmethod
    def cfr_plus(cls) -> CFRConfig:
        """CFR+ as `pyspiel.CFRPlusSolver`: regret matching+, linear average, alternating."""
        return cls(RegretUpdate.PLUS, average_power=1.0)

    @classmethod
    def dcfr(cls, alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0) -> CFRConfig:
        """Discounted CFR (Brown and Sandholm 2019), alternating updates."""
        return cls(RegretUpdate.DISCOUNTED, alpha=alpha, beta=beta, average_power=gamma)

    @classmethod
    def pcfr_plus(cls, average_power: float = 0.0) -> CFRConfig:
        """Predictive CFR+ (Obscuro, section 3.2): PRM+, last regret as prediction, uniform avg."""
        return cls(RegretUpdate.PLUS, average_power=average_power, predictive=True)

    @property
    def name(self) -> str:
        """The preset's name ("cfr", "cfr+", "dcfr", "pcfr+") if this equals one, else "custom"."""
        for algorithm in Algorithm:
            if self == CFRConfig.preset(algorithm):
                return algorithm.value
        return "custom"

    @classmethod
    def preset(cls, algorithm: Algorithm) -> CFRConfig:
        """The default configuration of a named algorithm."""
        return {
            Algorithm.CFR: cls.cfr,
            Algorithm.CFR_PLUS: cls.cfr_plus,
            Algorithm.DCFR: cls.dcfr,
            Algorithm.PCFR_PLUS: cls.pcfr_plus,
        }[algorithm]()


@dataclass(frozen=True, eq=False)
class _CFRArrays:
    """The tree arrays the kernels read, derived once per tree."""

    inodes: IntArray
    player: np.ndarray
    first_child: IntArray
    num_children: IntArray
    node_offset: IntArray
    chance_prob: FloatArray
    chance_reach: FloatArray
    utility: FloatArray
    term_seq: IntArray
    term_coef: FloatArray
    player_infosets: IntArray
    player_ptr: IntArray
    offset: IntArray
    num_actions: IntArray
    first_seq: IntArray
    parent_seq: IntArray
    max_sequences: int


def _cfr_arrays(tree: GameTree) -> _CFRArrays:
    cached = tree._cache.get("cfr_arrays")
    if isinstance(cached, _CFRArrays):
        return cached
    node_offset = np.full(tree.num_nodes, -1, dtype=np.int32)
    dec = tree.infoset >= 0
    node_offset[dec] = tree.infoset_offset[tree.infoset[dec]]
    utility = np.where(tree.player == TERMINAL, tree.utility, 0.0).astype(np.float64)
    p0 = tree.infosets_of(0)
    p1 = tree.infosets_of(1)
    # Sparse payoff entries: chance-weighted utility per (sequence 0, sequence 1) pair.
    z = tree.terminals()
    key = tree.seq[z, 0].astype(np.int64) * tree.num_sequences[1] + tree.seq[z, 1]
    pairs, inverse = np.unique(key, return_inverse=True)
    coef = np.zeros(pairs.size, dtype=np.float64)
    np.add.at(coef, inverse, tree.chance_reach[z] * tree.utility[z])
    keep = coef != 0.0
    pairs, coef = pairs[keep], coef[keep]
    term_seq = np.stack([pairs // tree.num_sequences[1], pairs % tree.num_sequences[1]])
    arrays = _CFRArrays(
        inodes=np.flatnonzero(tree.player != TERMINAL).astype(np.int32),
        player=np.ascontiguousarray(tree.player, dtype=np.int8),
        first_child=np.ascontiguousarray(tree.first_child, dtype=np.int32),
        num_children=np.ascontiguousarray(tree.num_children, dtype=np.int32),
        node_offset=node_offset,
        chance_prob=np.ascontiguousarray(tree.chance_prob, dtype=np.float64),
        chance_reach=np.ascontiguousarray(tree.chance_reach, dtype=np.float64),
        utility=utility,
        term_seq=np.ascontiguousarray(term_seq, dtype=np.int32),
        term_coef=coef,
        player_infosets=np.concatenate([p0, p1]).astype(np.int32),
        player_ptr=np.array([0, p0.size, p0.size + p1.size], dtype=np.int32),
        offset=np.ascontiguousarray(tree.infoset_offset, dtype=np.int32),
        num_actions=np.ascontiguousarray(tree.infoset_num_actions, dtype=np.int32),
        first_seq=np.ascontiguousarray(tree.infoset_seq, dtype=np.int32),
        parent_seq=np.ascontiguousarray(tree.infoset_parent_seq, dtype=np.int32),
        max_sequences=max(tree.num_sequences),
    )
    tree._cache["cfr_arrays"] = arrays
    return arrays


def _with_extra(tree: GameTree, extra: sp.spmatrix | None) -> _CFRArrays:
    """The tree's arrays with B's nonzero entries appended to the payoff terms."""
    base = _cfr_arrays(tree)
    if extra is None:
        return base
    if not sp.issparse(extra) and not isinstance(extra, np.ndarray):
        raise CFRConfigError(f"extra must be a sparse matrix or an array, got {type(extra)!r}")
    B = sp.coo_matrix(extra, dtype=np.float64)
    if B.shape != (tree.num_sequences[0], tree.num_sequences[1]):
        raise CFRConfigError(
            f"extra payoffs have shape {B.shape}, the tree has {tree.num_sequences} sequences"
        )
    if not np.all(np.isfinite(B.data)):
        raise CFRConfigError("extra payoffs must be finite")
    keep = B.data != 0.0
    if not np.any(keep):
        return base
    seq = np.concatenate(
        [base.term_seq, np.stack([B.row[keep], B.col[keep]]).astype(np.int32)], axis=1
    )
    coef = np.concatenate([base.term_coef, B.data[keep]])
    # a copy: the tree's cached arrays stay those of the game without B
    return dataclasses.replace(
        base, term_seq=np.ascontiguousarray(seq, dtype=np.int32), term_coef=coef
    )


class KernelError(CaligoError, RuntimeError):
    """A CFR kernel returned a non-OK status (a bug, never bad input)."""


CHUNK_SECONDS = 0.1
"""Target wall time of one kernel call: `iterate` returns to Python this often, so Ctrl-C and
progress callbacks are served within about that time however many iterations are asked for."""


class _DeferredInterrupt:
    """Hold SIGINT while a kernel chunk's results are booked, then raise KeyboardInterrupt.

    Python runs its SIGINT handler at the first bytecode after the kernel returns, which would be
    before the iteration counter is updated; deferring it keeps the solver's state consistent.
    Only in the main thread and only over Python's default handler; otherwise a no-op.
    """

    def __init__(self) -> None:
        self.hit = False
        self._old: Any = None

    def _handler(self, signum: int, frame: object) -> None:
        self.hit = True

    def __enter__(self) -> _DeferredInterrupt:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class CFRSolver:
    """A CFR-family solver on one tree: `iterate(n)`, then read the average or last iterate.

    `initial` (a strategy over slots) is the first iterate, sigma^1; CFR's guarantees hold for
    any first iterate (Obscuro, appendix C.5). Regrets and averages start at zero.
    `extra` (B, sequence-form traversal only) adds <x, B y> to the payoff (module docstring).
    """

    def __init__(
        self,
        tree: GameTree,
        config: CFRConfig | None = None,
        initial: FloatArray | None = None,
        extra: sp.spmatrix | None = None,
    ) -> None:
        self.tree = tree
        self.config = config if config is not None else CFRConfig.cfr_plus()
        if not isinstance(self.config, CFRConfig):
            raise CFRConfigError(f"config must be a CFRConfig, got {self.config!r}")
        if extra is not None and self.config.traversal is not Traversal.SEQUENCE_FORM:
            raise CFRConfigError("extra payoffs need Traversal.SEQUENCE_FORM")
        self._a = _with_extra(tree, extra)
        if initial is None:
            self._strategy = uniform_strategy(tree)
        else:
            self._strategy = np.array(check_strategy(tree, initial), dtype=np.float64)
        n = tree.num_slots
        self._regrets = np.zeros(n, dtype=np.float64)
        self._avg = np.zeros(n, dtype=np.float64)
        self._inst = np.zeros(n, dtype=np.float64)
        self._reach = np.zeros(tree.num_nodes, dtype=np.float64)
        self._value = np.zeros(tree.num_nodes, dtype=np.float64)
        self._plans = np.zeros((2, self._a.max_sequences), dtype=np.float64)
        self._seq_value = np.zeros(self._a.max_sequences, dtype=np.float64)
        self._iterations = 0
        self._chunk = 1

    def __repr__(self) -> str:
        return (f"<CFRSolver {self.config.name} on {self.tree.name!r}: "
                f"{self._iterations} iterations>")

    @property
    def iterations(self) -> int:
        """Iterations run so far."""
        return self._iterations

    def iterate(self, n: int = 1, progress: Callable[[int], None] | None = None) -> None:
        """Run n more iterations (each updates both players).

        The kernel runs in chunks of about `CHUNK_SECONDS`; after each, `progress(k)` is told
        that k more iterations are done. Ctrl-C (KeyboardInterrupt) stops between chunks with
        the solver consistent: `iterations` counts what ran, and the strategies are theirs.
        Chunking does not change the arithmetic (bit-identical to one call).
        """
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise CFRConfigError(f"iteration count must be a nonnegative int, got {n!r}")
        if n == 0 or self.tree.num_infosets == 0:
            self._iterations += int(n)
            if progress is not None and n:
                progress(int(n))
            return
        left = int(n)
        with _DeferredInterrupt() as interrupt:
            while left > 0:
                k = min(left, self._chunk)
                start = time.perf_counter()
                self._run(k)
                elapsed = time.perf_counter() - start
                left -= k
                # next chunk: aim at CHUNK_SECONDS, growing at most 4x (the first call may
                # include numba's compile and says nothing about the kernel's speed)
                if k == self._chunk:
                    target = k * CHUNK_SECONDS / max(elapsed, 1e-6)
                    self._chunk = max(1, min(4 * k, int(target)))
                if progress is not None:
                    progress(k)
                if interrupt.hit:
                    raise KeyboardInterrupt

    def _run(self, n: int) -> None:
        """One kernel call of n iterations; books them."""
        c, a = self.config, self._a
        rule = K.RunRule(c.traversal.value, c.alternating, c.regret.value, float(c.alpha),
                         float(c.beta), float(c.average_power), c.predictive)
        tree = K.TreeArrays(
            a.inodes, a.player, a.first_child, a.num_children, a.node_offset, a.chance_prob,
            a.chance_reach, a.utility, a.term_seq, a.term_coef, a.player_infosets, a.player_ptr,
            a.offset, a.num_actions, a.first_seq, a.parent_seq)
        state = K.SolverArrays(self._strategy, self._regrets, self._avg, self._inst,
                               self._reach, self._value, self._plans, self._seq_value)
        status = K._run_kernel(int(n), self._iterations, rule, tree, state)
        if status != K.OK:
            raise KernelError(f"CFR kernel returned status {status}")
        self._iterations += int(n)

    def current_strategy(self) -> FloatArray:
        """The last iterate: the strategy the next iteration will play (a copy)."""
        return self._strategy.copy()

    def average_strategy(self) -> FloatArray:
        """The weighted average of the iterates in sequence form, as a behavioral strategy.

        Before the first iteration this is the uniform strategy.
        """
        return normalize_per_infoset(self.tree, self._avg)

    @property
    def average(self) -> FloatArray:
        """`average_strategy()`, under the name `CFRResult` uses (a fresh array each read)."""
        return self.average_strategy()

    @property
    def current(self) -> FloatArray:
        """`current_strategy()`, under the name `CFRResult` uses (a copy each read)."""
        return self.current_strategy()

    def cumulative_regrets(self) -> FloatArray:
        """The cumulative regret of every slot (a copy)."""
        return self._regrets.copy()


@dataclass(frozen=True)
class TracePoint:
    """One measurement of a run: the average strategy's metric after `iteration` iterations.

    value: the metric (by default OpenSpiel's exploitability, NashConv / 2).
    """

    iteration: int
    value: float
    seconds: float  # solver time so far, not counting the measurements

    @property
    def exploitability(self) -> float:
        """The same as `value` (the name before the metric became configurable)."""
        return self.value


@dataclass(frozen=True, eq=False)
class CFRResult:
    """A run: both strategies, the iteration count, time and the recorded trace.

    interrupted: the run was stopped by Ctrl-C (`solve_cfr(..., interruptible=True)`); the
    strategies and `iterations` are those reached. metric: the name of the trace's metric.
    """

    average: FloatArray = field(repr=False)
    current: FloatArray = field(repr=False)
    iterations: int
    seconds: float
    trace: tuple[TracePoint, ...] = field(repr=False)
    config: CFRConfig | None = None
    interrupted: bool = False
    metric: str = "OpenSpiel exploitability (NashConv/2)"

    def __repr__(self) -> str:
        name = self.config.name if self.config is not None else "cfr"
        last = f", {self.metric} {self.trace[-1].value:.3g}" if self.trace else ""
        stop = ", interrupted" if self.interrupted else ""
        return (f"<CFRResult {name} T={self.iterations} in {self.seconds:.2f} s{last}{stop}>")


Metric = Callable[[GameTree, FloatArray], float]


def log_checkpoints(iterations: int, per_decade: int = 10) -> tuple[int, ...]:
    """Iteration counts spread evenly on a log axis from 1 to `iterations` (both included)."""
    if iterations < 1:
        return ()
    k = max(1, round(per_decade * math.log10(iterations)))
    pts = {round(10 ** (i * math.log10(iterations) / k)) for i in range(k + 1)}
    return tuple(sorted(p for p in pts | {1, iterations} if 1 <= p <= iterations))


def solve_cfr(
    tree: GameTree,
    config: CFRConfig | None = None,
    iterations: int = 1000,
    *,
    initial: FloatArray | None = None,
    record_at: Iterable[int] = (),
    metric: Metric | None = None,
    metric_name: str | None = None,
    progress: Callable[[int], None] | None = None,
    interruptible: bool = False,
) -> CFRResult:
    """Run a CFR-family solver for `iterations` iterations, measuring at `record_at`.

    At each iteration count in `record_at` (see `log_checkpoints`), `metric(tree, average)` is
    recorded; the default metric is OpenSpiel's exploitability, NashConv / 2
    (`caligo.core.best_response.openspiel_exploitability`), and `metric_name` labels it.
    progress(k): told after every kernel chunk that k more iterations ran. interruptible: on
    Ctrl-C return what was reached (`CFRResult.interrupted`) instead of raising.
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise CFRConfigError(f"iterations must be a nonnegative int, got {iterations!r}")
    points = sorted({int(p) for p in record_at if 0 <= int(p) <= iterations})
    if metric is None:
        from caligo.core.best_response import openspiel_exploitability

        metric = openspiel_exploitability
        metric_name = metric_name or "OpenSpiel exploitability (NashConv/2)"
    solver = CFRSolver(tree, config, initial)
    trace: list[TracePoint] = []
    elapsed = 0.0
    interrupted = False
    try:
        for p in [*points, iterations]:
            start = time.perf_counter()
            try:
                solver.iterate(p - solver.iterations, progress)
            finally:
                elapsed += time.perf_counter() - start
            if p in points and (not trace or trace[-1].iteration != p):
                value = float(metric(tree, solver.average_strategy()))
                trace.append(TracePoint(p, value, elapsed))
                log.debug("cfr %s: t=%d metric=%.6g", tree.name, p, value)
    except KeyboardInterrupt:
        if not interruptible:
            raise
        interrupted = True
    return CFRResult(
        average=solver.average_strategy(),
        current=solver.current_strategy(),
        iterations=solver.iterations,
        seconds=elapsed,
        trace=tuple(trace),
        config=solver.config,
        interrupted=interrupted,
        metric=str(metric_name or getattr(metric, "__name__", "metric")),
    )
