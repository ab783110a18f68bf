"""The update of P (`caligo.fow.belief`) as it runs: its settings (`BeliefConfig`), what it
reports (`UpdateStats`, `SizeKind`), its errors, and the driver of the opponent-ply kernels
(`_Expansion`: rounds of parents filtered, on helper threads when there are several, and
inserted in visit order; buffers that grow, a table that is bounded, a deadline checked between
rounds, a partial update finished later). `BeliefSet` in `caligo.fow.belief` is the API."""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from caligo.fow.belief_kernels import (
    _ALL,
    BATCH,
    ROW_WORDS,
    S_DISTINCT,
    S_ILLEGAL,
    S_MATCHED,
    S_NEXT,
    S_ROWS,
    S_TABLE,
    S_TESTED,
    S_WORDS,
    ST_DONE,
    ST_GROW_ROWS,
    ST_OVERFLOW,
    _dedupe_kernel,
    _filter_kernel,
    _insert_kernel,
    _own_move_kernel,
    _shrink,
    _trim,
    _unpack_many,
    own_move_needs_dedupe,
)
from caligo.fow.errors import FowError, TooManyMovesError
from caligo.fow.movegen import MAX_MOVES
from caligo.fow.observation import Observation
from caligo.fow.position import (
    POS_WORDS,
    to_fen,
)
from caligo.limits import Deadline

MAX_THREADS = 64
LANE_SPAN = 4096
"""Parents in one round of an update at most (bounds a round's buffer of children)."""
MIN_SPLIT = 256
"""An update with fewer parents left runs on one thread (a hand-off costs tens of
microseconds, a parent a few)."""
ROUNDS = 8
"""Rounds an update with no deadline on more than one thread is cut into, at least (more
overlap, more hand-offs)."""
MIN_ROUND = 32
FIRST_ROUND = 256
"""Parents in a timed update's first round, before its pace is known."""
ROUND_SECONDS = 2e-3
"""A timed update's round on one thread (divided among the rounds in flight when pipelined):
about how far past its hard instant it may stop."""

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's helper threads for updates on more than one thread (made at first use;
    updates of several games share them)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=MAX_THREADS,
                                       thread_name_prefix="caligo-belief")
        return _POOL


def _forget_pool() -> None:
    """In a forked child (a match runner's worker): the parent's helper threads are not
    there, and its lock may have been held by one of them; start afresh."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)

_LOCAL = threading.local()


@contextmanager
def one_thread() -> Iterator[None]:
    """Within the block, updates run by this thread use one thread whatever their config: an
    agent's work on its opponent's time, while the opponent's search has the other cores."""
    before = getattr(_LOCAL, "one", False)
    _LOCAL.one = True
    try:
        yield
    finally:
        _LOCAL.one = before


class SizeKind(Enum):
    """How `BeliefSet.size_seen` relates to the true |P|."""

    EXACT = "exact"  # the update ran from an exact P and counted every distinct child
    LOWER_BOUND = "lower bound"  # the update ran from a sample: the true |P| is at least this
    ESTIMATE = "estimate"  # too many to count within the memory bound: a bottom-k estimate
    REDRAWN = "redrawn"  # P was lost and drawn afresh from one observation (`caligo.fow.reseed`)


class BeliefError(FowError):
    """A belief update that cannot be right: e.g. P became empty (observations inconsistent)."""


class EmptyUpdateError(BeliefError):
    """An update left P empty. `replayable`: an update since the start or the last redraw
    dropped consistent positions (the memory cap, or a cut), so other sampling salts or more
    time could keep one; when False every replay of the same observations repeats it."""

    def __init__(self, message: str, replayable: bool) -> None:
        super().__init__(message)
        self.replayable = replayable


@dataclass(frozen=True)
class BeliefConfig:
    """Settings of a belief set.

    max_positions: memory cap, in stored positions (104 bytes each).
    count_factor: an update counts distinct children exactly up to count_factor * max_positions
        (16-byte fingerprints); past that it keeps counting a bottom-k sketch and reports an
        estimate. Peak update memory is about (208 + 64 * count_factor) bytes * max_positions
        on top of P itself, and a round's children per thread (a few MB) while it runs.
    seed: seeds the per-update fingerprint salt, hence which positions a capped P keeps.
    threads: threads an opponent-ply update runs on: while one inserts a round of parents'
        children into the table, the others filter the next rounds' parents. The children
        are inserted in visit order, so the result is the same for any number; only the
        speed differs.
    """

    max_positions: int = 2_000_000
    count_factor: int = 4
    seed: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.max_positions, int) or self.max_positions < 1:
            raise ValueError(f"max_positions must be a positive int, got {self.max_positions!r}")
        if not isinstance(self.count_factor, int) or self.count_factor < 2:
            raise ValueError(f"count_factor must be an int >= 2, got {self.count_factor!r}")
        if not isinstance(self.threads, int) or not 1 <= self.threads <= MAX_THREADS:
            raise ValueError(f"threads must be an int in [1, {MAX_THREADS}], got "
                             f"{self.threads!r}")


