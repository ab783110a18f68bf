"""Time as a contract: engines against the referee's clock with one core busy, Stockfish beside.

Runs in one go, with a CPU-bound busy loop on one of the two cores for the whole run (a
bounded process this benchmark starts and stops, as a player's laptop running a browser
would have):

- matches through the referee (`caligo.play.referee.play_game`, one game at a time, the
  engines in process as `caligo match` runs them): Obscuro and ZS21 against RandomAgent and
  against each other at mt=0.1, mt=0.3, mt=1 and 3+2, colours alternating. Every engine move
  is timed by the referee; its ratio is (the referee's time) / (the time it was given): the
  move time, or under a clock the maximum the engine's plan allowed itself (its info's
  `plan.maximum`, which the rule keeps within the clock). A time forfeit by an engine is
  counted whatever the time control;
- the cold first move: a fresh `caligo engine --agent NAME` process per game (Obscuro, ZS21),
  its first move at mt=0.3 through the referee (`newgame` then `isready`, the clock starting
  after `readyok`), as a ratio to 300 ms; the start-up is printed beside it;
- the belief update of a 1,000,000-position P (the first million positions of a real
  1.6M-position P of a random game) inside an mt=1 move's belief share, beside the same update
  run to its end (the reference);
- the reference for time keeping: Stockfish's own `go movetime T` (raw UCI, Debian's
  stockfish) at 100, 300 and 1000 ms under the same load, as the same ratios.

A move that came too late (a time forfeit) counts in the ratios with the referee's time, and the
agent's own account of it (its time split, the wall time of its `act`) is printed. A move the
engine's watchdog answered (its work overdue at the plan's answer instant: an emergency move,
`caligo.limits.Watchdog`) counts with its time, and the number of such moves is printed.

Targets (the issue's): 0 time forfeits in at least 400 games, p99 ratio <= 1.10, max <= 1.5,
cold first move <= 1.10, and the 1M-position update within its share. `--games-scale F`
scales every cell's game count, `--tc TC` keeps the cells of one time control (repeatable: a
long run can be split in parts); `--short` plays one game a cell at mt=0.1 and mt=0.3 only.
`--json FILE` writes every ply's time and plan.

Last line: `timing forfeits=F games=G p99_ratio=R1 max_ratio=R2 cold_first_move_ratio=R3
belief_1m_ms=T`.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caligo.cli.cmd_bench import bench_parser, short_run

CELLS: list[tuple[str, str, str, int]] = [
    # (engine, opponent, time control, games in the full run)
    ("obscuro", "random", "mt=0.1", 60), ("zs21", "random", "mt=0.1", 60),
    ("obscuro", "zs21", "mt=0.1", 40),
    ("obscuro", "random", "mt=0.3", 50), ("zs21", "random", "mt=0.3", 50),
    ("obscuro", "zs21", "mt=0.3", 30),
    ("obscuro", "random", "mt=1", 30), ("zs21", "random", "mt=1", 30),
    ("obscuro", "zs21", "mt=1", 20),
    ("obscuro", "random", "3+2", 12), ("zs21", "random", "3+2", 12),
    ("obscuro", "zs21", "3+2", 6),
]
ENGINES = ("obscuro", "zs21")
BUSY = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nx = 0\n" \
       "while time.monotonic() < end:\n    x += 1\n"


@dataclass
class Record:
    """Every engine ply: engine, time control, the referee's ms, the ms it was given."""

    plies: list[dict[str, Any]] = field(default_factory=list)
    games: list[dict[str, Any]] = field(default_factory=list)

    def ratios(self) -> np.ndarray:
        return np.array([p["ratio"] for p in self.plies if p["ratio"] is not None])


def busy_loop(seconds: float) -> subprocess.Popen[bytes]:
    """A bounded CPU-bound process on one core (killed by the caller, ends by itself)."""
    return subprocess.Popen([sys.executable, "-c", BUSY, str(seconds)])


def _agent(name: str, seed: int) -> Any:
    from caligo.agents.random_agent import RandomAgent
    from caligo.agents.registry import create

    return RandomAgent(seed=seed) if name == "random" else create(name)


def _given_ms(tc: Any, info: dict[str, Any]) -> float | None:
    from caligo.agents.base import TcKind

    if tc.kind is TcKind.MOVETIME:
        return float(tc.movetime_ms)
    plan = info.get("plan", {})
    return float(plan["maximum"]) if "maximum" in plan else None


