"""The CFR kernels against a slow, tree-recursive pure-Python reference (docs/design.md,
"Conventions").

The reference walks histories recursively as OpenSpiel's `CFRSolverBase` does: reach
probabilities per player plus chance, regrets `cf_reach * (v(ha) - v(h))` per history, the average
weighted by the player's own reach at every history (so the cumulative average differs from the
kernels' per-infoset one by the factor |I|; normalized averages are compared). Games: random small
games drawn by hypothesis, plus kuhn_poker.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caligo.core import _cfr_kernels as K
from caligo.core.cfr import CFRConfig, CFRSolver, RegretUpdate, Traversal, _cfr_arrays
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.games import load_game
from caligo.core.strategy import normalize_per_infoset
from caligo.core.tree import GameTree, build_tree

# ---------------------------------------------------------------- random small games


@dataclass(frozen=True)
class RandomState:
    """A node of a random perfect-recall game, derived deterministically from (seed, history).

    Each step appends an observation for both players: the mover sees its own action, the other
    player a coarse random signal of it, so infosets merge histories. The number of actions at a
    decision node is a function of the mover's observation sequence, as an infoset requires.
    """

    seed: int
    depth: int
    history: tuple[int, ...]
    obs: tuple[tuple[Hashable, ...], tuple[Hashable, ...]]

    def _rng(self, *extra: object) -> random.Random:
        return random.Random(f"{self.seed}|{self.history}|{extra}")

    def current_player(self) -> int:
        if len(self.history) >= self.depth:
            return TERMINAL
        r = self._rng("kind").random()
        if len(self.history) > 0 and r < 0.15:
            return TERMINAL
        return CHANCE if r < 0.35 else (0 if r < 0.7 else 1)

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def legal_actions(self) -> Sequence[int]:
        p = self.current_player()
        if p == CHANCE:
            return list(range(1 + self._rng("n").randrange(3)))
        n = 2 + random.Random(f"{self.seed}|{p}|{self.obs[p]}").randrange(2)
        return list(range(n))

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        acts = self.legal_actions()
        rng = self._rng("probs")
        w = [1 + rng.randrange(4) for _ in acts]
        return [(a, wi / sum(w)) for a, wi in zip(acts, w, strict=True)]

    def child(self, action: int) -> RandomState:
        mover = self.current_player()
        rng = self._rng("obs", action)
        new = []
        for p in (0, 1):
            seen: Hashable = ("a", action) if mover == p else (mover, rng.randrange(2))
            new.append((*self.obs[p], seen))
        return RandomState(self.seed, self.depth, (*self.history, action), (new[0], new[1]))

    def infoset_key(self, player: int) -> Hashable:
        return self.obs[player]

    def infoset_name(self, player: int) -> str:
        return f"p{player}:{self.obs[player]}"

    def utility(self) -> float:
        return round(self._rng("u").uniform(-3, 3), 2)

    def action_string(self, action: int) -> str:
        return str(action)


@dataclass(frozen=True)
class RandomGame:
    seed: int
    depth: int

    @property
    def name(self) -> str:
        return f"random(seed={self.seed},depth={self.depth})"

    def new_initial_state(self) -> RandomState:
        return RandomState(self.seed, self.depth, (), ((), ()))


def random_tree(seed: int, depth: int) -> GameTree:
    return build_tree(RandomGame(seed, depth))


# ---------------------------------------------------------------- the reference


def ref_regrets(tree: GameTree, strategy: np.ndarray, p: int) -> np.ndarray:
    """Player p's instantaneous counterfactual regrets, summed over histories, recursively."""
    out = np.zeros(tree.num_slots)

    def walk(h: int, reach: tuple[float, float, float]) -> float:
        pl = int(tree.player[h])
        if pl == TERMINAL:
            return float(tree.utility[h]) * (1.0 if p == 0 else -1.0)
        c0, n = int(tree.first_child[h]), int(tree.num_children[h])
        if pl == CHANCE:
            return sum(
                tree.chance_prob[c] * walk(c, (reach[0], reach[1], reach[2] * tree.chance_prob[c]))
                for c in range(c0, c0 + n)
            )
        off = int(tree.infoset_offset[tree.infoset[h]])
        vals = []
        for a in range(n):
            r = list(reach)
            r[pl] *= strategy[off + a]
            vals.append(walk(c0 + a, (r[0], r[1], r[2])))
        v = sum(strategy[off + a] * vals[a] for a in range(n))
        if pl == p:
            cf = reach[1 - p] * reach[2]
            for a in range(n):
                out[off + a] += cf * (vals[a] - v)
        return v

    walk(0, (1.0, 1.0, 1.0))
    return out


