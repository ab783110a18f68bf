"""numba kernels of the CFR family over a `GameTree`'s flat arrays (public API: `caligo.core.cfr`).

One iteration for player p is two passes over the internal nodes plus one pass over p's infosets:

1. `_traverse_kernel`, top-down in node order (parents precede children): the opponent's reach.
   Bottom-up in reverse node order: p's expected utility `v[h]` below every node; at p's nodes the
   instantaneous counterfactual regret `chance_reach(h) * opp_reach(h) * (v[h a] - v[h])`.
2. `_update_kernel`, over p's infosets in ascending id (a top-down order of p's treeplex): add
   p's reach times the weight t^power times p's current strategy to the average; fold `inst` into
   the cumulative regrets (plain sum, regret matching+ floor, or DCFR discounts); regret-match
   (optionally on the regrets plus the prediction `inst`, predictive CFR+) to get p's next strategy.

Status codes: 0 ok.
"""

from __future__ import annotations

import collections

import numpy as np
from numba import njit

from caligo.core.game import CHANCE
from caligo.core.regret import (
    REGRET_DISCOUNTED,
    REGRET_PLUS,
    REGRET_SUM,
    fold_regret,
    matched,
    regret_step,
)

OK = 0

# Regret update modes (`caligo.core.regret`), mirrored by `caligo.core.cfr.RegretUpdate`.
__all__ = ["OK", "REGRET_DISCOUNTED", "REGRET_PLUS", "REGRET_SUM", "RunRule", "SolverArrays",
           "TreeArrays"]

# Traversals, mirrored by `caligo.core.cfr.Traversal`.
TRAVERSE_SEQUENCE_FORM = 0
TRAVERSE_TREE = 1

RunRule = collections.namedtuple(
    "RunRule", "traversal alternating mode alpha beta avg_power predictive")
"""A run's rule: traversal (TRAVERSE_*), alternating (bool), mode (REGRET_*), alpha, beta
(DCFR's discounts), avg_power (the average's weight t**avg_power), predictive (bool)."""

TreeArrays = collections.namedtuple(
    "TreeArrays",
    "inodes player first_child num_children node_offset chance_prob chance_reach utility "
    "term_seq term_coef player_infosets player_ptr offset num_actions first_seq parent_seq")
"""The tree's arrays the kernels read (`caligo.core.cfr`'s per-tree arrays)."""

SolverArrays = collections.namedtuple(
    "SolverArrays", "strategy regrets avg inst reach value plans seq_value")
"""A solver's state (strategy, regrets, avg, inst: float64[num_slots]) and scratch (reach,
value: float64[num_nodes]; plans: float64[2, max num_sequences]; seq_value)."""


