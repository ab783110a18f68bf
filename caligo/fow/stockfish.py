"""Stockfish as the FoW leaf evaluator: one depth-1 MultiPV call scores a whole expanded leaf.

Obscuro, appendix C.5: when a leaf is expanded, Stockfish runs "in MultiPV mode, at depth 1" on the
*parent*, "which gives evaluations for all children in a single call", clamped to [-1, 1] as
ZS21 does (Zhang & Sandholm 2021, appendix D.1: x -> tanh(x / tau), tau = 6 pawns). `StockfishPool`
does that over raw UCI pipes to Debian's Stockfish 15.1 (`Hash 1`, `Threads 1`, `MultiPV 256`, `go
depth 1`), one process per calling thread, and returns White's values for the whole leaf at once.
The pools are here; one process (`StockfishEngine`, its settings and errors) is in
`caligo.fow.stockfish_engine`, and the text both sides exchange (FEN out, moves and scores in)
in `caligo.fow.stockfish_text`; this module exports all of it.

What Stockfish cannot be asked, and what is asked instead (docs/design.md, "Traps"):

- A position with a missing king crashes it, and one where the side to move can capture the
  enemy king gets no score. Such positions are *decided* by the rules (`evaluate.decided`: the
  capturer won, or the side to move takes the king next; also the no-move draw) and are scored
  exactly (+-1, 0) before anything reaches the engine. Children are classified that way first;
  a parent that is itself decided is never searched.
- FoW moves that chess forbids are missing from the MultiPV lines: moving into or staying in
  check, and leaving a pinned piece's king open, give a child where the opponent captures the
  king (decided: a loss for the mover); castling out of or through check gives a legal child
  that Stockfish never scored, so it gets its own `go depth 1` (its value negated). So do all
  open children of a parent whose side to move could capture the king (that parent is refused).
  Own calls are pipelined: all their commands are written at once and the answers read in order.
- Positions are sent as FEN with the clocks reset (`0 1`): the search ignores the 50-move rule
  (the clock is hidden and the belief set does not track it), so the engine must not score a
  clock-based draw, and a cached value must not depend on a clock.

Score mapping (the side to move's view of the searched position; White's view is the sign of
the mover times that):

    score cp x      tanh(x / 600)
    score mate n    a mate d plies away, d = 2n - 1 for n > 0 (the side to move mates) and
                    d = -2n for n <= 0 (it is mated; "mate 0" = checkmated now), scores
                    +-(1 - (min(d, 99) + 1) / 1000): mate in 1 = +0.998, mated now = -0.999,
                    mated in 1 = -0.997; always strictly inside (-1, 1), where only decided
                    positions lie. A chess checkmate is a FoW loss: every FoW reply leaves the
                    king capturable (castling out of check to a safe square excepted).
    no legal move   ("info depth 0 score cp 0", chess stalemate) every FoW move walks into
                    capture, so it is scored like being mated now: -0.999.

Cache: the engine's answers keyed by the searched position's Zobrist key
(`position.zobrist_key`: pieces, side, castling, en-passant square), so one answer serves both a
leaf call on a position and an own call on it; and whole leaves (White's values of all
children) keyed by the parent's key, the move list compared on a hit. Both are bounded LRU maps
shared by the pool's threads (`cache_entries` each; about 1 KB per entry).

Failures: every read has a deadline (`call_timeout_s`). A crashed (EOF, broken pipe) or hung
(no answer in time) engine is killed, restarted and asked the same thing again, up to
`max_retries` times; if it still fails, the affected children get the built-in evaluator's
values (`evaluate.SEE_EVAL`) and the failure is logged and counted, so a game is never lost to
the engine.
"""


from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, TypeVar

import numpy as np

