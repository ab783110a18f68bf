"""The CFR family against OpenSpiel and against docs/design.md, "Reference values".

Sources of expected values:
- `pyspiel.CFRSolver` / `pyspiel.CFRPlusSolver` (open-spiel's C++), run here on the same game:
  average policies per infoset and their `pyspiel.exploitability` (NashConv / 2).
- The golden exploitabilities of docs/design.md, "Reference values".
- `open_spiel.python.algorithms.discounted_cfr.DCFRSolver` (alpha 1.5, beta 0, gamma 2) and the
  simultaneous-update `open_spiel.python.algorithms.cfr._CFRSolver`.
- Convergence: iteration counts measured with this code, exploitability as OpenSpiel defines it
  (NashConv / 2), checked with `pyspiel.exploitability`.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pyspiel
import pytest
import scipy.sparse as sp

from caligo.core.cfr import (
    Algorithm,
    CFRConfig,
    CFRConfigError,
    CFRResult,
    CFRSolver,
    RegretUpdate,
    Traversal,
    log_checkpoints,
    solve_cfr,
)
from caligo.core.games import load_game
from caligo.core.strategy import StrategyError, from_tabular_policy, to_dict_policy
from caligo.core.tree import GameTree
from tests.conftest import needs_sigint

CHECKPOINTS = (1, 10, 100)

# docs/design.md, "Reference values", at t = 1, 10, 100.
GOLDEN = {
    ("kuhn_poker", "cfr+"): (4.583333e-01, 3.268709e-02, 1.194404e-03),
    ("leduc_poker", "cfr+"): (2.373611e00, 6.104389e-01, 1.341599e-02),
    ("kuhn_poker", "cfr"): (4.583333e-01, 6.869879e-02, 8.225977e-03),
    ("leduc_poker", "cfr"): (2.373611e00, 8.885790e-01, 9.571635e-02),
}


def _pyspiel_exploitability(game: str, tree: GameTree, strategy: np.ndarray) -> float:
    policy = pyspiel.TabularPolicy(to_dict_policy(tree, strategy))
    return float(pyspiel.exploitability(pyspiel.load_game(game), policy))


def _from_pyspiel_table(tree: GameTree, table: dict[str, list[tuple[int, float]]]) -> np.ndarray:
    """A pyspiel `TabularPolicy.policy_table()` as our slot vector."""
    out = np.empty(tree.num_slots)
    for g, name in enumerate(tree.infoset_names):
        probs = dict(table[name])
        o, n = tree.infoset_offset[g], tree.infoset_num_actions[g]
        out[o : o + n] = [probs[int(a)] for a in tree.slot_action[o : o + n]]
    return out


@functools.cache
def _openspiel_run(game: str, algo: str) -> tuple[tuple[np.ndarray, float], ...]:
    """OpenSpiel's average policy (as our slot vector) and exploitability at each checkpoint."""
    g = pyspiel.load_game(game)
    solver = pyspiel.CFRPlusSolver(g) if algo == "cfr+" else pyspiel.CFRSolver(g)
    tree = load_game(game)
    out = []
    done = 0
    for t in CHECKPOINTS:
        for _ in range(t - done):
            solver.evaluate_and_update_policy()
        done = t
        table = solver.tabular_average_policy().policy_table()
        expl = float(pyspiel.exploitability(g, solver.average_policy()))
        out.append((_from_pyspiel_table(tree, table), expl))
    return tuple(out)