@njit(cache=True, nogil=True)
def _traverse_kernel(
    p: int,
    strategy: np.ndarray,
    inodes: np.ndarray,
    player: np.ndarray,
    first_child: np.ndarray,
    num_children: np.ndarray,
    node_offset: np.ndarray,
    chance_prob: np.ndarray,
    chance_reach: np.ndarray,
    utility: np.ndarray,
    reach: np.ndarray,
    value: np.ndarray,
    out: np.ndarray,
) -> int:
    """Add player p's instantaneous counterfactual regrets under `strategy` into `out`.

    p: 0 or 1. strategy: float64[num_slots], both players' current strategies.
    inodes: int32[k] the non-terminal nodes in ascending id. player: int8[num_nodes] (0, 1,
    2 = chance, 3 = terminal). first_child, num_children: int32[num_nodes]. node_offset:
    int32[num_nodes] first slot of the acting infoset (-1 at chance and terminal nodes).
    chance_prob: float64[num_nodes] probability of the incoming chance edge (1 elsewhere);
    chance_reach: float64[num_nodes] product of chance probabilities on the path.
    utility: float64[num_nodes] player 0's utility at terminals, 0 elsewhere.
    reach, value: float64[num_nodes] scratch (the opponent's reach; p's expected utility).
    out: float64[num_slots]; p's slots get `cf_reach(h) * (v(h a) - v(h))` added per history.
    Returns OK.

    The arithmetic is OpenSpiel's `CFRSolverBase::ComputeCounterFactualRegret` operation for
    operation (values below h not weighted by reach, cf reach = opponent reach * chance reach,
    regrets added per history), so exact ties in regret matching+ break the same way.
    """
    sign = 1.0 if p == 0 else -1.0
    reach[0] = 1.0
    value[0] = sign * utility[0]
    for i in range(inodes.shape[0]):
        h = inodes[i]
        c0 = first_child[h]
        n = num_children[h]
        r = reach[h]
        if player[h] == 1 - p:
            off = node_offset[h] - c0
            for c in range(c0, c0 + n):
                reach[c] = r * strategy[off + c]
                value[c] = sign * utility[c]  # internal children are overwritten bottom-up
        else:
            for c in range(c0, c0 + n):
                reach[c] = r
                value[c] = sign * utility[c]
    for i in range(inodes.shape[0] - 1, -1, -1):
        h = inodes[i]
        c0 = first_child[h]
        n = num_children[h]
        pl = player[h]
        acc = 0.0
        if pl == CHANCE:
            for c in range(c0, c0 + n):
                acc += chance_prob[c] * value[c]
            value[h] = acc
            continue
        off = node_offset[h] - c0
        for c in range(c0, c0 + n):
            acc += strategy[off + c] * value[c]
        value[h] = acc
        if pl == p:
            cfr = reach[h] * chance_reach[h]
            for c in range(c0, c0 + n):
                out[off + c] += cfr * (value[c] - acc)
    return OK


@njit(cache=True, nogil=True)
def _terminal_sequence_values(
    p: int,
    lo: int,
    hi: int,
    player_infosets: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    term_seq: np.ndarray,
    term_coef: np.ndarray,
    opp_plan: np.ndarray,
    seq_value: np.ndarray,
) -> int:
    """Set seq_value[s] = g(s) = sum of term_coef * opp_plan over p's sparse payoff entries at s.

    Zeroes p's sequences (range lo..hi of player_infosets) first, then scatters the terminal
    payoff terms: the shared first half of every sequence-form pass. Arrays as in
    `_seqform_traverse_kernel`. Returns OK.
    """
    seq_value[0] = 0.0
    for i in range(lo, hi):
        g = player_infosets[i]
        for a in range(first_seq[g], first_seq[g] + num_actions[g]):
            seq_value[a] = 0.0
    sp = term_seq[p]
    so = term_seq[1 - p]
    for k in range(term_coef.shape[0]):
        seq_value[sp[k]] += term_coef[k] * opp_plan[so[k]]
    return OK


@njit(cache=True, nogil=True)
def _seqform_traverse_kernel(
    p: int,
    strategy: np.ndarray,
    term_seq: np.ndarray,
    term_coef: np.ndarray,
    player_infosets: np.ndarray,
    player_ptr: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    opp_plan: np.ndarray,
    seq_value: np.ndarray,
    out: np.ndarray,
) -> int:
    """Add player p's instantaneous counterfactual regrets under `strategy` into `out`.

    The same regrets as `_traverse_kernel` (summed over the histories of each infoset), computed
    in sequence form: the opponent's realization plan y; p's sequence utilities
    g = A_p y from the sparse payoff entries; then bottom-up over p's infosets (descending id),
    V(I, a) = g(Ia) + sum of V(J) over infosets J below Ia, V(I) = sum_a sigma(a|I) V(I, a),
    regret(I, a) = V(I, a) - V(I).

    p: 0 or 1. strategy: float64[num_slots]. term_seq: int32[2, m] the (player 0, player 1)
    sequence pair of each sparse payoff entry; term_coef: float64[m] its chance-weighted player-0
    utility. player_infosets: int32[num_infosets], player 0's ascending then player 1's;
    player_ptr: int32[3]. offset, num_actions, first_seq, parent_seq: int32[num_infosets].
    opp_plan: float64[>= opponent's num_sequences], seq_value: float64[>= p's num_sequences]
    scratch. out: float64[num_slots]; p's slots are added to. Returns OK.
    """
    o = 1 - p
    sign = 1.0 if p == 0 else -1.0
    _plan_kernel(
        player_ptr[o], player_ptr[o + 1], player_infosets, offset, num_actions, first_seq,
        parent_seq, strategy, opp_plan,
    )
    lo = player_ptr[p]
    hi = player_ptr[p + 1]
    _terminal_sequence_values(
        p, lo, hi, player_infosets, num_actions, first_seq, term_seq, term_coef, opp_plan,
        seq_value,
    )
    for i in range(hi - 1, lo - 1, -1):
        g = player_infosets[i]
        s0 = first_seq[g]
        off = offset[g]
        n = num_actions[g]
        v = 0.0
        for a in range(n):
            v += strategy[off + a] * seq_value[s0 + a]
        for a in range(n):
            out[off + a] += sign * (seq_value[s0 + a] - v)
        seq_value[parent_seq[g]] += v
    return OK


