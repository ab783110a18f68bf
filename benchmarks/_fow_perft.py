"""FoW perft speed against Stockfish `go perft` and python-chess, in one run.

- perft_vs_stockfish (R1): our FoW perft leaves per second (bulk counting at the last ply)
  divided by Stockfish's `go perft` nodes per second (legal moves, bulk counting) on the same
  positions and depths. Stockfish is Debian's package (/usr/games/stockfish) over raw UCI pipes,
  one thread. Target >= 1.0.
- perft_make_nps: our FoW perft nodes per second when every leaf move is made and unmade.
  Target >= 10 million.
- perft_vs_pychess (R2): our bulk FoW perft leaves per second over python-chess's pseudo-legal
  perft (bulk: `len(list(generate_pseudo_legal_moves()))` at the last ply). Target >= 100.
`measure(short)` returns the three numbers and prints a table while measuring.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import chess

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from caligo.fow.movegen import perft, perft_make
from caligo.fow.position import from_fen

STOCKFISH = "/usr/games/stockfish"

POSITIONS = {
    "start": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "kiwipete": "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "position3": "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "position4": "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "position5": "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
}
# depths: (bulk perft and Stockfish, make/unmake perft, python-chess)
DEPTHS = {
    "start": (6, 5, 4),
    "kiwipete": (5, 4, 3),
    "position3": (7, 6, 4),
    "position4": (5, 4, 3),
    "position5": (5, 4, 3),
}
SHORT_DEPTHS = {k: (a - 1, b - 1, c - 1) for k, (a, b, c) in DEPTHS.items()}


def _timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


_CASTLES = {
    chess.WHITE: (
        (chess.H1, chess.G1, chess.BB_F1 | chess.BB_G1),
        (chess.A1, chess.C1, chess.BB_B1 | chess.BB_C1 | chess.BB_D1),
    ),
    chess.BLACK: (
        (chess.H8, chess.G8, chess.BB_F8 | chess.BB_G8),
        (chess.A8, chess.C8, chess.BB_B8 | chess.BB_C8 | chess.BB_D8),
    ),
}


def _pychess_moves(board: chess.Board) -> list[chess.Move]:
    """FoW moves with python-chess: pseudo-legal moves, castling by the FoW rule."""
    moves = [m for m in board.generate_pseudo_legal_moves() if not board.is_castling(m)]
    rights = board.clean_castling_rights()
    king = board.king(board.turn)
    for rook, to, between in _CASTLES[board.turn]:
        if rights & chess.BB_SQUARES[rook] and not board.occupied & between and king is not None:
            moves.append(chess.Move(king, to))
    return moves


def _pychess_perft(board: chess.Board, depth: int) -> int:
    moves = _pychess_moves(board)
    if depth == 1:
        return len(moves)
    total = 0
    for m in moves:
        board.push(m)
        if board.king(chess.WHITE) is not None and board.king(chess.BLACK) is not None:
            total += _pychess_perft(board, depth - 1)
        board.pop()
    return total


class _Stockfish:
    """Minimal raw-UCI client (python-chess's engine wrapper is slower; docs/design.md)."""

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen(
            [path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._send("uci")
        self._wait("uciok")
        self._send("setoption name Threads value 1")
        self._send("isready")
        self._wait("readyok")

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _wait(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("stockfish exited")
            if line.startswith(prefix):
                return line

    def perft(self, fen: str, depth: int) -> tuple[int, float]:
        self._send(f"position fen {fen}")
        self._send("isready")
        self._wait("readyok")
        t0 = time.perf_counter()
        self._send(f"go perft {depth}")
        line = self._wait("Nodes searched")
        dt = time.perf_counter() - t0
        return int(line.split(":")[1]), dt

    def close(self) -> None:
        self._send("quit")
        self.proc.wait(timeout=10)


def measure(short: bool) -> dict[str, float]:
    """Measure R1, make/unmake nodes per second and R2; print a table; return the numbers."""
    depths = SHORT_DEPTHS if short else DEPTHS
    warm = from_fen(POSITIONS["start"])
    perft(warm, 3)  # compile or load the kernels before timing
    perft_make(warm, 3)
    sf = _Stockfish(STOCKFISH) if shutil.which(STOCKFISH) or Path(STOCKFISH).exists() else None
    print(
        f"{'position':<10} {'d':>2} {'FoW leaves':>13} {'ours M/s':>9} {'SF nodes':>13} "
        f"{'SF M/s':>8} {'make d':>6} {'make M/s':>9} {'py d':>4} {'py M/s':>7}"
    )
    ours_n = ours_t = sf_n = sf_t = make_n = make_t = py_n = py_t = 0.0
    ours_py_n = ours_py_t = 0.0
    for name, fen in POSITIONS.items():
        d_bulk, d_make, d_py = depths[name]
        pos = from_fen(fen)
        n, t = _timed(perft, pos, d_bulk)
        ours_n += n
        ours_t += t
        s_n, s_t = sf.perft(fen, d_bulk) if sf is not None else (0, float("nan"))
        sf_n += s_n
        sf_t += s_t
        mn, mt = _timed(perft_make, pos, d_make)
        make_n += mn
        make_t += mt
        pn, pt = _timed(_pychess_perft, chess.Board(fen), d_py)
        on, ot = _timed(perft, pos, d_py)
        reps = 1
        total_t = ot
        while total_t < 0.2:  # repeat the small run until the clock resolves it
            reps *= 4
            t0 = time.perf_counter()
            for _ in range(reps):
                perft(pos, d_py)
            total_t = time.perf_counter() - t0
            ot = total_t / reps
        if int(on) != pn:
            raise RuntimeError(f"{name}: ours {on} != python-chess {pn} at depth {d_py}")
        py_n += pn
        py_t += pt
        ours_py_n += on
        ours_py_t += ot
        print(
            f"{name:<10} {d_bulk:>2} {int(n):>13,} {n / t / 1e6:>9.1f} {s_n:>13,} "
            f"{s_n / s_t / 1e6:>8.1f} {d_make:>6} {mn / mt / 1e6:>9.1f} {d_py:>4} "
            f"{pn / pt / 1e6:>7.3f}"
        )
    if sf is not None:
        sf.close()
    ours_rate = ours_n / ours_t
    r1 = ours_rate / (sf_n / sf_t) if sf is not None else float("nan")
    make_nps = make_n / make_t
    # R2 compares ours and python-chess on the same (small) depths
    r2 = (ours_py_n / max(ours_py_t, 1e-9)) / (py_n / py_t)
    print(
        f"ours {ours_rate / 1e6:.1f} M leaves/s; Stockfish {sf_n / sf_t / 1e6:.1f} M nodes/s; "
        f"R1 = {r1:.2f} (target >= 1.0)"
    )
    print(f"make/unmake every leaf: {make_nps / 1e6:.1f} M nodes/s (target >= 10 M)")
    print(
        f"python-chess pseudo-legal {py_n / py_t / 1e6:.3f} M leaves/s; "
        f"R2 = {r2:.0f} (target >= 100)"
    )
    return {"perft_vs_stockfish": r1, "perft_make_nps": make_nps, "perft_vs_pychess": r2}


if __name__ == "__main__":
    res = measure("--short" in sys.argv[1:])
    print(" ".join(f"{k}={v:.6g}" for k, v in res.items()))