@pytest.mark.parametrize("traversal", list(Traversal))
@pytest.mark.parametrize("algo", ["cfr", "cfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_matches_openspiel_cfr_solvers(game: str, algo: str, traversal: Traversal) -> None:
    tree = load_game(game)
    base = CFRConfig.preset(Algorithm(algo))
    solver = CFRSolver(tree, dataclasses.replace(base, traversal=traversal))
    theirs = _openspiel_run(game, algo)
    for t, (their_avg, their_expl), golden in zip(
        CHECKPOINTS, theirs, GOLDEN[game, algo], strict=True
    ):
        solver.iterate(t - solver.iterations)
        ours = solver.average_strategy()
        np.testing.assert_allclose(ours, their_avg, atol=1e-9, err_msg=f"t={t}")
        expl = _pyspiel_exploitability(game, tree, ours)
        assert abs(expl - their_expl) < 1e-9, (t, expl, their_expl)
        assert expl == pytest.approx(golden, rel=1e-6), (t, expl, golden)


def test_dcfr_matches_openspiel_python_dcfr() -> None:
    from open_spiel.python.algorithms import discounted_cfr

    tree = load_game("kuhn_poker")
    theirs = discounted_cfr.DCFRSolver(pyspiel.load_game("kuhn_poker"))  # 1.5, 0, 2
    ours = CFRSolver(tree, CFRConfig.dcfr())
    for _ in range(30):
        theirs.evaluate_and_update_policy()
    ours.iterate(30)
    np.testing.assert_allclose(
        ours.average_strategy(), from_tabular_policy(tree, theirs.average_policy()), atol=1e-9
    )
    # the solver reads like CFRResult: `average` / `current` are the methods' values
    np.testing.assert_array_equal(ours.average, ours.average_strategy())
    np.testing.assert_array_equal(ours.current, ours.current_strategy())
    result = solve_cfr(tree, CFRConfig.dcfr(), 30)
    np.testing.assert_allclose(result.average, ours.average, atol=1e-12)


def test_simultaneous_updates_match_openspiel_python_cfr() -> None:
    from open_spiel.python.algorithms import cfr

    tree = load_game("kuhn_poker")
    theirs = cfr._CFRSolver(
        pyspiel.load_game("kuhn_poker"),
        alternating_updates=False,
        linear_averaging=False,
        regret_matching_plus=False,
    )
    ours = CFRSolver(tree, CFRConfig(RegretUpdate.SUM, alternating=False))
    for _ in range(30):
        theirs.evaluate_and_update_policy()
    ours.iterate(30)
    np.testing.assert_allclose(
        ours.average_strategy(), from_tabular_policy(tree, theirs.average_policy()), atol=1e-9
    )


# Measured with this code (every 10 iterations, exploitability = NashConv / 2): the first
# checkpoint below 1e-3 on leduc_poker. DCFR(1.5, 0, 2): 320 iterations (CFR+ needs 450).
# Predictive CFR+ with quadratic averaging (Farina et al. 2021's experiments): 710; with the
# seed's uniform average see PCFR_AVERAGE below.
CONVERGENCE = [
    ("dcfr", CFRConfig.dcfr(), 320, "average"),
    ("pcfr+ quadratic average", CFRConfig.pcfr_plus(average_power=2.0), 710, "average"),
]


@pytest.mark.parametrize(("name", "config", "iterations", "which"), CONVERGENCE)
def test_leduc_below_1e_3(name: str, config: CFRConfig, iterations: int, which: str) -> None:
    tree = load_game("leduc_poker")
    solver = CFRSolver(tree, config)
    solver.iterate(iterations)
    strategy = solver.average_strategy() if which == "average" else solver.current_strategy()
    assert _pyspiel_exploitability("leduc_poker", tree, strategy) < 1e-3


# Predictive CFR+ exactly as Obscuro, section 3.2 has it (uniform average in sequence form):
# first checkpoint (every 10) below 1e-3 at 8,000 iterations for the average and 8,780 for the
# last iterate, which then keeps falling fast (about 2.5e-5 at 9,300, 3e-11 at 55,000).
PCFR_AVERAGE = 8000
PCFR_LAST_ITERATE = 8780


def test_pcfr_plus_uniform_average_and_last_iterate_below_1e_3() -> None:
    from caligo.core.best_response import openspiel_exploitability

    tree = load_game("leduc_poker")
    solver = CFRSolver(tree, CFRConfig.pcfr_plus())
    solver.iterate(PCFR_AVERAGE)
    assert openspiel_exploitability(tree, solver.average_strategy()) < 1e-3
    solver.iterate(PCFR_LAST_ITERATE - PCFR_AVERAGE)
    last = solver.current_strategy()
    assert openspiel_exploitability(tree, last) < 1e-3
    assert _pyspiel_exploitability("leduc_poker", tree, last) < 1e-3


def test_presets() -> None:
    assert CFRConfig.cfr() == CFRConfig(RegretUpdate.SUM, average_power=0.0)
    assert CFRConfig.cfr_plus().regret is RegretUpdate.PLUS
    assert CFRConfig.cfr_plus().average_power == 1.0
    d = CFRConfig.dcfr()
    assert (d.regret, d.alpha, d.beta, d.average_power) == (RegretUpdate.DISCOUNTED, 1.5, 0.0, 2.0)
    pc = CFRConfig.pcfr_plus()
    assert pc.predictive and pc.regret is RegretUpdate.PLUS and pc.average_power == 0.0
    assert all(CFRConfig.preset(a).alternating for a in Algorithm)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"regret": "plus"},
        {"average_power": -1.0},
        {"alpha": float("nan")},
        {"predictive": 1},
        {"traversal": "tree"},
    ],
)
def test_config_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(CFRConfigError):
        CFRConfig(**kwargs)  # type: ignore[arg-type]