from caligo.fow.evaluate import (
    DECIDED_VALUE,
    SEE_EVAL,
    UNDECIDED,
    SimpleEvaluator,
    _check_positions,
    _out,
    decided,
)
from caligo.fow.expand import _check_array, _check_position
from caligo.fow.position import (
    POS_WORDS,
    W_STM,
    WHITE,
    zobrist_key,
)
from caligo.fow.stockfish_engine import (
    DEBIAN_DIR,
    StockfishConfig,
    StockfishEngine,
    StockfishError,
    StockfishNotFoundError,
    find_stockfish,
)
from caligo.fow.stockfish_text import (
    FEN_BYTES,
    Answer,
    fen_bytes,
    mate_value,
    move_keys,
    parse_answer,
    score_value,
    uci_key,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class PoolStats:
    """Counters of a pool since it was made (all engines, all threads)."""

    engines: int
    leaf_calls: int
    """`go` commands on parents (one per uncached leaf with open children)."""
    own_calls: int
    """`go` commands on single positions (chess-forbidden moves, refused parents, roots)."""
    leaf_cache_hits: int
    answer_cache_hits: int
    """Positions whose engine answer came from the cache."""
    restarts: int
    fallbacks: int
    """Calls answered by the built-in evaluator after the engine failed `max_retries` times."""
    capped: int
    """Children given the built-in evaluator's value past `own_call_cap`."""
    engine_seconds: float
    """Wall time spent waiting on engine answers."""


# --- the pool --------------------------------------------------------------------------------


class _Lru:
    """A bounded LRU map shared by threads (a lock around an OrderedDict)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[int, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: int) -> Any:
        if not self.capacity:
            return None
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: int, value: Any) -> None:
        if not self.capacity:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


@dataclass
class _Counters:
    leaf_calls: int = 0
    own_calls: int = 0
    leaf_cache_hits: int = 0
    answer_cache_hits: int = 0
    fallbacks: int = 0
    capped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, k: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + k)


class StockfishPool:
    """Stockfish leaf evaluation for FoW search threads: one engine process per thread.

    `children(parent, children, moves, out)` returns White's values in [-1, 1] of a whole
    expanded leaf (children uint64 (n, 16), row i after moves[i]); `evaluate(positions)` scores
    single positions. Both run on the calling thread's own engine (`engine()`), started on
    first use; caches and counters are shared. Close the pool (or use it as a context manager)
    to stop every process.
    """

    def __init__(self, config: StockfishConfig | None = None) -> None:
        self.config = config if config is not None else StockfishConfig()
        self.path = find_stockfish(self.config.path)
        self._local = threading.local()
        self._engines: list[StockfishEngine] = []
        self._lock = threading.Lock()
        self._leaves = _Lru(self.config.cache_entries)
        self._answers = _Lru(self.config.cache_entries)
        self._counters = _Counters()
        self._fallback = SimpleEvaluator(SEE_EVAL)  # past own_call_cap, a failed engine
        self._closed = False

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def engine(self) -> StockfishEngine:
        """Return the calling thread's engine, starting it on first use."""
        eng: StockfishEngine | None = getattr(self._local, "engine", None)
        if eng is not None and not eng.closed:
            return eng
        with self._lock:
            if self._closed:
                raise StockfishError("the Stockfish pool was closed")
            live = sum(1 for e in self._engines if not e.closed)
            if live >= self.config.max_engines:
                raise StockfishError(
                    f"{live} Stockfish engines already run (max_engines = "
                    f"{self.config.max_engines}); one per calling thread"
                )
            eng = StockfishEngine(self.path, self.config)
            self._engines.append(eng)
        self._local.engine = eng
        return eng

    def new_game(self) -> None:
        """Start a new game on every engine (`StockfishEngine.new_game`) and forget the caches
        and counters: the next game's scores are those a fresh pool would give."""
        with self._lock:
            engines = [e for e in self._engines if not e.closed]
            self._leaves = _Lru(self.config.cache_entries)
            self._answers = _Lru(self.config.cache_entries)
            self._counters = _Counters()
        for eng in engines:
            eng.new_game()

    def close(self) -> None:
        """Stop every engine process; idempotent."""
        with self._lock:
            self._closed = True
            engines = list(self._engines)
        for eng in engines:
            eng.close()

    def stats(self) -> PoolStats:
        """Return the counters so far."""
        with self._lock:
            engines = list(self._engines)
        c = self._counters
        return PoolStats(
            engines=len(engines),
            leaf_calls=c.leaf_calls,
            own_calls=c.own_calls,
            leaf_cache_hits=c.leaf_cache_hits,
            answer_cache_hits=c.answer_cache_hits,
            restarts=sum(e.restarts for e in engines),
            fallbacks=c.fallbacks,
            capped=c.capped,
            engine_seconds=sum(e.seconds for e in engines),
        )

    # evaluation ----------------------------------------------------------------------------

    def children(
        self,
        parent: np.ndarray,
        children: np.ndarray,
        moves: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Return White's value in [-1, 1] of each child of `parent` (see the class doc).

        parent uint64 (16,); children uint64 (>= n, 16); moves uint16 (n,); out float64
        (>= n,) or None. Decided children are exact; the rest come from one MultiPV call on
        the parent plus own calls for chess-forbidden moves (module docstring).
        """
        n = _check_leaf(parent, children, moves)
        if self._closed:
            raise StockfishError("the Stockfish pool was closed")
        values = _out(out, n)
        pkey = int(zobrist_key(parent))
        leaf_cache = self._caches()[0]
        hit = leaf_cache.get(pkey)
        if hit is not None and np.array_equal(hit[0], moves[:n]):
            self._counters.add("leaf_cache_hits")
            values[:n] = hit[1]
            return values
        rows = children[:n]
        codes = decided(rows)
        values[:n] = DECIDED_VALUE[codes]
        open_ = np.flatnonzero(codes == UNDECIDED)
        if open_.size == 0:
            leaf_cache.put(pkey, (moves[:n].copy(), values[:n].copy()))
            return values
        sign = 1.0 if int(parent[W_STM]) == WHITE else -1.0
        self.engine()
        try:
            own = open_
            if int(decided(parent[None, :].copy())[0]) == UNDECIDED:
                (answer,) = self._answers_of(parent[None, :], "leaf_calls")
                found = np.zeros(open_.size, dtype=np.bool_)
                if answer.keys.size:
                    wanted = move_keys(moves[open_])
                    at = np.minimum(np.searchsorted(answer.keys, wanted), answer.keys.size - 1)
                    found = answer.keys[at] == wanted
                    values[open_[found]] = sign * answer.values[at[found]]
                own = open_[~found]
            cap = self.config.own_call_cap
            if cap is not None and own.size > cap:
                past = own[cap:]
                own = own[:cap]
                self._counters.add("capped", past.size)
                values[past] = self._fallback.evaluate(np.ascontiguousarray(rows[past]))
            if own.size:
                # each child's side to move is the mover's opponent: negate its value
                answers = self._answers_of(rows[own], "own_calls")
                values[own] = [-sign * a.best for a in answers]
        except StockfishError as exc:
            values[open_] = self._fall_back(rows[open_], exc)
            return values
        leaf_cache.put(pkey, (moves[:n].copy(), values[:n].copy()))
        return values

    def evaluate(self, positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Return White's value in [-1, 1] of each row of `positions` (uint64 (n, 16))."""
        _check_positions(positions)
        if self._closed:
            raise StockfishError("the Stockfish pool was closed")
        n = positions.shape[0]
        values = _out(out, n)
        codes = decided(positions)
        values[:n] = DECIDED_VALUE[codes]
        open_ = np.flatnonzero(codes == UNDECIDED)
        if open_.size:
            self.engine()
            signs = np.where(positions[open_, W_STM] == 0, 1.0, -1.0)
            try:
                answers = self._answers_of(positions[open_], "own_calls")
                values[open_] = signs * np.array([a.best for a in answers])
            except StockfishError as exc:
                values[open_] = self._fall_back(positions[open_], exc)
        return values

    def _caches(self) -> tuple[_Lru, _Lru]:
        """The leaf and answer caches the calling thread reads and writes."""
        return self._leaves, self._answers

    @property
    def width(self) -> int:
        """How many engines a call from the calling thread spreads over (`spread`): one here;
        `SlotPool` spreads the calls of an unbound thread over its slots."""
        return 1

    def spread(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run `jobs` (at most `width`), job i on engine i, and return their results in
        order: here one after the other on the calling thread's engine."""
        if len(jobs) > self.width:
            raise ValueError(f"{len(jobs)} jobs for {self.width} engines")
        return [job() for job in jobs]

    def _search(self, fens: Sequence[bytes]) -> list[bytes]:
        """The calling thread's engine's answers to `fens`, spread over `width` engines in
        contiguous parts when there are several."""
        parts = split_evenly(len(fens), self.width)
        if len(parts) <= 1:
            return self.engine().search(fens)
        got = self.spread([functools.partial(self._search_one, fens[lo:hi]) for lo, hi in parts])
        return [block for part in got for block in part]

    def _search_one(self, fens: Sequence[bytes]) -> list[bytes]:
        return self.engine().search(fens)

    def _fall_back(self, rows: np.ndarray, exc: StockfishError) -> np.ndarray:
        """White's values of rows from the built-in evaluator, after the engine failed."""
        logger.error("Stockfish failed; the built-in evaluator scores %d positions: %s",
                     rows.shape[0], exc)
        self._counters.add("fallbacks")
        return self._fallback.evaluate(np.ascontiguousarray(rows))

    def _answers_of(self, rows: np.ndarray, counter: str) -> list[Answer]:
        """Engine answers for undecided positions rows (uint64 (k, 16)): from the cache, the
        rest from one pipelined batch on the calling thread's engine (counted in `counter`)."""
        keys = [int(zobrist_key(row)) for row in rows]
        cache = self._caches()[1]
        answers: list[Answer | None] = [cache.get(key) for key in keys]
        todo = [j for j, a in enumerate(answers) if a is None]
        if len(todo) < len(keys):
            self._counters.add("answer_cache_hits", len(keys) - len(todo))
        if todo:
            buf = np.empty(FEN_BYTES, dtype=np.uint8)
            blocks = self._search([fen_bytes(rows[j], buf) for j in todo])
            self._counters.add(counter, len(todo))
            for j, block in zip(todo, blocks, strict=True):
                answer = parse_answer(block, self.config.scale_cp)
                answers[j] = answer
                cache.put(keys[j], answer)
        return [a for a in answers if a is not None]


def split_evenly(n: int, width: int) -> list[tuple[int, int]]:
    """`n` items cut into at most `width` contiguous parts of near-equal size (none empty)."""
    k = max(1, min(n, width))
    bounds = [n * i // k for i in range(k + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(k) if bounds[i + 1] > bounds[i]]


def _check_leaf(parent: np.ndarray, children: np.ndarray, moves: np.ndarray) -> int:
    _check_position(parent, "parent")
    _check_array(moves, np.uint16, 1, "moves")
    _check_array(children, np.uint64, 2, "children", POS_WORDS)
    n = moves.shape[0]
    if children.shape[0] < n:
        raise ValueError(f"{n} moves but only {children.shape[0]} child rows")
    return int(n)


class SlotPool(StockfishPool):
    """A `StockfishPool` whose engines belong to slots, not threads.

    A search starts fresh expander threads at every move; a plain pool would start new
    processes every move. `bind(slot)` makes the calling thread use slot `slot`'s engine
    (slot i of every search's expanders reuses one process); unbound threads use slot 0's: an
    agent calls from one thread at a time outside its search (the subgame's roots, a
    deterministic search's leaves, a move's work on its watchdog thread) and never while an
    expander runs (a process is ~120 MB). Those calls are spread over every started slot
    (`width`): the subgame's construction (Stockfish's time, one core busy) took 117 ms of a
    1 s move while the other core, whose expander waits for the search, stood idle. Counters and
    caches are the pool's, but a spread's helper threads keep caches of their own (`_caches`).
    """

    def __init__(self, config: StockfishConfig | None = None) -> None:
        super().__init__(config)
        self._slots: dict[int, StockfishEngine] = {}
        self._slot_lock = threading.Lock()
        self._bound = threading.local()
        self._width = 1
        self._helpers: list[ThreadPoolExecutor] = []
        self._helper_caches: list[tuple[_Lru, _Lru]] = []

    def start(self, slots: int) -> None:
        """Start the engines of slots 0 .. slots-1 now (off the clock: a process takes about
        0.1 s to start); an unbound thread's calls spread over them from now on."""
        bound = getattr(self._bound, "slot", None)
        try:
            for slot in range(max(1, slots)):
                self._bound.slot = slot
                self.engine()
        finally:
            self._bound.slot = -1 if bound is None else bound
        self._width = max(self._width, slots)

    def _caches(self) -> tuple[_Lru, _Lru]:
        """A spread's helper thread has caches of its own, so that what each engine is asked,
        and so a game under an iteration budget, does not depend on which part of a spread
        call reached a position first (the caller's part keeps the pool's)."""
        own: tuple[_Lru, _Lru] | None = getattr(self._bound, "caches", None)
        return own if own is not None else super()._caches()

    def _helper_start(self, slot: int, caches: tuple[_Lru, _Lru]) -> None:
        self.bind(slot)
        self._bound.caches = caches

    def new_game(self) -> None:
        """`StockfishPool.new_game`, the helpers' caches too."""
        super().new_game()
        with self._slot_lock:
            for leaves, answers in self._helper_caches:
                leaves.clear()
                answers.clear()

    @property
    def width(self) -> int:
        """Every started slot for an unbound thread (the agent's own calls), one for a thread
        bound to a slot (an expander, or a part of a spread call)."""
        return 1 if getattr(self._bound, "slot", -1) >= 0 else self._width

    def spread(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run `jobs` (at most `width`) at once and return their results in order: job 0 on
        the calling thread with slot 0's engine, job i on a helper thread bound to slot i
        (started at the first spread). Every job has ended when this returns or raises (the
        first error of a job is raised)."""
        if len(jobs) <= 1:
            return super().spread(jobs)
        if len(jobs) > self.width:
            raise ValueError(f"{len(jobs)} jobs for {self.width} engines")
        with self._slot_lock:
            if self._closed:
                raise StockfishError("the Stockfish pool was closed")
            while len(self._helpers) < len(jobs) - 1:
                slot = len(self._helpers) + 1
                caches = (_Lru(self.config.cache_entries), _Lru(self.config.cache_entries))
                self._helper_caches.append(caches)
                self._helpers.append(ThreadPoolExecutor(
                    1, thread_name_prefix=f"stockfish-slot-{slot}",
                    initializer=self._helper_start, initargs=(slot, caches)))
            helpers = self._helpers[: len(jobs) - 1]
        futures = [h.submit(job) for h, job in zip(helpers, jobs[1:], strict=True)]
        self._bound.slot = 0
        try:
            first = jobs[0]()
        finally:
            self._bound.slot = -1
            wait(futures)
        return [first] + [f.result() for f in futures]

    def close(self) -> None:
        """Stop every engine process and the helper threads; idempotent."""
        super().close()
        with self._slot_lock:
            helpers, self._helpers = self._helpers, []
        for h in helpers:
            h.shutdown(wait=True)

    def bind(self, slot: int) -> None:
        """Use slot `slot`'s engine on the calling thread from now on."""
        self._bound.slot = int(slot)

    def engine(self) -> StockfishEngine:
        """The engine of the calling thread's slot (slot 0's when unbound), started on first
        use."""
        slot = max(0, int(getattr(self._bound, "slot", -1)))
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


__all__ = [
    "DEBIAN_DIR",
    "Answer",
    "PoolStats",
    "SlotPool",
    "StockfishConfig",
    "StockfishEngine",
    "StockfishError",
    "StockfishNotFoundError",
    "StockfishPool",
    "fen_bytes",
    "find_stockfish",
    "mate_value",
    "move_keys",
    "parse_answer",
    "score_value",
    "split_evenly",
    "uci_key",
]
