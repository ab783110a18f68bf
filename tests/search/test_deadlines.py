"""Every loop of a search honours its deadline, on an injected clock.

The solver and the expanders of the threaded schedule, the deterministic schedule's guard and
the solve of a fully expanded tree are given 50 ms on a fake clock that the search's own work
moves on (`SearchWork`: each solver iteration and each arena row costs fixed fake time), and
must stop within 50 ms plus a stated tolerance of that work; nothing here times the machine, so
they hold on a busy one (the CPU-time version of these tests measured page faults and cache
misses too). The subgame's root sampling runs on a fake clock that an evaluator moves on as
Stockfish's calls take time. The expected behaviour is the limits' contract (`caligo.limits`),
not a timing of ours; the real-time figures are `caligo bench timing`'s.
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.games import load_game
from caligo.limits import Deadline, Limits, Pace
from caligo.search import expand as X
from caligo.search.config import Expansion, Iterations, Schedule, SearchConfig
from caligo.search.engine import GrowingTreeSearch
from caligo.search.evaluators import PerfectInfoEvaluator
from caligo.search.game import TreeGame
from caligo.search.materialize import ROOT_PACE_S, evaluate_until
from tests.clocks import Ticker
from tests.search.conftest import util_scale

PER_ITERATION_S = 20e-6
PER_ROW_S = 20e-6
TOLERANCE_S = 0.004
"""Past the deadline, in the work of `SearchWork`: the iteration batch in flight (sized to
about 1 ms at the measured pace; a counted solve checks its guard every 64 iterations, 1.3 ms)
and the rows of the expanders' leaf in flight. A batch of the engine's cap (1,000 iterations,
20 ms) would fail it."""


class SearchWork:
    """A fake clock that the search's own work moves on: `PER_ITERATION_S` per solver
    iteration and `PER_ROW_S` per arena row, read live from the arena (so it advances as the
    solver's batches and the expanders' commits land, whatever the machine's load)."""

    def __init__(self, eng: GrowingTreeSearch) -> None:
        self.arena = eng.arena

    def __call__(self) -> float:
        return PER_ITERATION_S * self.arena.iteration + PER_ROW_S * self.arena.n_nodes


def _engine(schedule: Schedule, expansion: Expansion = Expansion.ONE_SIDED
            ) -> GrowingTreeSearch:
    tree = load_game("leduc_poker")
    cfg = SearchConfig(budget=Iterations(10), expansions=None, expand_ratio=0.25,
                       schedule=schedule, expanders=1, expansion=expansion)
    eng = GrowingTreeSearch(TreeGame(tree), PerfectInfoEvaluator(tree), cfg, 0,
                            evaluator_factory=lambda: PerfectInfoEvaluator(tree),
                            capacity=3 * tree.num_nodes + 600, util_scale=util_scale(tree))
    eng.start(0)
    return eng


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """Each schedule run once, untimed: on a fresh checkout numba compiles the kernels at their
    first call (seconds of CPU), which is start-up, not the loop whose deadline is tested."""
    for schedule, expansion in ((Schedule.THREADED, Expansion.ONE_SIDED),
                                (Schedule.DETERMINISTIC, Expansion.ONE_SIDED),
                                (Schedule.DETERMINISTIC, Expansion.FULL)):
        _engine(schedule, expansion).run(1, Limits(iterations=2,
                                                   deadline=Deadline.within(60.0)))


def _timed(eng: GrowingTreeSearch, iterations: int | None = None) -> float:
    """The work `eng.run` does when given 50 ms of `SearchWork` (and `iterations`)."""
    work = SearchWork(eng)
    t0 = work()
    eng.run(1, Limits(iterations=iterations, deadline=Deadline.within(0.05, now=work)))
    return work() - t0


def test_a_threaded_search_stops_at_its_deadline() -> None:
    eng = _engine(Schedule.THREADED)
    spent = _timed(eng)
    assert eng.arena.iteration > 0
    assert 0.05 <= spent <= 0.05 + TOLERANCE_S, spent


def test_an_iteration_count_stops_at_its_guard() -> None:
    """A count far too large for the time (10^9 iterations) with a 50 ms guard: the
    deterministic schedule stops at the guard."""
    eng = _engine(Schedule.DETERMINISTIC)
    spent = _timed(eng, 10**9)
    assert 0 < eng.arena.iteration < 10**9
    assert 0.05 <= spent <= 0.05 + TOLERANCE_S, spent


def test_a_fully_expanded_solve_stops_at_its_deadline() -> None:
    eng = _engine(Schedule.DETERMINISTIC, Expansion.FULL)
    eng.expand_full()  # the expansion is not the part under test
    for iterations in (None, 10**9):
        spent = _timed(eng, iterations)
        assert 0.05 <= spent <= 0.05 + TOLERANCE_S, spent


class SlowEvaluator:
    """A leaf evaluator that, like a Stockfish call, takes 1 ms per state (on a fake clock)."""

    def __init__(self, clock: Ticker) -> None:
        self.clock = clock
        self.calls = 0

    def states(self, states: np.ndarray) -> np.ndarray:
        self.clock.t += 1e-3 * len(states)
        self.calls += len(states)
        return np.zeros(len(states))


def test_root_sampling_stops_at_its_deadline() -> None:
    """256 sampled roots at 1 ms each (on a fake clock), given 50 ms: the batches are sized
    from the measured pace so that the last one ends by the deadline (not after it), most of
    the time is used, and the roots it must keep are kept even past the deadline."""
    clock = Ticker()
    ev = SlowEvaluator(clock)
    states = np.arange(256, dtype=np.int64)
    vals = evaluate_until(ev, states, Deadline(0.05, 0.05, clock))  # type: ignore[arg-type]
    assert vals.size == ev.calls
    assert clock.t <= 0.05  # the pace (1.5x margin) keeps every batch inside the deadline
    assert vals.size >= 45  # and the batches shrink near it rather than stop early
    clock.t = 10.0  # already past: only the roots it must keep
    ev.calls = 0
    vals = evaluate_until(ev, states, Deadline(1.0, 1.0, clock), keep_min=1)  # type: ignore[arg-type]
    assert vals.size == 1
    # no deadline: every root
    assert evaluate_until(ev, states, None).size == 256  # type: ignore[arg-type]


def test_root_sampling_learns_a_slow_evaluator() -> None:
    """An evaluator three times slower than the first guess: the first batch (at most
    ROOT_BATCH roots) may be long, the pace is measured from it, and every later batch fits;
    a pace carried to the next move keeps the first batch of that one inside too."""
    clock = Ticker()
    ev = SlowEvaluator(clock)
    slow = ev.states
    ev.states = lambda st: (slow(st), slow(st), slow(st))[0]  # type: ignore[method-assign]
    pace = Pace(ROOT_PACE_S)
    states = np.arange(256, dtype=np.int64)
    vals = evaluate_until(ev, states, Deadline(0.2, 0.2, clock), pace=pace)  # type: ignore[arg-type]
    assert clock.t <= 0.2 and vals.size >= 50
    assert abs(pace.per - 3e-3) < 1e-9  # measured: it rose at once to the slow pace
    clock.t = 0.0
    ev.calls = 0
    evaluate_until(ev, states, Deadline(0.02, 0.02, clock), pace=pace)  # type: ignore[arg-type]
    assert clock.t <= 0.02 and ev.calls > 0


class _TickingEvaluator(PerfectInfoEvaluator):
    """Leduc's exact values at 1 ms per child on a fake clock (a Stockfish call's cost)."""

    def __init__(self, tree: object, clock: Ticker) -> None:
        super().__init__(tree)  # type: ignore[arg-type]
        self.clock = clock

    cost = 1e-3
    """Fake seconds per child."""

    def children(self, parents: np.ndarray, batch: object) -> np.ndarray:
        out = super().children(parents, batch)  # type: ignore[arg-type]
        self.clock.t += self.cost * out.size
        return out


def test_an_expansion_stops_at_its_deadline() -> None:
    """`Expander.expand(leaves, deadline)` without a pace evaluates the leaves one at a time
    until the soft instant: the leaves evaluated by then are expanded (at least the first),
    the rest are unclaimed, and `Pending.leaves` says which; without a deadline every leaf
    is."""
    eng = _engine(Schedule.DETERMINISTIC)
    a = eng.arena
    clock = Ticker()
    ex = X.Expander(a, eng.game, _TickingEvaluator(load_game("leduc_poker"), clock), 1)
    while (todo := X.frontier(a)).size < 4:  # grow until several leaves wait
        a.nodes.claim[todo] = 1
        X.commit(a, ex.expand(todo), True)
    a.nodes.claim[todo] = 1
    counts = np.diff(eng.game.expand(a.nodes.state[todo].astype(np.int64)).ptr)
    clock.t = 0.0
    # the soft instant falls inside the second leaf's evaluation: two leaves are expanded
    soft = 1e-3 * (counts[0] + 0.5 * counts[1])
    n0 = a.n_nodes
    pending = ex.expand(todo, Deadline(soft, soft, clock))
    assert pending is not None
    assert np.array_equal(pending.leaves, todo[:2])
    assert a.n_nodes - n0 == counts[0] + counts[1]
    assert clock.t == pytest.approx(1e-3 * (counts[0] + counts[1]))
    assert np.all(a.nodes.claim[todo[2:]] == 0) and np.all(a.nodes.claim[todo[:2]] == 1)
    X.commit(a, pending, True)
    # already past: the first leaf only
    rest = X.frontier(a)
    a.nodes.claim[rest] = 1
    one = ex.expand(rest, Deadline(0.0, 0.0, clock))
    assert one is not None and one.leaves.size == 1



def test_an_expansion_sizes_its_evaluator_calls_by_the_pace() -> None:
    """With a `Pace` below `BATCH_PACE_S` per leaf (a cheap evaluator), `Expander.expand`
    evaluates as many leaves in one call as fit before the soft instant (one call per leaf
    cost the built-in evaluator a quarter of its speed), at least the first leaf; a pace that
    is still its first guess is measured on one leaf first; a dear pace (a Stockfish call a
    leaf) keeps one leaf a call."""
    eng = _engine(Schedule.DETERMINISTIC)
    a = eng.arena
    clock = Ticker()
    ev = _TickingEvaluator(load_game("leduc_poker"), clock)
    ev.cost = 1e-5  # 10 fake microseconds a child
    calls: list[int] = []
    base = ev.children

    def counted(parents: np.ndarray, batch: object) -> np.ndarray:
        calls.append(int(parents.size))
        return base(parents, batch)

    ev.children = counted  # type: ignore[method-assign]
    ex = X.Expander(a, eng.game, ev, 1)

    def next_leaves() -> np.ndarray:
        while (todo := X.frontier(a)).size < 6:  # grow until several leaves wait
            a.nodes.claim[todo] = 1
            X.commit(a, ex.expand(todo), True)
        a.nodes.claim[todo] = 1
        clock.t = 0.0
        calls.clear()
        return todo

    def measured(per: float) -> Pace:
        pace = Pace(per, margin=1.0)
        pace.record(per, 1)
        return pace

    # a far deadline at a measured cheap pace: every leaf in one call
    todo = next_leaves()
    pending = ex.expand(todo, Deadline(10.0, 10.0, clock), measured(1e-5))
    assert pending is not None and calls == [todo.size]
    assert np.array_equal(pending.leaves, todo)
    X.commit(a, pending, True)
    # the same at the first guess (5 ms a leaf): one leaf a call while the measured pace
    # falls (slowly, as a Pace does) below BATCH_PACE_S, then the rest in one call
    todo = next_leaves()
    pending = ex.expand(todo, Deadline(10.0, 10.0, clock), Pace(X.LEAF_PACE_S))
    assert pending is not None and sum(calls) == todo.size
    assert set(calls[:-1]) == {1} and calls[-1] > 1
    X.commit(a, pending, True)
    # a dear evaluator (1 ms a child, a few ms a leaf): one leaf a call, every leaf
    todo = next_leaves()
    ev.cost = 1e-3
    pending = ex.expand(todo, Deadline(10.0, 10.0, clock), measured(2 * X.BATCH_PACE_S))
    assert pending is not None and calls == [1] * todo.size
    X.commit(a, pending, True)
    # the same evaluator with two engines (`width`, a Stockfish pool's two slots): two
    # leaves a call, scored at once
    todo = next_leaves()
    ev.width = 2  # type: ignore[attr-defined]
    pending = ex.expand(todo, Deadline(10.0, 10.0, clock), measured(2 * X.BATCH_PACE_S))
    assert pending is not None and calls == [2] * (todo.size // 2) + [1] * (todo.size % 2)
    X.commit(a, pending, True)
    del ev.width  # type: ignore[attr-defined]
    ev.cost = 1e-5
    # room for two leaves at the pace: the first call takes two, and the pace it measures
    # (several children a leaf) leaves no room for a second call
    todo = next_leaves()
    pace = measured(1e-5)
    pending = ex.expand(todo, Deadline(2.5e-5, 2.5e-5, clock), pace)
    assert pending is not None and calls == [2] and pending.leaves.size == 2
    counts = np.diff(eng.game.expand(a.nodes.state[todo[:2]].astype(np.int64)).ptr)
    assert pace.per == pytest.approx(1e-5 * counts.sum() / 2)
    assert np.all(a.nodes.claim[todo[2:]] == 0)
    X.commit(a, pending, True)
    # already past: the first leaf alone
    todo = next_leaves()
    one = ex.expand(todo, Deadline(0.0, 0.0, clock), measured(1e-5))
    assert one is not None and one.leaves.size == 1 and calls == [1]
    X.commit(a, one, True)
    # mixed costs, as a Stockfish evaluator's: one engine call (2.4 ms a leaf), then a run
    # of cache hits (10 us): the pace follows the run below BATCH_PACE_S, but the peak keeps
    # the dear leaf, so the leaves still go one a call (a batch sized by the pace overran a
    # construction's deadline by 290 ms at mt=1)
    todo = next_leaves()
    pace = measured(2.4e-3)
    for _ in range(20):
        pace.record(1e-5, 1)
    assert pace.per < X.BATCH_PACE_S < pace.peak
    pending = ex.expand(todo, Deadline(10.0, 10.0, clock), pace)
    assert pending is not None and calls == [1] * todo.size

# --- the watchdog: `Watchdog.run_by` --------------------------------------------------------


def test_run_by_returns_the_value_of_work_done_in_time() -> None:
    """Work that ends before its instant: its value, as a plain call would give it."""
    from caligo.limits import Watchdog

    clock = Ticker(t=0.0)
    assert Watchdog().run_by(lambda: 41 + 1, by=1e9, now=clock) == 42


def test_run_by_answers_at_its_instant_and_the_work_ends_later() -> None:
    """Work still running when the instant comes: an `Overdue` handle at once (the work is
    held on an event, and the clock reaches the instant once the work has started, so nothing
    here depends on how fast the machine is); the handle says where the work was; the work
    then ends and `join` gives its value."""
    import threading

    from caligo.limits import Overdue, Watchdog

    release = threading.Event()
    entered = threading.Event()

    def work() -> str:
        entered.set()
        release.wait()
        return "searched"

    def clock() -> float:  # the instant (5.0) comes once the work is under way
        return 5.0 if entered.wait(60.0) else 4.0

    out = Watchdog().run_by(work, by=5.0, now=clock)
    assert isinstance(out, Overdue)
    assert not out.done
    assert "work" in out.where and out.late_s >= 0.0  # where the worker was, for the log
    release.set()
    assert out.join() == "searched"
    assert out.done


def test_run_by_hands_over_what_the_work_raised() -> None:
    """An error before the instant is raised by `run_by`; after it, by `join`."""
    import threading

    from caligo.limits import Overdue, Watchdog

    def fail() -> None:
        raise KeyError("in the work")

    with pytest.raises(KeyError, match="in the work"):
        Watchdog().run_by(fail, by=1e9, now=Ticker())
    release = threading.Event()

    def late_fail() -> None:
        release.wait()
        raise KeyError("late")

    out = Watchdog().run_by(late_fail, by=0.0, now=Ticker(t=1.0))
    assert isinstance(out, Overdue)
    release.set()
    with pytest.raises(KeyError, match="late"):
        out.join()


def test_an_overdue_answer_logs_nothing_until_its_work_is_joined(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A log write inside the timed answer would cost GIL handoffs (the worker is still
    running): the note the agent leaves on the handle is logged by `join`, off the clock; a
    watchdog also lowers the process's switch interval so that the caller gets the lock back
    within half a millisecond of asking."""
    import logging
    import sys
    import threading

    from caligo.limits import SWITCH_INTERVAL_S, Overdue, Watchdog

    caplog.set_level(logging.WARNING)
    release = threading.Event()
    watchdog = Watchdog()
    assert sys.getswitchinterval() <= SWITCH_INTERVAL_S
    out = watchdog.run_by(release.wait, by=0.0, now=Ticker(t=1.0))
    assert isinstance(out, Overdue)
    out.note = "the move's work overran its answer instant"
    assert not [r for r in caplog.records if "overran" in r.getMessage()]
    release.set()
    out.join()
    assert [r for r in caplog.records if "overran" in r.getMessage()]
    watchdog.close()


def test_every_move_of_a_watchdog_runs_on_one_thread() -> None:
    """What binds itself to its calling thread (a Stockfish process per thread) is bound
    once: every job of a watchdog runs on its one worker thread, not the caller's."""
    import threading

    from caligo.limits import Watchdog

    dog = Watchdog()
    idents = {dog.run_by(threading.get_ident, by=1e9, now=Ticker()) for _ in range(5)}
    assert len(idents) == 1 and threading.get_ident() not in idents
    dog.close()
