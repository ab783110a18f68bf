"""`SearchAgent`: the decision loop of Obscuro, Fig. 8 over any `SearchGame`.

    new_game(seat, seed)    P = {start}, no tree (section 3: "at the beginning of the game, P
                            contains only the starting position")
    observe(obs)            one observation of ours per ply (after our own move and after the
                            opponent's; new_game already took the one at the start state);
                            our key and the belief follow it
    act() -> Decision       build the subgame (Fig. 9), search (Figs. 10-12), purify (Fig. 8),
                            choose a move; the tree and the profile are kept for next time
    force(action)           play `action` instead of the chosen one (books, the exact harness)

The first decision (no previous tree): with `FirstDecision.TRUE_START` the agent first searches
the game from its true start as a plain tree (every position of the start is known; for a game
that opens with chance, the chance node is the root), and then, unless the decision is at the
start itself, re-roots that tree at its infoset like every later decision. With
`FirstDecision.SAMPLED` the roots come from the belief as in Fig. 9 with no previous tree.

Determinism: every search is seeded from (config seed, seat, our current key), so in the
deterministic schedule the agent is a function of its infoset (docs/design.md, "Exact exploitability
of the search agent").

The belief is a `BeliefTracker`: `reset()`, `update(obs, own_action)`, and the `Belief` queries.
For a `TreeGame` it is `TreeGameBelief` (exact P from the compiled tree); FoW chess will wrap
its `BeliefSet`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from caligo.limits import Deadline, Limits
from caligo.search.config import FirstDecision, SearchConfig, SearchError, SearchResult
from caligo.search.construct import start_key
from caligo.search.engine import ExpansionStats, GrowingTreeSearch
from caligo.search.game import Belief, Evaluator, KeyMode, SearchGame, TreeBelief, TreeGame
from caligo.search.intern import mix_key
from caligo.search.materialize import BuildInfo


class BeliefTracker(Belief, Protocol):
    """A `Belief` that follows the agent's observations."""

    def reset(self) -> None:
        """P = {start}."""
        ...

    def update(self, obs: int, own_action: int | None) -> None:
        """Keep the states consistent with one more observation (after own_action, if ours)."""
        ...


class TreeGameBelief(TreeBelief):
    """`TreeBelief` with the tracker signature (the observation is the seat's kinfo id)."""

    def update(self, obs: int, own_action: int | None = None) -> None:
        super().update(obs)


@dataclass(frozen=True, eq=False)
class Decision:
    """What `act` returns: the move and the policies it came from, plus the search's record."""

    action: int
    actions: np.ndarray
    policy: np.ndarray  # the searched strategy at our infoset
    play: np.ndarray  # after purification: what the move is drawn from
    search: SearchResult
    belief_size: int


def _seed_of(*parts: int) -> int:
    x = np.uint64(0x243F6A8885A308D3)
    for p in parts:
        x = mix_key(np.uint64(x), np.int64(-1), np.uint64(p & 0xFFFFFFFFFFFFFFFF))
    return int(x & np.uint64(0x7FFFFFFFFFFFFFFF))


