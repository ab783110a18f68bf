"""The built-in evaluator against its python-chess reference, and its decided positions.

Expected values: `evaluate_reference` computes the same formula on python-chess's board (its
piece counts, its attack tables for "the side to move can capture the king", and
`observe_reference`, built on python-chess's move generator, for the visible squares). The
decided cases are the FoW rules (Obscuro, appendix A; docs/fow.md): a missing king is a win for
the capturer, a king the side to move attacks is captured next, and a side without any FoW move
draws. The hand-made positions say in a comment why their value is what it is.
"""

from __future__ import annotations

import math
import os

import chess
import numpy as np
import pytest

from caligo.fow.evaluate import (
    BLACK_WINS,
    DRAW,
    UNDECIDED,
    WHITE_WINS,
    SimpleEvalConfig,
    SimpleEvaluator,
    _evaluate_kernel,
    decided,
    evaluate_reference,
    to_mover_view,
)
from caligo.fow.expand import ExpandBuffers, Terminal, expand
from caligo.fow.position import BLACK, STARTING_FEN, WHITE, from_fen, move_to_uci, to_fen
from tests.fow.test_expand import random_positions, run_threads

SHORT = os.environ.get("CALIGO_SHORT") == "1"


def _children_of_random_positions(parents: int, seed: int) -> np.ndarray:
    """Every child of `parents` random playout positions, stacked (uint64 (n, 16))."""
    buf = ExpandBuffers.allocate()
    rows = []
    for pos in random_positions(parents, seed):
        n = expand(pos, buf)
        rows.append(buf.children[:n].copy())
    return np.concatenate(rows)


@pytest.mark.slow
def test_kernel_equals_python_chess_reference() -> None:
    positions = _children_of_random_positions(150 if SHORT else 600, seed=21)
    values = SimpleEvaluator().evaluate(positions)
    codes = decided(positions)
    counts = {UNDECIDED: 0, WHITE_WINS: 0, BLACK_WINS: 0, DRAW: 0}
    for i, pos in enumerate(positions):
        assert math.isclose(values[i], evaluate_reference(pos), abs_tol=1e-12), to_fen(pos)
        counts[int(codes[i])] += 1
    assert len(positions) > 3000
    assert counts[UNDECIDED] > 1000
    # random play leaves kings hanging and captures them: both colours' wins occur
    assert counts[WHITE_WINS] > 0 and counts[BLACK_WINS] > 0, counts


def test_decided_positions_are_exact() -> None:
    cases = (
        # black's king is gone: white captured it
        ("8/8/8/8/8/8/8/4K3 b - - 0 1", 1.0, WHITE_WINS),
        # white's king is gone
        ("4k3/8/8/8/8/8/8/8 w - - 0 1", -1.0, BLACK_WINS),
        # white to move, its rook on e1 attacks the black king on e8: white takes it next
        ("4k3/8/8/8/8/8/8/K3R3 w - - 0 1", 1.0, WHITE_WINS),
        # the same board with black to move: black just left its king capturable? no -- black
        # is to move and merely in check; undecided
        ("4k3/8/8/8/8/8/8/K3R3 b - - 0 1", None, UNDECIDED),
        # black to move, its knight on f3 attacks the white king on e1 (white left it hanging)
        ("4k3/8/8/8/8/5n2/8/4K3 b - - 0 1", -1.0, BLACK_WINS),
        # black pawn on d2 attacks e1 diagonally: a pawn's capture sees the king
        ("4k3/8/8/8/8/8/3p4/4K3 b - - 0 1", -1.0, BLACK_WINS),
        # a pawn does not capture straight ahead: e2 pawn facing the e1 king is no threat
        ("4k3/8/8/8/8/8/4p3/4K3 b - - 0 1", None, UNDECIDED),
        # black has no FoW move at all (docs/fow.md): a draw
        ("7K/8/8/8/8/8/pppppppp/kbbbbbbb b - - 0 1", 0.0, DRAW),
    )
    ev = SimpleEvaluator()
    for fen, value, code in cases:
        pos = from_fen(fen)[None, :].copy()
        got = float(ev.evaluate(pos)[0])
        assert int(decided(pos)[0]) == code, fen
        assert math.isclose(got, evaluate_reference(pos[0]), abs_tol=1e-12), fen
        if value is None:
            assert -1.0 < got < 1.0, fen
        else:
            assert got == value, fen


