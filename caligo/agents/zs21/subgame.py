"""ZS21's subgame at a decision: Zhang & Sandholm 2021, Algorithm 12 with k = 1, Reach and
transposition merging, plus Algorithm 15's particles (lines 11-19) and information term (line 20).

`make_subgame(old, layer, new, ...)` reads the previous trunk Γ (a search `Arena`, solved: its
slots hold the exact (x̂, ŷ) and its root layer the previous gadget) and writes the new subgame
into the empty arena `new`:

1. I' = the trunk's nodes where we (▲) act with our current observation-sequence key (line 11);
   û = u(x̂, ŷ | I'), our value of I' under the previous solution, or +inf if I' is empty
   (lines 12-13).
2. The root infosets: every opponent (▼) infoset J meeting I' (Algorithm 12 line 9, k = 1).
   J's nodes in I' are the kept roots; its other nodes are roots too, marked FROZEN: we keep the
   blueprint there, which is what lines 26-27 add through B (`construct._compact_kernel` keeps
   our infosets below them at the blueprint, the opponent free).
3. Transposition merging (lines 10-14): visiting the J in random order (line 11's advice;
   `ZS21Config.shuffle_merge`), a J whose nodes in I' are transpositions of an earlier J's is
   skipped. A transposition is an equal `transposition key` (FoW: the Zobrist key, equal
   positions; `TreeGame`: an equal subtree up to renaming, `caligo.subgame.gadget`'s test).
4. Per J: D = sum over J ∩ I' of c x (line 16: c the chance reach, x our reach under x̂); J is
   dropped when x̂ does not reach it (`caligo.core.lp.REACH_TOL`); R = sum over all of J of c x;
   the alternate value u*(x̂ | J) = V / R with V the opponent's best-response value against x̂
   over J (line 21); the gift estimate ĝ(J) = sum over the opponent's decisions J'a' above J of
   u*(x̂ | J'a') - u*(x̂ | J') (line 23, best-response values; Reach, line 22), the previous
   gadget's root choice included (it is a decision of ▼ in Γ); sigma = R / D. The branch
   threshold is t_J = sigma (u*(x̂ | J) - ĝ(J)), the root's chance probabilities are
   q_h = c x / D for every node h of J (kept and frozen), so branch J is worth
   sum_h q_h u(h) - t_J = sigma (M(J) + ĝ(J)) with M the margin: Algorithm 12's B, in nodes.
5. Particles (lines 15-19): if |I'| < L and I' is not all of P, L - |I'| positions are drawn
   uniformly without replacement from P minus the trunk; each is a root in our infoset with a
   singleton opponent infoset (the opponent knows the node) and threshold min(û, ũ(h)).
6. `construct.materialize` writes the roots and the gadget layer and copies the trunk below
   them (1-KLSS: `SubgameKind.KLSS` freezes the roots outside I'); then the roots get their
   q_h, which sum to sigma within J (the search's own gadget normalizes them to 1).

`information_term` is Algorithm 15 line 20: for each action a at our root infoset, the entropy
H(a) in bits of our next observation when the root is drawn uniformly from I', and the term of
`Penalty` (module `config`).

This module reuses `caligo.search.construct`'s private helpers (`opp_values`, `under_kernel`,
`Group`, `materialize`): the arena layout is the search's, and copying it would fork it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from caligo.agents.zs21.config import Penalty, ZS21Config
from caligo.core.lp import REACH_TOL
from caligo.core.tree import GameTree
from caligo.limits import Deadline, Pace
from caligo.search import construct as C
from caligo.search import construct_kernels as K
from caligo.search import materialize as M
from caligo.search.arena import EXPANDED, FROZEN, GADGET, Arena
from caligo.search.config import (
    AlternateValues,
    CarryOver,
    GadgetMode,
    Iterations,
    ResolvePrior,
    RootGadget,
    SearchConfig,
    SubgameKind,
)
from caligo.search.export import RootLayer
from caligo.search.game import Belief, Evaluator, SearchGame, TreeGame

__all__ = [
    "SubgameInfo",
    "TranspositionKeys",
    "information_term",
    "infoset_value",
    "make_subgame",
    "search_config",
    "transposition_keys",
]

I64 = np.ndarray
TranspositionKeys = Callable[[I64], np.ndarray]


def search_config(config: ZS21Config) -> SearchConfig:
    """The `caligo.search` settings the arena helpers read: 1-KLSS, uniform Resolve prior."""
    return SearchConfig(
        budget=Iterations(1), expansions=0, subgame=SubgameKind.KLSS, gadget=GadgetMode.MAXMARGIN,
        resolve_prior=ResolvePrior.UNIFORM, alternate_values=AlternateValues.BEST_RESPONSE,
        gifts=config.gifts, carry_over=CarryOver.PROFILE_ONLY, min_roots=config.particles,
        max_nodes=config.max_nodes, seed=config.seed,
    )  # fmt: skip


class _TreeTranspositions:
    """Transposition keys of a `TreeGame`'s nodes: equal subtrees up to renaming of infosets
    (`caligo.subgame.gadget`'s signature), numbered in order of first request."""

    def __init__(self, tree: GameTree) -> None:
        self.tree = tree
        self.ids: dict[Hashable, int] = {}
        self.memo: dict[int, int] = {}

    def __call__(self, states: I64) -> np.ndarray:
        from caligo.subgame.regions import subtree_signature

        out = np.empty(np.asarray(states).shape[0], dtype=np.uint64)
        for i, s in enumerate(np.asarray(states, dtype=np.int64).tolist()):
            k = self.memo.get(s)
            if k is None:
                k = self.ids.setdefault(subtree_signature(self.tree, s), len(self.ids))
                self.memo[s] = k
            out[i] = k
        return out


def transposition_keys(game: SearchGame) -> TranspositionKeys:
    """The game's transposition test: its `transposition_keys` method if it has one, the
    subtree signature for a `TreeGame`, else its state keys (equal states)."""
    own = getattr(game, "transposition_keys", None)
    if callable(own):
        return own  # type: ignore[no-any-return]
    if isinstance(game, TreeGame):
        return _TreeTranspositions(game.tree)
    return game.state_key


@dataclass(frozen=True, eq=False)
class SubgameInfo:
    """What `make_subgame` built. Per root infoset J (arena root order): keys (▼'s key), alt
    (u*(x̂|J), our utility), gift, sigma, threshold, roots_per_j. in_i: our trunk nodes kept as
    roots; particles: roots sampled from the belief; merged: J skipped as transpositions;
    dropped: J not reached by x̂; u_hat: our value of I' (inf when I' is empty);
    carried_nodes / carried_infosets: copied from the previous trunk."""

    keys: np.ndarray
    alt: np.ndarray
    gift: np.ndarray
    sigma: np.ndarray
    threshold: np.ndarray
    roots_per_j: np.ndarray
    in_i: int
    particles: int
    merged: int
    dropped: int
    u_hat: float
    carried_nodes: int
    carried_infosets: int


def _gadget_terms(old: Arena, layer: RootLayer, seqv: np.ndarray) -> np.ndarray:
    """Gift of ▼'s choice at the previous gadget's root, per previous root infoset j.

    b_j = u*(x̂ | branch j) - t_j. Maxmargin (▼ picks j): b_j - min b; Resolve (▼ exits or
    plays at j): max(b_j, 0). Zero without a previous gadget.
    """
    m = old.n_j
    if layer.kind is RootGadget.NONE or m == 0:
        return np.zeros(max(m, 1))
    b = seqv[:m] - layer.threshold[:m]
    out: np.ndarray = b - b.min() if layer.kind is RootGadget.MAXMARGIN else np.maximum(b, 0.0)
    return out


def infoset_value(prof: C.Profile, nodes: np.ndarray) -> float:
    """Our value of a set of our nodes under a profile: u(x, y | I) = sum c y v / sum c y (our
    reach is the same at every node of an infoset); nan when the opponent never reaches it."""
    w = (prof.c * prof.y)[nodes]
    if w.sum() <= 0.0:
        return math.nan
    return float(np.dot(w, prof.v[nodes]) / w.sum())


# Long by design: the module docstring's steps 1-5 in order (Zhang & Sandholm 2021, Algorithm 12
# with k = 1 and Algorithm 15 lines 11-19: I', the root infosets, merging, margins, particles),
# over the search's published stages.
def make_subgame(
    old: Arena,
    layer: RootLayer,
    new: Arena,
    game: SearchGame,
    belief: Belief,
    evaluator: Evaluator,
    cur_key: int,
    config: ZS21Config,
    rng: np.random.Generator,
    util_scale: float,
    transpositions: TranspositionKeys,
    deadline: Deadline | None = None,
    pace: Pace | None = None,
) -> tuple[SubgameInfo, RootLayer]:
    """Build the subgame at our infoset `cur_key` into `new` (module docstring). `deadline`:
    the particles are evaluated in batches that fit before its soft instant at `pace` (the
    caller's measured time per particle; fewer are added past it, at least one when no node
    of our infoset is carried)."""
    searcher = old.searcher
    opp = 1 - searcher
    n = old.n_nodes
    nd, inf, sl = old.nodes, old.infosets, old.slots
    strat = old.slots.strat[: old.n_slots].copy()
    prof = C.profile(old, strat)
    alive, c, y, v = prof.alive, prof.c, prof.y, prof.v
    x = prof.x

    # 1. I' and û
    is_i = alive & (nd.player[:n] == searcher) & (nd.key[:n, searcher] == np.uint64(cur_key))
    i_nodes = np.flatnonzero(is_i)
    if i_nodes.size and not np.any(x[i_nodes] > REACH_TOL):
        x = x.copy()  # a forced move took us off our own support: weigh I' as if we played
        x[i_nodes] = 1.0
    u_hat = infoset_value(prof, i_nodes)
    if math.isnan(u_hat):
        u_hat = math.inf

    # 2. root infosets J, in order of their first node in I'; roots = top nodes of I' ∪ J
    jk = nd.key[i_nodes, opp]
    uniq, first_idx = np.unique(jk, return_index=True)
    jkeys = uniq[np.argsort(first_idx, kind="stable")]
    in_j = alive & np.isin(nd.key[:n, opp], jkeys)
    in_s = is_i | in_j
    under = np.zeros(n, dtype=np.bool_)
    K.under_kernel(nd.parent, n, old.n_roots, in_s, under)
    roots = np.flatnonzero(in_s & ~under)
    rank = {int(k): j for j, k in enumerate(jkeys.tolist())}
    m0 = jkeys.size
    rj = np.array([rank[int(k)] for k in nd.key[roots, opp].tolist()], dtype=np.int64)
    r_in = is_i[roots]
    cx = c * x
    D = np.bincount(rj, weights=cx[roots] * r_in, minlength=m0)
    chance_i = np.bincount(rj, weights=c[roots] * r_in, minlength=m0)
    all_j = np.flatnonzero(in_j)
    aj = np.array([rank[int(k)] for k in nd.key[all_j, opp].tolist()], dtype=np.int64)
    # Nodes below a root frozen at an earlier decision stand for Algorithm 12's B entries
    # (lines 26-27): they pay, but are no nodes of Γ, so they weigh nothing in R or in the
    # reaches that normalize the gifts.
    live = (nd.flags[:n] & FROZEN) == 0
    R = np.bincount(aj, weights=(cx * live)[all_j], minlength=m0)

    # alternate values and gifts from the opponent's best response to x̂ in Γ
    seqv, infv, _, br = C.opp_values(old, C.Profile(strat, alive, c, x, y, v), True)
    dec = alive & live & (nd.player[:n] == opp) & ((nd.flags[:n] & EXPANDED) != 0)
    reach = np.bincount(nd.infoset[:n][dec], weights=cx[dec], minlength=old.n_infosets)
    v_br = C.profile(old, br).v
    V = np.bincount(aj, weights=(cx * v_br)[all_j], minlength=m0)
    with np.errstate(divide="ignore", invalid="ignore"):
        alt = np.where(R > 0, V / np.where(R > 0, R, 1.0), 0.0)
        sigma = np.where(D > 0, R / np.where(D > 0, D, 1.0), 1.0)
    gifts = np.zeros(m0)
    if config.gifts and m0:
        top = _gadget_terms(old, layer, seqv)
        first_root = np.full(m0, -1, dtype=np.int64)
        for r_i in range(roots.size - 1, -1, -1):
            if r_in[r_i]:
                first_root[rj[r_i]] = roots[r_i]
        for j in range(m0):
            if first_root[j] < 0:
                continue  # no root in I' (D = 0): dropped below
            s = int(nd.seq[first_root[j], opp])
            total = 0.0
            while s >= 0:
                g = int(sl.infoset[s])
                if inf.flags[g] & GADGET:
                    total += float(top[s])
                    break
                if reach[g] > 0.0:
                    total += max((seqv[s] - infv[g]) / reach[g], 0.0)
                s = int(inf.parent_seq[g])
            gifts[j] = total

    # 3. transposition merging, then J's that x̂ does not reach
    keep = np.ones(m0, dtype=np.bool_)
    merged = 0
    if config.merge_transpositions and m0 > 1:
        i_roots = roots[r_in]
        tkeys = transpositions(nd.state[i_roots].astype(np.int64))
        sig: list[tuple[int, ...]] = [() for _ in range(m0)]
        for r_i, j in enumerate(rj[r_in].tolist()):
            sig[j] = sig[j] + (int(tkeys[r_i]),)
        visit = rng.permutation(m0) if config.shuffle_merge else np.arange(m0)
        seen: set[tuple[int, ...]] = set()
        for j in visit.tolist():
            if sig[j] in seen:
                keep[j] = False
                merged += 1
            else:
                seen.add(sig[j])
    reached = (chance_i > 0.0) & (D > REACH_TOL * chance_i)
    dropped = int(np.count_nonzero(keep & ~reached))
    keep &= reached

    groups: list[M.Group] = []
    q_all: list[np.ndarray] = []
    for j in np.flatnonzero(keep).tolist():
        rs = roots[rj == j]
        groups.append(M.Group(
            key=int(jkeys[j]), alt=float(alt[j]), gift=float(gifts[j]), sigma=float(sigma[j]),
            P=0.0, old=rs, q_old=cx[rs] / D[j], in_i_old=is_i[rs],
        ))  # fmt: skip
        q_all.append(cx[rs] / D[j])
    kept_i = int(np.count_nonzero(is_i[np.concatenate([g.old for g in groups])])) if groups else 0

    # 5. particles
    size = belief.size()
    need = min(config.particles, size) - kept_i
    particles = 0
    if need > 0:
        picks = M.sample_outside(game, belief, nd, i_nodes, need, rng)
        vals = M.evaluate_until(evaluator, picks, deadline, 1 if kept_i == 0 else 0, pace)
        picks = picks[: vals.size]
        particles = int(picks.size)
        if picks.size:  # singleton opponent infosets, threshold min(û, ũ(h)) (Fig. 9's too)
            used = M.add_sampled(groups, picks, game, belief, evaluator, cur_key,
                                  search_config(config), u_hat, searcher, nd, vals)
            assert used == particles  # singleton groups: no evaluation, nothing left out
            q_all.extend(np.ones(1) for _ in range(particles))

    # 6. the new arena
    build = M.materialize(old, new, groups, strat, game, search_config(config), searcher,
                           util_scale, kept_i, particles, u_hat, cur_key)
    nr = new.n_roots
    new.nodes.chance_prob[:nr] = np.concatenate(q_all)
    m = new.n_j
    layer_new = RootLayer(RootGadget.MAXMARGIN, new.roots.threshold[:m].copy(),
                          new.roots.alpha[:m].copy())
    new.roots.w[:m] = 1.0 / m
    info_out = SubgameInfo(
        keys=build.keys, alt=build.alt, gift=build.gift, sigma=build.sigma,
        threshold=build.threshold, roots_per_j=build.roots_per_j, in_i=kept_i,
        particles=particles, merged=merged, dropped=dropped, u_hat=u_hat,
        carried_nodes=build.carried_nodes, carried_infosets=build.carried_infosets,
    )  # fmt: skip
    return info_out, layer_new


def information_term(game: SearchGame, root_states: I64, searcher: int, belief_size: int,
                     config: ZS21Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actions, H(a) in bits, the term per action in our utility) at our root infoset.

    H(a) is the entropy of our next observation after playing a when the root is uniform over
    `root_states` (Algorithm 15 line 21). The term is -2^-H |I| / M (`Penalty.TEXT`),
    (1 - 2^-H) |I| / M (`Penalty.ALGORITHM`) or 0, with |I| = `belief_size`.
    """
    s = np.asarray(root_states, dtype=np.int64)
    batch = game.expand(s)
    counts = np.diff(batch.ptr)
    acts = batch.action[: counts[0]].copy() if s.size else np.zeros(0, dtype=np.int32)
    ent = np.zeros(acts.size)
    for a_i, a in enumerate(acts.tolist()):
        pick = batch.action == a
        keys = batch.obs[pick, searcher]
        _, cnt = np.unique(keys, return_counts=True)
        p = cnt / cnt.sum()
        ent[a_i] = float(-(p * np.log2(p)).sum())
    scale = belief_size / config.penalty_m
    if config.penalty is Penalty.TEXT:
        term = -(2.0 ** -ent) * scale
    elif config.penalty is Penalty.ALGORITHM:
        term = (1.0 - 2.0 ** -ent) * scale
    else:
        term = np.zeros(acts.size)
    return acts, ent, term
