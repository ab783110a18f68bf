"""Leaf-evaluation speed of the FoW engine: Stockfish calls, expansions, built-in evaluations.

The part of `caligo bench engine` that needs no search (issue 9). `measure(short)` returns

- sf_call_ms: one `go depth 1` MultiPV 256 call over our raw pipes (`StockfishEngine.search`
  plus parsing the answer), averaged over a fixed set of middlegame positions: twelve opening
  lines played out in SAN below, and every child of each (about 400 distinct positions, each
  asked once, so the engine's hash helps neither side). Beside it, in the same run and
  interleaved call by call on the same positions: python-chess's `chess.engine` (`analyse`
  with the same options), the reference; `sf_ratio` = python-chess ms / ours.
- leaf_ms: a whole `StockfishPool.children` call per leaf (cache off) on the same positions:
  classification, FEN, the call, own calls, mapping; random_leaf_ms: the same on leaves of
  uniformly random FoW playouts, where kings hang often and whole leaves need own calls
  (random_leaf_cap8_ms: with `own_call_cap=8`).
- expansions_per_s: `expand.expand_kernel` called from Python once per parent, over the same
  positions; `expand_ratio` against `expand_reference` (the pure-Python reference).
- builtin_nodes_per_s: children scored per second by `SimpleEvaluator.children`, one call per
  leaf as the search makes them; `builtin_ratio` against `evaluate_reference` (python-chess).
  see_nodes_per_s: the same with static exchanges (`eval=simple-see`), interleaved round by
  round with the plain one; `see_cost` = plain / exchange speed.
- spread_roots_ratio, spread_leaves_ratio: the agent's own calls outside its search (a
  subgame's roots as single positions, and leaves) on one Stockfish engine over the same
  calls spread over two (`SlotPool.spread`), interleaved round by round: the reference is the
  one-engine pool. 1.76 and 1.40 on the idle 2-core machine (the leaves' Python work holds
  the GIL), about 1 with both cores busy.

Targets (issue 9, 2 cores): sf_call_ms <= 0.8; builtin_nodes_per_s >= 200,000; the search's
>= 1,000 expansions/s leaves the expansion kernel a small share of that budget.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import chess
import chess.engine
import numpy as np

from caligo.fow.evaluate import SimpleEvalConfig, SimpleEvaluator, evaluate_reference
from caligo.fow.expand import ExpandBuffers, expand, expand_kernel, expand_reference
from caligo.fow.movegen import legal_moves
from caligo.fow.position import (
    STARTING_FEN,
    UNDO_WORDS,
    from_fen,
    king_captured,
    make_move,
)
from caligo.fow.stockfish import (
    StockfishConfig,
    StockfishEngine,
    StockfishPool,
    fen_bytes,
    find_stockfish,
    parse_answer,
)

OPENINGS = (
    # Ruy Lopez, closed
    "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O h3",
    # Sicilian Najdorf, English attack
    "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3 Be7 Qd2 O-O O-O-O",
    # Queen's Gambit Declined
    "d4 d5 c4 e6 Nc3 Nf6 Bg5 Be7 e3 O-O Nf3 Nbd7 Rc1 c6 Bd3 dxc4 Bxc4",
    # King's Indian, classical
    "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6 Nf3 O-O Be2 e5 O-O Nc6 d5 Ne7 Ne1 Nd7",
    # French Winawer, poisoned pawn
    "e4 e6 d4 d5 Nc3 Bb4 e5 c5 a3 Bxc3+ bxc3 Ne7 Qg4 Qc7 Qxg7 Rg8 Qxh7 cxd4",
    # Caro-Kann, classical
    "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5 Ng3 Bg6 h4 h6 Nf3 Nd7 h5 Bh7 Bd3 Bxd3 Qxd3 e6",
    # Italian, slow
    "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6 d3 d6 O-O O-O Re1 a6 Bb3 Ba7 h3 h6 Nbd2 Re8",
    # English, reversed Dragon
    "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5 cxd5 Nxd5 Bg2 Nb6 O-O Be7 d3 O-O a3 Be6 b4",
    # Slav
    "d4 d5 c4 c6 Nf3 Nf6 Nc3 dxc4 a4 Bf5 e3 e6 Bxc4 Bb4 O-O Nbd7 Qe2 Bg6 e4 O-O",
    # Gruenfeld, exchange
    "d4 Nf6 c4 g6 Nc3 d5 cxd5 Nxd5 e4 Nxc3 bxc3 Bg7 Nf3 c5 Be3 Qa5 Qd2 O-O Rc1",
    # Nimzo-Indian, classical
    "d4 Nf6 c4 e6 Nc3 Bb4 Qc2 O-O a3 Bxc3+ Qxc3 d5 Nf3 dxc4 Qxc4 b6 Bg5 Ba6 Qc2",
    # Scotch
    "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6 Nxc6 bxc6 e5 Qe7 Qe2 Nd5 c4 Ba6 b3 g6 f4",
)


def parents() -> list[np.ndarray]:
    """The twelve middlegame positions (python-chess replays the SAN, so each is legal)."""
    out = []
    for line in OPENINGS:
        board = chess.Board()
        for san in line.split():
            board.push_san(san)
        out.append(from_fen(board.fen(en_passant="fen")))
    return out


def positions() -> list[np.ndarray]:
    """The twelve parents and all their children that both kings survive (~400)."""
    buf = ExpandBuffers.allocate()
    out = []
    for pos in parents():
        out.append(pos)
        n = expand(pos, buf)
        out.extend(buf.children[i].copy() for i in range(n) if buf.terminal[i] == 0)
    return out


def random_leaves(n: int, seed: int = 7) -> list[np.ndarray]:
    """`n` positions met in uniformly random FoW playouts from the start (kings left hanging
    often: the worst case for own calls)."""
    rng = random.Random(seed)
    out: list[np.ndarray] = []
    while len(out) < n:
        pos = from_fen(STARTING_FEN)
        for _ in range(120):
            moves = legal_moves(pos)
            if not moves or len(out) >= n:
                break
            out.append(pos.copy())
            make_move(pos, rng.choice(moves), np.empty(UNDO_WORDS, dtype=np.uint64))
            if king_captured(pos):
                break
    return out


def _our_pass(fens: list[bytes], path: str) -> tuple[list[float], int]:
    """Seconds per call on a fresh engine (raw pipes + parsing); MultiPV lines in all."""
    engine = StockfishEngine(path, StockfishConfig(cache_entries=0))
    times = []
    lines = 0
    for fen in fens:
        t = time.perf_counter()
        (block,) = engine.search([fen])
        answer = parse_answer(block)
        times.append(time.perf_counter() - t)
        lines += answer.keys.size
    engine.close()
    return times, lines


def _pychess_pass(fens: list[bytes], path: str) -> list[float]:
    """Seconds per `analyse` call of a fresh python-chess session with the same options."""
    boards = [chess.Board(f.decode()) for f in fens]
    limit = chess.engine.Limit(depth=1)
    times = []
    with chess.engine.SimpleEngine.popen_uci(path) as ref:
        ref.configure({"Hash": 1, "Threads": 1})
        for board in boards:
            t = time.perf_counter()
            ref.analyse(board, limit, multipv=256)
            times.append(time.perf_counter() - t)
    return times


def _sf_calls(fens: list[bytes], path: str) -> tuple[float, float, float, int]:
    """Mean ms per call, ours and python-chess's; our median; MultiPV lines per call.

    Two rounds of one pass each, alternating, every pass on a fresh process (so both see the
    same sequence of positions from the same start); neither session is open during the
    other's pass.
    """
    ours: list[float] = []
    theirs: list[float] = []
    lines = 0
    for _ in range(2):
        times, lines = _our_pass(fens, path)
        ours += times
        theirs += _pychess_pass(fens, path)
    return (
        1000 * float(np.mean(ours)),
        1000 * float(np.mean(theirs)),
        1000 * float(np.median(ours)),
        lines // len(fens),
    )


def _leaf_ms(
    leaves: list[np.ndarray], path: str, cap: int | None = None
) -> tuple[float, float]:
    """Mean ms of `StockfishPool.children` per leaf (cache off), and own calls per leaf."""
    buf = ExpandBuffers.allocate()
    config = StockfishConfig(path=path, cache_entries=0, own_call_cap=cap)
    with StockfishPool(config) as pool:
        pool.engine()
        total = 0.0
        for pos in leaves:
            n = expand(pos, buf)
            t = time.perf_counter()
            pool.children(pos, buf.children[:n], buf.moves[:n])
            total += time.perf_counter() - t
        stats = pool.stats()
    return 1000 * total / len(leaves), stats.own_calls / len(leaves)


def _spread_ms(pos: list[np.ndarray], path: str, rounds: int) -> dict[str, float]:
    """The agent's own calls outside the search (a subgame's roots, and the children of the
    roots of its infoset) on a one-engine pool and on a two-engine one (`SlotPool.spread`),
    interleaved round by round, cache off, Obscuro's own-call cap: ms for all of `pos` as
    single positions and as leaves (`FowEvaluator.children`, one call for all)."""
    from caligo.agents.fow_search import FowEvaluator, FowSearchGame
    from caligo.fow.stockfish import SlotPool

    game = FowSearchGame()
    states = game.add_positions(np.array(pos, dtype=np.uint64))
    leaves = states[:: max(1, len(pos) // 48)]
    batch = game.expand(leaves)
    rows = np.ascontiguousarray(np.array(pos, dtype=np.uint64))
    config = StockfishConfig(path=path, cache_entries=0, own_call_cap=8)
    totals = {"roots_1": 0.0, "roots_2": 0.0, "leaves_1": 0.0, "leaves_2": 0.0}
    with SlotPool(config) as one, SlotPool(config) as two:
        one.start(1)
        two.start(2)
        for _ in range(rounds):
            for width, pool in (("1", one), ("2", two)):
                t = time.perf_counter()
                pool.evaluate(rows)
                totals["roots_" + width] += time.perf_counter() - t
                t = time.perf_counter()
                FowEvaluator(game, pool).children(leaves, batch)
                totals["leaves_" + width] += time.perf_counter() - t
    out = {k: 1000 * v / rounds for k, v in totals.items()}
    out["leaves"] = float(leaves.size)
    return out


def _expansions(leaves: list[np.ndarray], rounds: int) -> tuple[float, float]:
    """Expansions per second of the kernel (one Python call each) and of the reference."""
    b = ExpandBuffers.allocate()
    args = (b.children, b.moves, b.obs_keys, b.terminal, b.values, b.count)
    expand_kernel(leaves[0], *args)
    t = time.perf_counter()
    for _ in range(rounds):
        for pos in leaves:
            expand_kernel(pos, *args)
    kernel = rounds * len(leaves) / (time.perf_counter() - t)
    sample = leaves[:: max(1, len(leaves) // 40)]
    t = time.perf_counter()
    for pos in sample:
        expand_reference(pos)
    reference = len(sample) / (time.perf_counter() - t)
    return kernel, reference


def _builtin(leaves: list[np.ndarray], rounds: int) -> tuple[float, float, float]:
    """Children scored per second by SimpleEvaluator.children (one call per leaf), by the
    same with static exchanges (`eval=simple-see`), rounds interleaved, and by the
    python-chess reference."""
    buf = ExpandBuffers.allocate()
    expanded = []
    for pos in leaves:
        n = expand(pos, buf)
        expanded.append((pos, buf.children[:n].copy(), buf.moves[:n].copy()))
    evs = (SimpleEvaluator(), SimpleEvaluator(SimpleEvalConfig(exchange=True)))
    out = np.empty(256)
    seconds = [0.0, 0.0]
    nodes = 0
    for ev in evs:
        ev.children(*expanded[0], out)
    for _ in range(rounds):
        for k, ev in enumerate(evs):
            t = time.perf_counter()
            for pos, children, moves in expanded:
                ev.children(pos, children, moves, out)
            seconds[k] += time.perf_counter() - t
        nodes += sum(moves.shape[0] for _, _, moves in expanded)
    sample = [row for _, children, _ in expanded[:6] for row in children]
    t = time.perf_counter()
    for row in sample:
        evaluate_reference(row)
    reference = len(sample) / (time.perf_counter() - t)
    return nodes / seconds[0], nodes / seconds[1], reference


def measure(short: bool) -> dict[str, float]:
    """Run the leaf-evaluation benchmark; print a table; return its numbers."""
    path = find_stockfish()
    pos = positions()
    if short:
        pos = pos[::4]
    fens = [fen_bytes(p) for p in pos]
    sf_ms, pychess_ms, sf_median, lines = _sf_calls(fens, path)
    leaf_ms, own_per_leaf = _leaf_ms(pos, path)
    rand = random_leaves(100 if short else 400)
    random_ms, random_own = _leaf_ms(rand, path)
    capped_ms, capped_own = _leaf_ms(rand, path, cap=8)
    expansions, expand_ref = _expansions(pos, 5 if short else 50)
    builtin, see, builtin_ref = _builtin(pos, 5 if short else 50)
    spread = _spread_ms(pos, path, 3 if short else 10)
    print(f"FoW leaf evaluation: {len(pos)} middlegame positions (12 openings + children)")
    print(
        f"  sf_call_ms           {sf_ms:>12.3f}   raw pipes, depth 1, MultiPV 256, "
        f"{lines} lines/call (target <= 0.8)\n"
        f"  median call ms       {sf_median:>12.3f}\n"
        f"  python-chess ms      {pychess_ms:>12.3f}   chess.engine analyse, same options\n"
        f"  sf_ratio             {pychess_ms / sf_ms:>12.1f}   python-chess / ours\n"
        f"  leaf_ms              {leaf_ms:>12.3f}   StockfishPool.children per leaf, "
        f"{own_per_leaf:.2f} own calls/leaf\n"
        f"  random_leaf_ms       {random_ms:>12.3f}   the same on random-playout leaves, "
        f"{random_own:.2f} own calls/leaf\n"
        f"  random_leaf_cap8_ms  {capped_ms:>12.3f}   the same with own_call_cap=8, "
        f"{capped_own:.2f} own calls/leaf\n"
        f"  expansions_per_s     {expansions:>12,.0f}   expand kernel, one call per parent\n"
        f"  expand_ratio         {expansions / expand_ref:>12.0f}   over expand_reference "
        f"({expand_ref:,.0f}/s)\n"
        f"  builtin_nodes_per_s  {builtin:>12,.0f}   SimpleEvaluator.children (target >= "
        f"200,000)\n"
        f"  builtin_ratio        {builtin / builtin_ref:>12.0f}   over evaluate_reference "
        f"({builtin_ref:,.0f}/s)\n"
        f"  see_nodes_per_s      {see:>12,.0f}   the same with static exchanges (simple-see), "
        f"{builtin / see:.2f} times slower\n"
        f"  roots_ms (2 engines) {spread['roots_2']:>12.1f}   {len(pos)} positions, one "
        f"engine: {spread['roots_1']:.1f} ms, spread_roots_ratio "
        f"{spread['roots_1'] / spread['roots_2']:.2f}\n"
        f"  leaves_ms (2 engines){spread['leaves_2']:>12.1f}   {spread['leaves']:.0f} leaves, "
        f"one engine: {spread['leaves_1']:.1f} ms, spread_leaves_ratio "
        f"{spread['leaves_1'] / spread['leaves_2']:.2f}"
    )
    return {
        "sf_call_ms": sf_ms,
        "sf_call_median_ms": sf_median,
        "sf_pychess_ms": pychess_ms,
        "sf_ratio": pychess_ms / sf_ms,
        "leaf_ms": leaf_ms,
        "random_leaf_ms": random_ms,
        "random_leaf_cap8_ms": capped_ms,
        "expansions_per_s": expansions,
        "expand_ratio": expansions / expand_ref,
        "builtin_nodes_per_s": builtin,
        "builtin_ratio": builtin / builtin_ref,
        "see_nodes_per_s": see,
        "see_cost": builtin / see,
        "spread_roots_ratio": spread["roots_1"] / spread["roots_2"],
        "spread_leaves_ratio": spread["leaves_1"] / spread["leaves_2"],
    }


def main(argv: list[str] | None = None) -> int:
    """Run standalone; the last line is machine-readable."""
    parser = argparse.ArgumentParser(prog="python benchmarks/_engine_eval.py")
    parser.add_argument("--short", action="store_true", help="a quarter of the positions")
    args = parser.parse_args(argv)
    short = args.short or os.environ.get("CALIGO_SHORT") == "1"
    r = measure(short)
    keys = ("sf_call_ms", "sf_ratio", "expansions_per_s", "builtin_nodes_per_s",
            "spread_roots_ratio", "spread_leaves_ratio")
    print("engine_eval " + " ".join(f"{k}={r[k]:.6g}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
