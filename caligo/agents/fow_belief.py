"""Fog of War chess's belief for the search: `FowBelief`.

`FowBelief` is the search's `BeliefTracker` over `caligo.fow.BeliefSet` (the exact set P of
positions consistent with the player's observations; Obscuro, section 3). Its memory cap is
`BeliefConfig.max_positions`; past it P is a uniform subsample and `exact` says so. Because the
search's tracker receives only the observation's key, the caller first hands it the
`Observation` (`expect`), or passes the `Observation` itself to `update`. `sample` draws
uniformly without replacement from P minus the states already in the tree (by Zobrist key), as
Obscuro, Fig. 9 line 11 and Zhang & Sandholm 2021, Algorithm 15 line 16 ask, or, with
`weigh_roots`, weighted by which of them are likely the truth (`caligo.fow.plausible`);
weights are 1 (no chance in FoW).

The repair of a subsample that lost the truth (a resumable replay) is in the class docstring.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from caligo.agents.fow_kernels import _positions_zobrist_kernel
from caligo.agents.fow_search import I64, FowSearchError, FowSearchGame
from caligo.fow.belief import BeliefConfig, BeliefSet, SizeKind
from caligo.fow.belief_update import EmptyUpdateError, Scratch, one_thread
from caligo.fow.errors import FowError
from caligo.fow.expand import observation_key
from caligo.fow.last_seen import LastSeen
from caligo.fow.observation import Observation
from caligo.fow.plausible import hint_bins, log_weights
from caligo.fow.position import KIND_EN_PASSANT, PAWN
from caligo.fow.reseed import Hint, ReseedError, reseed, unseen_material
from caligo.limits import Deadline

__all__ = ["REDRAW_MIN", "REPAIR_ATTEMPTS", "SAMPLE_POOL", "TOP_UP", "FowBelief"]

log = logging.getLogger(__name__)

REPAIR_ATTEMPTS = 3
"""Replays with fresh sampling salts before a lost P is redrawn (`FowBelief._redraw`)."""
REDRAW_MIN = 64
"""The fewest positions a redrawn P may keep when the memory cap cut it (`FowBelief`); fewer,
and P is given up instead. With P capped at 3 positions, redrawing at every loss scored 40%
against the same engine giving P up and playing its emergency move (20 pairs, Elo -70 [-157,
+8]): a search over 3 guessed positions trusts them."""
TOP_UP = 256
"""With `last_seen`, the fewest positions a P descended from a redraw keeps after an opponent's
ply (`FowBelief._top_up`): the subgame's roots (`SearchConfig.min_roots`)."""
SAMPLE_POOL = 8
"""With `weigh_roots`, the positions of P drawn uniformly per root `FowBelief.sample` returns,
among which the roots are drawn by their weights (`caligo.fow.plausible`)."""


@dataclass
class _Replay:
    """A replay of P in progress (`FowBelief._repair`): its attempt (1 to `REPAIR_ATTEMPTS`;
    each with a salt of its own, `FowBelief._salted`), the set replayed so far and how many
    of the plies since the last exact P it has taken in."""

    attempt: int
    bel: BeliefSet
    done: int = 0
    futile: bool = False  # no update since the base dropped a position: every salt repeats it


