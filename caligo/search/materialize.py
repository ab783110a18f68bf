"""The roots and the arena of a new subgame (`caligo.search.construct`, steps 4-6 of Obscuro's
CONSTRUCTSUBGAME): a `Group` per root infoset J, the top-up of roots sampled from P
(`sample_outside`, `evaluate_until`, `add_sampled`), and `materialize`, which writes the roots
and the gadget layer and copies everything below them into the new arena (`_compact_kernel`);
`init_weights` sets the gadget opponent's root weights. Published for every builder on the
arena (the search's KLUSS builder and ZS21's trunk subgame)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from caligo.core.game import TERMINAL
from caligo.limits import Deadline, Pace
from caligo.search.arena import (
    F_BLEND,
    F_FLOOR,
    F_PMAX,
    F_ROOT_FLOOR,
    F_UTIL_SCALE,
    FROZEN,
    FROZEN_ROOT,
    GADGET,
    GADGET_BLEND,
    GADGET_MAXMARGIN,
    GADGET_RESOLVE,
    KEY_CUMULATIVE,
    KEY_INCREMENTAL,
    M_GADGET_MODE,
    M_HAS_GADGET,
    M_INFOSETS,
    M_J,
    M_KEY_MODE,
    M_NODES,
    M_ORDER2,
    M_ROOTS,
    M_SEARCHER,
    M_SLOTS,
    ORDER2_BLEND,
    ORDER2_FLOOR,
    ORDER2_FROZEN,
    Arena,
    NodeArrays,
)
from caligo.search.config import (
    CarryOver,
    GadgetMode,
    ResolvePrior,
    RootInfosets,
    SearchConfig,
    SearchError,
    SubgameKind,
)
from caligo.search.construct_kernels import FULL, MISMATCH, _compact_kernel
from caligo.search.game import Belief, Evaluator, KeyMode, SearchGame
from caligo.search.intern import EMPTY, splitmix64

_SINGLETON_TAG = np.uint64(0x5A17ED5EA7C0FFEE)


def singleton_salt(state_key: int) -> int:
    """The opponent's salt at a root sampled with a singleton infoset (nonzero)."""
    s = int(splitmix64(np.uint64(state_key) ^ _SINGLETON_TAG))
    return s if s != 0 else 1


@dataclass(frozen=True, eq=False)
class BuildInfo:
    """What a construction produced (for `SearchResult` and the oracle tests).

    Per root infoset J (in root order): keys (▼'s key), alt and gift (▲'s utility), sigma,
    alpha, threshold, roots_per_j; carried_roots: old node of each carried root (in new root
    order; sampled roots are not listed). in_i: how many carried nodes of ▲'s infoset were found;
    sampled: roots drawn from the belief; v_star: ▲'s value of I in the previous tree (inf if
    none); carried_nodes / carried_infosets: copied from the old tree.
    """

    keys: np.ndarray
    alt: np.ndarray
    gift: np.ndarray
    sigma: np.ndarray
    alpha: np.ndarray
    threshold: np.ndarray
    roots_per_j: np.ndarray
    carried_roots: np.ndarray
    in_i: int
    sampled: int
    v_star: float
    carried_nodes: int
    carried_infosets: int


@dataclass
class Group:
    """One root infoset J of the new subgame: carried roots and/or new (sampled) roots."""

    key: int  # ▼'s key of J
    alt: float  # searcher's utility
    gift: float
    sigma: float
    P: float  # blueprint reach for the Resolve prior
    old: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    q_old: np.ndarray = field(default_factory=lambda: np.zeros(0))
    in_i_old: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))  # in I^k
    states: list[int] = field(default_factory=list)
    players: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    obs: list[np.ndarray] = field(default_factory=list)
    q_new: list[float] = field(default_factory=list)
    in_i_new: list[bool] = field(default_factory=list)
    salt_opp: int = 0


def reset_arena(arena: Arena, searcher: int, key_mode: KeyMode, gadget: GadgetMode,
           util_scale: float) -> None:
    meta = arena.meta
    meta[:] = 0
    arena.fmeta[:] = 0.0
    meta[M_SEARCHER] = searcher
    meta[M_KEY_MODE] = KEY_INCREMENTAL if key_mode is KeyMode.INCREMENTAL else KEY_CUMULATIVE
    meta[M_GADGET_MODE] = {GadgetMode.BLEND: GADGET_BLEND, GadgetMode.MAXMARGIN: GADGET_MAXMARGIN,
                           GadgetMode.RESOLVE: GADGET_RESOLVE}[gadget]
    arena.fmeta[F_UTIL_SCALE] = util_scale
    t = arena.table
    t.key[:] = EMPTY
    t.id[:] = -1