def play_cell(engine: str, opponent: str, tc_text: str, games: int, seed: int,
              record: Record) -> None:
    """`games` games of `engine` against `opponent` under `tc_text`, colours alternating."""
    from caligo.agents.base import TimeControl
    from caligo.play.referee import play_game
    from caligo.play.session import EndReason, GameSession, SessionConfig

    tc = TimeControl.parse(tc_text)
    agents = {engine: _agent(engine, seed), opponent: _agent(opponent, seed + 1)}
    last: dict[str, tuple[Any, float]] = {}
    for name, agent in agents.items():
        _watch(name, agent, last)
    try:
        for g in range(games):
            names = (engine, opponent) if g % 2 == 0 else (opponent, engine)
            session = GameSession(SessionConfig(
                f"t-{engine}-{opponent}-{tc_text}-{g}", time_controls=(tc, tc),
                seeds=(seed + 2 * g, seed + 2 * g + 1), names=names, move_timeout_ms=60_000))
            play_game(session, (agents[names[0]], agents[names[1]]))
            end = session.end
            assert end is not None
            loser = None if end.winner is None else names[1 - int(end.winner)]
            forfeit = end.reason is EndReason.TIME_FORFEIT and loser in ENGINES
            record.games.append({"engine": engine, "opponent": opponent, "tc": tc_text,
                                 "white": names[0], "result": end.result,
                                 "reason": end.reason.value, "plies": session.ply,
                                 "forfeit_by": loser if forfeit else None,
                                 "detail": end.detail})
            if forfeit and loser is not None and loser in last:
                # the late move itself: the referee's time, and the agent's own account of it
                decision, act_ms = last[loser]
                info = dict(decision.info)
                took = re.search(r"took (\d+(?:\.\d+)?) ms", end.detail)
                ms = float(took.group(1)) if took else act_ms
                given = _given_ms(tc, info)
                record.plies.append({
                    "engine": loser, "opponent": opponent if loser == engine else engine,
                    "tc": tc_text, "ply": session.ply + 1, "ms": round(ms, 2), "given": given,
                    "ratio": None if not given else ms / given, "forfeit": True,
                    "act_ms": round(act_ms, 2), "plan": info.get("plan"),
                    "split": info.get("time_ms"), "late_ms": info.get("late_ms"),
                    "overdue": bool(info.get("overdue")),
                    "belief": info.get("belief", info.get("belief_size"))})
                answered = " (answered by the watchdog)" if info.get("overdue") else ""
                print(f"  late move of {loser}{answered}: referee {ms:.0f} ms, act() "
                      f"{act_ms:.0f} ms, its own split {info.get('time_ms')}", flush=True)
            for p in session.plies:
                name = names[p.mover]
                if name not in ENGINES or p.decision is None:
                    continue
                info = dict(p.decision.info)
                given = _given_ms(tc, info)
                record.plies.append({
                    "engine": name, "opponent": opponent if name == engine else engine,
                    "tc": tc_text, "ply": p.ply, "ms": round(p.elapsed_ms, 2), "given": given,
                    "ratio": None if not given else p.elapsed_ms / given,
                    "plan": info.get("plan"), "split": info.get("time_ms"),
                    "overdue": bool(info.get("overdue")),
                    "belief": info.get("belief", info.get("belief_size"))})
                if info.get("overdue"):
                    print(f"  overdue move of {name} (answered by the watchdog): referee "
                          f"{p.elapsed_ms:.0f} ms of {given} ms", flush=True)
            print(f"  {engine} vs {opponent} {tc_text} game {g + 1}/{games}: {end.result} "
                  f"{end.reason.value}, {session.ply} plies", flush=True)
    finally:
        for a in agents.values():
            a.close()


def _watch(name: str, agent: Any, last: dict[str, tuple[Any, float]]) -> None:
    """Keep `agent`'s latest decision and the wall time of its `act` in `last[name]` (the
    referee drops a move that came too late; this keeps what the agent said about it)."""
    act = agent.act

    def timed_act(legal: Any, clock: Any) -> Any:
        t0 = time.perf_counter()
        decision = act(legal, clock)
        last[name] = (decision, 1000 * (time.perf_counter() - t0))
        return decision

    agent.act = timed_act


