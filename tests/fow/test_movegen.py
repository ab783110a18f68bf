"""FoW move generation against a slow reference built on python-chess.

Reference (`ref_moves`): python-chess's pseudo-legal generator
(`chess.Board.generate_pseudo_legal_moves`, which already allows moving into check and capturing
the king) without its castling moves, plus castling by the FoW rule written out here: the right
(python-chess `clean_castling_rights`) and empty squares between king and rook, nothing about
attacked squares (Obscuro, appendix A; chess.com). A position without one of the kings has no
moves (the game is over).
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
from numba import types

from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.errors import TooManyMovesError
from caligo.fow.movegen import (
    MAX_MOVES,
    count_moves,
    gen_moves,
    legal_moves,
    perft,
    perft_legal,
    perft_make,
)
from caligo.fow.position import (
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    from_fen,
    make_move,
    move_kind,
    move_to_uci,
)

# (rook square, king from, king to, squares that must be empty)
_FOW_CASTLES = {
    chess.WHITE: (
        (chess.H1, chess.E1, chess.G1, (chess.F1, chess.G1)),
        (chess.A1, chess.E1, chess.C1, (chess.B1, chess.C1, chess.D1)),
    ),
    chess.BLACK: (
        (chess.H8, chess.E8, chess.G8, (chess.F8, chess.G8)),
        (chess.A8, chess.E8, chess.C8, (chess.B8, chess.C8, chess.D8)),
    ),
}


def ref_moves(board: chess.Board) -> list[chess.Move]:
    """Return the FoW moves of `board` (python-chess pseudo-legal + FoW castling)."""
    if board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
        return []
    out = [m for m in board.generate_pseudo_legal_moves() if not board.is_castling(m)]
    rights = board.clean_castling_rights()
    for rook, kfrom, kto, between in _FOW_CASTLES[board.turn]:
        if rights & chess.BB_SQUARES[rook] and not any(board.piece_at(s) for s in between):
            out.append(chess.Move(kfrom, kto))
    return out


def ref_perft(board: chess.Board, depth: int) -> int:
    """Return FoW perft by the python-chess reference."""
    if depth == 0:
        return 1
    moves = ref_moves(board)
    if depth == 1:
        return len(moves)
    total = 0
    for m in moves:
        board.push(m)
        total += ref_perft(board, depth - 1)
        board.pop()
    return total


def ref_fen(board: chess.Board) -> str:
    """FEN with the en-passant square after every double push (our convention)."""
    return board.fen(en_passant="fen")


def random_fens(n_games: int, max_plies: int, seed: int) -> list[str]:
    """Return the FENs of every position of `n_games` random FoW games (python-chess + FoW)."""
    rng = random.Random(seed)
    fens = []
    for _ in range(n_games):
        board = chess.Board()
        for _ in range(max_plies):
            fens.append(ref_fen(board))
            moves = ref_moves(board)
            if not moves:
                break
            board.push(rng.choice(moves))
    return fens


def ours(fen: str) -> set[str]:
    return {move_to_uci(m) for m in legal_moves(from_fen(fen))}


def theirs(fen: str) -> set[str]:
    return {m.uci() for m in ref_moves(chess.Board(fen))}


RANDOM_FENS = random_fens(12, 160, seed=7)


def test_random_positions_match_reference() -> None:
    assert len(RANDOM_FENS) > 300
    for fen in RANDOM_FENS:
        a, b = ours(fen), theirs(fen)
        assert a == b, f"{fen}: ours-only {sorted(a - b)}, reference-only {sorted(b - a)}"


def test_count_moves_equals_gen_moves() -> None:
    buf = np.empty(MAX_MOVES, dtype=np.uint16)
    for fen in RANDOM_FENS:
        pos = from_fen(fen)
        assert count_moves(pos) == gen_moves(pos, buf), fen


def test_no_duplicate_moves() -> None:
    for fen in RANDOM_FENS[::5]:
        moves = legal_moves(from_fen(fen))
        assert len(moves) == len(set(moves)), fen


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        # castling out of check (rook on e-file) and through check (bishop on f-file line)
        ("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", {"e1g1", "e1c1"}),
        ("4r1k1/8/8/8/8/8/8/R3K2R w KQ - 0 1", {"e1g1", "e1c1"}),
        ("5rk1/8/8/8/8/8/8/R3K2R w KQ - 0 1", {"e1g1", "e1c1"}),
        ("2r1k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", {"e1g1", "e1c1"}),
        # a piece between king and rook blocks; b1 matters for O-O-O even though the king skips it
        ("4k3/8/8/8/8/8/8/RN2K1NR w KQ - 0 1", set()),
        # rights gone
        ("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", set()),
        ("r3k2r/8/8/8/8/8/8/4K3 b kq - 0 1", {"e8g8", "e8c8"}),
    ],
)
def test_fow_castling(fen: str, expected: set[str]) -> None:
    """Expected sets written by hand from the FoW castling rule (Obscuro, appendix A)."""
    pos = from_fen(fen)
    castles = {move_to_uci(m) for m in legal_moves(pos) if move_kind(m) == KIND_CASTLING}
    assert castles == expected
    assert castles == {u for u in theirs(fen) if u in ("e1g1", "e1c1", "e8g8", "e8c8")}


def test_king_capture_and_moving_into_check_are_moves() -> None:
    """Hand-checked: FoW keeps king captures and moves into check (Obscuro, appendix A)."""
    into_check = ours("4k3/8/8/8/8/8/3r4/4K2Q w - - 0 1")
    assert {"e1e2", "e1d1", "e1f2", "e1d2"} <= into_check  # all but d2 walk into the rook
    assert "e4e8" in ours("4k3/8/8/8/4Q3/8/8/4K3 w - - 0 1")  # the queen takes the king
    assert "e1e2" in ours("4k3/8/8/8/8/8/8/4K3 w - - 0 1")


def test_en_passant_after_any_double_push() -> None:
    pos = from_fen("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1")
    ep = [m for m in legal_moves(pos) if move_kind(m) == KIND_EN_PASSANT]
    assert [move_to_uci(m) for m in ep] == ["e5d6"]
    # ep square set but no pawn to capture: no en-passant move
    pos = from_fen("4k3/8/8/3p4/8/8/8/4K3 w - d6 0 1")
    assert not [m for m in legal_moves(pos) if move_kind(m) == KIND_EN_PASSANT]


def test_promotions_to_four_pieces() -> None:
    pos = from_fen("1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1")
    promos = {move_to_uci(m) for m in legal_moves(pos) if move_kind(m) == KIND_PROMOTION}
    assert promos == {f"a7{t}{p}" for t in ("a8", "b8") for p in "nbrq"}


def test_no_moves_after_king_capture() -> None:
    assert legal_moves(from_fen("8/8/8/8/8/8/8/4K3 b - - 0 1")) == []


def test_side_without_any_move() -> None:
    """White is boxed in by its own pieces: no FoW move at all (checked by the reference too)."""
    fen = "KBBBBBBB/PPPPPPPP/8/8/8/8/8/7k w - - 0 1"
    assert ours(fen) == theirs(fen) == set()
    assert count_moves(from_fen(fen)) == 0


def test_buffer_never_overrun() -> None:
    """gen_moves returns the true count but writes only into the buffer it is given."""
    pos = from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    buf = np.full(20, 7, dtype=np.uint16)
    assert gen_moves(pos, buf[:10]) == 48  # Kiwipete has 48 moves (chessprogramming wiki)
    assert (buf[10:] == 7).all()


def array_from_board(fen: str) -> np.ndarray:
    """A position array filled from python-chess's board, bypassing `from_fen`'s checks (the
    way a hand-built array reaches the kernels)."""
    board = chess.Board(fen)
    pos = np.zeros(16, dtype=np.uint64)
    for color in (chess.WHITE, chess.BLACK):
        for piece in range(1, 7):
            pos[(0 if color else 6) + piece - 1] = np.uint64(board.pieces_mask(piece, color))
    pos[12] = np.uint64(0 if board.turn else 1)
    pos[14] = np.uint64(64)
    pos[15] = np.uint64(1 << 32)
    return pos


KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# issue 11: 273 FoW moves, more than the old 256-move buffer (perft 2 came out 1255)
CROWDED = "QQQQQQQB/Q6Q/Q6Q/Q6Q/Q6Q/Q6Q/QQ5Q/1KQQkQQQ w - - 0 1"



def test_no_move_is_lost_past_the_old_buffer() -> None:
    # Expected: python-chess's pseudo-legal generator (ref_moves) and its perft (ref_perft).
    pos = array_from_board(CROWDED)
    assert len(legal_moves(pos)) == count_moves(pos) == len(ref_moves(chess.Board(CROWDED)))
    assert count_moves(pos) == 273
    assert perft(pos, 2) == perft_make(pos, 2) == ref_perft(chess.Board(CROWDED), 2) == 1340


def test_more_moves_than_the_buffer_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    """No position `from_fen` accepts has more than MAX_MOVES moves (see its docstring), so the
    overflow path is tested with a 10-move buffer: every kernel reports it, the boundary raises
    (or, for move lists, grows its buffer); nothing is dropped silently."""
    import caligo.fow.belief_update as belief_module
    import caligo.fow.movegen as movegen
    from caligo.fow.belief import BeliefSet
    from caligo.fow.observation import observe

    kernels = (movegen._perft_kernel, movegen._perft_make_kernel, movegen._perft_legal_kernel)
    pos = from_fen(KIWIPETE)  # 48 moves
    # a root under the cap whose children are over it: black's king has 5 moves, then white
    # has 15 (rook, king, castling)
    deep = from_fen("4k3/8/8/8/8/8/8/4K2R b K - 0 1")
    for root in (pos, deep):
        before = root.copy()
        for kernel in kernels:
            assert kernel(root, 3, 10) == movegen.MOVES_OVERFLOW
            assert kernel(root, 3, MAX_MOVES) > 0
            assert np.array_equal(root, before)  # make/unmake restored the position
    monkeypatch.setattr(movegen, "MAX_MOVES", 10)
    assert len(legal_moves(pos)) == 48  # the move list grows its buffer
    for count in (perft, perft_make, perft_legal):
        with pytest.raises(TooManyMovesError, match="MAX_MOVES = 10"):
            count(pos, 2)
    # belief updates: black's P before white's move (opponent update) and white's own move
    monkeypatch.setattr(belief_module, "MAX_MOVES", 10)
    move = legal_moves(pos)[0]
    child = pos.copy()
    make_move(child, move, np.empty(4, dtype=np.uint64))
    with pytest.raises(TooManyMovesError, match="MAX_MOVES = 10"):
        BeliefSet.initial(1, KIWIPETE).update_opponent_move(observe(child, 1))
    with pytest.raises(TooManyMovesError, match="MAX_MOVES = 10"):
        BeliefSet.initial(0, KIWIPETE).update_own_move(move, observe(child, 0))


def test_kernel_signatures() -> None:
    """Kernels compile for the fixed interface types (uint64 positions, uint16 buffers)."""
    pos = from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    buf = np.empty(MAX_MOVES, dtype=np.uint16)
    gen_moves(pos, buf)
    count_moves(pos)
    sig = gen_moves.signatures[0]
    assert sig[0] == types.Array(types.uint64, 1, "C")
    assert sig[1] == types.Array(types.uint16, 1, "C")
    assert len(SQUARE_NAMES) == 64