@pytest.mark.slow
def test_exchange_kernel_equals_its_python_chess_recursion() -> None:
    """With `exchange`, the swap-list kernel against `evaluate_reference`'s recursion over
    python-chess boards (its `attackers`, x-rays appearing as pieces leave the board). The
    positions must hold exchanges that change the value, or the check says nothing."""
    positions = _children_of_random_positions(80 if SHORT else 300, seed=22)
    config = SimpleEvalConfig(exchange=True)
    values = SimpleEvaluator(config).evaluate(positions)
    plain = SimpleEvaluator().evaluate(positions)
    for i, pos in enumerate(positions):
        assert math.isclose(values[i], evaluate_reference(pos, config), abs_tol=1e-12), (
            to_fen(pos))
    changed = np.abs(values - plain) > 1e-9
    assert changed.sum() > 200, changed.sum()


@pytest.mark.parametrize(("fen", "gain"), [
    # white to move: Qxd5 exd5 loses the queen for a pawn; no capture pays: 0
    ("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1", 0.0),
    # the d5 pawn undefended: Qxd5 wins it
    ("4k3/8/8/3p4/8/8/3Q4/4K3 w - - 0 1", 100.0),
    # Rxd5 Rxd5 Rxd5: the second white rook x-rays through the first; black's rook and pawn
    # for one white rook: 100 + 500 - 500
    ("3rk3/8/8/3p4/8/8/3R4/3RK3 w - - 0 1", 100.0),
    # a king never takes a defended piece (it would be taken): Kxd2 only if d2 is undefended
    ("4k3/8/8/8/8/8/3n3r/3K4 w - - 0 1", 0.0),
    ("4k3/8/8/8/8/8/3n4/3K4 w - - 0 1", 300.0),
    # black to move: ...bxc3 wins a knight for nothing (a pawn takes, the knight was alone)
    ("4k3/8/8/8/1p6/2N5/8/4K3 b - - 0 1", 300.0),
])
def test_exchange_gains_by_hand(fen: str, gain: float) -> None:
    pos = from_fen(fen)[None, :].copy()
    base = SimpleEvalConfig(per_square=0.0)
    plain = float(SimpleEvaluator(base).evaluate(pos)[0])
    value = float(SimpleEvaluator(SimpleEvalConfig(per_square=0.0, exchange=True)).evaluate(pos)[0])
    sign = 1.0 if " w " in fen else -1.0
    cp = math.atanh(plain) * 600.0 + sign * gain
    assert math.isclose(value, math.tanh(cp / 600.0), abs_tol=1e-12)


def test_a_child_that_hangs_the_queen_scores_below_the_quiet_ones() -> None:
    """The leaf of tests/fow/test_stockfish.py, where Stockfish's own depth-1 scores put Qxd5
    (exd5) near 0 and every quiet queen move near +6 pawns: the plain material count likes the
    capture best, the exchange check ranks it last."""
    parent = from_fen("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1")
    buf = ExpandBuffers.allocate()
    n = expand(parent, buf)
    moves = [move_to_uci(int(m)) for m in buf.moves[:n]]
    plain = SimpleEvaluator().children(parent, buf.children[:n], buf.moves[:n])
    see = SimpleEvaluator(SimpleEvalConfig(exchange=True)).children(
        parent, buf.children[:n], buf.moves[:n])
    hangs = moves.index("d2d5")
    assert plain[hangs] == plain.max()
    assert see[hangs] == see.min() and see[hangs] < math.tanh(100 / 600)


