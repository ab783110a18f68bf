"""CFR speed on Leduc poker: ours against `pyspiel.CFRPlusSolver` (C++), measured in one run.

`measure(short)` returns `cfr_plus_leduc_ratio` (our CFR+ iterations per second over OpenSpiel's)
and the raw rates of every preset, and prints a table while it measures. Both sides are timed on
the same process and machine, after a warm-up (numba compilation, OpenSpiel's tree walk).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

import pyspiel

from caligo.core.cfr import Algorithm, CFRConfig, CFRSolver, Traversal
from caligo.core.games import load_game

GAME = "leduc_poker"


def _rate(step: Callable[[], object], seconds: float) -> float:
    """Calls of `step()` per second over at least `seconds`."""
    n = 0
    start = time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def measure(short: bool) -> dict[str, float]:
    """Iterations per second of our presets and of pyspiel's CFR+ on Leduc; their ratio."""
    seconds = 1.0 if short else 3.0
    tree = load_game(GAME)
    g = pyspiel.load_game(GAME)

    # The machine is shared: interleave short rounds of both sides and keep each side's best,
    # so a burst of load elsewhere does not land on one side only.
    theirs = pyspiel.CFRPlusSolver(g)
    theirs.evaluate_and_update_policy()
    ours = CFRSolver(tree, CFRConfig.cfr_plus())
    ours.iterate(10)  # compile or load the cached kernels
    chunk = 200
    pyspiel_rate = ours_rate = 0.0
    for _ in range(5):
        pyspiel_rate = max(pyspiel_rate, _rate(theirs.evaluate_and_update_policy, seconds / 5))
        ours_rate = max(
            ours_rate, chunk * _rate(functools.partial(ours.iterate, chunk), seconds / 5)
        )

    rows: list[tuple[str, float]] = [("cfr+", ours_rate)]
    out: dict[str, float] = {"cfr_plus_leduc_pyspiel_its": pyspiel_rate}
    tree_plus = dataclasses.replace(CFRConfig.cfr_plus(), traversal=Traversal.TREE)
    variants = [(a.value, CFRConfig.preset(a)) for a in Algorithm if a is not Algorithm.CFR_PLUS]
    variants.append(("cfr+ tree", tree_plus))
    for name, config in variants:
        solver = CFRSolver(tree, config)
        solver.iterate(10)
        rate = max(
            chunk * _rate(functools.partial(solver.iterate, chunk), seconds / 3) for _ in range(3)
        )
        rows.append((name, rate))
    for name, rate in rows:
        out[f"{name.replace('+', '_plus').replace(' ', '_')}_leduc_its"] = rate
    out["cfr_plus_leduc_ratio"] = ours_rate / pyspiel_rate

    print(f"CFR on {GAME} ({tree.num_nodes} nodes, {tree.num_infosets} infosets)")
    print(f"  {'solver':<26}{'it/s':>12}{'vs pyspiel CFR+':>18}")
    print(f"  {'pyspiel.CFRPlusSolver':<26}{pyspiel_rate:>12.1f}{1.0:>18.1f}")
    for name, rate in rows:
        print(f"  {'caligo ' + name:<26}{rate:>12.1f}{rate / pyspiel_rate:>18.1f}")
    print(f"  cfr_plus_leduc_ratio = {out['cfr_plus_leduc_ratio']:.1f} (target >= 200)")
    return out


if __name__ == "__main__":
    measure(short=False)