@dataclass(frozen=True)
class UpdateStats:
    """What one update did: candidate children tested, matching children (before
    deduplication), distinct matches (an estimate when `distinct_estimated`: the counting table
    hit its limit), parents lacking the own move (always 0 unless observations and moves
    disagree)."""

    tested: int
    matched: int
    distinct: int
    distinct_estimated: bool
    illegal_parents: int


@dataclass
class _Update:
    """An opponent-ply update that stopped at a deadline, shared by the partial sets made
    from it; `generation` counts them, so only the newest one may go on (an older one would
    repeat or skip work)."""

    exp: _Expansion
    obs: Observation
    exact: bool  # the parents were exact
    generation: int = 0


@dataclass(frozen=True)
class _Pending:
    """What a partial set holds: its update and the generation it saw."""

    update: _Update
    generation: int

    def consume(self) -> _Update:
        """The update, for the one call that goes on from this set; BeliefError if an
        earlier call did already."""
        upd = self.update
        if upd.generation != self.generation:
            raise BeliefError("this partial belief set was already completed or truncated "
                              "(use the set the last call returned)")
        upd.generation += 1
        return upd


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _spread_multiplier(n: int) -> int:
    """An int near n / golden ratio coprime to n: visiting i -> (mul * i + add) % n spreads
    every prefix of the visits evenly over the n parents (a Weyl sequence)."""
    if n <= 2:
        return 1
    mul = max(1, round(n * _GOLDEN))
    while math.gcd(mul, n) != 1:
        mul += 1
    return mul % n or 1


def _buffer_sizes(n: int, config: BeliefConfig) -> tuple[int, int]:
    """(rows, hash-table slots) an update of `n` parents starts with (`_Expansion`)."""
    cap = config.max_positions
    row_limit = 2 * cap + MAX_MOVES + BATCH
    row_cap = min(max(1024, 4 * n), row_limit)
    tsize = 1 << max(11, int(2 * min(row_cap, config.count_factor * cap)).bit_length())
    return row_cap, tsize


@dataclass(eq=False)
class Scratch:
    """The buffers of the next opponent-ply update, made and touched ahead of it
    (`BeliefSet.scratch`): an update's first writes into fresh memory are page faults, its
    hash table's random ones the worst (a 100,000-row P's update spent 40 ms of a 30 ms
    belief stage on them on a 2-core machine). An agent makes the scratch after its own ply,
    on the opponent's time. One update uses it (`used`); a second one given it allocates its
    own (the table is no longer zero)."""

    rows: np.ndarray
    hashes: np.ndarray
    table: np.ndarray
    used: bool = False


@dataclass(eq=False)
class _Lane:
    """The buffers of one round of an update: the children its parents' filter kept (rows,
    fingerprints) and its counters (`_filter_kernel`'s lstate), reused round after round so
    they grow once. A helper thread fills a lane while another lane's children are
    inserted."""

    rows: np.ndarray = field(default_factory=lambda: np.empty((8192, ROW_WORDS), np.uint64))
    fps: np.ndarray = field(default_factory=lambda: np.empty((8192, 2), np.uint64))
    lstate: np.ndarray = field(default_factory=lambda: np.zeros(S_WORDS, np.int64))
    status: int = ST_DONE

    def filter(self, exp: _Expansion, start: int, end: int) -> None:
        """Filter the parents of visits start .. end - 1 into this lane's buffers, growing
        them until it is done (or hits a hand-built parent: `status` ST_OVERFLOW)."""
        ls = self.lstate
        ls[:] = 0
        ls[S_NEXT] = start
        while True:
            self.status = _filter_kernel(
                exp.src, end, exp.n, exp.mul, exp.add, exp.player, exp.target, exp.clocks,
                exp.salt, self.rows, self.fps, ls, MAX_MOVES)
            if self.status == ST_GROW_ROWS:  # another parent's moves might not fit
                n = int(ls[S_ROWS])
                self.rows = np.concatenate([self.rows[:n], np.empty_like(self.rows)])
                self.fps = np.concatenate([self.fps[:n], np.empty_like(self.fps)])
                continue
            return


