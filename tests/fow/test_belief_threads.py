"""P's opponent-ply update on several threads is the one-thread update, row for row.

Expected values: the one-thread update (`BeliefConfig(threads=1)`, the path tested against
python-chess, OpenSpiel and a brute-force loop in test_belief.py) is the reference. The threads
filter the next rounds of parents while one inserts the last round's children in visit order,
so the rows must come out equal in order, and every statistic with them, also where the memory cap
trims the rows and bounds the counting table in the middle of a round.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
from typing import Any

import numpy as np
import pytest

import caligo.fow.belief_update as update
from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.belief_update import _Lane, one_thread
from caligo.limits import Deadline
from tests.clocks import Ticker
from tests.fow.test_belief_deadline import _random_game_belief


def _run(parents: BeliefSet, target: np.ndarray, config: BeliefConfig,
         spread: bool = False) -> tuple[np.ndarray, update.UpdateStats]:
    exp = update._Expansion(parents.rows, int(parents.player), target, parents._clocks(),
                            config, np.random.default_rng(7), spread=spread)
    exp.run(None)
    rows, stats = exp.rows()
    return rows.copy(), stats


@pytest.fixture
def small_rounds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rounds of at most 300 parents, pipelined from 64 visits on; records the threads that
    filtered."""
    monkeypatch.setattr(update, "LANE_SPAN", 300)
    monkeypatch.setattr(update, "MIN_SPLIT", 64)
    seen: list[int] = []
    filter_ = _Lane.filter

    def recording(self: _Lane, exp: update._Expansion, start: int, end: int) -> None:
        seen.append(threading.get_ident())
        filter_(self, exp, start, end)

    monkeypatch.setattr(_Lane, "filter", recording)
    return seen


@pytest.mark.parametrize("spread", [False, True])
@pytest.mark.parametrize("cap, count_factor", [(3_000_000, 4), (20_000, 2), (500, 2)])
def test_threads_give_the_one_thread_update(small_rounds: list[int],
                                            monkeypatch: pytest.MonkeyPatch, cap: int,
                                            count_factor: int, spread: bool) -> None:
    # 21,442 parents, 144,971 distinct children: exact at the first cap; at 20,000 the rows
    # are trimmed and the table bounded mid-update; at 500 many times over. The reference
    # runs in the module's own rounds (4,096 parents), the threads in rounds of 300 at most:
    # where the rounds fall must change nothing either (not even when the table is bounded)
    parents, obs = _random_game_belief(58)
    target = obs.to_array()
    with monkeypatch.context() as m:
        m.setattr(update, "LANE_SPAN", 4096)
        one = _run(parents, target, BeliefConfig(max_positions=cap, count_factor=count_factor),
                   spread)
    assert set(small_rounds) == {threading.get_ident()}
    for threads in (1, 2, 3):
        small_rounds.clear()
        many = _run(parents, target, BeliefConfig(max_positions=cap, count_factor=count_factor,
                                                  threads=threads), spread)
        assert len(small_rounds) > 21_442 // 300  # many rounds
        # on more than one thread the filtering ran on helpers, while this thread inserted
        assert (threading.get_ident() in small_rounds) is (threads == 1)
        assert np.array_equal(many[0], one[0])
        assert many[1] == one[1]
    if cap > 144_971:
        assert one[1].distinct == 144_971 and not one[1].distinct_estimated
    else:
        # count_factor * cap < 144,971: the count is a bottom-k estimate
        assert len(one[0]) == cap and one[1].distinct_estimated


def test_a_cut_short_threaded_update_completes_to_the_one_go_update(
        small_rounds: list[int]) -> None:
    parents, obs = _random_game_belief(58)
    full = parents.update_opponent_move(obs)
    small_rounds.clear()
    threaded = dataclasses.replace(parents, config=BeliefConfig(max_positions=3_000_000,
                                                                threads=2))
    tick = Ticker(step=1.0)  # every reading passes the deadline: one round, then stop
    part = threaded.update_opponent_move(obs, Deadline(0.5, 0.5, tick))
    assert part.partial and 0 < len(part) < len(full)
    assert {r.tobytes() for r in part.rows} <= {r.tobytes() for r in full.rows}
    done = part.complete()
    assert done.exact and threading.get_ident() not in small_rounds
    assert {r.tobytes() for r in done.rows} == {r.tobytes() for r in full.rows}
    assert done.size_seen == full.size_seen


def test_a_parent_with_too_many_moves_is_reported_by_any_thread(
        small_rounds: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A parent with more moves than the buffer stops the update with TooManyMovesError naming
    it, on any number of threads: the first such parent in visit order, here in a late round
    (the move cap is set just under the largest move count of P; rounds of 300)."""
    from caligo.fow.errors import TooManyMovesError
    from caligo.fow.movegen import legal_moves

    parents, obs = _random_game_belief(58)
    counts = [len(legal_moves(p)) for p in parents.positions()]
    cap = max(counts) - 1
    monkeypatch.setattr(update, "MAX_MOVES", cap)
    messages = []
    for threads in (1, 2):
        exp = update._Expansion(parents.rows, int(parents.player), obs.to_array(),
                                parents._clocks(), BeliefConfig(threads=threads),
                                np.random.default_rng(7), spread=False)
        with pytest.raises(TooManyMovesError, match=f"more than MAX_MOVES = {cap}") as err:
            exp.run(None)
        messages.append(str(err.value))
        # the update stopped at that parent (natural order: visit i is row i), past round 1
        assert counts[exp.visited] > cap and exp.visited > 300
    assert messages[0] == messages[1]


def test_updates_inside_one_thread_use_one_thread(small_rounds: list[int]) -> None:
    """`one_thread` (an agent's work on its opponent's time) runs a two-thread set's update on
    the calling thread alone; the same update, the same P."""
    parents, obs = _random_game_belief(58)
    threaded = dataclasses.replace(parents, config=BeliefConfig(threads=2))
    with one_thread():
        inside = threaded.update_opponent_move(obs)
    assert set(small_rounds) == {threading.get_ident()}
    small_rounds.clear()
    outside = threaded.update_opponent_move(obs)
    assert threading.get_ident() not in small_rounds
    assert np.array_equal(inside.rows, outside.rows)


@pytest.mark.parametrize("threads", [0, 65, 1.5, "2"])
def test_thread_counts_are_checked(threads: object) -> None:
    with pytest.raises(ValueError, match="threads must be an int"):
        BeliefConfig(threads=threads)  # type: ignore[arg-type]


def _threaded_update_size(out: Any) -> None:
    parents, obs = _random_game_belief(58)
    threaded = dataclasses.replace(parents, config=BeliefConfig(threads=2))
    out.put(len(threaded.update_opponent_move(obs)))


def test_a_forked_child_updates_on_threads_of_its_own(small_rounds: list[int]) -> None:
    """The helper threads of a parent that already updated on two threads are not in a forked
    child (a match runner's worker): the child's update must make its own, not wait forever
    for the parent's."""
    parents, obs = _random_game_belief(58)
    threaded = dataclasses.replace(parents, config=BeliefConfig(threads=2))
    expected = len(threaded.update_opponent_move(obs))  # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_threaded_update_size, args=(out,))
    child.start()
    try:
        assert out.get(timeout=300) == expected
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
