"""Fog of War chess as the search sees it: `FowSearchGame` and `FowEvaluator` (its belief
tracker, `FowBelief`, is `caligo.agents.fow_belief`).

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

`FowEvaluator` is the search's `Evaluator` over a `caligo.fow` leaf evaluator
(`SimpleEvaluator`, `StockfishPool`): White's (player 0's) values in [-1, 1], one
`children(parent, children, moves)` call per expanded leaf (one MultiPV call for Stockfish),
the whole batch in one call for the built-in evaluator. `StockfishPool` gives every calling
thread its own engine process, so one pool serves all expander threads; a call made outside the
search (the subgame's roots) is spread over the pool's `width` engines (`StockfishPool.spread`),
which `width` tells the expander.

Thread safety: expander threads may call `expand` concurrently. Rows are reserved and written
under one lock (the store may be reallocated while it is held); readers take the store
reference after they know their row ids, and rows are never rewritten, so they read a
consistent copy without the lock. `compact(keep)` renumbers the store between searches; callers
remap their state ids with its result (`compact_arena` does it for a search arena).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from caligo.agents.base import Decision
from caligo.agents.emergency import emergency_move
from caligo.agents.fow_kernels import (
    _count_kernel,
    _describe_kernel,
    _expand_states_kernel,
    _forcing_kernel,
    _zobrist_kernel,
)
from caligo.errors import CaligoError
from caligo.fow.evaluate import LeafEvaluator, SimpleEvaluator
from caligo.fow.observation import Observation
from caligo.fow.position import (
    POS_WORDS,
    STARTING_FEN,
    from_fen,
    move_to_uci,
)
from caligo.fow.stockfish import StockfishPool, split_evenly
from caligo.limits import Overdue
from caligo.search.arena import Arena
from caligo.search.config import SearchError
from caligo.search.game import ChildBatch, KeyMode, StateInfo

__all__ = [
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
        leaf = self.leaf

        def run(first: int, last: int) -> None:  # the parents first .. last-1, in order
            for i in range(first, last):
                lo, hi = int(ptr[i]), int(ptr[i + 1])
                if hi > lo:
                    leaf.children(par[i], kids[lo:hi], moves[lo:hi], values[lo:hi])

        parts = split_evenly(par.shape[0], self.width)
        if len(parts) > 1 and isinstance(leaf, StockfishPool):
            leaf.spread([functools.partial(run, lo, hi) for lo, hi in parts])
        else:
            run(0, par.shape[0])
        return values

    @property
    def width(self) -> int:
        """Leaves a `children` call evaluates at once (on as many engines) from the calling
        thread: the Stockfish pool's `width`, else 1."""
        return self.leaf.width if isinstance(self.leaf, StockfishPool) else 1

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