def cold_first_moves(names: tuple[str, ...], starts: int) -> list[dict[str, Any]]:
    """A fresh `caligo engine` process per game, its first move at mt=0.3 (engine White)."""
    from caligo.agents.base import TimeControl
    from caligo.agents.external import ExternalAgent
    from caligo.agents.random_agent import RandomAgent
    from caligo.play.referee import play_game
    from caligo.play.session import GameSession, SessionConfig

    out: list[dict[str, Any]] = []
    tc = TimeControl.parse("mt=0.3")
    for name in names:
        for i in range(starts):
            cmd = [sys.executable, "-m", "caligo.cli", "engine", "--agent", name]
            with ExternalAgent(cmd) as engine:
                session = GameSession(SessionConfig(f"cold-{name}-{i}", time_controls=(tc, tc),
                                                    seeds=(i, i + 1)))
                plies: list[float] = []

                def stop_after_first(s: GameSession, plies: list[float] = plies) -> None:
                    if s.ply == 1:
                        plies.append(s.plies[0].elapsed_ms)
                        s.abort("first move measured")

                play_game(session, (engine, RandomAgent(seed=i)), on_ply=stop_after_first)
            startup = session.startup_ms[0] or 0.0
            first = plies[0] if plies else float("nan")
            out.append({"engine": name, "first_ms": first, "ratio": first / 300.0,
                        "startup_ms": startup})
            print(f"  cold {name} #{i + 1}: start-up {startup:.0f} ms, first move "
                  f"{first:.1f} ms of 300", flush=True)
    return out


def belief_1m() -> dict[str, float]:
    """A 1M-position P updated inside an mt=1 move's belief share, and run to its end."""
    from caligo.agents.timing import OBSCURO, Clock, MoveTimer, TcKind
    from caligo.fow.belief import BeliefConfig, BeliefSet
    from caligo.fow.game import Game
    from caligo.fow.observation import observe

    rnd = random.Random(2)
    g = Game()
    b = BeliefSet.initial(1, config=BeliefConfig(max_positions=3_000_000))
    for _ in range(64):
        mover = g.turn
        m = rnd.choice(g.legal_moves())
        g.push(m)
        obs = observe(g.position, 1)
        b = b.update_own_move(m, obs) if mover == 1 else b.update_opponent_move(obs)
    g.push(rnd.choice(g.legal_moves()))
    obs = observe(g.position, 1)
    p = BeliefSet(1, b.rows[:1_000_000].copy(), b.ply, False, 1_000_000, config=b.config)
    timer = MoveTimer(OBSCURO)
    timer.start()
    plan = timer.plan(Clock(TcKind.MOVETIME, movetime_ms=1000, deadline_ms=1000))
    d = plan.belief_deadline
    assert d is not None
    t0 = time.perf_counter()
    part = p.update_opponent_move(obs, d)
    bounded = 1000 * (time.perf_counter() - t0)
    share = 1000 * (d.hard - plan.start)
    t0 = time.perf_counter()
    full = p.update_opponent_move(obs)
    whole = 1000 * (time.perf_counter() - t0)
    return {"bounded_ms": bounded, "share_ms": share, "whole_ms": whole,
            "kept": float(len(part)), "full": float(len(full))}


