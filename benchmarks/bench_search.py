"""Benchmark the growing-tree search: solver speed against the core, expansion speed, and the
agent's exact exploitability on Kuhn and Leduc at the benchmark budget.

Measured in one run (issue 7, "Speed"):

- R1 = arena PCFR+ node visits per second / the core's compiled-tree PCFR+ node visits per
  second, both on fully expanded Leduc, same process, same iterations. The core's sequence-form
  pass visits no nodes; its work is counted as the tree's node count per iteration (how
  docs/design.md, "The arena, the solver and the expanders" quotes its 134M node-iterations/s). The
  arena's visits are the nodes its two passes actually enter (pruning makes that fewer than 2 x
  nodes). The iterations-per-second ratio is printed too, and the core's history-by-history tree
  traversal (`Traversal.TREE`) beside it. Target >= 0.5.
- N1 = nodes added per second by one-sided GT-CFR expansion (walk, game.expand, evaluator,
  append, commit) on liars_dice(dice_sides=5) with the zero evaluator, in the deterministic
  schedule at about 110 walks per solver iteration, counting only the time spent expanding
  (the solver's iterations in between are not counted); best of three seeds. Walks that end at
  a terminal, NEW or claimed node (Fig. 12 line 11) cost time and add nothing. Target >= 200k.
- E1, E2 = NashConv / 2 of the agent (exact, both seats) on Kuhn and Leduc with full expansion,
  Obscuro's defaults otherwise (2-KLUSS, blend gadget, purification on), at 1000 iterations per
  search (100 with --short); the same numbers with purification off are printed beside.

Last line: `search solver_vs_core=R1 expand_nodes_per_s=N1 exploit_kuhn=E1 exploit_leduc=E2`.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence


def _core_tree_traversal(iters: int) -> float:
    """The core's PCFR+ with its history-by-history tree traversal (Traversal.TREE): it/s."""
    import dataclasses

    from caligo.core.cfr import CFRConfig, CFRSolver, Traversal
    from caligo.core.games import load_game

    tree = load_game("leduc_poker")
    solver = CFRSolver(tree, dataclasses.replace(CFRConfig.pcfr_plus(),
                                                 traversal=Traversal.TREE))
    solver.iterate(5)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        solver.iterate(iters)
        best = min(best, time.perf_counter() - t0)
    return iters / best


def _solver(short: bool) -> tuple[float, float, float, float]:
    """(arena visits/s, core visits/s, arena it/s, core it/s) on fully expanded Leduc."""
    from caligo.core.cfr import CFRConfig, CFRSolver
    from caligo.core.games import load_game
    from caligo.search.arena import M_VISITS
    from caligo.search.config import Expansion, Iterations, SearchConfig
    from caligo.search.engine import GrowingTreeSearch
    from caligo.search.evaluators import ZeroEvaluator
    from caligo.search.game import TreeGame

    tree = load_game("leduc_poker")
    iters = 300 if short else 2000
    cfg = SearchConfig(budget=Iterations(iters), expansion=Expansion.FULL)
    eng = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(), cfg, 0,
                            capacity=2 * tree.num_nodes, util_scale=13.0)
    eng.start(0)
    eng.expand_full()
    eng.iterate(5)  # compile / warm
    core = CFRSolver(tree, CFRConfig.pcfr_plus())
    core.iterate(5)
    arena_s = core_s = float("inf")
    visits = 0
    for _ in range(3):  # best of three, interleaved, against a noisy shared machine
        v0 = int(eng.arena.meta[M_VISITS])
        t0 = time.perf_counter()
        eng.iterate(iters)
        dt = time.perf_counter() - t0
        if dt < arena_s:
            arena_s, visits = dt, int(eng.arena.meta[M_VISITS]) - v0
        t0 = time.perf_counter()
        core.iterate(iters)
        core_s = min(core_s, time.perf_counter() - t0)
    return (visits / arena_s, iters * tree.num_nodes / core_s, iters / arena_s,
            iters / core_s)


def _expansion(short: bool) -> tuple[float, int, float]:
    """(nodes added per expansion second, nodes added, expansion seconds), best of three."""
    from caligo.core.games import load_game
    from caligo.search.arena import Capacity
    from caligo.search.config import Iterations, SearchConfig
    from caligo.search.engine import GrowingTreeSearch
    from caligo.search.evaluators import ZeroEvaluator
    from caligo.search.game import TreeGame

    tree = load_game("liars_dice(dice_sides=5)")
    # about 110 walks per solver iteration: Obscuro's ratio (about 6k expansions/s against
    # about 50 iterations/s on a 10^6-node tree; docs/design.md, "Obscuro's reported numbers" and
    # "The arena, the solver and the expanders")
    iters, walks = (40, 4000) if short else (120, 12000)
    warm = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(),
                             SearchConfig(budget=Iterations(3), expansions=50), 0,
                             capacity=4096, util_scale=1.0)
    warm.start(0)
    warm.run(0)  # compile every kernel before timing
    best = (0.0, 0, 0.0)
    for seed in range(3):
        cfg = SearchConfig(budget=Iterations(iters), expansions=walks, solver_tail=0.1)
        eng = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(), cfg, 0,
                                capacity=Capacity.for_nodes(2 * tree.num_nodes).nodes,
                                util_scale=1.0)
        eng.start(0)
        _, stats, _ = eng.run(seed)
        added = eng.arena.n_nodes - 1
        rate = added / max(stats.seconds, 1e-9)
        if rate > best[0]:
            best = (rate, added, stats.seconds)
    return best