class FowBelief:
    """The search's `BeliefTracker` over `caligo.fow.BeliefSet` (module docstring).

    player: the seat (0 White, 1 Black). config: the belief set's settings (memory cap).
    max_states: the most positions `states()` copies into the game's store. redraw_min: the
    fewest positions a redrawn P may keep when the memory cap cut it (`REDRAW_MIN`).
    last_seen: a redraw places the opponent's unseen pieces on the squares where they were
    last seen with the chance measured for such squares (`caligo.fow.last_seen`), not
    uniformly, and a P descended from a redraw is topped up to `TOP_UP` positions
    (`_top_up`). weigh_roots: `sample` prefers the positions that put the opponent's unseen
    pieces where they are likely to stand, as fitted on played games (`caligo.fow.plausible`).

    An opponent ply's update is lazy: `update` only queues the observation, and the agent
    applies it within its move's belief stage (`settle(deadline)`); any query settles it
    first without a deadline. A settle cut short by its deadline leaves P `partial` (the
    children of an evenly spread part of the parents); `finish(deadline)` completes it after
    the agent's move (on the opponent's time) or, past its deadline, gives the rest up and
    says so (P is then a reported subsample). An own move's update runs at once.

    Repair. When the memory cap made P a uniform subsample, an observation may leave none of
    its positions (the true P is not empty: `BeliefError`). The update then replays the
    observations since the last exact P with fresh sampling salts (`REPAIR_ATTEMPTS` times;
    none when nothing was dropped since that P or the last redraw, `EmptyUpdateError`'s
    `replayable`: every salt would repeat the failure). A replay runs within a deadline
    (`settle`'s `repair_by`: the move's repair stage): it never begins a capped update that
    the dearest one before it says would end past it, and an opponent's ply stops at it. If
    no replay survives, or one cannot finish by its deadline, P is drawn afresh from the
    last observation and the opponent's material (`caligo.fow.reseed`; `redraws` counts
    them), and given up for the rest of the game only if no position can be drawn (`lost`:
    the agent plays its emergency move, `caligo.agents.emergency`) rather than raising into
    the agent (with `last_seen`, the draw follows where the opponent's pieces were last
    seen). A replay begun by our own move's update (which runs after the move, without a
    deadline) waits for the next `settle` (`repairing`; P is unavailable meanwhile).
    `repairs` counts the replays that succeeded.
    """

    def __init__(self, game: FowSearchGame, player: int, config: BeliefConfig | None = None,
                 max_states: int = 100_000, redraw_min: int = REDRAW_MIN,
                 last_seen: bool = False, weigh_roots: bool = False) -> None:
        if player not in (0, 1):
            raise FowSearchError(f"player must be 0 or 1, got {player!r}")
        self.game = game
        self.player = int(player)
        self.config = config if config is not None else BeliefConfig()
        self.max_states = int(max_states)
        self.redraw_min = int(redraw_min)
        self.last_seen = bool(last_seen)
        self.weigh_roots = bool(weigh_roots)
        self._obs: Observation | None = None  # the last observation taken in
        self._pending: Observation | None = None
        self._queued: Observation | None = None
        self._scratch: Scratch | None = None  # the next update's buffers (`prepare`)
        self._set = BeliefSet.initial(self.player, game.start_fen, self.config)
        self._seen = LastSeen(self.player, self._set.positions(np.arange(1))[0])
        self.cut = 0  # partial updates given up (P became a reported subsample)
        # the last exact P, the observations since and the replay salts tried from it (repair)
        self._since: list[tuple[int | None, Observation]] = []
        self._rebase()
        self.repairs = 0
        self.redraws = 0  # Ps drawn afresh after every replay failed (`_redraw`)
        self.top_ups = 0  # redrawn Ps topped up with fresh draws (`_top_up`)
        self._replay: _Replay | None = None  # a replay of P in progress (`_repair`)
        self._gave_up = False  # no replay survived: P is gone for the rest of the game

    @property
    def lost(self) -> bool:
        """True while P is unavailable: given up, or a replay of it begun and not yet run."""
        return self._gave_up or self._replay is not None

    @property
    def repairing(self) -> bool:
        """True while a replay of P, begun by our own move's update, waits for the next settle
        (`_repair`)."""
        return self._replay is not None

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
        self._seen = LastSeen(self.player, self._set.positions(np.arange(1))[0])
        self._obs = None
        self._rebase()
        self.repairs = 0
        self.redraws = 0
        self.top_ups = 0
        self._replay = None
        self._gave_up = False

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
        self._seen.observe(o)
        self._obs = o
        if self._gave_up:  # P was given up: nothing follows it any more
            return
        if self._replay is not None:  # the replay takes this ply in when it goes on
            self._since.append((None if own_action is None else int(own_action), o))
            if own_action is None:
                self._queued = o  # the next move's settle resumes the replay
            return
        if own_action is not None:
            with one_thread():  # after our move: the opponent's time
                self.settle()
                self._since.append((int(own_action), o))
                self._scratch = None  # sized for the set before
                try:
                    if self._set.partial:
                        self._set = self._set.complete()
                    self._set = self._set.update_own_move(int(own_action), o)
                except FowError as exc:
                    self._repair(exc)  # begun only: the next settle runs it, within its move
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
        if self._replay is not None:  # `o` is in the replay's plies already
            self._queued = None
            self._resume(repair_by)
            return
        scratch, self._scratch = self._scratch, None
        try:
            self._set = self._set.update_opponent_move(o, deadline, spread, scratch)
        except FowError as exc:
            self._queued = None
            self._repair(exc)
            self._resume(repair_by)
            return
        self._queued = None
        self._checkpoint()
        self._top_up(o, deadline)

    def finish(self, deadline: Deadline | None = None) -> bool:
        """After our move (on the opponent's time): complete a partial update (until
        `deadline`), on one thread whatever P's config says (`one_thread`: the opponent's
        search has the other cores); past it, give the rest up (P becomes a reported
        subsample). Return True when P was completed (or was not partial)."""
        with one_thread():
            return self._finish(deadline)

    def _finish(self, deadline: Deadline | None) -> bool:
        self.settle()
        if self.lost or not self._set.partial:
            return True
        try:
            self._set = self._set.complete(deadline)
        except FowError as exc:
            self._repair(exc)
            if deadline is not None:  # without one, the replay waits for the next settle
                self._resume(deadline)
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
            self._rebase()

    def _rebase(self) -> None:
        """The current P is the base a repair replays from: no observation since, no salt
        tried."""
        self._base = self._set
        self._since = []
        self._salt = 0

    def _repair(self, exc: FowError) -> None:
        """The capped subsample lost every position consistent with an observation: begin a
        replay of the observations since the last exact P with fresh sampling salts
        (`_resume` runs it; the class docstring says what follows). When no update since
        that P (or the last redraw) dropped a consistent position (`EmptyUpdateError`'s
        `replayable` is False: the set that failed was exact, or a redraw's descendants the
        cap never thinned), the salts, which only choose what a capped update keeps, cannot
        change it, and `_resume` redraws at once instead of replaying the same updates three
        times (each as dear as the ones that failed)."""
        futile = isinstance(exc, EmptyUpdateError) and not exc.replayable
        log.warning("%s; %s", exc,
                    "no update since the last exact or redrawn P dropped a position: no salt "
                    "can change it" if futile else
                    f"replaying {len(self._since)} plies with new salts")
        self._replay = _Replay(1, self._salted(), futile=futile)

    def _salted(self) -> BeliefSet:
        """The last exact P, its sampling salted with a salt not tried from it yet (a replay
        that repaired P once and lost it again would only repeat its line; the salts before
        it failed earlier)."""
        self._salt += 1
        base = self._base
        return replace(base, config=replace(base.config,
                                            seed=base.config.seed + 7919 * self._salt))

    def _resume(self, by: Deadline | None) -> None:
        """Run the replay begun: its plies one by one until it has caught up (P is repaired),
        its subsample loses the truth (the next salt starts over; past the last, P is
        redrawn), or it runs out of time: P is then redrawn too (a replay of a dozen capped
        updates can take minutes; the moves meanwhile used to be played blind). It runs out
        of time when the next ply would end past `by`'s hard instant as far as the dearest
        ply replayed says (a ply is not begun only to be cut), or when an opponent's ply
        reaches that instant: the update stops there (`update_opponent_move`'s deadline)
        and its partial set is dropped. That bounds the first ply too, which has no dearest
        ply to go by (one took 5.4 s of a 1 s move at the 2,000,000-position cap)."""
        r = self._replay
        assert r is not None
        if r.futile:
            self._redraw(by, "P lost the truth in an update no replay can change")
            return
        began: float | None = None  # when the last ply began (on `by`'s clock)
        dearest = 0.0  # the longest ply replayed (seconds)
        while r.done < len(self._since):
            if by is not None:
                now = by.now()
                if began is not None:
                    dearest = max(dearest, now - began)
                began = now
                if now + dearest >= by.hard:
                    self._redraw(by, f"the replay of P (attempt {r.attempt}) reached its "
                                     f"deadline after {r.done} of {len(self._since)} plies "
                                     f"(the dearest took {1000.0 * dearest:.0f} ms)")
                    return
            own, obs = self._since[r.done]
            try:
                if own is None:  # in the order of an update with no deadline: same P
                    r.bel = r.bel.update_opponent_move(obs, deadline=by, spread=False)
                    if r.bel.partial:
                        self._redraw(by, f"the replay of P (attempt {r.attempt}) reached its "
                                         f"deadline within ply {r.done + 1} of "
                                         f"{len(self._since)}")
                        return
                else:
                    r.bel = r.bel.update_own_move(own, obs)
            except FowError as exc:
                if r.attempt == REPAIR_ATTEMPTS:
                    self._redraw(by, f"no subsample of P survived {REPAIR_ATTEMPTS} replays")
                    return
                if isinstance(exc, EmptyUpdateError) and not exc.replayable:
                    self._redraw(by, f"replay {r.attempt} of P lost it without dropping a "
                                     "position: no salt can change it")
                    return
                r = self._replay = _Replay(r.attempt + 1, self._salted())
                continue
            r.done += 1
        self._replay = None
        self._set = r.bel
        self._scratch = None
        self.repairs += 1

    def _redraw(self, by: Deadline | None, why: str) -> None:
        """No replay repaired P (`why`): draw P afresh from the last observation and the
        opponent's material (`caligo.fow.reseed`, its draws cut at `by`), the base of any
        later repair; if nothing can be drawn, give P up for the rest of the game."""
        self._replay = None
        self._queued = None
        self._scratch = None
        obs = self._since[-1][1]
        ply = self._base.ply + len(self._since)
        rng = np.random.default_rng([self._base.config.seed, ply, 0x5EED])
        try:
            drawn = self._draw(obs, ply, self._base.fullmove0, by, rng)
            if len(drawn) < min(drawn.size_seen, self.redraw_min):
                raise ReseedError(f"the memory cap left {len(drawn)} of the {drawn.size_seen} "
                                  f"positions drawn, fewer than {self.redraw_min}")
        except FowError as exc:
            log.error("P is lost (%s, and %s); playing without it", why, exc)
            self._gave_up = True
            return
        self._set = drawn
        log.warning("%s; P redrawn from the observation at ply %d: %d positions", why, ply,
                    len(self._set))
        self._rebase()
        self.redraws += 1

    def _draw(self, obs: Observation, ply: int, fullmove0: int, by: Deadline | None,
              rng: np.random.Generator) -> BeliefSet:
        """Positions drawn afresh from `obs` and the opponent's material (`caligo.fow.reseed`,
        the draws cut at `by`), with the last-seen prior when `last_seen`; raise FowError
        (ReseedError) when none can be drawn."""
        material = self._material()
        hints = self._seen.hints(obs, unseen_material(obs, material)) if self.last_seen else ()
        return reseed(obs, material, ply, fullmove0, self._base.config, rng=rng, deadline=by,
                      hints=hints)

    def _top_up(self, obs: Observation, by: Deadline | None) -> None:
        """With `last_seen`: a P descended from a redraw never holds the truth (a redraw
        guesses placements, the truth is one among millions), and each observation thins it
        until none is left and P is redrawn again; meanwhile the search trusts the few left
        (`REDRAW_MIN`). Below `TOP_UP` positions, P (complete, after the opponent's ply
        `obs`) gets fresh draws from `obs` as a redraw's (`caligo.fow.reseed`, the last-seen
        prior, the draws cut at `by`) up to `TOP_UP`, and is the base of a later repair as a
        redrawn P is (`top_ups` counts them)."""
        cur = self._set
        if (not self.last_seen or self._base.size_kind is not SizeKind.REDRAWN or cur.partial
                or len(cur) >= TOP_UP or self.lost):
            return
        rng = np.random.default_rng([self._base.config.seed, cur.ply, 0x70B])
        try:
            fresh = self._draw(obs, cur.ply, cur.fullmove0, by, rng)
        except FowError as exc:
            log.warning("P (%d positions) was not topped up: %s", len(cur), exc)
            return
        new = fresh.rows
        if len(new) > TOP_UP - len(cur):
            new = new[np.sort(rng.choice(len(new), TOP_UP - len(cur), replace=False))]
        rows = np.unique(np.concatenate([cur.rows, new]), axis=0)
        self._set = BeliefSet(
            player=self.player, rows=rows, ply=cur.ply, exact=False, size_seen=len(rows),
            size_kind=SizeKind.REDRAWN, config=self._base.config, fullmove0=cur.fullmove0,
            subsampled=False)
        self._rebase()
        self._scratch = None
        self.top_ups += 1

    def report(self) -> dict[str, int]:
        """For a move's analysis: the replays that repaired P and the Ps redrawn so far (only
        those that happened)."""
        return {k: n for k, n in (("belief_repairs", self.repairs),
                                  ("belief_redraws", self.redraws),
                                  ("belief_top_ups", self.top_ups)) if n}

    def _material(self) -> list[int]:
        """The opponent's pieces now (a count per type, pawn to king): those of the base P's
        first position (the last exact or redrawn P: its other positions differ only by an
        unseen promotion), less those our moves since captured (the square we moved to held
        one in the observation before, or an en-passant capture)."""
        them = 1 - self.player
        first = self._base.positions(np.arange(1))[0]
        counts = [int(first[them * 6 + t]).bit_count() for t in range(6)]
        before: Observation | None = None  # None: the base position itself
        for own, obs in self._since:
            if own is not None:
                to, kind = (own >> 6) & 63, (own >> 14) & 3
                if kind == KIND_EN_PASSANT:
                    counts[PAWN] -= 1
                else:
                    for t in range(6):
                        board = (before.pieces[them * 6 + t] if before is not None
                                 else int(first[them * 6 + t]))
                        if (board >> to) & 1:
                            counts[t] -= 1
            before = obs
        return [max(0, n) for n in counts]

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
        """Up to n positions of P drawn without replacement among those whose Zobrist key is
        not in `exclude`, stored in the game; their state ids.

        A uniformly ordered draw of n + |exclude| distinct rows, filtered, keeps its first n:
        a prefix of a uniform random order of P, restricted to P minus the excluded, is a
        uniform sample of it. With `weigh_roots`, SAMPLE_POOL * n + |exclude| rows are drawn
        so, and n of those left are drawn by their weights (`caligo.fow.plausible.log_weights`;
        Gumbel top-n, so the most probable come first).
        """
        size = self.size()
        if n <= 0 or size == 0:
            return np.zeros(0, dtype=np.int64)
        n = int(n)
        hints = self._hints() if self.weigh_roots and size > n else []
        ex = np.unique(np.asarray(exclude, dtype=np.uint64))
        pool = n * SAMPLE_POOL if hints else n
        draw = rng.choice(size, size=min(size, pool + ex.size), replace=False)
        pos = self.set.positions(draw)
        keys = np.empty(pos.shape[0], dtype=np.uint64)
        _positions_zobrist_kernel(pos, keys)
        keep = np.flatnonzero(~np.isin(keys, ex))
        if hints and keep.size > n:
            logw = log_weights(pos[keep], self.player, hints, hint_bins(self._seen, hints))
            keep = keep[np.argsort(-(logw + rng.gumbel(size=keep.size)), kind="stable")]
        return self.game.add_positions(pos[keep[:n]])

    def _hints(self) -> list[Hint]:
        """Where the opponent's unseen pieces were last seen, under the last observation
        (`LastSeen.hints`); none before the first."""
        obs = self._obs
        if obs is None:
            return []
        return self._seen.hints(obs, unseen_material(obs, self._material()))