def stockfish_reference(times_ms: tuple[int, ...], searches: int) -> list[float]:
    """Stockfish's own `go movetime T`: (time from go to bestmove) / T per search."""
    from caligo.fow.stockfish import find_stockfish

    proc = subprocess.Popen([find_stockfish()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None

    def until(token: str) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(token):
                return

    proc.stdin.write("uci\nsetoption name Threads value 1\nisready\n")
    until("readyok")
    ratios = []
    fens = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
            "r2q1rk1/ppp2ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPP2PPP/R2Q1RK1 w - - 0 8"]
    for t in times_ms:
        for i in range(searches):
            proc.stdin.write(f"position fen {fens[i % len(fens)]}\n")
            start = time.perf_counter()
            proc.stdin.write(f"go movetime {t}\n")
            until("bestmove")
            ratios.append(1000 * (time.perf_counter() - start) / t)
    proc.stdin.write("quit\n")
    proc.wait(timeout=5)
    return ratios


def _summary(ratios: np.ndarray) -> str:
    if ratios.size == 0:
        return "no moves"
    return (f"{ratios.size} moves, p50 {np.percentile(ratios, 50):.3f}, p99 "
            f"{np.percentile(ratios, 99):.3f}, max {ratios.max():.3f}")


def main(argv: list[str] | None = None) -> int:
    """Run everything under the busy loop; print the table and the `timing ...` line."""
    p = bench_parser("timing", __doc__)
    p.add_argument("--games-scale", type=float, default=1.0,
                   help="multiply every cell's game count (default 1: 400 games)")
    p.add_argument("--json", metavar="FILE", help="write every engine ply's time and plan")
    p.add_argument("--no-load", action="store_true", help="run without the busy loop")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tc", action="append", metavar="TC",
                   choices=sorted({c[2] for c in CELLS}),
                   help="play only the cells of this time control (repeatable; default all)")
    args = p.parse_args(argv)
    short = short_run(args)
    cells = [(e, o, tc, max(1, round(n * args.games_scale))) for e, o, tc, n in CELLS
             if args.tc is None or tc in args.tc]
    if short:
        cells = [(e, o, tc, 1) for e, o, tc, _ in CELLS if tc in ("mt=0.1", "mt=0.3")]
    games = sum(c[3] for c in cells)
    load0 = os.getloadavg()[0]
    print(f"load average before the busy loop: {load0:.2f}; {games} games in "
          f"{len(cells)} cells{'' if not args.no_load else ' (no busy loop)'}")
    busy = None if args.no_load else busy_loop(24 * 3600.0)
    record = Record()
    t_start = time.perf_counter()
    try:
        print("\nStockfish's own movetime (the reference), same load:")
        sf = np.array(stockfish_reference((100, 300, 1000), 3 if short else 20))
        print(f"  {_summary(sf)}")
        print("\nthe cold first move (fresh `caligo engine` processes, mt=0.3):")
        cold = cold_first_moves(ENGINES, 1 if short else 3)
        print("\nthe 1M-position belief update:")
        bel = belief_1m()
        print(f"  bounded {bel['bounded_ms']:.1f} ms for a share of {bel['share_ms']:.1f} ms "
              f"({bel['kept']:.0f} positions kept); the whole update {bel['whole_ms']:.0f} ms "
              f"({bel['full']:.0f} positions): {bel['whole_ms'] / bel['bounded_ms']:.1f}x")
        print("\nmatches (one game at a time):")
        for i, (engine, opponent, tc, n) in enumerate(cells):
            play_cell(engine, opponent, tc, n, args.seed + 1000 * i, record)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    load1 = os.getloadavg()[0]
    ratios = record.ratios()
    forfeits = Counter(g["forfeit_by"] for g in record.games if g["forfeit_by"])
    print(f"\n{games} games in {(time.perf_counter() - t_start) / 60:.1f} min; load average at "
          f"the end {load1:.2f}")
    print(f"engine moves, referee time / time given: {_summary(ratios)}")
    for name in ENGINES:
        for tc in dict.fromkeys(c[2] for c in cells):
            r = np.array([q["ratio"] for q in record.plies if q["engine"] == name
                          and q["tc"] == tc and q["ratio"] is not None])
            print(f"  {name:8s} {tc:7s} {_summary(r)}")
    print(f"Stockfish movetime (reference): {_summary(sf)}")
    print(f"time forfeits by an engine: {dict(forfeits) or 0}")
    overdue = Counter(q["engine"] for q in record.plies if q.get("overdue"))
    print(f"moves answered by the watchdog (an emergency move, the work overdue): "
          f"{dict(overdue) or 0} of {len(record.plies)} engine moves")
    reasons = Counter(g["reason"] for g in record.games)
    print(f"endings: {dict(reasons)}")
    cold_ratio = max(c["ratio"] for c in cold)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"argv": sys.argv, "games": record.games, "plies": record.plies,
                       "cold": cold, "belief": bel, "stockfish_ratios": sf.tolist(),
                       "load": [load0, load1]}, fh)
    p99 = float(np.percentile(ratios, 99)) if ratios.size else float("nan")
    mx = float(ratios.max()) if ratios.size else float("nan")
    print(f"timing forfeits={sum(forfeits.values())} games={games} p99_ratio={p99:.3f} "
          f"max_ratio={mx:.3f} cold_first_move_ratio={cold_ratio:.3f} "
          f"belief_1m_ms={bel['bounded_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
