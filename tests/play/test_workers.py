"""The engine workers (`caligo.play.workers`): a fixed pool that hosts many games' engines.

Checked: a game's moves through the pool equal the same agent's moves played directly (the
referee's projection is the only input, so the worker is a transparent host); a game the worker
does not hold is answered `missing` and replays its transcript; a killed worker is replaced and
its game goes on; a hung search is stopped at its limit and its worker replaced; the process
count is the pool's whatever the number of games; Ray actors give the same moves as local
workers in deterministic mode (skipped, with the reason shown, without the `caligo[ray]`
extra). No wall time is asserted: the watchdog's limits are what make the hung job return.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from caligo.agents.registry import create
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig
from caligo.play.workers import (
    Job,
    JobKind,
    ProcessWorkers,
    ThreadWorkers,
    WorkerError,
    WorkerLost,
    _Pool,
    make_workers,
    parse_workers,
)

SPEC = "obscuro:eval=simple,budget=iters=30"
INIT = "tests.play.worker_agents:register"


def _session(game: str, seed: int) -> GameSession:
    return GameSession(SessionConfig(game, seeds=(seed, seed + 1)))


async def _play(pool: _Pool, game: str, seed: int, plies: int, spec: str = SPEC
                ) -> list[str]:
    """The engine (White, through the pool) against a seeded random mover, `plies` plies:
    the UCI moves played."""
    session = _session(game, seed)
    rng = random.Random(seed)
    sent = -1
    while session.ply < plies and not session.is_over():
        if session.to_move == 0:
            messages = session.project(0, sent)
            result = await pool.submit(Job(JobKind.MOVE, game, spec, tuple(messages)), 120)
            if result.missing:
                result = await pool.submit(
                    Job(JobKind.MOVE, game, spec, tuple(session.project(0, -1))), 120)
            assert result.error is None and result.decision is not None, result
            sent = session.ply
            session.play(0, result.decision.move, 1.0)
        else:
            session.play(1, rng.choice(session.legal(1)), 1.0)
    await pool.submit(Job(JobKind.END, game, spec, tuple(session.project(0, sent))), 60)
    return [p.uci for p in session.plies]


def _direct(game: str, seed: int, plies: int) -> list[str]:
    """The same game with the agent in process, through the referee."""
    session = _session(game, seed)
    rng = random.Random(seed)

    class Seeded:  # the random mover above, as an agent
        def new_game(self, *a: object) -> None: ...
        def observe(self, *a: object) -> None: ...
        def force(self, move: int) -> None: ...
        def game_over(self, *a: object) -> None: ...
        def close(self) -> None: ...

        def act(self, legal, clock):  # type: ignore[no-untyped-def]
            from caligo.agents.base import Decision
            return Decision(rng.choice(list(session.legal(1))))

    agent = create(SPEC)

    def stop(s: GameSession) -> None:
        if s.ply >= plies:
            s.abort("enough")

    try:
        play_game(session, (agent, Seeded()), on_ply=stop)  # type: ignore[arg-type]
    finally:
        agent.close()
    return [p.uci for p in session.plies]


def _descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of every process below `pid` (from /proc), but multiprocessing's
    resource tracker (one per parent, not per worker)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        names[int(entry.name)] = name
    out: list[tuple[int, str]] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                cmd = (Path("/proc") / str(child) / "cmdline").read_bytes()
            except OSError:
                continue
            if b"resource_tracker" not in cmd:
                out.append((child, names.get(child, "?")))
    return out


def test_worker_specs() -> None:
    assert parse_workers("3") == ("processes", 3, None)
    assert parse_workers("threads:2") == ("threads", 2, None)
    assert parse_workers("ray:auto") == ("ray", parse_workers("auto")[1], "auto")
    for bad in ("0", "processes:0", "threads:x", "many", "processes:999", "gpu:2"):
        with pytest.raises(WorkerError, match="invalid workers"):
            parse_workers(bad)
    assert isinstance(make_workers("threads:1"), ThreadWorkers)


def test_a_game_through_the_pool_is_the_game_played_directly() -> None:
    async def run() -> list[str]:
        pool = ProcessWorkers(1)
        try:
            return await _play(pool, "same", 5, 16)
        finally:
            await pool.close()

    assert asyncio.run(run()) == _direct("same", 5, 16)


def test_games_share_the_pools_processes() -> None:
    """Six games interleaved on two workers: each game's moves are its direct game's, and the
    processes below us are the two workers, nothing per game (eval=simple: no Stockfish)."""

    async def run() -> tuple[list[list[str]], int, int]:
        pool = ProcessWorkers(2)
        try:
            await pool.start()
            games = await asyncio.gather(*(_play(pool, f"g{i}", 10 + i, 12) for i in range(6)))
            workers = pool.pids()
            mine = [p for p, _ in _descendants(os.getpid())]
            assert set(workers) <= set(mine)
            procs = len(workers) + sum(len(_descendants(w)) for w in workers)
            return games, procs, pool.stats().games
        finally:
            await pool.close()

    games, procs, assigned = asyncio.run(run())
    assert games == [_direct(f"g{i}", 10 + i, 12) for i in range(6)]
    assert procs == 2 and assigned == 0  # every game ended (END released it)


def test_a_game_its_worker_dropped_replays_its_transcript() -> None:
    """One worker holding one game at a time, two games alternating: every move finds its
    game dropped, is answered `missing`, and replays the transcript (P rebuilt, the tree
    started over: the moves may differ from the direct game's, but the game goes on)."""

    async def run() -> tuple[list[list[str]], int]:
        pool = ProcessWorkers(1, max_hosted=1)
        try:
            games = await asyncio.gather(_play(pool, "a", 1, 10), _play(pool, "b", 2, 10))
            return games, pool.stats().jobs
        finally:
            await pool.close()

    games, jobs = asyncio.run(run())
    assert [len(g) for g in games] == [10, 10]
    assert jobs > 2 * 5 + 2  # more jobs than moves: the replays


def test_a_killed_worker_is_replaced_and_its_game_goes_on() -> None:
    async def run() -> list[str]:
        pool = ProcessWorkers(1)
        try:
            await pool.start()
            session = _session("killed", 3)
            first = await pool.submit(Job(JobKind.MOVE, "killed", SPEC,
                                          tuple(session.project(0, -1))), 120)
            assert first.decision is not None
            session.play(0, first.decision.move, 1.0)
            session.play(1, session.legal(1)[0], 1.0)
            (pid,) = pool.pids()
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(WorkerLost, match="died"):
                await pool.submit(Job(JobKind.MOVE, "killed", SPEC,
                                      tuple(session.project(0, 0))), 120)
            assert pool.stats().replaced == 1 and pool.pids() and pool.pids()[0] != pid
            again = await pool.submit(Job(JobKind.MOVE, "killed", SPEC,
                                          tuple(session.project(0, 0))), 120)
            assert again.missing  # the new worker does not hold the game: replay it
            replayed = await pool.submit(Job(JobKind.MOVE, "killed", SPEC,
                                             tuple(session.project(0, -1))), 120)
            assert replayed.decision is not None and replayed.error is None
            session.play(0, replayed.decision.move, 1.0)
            return [p.uci for p in session.plies]
        finally:
            await pool.close()

    assert len(asyncio.run(run())) == 3


def test_a_hung_search_is_stopped_at_its_limit() -> None:
    """An engine that never answers its second move: the job fails at its 2 s limit, the
    worker (and anything it started) is killed and replaced, and other games go on."""

    async def run() -> tuple[int, int]:
        pool = ProcessWorkers(1, init=INIT)
        try:
            session = _session("hung", 1)
            r = await pool.submit(Job(JobKind.MOVE, "hung", "test-hang",
                                      tuple(session.project(0, -1))), 60)
            assert r.decision is not None
            session.play(0, r.decision.move, 1.0)
            session.play(1, session.legal(1)[0], 1.0)
            (pid,) = pool.pids()
            with pytest.raises(WorkerLost, match=r"did not answer within 2\.0 s"):
                await pool.submit(Job(JobKind.MOVE, "hung", "test-hang",
                                      tuple(session.project(0, 0))), 2.0)
            assert pid not in [p for p, _ in _descendants(os.getpid())]
            other = await _play(pool, "other", 4, 6)
            return pool.stats().replaced, len(other)
        finally:
            await pool.close()

    replaced, plies = asyncio.run(run())
    assert replaced == 1 and plies == 6


def test_ray_workers_give_the_same_moves_as_local_workers() -> None:
    ray = pytest.importorskip("ray", reason="the caligo[ray] extra is not installed")
    from caligo.play.workers import RayWorkers

    async def run(pool: _Pool) -> list[str]:
        try:
            return await _play(pool, "ray", 21, 14)
        finally:
            await pool.close()

    local = asyncio.run(run(ProcessWorkers(1)))
    try:
        remote = asyncio.run(run(RayWorkers(1)))
    finally:
        ray.shutdown()
    assert remote == local and len(local) >= 5  # (this seed ends by king capture at ply 7)


def test_the_pool_measures_how_busy_its_workers_were() -> None:
    """`load()`: the seconds of work the workers did in a recent span (each job from its start
    on a worker to its answer), the span itself, the longest wait for a worker and the
    number of games served, with each game's share; the server's admission reads it. Two
    games on one worker: the second one's jobs wait."""

    async def run() -> tuple[Any, Any, float]:
        pool = ThreadWorkers(1)
        try:
            t0 = time.monotonic()
            await asyncio.gather(*(_play(pool, f"b{i}", 20 + i, 6) for i in range(2)))
            return pool.load(), pool.load(window_s=1e-9), time.monotonic() - t0
        finally:
            await pool.close()

    load, none, elapsed = asyncio.run(run())
    assert load.workers == 1 and 0 < load.span_s <= 60.0
    assert 0 < load.busy_s <= min(load.span_s, elapsed)  # one worker: never more than the span
    assert 0 < load.utilisation <= 1
    assert load.max_wait_s > 0  # two games on one worker: a job waited
    assert load.games == 2  # the games its jobs served (admission's share of a game)
    assert load.by_game is not None and set(load.by_game) == {"b0", "b1"}
    assert sum(load.by_game.values()) == pytest.approx(load.busy_s)  # split by game
    assert load.utilisation_of({"b0", "b1"}) == pytest.approx(load.utilisation)
    assert load.utilisation_of({"b1"}) == pytest.approx(load.by_game["b1"] / load.span_s)
    assert load.utilisation_of(()) == 0  # games that ended no longer count
    assert none.busy_s == 0 and none.utilisation == 0 and none.games == 0