def test_warm_start_is_the_first_iterate() -> None:
    tree = load_game("kuhn_poker")
    initial = np.zeros(tree.num_slots)
    initial[tree.infoset_offset] = 1.0  # first action everywhere
    solver = CFRSolver(tree, CFRConfig.cfr_plus(), initial=initial)
    np.testing.assert_array_equal(solver.current_strategy(), initial)
    solver.iterate(1)
    np.testing.assert_allclose(solver.average_strategy()[tree.infoset_offset[[0]]], [1.0])
    assert solver.iterations == 1
    with pytest.raises(StrategyError):
        CFRSolver(tree, CFRConfig.cfr_plus(), initial=np.zeros(tree.num_slots))


def test_solve_cfr_records_a_trace() -> None:
    tree = load_game("kuhn_poker")
    calls: list[int] = []

    def metric(t: GameTree, s: np.ndarray) -> float:
        calls.append(1)
        return _pyspiel_exploitability("kuhn_poker", t, s)

    res = solve_cfr(tree, CFRConfig.cfr_plus(), 100, record_at=CHECKPOINTS, metric=metric)
    assert isinstance(res, CFRResult) and res.iterations == 100
    assert [p.iteration for p in res.trace] == [1, 10, 100]
    # OpenSpiel's CFR+ at t = 10 (docs/design.md, "Reference values")
    assert res.trace[1].value == pytest.approx(3.268709e-02, rel=1e-6)
    assert len(calls) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.iterations = 3  # type: ignore[misc]


def test_log_checkpoints() -> None:
    pts = log_checkpoints(1000, per_decade=3)
    assert pts[0] == 1 and pts[-1] == 1000 and list(pts) == sorted(set(pts))
    assert log_checkpoints(0) == ()


def _kuhn_extra(tree: GameTree) -> sp.csr_matrix:
    """A B matrix with entries in several rows and columns (an arbitrary bilinear bonus)."""
    rng = np.random.default_rng(7)
    n0, n1 = tree.num_sequences
    rows = rng.integers(0, n0, size=12)
    cols = rng.integers(0, n1, size=12)
    return sp.csr_matrix((rng.normal(size=12) * 0.3, (rows, cols)), shape=(n0, n1))


def test_extra_payoffs_converge_to_the_lp_value_of_a_plus_b() -> None:
    """CFR+ with extra=B approaches the value of the game <x, (A + B) y> (LP with extra=B)."""
    from caligo.core.best_response import best_response
    from caligo.core.lp import solve_player

    tree = load_game("kuhn_poker")
    B = _kuhn_extra(tree)
    target = solve_player(tree, 0, extra=B).value
    solver = CFRSolver(tree, CFRConfig.cfr_plus(), extra=B)
    solver.iterate(3000)
    avg = solver.average_strategy()
    lo = best_response(tree, avg, 1, extra=B).value  # player 0's value, player 1 responding
    hi = best_response(tree, avg, 0, extra=B).value  # player 0 responding
    assert lo <= target + 1e-9 <= hi + 2e-9
    assert hi - lo < 5e-3