@njit(cache=True, nogil=True)
def _update_kernel(
    t: int,
    mode: int,
    alpha: float,
    beta: float,
    avg_power: float,
    predictive: bool,
    fold: bool,
    infosets: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    strategy: np.ndarray,
    regrets: np.ndarray,
    avg: np.ndarray,
    inst: np.ndarray,
    plan: np.ndarray,
) -> int:
    """Fold iteration t's regrets of one player into their state and regret-match.

    t: iteration number, >= 1. mode: REGRET_SUM, REGRET_PLUS or REGRET_DISCOUNTED (alpha, beta).
    avg_power: the average gets weight t**avg_power. predictive: match on regrets + inst.
    fold: add inst into the regrets first (False when the traversal already added into them).
    infosets: int32[k] the player's infosets, ascending. offset, num_actions, first_seq,
    parent_seq: int32[num_infosets]. strategy, regrets, avg, inst: float64[num_slots]; the
    player's slots of strategy, regrets and avg are updated in place, inst is read.
    plan: float64[>= num_sequences of the player] scratch (the player's realization plan).
    Returns OK.
    """
    w = 1.0 if avg_power == 0.0 else float(t) ** avg_power
    pos_scale = 1.0
    neg_scale = 1.0
    if mode == REGRET_DISCOUNTED:
        ta = float(t) ** alpha
        tb = float(t) ** beta
        pos_scale = ta / (ta + 1.0)
        neg_scale = tb / (tb + 1.0)
    plan[0] = 1.0
    for i in range(infosets.shape[0]):
        g = infosets[i]
        o = offset[g]
        n = num_actions[g]
        xp = plan[parent_seq[g]]
        s0 = first_seq[g]
        for a in range(n):
            x = xp * strategy[o + a]
            plan[s0 + a] = x
            avg[o + a] += w * x
        regret_step(regrets, inst, strategy, o, n, mode, pos_scale, neg_scale, predictive, fold)
    return OK


@njit(cache=True, nogil=True)
def _plan_kernel(
    lo: int,
    hi: int,
    player_infosets: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    strategy: np.ndarray,
    plan: np.ndarray,
) -> int:
    """Fill `plan` (float64[>= num_sequences]) with one player's realization plan.

    lo, hi: the player's range in player_infosets (int32[num_infosets], ascending per player).
    offset, num_actions, first_seq, parent_seq: int32[num_infosets]; strategy: float64[slots].
    Returns OK.
    """
    plan[0] = 1.0
    for i in range(lo, hi):
        g = player_infosets[i]
        base = plan[parent_seq[g]]
        s0 = first_seq[g]
        off = offset[g]
        for a in range(num_actions[g]):
            plan[s0 + a] = base * strategy[off + a]
    return OK