class _Pace:
    """How big an update's next round is, and whether it stops (`_Expansion.run`): with no
    deadline, rounds of `even` parents and no stop; with one, rounds of about `seconds` at
    the pace measured between insertions on the deadline's own clock (FIRST_ROUND before
    that, never more than half the time left), and a stop once the hard instant passed and
    a child was found."""

    def __init__(self, deadline: Deadline | None, exp: _Expansion, seconds: float,
                 even: int) -> None:
        self.deadline = deadline
        self.exp = exp
        self.seconds = seconds
        self.even = even
        self.per: float | None = None  # seconds a visit takes
        self.mark = (deadline.now() if deadline is not None else 0.0, exp.visited)

    def stopping(self) -> bool:
        d = self.deadline
        return d is not None and d.passed() and self.exp.state[S_ROWS] > 0

    def size(self) -> int:
        d = self.deadline
        if d is None:
            return self.even
        if self.per is None:
            return FIRST_ROUND
        target = min(self.seconds, max(d.left(), 0.0) / 2)
        return max(MIN_ROUND, min(LANE_SPAN, int(target / max(self.per, 1e-9))))

    def measure(self) -> None:
        """Take the pace of the visits inserted since the last call."""
        if self.deadline is None:
            return
        now, visited = self.deadline.now(), self.exp.visited
        if visited > self.mark[1]:
            self.per = (now - self.mark[0]) / (visited - self.mark[1])
            self.mark = (now, visited)


