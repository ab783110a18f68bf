"""Safe nested k-KLSS: Zhang & Sandholm 2021, Algorithm 13 (Theorem 4) and Algorithm 14 (Theorem 5).

Both play random playthroughs of a game as player 0 (⊕): chance samples by its probabilities,
player 1 (⊖) uniformly, ⊕ from the current subgame strategy. At each ⊕ decision the current
subgame is re-solved at ⊕'s infoset, nested, from the previous solve's game and strategy
(`caligo.subgame.nested.solve_step`).

- `update_blueprint` (Algorithm 13): after every solve at I the solution overrides the blueprint
  x* at every ⊕ infoset at or below I (line 13: x*(s) <- x(s) x*(I) for s >= s(I), i.e. the
  behavioral strategy below I is the subgame's). Theorem 4: the exploitability of the sequence of
  blueprints never increases. The state (current game, x) resets to (full game, x*) after each
  playthrough; x* never resets.
- `allocate_deviations` (Algorithm 14): a set of ⊕ infosets, independent in the collapsed graph
  G' (⊕ infosets adjacent when they hold nodes of one ⊖ knowledge infoset) and closed under
  ancestors, grows across playthroughs; along a playthrough solving runs while the reached
  infoset is in the set or can join it, and stops for good at the first one that cannot.
  Theorem 5: if the blueprint is an eps-NE, so is the strategy made by nested solving at every
  infoset of the set (`nested_solve(..., solve_set=...)`); its exploitability is recorded after
  each playthrough.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from caligo.core.best_response import player_exploitability
from caligo.core.game import CHANCE, TERMINAL
from caligo.core.tree import FloatArray, GameTree
from caligo.subgame.nested import (
    GameState,
    NestedConfig,
    infoset_children,
    nested_solve,
    root_state,
    solve_step,
)


@dataclass(frozen=True)
class SafetyTrace:
    """Exploitabilities (player 0, raw utilities) along the run, and the final strategy.

    exploitabilities[0] is the blueprint's; then one entry per solve (Algorithm 13) or per
    playthrough (Algorithm 14). solved: the original infosets solved, in order.
    """

    exploitabilities: tuple[float, ...]
    solved: tuple[int, ...]
    strategy: FloatArray


@dataclass
class _Current:
    """The mutable state of one playthrough: current game and strategy, and Algorithm 14's flag."""

    state: GameState
    running: bool = True


def _sample_child(tree: GameTree, h: int, probs: FloatArray, rng: np.random.Generator) -> int:
    p = np.maximum(np.asarray(probs, dtype=np.float64), 0.0)
    a = int(rng.choice(p.shape[0], p=p / p.sum()))
    return int(tree.first_child[h]) + a


def _state_probs(state: GameState, infoset: int) -> FloatArray:
    here = state.copy_of(infoset)
    t = state.tree
    off = int(t.infoset_offset[here])
    return state.strategy[off : off + int(t.infoset_num_actions[here])]


def _walk(tree: GameTree, rng: np.random.Generator,
          on_decision: Callable[[int, int], FloatArray]) -> None:
    """Play one path from the root; call on_decision(node, infoset) -> action probabilities."""
    h = 0
    while tree.player[h] != TERMINAL:
        pl = int(tree.player[h])
        n = int(tree.num_children[h])
        first = int(tree.first_child[h])
        if pl == CHANCE:
            h = _sample_child(tree, h, tree.chance_prob[first : first + n], rng)
        elif pl == 1:
            h = first + int(rng.integers(n))
        else:
            probs = on_decision(h, int(tree.infoset[h]))
            h = _sample_child(tree, h, probs, rng)


def update_blueprint(
    tree: GameTree,
    blueprint: FloatArray,
    config: NestedConfig | None = None,
    playthroughs: int = 5,
    seed: int = 0,
) -> SafetyTrace:
    """Algorithm 13 over random playthroughs; returns the blueprints' exploitabilities."""
    config = NestedConfig() if config is None else config
    rng = np.random.default_rng(seed)
    _, kids = infoset_children(tree, 0)
    x_star = np.asarray(blueprint, dtype=np.float64).copy()
    trace = [player_exploitability(tree, x_star, 0)]
    solved: list[int] = []
    for _ in range(playthroughs):
        cur = _Current(root_state(tree, x_star))

        def decide(h: int, g: int, cur: _Current = cur) -> FloatArray:
            st = (config.step or solve_step)(cur.state, g, config, tree)
            cur.state = st
            todo = [g]
            while todo:  # line 13: the solution overrides x* at and below I
                j = todo.pop()
                here = st.copy_of(j)
                if here >= 0:
                    n = int(tree.infoset_num_actions[j])
                    off = int(tree.infoset_offset[j])
                    soff = int(st.tree.infoset_offset[here])
                    x_star[off : off + n] = st.strategy[soff : soff + n]
                todo.extend(kids.get(j, []))
            solved.append(g)
            trace.append(player_exploitability(tree, x_star, 0))
            return _state_probs(st, g)

        _walk(tree, rng, decide)
    return SafetyTrace(tuple(trace), tuple(solved), x_star)


def collapsed_graph(tree: GameTree) -> dict[int, set[int]]:
    """G' of Zhang & Sandholm 2021, section 4.2: ⊕ infosets adjacent when they hold nodes of one ⊖
    infoset."""
    by_k: dict[int, set[int]] = {}
    nodes = np.flatnonzero(tree.player == 0)
    for h in nodes:
        by_k.setdefault(int(tree.kinfo[h, 1]), set()).add(int(tree.infoset[h]))
    adj: dict[int, set[int]] = {int(g): set() for g in tree.infosets_of(0)}
    for group in by_k.values():
        for g in group:
            adj[g] |= group - {g}
    return adj


def allocate_deviations(
    tree: GameTree,
    blueprint: FloatArray,
    config: NestedConfig | None = None,
    playthroughs: int = 5,
    seed: int = 0,
    join_probability: float = 1.0,
) -> SafetyTrace:
    """Algorithm 14 over random playthroughs; returns the exploitability after each one.

    join_probability: chance that a reached infoset that may join the independent set does so
    (1 joins greedily; smaller values give random independent sets).
    """
    config = NestedConfig() if config is None else config
    rng = np.random.default_rng(seed)
    adj = collapsed_graph(tree)
    chosen: set[int] = set()
    x0 = np.asarray(blueprint, dtype=np.float64)
    trace = [player_exploitability(tree, x0, 0)]
    order: list[int] = []
    for _ in range(playthroughs):
        cur = _Current(root_state(tree, x0))

        def decide(h: int, g: int, cur: _Current = cur) -> FloatArray:
            if cur.running and g not in chosen:
                if adj[g] & chosen or rng.random() >= join_probability:
                    cur.running = False
                else:
                    chosen.add(g)
                    order.append(g)
            if cur.running:
                cur.state = (config.step or solve_step)(cur.state, g, config, tree)
            return _state_probs(cur.state, g)

        _walk(tree, rng, decide)
        res = nested_solve(tree, x0, config, solve_set=chosen)
        trace.append(player_exploitability(tree, res.strategy, 0))
    final = nested_solve(tree, x0, config, solve_set=chosen).strategy
    return SafetyTrace(tuple(trace), tuple(order), final)
