"""The subgame at the start of a decision: Obscuro, Fig. 9 (CONSTRUCTSUBGAME) on the arena.

`init_plain` starts a tree at one state with no gadget (the game's true start; Obscuro, section 3:
"at the beginning of the game P contains only the starting position").

`build_kluss(old, new, ...)` builds the knowledge-limited subgame for the searching player
(▲) at its current infoset, from the previous search's tree `old` and its final profile (x, y),
into the empty arena `new`. The construction mirrors `caligo.subgame.gadget.make_subgame` with
`SubgameOptions(kluss=True, alternate_values=BLUEPRINT, resolve_prior=BLUEPRINT_MIX,
reach=True)`, which the tests use as its oracle on fully expanded trees:

1. Profile quantities on `old` (one top-down and one bottom-up sweep, `_profile_kernel`): the
   chance reach c(h) (the previous gadget's h_J chance included), ▲'s reach x(h), ▼'s reach
   y(h) (the previous root weight w_J counts as ▼'s), and the value v(h) under (x, y).
2. I = the carried nodes where ▲ acts with ▲'s current observation-sequence key. The kept set is
   K = I^2 = every node sharing ▼'s key with a node of I (Obscuro, appendix B.2: distance <= 1 in
   the knowledge graph); its roots are the nodes of K with no ancestor in K; the root infosets J are
   ▼'s keys of the roots, in order of their first root.
3. Per J: D = sum over J's roots of c x, R = sum over all of J of c x, sigma = R / D, the
   alternate value v_alt(J) = V / R with V = sum over J's roots of c x v (C.2: the blueprint
   profile's value u(x, y | J); `AlternateValues.BEST_RESPONSE`: ▼ best-responds to x in the
   old tree instead), and the gift estimate of C.2, g(J) = sum over ▼'s decisions J'a' above J of
   [u(x, y | J'a') - u(x, y | J')]^+ (conditional values; the chain stops at the previous
   gadget's root, which is no decision of the real opponent). J's with D = 0 are dropped. The
   threshold c_J = sigma (v_alt - g) is what branch J's value is measured against.
4. Top-up (Fig. 9 lines 9-14): while |I| < min(|P|, min_roots), states of P not in the tree are
   sampled uniformly without replacement; each is a new root in ▲'s infoset with a singleton ▼
   infoset and v_alt = min(v~(s), v*), where v* is ▲'s value of I in the previous tree (+inf
   when there is none). `RootInfosets.TRUE`: the state gets its true ▼ infoset, with the other
   states of that infoset as further roots where the game can list them.
5. The Resolve prior alpha(J) = 1/2 (P(J) / sum P + 1/m), P(J) = sum over J's roots of c x y
   (C.3; `ResolvePrior.UNIFORM`: 1/m).
6. `_compact_kernel` copies everything reachable from the new roots into `new` breadth first
   (parent < child, children contiguous), remaps infosets in order of first appearance (so a
   parent sequence still belongs to an older infoset) and carries the profile as the first
   iterate (and, with `CarryOver.PROFILE_AND_REGRETS`, the regrets). 1-KLSS
   (`SubgameKind.KLSS`) marks everything below the roots outside I frozen: ▲'s infosets there
   keep the blueprint.
7. `RootExpansion.INFOSET`: every root in ▲'s infoset that is still a leaf (the roots sampled
   in step 4, and carried ones the previous search never grew) gets its children now, with one
   game call and one evaluator call for all of them (`expand_infoset_roots`). A leaf root's
   value is a constant of the iterations, so without this a position of P enters the subgame
   without ever answering to ▲'s strategy at I: nothing ▲ plays there can lose it, not even a
   move after which the opponent takes the king (docs/search.md, "Decided losses under
   unlikely roots").

Order-2 play. `SearchConfig.knowledge_order` = k (odd, ZS21's k-KLSS): K = I^(k+1) (step 2
with k hops), and the *order-2 region* is everything below the roots of K outside I^k (k = 1:
outside I). Every kind but KLUSS and COMMON_KNOWLEDGE flags those roots FROZEN (KLSS_ROOT also
FROZEN_ROOT: the region ends below ▲'s first decision on each path, in the compaction here and
when the expansion appends children), and ▲'s infosets created at flagged nodes are IFROZEN;
`meta[M_ORDER2]` tells the solver how they play (frozen; a fixed blend with weight b; or the
learned strategy held at a floor below the blueprint: `caligo.search.solver`). The blueprint
they start from is kept in the slots' `anchor` (and `learn`, the learned strategy).

Root weights. `SearchConfig.root_floor` eps: the gadget opponent's root weights become
(1 - eps) w_J + eps alpha(J) (`init_weights` here, the gadget update in the solver), so every
root keeps at least eps alpha(J) >= eps / (2m) of weight: a loss under any root costs the
searcher at least that share of it.

The stages are published for other builders on the arena (ZS21's `make_subgame` calls them):
`played_profile` and `profile` (step 1), `knowledge_set` here and `under_kernel`
(`caligo.search.construct_kernels`, step 2), `opp_values` (step 3), and in
`caligo.search.materialize` `Group`, `sample_outside`, `evaluate_until` and `add_sampled`
(step 4), `materialize` (steps 5-6) and `init_weights`. The kernels (steps 1, 3 and 6, and the
compaction's status codes OK, FULL, MISMATCH) are in `caligo.search.construct_kernels`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from caligo.core.game import TERMINAL
from caligo.limits import Deadline, Pace
from caligo.search.arena import (
    EXPANDED,
    GADGET,
    M_HAS_GADGET,
    M_J,
    M_NODES,
    M_ROOTS,
    Arena,
)
from caligo.search.config import (
    AlternateValues,
    InitialStrategy,
    Iterate,
    RootExpansion,
    RootInfosets,
    SearchConfig,
    SearchError,
    SubgameKind,
)
from caligo.search.construct_kernels import (
    OK,
    _opp_values_kernel,
    _profile_kernel,
    under_kernel,
)
from caligo.search.game import Belief, Evaluator, KeyMode, SearchGame
from caligo.search.intern import mix_key
from caligo.search.materialize import (
    BuildInfo,
    Group,
    add_sampled,
    evaluate_until,
    materialize,
    reset_arena,
    sample_outside,
)

log = logging.getLogger(__name__)


def start_key(obs: int, key_mode: KeyMode) -> int:
    """A player's key at the game's start state from its observation there."""
    if key_mode is KeyMode.INCREMENTAL:
        return int(mix_key(np.uint64(0), np.int64(-1), np.uint64(obs)))
    return int(obs)


# ---------------------------------------------------------------------------------------------
# Python drivers


def knowledge_set(keys: np.ndarray, allowed: np.ndarray, start: np.ndarray, hops: int,
                  ) -> np.ndarray:
    """I^k over the carried nodes: nodes within `hops` = k - 1 steps of `start` in the knowledge
    graph (two nodes are adjacent when they share either player's key, Obscuro, appendix B.2); hops
    = 0 means no limit (the common-knowledge closure I^inf). keys: uint64[n, 2]; allowed, start:
    bool[n]. Returns bool[n]."""
    cur: np.ndarray = start & allowed
    step = 0
    while hops == 0 or step < hops:
        k0 = np.unique(keys[cur, 0])
        k1 = np.unique(keys[cur, 1])
        nxt = allowed & (np.isin(keys[:, 0], k0) | np.isin(keys[:, 1], k1))
        step += 1
        if np.array_equal(nxt, cur):
            break
        cur = nxt
    return cur


def init_plain(arena: Arena, game: SearchGame, evaluator: Evaluator, state: int, searcher: int,
               config: SearchConfig, util_scale: float) -> None:
    """A one-node tree at `state` with no gadget (the true start)."""
    reset_arena(arena, searcher, game.key_mode, config.gadget, util_scale)
    info = game.describe(np.array([state], dtype=np.int64))
    nd = arena.nodes
    nd.parent[0] = -1
    nd.first_child[0] = -1
    nd.num_children[0] = 0
    nd.player[0] = info.player[0]
    nd.flags[0] = 0
    nd.claim[0] = 0
    nd.action[0] = -1
    nd.chance_prob[0] = 1.0
    terminal = int(info.player[0]) == TERMINAL
    nd.value[0] = info.utility[0] if terminal else float(
        evaluator.states(np.array([state], dtype=np.int64))[0])
    nd.infoset[0] = -1
    nd.seq[0] = -1
    for p in (0, 1):
        nd.key[0, p] = np.uint64(start_key(int(info.obs[0, p]), game.key_mode))
        nd.salt[0, p] = 0
    nd.state[0] = state
    nd.depth[0] = 0
    arena.meta[M_NODES] = 1
    arena.meta[M_ROOTS] = 1
    arena.meta[M_J] = 1
    arena.meta[M_HAS_GADGET] = 0
    rt = arena.roots
    rt.ptr[0], rt.ptr[1] = 0, 1
    rt.w[0] = 1.0
    rt.alpha[0] = 1.0


def played_profile(arena: Arena, iterate: Iterate) -> np.ndarray:
    """The strategy over the arena's slots that is played and carried (last or average)."""
    ns = arena.n_slots
    strat: np.ndarray = arena.slots.strat[:ns].copy()
    if iterate is Iterate.AVERAGE:
        inf = arena.infosets
        for g in range(arena.n_infosets):
            if inf.flags[g] & GADGET:
                continue
            s0, k = int(inf.slot0[g]), int(inf.n_actions[g])
            a = arena.slots.avg[s0 : s0 + k]
            tot = float(a.sum())
            if tot > 0.0:
                strat[s0 : s0 + k] = a / tot
    return strat


@dataclass(frozen=True, eq=False)
class Profile:
    """Profile quantities of an arena (module docstring, step 1), searcher's utility for v."""

    strat: np.ndarray
    alive: np.ndarray
    c: np.ndarray
    x: np.ndarray
    y: np.ndarray
    v: np.ndarray  # searcher's utility


def profile(arena: Arena, strat: np.ndarray) -> Profile:
    """Reaches and values of every node of `arena` under the slot strategy `strat`."""
    n = arena.n_nodes
    alive = np.zeros(n, dtype=np.bool_)
    c, x, y, v = (np.zeros(n) for _ in range(4))
    _profile_kernel(arena.nodes, n, arena.n_roots, arena.searcher, arena.has_gadget,
                    arena.roots.w, strat, arena.infosets.slot0, alive, c, x, y, v)
    sign = 1.0 if arena.searcher == 0 else -1.0
    return Profile(strat, alive, c, x, y, sign * v)


def opp_values(arena: Arena, prof: Profile, best_response: bool,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The opponent's sequence values, infoset values and reach under `prof` (or against
    its best response when `best_response`), and that best response: the alternate values
    and gifts of step 3 (module docstring)."""
    ns, ni = arena.n_slots, arena.n_infosets
    seqv = np.zeros(ns)
    infv = np.zeros(ni)
    reach = np.zeros(ni)
    br = prof.strat.copy()
    _opp_values_kernel(arena.nodes, arena.infosets, arena.slots.infoset, arena.n_nodes, ni,
                       arena.searcher, best_response, prof.alive, prof.c, prof.x, prof.strat,
                       seqv, infv, reach, br)
    return seqv, infv, reach, br


# Long by design: Obscuro, Fig. 9 (CONSTRUCTSUBGAME) steps 1-7 in order, as the module
# docstring numbers them; each step is a published stage it calls.
def build_kluss(
    old: Arena,
    new: Arena,
    game: SearchGame,
    belief: Belief,
    evaluator: Evaluator,
    cur_key: int,
    config: SearchConfig,
    v_prev: float | None,
    rng: np.random.Generator,
    util_scale: float,
    deadline: Deadline | None = None,
    pace: Pace | None = None,
    leaf_pace: Pace | None = None,
) -> BuildInfo:
    """Fig. 9 on the arena (module docstring). `old` is only read; `new` is overwritten.

    `deadline`: the sampled roots are evaluated in batches sized from `pace` (the caller's
    measured time per root, updated here) while they fit before its soft instant; the roots
    not evaluated by then are not added (at least one is when the carried tree has no node of
    our infoset, so the searcher always has a decision). Step 7 expands roots of our infoset
    while they fit before the same instant at `leaf_pace` (seconds per expanded leaf).
    """
    searcher = old.searcher
    opp = 1 - searcher
    n = old.n_nodes
    nd = old.nodes
    strat = played_profile(old, config.iterate)
    prof = profile(old, strat)
    alive = prof.alive
    c, x, y, v = prof.c, prof.x, prof.y, prof.v

    # 2. our infoset I, K = I^2, its roots, the root infosets J
    is_i = alive & (nd.player[:n] == searcher) & (nd.key[:n, searcher] == np.uint64(cur_key))
    i_nodes = np.flatnonzero(is_i)
    if config.max_roots is not None and i_nodes.size > config.max_roots:
        w_i = c[i_nodes] * y[i_nodes]
        keep = np.sort(i_nodes[np.argsort(-w_i, kind="stable")[: config.max_roots]])
        is_i = np.zeros(n, dtype=np.bool_)
        is_i[keep] = True
        i_nodes = keep
    if i_nodes.size and not np.any(x[i_nodes] > 0.0):
        x = x.copy()  # we were forced off our own support: weigh I as if we had played here
        x[i_nodes] = 1.0
    # nodes of I outside the cap are not ours to keep
    capped = (nd.player[:n] == searcher) & (nd.key[:n, searcher] == np.uint64(cur_key)) & ~is_i
    k = config.knowledge_order
    hops = 0 if config.subgame is SubgameKind.COMMON_KNOWLEDGE else k
    in_k = knowledge_set(nd.key[:n], alive & ~capped, is_i, hops)  # I^(k+1)
    # I^k: the roots outside it start the order-2 region (k = 1: I itself)
    inner = is_i if k == 1 else knowledge_set(nd.key[:n], alive & ~capped, is_i, k - 1)
    under = np.zeros(n, dtype=np.bool_)
    under_kernel(nd.parent, n, old.n_roots, in_k, under)
    roots = np.flatnonzero(in_k & ~under).astype(np.int64)
    rkeys = nd.key[roots, opp]
    uniq, first_idx, inv = np.unique(rkeys, return_index=True, return_inverse=True)
    order = np.argsort(first_idx, kind="stable")  # J in order of their first root
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    gj = rank[inv]  # J index of each root
    m_c = int(uniq.size)
    cx = c * x
    D = np.bincount(gj, weights=cx[roots], minlength=m_c)
    P = np.bincount(gj, weights=(cx * y)[roots], minlength=m_c)
    all_k = np.flatnonzero(in_k)
    all_k = all_k[np.isin(nd.key[all_k, opp], uniq)]  # J's with no root of their own drop out
    jk = np.searchsorted(uniq, nd.key[all_k, opp])
    R = np.bincount(rank[jk], weights=cx[all_k], minlength=m_c)

    # 3. alternate values and gifts (searcher's utility)
    br_mode = config.alternate_values is AlternateValues.BEST_RESPONSE
    seqv, infv, reach, br = opp_values(old, Profile(strat, alive, c, x, y, v), br_mode)
    v_alt_nodes = v
    if br_mode:
        v_alt_nodes = profile(old, br).v
    V = np.bincount(gj, weights=(cx * v_alt_nodes)[roots], minlength=m_c)
    keep_j = D > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        alt = np.where(R > 0, V / np.where(R > 0, R, 1.0), 0.0)
        sigma = np.where(D > 0, R / np.where(D > 0, D, 1.0), 1.0)
    gifts = np.zeros(m_c)
    if config.gifts:
        js, first_at = np.unique(gj, return_index=True)  # every J has a root
        first_root = np.full(m_c, -1, dtype=np.int64)
        first_root[js] = roots[first_at]
        gifts = _gifts(old, nd.seq[first_root, opp], seqv, infv, reach)

    # v*: our value of I in the previous tree
    w_i = (c * y)[i_nodes]
    if i_nodes.size and w_i.sum() > 0.0:
        v_star = float(np.dot(w_i, v[i_nodes]) / w_i.sum())
    elif v_prev is not None:
        v_star = float(v_prev)
    else:
        v_star = math.inf

    # assemble groups: carried J (kept), then sampled
    groups: list[Group] = []
    kept_js = np.flatnonzero(keep_j)
    root_order = np.argsort(gj, kind="stable")
    roots_sorted = roots[root_order]
    gj_sorted = gj[root_order]
    lo = np.searchsorted(gj_sorted, kept_js, side="left").tolist()
    hi = np.searchsorted(gj_sorted, kept_js, side="right").tolist()
    for j, j_lo, j_hi in zip(kept_js.tolist(), lo, hi, strict=True):
        rs = roots_sorted[j_lo:j_hi]  # J's roots (gj_sorted is sorted: one slice, not a scan)
        groups.append(Group(
            key=int(uniq[order[j]]), alt=float(alt[j]), gift=float(gifts[j]),
            sigma=float(sigma[j]), P=float(P[j]), old=rs, q_old=cx[rs] / D[j],
            in_i_old=inner[rs],
        ))
    carried_i = int(np.count_nonzero(is_i & in_k))

    # 4. top-up from the belief
    need = min(belief.size(), config.min_roots) - carried_i
    sampled = 0
    if need > 0:
        picks = sample_outside(game, belief, nd, i_nodes, need, rng)
        keep_n = 1 if carried_i == 0 else 0  # the searcher needs a root of its own
        true_mode = (config.root_infosets is RootInfosets.TRUE
                     and game.key_mode is KeyMode.CUMULATIVE)
        # in TRUE mode each new ▼ infoset is evaluated whole while the roots are added: the
        # picks' own values get the first half of the time left
        first = (deadline.stage(deadline.now(), 0.5) if deadline is not None and true_mode
                 else deadline)
        vals = evaluate_until(evaluator, picks, first, keep_n, pace)
        picks = picks[: vals.size]
        if picks.size:
            used = add_sampled(groups, picks, game, belief, evaluator, cur_key, config,
                                v_star, searcher, nd, vals, deadline, pace, keep_n)
            picks = picks[:used]
        sampled = int(picks.size)

    # 5-6. the new arena
    info = materialize(old, new, groups, strat, game, config, searcher, util_scale,
                        carried_i, sampled, v_star, cur_key)
    # 7. roots in our infoset get their children (RootExpansion.INFOSET)
    if config.root_expansion is RootExpansion.INFOSET:
        expand_infoset_roots(new, game, evaluator, cur_key, config, deadline, leaf_pace)
    return info


def _gifts(old: Arena, seq: np.ndarray, seqv: np.ndarray, infv: np.ndarray,
           reach: np.ndarray) -> np.ndarray:
    """Each J's gift: over ▼'s infosets on the path above its first root (`seq`: that root's
    ▼ sequence), up to the gadget, the sum of max(0, (v(sequence) - v(infoset)) / reach)
    where the infoset is reached. All J's walk up together, one level a step, each adding its
    terms in the order of its own walk."""
    inf, sl = old.infosets, old.slots
    s = seq.astype(np.int64)
    gifts = np.zeros(s.size)
    live = np.flatnonzero(s >= 0)
    while live.size:
        g = sl.infoset[s[live]].astype(np.int64)
        below = (inf.flags[g] & GADGET) == 0
        live, g = live[below], g[below]
        reached = reach[g] > 0.0
        at, gr, sr = live[reached], g[reached], s[live[reached]]
        gifts[at] += np.maximum((seqv[sr] - infv[gr]) / reach[gr], 0.0)
        s[live] = inf.parent_seq[g]
        live = live[s[live] >= 0]
    return gifts


ROOT_EXPANSION_SHARE = 0.5
"""The share of the arena's free rows the roots of our infoset may take at construction; the
rest is the search's."""


def expand_infoset_roots(arena: Arena, game: SearchGame, evaluator: Evaluator, cur_key: int,
                         config: SearchConfig, deadline: Deadline | None = None,
                         pace: Pace | None = None) -> int:
    """Expand the unexpanded non-terminal roots in the searcher's infoset `cur_key` (module
    docstring, step 7); returns how many. One game call for all of them, and one evaluator
    call without a `deadline`; with one, `Expander.expand`'s calls sized by `pace` (measured
    there) while they fit before its soft instant, at least one root
    (`SearchConfig.root_expansion_share` of the time left to it).

    When their children do not fit in `ROOT_EXPANSION_SHARE` of the arena's free rows (a
    large P on a small budget's arena: 1,400 roots of 30 moves against 39,000 rows), or the
    roots do not fit before the deadline at `pace` (1,400 roots at Stockfish's 0.8 ms each
    took 1.4 s of a 1 s move), the roots the gadget's prior makes likeliest are expanded
    first, as many as fit, and the rest stay leaves under the root floor; the search itself
    goes on either way."""
    from caligo.search import expand as X

    if deadline is not None and config.root_expansion_share < 1.0:
        deadline = deadline.stage(deadline.now(), config.root_expansion_share)
    nr = arena.n_roots
    nd = arena.nodes
    s = arena.searcher
    todo = np.flatnonzero((nd.player[:nr] == s) & (nd.key[:nr, s] == np.uint64(cur_key))
                          & ((nd.flags[:nr] & EXPANDED) == 0)).astype(np.int32)
    if todo.size == 0:
        return 0
    counts = np.diff(game.expand(nd.state[todo].astype(np.int64)).ptr)
    room = ROOT_EXPANSION_SHARE * (arena.capacity.nodes - arena.n_nodes)
    over_room = int(counts.sum()) > room
    if deadline is not None and pace is None:
        pace = Pace(X.LEAF_PACE_S)
    late = deadline is not None and pace is not None and pace.units_by(deadline) < todo.size
    if (over_room or late) and arena.has_gadget:
        # the prior of each root's opponent infoset J, likeliest first
        m = arena.n_j
        ptr = arena.roots.ptr[: m + 1].astype(np.int64)
        prior = np.repeat(arena.roots.alpha[:m], np.diff(ptr))[todo]
        by = np.argsort(-prior, kind="stable")
        todo, counts = todo[by], counts[by]
    if over_room:
        fits = int(np.searchsorted(np.cumsum(counts), room, side="right"))
        log.info("%d of the %d roots of our infoset fit in the arena's %d free rows; the "
                 "likeliest are expanded", fits, todo.size, arena.capacity.nodes - arena.n_nodes)
        todo = todo[:fits]
        if todo.size == 0:
            return 0
    nd.claim[todo] = 1
    ex = X.Expander(arena, game, evaluator, config.seed)
    pending = ex.expand(todo, deadline, pace)
    if pending is None:
        raise SearchError(f"arena capacity {arena.capacity.nodes} too small to expand the "
                          f"{todo.size} roots of our infoset")
    status = X.commit(arena, pending, config.initial_strategy is InitialStrategy.UNIFORM)
    if status != OK:
        raise SearchError("the game gave one infoset two action sets at the roots of our "
                          "infoset (perfect recall broken)")
    if pending.leaves.size < todo.size:
        log.info("%d of the %d roots of our infoset were expanded before the construction's "
                 "deadline; the likeliest first", pending.leaves.size, todo.size)
    return int(pending.leaves.size)