def test_children_left_hanging_are_losses_for_the_mover() -> None:
    # white king e1, black rook a2 guards the second rank: Ke1-e2/d2/f2 walk into it; every
    # such child is a loss for white (-1), every other child is undecided.
    parent = from_fen("4k3/8/8/8/8/8/r7/4K3 w - - 0 1")
    buf = ExpandBuffers.allocate()
    n = expand(parent, buf)
    values = SimpleEvaluator().children(parent, buf.children[:n], buf.moves[:n])
    board = chess.Board(to_fen(parent))
    for i in range(n):
        child = chess.Board(to_fen(buf.children[i]))
        king = child.king(chess.WHITE)
        assert king is not None
        hanging = child.is_attacked_by(chess.BLACK, king)
        assert (values[i] == -1.0) == hanging, board.fen()
    assert (values[:n] == -1.0).sum() == 3


def test_terminal_children_are_exactly_plus_minus_one() -> None:
    buf = ExpandBuffers.allocate()
    ev = SimpleEvaluator()
    seen = 0
    for pos in random_positions(400, seed=8):
        n = expand(pos, buf)
        values = ev.children(pos, buf.children[:n], buf.moves[:n])
        for i in range(n):
            if buf.terminal[i] == Terminal.KING_CAPTURE:
                assert values[i] == buf.values[i] and abs(values[i]) == 1.0
                seen += 1
            assert -1.0 <= values[i] <= 1.0
    assert seen > 0


def test_start_position_is_level_and_material_counts() -> None:
    ev = SimpleEvaluator()
    start = from_fen(STARTING_FEN)[None, :].copy()
    assert ev.evaluate(start)[0] == 0.0
    # white is a queen up, nothing else differs in material
    no_black_queen = from_fen("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    value = float(ev.evaluate(no_black_queen[None, :].copy())[0])
    # both still see their own four ranks (32 squares): black's emptied d8 is seen by its king
    assert math.isclose(value, math.tanh(900 / 600), abs_tol=1e-12)
    # after 1. e4 white sees ranks 1-2 (16), rank 3 but e3 (7), rank 4 (8), e5 b5 h5 (pawn,
    # bishop, queen) and a6 (bishop): 35 squares; black still its 32: 3 squares = 12 cp
    after_e4 = from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1")
    value = float(ev.evaluate(after_e4[None, :].copy())[0])
    assert math.isclose(value, math.tanh(3 * 4 / 600), abs_tol=1e-12)


def test_mover_view_and_config() -> None:
    values = np.array([0.5, -1.0, 0.0])
    assert list(to_mover_view(values, WHITE)) == [0.5, -1.0, 0.0]
    assert list(to_mover_view(values, BLACK)) == [-0.5, 1.0, -0.0]
    with pytest.raises(ValueError, match="mover"):
        to_mover_view(values, 2)
    with pytest.raises(ValueError, match="scale"):
        SimpleEvalConfig(scale=0.0)
    with pytest.raises(ValueError, match="queen"):
        SimpleEvalConfig(queen=float("nan"))
    ev = SimpleEvaluator(SimpleEvalConfig(per_square=0.0))
    pos = from_fen("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    assert math.isclose(float(ev.evaluate(pos[None, :].copy())[0]), math.tanh(1.5))


def test_bad_input_is_refused() -> None:
    ev = SimpleEvaluator()
    with pytest.raises(TypeError, match="positions"):
        ev.evaluate(np.zeros((2, 16), dtype=np.int64))
    with pytest.raises(ValueError, match="needed"):
        ev.evaluate(np.zeros((2, 16), dtype=np.uint64), np.empty(1))


def test_threads_share_one_evaluator() -> None:
    positions = _children_of_random_positions(200, seed=4)
    ev = SimpleEvaluator()
    expected = ev.evaluate(positions)
    bad: list[int] = []

    def work() -> None:
        for _ in range(5):
            if not np.array_equal(ev.evaluate(positions), expected):
                bad.append(1)

    run_threads(work, work)
    assert not bad


def test_kernel_signature() -> None:
    SimpleEvaluator().evaluate(from_fen(STARTING_FEN)[None, :].copy())
    sigs = [str(s) for s in _evaluate_kernel.signatures]
    assert any(s.startswith("(Array(uint64, 2, 'C'") for s in sigs), sigs