def sample_outside(game: SearchGame, belief: Belief, nd: NodeArrays, i_nodes: np.ndarray,
                    need: int, rng: np.random.Generator) -> np.ndarray:
    """`need` states drawn from the belief, none of them already a node of `i_nodes`."""
    exclude = game.state_key(nd.state[i_nodes].astype(np.int64)) if i_nodes.size else (
        np.zeros(0, dtype=np.uint64))
    return np.asarray(belief.sample(need, exclude, rng), dtype=np.int64)


ROOT_BATCH = 16
"""Sampled roots evaluated per evaluator call under a deadline, at most (16 Stockfish calls
~ 11 ms on a quiet machine); fewer when the measured pace says they would not fit."""

ROOT_PACE_S = 1e-3
"""A sampled root's evaluation before any is measured (`Pace`)."""


def evaluate_until(evaluator: Evaluator, states: np.ndarray, deadline: Deadline | None,
                   keep_min: int = 0, pace: Pace | None = None) -> np.ndarray:
    """The evaluator's values of a prefix of `states`: all of them without a deadline, else
    batches of at most `ROOT_BATCH` while they fit before the deadline's soft instant at
    `pace` (measured here; a fresh one if None), at least `keep_min` states."""
    states = np.asarray(states, dtype=np.int64)
    if deadline is None or states.size == 0:
        return np.asarray(evaluator.states(states), dtype=np.float64)
    if pace is None:
        pace = Pace(ROOT_PACE_S)
    out: list[np.ndarray] = []
    done = 0
    while done < states.size:
        n = min(ROOT_BATCH, pace.units_by(deadline))
        if done < keep_min:
            n = max(n, keep_min - done)
        if n <= 0:
            break
        batch = states[done : done + n]
        t0 = deadline.now()
        out.append(np.asarray(evaluator.states(batch), dtype=np.float64))
        pace.record(deadline.now() - t0, int(batch.size))
        done += batch.size
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float64)


