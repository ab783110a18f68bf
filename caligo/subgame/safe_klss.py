"""Safe-1-KLSS (Liu et al. 2023, "Opponent-Limited Online Search for Imperfect Information Games").

The formulation implemented here. Let x0 be the blueprint, I player 0's infoset, J a player-1
root infoset meeting I, y_J a player-1 strategy from J on, u_S(x, y_J) the value conditional on
reaching the node set S (player 0's utility), beta_{I|J} = D(J)/R(J) the blueprint's conditional
reach of I given J, and x' the re-solved strategy (different from x0 only below I). Then

    u_J(x', y_J) = u_J(x0, y_J) + beta_{I|J} [u_{I∩J}(x'_I, y_J) - u_{I∩J}(x0_I, y_J)],

and plain 1-KLSS's margin min_y [u_J(x', y) - min_y' u_J(x0, y')], divided by beta, is

    min_y { [u_{I∩J}(x'_I, y) - u_{I∩J}(x0_I, y)] + (1 / beta_{I|J}) gift_J(y) },
    gift_J(y) = u_J(x0, y) - min_y' u_J(x0, y')  >= 0 (the gift within the subgame),

which "allows one infoset I to steal the whole gift": solved at every infoset I of J, each may
use all of it. Safe-KLSS splits the gift among the player-0 infosets by their blueprint reach: I
gets the share beta_{I|J} of gift_J, i.e. (the margin above without its 1/beta) the pair margin

    Margin_{I,J}(x') = min_{y_J} { u_{I∩J}(x'_I, y_J) - u_{I∩J}(x0_I, y_J) + gift_J(y_J) },

and Maxmargin maximizes min_J Margin_{I,J} (Resolve: sum_J alpha_J [Margin_{I,J}]^-). If every
infoset I of J keeps Margin_{I,J} >= 0, then sum_I beta_{I|J} (improvement at I) + gift >= 0
for every y_J, so no player-1 infoset gains: solving independently at every infoset is safe
(unlike 1-KLSS; Zhang & Sandholm 2021, Proposition 3 is the test).

As a gadget (same tree as the 1-KLSS gadget, `make_subgame` with k = 1), in branch J:
A gives u_{I∩J}(x', y) (chance p(h) x(h) / D over I ∩ J); the top row of B holds
  - beta (B_KLSS without the alternate value): beta times the frozen payoffs of J \\ I and any
    carried-over B, which with the next term makes u_J(x0, y);
  - (beta - 1) u_{I∩J}(x0, y): the blueprint's payoff on the kept nodes, per player-1 sequence;
  - -(u*(x0|J) - g(J)) at the branch sequence (the alternate value, less the gift with reach),
all times the Resolve prior for Resolve gadgets. At x' = x0 every branch is worth
min_y gift_J(y) = 0.

`safe_margins(sub, strategy)` returns Margin_{I,J} per root J; `subgame_margins` still gives the
plain margins u*(x'|J) - u*(x0|J).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from caligo.core.best_response import best_response
from caligo.core.strategy import realization_plan, uniform_strategy
from caligo.core.tree import FloatArray, GameTree
from caligo.subgame.gadget import (
    GadgetKind,
    Subgame,
    SubgameError,
    SubgameOptions,
    make_subgame,
)
from caligo.subgame.regions import _region_of, first_node_of_infoset


def blueprint_on_gadget(sub: Subgame, tree: GameTree, blueprint: FloatArray) -> FloatArray:
    """The blueprint's player-0 play copied onto the gadget's infosets (player 1 uniform)."""
    gt = sub.tree
    out = uniform_strategy(gt)
    for g in gt.infosets_of(0):
        j = int(sub.infoset_map[g])
        if j >= 0:
            n = int(gt.infoset_num_actions[g])
            o, so = int(gt.infoset_offset[g]), int(tree.infoset_offset[j])
            out[o : o + n] = blueprint[so : so + n]
    return out


def make_safe_klss_subgame(
    tree: GameTree,
    blueprint: FloatArray,
    infoset: int,
    options: SubgameOptions | None = None,
    B: sp.spmatrix | None = None,
) -> Subgame:
    """The Safe-1-KLSS gadget (module docstring) at player 0's infoset `infoset`."""
    opts = options if options is not None else SubgameOptions()
    if opts.kind is GadgetKind.UNSAFE or opts.k != 1 or opts.kluss:
        raise SubgameError("Safe-KLSS needs a Maxmargin or Resolve gadget with k = 1")
    opts = dataclasses.replace(opts, merge_transpositions=False)
    plain = make_subgame(tree, blueprint, infoset, opts, B)
    if plain.is_empty:
        return dataclasses.replace(plain, margin_extra=plain.extra, safe_klss=True)
    gt = plain.tree
    beta = plain.root_weight / plain.root_reach
    region = _region_of(gt, list(plain.copy_roots))
    branch = {int(s): r for r, s in enumerate(plain.branch_seq)}

    def branch_of(seq: int) -> int:
        if seq in branch:
            return branch[seq]
        j = int(gt.seq_infoset[1][seq])
        return int(region[int(first_node_of_infoset(gt)[j])])

    top = np.zeros(gt.num_sequences[1])
    old = sp.csr_matrix(plain.extra).tocoo()
    for s, v in zip(old.col, old.data, strict=True):
        s = int(s)
        if s in branch:  # keep only the frozen-payoff part of the branch entry
            continue
        top[s] += beta[branch_of(s)] * v
    for r in range(plain.num_roots):
        top[plain.branch_seq[r]] += beta[r] * plain.root_base_outside[r]
        top[plain.branch_seq[r]] -= plain.prior[r] * (plain.alternate_values[r] - plain.gifts[r])
    # (beta - 1) u_{I∩J}(x0, y): the blueprint's payoff on the kept copies
    x0 = realization_plan(gt, blueprint_on_gadget(plain, tree, blueprint), 0)
    z = gt.terminals()
    live = (gt.chance_reach[z] > 0) & (region[z] >= 0)
    z = z[live]
    w = gt.chance_reach[z] * x0[gt.seq[z, 0]] * gt.utility[z] * (beta[region[z]] - 1.0)
    np.add.at(top, gt.seq[z, 1], w)
    nz = np.flatnonzero(np.abs(top) > 0)
    extra = sp.csr_matrix((top[nz], (np.zeros(nz.size, dtype=np.int64), nz)),
                          shape=(gt.num_sequences[0], gt.num_sequences[1]))
    return dataclasses.replace(plain, extra=extra, margin_extra=plain.extra, safe_klss=True,
                               _cache={})


def safe_margins(sub: Subgame, gadget_strategy: FloatArray) -> FloatArray:
    """Margin_{I,J}(x') per root J of a Safe-KLSS gadget (gifts of Reach not included)."""
    if not sub.safe_klss:
        raise SubgameError("not a Safe-KLSS gadget")
    if sub.is_empty:
        return np.zeros(0)
    br = best_response(sub.tree, np.asarray(gadget_strategy, dtype=np.float64), 1,
                       extra=sub.extra)
    v = br.sequence_values[sub.branch_seq]
    if sub.options.kind is GadgetKind.RESOLVE:  # the value of PLAY, before the EXIT choice
        v = v / sub.prior
    return v - sub.gifts