class _Expansion:
    """One opponent-ply update of P in progress: the kernel's buffers and counters, resumable
    between deadlines (`run`), with the rows found so far available at any time (`rows`).

    Parents are visited in a spread order when `spread` (`_spread_multiplier`, random offset):
    then the children found before a deadline are those of an evenly spread subset of P,
    which is what a cut-off update keeps. Without `spread`, the natural order (the rows come
    out exactly as a one-go update makes them).

    `rows()` lends its buffer's first rows rather than copying them (a 1M-row copy into fresh
    pages took 250 ms of a 390 ms belief stage on this machine, past its deadline): the
    kernel only appends past them, and before anything rewrites them in place (a resumed
    update, a trim at the cap) the buffer is copied (`_own`), on the opponent's time.
    """

    def __init__(self, rows: np.ndarray, player: int, target: np.ndarray, clocks: np.uint64,
                 config: BeliefConfig, rng: np.random.Generator, spread: bool,
                 scratch: Scratch | None = None) -> None:
        cap = config.max_positions
        self.src = np.ascontiguousarray(rows)
        self.n = int(self.src.shape[0])
        self.player = player
        self.target = target
        self.clocks = clocks
        self.cap = cap
        self.salt = np.uint64(rng.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
        self.mul, self.add = 1, 0
        if spread and self.n > 2:
            self.mul = _spread_multiplier(self.n)
            self.add = int(rng.integers(0, self.n))
        top = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
        self.top = top
        self.threshold = top  # rows stored: fingerprints <= threshold
        self.count_threshold = top  # fingerprints counted: <= count_threshold
        self.count_limit = config.count_factor * cap
        self.row_limit = 2 * cap + MAX_MOVES + BATCH
        row_cap, tsize = _buffer_sizes(self.n, config)
        if (scratch is not None and not scratch.used
                and scratch.rows.shape == (row_cap, ROW_WORDS)
                and scratch.table.shape == (tsize, 2)):
            scratch.used = True
            self.out_rows, self.out_hash, self.table = scratch.rows, scratch.hashes, scratch.table
        else:
            self.out_rows = np.empty((row_cap, ROW_WORDS), dtype=np.uint64)
            self.out_hash = np.empty(row_cap, dtype=np.uint64)
            self.table = np.zeros((tsize, 2), dtype=np.uint64)
        self.state = np.zeros(S_WORDS, dtype=np.int64)
        self.threads = config.threads
        self._lanes: list[_Lane] = []
        self.seconds = 0.0
        self._lent = False  # out_rows[:S_ROWS] is held by a set (`rows`)

    @property
    def visited(self) -> int:
        """Parents expanded so far."""
        return int(self.state[S_NEXT])

    @property
    def done(self) -> bool:
        """True once every parent was expanded."""
        return self.visited >= self.n

    def run(self, deadline: Deadline | None = None) -> bool:
        """Expand more parents, a round at a time: all of them, or until `deadline`'s hard
        instant (at least one round, and on until a child is found: P is never empty), on
        the config's threads (one inside `one_thread`). Return `done`.

        A round filters its parents (`_Lane.filter`), then inserts their children
        (`_insert`). On more than one thread the rounds are pipelined: helper threads filter
        the next rounds while this one inserts the last, in visit order, so the result is the
        one-thread result. Under a deadline, rounds take about `ROUND_SECONDS` of the pace
        measured on the deadline's clock, divided among the rounds in flight when pipelined,
        so the update stops within about that much of its hard instant (rounds still being
        filtered then are dropped, to be filtered again if it goes on). A finished update
        lets its rounds' buffers go."""
        t0 = time.perf_counter()
        self._own()
        threads = 1 if getattr(_LOCAL, "one", False) else self.threads
        ahead = threads - 1 if self.n - self.visited >= MIN_SPLIT else 0
        even = max(MIN_ROUND, min(LANE_SPAN, -(-(self.n - self.visited) // ROUNDS)))
        pace = _Pace(deadline, self, ROUND_SECONDS / (ahead + 1),
                     even if ahead else LANE_SPAN)
        if ahead == 0:
            lane = self._lane(0)
            while not self.done and not pace.stopping():
                lane.filter(self, self.visited, min(self.n, self.visited + pace.size()))
                self._insert(lane)
                pace.measure()
        else:
            self._pipeline(ahead, pace)
        if self.done:
            self._lanes = []
        self.seconds += time.perf_counter() - t0
        return self.done

    def _pipeline(self, ahead: int, pace: _Pace) -> None:
        """`run` on 1 + `ahead` threads: up to `ahead` rounds filtered by helpers while this
        thread inserts the round before them."""
        pending: deque[tuple[_Lane, Future[None]]] = deque()
        free = [self._lane(j) for j in range(ahead + 1)]
        nxt = self.visited  # the first visit no round has taken yet

        def launch() -> None:
            nonlocal nxt
            while len(pending) < ahead and nxt < self.n and not pace.stopping():
                lane = free.pop()
                end = min(self.n, nxt + pace.size())
                pending.append((lane, _pool().submit(lane.filter, self, nxt, end)))
                nxt = end

        try:
            launch()
            while pending and not pace.stopping():  # a round filtered for nothing is dropped
                lane, job = pending.popleft()
                job.result()
                launch()  # the next rounds are filtered while this one is inserted
                self._insert(lane)
                pace.measure()
                free.append(lane)
        finally:  # at a stop or an error: no helper may still write into a lane
            for _, job in pending:
                job.cancel()
            wait([job for _, job in pending])

    def _lane(self, j: int) -> _Lane:
        while len(self._lanes) <= j:
            self._lanes.append(_Lane())
        return self._lanes[j]

    def _insert(self, lane: _Lane) -> None:
        """Insert a filtered round's children, growing the buffers as asked, and take its
        counters; TooManyMovesError if it stopped at a hand-built parent."""
        state = self.state
        ls = lane.lstate
        n, lo = int(ls[S_ROWS]), 0
        while lo < n:
            lo = _insert_kernel(lane.rows, lane.fps, lo, n, self.threshold,
                                self.count_threshold, self.out_rows, self.out_hash,
                                self.table, state)
            if lo < n:
                self._grow()
        state[S_TESTED] += ls[S_TESTED]
        state[S_MATCHED] += ls[S_MATCHED]
        state[S_NEXT] = ls[S_NEXT]
        if lane.status == ST_OVERFLOW:
            raise _overflow(self.src[self.parent_of(self.visited)], self.clocks)

    def _grow(self) -> None:
        """Make room for another batch of insertions: a larger table, or a bounded one once
        it holds count_limit fingerprints; more rows, or a trim to the cap at the row
        limit."""
        cap = self.cap
        state = self.state
        if state[S_TABLE] + BATCH > self.table.shape[0] >> 1:
            if state[S_TABLE] < self.count_limit:
                new_table = np.zeros((2 * self.table.shape[0], 2), dtype=np.uint64)
                _shrink(self.table, new_table, _ALL)  # a plain rehash into a larger table
                self.table = new_table
                return
            # bound the table: keep counting only the distinct children whose fingerprint
            # is among the count_limit/2 smallest so far (a bottom-k sketch); the stored
            # rows, trimmed to the cap first, all lie below that bound
            if state[S_ROWS] > cap:
                self.threshold = np.uint64(
                    _trim(self.out_rows, self.out_hash, int(state[S_ROWS]), cap))
                state[S_ROWS] = cap
            hashes = self.table[:, 0][self.table[:, 0] != 0]
            k = self.count_limit // 2
            kth = np.partition(hashes, k - 1)[k - 1]
            self.count_threshold = np.uint64(max(int(kth), int(self.threshold)))
            new_table = np.zeros_like(self.table)
            state[S_TABLE] = _shrink(self.table, new_table, self.count_threshold)
            self.table = new_table
        elif self.out_rows.shape[0] < self.row_limit:
            grown = min(2 * self.out_rows.shape[0], self.row_limit)
            extra = grown - self.out_rows.shape[0]
            self.out_rows = np.concatenate(
                [self.out_rows, np.empty((extra, ROW_WORDS), dtype=np.uint64)])
            self.out_hash = np.concatenate([self.out_hash, np.empty(extra, dtype=np.uint64)])
        else:
            self.threshold = np.uint64(
                _trim(self.out_rows, self.out_hash, int(state[S_ROWS]), cap))
            state[S_ROWS] = cap

    def parent_of(self, visit: int) -> int:
        """The row index of the `visit`-th parent visited."""
        return (self.mul * visit + self.add) % max(self.n, 1)

    def _own(self) -> None:
        """Take the row buffer back from the sets it was lent to (copy its stored rows)."""
        if self._lent:
            n = int(self.state[S_ROWS])
            rows = np.empty_like(self.out_rows)
            rows[:n] = self.out_rows[:n]
            self.out_rows = rows
            self._lent = False

    def rows(self) -> tuple[np.ndarray, UpdateStats]:
        """The children found so far (at most the cap), lent (class docstring), and the
        statistics: the final result once `done`; before that, `distinct` estimates the
        whole update's count from the share of parents visited."""
        n = int(self.state[S_ROWS])
        if n > self.cap:
            self._own()
            self.threshold = np.uint64(_trim(self.out_rows, self.out_hash, n, self.cap))
            self.state[S_ROWS] = n = self.cap
        out = self.out_rows[:n]
        self._lent = True
        estimate: int | None = None
        if self.count_threshold != self.top:
            # distinct children estimated from the counted fraction of the fingerprint space
            estimate = round(int(self.state[S_TABLE]) * 2.0**64 / (int(self.count_threshold) + 1))
            estimate = max(estimate, n + 1)
        if not self.done:
            seen = estimate if estimate is not None else int(self.state[S_DISTINCT])
            estimate = max(n, round(seen * self.n / max(self.visited, 1)))
        return out, _stats(self.state, estimate)


def _expand(
    rows: np.ndarray,
    player: int,
    target: np.ndarray,
    own_move: int,
    clocks: np.uint64,
    config: BeliefConfig,
    rng: np.random.Generator,
) -> tuple[np.ndarray, UpdateStats]:
    """An own-move update (P's rows after `own_move` and the observation `target`), or a
    whole opponent-ply update run in one go.

    Returns (rows uint64 (k, ROW_WORDS) with k <= max_positions, the update's statistics).
    """
    src = np.ascontiguousarray(rows)
    if own_move >= 0:
        # |children| <= |parents| <= cap: no table, no trimming
        out = np.empty((src.shape[0], ROW_WORDS), dtype=np.uint64)
        st = np.zeros(S_WORDS, dtype=np.int64)
        n = _own_move_kernel(
            src, src.shape[0], player, target, own_move, clocks, out, st, MAX_MOVES
        )
        if n < 0:
            raise _overflow(src[int(st[S_NEXT])], clocks)
        if n > 1 and own_move_needs_dedupe(player, own_move):
            table = np.zeros((1 << max(4, (2 * n).bit_length()), 2), dtype=np.uint64)
            n = _dedupe_kernel(out, n, table)
            st[S_ROWS] = st[S_DISTINCT] = n
        return out[:n].copy(), _stats(st)
    exp = _Expansion(src, player, target, clocks, config, rng, spread=False)
    exp.run(None)
    return exp.rows()


def _overflow(row: np.ndarray, clocks: np.uint64) -> TooManyMovesError:
    pos = np.empty((1, POS_WORDS), dtype=np.uint64)
    _unpack_many(np.ascontiguousarray(row[None, :]), clocks, pos)
    return TooManyMovesError(
        f"a position of P, {to_fen(pos[0])!r}, has more than MAX_MOVES = {MAX_MOVES} FoW moves "
        "(possible only in a position built by hand)"
    )


def _stats(state: np.ndarray, estimate: int | None = None) -> UpdateStats:
    return UpdateStats(
        tested=int(state[S_TESTED]),
        matched=int(state[S_MATCHED]),
        distinct=int(state[S_DISTINCT]) if estimate is None else estimate,
        distinct_estimated=estimate is not None,
        illegal_parents=int(state[S_ILLEGAL]),
    )