# Long by design: traverse, fold and match in one pass over the player's infosets; split
# into calls, each infoset's slots are walked twice (7% more instructions per iteration).
@njit(cache=True, nogil=True)
def _seqform_step_kernel(
    p: int,
    t: int,
    mode: int,
    alpha: float,
    beta: float,
    avg_power: float,
    predictive: bool,
    term_seq: np.ndarray,
    term_coef: np.ndarray,
    player_infosets: np.ndarray,
    player_ptr: np.ndarray,
    offset: np.ndarray,
    num_actions: np.ndarray,
    first_seq: np.ndarray,
    parent_seq: np.ndarray,
    strategy: np.ndarray,
    regrets: np.ndarray,
    avg: np.ndarray,
    inst: np.ndarray,
    plans: np.ndarray,
    seq_value: np.ndarray,
) -> int:
    """One alternating half-iteration for player p, fused: traverse, update, regret-match.

    Equal to `_seqform_traverse_kernel` into `inst` followed by `_update_kernel` with fold=True,
    but in one bottom-up pass: at each of p's infosets (descending id) its counterfactual values
    are complete, so its regrets, average and strategy are updated on the spot (the parent's
    value only needs this infoset's old-strategy value). A last top-down pass refreshes p's
    realization plan. `plans` (float64[2, >= max num_sequences]) must hold both players'
    realization plans of `strategy` on entry and does on exit. inst: float64[num_slots], p's
    slots receive the iteration's instantaneous regrets. seq_value: float64[>= num_sequences]
    scratch. Other arguments as in `_seqform_traverse_kernel` and `_update_kernel`.
    Returns OK.
    """
    sign = 1.0 if p == 0 else -1.0
    w = 1.0 if avg_power == 0.0 else float(t) ** avg_power
    pos_scale = 1.0
    neg_scale = 1.0
    if mode == REGRET_DISCOUNTED:
        ta = float(t) ** alpha
        tb = float(t) ** beta
        pos_scale = ta / (ta + 1.0)
        neg_scale = tb / (tb + 1.0)
    lo = player_ptr[p]
    hi = player_ptr[p + 1]
    own = plans[p]
    _terminal_sequence_values(
        p, lo, hi, player_infosets, num_actions, first_seq, term_seq, term_coef, plans[1 - p],
        seq_value,
    )
    for i in range(hi - 1, lo - 1, -1):
        g = player_infosets[i]
        s0 = first_seq[g]
        off = offset[g]
        n = num_actions[g]
        v = 0.0
        for a in range(n):
            v += strategy[off + a] * seq_value[s0 + a]
        seq_value[parent_seq[g]] += v
        total = 0.0  # one pass: the instantaneous regret, its fold and the matching's sum
        for a in range(n):
            avg[off + a] += w * own[s0 + a]
            r_inst = sign * (seq_value[s0 + a] - v)
            inst[off + a] = r_inst
            r = fold_regret(regrets[off + a] + r_inst, mode, pos_scale, neg_scale)
            regrets[off + a] = r
            q = r + r_inst if predictive else r
            if q > 0.0:
                total += q
        # the matching slot by slot, as `regret_match` does: that helper inlined here cost 7%
        # more instructions per iteration (numba's IR inlining of array arguments)
        if total > 0.0:
            for a in range(n):
                strategy[off + a] = matched(regrets[off + a], inst[off + a], total, predictive)
        else:
            u = 1.0 / n
            for a in range(n):
                strategy[off + a] = u
    return _plan_kernel(
        lo, hi, player_infosets, offset, num_actions, first_seq, parent_seq, strategy, own
    )


