"""Colours, pieces and moves at the front door, against python-chess's own values.

Expected values come from python-chess: `chess.WHITE` is True and names white,
`chess.Move.from_uci`/`uci()` and `chess.Board.push` define what a move is, `chess.Piece`
symbols define the letters.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from caligo.fow.errors import ColorError, MoveError
from caligo.fow.movegen import legal_moves
from caligo.fow.observation import observe
from caligo.fow.position import Position, from_fen, move_to_uci
from caligo.fow.values import Color, Move, Piece, PieceType, color
from tests.fow.test_movegen import RANDOM_FENS, ref_moves


def test_python_chess_colours_are_never_read_backwards() -> None:
    # issue 11 / usability #49: observe(pos, chess.WHITE) used to return black's observation
    pos = from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1")
    white, black = observe(pos, 0), observe(pos, 1)
    assert white != black
    for spelling in (chess.WHITE, Color.WHITE, 0, "white", "White", "w", np.bool_(True)):
        assert observe(pos, spelling) == white, spelling
        assert color(spelling) is Color.WHITE
    for spelling in (chess.BLACK, Color.BLACK, 1, "black", "b", np.int64(1)):
        assert observe(pos, spelling) == black, spelling
        assert color(spelling) is Color.BLACK
    assert observe(pos, chess.WHITE).player is Color.WHITE
    for bad in (2, -1, 0.0, "red", None, "1"):
        with pytest.raises(ColorError, match="invalid color"):
            color(bad)
    assert str(Color.BLACK) == "black" and Color.WHITE.other is Color.BLACK


def test_pieces_use_python_chess_letters() -> None:
    for symbol in "PNBRQKpnbrqk":
        piece = Piece.from_symbol(symbol)
        ref = chess.Piece.from_symbol(symbol)
        assert piece.symbol() == str(piece) == ref.symbol()
        assert piece.color == color(ref.color)
        assert PieceType.from_chess(ref.piece_type) is piece.piece_type
        assert Piece.from_code(piece.code) == piece
    with pytest.raises(TypeError, match="PieceType"):
        Piece(chess.KNIGHT, chess.WHITE)  # type: ignore[arg-type]  # 1-based python-chess int
    assert Piece(PieceType.KNIGHT, chess.WHITE) == Piece.from_symbol("N")


def test_moves_round_trip_through_uci_and_python_chess() -> None:
    seen = 0
    for fen in RANDOM_FENS[::5]:
        pos = from_fen(fen)
        for code in legal_moves(pos):
            move = Move.from_code(code)
            ref = chess.Move.from_uci(move_to_uci(code))
            assert move.uci() == str(move) == ref.uci()
            assert Move.from_uci(ref.uci()) == move == Move.from_chess(ref)
            assert move.to_chess() == ref
            assert move.matches(code)
            seen += 1
    assert seen > 1000
    assert Move("e2", "e4") == Move.from_uci("e2e4") == Move(12, 28)
    assert repr(Move.from_uci("e7e8q")) == "Move.from_uci('e7e8q')"
    for bad in ("e2e9", "e2e2", "e7e8k", "0000", "e2-e4", "", "e2e4qq"):
        with pytest.raises(MoveError) as info:
            Move.from_uci(bad)
        assert repr(bad) in str(info.value)


def test_position_front_door_against_python_chess() -> None:
    # usability #50, #52: printable board, short repr, piece_at with names, push of UCI text,
    # Move and chess.Move, push_san; the board after each push equals python-chess's.
    rng = random.Random(8)
    pos = Position()
    board = chess.Board()
    assert str(pos) == str(board)
    assert repr(pos) == f"Position({board.fen()!r})"
    assert pos.piece_at("e1") == Piece.from_symbol("K") and pos.piece_at("e4") is None
    assert pos.piece_at(chess.D8) == Piece.from_symbol("q")
    for ply in range(60):
        moves = pos.legal_moves()
        if not moves:
            break
        assert {m.uci() for m in moves} == {m.uci() for m in ref_moves(board)}
        move = rng.choice(moves)
        ref = move.to_chess()
        kind = ply % 4
        want = board.piece_at(move.to_square)
        if board.is_en_passant(ref):
            want = chess.Piece(chess.PAWN, not board.turn)
        if kind == 0:
            captured = pos.push(move)
        elif kind == 1:
            captured = pos.push(move.uci())
        elif kind == 2:
            captured = pos.push(ref)
        else:
            captured = pos.push_san(pos.san(move))
        board.push(ref)
        assert (captured is None) == (want is None)
        if want is not None:
            assert captured is not None and captured.symbol() == want.symbol()
        assert pos.fen() == board.fen(en_passant="fen")
        assert str(pos) == str(board)
        if board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
            assert pos.is_over() and pos.legal_moves() == []
            break
    with pytest.raises(MoveError, match=r"'a1a1'|invalid"):
        pos.push("a1a1")
    with pytest.raises(TypeError):
        hash(pos)  # mutable, like chess.Board: key() or fen() are the dictionary keys


def test_illegal_and_malformed_pushes_name_the_move() -> None:
    pos = Position()
    for bad in ("e2e5", chess.Move.from_uci("e2e5"), Move.from_uci("e2e5")):
        with pytest.raises(MoveError, match=r"illegal (uci )?move in .*'e2e5'"):
            pos.push(bad)
    with pytest.raises(MoveError, match=r"illegal move in .*'b8a1'"):
        pos.push(12345)  # a code that is no move here: named by its UCI text
    for bad in (None, 1.5, True, chess.Move.null()):
        with pytest.raises(MoveError):
            pos.push(bad)  # type: ignore[arg-type]
    assert pos == Position()


def test_the_package_is_the_front_door() -> None:
    # usability #39: `from caligo import fow` gives the entry points, as `import chess` does
    import caligo.fow as fow
    from caligo.errors import CaligoError

    assert sorted(fow.__all__) == sorted(set(fow.__all__))
    for name in fow.__all__:
        assert hasattr(fow, name), name
    for error in (fow.FowError, fow.FenError, fow.MoveError, fow.PgnError, fow.BeliefError):
        assert issubclass(error, CaligoError) and issubclass(error, ValueError)
    # the module docstring's example
    pos = fow.Position()
    pos.push("e2e4")
    obs = fow.observe(pos, fow.BLACK)
    belief = fow.BeliefSet.initial("black").update_opponent_move(obs)
    assert len(belief) == 20 and pos in belief
    assert isinstance(belief.sample(1)[0], fow.Position)
    assert repr(belief) == "<BeliefSet black ply=1 |P|=20 exact>"
    assert repr(obs).startswith("<Observation black '") and obs.dark_fen() in repr(obs)
    assert repr(fow.Game()) == f"<Game {fow.STARTING_FEN!r} ply=0 result=*>"


def test_importing_the_package_stays_light() -> None:
    # the names load on first use (as caligo's own do): `import caligo.fow` brings in neither
    # numba (which imports scipy) nor the kernels
    import subprocess
    import sys

    heavy = ("numba", "scipy", "caligo.fow.position", "caligo.fow.belief", "pyspiel")
    code = (
        "import sys, caligo.fow; "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules)); "
        "caligo.fow.Position; print('caligo.fow.position' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=120)
    assert done.stdout.split() == ["True"]