def _threaded(seconds: float) -> tuple[float, float, float]:
    """A timed threaded search (one solver, one expander) on liars_dice(dice_sides=5):
    (expansions/s, nodes added/s, solver iterations/s) over the whole search."""
    from caligo.core.games import load_game
    from caligo.search.config import Schedule, SearchConfig, Seconds
    from caligo.search.engine import GrowingTreeSearch
    from caligo.search.evaluators import ZeroEvaluator
    from caligo.search.game import TreeGame

    tree = load_game("liars_dice(dice_sides=5)")
    cfg = SearchConfig(budget=Seconds(seconds), expansions=None, schedule=Schedule.THREADED,
                       expanders=1)
    for _ in range(2):  # the first run loads every kernel from numba's cache; time the second
        eng = GrowingTreeSearch(TreeGame(tree), ZeroEvaluator(), cfg, 0,
                                capacity=2 * tree.num_nodes, util_scale=1.0)
        eng.start(0)
        t0 = time.perf_counter()
        _, stats, _ = eng.run(0)
    wall = time.perf_counter() - t0
    return stats.expansions / wall, (eng.arena.n_nodes - 1) / wall, eng.arena.iteration / wall


def _exploit(game: str, iters: int, purify: bool) -> tuple[float, float]:
    from caligo.core.games import load_game
    from caligo.search.config import Expansion, Iterations, Purification, SearchConfig
    from caligo.search.exploitability import EvaluatorKind, make_evaluator, search_exploitability

    tree = load_game(game)
    cfg = SearchConfig(budget=Iterations(iters), expansion=Expansion.FULL,
                       purification=Purification.STABLE_TOP3 if purify else Purification.NONE)
    t0 = time.perf_counter()
    rep = search_exploitability(tree, cfg, make_evaluator(tree, EvaluatorKind.ZERO), [0])
    return rep.mean.nashconv_half, time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the figures and the machine-readable last line."""
    p = argparse.ArgumentParser(prog="caligo bench search", description=__doc__.splitlines()[0])
    p.add_argument("--short", action="store_true", help="a reduced run (also CALIGO_SHORT=1)")
    args = p.parse_args(list(argv or []))
    short = args.short or os.environ.get("CALIGO_SHORT") == "1"
    av, cv, ai, ci = _solver(short)
    r1 = av / cv
    print(f"solver  arena {av / 1e6:7.1f} M node-visits/s ({ai:8.0f} it/s)   core "
          f"{cv / 1e6:7.1f} M node-visits/s ({ci:8.0f} it/s)   ratio {r1:.2f} "
          f"(it/s ratio {ai / ci:.2f})")
    ti = _core_tree_traversal(300 if short else 2000)
    print(f"        the core's tree traversal (Traversal.TREE) runs {ti:8.0f} it/s: the arena "
          f"does {ai / ti:.2f}x its iterations per second")
    n1, added, secs = _expansion(short)
    print(f"expand  {added} nodes in {secs:.3f} s of expansion: {n1 / 1e3:.0f}k nodes/s")
    xs, ns, its = _threaded(0.5 if short else 2.0)
    print(f"threads 1 solver + 1 expander, timed: {xs:.0f} expansions/s, {ns / 1e3:.0f}k "
          f"nodes/s, {its:.0f} iterations/s (Python per expansion; FoW pays Stockfish here)")
    iters = 100 if short else 1000
    figures = {}
    for game in ("kuhn_poker", "leduc_poker"):
        e_on, t_on = _exploit(game, iters, True)
        e_off, t_off = _exploit(game, iters, False)
        figures[game] = e_on
        print(f"exploit {game:12s} T={iters}: NashConv/2 {e_on:.5f} (purified, {t_on:.1f} s), "
              f"{e_off:.5f} (purification off, {t_off:.1f} s)")
    print(f"search solver_vs_core={r1:.3f} expand_nodes_per_s={n1:.0f} "
          f"exploit_kuhn={figures['kuhn_poker']:.5f} exploit_leduc={figures['leduc_poker']:.5f}")
    return 0
