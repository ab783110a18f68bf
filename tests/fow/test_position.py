"""Positions: FEN round trip, make/unmake and copy-make against python-chess, Zobrist, checker.

Reference for moves: python-chess `Board.push` (it plays pseudo-legal moves, king captures and
castling without attack checks too), compared through FEN with the en-passant square written
after every double push (`Board.fen(en_passant="fen")`), which is our convention.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
from numba import types

from caligo.fow.errors import FenError, MoveError
from caligo.fow.movegen import legal_moves
from caligo.fow.position import (
    NO_EP,
    POS_WORDS,
    STARTING_FEN,
    UNDO_WORDS,
    ZOBRIST,
    Position,
    apply_move,
    check_invariants,
    from_fen,
    king_captured,
    make_move,
    make_move16,
    missing_king,
    move_from,
    move_from_uci,
    move_kind,
    move_promo,
    move_to,
    move_to_uci,
    piece_at,
    square_attacked,
    to_fen,
    unmake_move,
    zobrist_key,
)
from tests.fow.test_movegen import RANDOM_FENS, ref_moves


def test_layout_of_the_start_position() -> None:
    pos = from_fen(STARTING_FEN)
    assert pos.dtype == np.uint64 and pos.shape == (POS_WORDS,)
    assert int(pos[0]) == 0xFF00  # white pawns on rank 2
    assert int(pos[5]) == 1 << 4  # white king e1
    assert int(pos[6 + 5]) == 1 << 60  # black king e8
    assert int(pos[12]) == 0 and int(pos[13]) == 15 and int(pos[14]) == NO_EP
    assert int(pos[15]) == 1 << 32  # halfmove 0, fullmove 1


def test_fen_round_trip() -> None:
    for fen in [STARTING_FEN, *RANDOM_FENS[::3]]:
        assert to_fen(from_fen(fen)) == fen
        assert chess.Board(fen).fen(en_passant="fen") == fen


@pytest.mark.parametrize(
    "fen",
    [
        "",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
        "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/ppppxppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkx - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KKkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -1 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w - - 0 1",
        "Pnbqkbnr/pppppppp/8/8/8/8/1PPPPPPP/RNBQKBNR w - - 0 1",
    ],
)
def test_bad_fen_raises_quoting_it(fen: str) -> None:
    with pytest.raises(FenError) as info:
        from_fen(fen)
    assert repr(fen) in str(info.value)


def test_four_field_fen_and_missing_king() -> None:
    assert to_fen(from_fen("8/8/8/8/8/8/8/4K3 b - -")) == "8/8/8/8/8/8/8/4K3 b - - 0 1"
    pos = from_fen("8/8/8/8/8/8/8/4K3 b - - 0 1")
    assert king_captured(pos) and missing_king(pos) == 1
    assert not king_captured(from_fen(STARTING_FEN)) and missing_king(from_fen(STARTING_FEN)) == -1


def test_move_bits_and_uci() -> None:
    m = make_move16(chess.E7, chess.E8, 1, 3)
    assert make_move16.nopython_signatures[0].return_type == types.uint16
    assert (move_from(m), move_to(m), move_kind(m), move_promo(m)) == (chess.E7, chess.E8, 1, 3)
    assert int(m) == chess.E7 | chess.E8 << 6 | 3 << 12 | 1 << 14
    assert move_to_uci(m) == "e7e8q" and move_to_uci(0) == "0000"
    pos = from_fen(STARTING_FEN)
    assert move_to_uci(move_from_uci(pos, "g1f3")) == "g1f3"
    for bad in ("e2e5", "e2", "z2e4", "e7e8k", "e1g1", "", "e2e4qq"):
        with pytest.raises(MoveError) as info:
            move_from_uci(pos, bad)
        assert repr(bad) in str(info.value)


def _ref_push(fen: str, uci: str) -> str:
    board = chess.Board(fen)
    board.push(chess.Move.from_uci(uci))
    return board.fen(en_passant="fen")


def test_make_apply_unmake_against_python_chess() -> None:
    """Every move of hundreds of random positions: copy-make, make and unmake."""
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    dst = np.empty(POS_WORDS, dtype=np.uint64)
    checked = 0
    for fen in RANDOM_FENS[::2]:
        pos = from_fen(fen)
        board = chess.Board(fen)
        for m in legal_moves(pos):
            uci = move_to_uci(m)
            want = _ref_push(fen, uci)
            target = board.piece_at(move_to(m))
            cap = apply_move(pos, m, dst)
            assert to_fen(dst) == want, (fen, uci)
            if move_kind(m) == 2:
                assert cap == 6 * (1 - int(pos[12]))  # en passant takes a pawn
            elif target is None:
                assert cap == -1
            else:
                assert cap == (0 if target.color else 6) + target.piece_type - 1
            before = pos.copy()
            assert make_move(pos, m, undo) == cap
            assert np.array_equal(pos, dst)
            unmake_move(pos, m, undo)
            assert np.array_equal(pos, before), (fen, uci)
            assert check_invariants(dst) == 0, (fen, uci)
            checked += 1
    assert checked > 3000


def test_make_move_rejects_empty_from_square() -> None:
    pos = from_fen(STARTING_FEN)
    before = pos.copy()
    assert make_move(pos, make_move16(chess.E4, chess.E5), np.empty(4, np.uint64)) == -2
    assert np.array_equal(pos, before)


def _ref_zobrist(pos: np.ndarray) -> int:
    """XOR of the table entries; the en-passant entry only when python-chess says a pawn of the
    side to move can capture there (`has_pseudo_legal_en_passant`: FoW has no check)."""
    key = 0
    for code in range(12):
        for sq in range(64):
            if (int(pos[code]) >> sq) & 1:
                key ^= int(ZOBRIST[code * 64 + sq])
    if int(pos[12]):
        key ^= int(ZOBRIST[768])
    key ^= int(ZOBRIST[769 + int(pos[13])])
    if chess.Board(to_fen(pos)).has_pseudo_legal_en_passant():
        key ^= int(ZOBRIST[785 + int(pos[14])])
    return key


def test_zobrist_against_reference_and_transpositions() -> None:
    live = 0
    for fen in RANDOM_FENS[::2]:
        pos = from_fen(fen)
        assert int(zobrist_key(pos)) == _ref_zobrist(pos)
        live += chess.Board(fen).has_pseudo_legal_en_passant()
    assert live > 0
    a, b = Position.start(), Position.start()
    for uci in ("g1f3", "g8f6", "b1c3"):
        a.push_uci(uci)
    for uci in ("b1c3", "g8f6", "g1f3"):
        b.push_uci(uci)
    assert a.key() == b.key() and a.fen().split()[:4] == b.fen().split()[:4]
    c = Position.from_fen(a.fen().replace(" b ", " w "))
    assert c.key() != a.key()
    # clocks do not change the key
    d = Position.from_fen(a.fen().rsplit(" ", 2)[0] + " 7 9")
    assert d.key() == a.key()


def test_invariant_checker_codes() -> None:
    pos = from_fen(STARTING_FEN)
    assert check_invariants(pos) == 0
    bad = pos.copy()
    bad[1] |= np.uint64(1)  # knight on a1 over the rook
    assert check_invariants(bad) == 1
    bad = pos.copy()
    bad[12] = np.uint64(2)
    assert check_invariants(bad) == 2
    bad = pos.copy()
    bad[3] &= ~np.uint64(1 << 7)  # rook h1 gone, right K kept
    assert check_invariants(bad) == 4
    bad = pos.copy()
    bad[14] = np.uint64(20)
    assert check_invariants(bad) == 5


def test_position_class() -> None:
    p = Position.start()
    assert len(p.legal_moves()) == 20 and p.turn == 0
    p.push_uci("e2e4")
    assert p.fen() == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    assert piece_at(p.arr, chess.E4) == 0 and p.piece_at(chess.E2) is None
    assert p.piece_at("e4") == p.piece_at(chess.E4) and str(p.piece_at("e4")) == "P"
    with pytest.raises(MoveError):
        p.push_uci("e2e4")
    q = p.copy()
    q.push_uci("e7e5")
    assert p != q and p == Position.from_fen(p.fen())
    assert not p.is_over()
    assert len({m.uci() for m in ref_moves(chess.Board(p.fen()))}) == len(p.legal_moves())


def test_square_attacked_against_python_chess() -> None:
    """square_attacked equals python-chess `Board.is_attacked_by` on random positions."""
    for fen in RANDOM_FENS[::6]:
        pos = from_fen(fen)
        board = chess.Board(fen)
        for sq in range(64):
            for color in (0, 1):
                want = board.is_attacked_by(chess.WHITE if color == 0 else chess.BLACK, sq)
                assert bool(square_attacked(pos, sq, color)) == want, (fen, sq, color)


# --- impossible FENs (issue 11) ---------------------------------------------------------------

# python-chess `Board.status` bits that make a FoW position impossible. Left out on purpose:
# the check bits (moving into check is legal in FoW, so the side not to move may be attacked
# by anything) and the missing king of the side to move (the position right after a king
# capture: FoW's game-over position, accepted by `from_fen`).
_IMPOSSIBLE = (
    chess.STATUS_TOO_MANY_KINGS
    | chess.STATUS_TOO_MANY_WHITE_PAWNS
    | chess.STATUS_TOO_MANY_BLACK_PAWNS
    | chess.STATUS_PAWNS_ON_BACKRANK
    | chess.STATUS_TOO_MANY_WHITE_PIECES
    | chess.STATUS_TOO_MANY_BLACK_PIECES
    | chess.STATUS_BAD_CASTLING_RIGHTS
    | chess.STATUS_INVALID_EP_SQUARE
)


def _pychess_rejects(fen: str) -> bool:
    board = chess.Board(fen)
    status = board.status()
    not_to_move = chess.STATUS_NO_BLACK_KING if board.turn else chess.STATUS_NO_WHITE_KING
    # python-chess's TOO_MANY_KINGS counts both colours together (> 2), so a missing king hides
    # a second king of the other colour; count per colour as its own rule ("at most one king")
    two_kings = any(chess.popcount(board.kings & board.occupied_co[c]) > 1 for c in chess.COLORS)
    return bool(status & (_IMPOSSIBLE | not_to_move)) or two_kings


@pytest.mark.parametrize(
    ("fen", "why"),
    [
        ("QQQQQQQB/Q6Q/Q6Q/Q6Q/Q6Q/Q6Q/QQ5Q/1KQQkQQQ w - - 0 1", "more than 16 pieces"),
        ("4k3/8/8/8/8/P7/PPPPPPPP/4K3 w - - 0 1", "more than 8 pawns"),
        ("8/8/8/8/8/8/8/8 w - - 0 1", "side that just moved has no king"),
        ("4k3/8/8/8/8/8/8/8 b - - 0 1", "side that just moved has no king"),
        ("rnbqkbnr/pppppppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2", "en-passant"),
        ("rnbqkbnr/ppp1pppp/8/4P3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2", "en-passant"),
        ("4k3/8/8/8/8/8/8/4K3 w - - 1_0 1", "clocks"),
        ("4k3/8/8/8/8/8/8/4K3 w - - +5 1", "clocks"),
        ("4k3/8/8/8/8/8/8/4K3 w - - \u0665 1", "clocks"),
        ("4k3/8/8/8/8/8/8/4K3 w - - 0 \u0661", "clocks"),
    ],
)
def test_impossible_fens_are_rejected(fen: str, why: str) -> None:
    with pytest.raises(FenError, match=why) as info:
        from_fen(fen)
    assert repr(fen) in str(info.value)
    if "clocks" not in why:
        assert _pychess_rejects(fen)  # python-chess calls it invalid too


def test_fen_validity_agrees_with_python_chess_on_random_placements() -> None:
    # Expected: python-chess `Board.status` restricted to the FoW-impossible bits (_IMPOSSIBLE).
    rng = random.Random(17)
    symbols = "PPPPPNBRQpppppnbrq"
    accepted = rejected = 0
    for _ in range(3000):
        board = chess.Board(None)
        for _ in range(rng.randrange(0, 36)):
            board.set_piece_at(rng.randrange(64), chess.Piece.from_symbol(rng.choice(symbols)))
        for king in "Kk":
            for _ in range(rng.choice((0, 1, 1, 1, 1, 1, 1, 2))):
                board.set_piece_at(rng.randrange(64), chess.Piece.from_symbol(king))
        board.turn = rng.random() < 0.5
        if rng.random() < 0.3:
            board.castling_rights = rng.choice([chess.BB_H1, chess.BB_A8 | chess.BB_H8])
        if rng.random() < 0.3:
            board.ep_square = rng.choice([chess.E3, chess.D6, chess.A6, chess.H3])
        fen = board.fen(en_passant="fen")
        try:
            from_fen(fen)
        except FenError:
            assert _pychess_rejects(fen), fen
            rejected += 1
        else:
            assert not _pychess_rejects(fen), fen
            accepted += 1
    assert accepted > 300 and rejected > 300


def test_side_to_move_without_king_is_game_over() -> None:
    # FoW (docs/fow.md): the side to move lost its king on the last move; the game is over and
    # the other side has won (Obscuro, appendix A: capturing the king wins).
    from caligo.fow.game import Game, Termination

    fen = "4k3/8/8/8/8/8/8/8 w - - 0 1"
    pos = Position.from_fen(fen)
    assert pos.is_over() and pos.legal_moves() == []
    game = Game(fen)
    assert game.outcome is not None and game.result == "0-1"
    assert game.outcome.termination is Termination.KING_CAPTURE and game.legal_moves() == []
