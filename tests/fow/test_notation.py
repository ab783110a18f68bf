"""SAN / UCI / PGN.

Expected SAN comes from python-chess `Board.san` wherever the FoW and chess move sets give the same
disambiguation and no check mark (python-chess adds "+"/"#", stripped here); the FoW-only cases
(a pinned piece still counts for disambiguation, king captures) are written by hand from the PGN
standard's SAN rules.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from caligo.fow.errors import MoveError, PgnError
from caligo.fow.game import Game
from caligo.fow.movegen import legal_moves
from caligo.fow.notation import PgnGame, move_to_san, parse_san, read_pgn, read_pgns, write_pgn
from caligo.fow.position import (
    STARTING_FEN,
    UNDO_WORDS,
    from_fen,
    make_move,
    move_to_uci,
)
from caligo.fow.values import Move
from tests.fow.test_movegen import RANDOM_FENS


def _pychess_san(fen: str, uci: str) -> str | None:
    """python-chess SAN without check marks if the move is legal chess, else None."""
    board = chess.Board(fen)
    move = chess.Move.from_uci(uci)
    if move not in board.legal_moves:
        return None
    return board.san(move).rstrip("+#")


def test_san_round_trip_on_random_positions() -> None:
    checked = same = 0
    for fen in RANDOM_FENS[::3]:
        pos = from_fen(fen)
        sans = set()
        for m in legal_moves(pos):
            san = move_to_san(pos, m)
            assert parse_san(pos, san) == m, (fen, san)
            sans.add(san)
            ref = _pychess_san(fen, move_to_uci(m))
            if ref is not None:
                # FoW may need more disambiguation than chess (pinned rivals count), never less
                assert san == ref or (san[0] in "NBRQK" and len(san) > len(ref)), (fen, san, ref)
                same += san == ref
            checked += 1
        assert len(sans) == len(legal_moves(pos))  # SAN is unique within a position
    assert checked > 1000 and same > 0.9 * checked * 0.5


def test_san_fow_specific() -> None:
    # the d5 knight is pinned in chess, so chess writes Nb4; in FoW both knights can go there
    fen = "r1bq1b1r/ppp3pp/2n1k3/3np3/2B5/2N2Q2/PPPP1PPP/R1B1K2R b KQ - 3 8"
    pos = from_fen(fen)
    with pytest.raises(MoveError, match="ambiguous"):
        parse_san(pos, "Nb4")
    assert move_to_uci(parse_san(pos, "Ncb4")) == "c6b4"
    assert move_to_uci(parse_san(pos, "Ndb4")) == "d5b4"
    # king capture and castling through check
    pos = from_fen("4k3/8/8/8/4Q3/8/8/R3K2R w KQ - 0 1")
    assert move_to_uci(parse_san(pos, "Qxe8")) == "e4e8"
    assert move_to_san(pos, parse_san(pos, "Qxe8")) == "Qxe8"
    pos = from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1".replace("4k3", "5rk1"))
    assert move_to_uci(parse_san(pos, "O-O")) == "e1g1"
    assert move_to_uci(parse_san(pos, "0-0-0")) == "e1c1"
    assert move_to_san(pos, parse_san(pos, "O-O")) == "O-O"
    # promotions and suffixes
    pos = from_fen("1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1")
    assert move_to_uci(parse_san(pos, "axb8=N+")) == "a7b8n"
    assert move_to_uci(parse_san(pos, "a8Q!")) == "a7a8q"
    assert move_to_san(pos, parse_san(pos, "a8=R")) == "a8=R"


@pytest.mark.parametrize("san", ["", "Nf9", "e5", "Ke2", "O-O", "Qxd8", "P@e4", "e8=K", "xx"])
def test_bad_san_raises_quoting_it(san: str) -> None:
    with pytest.raises(MoveError) as info:
        parse_san(from_fen(STARTING_FEN), san)
    assert repr(san) in str(info.value)


def _random_game(seed: int, plies: int) -> tuple[str, list[int]]:
    rng = random.Random(seed)
    pos = from_fen(STARTING_FEN)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    moves = []
    for _ in range(plies):
        ms = legal_moves(pos)
        if not ms:
            break
        m = rng.choice(ms)
        moves.append(m)
        make_move(pos, m, undo)
    return STARTING_FEN, moves


def test_pgn_round_trip() -> None:
    for seed in range(8):
        fen, moves = _random_game(seed, 120)
        record = Game(fen)
        for m in moves:
            if record.is_over():
                break
            record.push(m)
        moves = record.move_codes
        text = write_pgn(moves, fen, {"White": "A", "Black": 'B "quoted"'}, record.result)
        assert '[Variant "Fog of War"]' in text
        assert all(len(line) <= 80 for line in text.splitlines())
        game = read_pgn(text)
        assert list(game.moves) == [Move.from_code(m) for m in moves]
        assert game.headers["Black"] == 'B "quoted"'
        assert game.result == record.result
        assert game.outcome == record.outcome


def test_pgn_from_a_position_and_several_games() -> None:
    fen = "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 12"
    text = write_pgn([parse_san(from_fen(fen), "O-O")], fen, result="1/2-1/2")
    assert '[SetUp "1"]' in text and f'[FEN "{fen}"]' in text and "12... O-O 1/2-1/2" in text
    two = read_pgns(text + "\n" + write_pgn([], STARTING_FEN))
    assert [len(g.moves) for g in two] == [1, 0]
    assert two[0].start_fen == fen and two[0].result == "1/2-1/2"


def test_pgn_reads_comments_variations_nags() -> None:
    text = """[Event "x"]
[Variant "Fog of War"]

1. e4 {a comment
over two lines} e5 $1 (1... c5 2. Nf3) 2. Nf3 ; rest of line
Nc6 3. Bb5 a6 1-0
"""
    game = read_pgn(text)
    assert [move_to_uci(m) for m in game.moves] == ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]
    assert game.result == "1-0"
    assert isinstance(game, PgnGame)


@pytest.mark.parametrize(
    ("text", "line", "quoted"),
    [
        ('[Event "x"]\n[Variant "Fog of War"]\n\n1. e4 e5 2. Ke3 *\n', 4, "1. e4 e5 2. Ke3 *"),
        ('[Event "x"\n\n1. e4 *\n', 1, '[Event "x"'),
        ('[Variant "Chess960"]\n\n1. e4 *\n', 1, "Chess960"),
        ('[Event "x"]\n\n1. e4 {open comment\n2. d4 *\n', 3, "1. e4 {open comment"),
        ('[Event "x"]\n\n1. e4 e5 1-0 2. d4\n', 3, "1. e4 e5 1-0 2. d4"),
        ('[Event "x"]\n\n1. e4 (1. d4 *\n', 3, "1. e4 (1. d4 *"),
    ],
)
def test_broken_pgn_raises_with_line(text: str, line: int | None, quoted: str) -> None:
    with pytest.raises(PgnError) as info:
        read_pgn(text)
    assert info.value.line == line
    assert quoted in str(info.value)
