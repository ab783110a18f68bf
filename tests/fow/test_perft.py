"""Perft: FoW counts against the python-chess reference, legal counts against published values.

Sources of expected values:
- FoW perft: the slow reference `ref_perft` (python-chess pseudo-legal generator plus the FoW
  castling rule, tests/fow/test_movegen.py), recomputed in the test; deeper golden FoW counts in
  perft_positions.txt were produced by the same reference.
- Legal perft (`perft_legal`, our generator plus a chess legality filter): the published counts
  of the chessprogramming wiki "Perft Results" page, stored in perft_positions.txt (start depth 5
  = 4,865,609 and Kiwipete depth 4 = 4,085,603 are also in docs/design.md, "Reference values").
On a mismatch the failure message holds a divide: per-move counts, ours against the reference.
"""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

from caligo.fow.movegen import divide, perft, perft_legal, perft_make
from caligo.fow.position import POS_WORDS, from_fen, move_to_uci
from tests.conftest import SHORT
from tests.fow.test_movegen import RANDOM_FENS, ref_moves, ref_perft

DATA = Path(__file__).with_name("perft_positions.txt")


def _counts(text: str) -> dict[int, int]:
    return {int(d): int(n) for d, n in (item.split(":") for item in text.split())}


def load_positions() -> list[tuple[str, str, dict[int, int], dict[int, int]]]:
    """Parse perft_positions.txt into (name, fen, legal counts, FoW counts)."""
    out = []
    for line in DATA.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, fen, legal, fow = (part.strip() for part in line.split("|"))
        out.append((name, fen, _counts(legal), _counts(fow)))
    return out


POSITIONS = load_positions()
IDS = [p[0] for p in POSITIONS]


def ref_divide(fen: str, depth: int) -> dict[str, int]:
    board = chess.Board(fen)
    out = {}
    for m in ref_moves(board):
        board.push(m)
        out[m.uci()] = ref_perft(board, depth - 1)
        board.pop()
    return out


def divide_report(fen: str, depth: int) -> str:
    """Per-move counts, ours against the reference, mismatches first."""
    ours = {move_to_uci(m): n for m, n in divide(from_fen(fen), depth).items()}
    theirs = ref_divide(fen, depth)
    lines = [f"divide of {fen} at depth {depth} (move: ours reference)"]
    keys = sorted(set(ours) | set(theirs), key=lambda k: (ours.get(k) == theirs.get(k), k))
    for k in keys:
        mark = "" if ours.get(k) == theirs.get(k) else "   <-- differs"
        lines.append(f"  {k}: {ours.get(k)} {theirs.get(k)}{mark}")
    return "\n".join(lines)


def check_fow(fen: str, depth: int, expected: int | None = None) -> None:
    want = ref_perft(chess.Board(fen), depth) if expected is None else expected
    got = int(perft(from_fen(fen), depth))
    assert got == want, divide_report(fen, depth)


@pytest.mark.parametrize(("name", "fen", "legal", "fow"), POSITIONS, ids=IDS)
def test_fow_perft_matches_reference(name: str, fen: str, legal: dict, fow: dict) -> None:
    """Ours equals the python-chess reference at depth 3 (computed now) and the stored counts."""
    check_fow(fen, 3)
    for depth, n in fow.items():
        if depth <= 3:
            assert n == ref_perft(chess.Board(fen), depth)
        got = int(perft(from_fen(fen), depth))
        assert got == n, f"{name} depth {depth}: {got} != {n}\n" + (
            divide_report(fen, depth) if depth <= 3 else ""
        )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["start", "position3"] if SHORT else IDS)
def test_fow_perft_depth4_reference(name: str) -> None:
    """Depth 4 recomputed by the reference (0.2-7 s a position); CALIGO_SHORT=1 keeps two."""
    fen = next(p[1] for p in POSITIONS if p[0] == name)
    check_fow(fen, 4)


@pytest.mark.parametrize(("name", "fen", "legal", "fow"), POSITIONS, ids=IDS)
def test_legal_perft_published(name: str, fen: str, legal: dict, fow: dict) -> None:
    """With a chess legality filter the generator gives the published perft counts."""
    pos = from_fen(fen)
    for depth, n in legal.items():
        got = int(perft_legal(pos, depth))
        if got != n:
            board = chess.Board(fen)
            rows = []
            for m, c in sorted(divide(pos, depth, legal=True).items()):
                board.push(chess.Move.from_uci(move_to_uci(m)))
                ref = _pychess_legal_perft(board, depth - 1) if depth <= 3 else None
                board.pop()
                rows.append(f"  {move_to_uci(m)}: {c} {ref}")
            pytest.fail(f"{name} depth {depth}: {got} != {n}\n" + "\n".join(rows))


def _pychess_legal_perft(board: chess.Board, depth: int) -> int:
    if depth == 0:
        return 1
    total = 0
    for m in board.legal_moves:
        board.push(m)
        total += _pychess_legal_perft(board, depth - 1)
        board.pop()
    return total


@pytest.mark.parametrize(("name", "fen", "legal", "fow"), POSITIONS, ids=IDS)
def test_perft_make_equals_bulk(name: str, fen: str, legal: dict, fow: dict) -> None:
    """Make/unmake at every leaf counts what bulk counting counts, and restores the position."""
    pos = from_fen(fen)
    before = pos.copy()
    for depth in (1, 2, 3):
        assert perft_make(pos, depth) == perft(pos, depth)
    assert np.array_equal(pos, before)
    assert pos.shape == (POS_WORDS,)


def test_random_positions_perft2() -> None:
    """Depth-2 FoW perft over random-play positions equals the reference."""
    fens = RANDOM_FENS[:: 3 if SHORT else 2]
    assert len(fens) > 100
    for fen in fens:
        check_fow(fen, 2)


def test_terminal_after_king_capture() -> None:
    """A position without a king has no children, whatever the depth (reference agrees)."""
    fen = "8/8/8/8/8/8/8/R3K3 b Q - 0 1"
    assert int(perft(from_fen(fen), 3)) == 0 == ref_perft(chess.Board(fen), 3)
    # white can capture the king at once: that line ends and counts only at depth 1
    fen = "4k3/8/8/8/8/8/8/4R2K w - - 0 1"
    check_fow(fen, 3)
