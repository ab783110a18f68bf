"""The PGN for standard chess programs (`caligo.play.pgn.standard_pgn`).

Expected values come from python-chess (a chess rules implementation and PGN reader we did not
write): `chess.pgn.read_game` must read every move `standard_pgn` writes and report no error,
and the moves it holds are exactly the FoW game's moves up to the first one python-chess's
`Board.is_legal` refuses. The Fog of War PGN itself is read by python-chess only up to that
move (the limitation docs/web.md states), which the first test shows.
"""

from __future__ import annotations

import io
import random

import chess
import chess.pgn

from caligo.fow.game import Game
from caligo.fow.notation import write_pgn
from caligo.fow.position import move_to_uci
from caligo.play.pgn import standard_cut, standard_pgn
from tests.conftest import SHORT


def fow_pgn(ucis: list[str], start_fen: str = chess.STARTING_FEN, result: str = "*") -> str:
    game = Game(start_fen)
    codes = []
    for uci in ucis:
        codes.append(next(m for m in game.legal_moves() if move_to_uci(m) == uci))
        game.push(codes[-1])
    headers = {"White": "Alpha", "Black": "Beta", "Termination": "king capture"}
    return write_pgn(codes, start_fen, headers, result)


def read(text: str) -> chess.pgn.Game:
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    return game


def test_check_ignored_then_the_king_taken() -> None:
    # 2. Qh5 gives check; 2... a6 ignores it (FoW allows it, chess does not); 3. Qxe8 takes the king
    moves = ["e2e4", "f7f6", "d1h5", "a7a6", "h5e8"]
    text = fow_pgn(moves, result="1-0")
    fow = read(text)
    assert fow.errors  # python-chess refuses the Variant tag and stops at 2... a6
    assert len(list(fow.mainline_moves())) == 3
    std = read(standard_pgn(text))
    assert std.errors == []
    assert [m.uci() for m in std.mainline_moves()] == moves[:3]
    assert "Variant" not in std.headers
    assert std.headers["Result"] == "1-0" and std.headers["White"] == "Alpha"
    assert std.headers["Termination"] == "king capture"
    assert std.headers["FogOfWar"] == "standard chess stops after 3 of 5 plies, at 2... a6"
    last = std.end()
    assert "2... a6 3. Qxe8 1-0" in last.comment
    assert standard_cut(chess.STARTING_FEN, moves).first == "2... a6"


def test_castling_through_check_from_a_set_up_position() -> None:
    # f1 is attacked by the rook on f8: FoW allows O-O through it, chess does not
    fen = "5r1k/8/8/8/8/8/8/4K2R w K - 0 1"
    text = fow_pgn(["e1g1", "h8g8"], fen)
    std = read(standard_pgn(text))
    assert std.errors == []
    assert list(std.mainline_moves()) == []
    assert std.board().fen() == fen  # the FEN tag survives
    assert "1. O-O Kg8" in std.comment


def test_a_standard_game_is_kept_whole() -> None:
    moves = ["e2e4", "e7e5", "g1f3", "b8c6"]
    std = read(standard_pgn(fow_pgn(moves)))
    assert std.errors == [] and [m.uci() for m in std.mainline_moves()] == moves
    assert "FogOfWar" not in std.headers and std.end().comment == ""
    assert standard_cut(chess.STARTING_FEN, moves).first is None


def test_random_games_read_without_errors_up_to_the_first_fow_only_move() -> None:
    rng = random.Random(3)
    cut_somewhere = 0
    for _ in range(20 if SHORT else 100):
        game = Game()
        while not game.is_over() and game.ply < 200:
            game.push(rng.choice(game.legal_moves()))
        moves = [move_to_uci(m) for m in game.moves]
        text = fow_pgn(moves, result=game.outcome.result if game.outcome else "*")
        std = read(standard_pgn(text))
        assert std.errors == [], std.errors
        written = [m.uci() for m in std.mainline_moves()]
        assert written == moves[: len(written)]
        board = chess.Board()  # python-chess's own judgement of where the standard moves stop
        for uci in written:
            board.push_uci(uci)
        if len(written) < len(moves):
            cut_somewhere += 1
            assert not board.is_legal(chess.Move.from_uci(moves[len(written)]))
    assert cut_somewhere > 0