class SearchAgent:
    """Obscuro's move loop over a `SearchGame` (module docstring)."""

    def __init__(
        self,
        game: SearchGame,
        belief: BeliefTracker,
        evaluator: Evaluator,
        config: SearchConfig,
        *,
        evaluator_factory: Callable[[], Evaluator] | None = None,
        capacity: int | None = None,
        util_scale: float = 1.0,
    ) -> None:
        self.game = game
        self.belief = belief
        self.evaluator = evaluator
        self.config = config
        self._factory = evaluator_factory
        self._capacity = capacity
        self._util_scale = util_scale
        self.seat = -1
        self.seed = config.seed
        self.key = 0
        self._search: GrowingTreeSearch | None = None
        self._pending_action: int | None = None
        self._v_prev: float | None = None
        self._opening: tuple[int, ExpansionStats, float] | None = None
        self._resample = False
        self._prepared: GrowingTreeSearch | None = None
        self.last: Decision | None = None

    # lifecycle ------------------------------------------------------------------------------
    def new_game(self, seat: int, seed: int | None = None) -> None:
        """Start a game in `seat` (0 or 1)."""
        if seat not in (0, 1):
            raise SearchError(f"seat must be 0 or 1, got {seat!r}")
        self.seat = seat
        self.seed = self.config.seed if seed is None else int(seed)
        self.belief.reset()
        s0 = self.game.start_state()
        obs = self.game.describe(np.array([s0], dtype=np.int64)).obs[0, seat]
        self.key = start_key(int(obs), self.game.key_mode)
        self._search = None
        self._pending_action = None
        self._v_prev = None
        self._opening = None
        self._resample = False
        self.last = None

    def _engine(self) -> GrowingTreeSearch:
        eng, self._prepared = self._prepared, None
        if eng is not None and eng.searcher == self.seat:
            return eng
        return GrowingTreeSearch(self.game, self.evaluator, self.config, self.seat,
                                 evaluator_factory=self._factory, capacity=self._capacity,
                                 util_scale=self._util_scale)

    def prepare(self) -> None:
        """Allocate the next search's arenas now (after `new_game`, off the clock): a search
        of a million rows costs about 0.1 s to allocate."""
        if self._search is None and self._prepared is None and self.seat >= 0:
            eng = self._engine()
            eng.prepare()
            self._prepared = eng

    @property
    def wants_warm_start(self) -> bool:
        """True when the next decision first searches from the game's true start
        (`FirstDecision.TRUE_START`, no tree yet, no failure since the game began)."""
        return (self._search is None and not self._resample
                and self.config.first_decision is FirstDecision.TRUE_START)

    def observe(self, obs: int, own_action: int | None = None) -> None:
        """One observation of ours; `own_action` (or the pending chosen/forced move) first."""
        if self.seat < 0:
            raise SearchError("observe before new_game")
        act = own_action if own_action is not None else self._pending_action
        self._pending_action = None
        if self.game.key_mode is KeyMode.INCREMENTAL:
            a = -1 if act is None else int(act)
            self.key = int(mix_key(np.uint64(self.key), np.int64(a), np.uint64(obs)))
        else:
            self.key = int(obs)
        self.belief.update(int(obs), act)

    def force(self, action: int) -> None:
        """Play `action` at the current decision instead of the chosen move."""
        self._pending_action = int(action)

    def warm_start(self, limits: Limits | None = None) -> None:
        """The opening search from the true start (FirstDecision.TRUE_START), if not done,
        within `limits` (default: the configuration's budget)."""
        if self._search is not None or self.config.first_decision is not FirstDecision.TRUE_START:
            return
        eng = self._engine()
        eng.start(self.game.start_state())
        s0 = self.game.start_state()
        obs = self.game.describe(np.array([s0], dtype=np.int64)).obs[0, self.seat]
        seed = _seed_of(self.seed, self.seat, start_key(int(obs), self.game.key_mode), 1)
        self._opening = eng.run(seed, limits)
        self._search = eng

    @property
    def engine(self) -> GrowingTreeSearch | None:
        """The current search (None before the first one, or after `reset_tree`)."""
        return self._search

    def reset_tree(self) -> None:
        """Forget the tree and the previous value (after a failure): the next decisions of
        this game sample their roots afresh (no search from the true start)."""
        self._search = None
        self._v_prev = None
        self._resample = True

    # deciding -------------------------------------------------------------------------------
    def act(self, limits: Limits | None = None, construct: Deadline | None = None) -> Decision:
        """Search at the current infoset within `limits` (default: the configuration's budget)
        and choose a move (module docstring). `construct` bounds the subgame's construction
        (the sampled roots' evaluation stops at its soft instant; default: the limits'
        deadline)."""
        if self.seat < 0:
            raise SearchError("act before new_game")
        t_start = time.perf_counter()
        seed = _seed_of(self.seed, self.seat, self.key)
        rng = np.random.default_rng(seed)
        build: BuildInfo | None = None
        at_start = False
        if self.wants_warm_start:
            self.warm_start(limits)
            assert self._search is not None
            at_start = self._search.arena.infoset_of_key(self.seat, self.key) >= 0 and (
                self._search.arena.nodes.key[0, self.seat] == np.uint64(self.key)
                and int(self._search.arena.nodes.player[0]) == self.seat)
        t0 = time.perf_counter()
        if at_start:
            eng = self._search
            assert eng is not None and self._opening is not None
            t_half, stats, solve_s = self._opening
            construct_s = 0.0
        else:
            if self._search is None:
                self._search = self._engine()
            eng = self._search
            deadline = construct if construct is not None else (
                None if limits is None else limits.deadline)
            build = eng.reroot(self.belief, self.key, rng, self._v_prev, deadline)
            construct_s = time.perf_counter() - t0
            eng.ensure_infoset(self.key)
            t_half, stats, solve_s = eng.run(seed, limits)
        res = eng.result(self.key, t_half, stats, solve_s, construct_s, build,
                         time.perf_counter() - t_start)
        if not math.isnan(res.value):
            self._v_prev = res.value
        play = res.play
        k = int(rng.choice(play.size, p=play / play.sum()))
        action = int(res.actions[k])
        self._pending_action = action
        self.last = Decision(action=action, actions=res.actions, policy=res.policy, play=play,
                             search=res, belief_size=self.belief.size())
        return self.last

    def snapshot(self) -> SearchAgent:
        """An independent copy (arena, belief and all), for walking a game tree."""
        out = copy.copy(self)
        out.belief = copy.deepcopy(self.belief)
        if self._search is not None:
            eng = copy.copy(self._search)
            eng.arena = self._search.arena.copy()
            eng._spare = None
            out._search = eng
        return out


def tree_agent(tree_game: TreeGame, evaluator: Evaluator, config: SearchConfig,
               seat: int) -> SearchAgent:
    """A `SearchAgent` on a `TreeGame` with its exact belief and an arena sized to the game."""
    t = tree_game.tree
    cap = min(config.max_nodes, 2 * t.num_nodes + 2 * config.min_roots + 1024)
    scale = max(abs(float(t.utility.min())), abs(float(t.utility.max())), 1e-12)
    return SearchAgent(tree_game, TreeGameBelief(tree_game, seat), evaluator, config,
                       capacity=cap, util_scale=scale)
