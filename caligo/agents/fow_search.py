"""Fog of War chess as the search sees it: `FowSearchGame`, `FowBelief` and `FowEvaluator`.

`caligo.search` is game-agnostic and must not import `caligo.fow` (docs/design.md, "Layout"); this
module is the glue (docs/design.md, "Agents" and "The game interface and the evaluators").

`FowSearchGame` implements `caligo.search.game.SearchGame` over a flat position store: a
uint64 array of rows of `POS_WORDS` (16) words, growing by chunks and never holding a Python
object per node. A search *state* is a row index. `expand(states)` runs one numba call over the
whole batch: for every parent, `caligo.fow.expand.expand_kernel` writes its children straight
into fresh rows of the store together with both players' observation keys and the terminal
verdicts (king capture: +-1; no FoW move at all: the draw, 0), so no Python runs per child. The
keys are `KeyMode.INCREMENTAL`: a child's key is the hash of what the player observes there
(`caligo.fow.expand.observation_key`), and the search folds it into the observation-sequence
key together with the player's own action. `state_key` is the Zobrist key
(`caligo.fow.position.zobrist_key`), so transpositions share it; `true_infoset_states` is None
(the rules cannot list an infoset; the belief set is the player's own).

`FowBelief` is the search's `BeliefTracker` over `caligo.fow.BeliefSet` (the exact set P of
positions consistent with the player's observations; Obscuro, section 3). Its memory cap is
`BeliefConfig.max_positions`; past it P is a uniform subsample and `exact` says so. Because the
search's tracker receives only the observation's key, the caller first hands it the
`Observation` (`expect`), or passes the `Observation` itself to `update`. `sample` draws
uniformly without replacement from P minus the states already in the tree (by Zobrist key), as
Obscuro, Fig. 9 line 11 and Zhang & Sandholm 2021, Algorithm 15 line 16 ask; weights are 1 (no
chance in FoW).

`FowEvaluator` is the search's `Evaluator` over a `caligo.fow` leaf evaluator
(`SimpleEvaluator`, `StockfishPool`): White's (player 0's) values in [-1, 1], one
`children(parent, children, moves)` call per expanded leaf (one MultiPV call for Stockfish),
the whole batch in one call for the built-in evaluator. `StockfishPool` gives every calling
thread its own engine process, so one pool serves all expander threads.

Thread safety: expander threads may call `expand` concurrently. Rows are reserved and written
under one lock (the store may be reallocated while it is held); readers take the store
reference after they know their row ids, and rows are never rewritten, so they read a
consistent copy without the lock. `compact(keep)` renumbers the store between searches; callers
remap their state ids with its result (`compact_arena` does it for a search arena).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from caligo.agents.base import Decision
from caligo.agents.fow_kernels import (
    _count_kernel,
    _describe_kernel,
    _expand_states_kernel,
    _forcing_kernel,
    _positions_zobrist_kernel,
    _zobrist_kernel,
)
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.belief_update import Scratch
from caligo.fow.errors import FowError
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.expand import observation_key
from caligo.fow.observation import Observation
from caligo.fow.position import (
    KING,
    POS_WORDS,
    STARTING_FEN,
    from_fen,
    move_to_uci,
)
from caligo.limits import Deadline, Overdue
from caligo.search.arena import Arena
from caligo.search.config import SearchError
from caligo.search.game import ChildBatch, KeyMode, StateInfo

__all__ = [
    "FowBelief",
    "FowEvaluator",
    "FowSearchError",
    "FowSearchGame",
    "compact_arena",
    "emergency_move",
    "evaluator_factory",
    "join_overdue",
    "overdue_answer",
]

I64 = np.ndarray

log = logging.getLogger(__name__)

CHUNK_ROWS = 1 << 16
"""The store grows by at least this many rows (8 MB) at a time."""

class FowSearchError(SearchError, CaligoError):
    """Bad input to the FoW search adapters (a state id, an observation, a position)."""


def join_overdue(name: str, out: Overdue[Any] | None) -> None:
    """Let an overdue move's work end (call it off the clock, before anything touches P or the
    tree); its decision is dropped, and what it raised is logged."""
    if out is None:
        return
    try:
        out.join()
    except Exception:
        log.exception("%s: an overdue move's work failed", name)


def overdue_answer(name: str, out: Overdue[Any], answer_ms: float,
                   history: Sequence[tuple[int | None, Observation]], color: int,
                   legal: Sequence[int], rng: np.random.Generator, late: int) -> Decision:
    """The answer of a move whose work `out` is overdue at its answer instant (`answer_ms`
    from the move's start): the emergency move, logged with where the work was; its analysis
    says `overdue` and how many moves of the game were (`late`)."""
    move = emergency_move(history, color, legal, rng)
    # logged when the work is joined, off the clock (`Overdue.note`)
    out.note = (f"{name}: the move's work overran its answer instant ({answer_ms:.0f} ms, "
                f"control back {1000.0 * out.late_s:.0f} ms after it, the work at "
                f"{out.where or '?'}); played {move_to_uci(move)}")
    return Decision(move, info={"overdue": True, "overdue_moves": late,
                                "late_ms": round(1000.0 * out.late_s, 1)})


def emergency_move(history: Sequence[tuple[int | None, Observation]], color: int,
                   legal: Sequence[int], rng: np.random.Generator) -> int:
    """A move with no search behind it (P lost, or a move's work overdue): capture a visible
    king, else a uniformly drawn legal move. Reads only the last observation of `history`
    (the agent's `(own move, observation)` transcript): safe beside a search still running."""
    obs = history[-1][1] if history else None
    move = int(legal[int(rng.integers(len(legal)))])
    if obs is not None:
        king = obs.pieces[(1 - color) * 6 + KING] & obs.visible
        if king:
            sq = king.bit_length() - 1
            move = next((int(m) for m in legal if (int(m) >> 6) & 63 == sq), move)
    return move


# --- the game --------------------------------------------------------------------------------


class FowSearchGame:
    """`caligo.search.game.SearchGame` over a flat FoW position store (module docstring).

    start_fen: the game's public start position (row 0 after `reset`). capacity: initial rows.
    """

    key_mode = KeyMode.INCREMENTAL

    def __init__(self, start_fen: str = STARTING_FEN, capacity: int = CHUNK_ROWS) -> None:
        self._lock = threading.Lock()
        self._store = np.zeros((max(int(capacity), 16), POS_WORDS), dtype=np.uint64)
        self._used = 0
        self.start_fen = start_fen
        self.reset(start_fen)

    # --- store -----------------------------------------------------------------------------

    def reset(self, start_fen: str | None = None) -> None:
        """Empty the store and put the start position in row 0 (a new game)."""
        if start_fen is not None:
            pos = from_fen(start_fen)  # FenError quoting the FEN
            self.start_fen = start_fen
        else:
            pos = from_fen(self.start_fen)
        with self._lock:
            self._used = 0
            self._store[0] = pos
            self._used = 1

    @property
    def size(self) -> int:
        """Rows in use."""
        return self._used

    @property
    def nbytes(self) -> int:
        """Bytes held by the store (rows allocated, used or not)."""
        return int(self._store.nbytes)

    def _reserve(self, n: int) -> int:
        """Reserve n rows (lock held); return the first. Grows the store by chunks."""
        need = self._used + n
        cap = self._store.shape[0]
        if need > cap:
            grown = max(need, cap + max(CHUNK_ROWS, cap // 2))
            store = np.zeros((grown, POS_WORDS), dtype=np.uint64)
            store[: self._used] = self._store[: self._used]
            self._store = store
        first = self._used
        self._used = need
        return first

    def add_positions(self, positions: np.ndarray) -> I64:
        """Store positions (uint64 (k, 16)); return their state ids."""
        pos = np.ascontiguousarray(positions, dtype=np.uint64)
        if pos.ndim != 2 or pos.shape[1] != POS_WORDS:
            raise FowSearchError(f"positions must be uint64 (k, {POS_WORDS}), got {pos.shape}")
        with self._lock:
            first = self._reserve(pos.shape[0])
            self._store[first : first + pos.shape[0]] = pos
        return np.arange(first, first + pos.shape[0], dtype=np.int64)

    def positions(self, states: I64) -> np.ndarray:
        """Copies of the positions of `states` (uint64 (k, 16))."""
        s = self._check(states)
        out: np.ndarray = self._store[s]
        return out

    def compact(self, keep: I64) -> I64:
        """Keep only the rows `keep` (renumbered 0.. in the given order, duplicates collapsed);
        return the new id of each entry of `keep`. Call between searches: every state id held
        elsewhere must be remapped (`compact_arena`). Row 0 stays the start position."""
        k = self._check(keep)
        uniq = np.unique(k)
        uniq = uniq[uniq != 0]
        with self._lock:
            rows = np.concatenate([self._store[:1], self._store[uniq]])
            cap = max(self._store.shape[0] // 2, rows.shape[0] + CHUNK_ROWS)
            store = np.zeros((cap, POS_WORDS), dtype=np.uint64)
            store[: rows.shape[0]] = rows
            self._store = store
            self._used = rows.shape[0]
        new_of = np.zeros(int(k.max(initial=0)) + 1, dtype=np.int64)
        new_of[uniq] = np.arange(1, uniq.size + 1)
        out: np.ndarray = new_of[k]
        return out

    def _check(self, states: I64) -> np.ndarray:
        s = np.asarray(states, dtype=np.int64).ravel()
        if s.size and (s.min() < 0 or s.max() >= self._used):
            bad = s[(s < 0) | (s >= self._used)]
            raise FowSearchError(f"state ids must lie in [0, {self._used}), got {bad[:8]!r}")
        return s

    # --- SearchGame ------------------------------------------------------------------------

    def start_state(self) -> int:
        """Row 0: the game's public start position."""
        return 0

    def describe(self, states: I64) -> StateInfo:
        """Side to move (or TERMINAL), White's terminal utility, both observation keys."""
        s = self._check(states)
        player = np.empty(s.size, dtype=np.int8)
        utility = np.empty(s.size, dtype=np.float64)
        obs = np.empty((s.size, 2), dtype=np.uint64)
        _describe_kernel(self._store, s, player, utility, obs)
        return StateInfo(player=player, utility=utility, obs=obs)

    def expand(self, states: I64) -> ChildBatch:
        """All FoW children of each state, made in one kernel call into new store rows."""
        s = self._check(states)
        counts = np.empty(s.size, dtype=np.int64)
        total = int(_count_kernel(self._store, s, counts))
        if total < 0:
            raise FowSearchError("cannot expand a state whose game is over (a king is captured)")
        ptr = np.empty(s.size + 1, dtype=np.int64)
        child = np.empty(total, dtype=np.int64)
        action = np.empty(total, dtype=np.int32)
        player = np.empty(total, dtype=np.int8)
        obs = np.empty((total, 2), dtype=np.uint64)
        utility = np.empty(total, dtype=np.float64)
        with self._lock:
            row0 = self._reserve(total)
            n = int(_expand_states_kernel(self._store, s, row0, ptr, child, action, player, obs,
                                          utility))
        if n != total:  # pragma: no cover - count_moves and gen_moves agree (movegen tests)
            raise FowSearchError(f"expansion made {n} children, the count pass said {total}")
        prob = np.ones(total, dtype=np.float64)
        return ChildBatch(ptr=ptr, state=child, action=action, player=player, chance_prob=prob,
                          obs=obs, utility=utility)

    def state_key(self, states: I64) -> np.ndarray:
        """The Zobrist key of each state (equal for transpositions)."""
        s = self._check(states)
        out = np.empty(s.size, dtype=np.uint64)
        _zobrist_kernel(self._store, s, out)
        return out

    def true_infoset_states(self, state: int, player: int) -> I64 | None:
        """None: FoW chess cannot list a player's infoset (the belief set is the player's)."""
        return None

    def forcing(self, parents: I64, children: I64, actions: np.ndarray) -> np.ndarray:
        """bool per child: a capture, a promotion or a check (Zhang & Sandholm 2021, appendix D.2's
        move ordering)."""
        p = self._check(parents)
        c = self._check(children)
        if p.size != c.size:
            raise FowSearchError(f"{p.size} parents for {c.size} children")
        out = np.empty(c.size, dtype=np.bool_)
        _forcing_kernel(self._store, p, c, np.asarray(actions, dtype=np.int32), out)
        return out


def compact_arena(game: FowSearchGame, arena: Arena) -> None:
    """Compact the game's store to the states of `arena`'s nodes and remap them in place."""
    n = arena.n_nodes
    states = arena.nodes.state[:n]
    arena.nodes.state[:n] = game.compact(states)


# --- the belief ------------------------------------------------------------------------------


REPAIR_ATTEMPTS = 3
"""Replays with fresh sampling salts before a lost P is given up (`FowBelief`)."""


class _ReplayLate(Exception):
    """A replay of P passed its deadline (`FowBelief._repair`)."""


class FowBelief:
    """The search's `BeliefTracker` over `caligo.fow.BeliefSet` (module docstring).

    player: the seat (0 White, 1 Black). config: the belief set's settings (memory cap).
    max_states: the most positions `states()` copies into the game's store.

    An opponent ply's update is lazy: `update` only queues the observation, and the agent
    applies it within its move's belief stage (`settle(deadline)`); any query settles it
    first without a deadline. A settle cut short by its deadline leaves P `partial` (the
    children of an evenly spread part of the parents); `finish(deadline)` completes it after
    the agent's move (on the opponent's time) or, past its deadline, gives the rest up and
    says so (P is then a reported subsample). An own move's update runs at once.

    Repair. When the memory cap made P a uniform subsample, an observation may leave none of
    its positions (the true P is not empty: `BeliefError`). The update then replays the
    observations since the last exact P with fresh sampling salts (`REPAIR_ATTEMPTS` times);
    if no replay survives, P is given up (`lost`: every later update is skipped and the agent
    plays its emergency move, `emergency_move`) rather than raising into the agent.
    `repairs` counts the replays that succeeded.
    """

    def __init__(self, game: FowSearchGame, player: int, config: BeliefConfig | None = None,
                 max_states: int = 100_000) -> None:
        if player not in (0, 1):
            raise FowSearchError(f"player must be 0 or 1, got {player!r}")
        self.game = game
        self.player = int(player)
        self.config = config if config is not None else BeliefConfig()
        self.max_states = int(max_states)
        self._pending: Observation | None = None
        self._queued: Observation | None = None
        self._scratch: Scratch | None = None  # the next update's buffers (`prepare`)
        self._set = BeliefSet.initial(self.player, game.start_fen, self.config)
        self.cut = 0  # partial updates given up (P became a reported subsample)
        self._base = self._set  # the last exact P, and the observations since (repair)
        self._since: list[tuple[int | None, Observation]] = []
        self.repairs = 0
        self.lost = False

    @property
    def set(self) -> BeliefSet:
        """P (any queued update applied first)."""
        self.settle()
        return self._set

    @set.setter
    def set(self, value: BeliefSet) -> None:
        self._queued = None
        self._scratch = None
        self._set = value

    def reset(self) -> None:
        """P = {the game's start position}."""
        self._pending = None
        self._queued = None
        self._scratch = None
        self.cut = 0
        self._set = BeliefSet.initial(self.player, self.game.start_fen, self.config)
        self._base = self._set
        self._since = []
        self.repairs = 0
        self.lost = False

    def expect(self, observation: Observation) -> None:
        """The observation the next `update(key, ...)` stands for."""
        self._pending = observation

    def update(self, obs: int | Observation, own_action: int | None = None) -> None:
        """Keep the positions consistent with one more observation (after own_action, if it
        was our ply). `obs` is the Observation, or its key after `expect(observation)`. An
        opponent ply's update is queued for `settle`."""
        if isinstance(obs, Observation):
            o = obs
        else:
            pending = self._pending
            if pending is None or observation_key(pending) != int(obs):
                raise FowSearchError(f"observation key {int(obs)} does not match the expected "
                                     "observation (call expect(observation) first)")
            o = pending
        self._pending = None
        if self.lost:  # P was given up: nothing follows it any more
            return
        if own_action is not None:
            self.settle()
            self._since.append((int(own_action), o))
            self._scratch = None  # sized for the set before
            try:
                if self._set.partial:
                    self._set = self._set.complete()
                self._set = self._set.update_own_move(int(own_action), o)
            except FowError as exc:
                self._repair(exc)
            self._checkpoint()
        else:
            self.settle()  # a second opponent ply in a row (never in FoW chess): apply the first
            self._since.append((None, o))
            self._queued = o

    @property
    def queued(self) -> bool:
        """True while an opponent ply's update waits for `settle`."""
        return self._queued is not None

    def drop(self) -> None:
        """Forget a queued update (an agent that gave P up only follows its key)."""
        self._queued = None

    def prepare(self) -> None:
        """Make the next opponent-ply update's buffers now (`BeliefSet.scratch`): after our own
        ply, on the opponent's time, so that a timed update does not pay its page faults."""
        self._scratch = None if self._set.partial else self._set.scratch()

    def settle(self, deadline: Deadline | None = None, spread: bool | None = None,
               repair_by: Deadline | None = None) -> None:
        """Apply the queued opponent-ply update, within `deadline` (P may stay `partial`);
        `spread`: visit the parents in a spread order (default: when there is a deadline);
        `repair_by`: where a replay of a P that lost the truth must end (`_repair`). The
        queued observation is dropped only once its update succeeded."""
        o = self._queued
        if o is None:
            return
        scratch, self._scratch = self._scratch, None
        try:
            self._set = self._set.update_opponent_move(o, deadline, spread, scratch)
        except FowError as exc:
            self._queued = None
            self._repair(exc, repair_by)
            return
        self._queued = None
        self._checkpoint()

    def finish(self, deadline: Deadline | None = None) -> bool:
        """Complete a partial update (until `deadline`); past it, give the rest up (P becomes
        a reported subsample). Return True when P was completed (or was not partial)."""
        self.settle()
        if self.lost or not self._set.partial:
            return True
        try:
            self._set = self._set.complete(deadline)
        except FowError as exc:
            self._repair(exc)
            return True
        if self._set.partial:
            self._set = self._set.truncate()
            self.cut += 1
            return False
        self._checkpoint()
        return True

    def _checkpoint(self) -> None:
        """An exact, complete P is the base a repair replays from."""
        if self._set.exact and not self._set.partial and not self.lost:
            self._base = self._set
            self._since = []

    def _repair(self, exc: FowError, by: Deadline | None = None) -> None:
        """The capped subsample lost every position consistent with an observation: replay
        the observations since the last exact P with fresh sampling salts; if no replay
        survives, or `by` passes between two replayed plies, give P up (`lost`). The class
        docstring says why."""
        log.warning("%s; replaying %d plies with new salts", exc, len(self._since))
        base = self._base
        why = f"no subsample survived {REPAIR_ATTEMPTS} replays"
        for attempt in range(1, REPAIR_ATTEMPTS + 1):
            cfg = replace(base.config, seed=base.config.seed + 7919 * attempt)
            bel = replace(base, config=cfg)
            try:
                for own, obs in self._since:
                    if by is not None and by.passed():
                        raise _ReplayLate
                    bel = (bel.update_opponent_move(obs) if own is None
                           else bel.update_own_move(own, obs))
            except FowError:
                continue
            except _ReplayLate:
                why = f"the replays did not fit the move's time (attempt {attempt})"
                break
            self._set = bel
            self._scratch = None
            self.repairs += 1
            return
        log.error("P is lost (%s); playing without it", why)
        self.lost = True
        self._queued = None
        self._scratch = None

    @property
    def partial(self) -> bool:
        """True while P holds only part of an opponent ply's update (see `finish`)."""
        return self._queued is None and self._set.partial

    def size_hint(self) -> int:
        """|P| as last computed (a queued update not applied): for planning a move."""
        return len(self._set)

    # --- Belief ----------------------------------------------------------------------------

    @property
    def exact(self) -> bool:
        """False once the memory cap made P a uniform subsample."""
        return bool(self.set.exact)

    @property
    def nbytes(self) -> int:
        """Bytes P occupies (its rows)."""
        return self.set.nbytes

    def size(self) -> int:
        """|P| (stored positions)."""
        return len(self.set)

    def states(self) -> I64:
        """All of P, copied into the game's store (refused beyond `max_states`)."""
        if self.size() > self.max_states:
            raise FowSearchError(f"|P| = {self.size()} exceeds max_states = {self.max_states}")
        return self.game.add_positions(self.set.positions())

    def weights(self, states: I64) -> np.ndarray:
        """1 for every state (FoW chess has no chance)."""
        return np.ones(np.asarray(states).shape[0], dtype=np.float64)

    def sample(self, n: int, exclude: np.ndarray, rng: np.random.Generator) -> I64:
        """Up to n positions of P drawn uniformly without replacement among those whose Zobrist
        key is not in `exclude`, stored in the game; their state ids.

        A uniformly ordered draw of n + |exclude| distinct rows, filtered, keeps its first n:
        a prefix of a uniform random order of P, restricted to P minus the excluded, is a
        uniform sample of it.
        """
        size = self.size()
        if n <= 0 or size == 0:
            return np.zeros(0, dtype=np.int64)
        ex = np.unique(np.asarray(exclude, dtype=np.uint64))
        draw = rng.choice(size, size=min(size, int(n) + ex.size), replace=False)
        pos = self.set.positions(draw)
        keys = np.empty(pos.shape[0], dtype=np.uint64)
        _positions_zobrist_kernel(pos, keys)
        keep = np.flatnonzero(~np.isin(keys, ex))[: int(n)]
        return self.game.add_positions(pos[keep])


# --- the evaluator ---------------------------------------------------------------------------


class FowEvaluator:
    """The search's `Evaluator` over a `caligo.fow` leaf evaluator (module docstring)."""

    def __init__(self, game: FowSearchGame, leaf: LeafEvaluator) -> None:
        self.game = game
        self.leaf = leaf

    def children(self, parents: I64, batch: ChildBatch) -> np.ndarray:
        """White's value of every child in `batch` (one leaf-evaluator call per parent; one for
        the whole batch with the built-in evaluator)."""
        n = int(batch.ptr[-1])
        values = np.empty(n, dtype=np.float64)
        if n == 0:
            return values
        kids = self.game.positions(batch.state)
        if isinstance(self.leaf, SimpleEvaluator):
            return self.leaf.evaluate(kids, values)
        par = self.game.positions(parents)
        moves = np.ascontiguousarray(batch.action, dtype=np.uint16)
        ptr = batch.ptr
        for i in range(par.shape[0]):
            lo, hi = int(ptr[i]), int(ptr[i + 1])
            if hi > lo:
                self.leaf.children(par[i], kids[lo:hi], moves[lo:hi], values[lo:hi])
        return values

    def states(self, states: I64) -> np.ndarray:
        """White's value of each state."""
        s = np.asarray(states, dtype=np.int64)
        if s.size == 0:
            return np.zeros(0, dtype=np.float64)
        return self.leaf.evaluate(self.game.positions(s))


def evaluator_factory(game: FowSearchGame, leaf: LeafEvaluator) -> Callable[[], FowEvaluator]:
    """A factory for the search's expander threads. `StockfishPool` hands each calling thread
    its own engine process, and `SimpleEvaluator` is thread-safe, so they share `leaf`."""
    return lambda: FowEvaluator(game, leaf)