def add_sampled(groups: list[Group], picks: np.ndarray, game: SearchGame, belief: Belief,
                evaluator: Evaluator, cur_key: int, config: SearchConfig, v_star: float,
                searcher: int, old_nd: NodeArrays, vals: np.ndarray | None = None,
                deadline: Deadline | None = None, pace: Pace | None = None,
                keep_min: int = 0) -> int:
    """Sampled roots (Fig. 9 lines 9-14): new groups, or joining a carried J (TRUE mode).
    `vals`: the evaluator's values of `picks`, when the caller has them already.

    A pick that opens a true ▼ infoset evaluates all of its states; under a `deadline` that
    is done only while they fit before its soft instant at `pace` (seconds per position,
    updated here), and the picks from the first that does not fit on are left out (the first
    `keep_min` never are: such a pick gets a singleton ▼ infoset instead, as in SINGLETON
    mode). How many picks were added."""
    opp = 1 - searcher
    sign = 1.0 if searcher == 0 else -1.0
    info = game.describe(picks)
    if vals is None:
        vals = np.asarray(evaluator.states(picks), dtype=np.float64)
    vals = np.where(info.player == TERMINAL, info.utility, vals)
    skeys = game.state_key(picks)
    cumulative = game.key_mode is KeyMode.CUMULATIVE
    true_mode = config.root_infosets is RootInfosets.TRUE and cumulative
    by_key = {g.key: g for g in groups}
    if deadline is not None and pace is None:
        pace = Pace(ROOT_PACE_S)
    for i, s in enumerate(picks.tolist()):
        others = game.true_infoset_states(int(s), opp) if true_mode else None
        if (others is not None and deadline is not None and pace is not None
                and by_key.get(int(info.obs[i, opp])) is None  # it would open a new J
                and pace.units_by(deadline) < len(others) + 1):
            if i >= keep_min:
                return i  # its ▼ infoset would not be evaluated in time: stop here
            others = None  # a root we must keep: with a singleton ▼ infoset, as in SINGLETON
        if others is None:
            salt = singleton_salt(int(skeys[i]))
            key = int(np.uint64(info.obs[i, opp]) ^ np.uint64(salt)) if cumulative else salt
            grp = Group(key=key, alt=min(sign * float(vals[i]), v_star), gift=0.0, sigma=1.0,
                         P=0.0, salt_opp=salt if cumulative else 0)
            _push(grp, s, int(info.player[i]), float(vals[i]), info.obs[i], 1.0, True)
            groups.append(grp)
            by_key[key] = grp
            continue
        key = int(info.obs[i, opp])
        grp_hit = by_key.get(key)
        if grp_hit is not None and grp_hit.old.size:
            # joins a carried J: weigh it like J's carried roots relative to their chance weight
            bw = float(np.sum(belief.weights(old_nd.state[grp_hit.old].astype(np.int64))))
            rho = float(grp_hit.q_old.sum()) / bw if bw > 0 else 1.0 / grp_hit.old.size
            wt = float(belief.weights(np.array([s], dtype=np.int64))[0]) * rho
            _push(grp_hit, s, int(info.player[i]), float(vals[i]), info.obs[i], wt, True)
            continue
        if grp_hit is not None:
            continue  # already added with the rest of its infoset
        states = np.unique(np.append(np.asarray(others, dtype=np.int64), s))
        sinfo = game.describe(states)
        t0 = deadline.now() if deadline is not None else 0.0
        sv = np.asarray(evaluator.states(states), dtype=np.float64)
        if deadline is not None and pace is not None:
            pace.record(deadline.now() - t0, int(states.size))
        sv = np.where(sinfo.player == TERMINAL, sinfo.utility, sv)
        wts = np.asarray(belief.weights(states), dtype=np.float64)
        q = wts / wts.sum() if wts.sum() > 0 else np.full(states.size, 1.0 / states.size)
        grp = Group(key=key, alt=min(sign * float(np.dot(q, sv)), v_star), gift=0.0,
                     sigma=1.0, P=0.0)
        for k, st in enumerate(states.tolist()):
            _push(grp, st, int(sinfo.player[k]), float(sv[k]), sinfo.obs[k], float(q[k]),
                  bool(sinfo.obs[k, searcher] == np.uint64(cur_key)))
        groups.append(grp)
        by_key[key] = grp
    return int(picks.size)


def _push(grp: Group, s: int, player: int, value: float, obs: np.ndarray, q: float,
          in_i: bool) -> None:
    grp.states.append(int(s))
    grp.players.append(player)
    grp.values.append(value)
    grp.obs.append(np.asarray(obs, dtype=np.uint64))
    grp.q_new.append(q)
    grp.in_i_new.append(in_i)