def test_extra_none_or_zero_is_the_plain_game() -> None:
    tree = load_game("kuhn_poker")
    plain = CFRSolver(tree, CFRConfig.cfr_plus())
    zero = CFRSolver(tree, CFRConfig.cfr_plus(), extra=sp.csr_matrix(tree.num_sequences))
    plain.iterate(50)
    zero.iterate(50)
    np.testing.assert_array_equal(plain.average_strategy(), zero.average_strategy())
    # the tree's cached arrays are not changed by a solver with B
    CFRSolver(tree, CFRConfig.cfr_plus(), extra=_kuhn_extra(tree)).iterate(5)
    again = CFRSolver(tree, CFRConfig.cfr_plus())
    again.iterate(50)
    np.testing.assert_array_equal(plain.average_strategy(), again.average_strategy())


def test_extra_rejected_with_tree_traversal_or_bad_shape() -> None:
    tree = load_game("kuhn_poker")
    cfg = dataclasses.replace(CFRConfig.cfr_plus(), traversal=Traversal.TREE)
    with pytest.raises(CFRConfigError):
        CFRSolver(tree, cfg, extra=_kuhn_extra(tree))
    with pytest.raises(CFRConfigError):
        CFRSolver(tree, CFRConfig.cfr_plus(), extra=sp.csr_matrix((2, 2)))


@pytest.mark.parametrize("algo", list(Algorithm))
def test_chunked_iterations_are_bit_identical(algo: Algorithm) -> None:
    """`iterate` runs the kernel in chunks of about CHUNK_SECONDS; chunk boundaries must not
    change a single bit against iteration-by-iteration stepping (whose agreement with OpenSpiel
    is tested above). Chunks of 1, 3, 4, 9 iterations (tiny CHUNK_SECONDS) and one call."""
    from caligo.core import cfr as cfr_mod

    tree = load_game("kuhn_poker")
    config = CFRConfig.preset(algo)
    one = CFRSolver(tree, config)
    for _ in range(40):
        one.iterate(1)
    many = CFRSolver(tree, config)
    seen: list[int] = []
    many.iterate(40, progress=seen.append)
    assert sum(seen) == 40 and many.iterations == 40
    tiny = CFRSolver(tree, config)
    old = cfr_mod.CHUNK_SECONDS
    try:
        cfr_mod.CHUNK_SECONDS = 1e-9
        for n in (3, 4, 9, 24):
            tiny.iterate(n)
    finally:
        cfr_mod.CHUNK_SECONDS = old
    for s in (many, tiny):
        assert np.array_equal(s.average_strategy(), one.average_strategy())
        assert np.array_equal(s.current_strategy(), one.current_strategy())
        assert np.array_equal(s.cumulative_regrets(), one.cumulative_regrets())


@needs_sigint
def test_ctrl_c_stops_a_long_run_with_the_result_so_far() -> None:
    """SIGINT during a billion-iteration run: solve_cfr(interruptible=True) returns between two
    chunks; the state is consistent (a fresh run of exactly that many iterations is identical)."""
    import os
    import signal
    import threading

    tree = load_game("kuhn_poker")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        res = solve_cfr(tree, CFRConfig.cfr_plus(), 10**9, interruptible=True)
    finally:
        timer.cancel()
    assert res.interrupted and 0 < res.iterations < 10**9
    again = solve_cfr(tree, CFRConfig.cfr_plus(), res.iterations)
    assert np.array_equal(again.average, res.average)
    assert "interrupted" in repr(res) and "cfr+" in repr(res)
    with pytest.raises(KeyboardInterrupt):
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        solve_cfr(tree, CFRConfig.cfr(), 10**9)