def ref_own_reach_sum(tree: GameTree, strategy: np.ndarray, p: int) -> np.ndarray:
    """Per slot of p: sum over the infoset's histories of p's reach times sigma (OpenSpiel)."""
    out = np.zeros(tree.num_slots)

    def walk(h: int, own: float) -> None:
        pl = int(tree.player[h])
        if pl == TERMINAL:
            return
        c0, n = int(tree.first_child[h]), int(tree.num_children[h])
        off = int(tree.infoset_offset[tree.infoset[h]]) if pl in (0, 1) else -1
        for a in range(n):
            if pl == p:
                out[off + a] += own * strategy[off + a]
            walk(c0 + a, own * strategy[off + a] if pl == p else own)

    walk(0, 1.0)
    return out


def ref_match(r: np.ndarray) -> np.ndarray:
    pos = np.maximum(r, 0.0)
    return pos / pos.sum() if pos.sum() > 0 else np.full(r.size, 1.0 / r.size)


def ref_run(
    tree: GameTree, config: CFRConfig, iterations: int, initial: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(current strategy, cumulative regrets, normalized average) after `iterations`."""
    sigma = (
        normalize_per_infoset(tree, np.zeros(tree.num_slots)) if initial is None else initial.copy()
    )
    regrets = np.zeros(tree.num_slots)
    avg = np.zeros(tree.num_slots)
    slots_of = [
        [
            range(
                int(tree.infoset_offset[g]),
                int(tree.infoset_offset[g] + tree.infoset_num_actions[g]),
            )
            for g in range(tree.num_infosets)
            if tree.infoset_player[g] == p
        ]
        for p in (0, 1)
    ]
    for t in range(1, iterations + 1):
        order = [[0], [1]] if config.alternating else [[0, 1]]
        for group in order:
            inst = {p: ref_regrets(tree, sigma, p) for p in group}
            for p in group:
                avg += t**config.average_power * ref_own_reach_sum(tree, sigma, p)
                for sl in slots_of[p]:
                    idx = list(sl)
                    r = regrets[idx] + inst[p][idx]
                    if config.regret is RegretUpdate.PLUS:
                        r = np.maximum(r, 0.0)
                    elif config.regret is RegretUpdate.DISCOUNTED:
                        ta, tb = t**config.alpha, t**config.beta
                        r = np.where(r >= 0, r * ta / (ta + 1), r * tb / (tb + 1))
                    regrets[idx] = r
                    sigma[idx] = ref_match(r + inst[p][idx] if config.predictive else r)
    return sigma, regrets, normalize_per_infoset(tree, avg)


# ---------------------------------------------------------------- tests

CONFIGS = [
    CFRConfig.cfr(),
    CFRConfig.cfr_plus(),
    CFRConfig.dcfr(),
    CFRConfig.dcfr(alpha=1.0, beta=0.5, gamma=1.0),
    CFRConfig.pcfr_plus(),
    CFRConfig.pcfr_plus(average_power=2.0),
    CFRConfig(RegretUpdate.SUM, alternating=False),
    CFRConfig(RegretUpdate.PLUS, average_power=1.0, predictive=True, alternating=False),
]


def _with(config: CFRConfig, traversal: Traversal) -> CFRConfig:
    return CFRConfig(
        config.regret,
        config.alpha,
        config.beta,
        config.average_power,
        config.predictive,
        config.alternating,
        traversal,
    )


def _check_run(tree: GameTree, config: CFRConfig, iterations: int) -> None:
    ref_sigma, ref_regrets_, ref_avg = ref_run(tree, config, iterations)
    solver = CFRSolver(tree, config)
    solver.iterate(iterations)
    scale = max(1.0, float(np.abs(ref_regrets_).max()))
    np.testing.assert_allclose(solver.cumulative_regrets(), ref_regrets_, atol=1e-9 * scale)
    np.testing.assert_allclose(solver.current_strategy(), ref_sigma, atol=1e-7)
    np.testing.assert_allclose(solver.average_strategy(), ref_avg, atol=1e-9)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    depth=st.integers(2, 5),
    config=st.sampled_from(CONFIGS),
    traversal=st.sampled_from(list(Traversal)),
    iterations=st.integers(1, 4),
)
def test_run_kernel_equals_reference_on_random_games(
    seed: int, depth: int, config: CFRConfig, traversal: Traversal, iterations: int
) -> None:
    tree = random_tree(seed, depth)
    if tree.num_infosets == 0:
        return
    _check_run(tree, _with(config, traversal), iterations)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: repr(c)[10:60])
@pytest.mark.parametrize("traversal", list(Traversal))
def test_run_kernel_equals_reference_on_kuhn(config: CFRConfig, traversal: Traversal) -> None:
    _check_run(load_game("kuhn_poker"), _with(config, traversal), 5)


def _random_strategy(tree: GameTree, rng: np.random.Generator) -> np.ndarray:
    w = rng.random(tree.num_slots) * (rng.random(tree.num_slots) < 0.8)
    return normalize_per_infoset(tree, w)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(1, 5), p=st.sampled_from([0, 1]))
def test_traverse_kernels_equal_reference(seed: int, depth: int, p: int) -> None:
    tree = random_tree(seed, depth)
    _check_traversals(tree, _random_strategy(tree, np.random.default_rng(seed)), p)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_traverse_kernels_equal_reference_on_poker(game: str) -> None:
    tree = load_game(game)
    rng = np.random.default_rng(7)
    for p in (0, 1):
        _check_traversals(tree, _random_strategy(tree, rng), p)


def _check_traversals(tree: GameTree, strategy: np.ndarray, p: int) -> None:
    a = _cfr_arrays(tree)
    expected = ref_regrets(tree, strategy, p)
    n, s = tree.num_nodes, max(tree.num_sequences)
    out_tree = np.zeros(tree.num_slots)
    status = K._traverse_kernel(
        p, strategy, a.inodes, a.player, a.first_child, a.num_children, a.node_offset,
        a.chance_prob, a.chance_reach, a.utility, np.zeros(n), np.zeros(n), out_tree,
    )  # fmt: skip
    assert status == K.OK
    out_seq = np.zeros(tree.num_slots)
    status = K._seqform_traverse_kernel(
        p, strategy, a.term_seq, a.term_coef, a.player_infosets, a.player_ptr, a.offset,
        a.num_actions, a.first_seq, a.parent_seq, np.zeros(s), np.zeros(s), out_seq,
    )  # fmt: skip
    assert status == K.OK
    np.testing.assert_allclose(out_tree, expected, atol=1e-12)
    np.testing.assert_allclose(out_seq, expected, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    mode=st.sampled_from(list(RegretUpdate)),
    predictive=st.booleans(),
    t=st.integers(1, 50),
    power=st.sampled_from([0.0, 1.0, 2.0]),
)
def test_update_kernel_equals_reference(
    seed: int, mode: RegretUpdate, predictive: bool, t: int, power: float
) -> None:
    tree = load_game("kuhn_poker")
    a = _cfr_arrays(tree)
    rng = np.random.default_rng(seed)
    sigma = _random_strategy(tree, rng)
    regrets = rng.normal(size=tree.num_slots)
    inst = rng.normal(size=tree.num_slots)
    avg = rng.random(tree.num_slots)
    p = int(rng.integers(2))
    infosets = a.player_infosets[a.player_ptr[p] : a.player_ptr[p + 1]]
    new_sigma, new_regrets, new_avg = sigma.copy(), regrets.copy(), avg.copy()
    status = K._update_kernel(
        t, mode.value, 1.5, 0.5, power, predictive, True, infosets, a.offset, a.num_actions,
        a.first_seq, a.parent_seq, new_sigma, new_regrets, new_avg, inst,
        np.zeros(a.max_sequences),
    )  # fmt: skip
    assert status == K.OK
    # Reference: kuhn's infosets have one history per (card, betting) so |I| = 2 histories.
    reach = ref_own_reach_sum(tree, sigma, p)
    hist = np.bincount(tree.infoset[tree.infoset >= 0], minlength=tree.num_infosets)
    exp_avg = avg + t**power * reach / hist[tree.slot_infoset()]
    exp_regrets, exp_sigma = regrets.copy(), sigma.copy()
    for g in infosets:
        idx = list(
            range(
                int(tree.infoset_offset[g]),
                int(tree.infoset_offset[g] + tree.infoset_num_actions[g]),
            )
        )
        r = regrets[idx] + inst[idx]
        if mode is RegretUpdate.PLUS:
            r = np.maximum(r, 0)
        elif mode is RegretUpdate.DISCOUNTED:
            r = np.where(r >= 0, r * t**1.5 / (t**1.5 + 1), r * t**0.5 / (t**0.5 + 1))
        exp_regrets[idx] = r
        exp_sigma[idx] = ref_match(r + inst[idx] if predictive else r)
    mine = tree.infoset_player[tree.slot_infoset()] == p
    np.testing.assert_allclose(new_regrets, exp_regrets, atol=1e-12)
    np.testing.assert_allclose(new_sigma, exp_sigma, atol=1e-12)
    np.testing.assert_allclose(new_avg[mine], exp_avg[mine], atol=1e-12)
    np.testing.assert_array_equal(new_avg[~mine], avg[~mine])


def test_run_kernel_signature_uses_int32_and_float64() -> None:
    """Kernels compile for the documented dtypes (docs/design.md: check kernel signatures)."""
    solver = CFRSolver(load_game("kuhn_poker"), CFRConfig.cfr_plus())
    solver.iterate(1)
    sig = K._run_kernel.signatures[-1]
    names = [str(x) for x in sig]
    assert names[0] == "int64" and names[1] == "int64"  # iterations, t0 are Python ints
    # the arrays travel in two named tuples (the tree's 16, the solver's 8)
    import re

    arrays = re.findall(r"array\((\w+), ", " ".join(names[2:]))
    assert len(arrays) == 24, names
    assert all(d in ("int32", "float64", "int8") for d in arrays), names