# Long by design: steps 5-6 of the construction write the roots, the gadget layer and the
# compacted tree into one arena in one pass (its row counts and index maps are shared).
def materialize(old: Arena, new: Arena, groups: list[Group], strat: np.ndarray,
                game: SearchGame, config: SearchConfig, searcher: int, util_scale: float,
                carried_i: int, sampled: int, v_star: float, cur_key: int) -> BuildInfo:
    """Write the roots, the gadget and the compacted tree into `new`."""
    opp = 1 - searcher
    reset_arena(new, searcher, game.key_mode, config.gadget, util_scale)
    m = len(groups)
    if m == 0:
        raise SearchError("the subgame has no roots: empty belief and no carried nodes")
    if m > new.capacity.roots:
        raise SearchError(f"{m} root infosets exceed the arena's root capacity "
                          f"{new.capacity.roots}")
    nd, rt = new.nodes, new.roots
    old_of = np.full(new.capacity.nodes, -1, dtype=np.int32)
    mark = config.subgame.marks_order2
    o2_flag = FROZEN | FROZEN_ROOT if config.subgame is SubgameKind.KLSS_ROOT else FROZEN
    r, carried_rows, carried_roots = _write_roots(
        nd, old.nodes, groups, game, config, searcher, cur_key,
        o2_flag if mark else np.uint8(0), rt.ptr)
    old_of[carried_rows] = carried_roots
    new.meta[M_ROOTS] = r
    new.meta[M_J] = m
    new.meta[M_HAS_GADGET] = 1
    new.meta[M_NODES] = r
    # the gadget pseudo-infoset 0 (▼ chooses J) and the root layer
    inf, sl = new.infosets, new.slots
    inf.player[0] = opp
    inf.slot0[0] = 0
    inf.n_actions[0] = m
    inf.parent_seq[0] = -1
    inf.key[0] = 0
    inf.flags[0] = GADGET
    inf.first_node[0] = -1
    sl.infoset[:m] = 0
    sl.action[:m] = np.arange(m)
    sl.strat[:m] = 1.0 / m
    sl.regret[:m] = 0.0
    sl.pred[:m] = 0.0
    sl.cfv[:m] = 0.0
    sl.support_since[:m] = -1
    new.meta[M_INFOSETS] = 1
    new.meta[M_SLOTS] = m
    alt = np.array([g.alt for g in groups])
    gift = np.array([g.gift for g in groups])
    sigma = np.array([g.sigma for g in groups])
    Pj = np.array([g.P for g in groups])
    keys = np.array([g.key for g in groups], dtype=np.uint64)
    if config.resolve_prior is ResolvePrior.BLUEPRINT_MIX and Pj.sum() > 0.0:
        alpha = 0.5 * (Pj / Pj.sum() + 1.0 / m)
    else:
        alpha = np.full(m, 1.0 / m)
    threshold = sigma * (alt - gift)
    rt.threshold[:m] = threshold
    rt.alt[:m] = alt
    rt.gift[:m] = gift
    rt.sigma[:m] = sigma
    rt.alpha[:m] = alpha
    rt.key[:m] = keys
    rt.mm_regret[:m] = 0.0
    rt.mm_pred[:m] = 0.0
    rt.mm_strat[:m] = 1.0 / m
    rt.res_regret[:m] = 0.0
    rt.res_pred[:m] = 0.0
    rt.res_strat[:m] = 0.5
    new.meta[M_ORDER2] = _ORDER2_MODE[config.subgame]
    new.fmeta[F_BLEND] = config.order2_blend
    new.fmeta[F_FLOOR] = config.order2_floor * util_scale
    new.fmeta[F_ROOT_FLOOR] = config.root_floor
    init_weights(new)
    t = new.table
    status = _compact_kernel(
        old.nodes, old.infosets, old.slots, strat, old.n_infosets,
        new.nodes, new.infosets, new.slots, new.meta, t.key, t.player, t.id, old_of,
        config.carry_over is CarryOver.PROFILE_AND_REGRETS,
    )
    if status == FULL:
        raise SearchError(f"arena capacity {new.capacity.nodes} too small for the carried tree")
    if status == MISMATCH:
        raise SearchError("the carried tree breaks perfect recall (a game bug)")
    return BuildInfo(
        keys=keys, alt=alt, gift=gift, sigma=sigma, alpha=alpha, threshold=threshold,
        roots_per_j=np.diff(rt.ptr[: m + 1]).astype(np.int64),
        carried_roots=carried_roots, in_i=carried_i,
        sampled=sampled, v_star=v_star,
        carried_nodes=int(np.count_nonzero(old_of[: new.n_nodes] >= 0)),
        carried_infosets=new.n_infosets - 1,
    )


_ORDER2_MODE = {SubgameKind.KLUSS: ORDER2_FROZEN, SubgameKind.COMMON_KNOWLEDGE: ORDER2_FROZEN,
                SubgameKind.KLSS: ORDER2_FROZEN, SubgameKind.KLSS_ROOT: ORDER2_FROZEN,
                SubgameKind.BLEND: ORDER2_BLEND, SubgameKind.SAFE_KLUSS: ORDER2_FLOOR}
"""How each subgame kind plays its order-2 infosets (KLUSS and common knowledge mark none)."""


def init_weights(arena: Arena) -> None:
    """w_J from the root regret minimizers' current strategies (Fig. 10 line 12)."""
    m = arena.n_j
    rt = arena.roots
    mode = int(arena.meta[M_GADGET_MODE])
    enter = rt.res_strat[:m, 0]
    p_max = float(enter.max()) if mode != GADGET_MAXMARGIN else 0.0
    if mode == GADGET_MAXMARGIN:
        rt.w[:m] = rt.mm_strat[:m]
    elif mode == GADGET_RESOLVE:
        rt.w[:m] = rt.alpha[:m] * enter
    else:
        rt.w[:m] = p_max * rt.alpha[:m] * enter + (1.0 - p_max) * rt.mm_strat[:m]
    eps = float(arena.fmeta[F_ROOT_FLOOR])
    if eps > 0.0:
        rt.w[:m] = (1.0 - eps) * rt.w[:m] + eps * rt.alpha[:m]
    arena.fmeta[F_PMAX] = p_max


