"""The set P of positions a FoW chess player cannot tell apart (Obscuro, section 3, appendix E.1).

Obscuro "maintains the full set P of possible positions given the observations that it has seen
so far" (Obscuro, section 3): P starts as the known initial position and is updated

- after the player's own move m: P <- {s.m : s in P, obs(s.m) = o}, and
- after an opponent move: P <- {s.m : s in P, m a FoW move of s, obs(s.m) = o},

where o is the observation the player actually received. Each runs in numba kernels: for an
opponent ply, `_filter_kernel` makes every move of a round of parents and compares the player's
observation (`caligo.fow.observation.observe_kernel`) with o, after a cheap necessary test
(the pieces on o's visible squares), and `_insert_kernel` inserts the matches into a hash table
that drops duplicates (on `BeliefConfig.threads` > 1, helper threads filter the next rounds
while one inserts, in visit order: the same result, sooner); `_own_move_kernel` (own move)
needs a table only in one case: the move's destination is visible, so its contents agree in
every parent and the move is undone by nothing but the castling rights it clears. Those are
the player's own (observed, equal in every parent) unless the move lands on the opponent's
king or rook home square (a capture there, e.g. `h1h8` or `g2h1r`): then the opponent's right
that told two parents apart is gone, and `_dedupe_kernel` merges the children
(`own_move_needs_dedupe`).

Storage. Positions that are the same for all future play are stored once: a row is the twelve
piece bitboards plus one packed word (side to move bit 0, castling rights bits 1-4, en-passant
square bits 5-11), 13 uint64 = 104 bytes. The en-passant square is kept only when the side to
move has a pawn that can capture there (otherwise it changes no future move or observation).
Clocks and the repetition history are not stored: the 50-move and repetition draws are declared
by the referee, who holds the true position (Obscuro, appendix A; Zhang & Sandholm 2021, appendix
B.1: the agent "ignores draw rules" for transpositions). So a P row stands for every history
reaching it.

Memory cap. `BeliefConfig.max_positions` bounds the stored rows. When more distinct positions are
consistent, P becomes a uniform random sample of them, of size `max_positions`: the distinct
children with the smallest salted fingerprints (a bottom-k sample; a fresh random salt per update
makes it uniform). The set says so: `exact` is False and `size_seen` holds the number of distinct
consistent positions the update found, with `size_kind` saying how good that number is: exact
(every distinct child's 16-byte fingerprint is kept, up to `count_factor * max_positions` of
them), an estimate past that bound (the table then keeps only the smallest fingerprints, and the
count is scaled by the fraction of the fingerprint space they cover), or a lower bound once P is
a sample (later updates run from the sample). `exact` stays False from then on.

Deduplication compares 128-bit fingerprints (two independent 64-bit hashes of the 104-byte row):
a false merge needs a 128-bit collision, probability about n^2 / 2^129 (10^-21 at n = 10^9).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from caligo.fow.belief_kernels import (
    ROW_BYTES,
    ROW_WORDS,
    _pack_many,
    _unpack_many,
)
from caligo.fow.belief_update import (
    BeliefConfig,
    BeliefError,
    EmptyUpdateError,
    Scratch,
    SizeKind,
    UpdateStats,
    _buffer_sizes,
    _expand,
    _Expansion,
    _Pending,
    _Update,
)
from caligo.fow.observation import Observation
from caligo.fow.position import (
    POS_WORDS,
    STARTING_FEN,
    W_CLOCKS,
    Position,
    PositionLike,
    from_fen,
    position_array,
    resolve_move,
    to_fen,
)
from caligo.fow.values import Color, ColorLike, MoveLike, color
from caligo.limits import Deadline


@dataclass(frozen=True, eq=False, repr=False)
class BeliefSet:
    """A player's set P of possible positions: rows uint64 (n, ROW_WORDS), one per position.

    `exact` is False once the memory cap forced a uniform subsample; `size_seen` is the number
    of distinct consistent positions found by the last update, exact, a lower bound or an
    estimate as `size_kind` says (see the module docstring). `subsampled`: an update since the
    start or the last redraw kept only part of the consistent positions (the memory cap, or a
    partial update truncated), so other sampling salts or more time could keep others; False
    for an exact set, and given False by a redraw (`caligo.fow.reseed`), whose descendants are
    its guesses until the cap thins them.
    `ply` counts plies since the initial position; `fullmove0` is its full-move number.

    Iterating gives the positions as `Position`s, `fens()` as FEN strings and `sample()` a
    uniform sample of `Position`s; the engine's fast path takes arrays: `rows`, `positions()`
    and `sample_array()`.
    """

    player: int  # stored as a Color: any `color()` spelling is converted
    rows: np.ndarray
    ply: int
    exact: bool
    size_seen: int
    size_kind: SizeKind = SizeKind.EXACT
    config: BeliefConfig = field(default_factory=BeliefConfig)
    fullmove0: int = 1
    last: UpdateStats | None = None
    pending: _Pending | None = field(default=None, repr=False)
    subsampled: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "player", color(self.player))
        if self.exact:
            object.__setattr__(self, "subsampled", False)

    @property
    def partial(self) -> bool:
        """True while an opponent-ply update stopped at its deadline is unfinished: the rows
        are the children of the parents expanded so far (an evenly spread subset of them),
        and `complete` or `truncate` decides what happens to the rest."""
        return self.pending is not None

    @classmethod
    def initial(
        cls,
        player: ColorLike,
        fen: str | Position = STARTING_FEN,
        config: BeliefConfig | None = None,
    ) -> BeliefSet:
        """Return P = {the initial position} (both players know it) for `player` (a Color,
        "white"/"black", 0/1 or python-chess's True/False)."""
        who = color(player)
        pos = fen.arr if isinstance(fen, Position) else from_fen(fen)
        rows = np.empty((1, ROW_WORDS), dtype=np.uint64)
        _pack_many(pos[None, :], rows)
        return cls(
            player=who,
            rows=rows,
            ply=0,
            exact=True,
            size_seen=1,
            config=config or BeliefConfig(),
            fullmove0=int(pos[W_CLOCKS]) >> 32,
        )

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def __repr__(self) -> str:
        if self.exact:
            size = "exact"
        else:
            bound = {SizeKind.EXACT: "", SizeKind.LOWER_BOUND: ">= ", SizeKind.ESTIMATE: "~",
                     SizeKind.REDRAWN: "redrawn "}
            size = f"sample of {bound[self.size_kind]}{self.size_seen}"
        return f"<BeliefSet {self.player} ply={self.ply} |P|={len(self)} {size}>"

    def __iter__(self) -> Iterator[Position]:
        for i in range(len(self)):
            yield Position(self.positions(np.arange(i, i + 1))[0])

    def __contains__(self, pos: object) -> bool:
        return isinstance(pos, Position | np.ndarray) and self.contains(pos)

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored rows."""
        return int(self.rows.nbytes)

    def _clocks(self) -> np.uint64:
        return np.uint64((self.fullmove0 + self.ply // 2) << 32)

    def positions(self, index: np.ndarray | None = None) -> np.ndarray:
        """Return stored positions as uint64 (k, 16) arrays (clocks not tracked: halfmove 0)."""
        rows = self.rows if index is None else self.rows[index]
        out = np.empty((rows.shape[0], POS_WORDS), dtype=np.uint64)
        _unpack_many(np.ascontiguousarray(rows), self._clocks(), out)
        return out

    def fens(self) -> list[str]:
        """Return the FENs of the stored positions (halfmove clock 0: clocks are not tracked)."""
        return [to_fen(p) for p in self.positions()]

    def _sample_index(self, k: int, rng: np.random.Generator | None) -> np.ndarray:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
            raise ValueError(f"sample size must be an int >= 0, got {k!r}")
        rng = rng if rng is not None else np.random.default_rng(self.config.seed)
        return np.sort(rng.choice(len(self), size=min(int(k), len(self)), replace=False))

    def sample(self, k: int, rng: np.random.Generator | None = None) -> list[Position]:
        """Return min(k, |P|) positions drawn uniformly without replacement, as Positions."""
        return [Position(p) for p in self.sample_array(k, rng)]

    def sample_array(self, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Return min(k, |P|) positions drawn uniformly without replacement, uint64 (k, 16)
        (the same draw as `sample` with the same rng)."""
        return self.positions(self._sample_index(k, rng))

    def contains(self, pos: PositionLike) -> bool:
        """Return True if `pos` (a Position or a uint64 (16,) array) is in P (clocks ignored)."""
        key = np.empty((1, ROW_WORDS), dtype=np.uint64)
        _pack_many(position_array(pos)[None, :], key)
        return bool(np.any(np.all(self.rows == key[0], axis=1)))

    def update_own_move(self, move: MoveLike, obs: Observation) -> BeliefSet:
        """Return P after the player's own move and the observation after it.

        `move` is a Move, UCI text, a `chess.Move` or a kernel code; it must be a FoW move of
        the positions in P (they agree on the player's own pieces, so on the player's moves).
        """
        if len(self) == 0:
            raise BeliefError("P is empty")
        code = resolve_move(self.positions(np.arange(1))[0], move)
        return self._update(code, obs)

    def scratch(self) -> Scratch:
        """The buffers of this set's next opponent-ply update, touched now (`Scratch`): the
        whole hash table, and as many rows as P has."""
        row_cap, tsize = _buffer_sizes(len(self), self.config)
        rows = np.empty((row_cap, ROW_WORDS), dtype=np.uint64)
        hashes = np.empty(row_cap, dtype=np.uint64)
        k = min(row_cap, len(self))
        rows[:k] = 0
        hashes[:k] = 0
        table = np.zeros((tsize, 2), dtype=np.uint64)
        table.fill(0)  # np.zeros maps pages lazily: fault them in now
        return Scratch(rows, hashes, table)

    def update_opponent_move(self, obs: Observation, deadline: Deadline | None = None,
                             spread: bool | None = None,
                             scratch: Scratch | None = None) -> BeliefSet:
        """Return P after an unseen opponent move, given the observation received after it.

        With a `deadline` the update stops at its hard instant (after at least one matching
        child) and returns a `partial` set: the children of the parents expanded so far,
        visited in a spread order (`spread`, default: when there is a deadline) so they are an
        evenly spread subset. Nothing is dropped yet: `complete()` expands the rest (later, on
        the opponent's time), `truncate()` gives it up and reports it (`exact` False, the size
        an estimate). A partial set is consumed by either call. `scratch`: buffers made ahead
        by `scratch()` (used when their sizes still fit).
        """
        self._check_update(-1, obs)
        if self.partial:
            return self.complete().update_opponent_move(obs, deadline, spread, scratch)
        exp = _Expansion(self.rows, int(self.player), obs.to_array(), self._clocks(),
                         self.config, np.random.default_rng([self.config.seed, self.ply]),
                         spread=deadline is not None if spread is None else spread,
                         scratch=scratch)
        upd = _Update(exp, obs, self.exact)
        exp.run(deadline)
        return self._after(upd)

    def complete(self, deadline: Deadline | None = None) -> BeliefSet:
        """Finish a partial update (all of it, or until `deadline`: still partial then);
        the set itself when it is not partial."""
        if self.pending is None:
            return self
        upd = self.pending.consume()
        upd.exp.run(deadline)
        return self._base()._after(upd)

    def truncate(self) -> BeliefSet:
        """Give up a partial update's unexpanded parents: P becomes the rows found so far, a
        reported subsample (`exact` False, `size_kind` ESTIMATE); the set itself when it is
        not partial."""
        if self.pending is None:
            return self
        rows, stats = self.pending.consume().exp.rows()
        return BeliefSet(self.player, rows, self.ply, False, stats.distinct, SizeKind.ESTIMATE,
                         self.config, self.fullmove0, stats, subsampled=True)

    def _base(self) -> BeliefSet:
        """The set the pending update started from (its ply, before the update)."""
        return replace(self, ply=self.ply - 1, pending=None)

    def _check_update(self, own_move: int, obs: Observation) -> None:
        if not isinstance(obs, Observation):
            raise TypeError(f"an update needs an Observation, got {type(obs).__name__}")
        if obs.player != self.player:
            raise BeliefError(f"{obs.player}'s observation given to {self.player}'s belief set")
        if self.partial:
            return  # the pending update comes first; its rows say who is to move then
        mover = Color(int(self.rows[0, 12] & 1)) if len(self) else None
        if (own_move >= 0) != (mover == self.player):
            who = "own" if own_move >= 0 else "opponent"
            raise BeliefError(f"{who} move update at ply {self.ply}, but {mover} is to move")

    def _after(self, upd: _Update) -> BeliefSet:
        """The set after the (possibly unfinished) opponent-ply update `upd`."""
        rows, stats = upd.exp.rows()
        if not upd.exp.done:
            return BeliefSet(self.player, rows, self.ply + 1, False, stats.distinct,
                             SizeKind.ESTIMATE, self.config, self.fullmove0, stats,
                             _Pending(upd, upd.generation), self.subsampled)
        return self._finished(rows, stats, upd.obs, upd.exact)

    def _finished(self, rows: np.ndarray, stats: UpdateStats, obs: Observation,
                  exact: bool) -> BeliefSet:
        if rows.shape[0] == 0 and exact:
            raise EmptyUpdateError(
                f"no position is consistent with observation {obs.dark_fen()!r} at ply "
                f"{self.ply + 1} ({self.player})", False)
        if rows.shape[0] == 0 and self.subsampled:
            raise EmptyUpdateError(
                f"the subsample of P (capped at max_positions={self.config.max_positions} or "
                f"cut short by a deadline) holds no position consistent with observation "
                f"{obs.dark_fen()!r} at ply {self.ply + 1} ({self.player}); the true P is not "
                f"empty", True)
        if rows.shape[0] == 0:
            raise EmptyUpdateError(
                f"P ({len(self)} positions descended from a redraw's guesses, none dropped "
                f"since) holds no position consistent with observation {obs.dark_fen()!r} at "
                f"ply {self.ply + 1} ({self.player}): every guess is refuted", False)
        kept_all = stats.distinct == rows.shape[0]  # the cap dropped none
        return BeliefSet(
            player=self.player,
            rows=rows,
            ply=self.ply + 1,
            exact=exact and kept_all,
            size_seen=stats.distinct,
            size_kind=(
                SizeKind.ESTIMATE
                if stats.distinct_estimated
                else SizeKind.EXACT
                if exact
                else SizeKind.LOWER_BOUND
            ),
            config=self.config,
            fullmove0=self.fullmove0,
            last=stats,
            subsampled=self.subsampled or not kept_all,
        )

    def _update(self, own_move: int, obs: Observation) -> BeliefSet:
        self._check_update(own_move, obs)
        if self.partial:
            return self.complete()._update(own_move, obs)
        rows, stats = _expand(
            self.rows,
            int(self.player),  # a plain int: numba cannot lower IntEnum members
            obs.to_array(),
            own_move,
            self._clocks(),
            self.config,
            np.random.default_rng([self.config.seed, self.ply]),
        )
        return self._finished(rows, stats, obs, self.exact)


PIECE_SAMPLE = 4096
"""Positions of P that `piece_shares` counts by default (all of P when it holds fewer)."""
_SHARE_CHUNK = 4096  # rows unpacked to bits at once (6 * 64 bytes a row)


@dataclass(frozen=True, eq=False)
class PieceShares:
    """Where P puts the opponent's pieces: `counts[k, s]` is the number of counted positions
    with the opponent's piece of kind k (0 pawn, 1 knight, 2 bishop, 3 rook, 4 queen, 5 king)
    on square s (a1 = 0, h8 = 63).

    color: whose pieces (the opponent of P's player). sample: positions counted, all of P
    when |P| <= the sample size asked for, else that many drawn uniformly without
    replacement. size: |P| (stored positions). A square holds one piece at most, so
    `counts[:, s].sum()` counts the positions with any of the opponent's pieces on s.
    """

    color: Color
    counts: np.ndarray
    sample: int
    size: int

    @property
    def shares(self) -> np.ndarray:
        """float64 (6, 64): counts / sample, the share of the counted positions (0 if none)."""
        return self.counts / max(self.sample, 1)

    @property
    def exact(self) -> bool:
        """True when every position of P was counted (no sampling)."""
        return self.sample == self.size


def piece_shares(belief: BeliefSet, max_sample: int = PIECE_SAMPLE,
                 rng: np.random.Generator | None = None) -> PieceShares:
    """Count, per square and kind, the positions of P with one of the opponent's pieces there.

    All of P when |P| <= max_sample, otherwise a uniform sample of max_sample positions
    (`rng`, default: seeded from P's config, as `BeliefSet.sample` draws): the counts are then
    an unbiased estimate of |P| * share, with a standard error of at most 0.5 / sqrt(max_sample)
    on each share. Cost: one pass over the counted rows' six bitboards (unpacked to bits in
    chunks), no move generation.
    """
    if not isinstance(belief, BeliefSet):
        raise TypeError(f"piece_shares needs a BeliefSet, got {type(belief).__name__}")
    if isinstance(max_sample, bool) or not isinstance(max_sample, int | np.integer) \
            or max_sample < 1:
        raise ValueError(f"max_sample must be an int >= 1, got {max_sample!r}")
    n = len(belief)
    rows = belief.rows if n <= max_sample else belief.rows[belief._sample_index(max_sample, rng)]
    them = 1 - int(belief.player)
    counts = np.zeros((6, 64), dtype=np.int64)
    for start in range(0, rows.shape[0], _SHARE_CHUNK):
        boards = np.ascontiguousarray(rows[start:start + _SHARE_CHUNK, 6 * them:6 * them + 6],
                                      dtype="<u8")
        bits = np.unpackbits(boards.view(np.uint8).reshape(-1, 6, 8), axis=2, bitorder="little")
        counts += bits.sum(axis=0, dtype=np.int64)
    return PieceShares(Color(them), counts, int(rows.shape[0]), n)


def pack_positions(positions: np.ndarray) -> np.ndarray:
    """Return the rows (uint64 (n, ROW_WORDS)) of positions uint64 (n, 16) (ep normalized)."""
    positions = np.ascontiguousarray(positions, dtype=np.uint64)
    if positions.ndim != 2 or positions.shape[1] != POS_WORDS:
        raise ValueError(f"positions must have shape (n, {POS_WORDS}), got {positions.shape}")
    out = np.empty((positions.shape[0], ROW_WORDS), dtype=np.uint64)
    _pack_many(positions, out)
    return out


__all__ = [
    "PIECE_SAMPLE",
    "ROW_BYTES",
    "ROW_WORDS",
    "BeliefConfig",
    "BeliefError",
    "BeliefSet",
    "EmptyUpdateError",
    "PieceShares",
    "SizeKind",
    "UpdateStats",
    "pack_positions",
    "piece_shares",
]