# Long by design: the driver of a whole run inside numba (no Python between iterations); its
# branches are the rules' schedules, each a few calls of the kernels above.
@njit(cache=True, nogil=True)
def _run_kernel(iterations: int, t0: int, rule: RunRule, tree: TreeArrays,
                st: SolverArrays) -> int:
    """Run iterations t0+1 .. t0+iterations in place.

    Alternating: for p = 0 then 1, traverse p under the current profile and update p at once
    (so player 1 sees player 0's new strategy, as OpenSpiel's solvers do). Simultaneous: traverse
    both players under the same profile, then update both.
    player_infosets: int32[num_infosets] player 0's infosets ascending, then player 1's;
    player_ptr: int32[3] their bounds. traversal: TRAVERSE_TREE (`_traverse_kernel`, node arrays)
    or TRAVERSE_SEQUENCE_FORM (`_seqform_traverse_kernel`, term_seq and term_coef). Infoset
    arrays and state as in `_update_kernel`; reach, value: float64[num_nodes], plans:
    float64[2, max num_sequences] and seq_value: float64[max num_sequences] scratch.
    Alternating sequence-form runs use the fused `_seqform_step_kernel`.
    The arguments come as named tuples (`RunRule`, `TreeArrays`, `SolverArrays`), as the
    search's kernels take theirs. Returns OK or the first non-OK status of a sub-kernel.
    """
    traversal, alternating, mode = rule.traversal, rule.alternating, rule.mode
    alpha, beta, avg_power, predictive = rule.alpha, rule.beta, rule.avg_power, rule.predictive
    inodes, player, first_child = tree.inodes, tree.player, tree.first_child
    num_children, node_offset, chance_prob = tree.num_children, tree.node_offset, tree.chance_prob
    chance_reach, utility, term_seq = tree.chance_reach, tree.utility, tree.term_seq
    term_coef, player_infosets, player_ptr = tree.term_coef, tree.player_infosets, tree.player_ptr
    offset, num_actions, first_seq = tree.offset, tree.num_actions, tree.first_seq
    parent_seq = tree.parent_seq
    strategy, regrets, avg, inst = st.strategy, st.regrets, st.avg, st.inst
    reach, value, plans, seq_value = st.reach, st.value, st.plans, st.seq_value
    if alternating and traversal == TRAVERSE_SEQUENCE_FORM:
        for p in range(2):
            _plan_kernel(
                player_ptr[p],
                player_ptr[p + 1],
                player_infosets,
                offset,
                num_actions,
                first_seq,
                parent_seq,
                strategy,
                plans[p],
            )
        for t in range(t0 + 1, t0 + iterations + 1):
            for p in range(2):
                status = _seqform_step_kernel(
                    p,
                    t,
                    mode,
                    alpha,
                    beta,
                    avg_power,
                    predictive,
                    term_seq,
                    term_coef,
                    player_infosets,
                    player_ptr,
                    offset,
                    num_actions,
                    first_seq,
                    parent_seq,
                    strategy,
                    regrets,
                    avg,
                    inst,
                    plans,
                    seq_value,
                )
                if status != OK:
                    return status
        return OK
    plan = plans[0]
    for t in range(t0 + 1, t0 + iterations + 1):
        for phase in range(2):
            for p in range(2):
                traverse = phase == 0 if not alternating else True
                update = phase == 1 if not alternating else True
                if alternating and phase == 1:
                    continue
                infosets = player_infosets[player_ptr[p] : player_ptr[p + 1]]
                if traverse:
                    # Predictive CFR+ needs the iteration's regrets apart (its prediction);
                    # otherwise add straight into the cumulative regrets, in OpenSpiel's order.
                    target = inst if predictive else regrets
                    if predictive:
                        for i in range(infosets.shape[0]):
                            g = infosets[i]
                            for a in range(offset[g], offset[g] + num_actions[g]):
                                inst[a] = 0.0
                    if traversal == TRAVERSE_TREE:
                        status = _traverse_kernel(
                            p,
                            strategy,
                            inodes,
                            player,
                            first_child,
                            num_children,
                            node_offset,
                            chance_prob,
                            chance_reach,
                            utility,
                            reach,
                            value,
                            target,
                        )
                    else:
                        status = _seqform_traverse_kernel(
                            p,
                            strategy,
                            term_seq,
                            term_coef,
                            player_infosets,
                            player_ptr,
                            offset,
                            num_actions,
                            first_seq,
                            parent_seq,
                            plan,
                            seq_value,
                            target,
                        )
                    if status != OK:
                        return status
                if update:
                    status = _update_kernel(
                        t,
                        mode,
                        alpha,
                        beta,
                        avg_power,
                        predictive,
                        predictive,
                        infosets,
                        offset,
                        num_actions,
                        first_seq,
                        parent_seq,
                        strategy,
                        regrets,
                        avg,
                        inst,
                        plan,
                    )
                    if status != OK:
                        return status
    return OK