def _write_roots(nd: NodeArrays, on: NodeArrays, groups: list[Group], game: SearchGame,
                 config: SearchConfig, searcher: int, cur_key: int, order2: np.uint8,
                 ptr: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Write the root layer: each J's carried roots (copied from `on`), then its sampled
    ones, J after J, their weights q normalized within J, `ptr` the first row of each J;
    `order2` flags the roots outside I^k (sampled roots are inside when the knowledge order
    exceeds 1). Whole-array writes: a carried tree of a hundred thousand nodes brings tens of
    thousands of roots, too many for scalar writes one root at a time inside a move's time.
    Returns the row count, and the carried roots' rows and nodes in the old arena."""
    opp = 1 - searcher
    m = len(groups)
    n_old = np.array([g.old.size for g in groups], dtype=np.int64)
    sizes = n_old + np.array([len(g.states) for g in groups], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    total = int(starts[m])
    if total > nd.parent.shape[0]:
        raise SearchError(f"arena capacity {nd.parent.shape[0]} too small for the roots")
    ptr[: m + 1] = starts
    gid = np.repeat(np.arange(m, dtype=np.int64), sizes)
    is_old = np.arange(total, dtype=np.int64) - starts[gid] < n_old[gid]
    rows_old, rows_new = np.flatnonzero(is_old), np.flatnonzero(~is_old)
    q = np.empty(total)
    q[rows_old] = np.concatenate([g.q_old for g in groups])
    q[rows_new] = [x for g in groups for x in g.q_new]
    # each J's weights normalized alone; one `sum` per J keeps them bit for bit what they were
    bounds = starts.tolist()
    sums = np.array([q[bounds[j]: bounds[j + 1]].sum() for j in range(m)])
    q = np.where(sums[gid] > 0, q / np.where(sums > 0, sums, 1.0)[gid], q)
    o = np.concatenate([g.old for g in groups]).astype(np.int64)
    nd.parent[:total] = -1
    nd.first_child[:total] = -1
    nd.num_children[:total] = 0
    nd.claim[:total] = 0
    nd.infoset[:total] = -1
    nd.depth[:total] = 0
    nd.chance_prob[:total] = q
    nd.seq[:total] = -1
    nd.seq[:total, opp] = gid
    # carried roots: state, player, move, value, keys and salts as in the old tree
    nd.player[rows_old] = on.player[o]
    nd.action[rows_old] = on.action[o]
    nd.value[rows_old] = on.value[o]
    nd.state[rows_old] = on.state[o]
    nd.key[rows_old] = on.key[o]
    nd.salt[rows_old] = on.salt[o]
    inner = np.concatenate([np.asarray(g.in_i_old, dtype=np.bool_) for g in groups])
    nd.flags[rows_old] = np.where(inner, np.uint8(0), order2)
    if rows_new.size:  # sampled roots: a belief state each, keyed by our view and J's key
        g_new = gid[rows_new]
        nd.player[rows_new] = [p for g in groups for p in g.players]
        inner = np.array([b for g in groups for b in g.in_i_new], dtype=np.bool_)
        inner |= config.knowledge_order > 1  # sampled roots are in I^2
        nd.flags[rows_new] = np.where(inner, np.uint8(0), order2)
        nd.action[rows_new] = -1
        nd.value[rows_new] = [v for g in groups for v in g.values]
        nd.state[rows_new] = [x for g in groups for x in g.states]
        nd.salt[rows_new, searcher] = 0
        nd.salt[rows_new, opp] = np.array([g.salt_opp for g in groups], dtype=np.uint64)[g_new]
        if game.key_mode is KeyMode.INCREMENTAL:
            nd.key[rows_new, searcher] = np.uint64(cur_key)
        else:
            nd.key[rows_new, searcher] = np.array(
                [np.asarray(ob, dtype=np.uint64)[searcher] for g in groups for ob in g.obs],
                dtype=np.uint64)
        nd.key[rows_new, opp] = np.array([g.key for g in groups], dtype=np.uint64)[g_new]
    return total, rows_old, o
