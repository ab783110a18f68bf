"""`caligo bench play`: referee, protocol and match speed, each beside a reference in one run.

- referee: RandomAgent vs RandomAgent games through `GameSession` + `project` + `play_game`
  (observations for both seats, FoW-legal moves from the observation, clocks), in plies per
  second; reference: python-chess's own game loop (random legal moves on a `chess.Board` until
  `is_game_over()`), which does none of the FoW work. Target >= 5,000 plies/s.
- protocol: the go -> move round trip of `ExternalAgent` against `caligo engine --agent random`
  over pipes, in ms per ply (encode, pipe, decode, agent, encode, pipe, decode); reference: a
  bare echo subprocess bouncing a `go` line of the same size. Target <= 1 ms.
- match: `run_match` RandomAgent vs RandomAgent with 2 worker processes (spawn, start-up
  included), in games per second; reference: the same games inline in one process. Target:
  1,000 games in under a minute on 2 cores.

Ends with one line: ``play referee_plies_per_s=N1 protocol_roundtrip_ms=T1 match_games_per_s=N2``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time

import chess

from caligo.agents.base import Clock
from caligo.agents.external import ExternalAgent
from caligo.agents.protocol import Go, encode
from caligo.agents.random_agent import RandomAgent
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.view import legal_moves_uci
from caligo.play.match import MatchConfig, engine_configs
from caligo.play.referee import play_game
from caligo.play.runner import run_match
from caligo.play.session import GameSession, SessionConfig


def referee_rate(games: int) -> tuple[float, int]:
    """Plies per second of in-process random games under the referee."""
    agents = (RandomAgent(seed=1), RandomAgent(seed=2))
    play_game(GameSession(SessionConfig("warm")), agents)  # numba cache load, imports
    plies = 0
    start = time.perf_counter()
    for i in range(games):
        session = GameSession(SessionConfig(f"b{i}", seeds=(i, i + 1)))
        play_game(session, agents)
        plies += session.ply
    return plies / (time.perf_counter() - start), plies


def pychess_rate(games: int) -> float:
    """Plies per second of python-chess's game loop with random legal moves."""
    rng = random.Random(0)
    plies = 0
    start = time.perf_counter()
    for _ in range(games):
        board = chess.Board()
        while not board.is_game_over():
            board.push(rng.choice(list(board.legal_moves)))
            plies += 1
    return plies / (time.perf_counter() - start)


def protocol_roundtrip(games: int) -> tuple[float, int]:
    """Mean ms of ExternalAgent.act (go -> move) against `caligo engine --agent random`."""
    command = [sys.executable, "-m", "caligo.cli", "engine", "--agent", "random"]
    times: list[float] = []
    with ExternalAgent(command) as engine:

        class Timed:
            def __getattr__(self, name: str) -> object:
                return getattr(engine, name)

            def act(self, legal, clock):  # type: ignore[no-untyped-def]
                t0 = time.perf_counter()
                decision = engine.act(legal, clock)
                times.append(time.perf_counter() - t0)
                return decision

        for i in range(games):
            session = GameSession(SessionConfig(f"p{i}", seeds=(i, i + 1)))
            pair = (Timed(), RandomAgent(seed=i)) if i % 2 == 0 else (RandomAgent(seed=i), Timed())
            play_game(session, pair)  # type: ignore[arg-type]
    times.sort()
    return 1000.0 * sum(times) / len(times), len(times)


ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


def echo_roundtrip(n: int) -> float:
    """Mean ms to bounce a typical `go` line through a bare echo subprocess."""
    legal = tuple(legal_moves_uci(observe(Game().position, 0)))  # the 20 opening moves
    line = encode(Go("g1", 1, legal, Clock(deadline_ms=60000))).encode()
    proc = subprocess.Popen(
        [sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for _ in range(50):
            proc.stdin.write(line)
            proc.stdout.readline()
        start = time.perf_counter()
        for _ in range(n):
            proc.stdin.write(line)
            proc.stdout.readline()
        return 1000.0 * (time.perf_counter() - start) / n
    finally:
        proc.stdin.close()
        proc.wait()


def match_rate(pairs: int, concurrency: int) -> tuple[float, float]:
    """(games per second, seconds) of a random-vs-random match, start-up included."""
    config = MatchConfig(engine_configs(["random", "random:seed=1"], []), pairs, concurrency)
    start = time.perf_counter()
    result = run_match(config)
    elapsed = time.perf_counter() - start
    return result.tally.games / elapsed, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="caligo bench play", description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="a reduced run (also CALIGO_SHORT=1)")
    args = parser.parse_args(argv or [])
    short = args.short or os.environ.get("CALIGO_SHORT") == "1"
    games = 40 if short else 300
    pairs = 50 if short else 500

    ours, plies = referee_rate(games)
    ref = pychess_rate(games)
    print(f"referee: {ours:,.0f} plies/s over {plies} plies of {games} random games")
    print(f"  python-chess game loop: {ref:,.0f} plies/s; ratio ours/python-chess {ours / ref:.2f}")

    rt, n = protocol_roundtrip(4 if short else 20)
    echo = echo_roundtrip(500 if short else 3000)
    print(f"protocol: {rt:.3f} ms per go->move round trip over {n} plies (caligo engine)")
    print(f"  bare echo subprocess: {echo:.3f} ms; ratio ours/echo {rt / echo:.2f}")

    par, par_s = match_rate(pairs, 2)
    seq, seq_s = match_rate(pairs, 1)
    print(
        f"match: {2 * pairs} games with 2 workers in {par_s:.1f} s ({par:.1f} games/s, start-up "
        f"included); inline {seq_s:.1f} s ({seq:.1f} games/s); ratio 2 workers/inline "
        f"{par / seq:.2f}"
    )
    print(
        f"play referee_plies_per_s={ours:.0f} protocol_roundtrip_ms={rt:.3f} "
        f"match_games_per_s={par:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
