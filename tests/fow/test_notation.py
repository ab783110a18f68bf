"""SAN / UCI / PGN.

Expected SAN comes from python-chess `Board.san` wherever the FoW and chess move sets give the same
disambiguation and no check mark (python-chess adds "+"/"#", stripped here); the FoW-only cases
(a pinned piece still counts for disambiguation, king captures) are written by hand from the PGN
standard's SAN rules.
"""

from __future__ import annotations

import io
import random

import chess
import chess.pgn
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
        moves = record.moves
        text = write_pgn(moves, fen, {"White": "A", "Black": 'B "quoted"'}, record.result)
        assert '[Variant "Fog of War"]' in text
        assert all(len(line) <= 80 for line in text.splitlines())
        game = read_pgn(text)
        assert list(game.moves) == moves
        assert game.move_list() == [Move.from_code(m) for m in moves]
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


# --- issue 11: what the writer writes the reader reads; results agree with the moves ------------


@pytest.mark.parametrize(
    ("headers", "start", "why"),
    [
        ({"Annotator": "two\nlines"}, STARTING_FEN, "invalid value"),
        ({"Annotator": "cr\rhere"}, STARTING_FEN, "invalid value"),
        ({"": "x"}, STARTING_FEN, "invalid tag name"),
        ({"White Elo": "2000"}, STARTING_FEN, "invalid tag name"),
        ({"Name[": "x"}, STARTING_FEN, "invalid tag name"),
        ({"FEN": "4k3/8/8/8/8/8/8/4K3 w - - 0 1"}, STARTING_FEN, "tag FEN"),
        ({"FEN": STARTING_FEN}, "4k3/8/8/8/8/8/8/4K3 w - - 0 1", "tag FEN"),
        ({"SetUp": "0"}, "4k3/8/8/8/8/8/8/4K3 w - - 0 1", "tag SetUp"),
        ({"SetUp": "yes"}, STARTING_FEN, "tag SetUp"),
        ({"Result": "1-0"}, STARTING_FEN, "tag Result"),
        ({"Variant": "Chess960"}, STARTING_FEN, "tag Variant"),
    ],
)
def test_write_pgn_refuses_what_read_pgn_would_refuse(
    headers: dict[str, str], start: str, why: str
) -> None:
    with pytest.raises(PgnError, match=why):
        write_pgn([], start, headers, "*")


def test_write_pgn_keeps_agreeing_tags() -> None:
    fen = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"
    text = write_pgn([], fen, {"FEN": fen, "SetUp": "1", "Result": "*", "Variant": "fogofwar"})
    game = read_pgn(text)
    assert game.start_fen == fen and text.count("[FEN ") == 1 and text.count("[SetUp ") == 1
    assert "[SetUp" not in write_pgn([], STARTING_FEN, {"SetUp": "0", "FEN": STARTING_FEN})


def test_results_must_agree_with_the_moves() -> None:
    # 1.e4 f6 2.Qh5 a6 3.Qxe8: white captures the king (Obscuro, appendix A: white wins)
    pos = from_fen(STARTING_FEN)
    moves = []
    for san in ("e4", "f6", "Qh5", "a6", "Qxe8"):
        m = parse_san(pos, san)
        moves.append(m)
        make_move(pos, m, np.empty(UNDO_WORDS, dtype=np.uint64))
    for wrong in ("0-1", "1/2-1/2", "*"):
        with pytest.raises(PgnError, match="contradicts the moves"):
            write_pgn(moves, result=wrong)
    text = write_pgn(moves, result="1-0")
    game = read_pgn(text)
    assert game.result == "1-0" and game.outcome is not None
    assert game.outcome.termination.value == "king capture"
    body = "1. e4 f6 2. Qh5 a6 3. Qxe8"
    for wrong in ("0-1", "1/2-1/2", "*"):
        with pytest.raises(PgnError, match="contradicts the moves") as info:
            read_pgn(f'[Event "x"]\n\n{body} {wrong}\n')
        assert info.value.line == 3
    with pytest.raises(PgnError, match="after the end of the game") as info:
        read_pgn(f"{body} d6 1-0\n")
    assert info.value.line == 1 and "'d6'" in str(info.value)
    # the result token and the Result tag must agree
    with pytest.raises(PgnError, match="Result tag '0-1' contradicts"):
        read_pgn('[Result "0-1"]\n\n1. e4 e5 1-0\n')
    # a result decided off the board (resignation) needs no king capture
    assert read_pgn('[Result "0-1"]\n\n1. e4 e5 0-1\n').outcome is None
    # a threefold repetition is a draw at once; the rules' result must be written
    shuffle = "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8"
    assert read_pgn(f"{shuffle} 1/2-1/2\n").outcome is not None
    with pytest.raises(PgnError, match="contradicts the moves"):
        read_pgn(f"{shuffle} *\n")


def test_bom_percent_lines_glyphs_and_game_numbers() -> None:
    one = write_pgn([], STARTING_FEN, {"Event": "one"})
    two = write_pgn([parse_san(from_fen(STARTING_FEN), "e4")], STARTING_FEN, {"Event": "two"})
    text = "\ufeff% exported by hand\n" + one + "\n%another escape line\n" + two
    games = read_pgns(text)
    assert [g.headers["Event"] for g in games] == ["one", "two"]
    assert read_pgn(text, 2).headers["Event"] == "two"
    with pytest.raises(PgnError, match="expected one game, found 2"):
        read_pgn(text)
    with pytest.raises(PgnError, match="no game 3: the pgn text holds 2"):
        read_pgn(text, 3)
    # a broken game does not hide the others when one is picked by number
    broken = '[Event "bad"]\n\n1. e4 e5 2. Ke3 *\n\n' + two
    assert read_pgn(broken, 2).headers["Event"] == "two"
    with pytest.raises(PgnError, match="illegal san"):
        read_pgn(broken, 1)
    game = read_pgn("\ufeff1. e4 ! e5 ?! 2. Nf3 !! Nc6 ?? *\n")
    assert [m.uci() for m in game.move_list()] == ["e2e4", "e7e5", "g1f3", "b8c6"]


def _exported_chess_games(n: int, seed: int) -> list[chess.pgn.Game]:
    """Random legal chess games (python-chess), 30 plies, with comments, NAGs and a variation
    at a random ply, as python-chess builds them for its exporter."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        game = chess.pgn.Game()
        game.headers["Event"] = f"random {i}"
        node: chess.pgn.GameNode = game
        board = chess.Board()
        branch = rng.randrange(1, 25)
        for ply in range(30):
            moves = list(board.legal_moves)
            if not moves or board.is_repetition(3):
                break
            move = rng.choice(moves)
            if ply == branch and len(moves) > 1:
                side = node.add_variation(next(m for m in moves if m != move))
                side.comment = "a side line"
            node = node.add_main_variation(move)
            if rng.random() < 0.2:
                node.comment = rng.choice(["short", "two\nlines", "with ; semicolon"])
            if rng.random() < 0.2:
                node.nags.add(rng.choice([1, 2, 3, 4, 5, 6, 14]))
            board.push(move)
        out.append(game)
    return out


def test_pgn_syntax_agrees_with_python_chess() -> None:
    # Expected: python-chess's reader (`chess.pgn.read_game`) on python-chess's own exports
    # (comments, NAGs, variations, several games, a BOM and a % line in front). Chess games are
    # FoW games unless FoW SAN needs more disambiguation (a pinned rival): those raise.
    games = _exported_chess_games(60, seed=3)
    text = "\ufeff% random games\n" + "\n\n".join(str(g) for g in games) + "\n"
    handle = io.StringIO(text)
    theirs = []
    while (g := chess.pgn.read_game(handle)) is not None:
        theirs.append([m.uci() for m in g.mainline_moves()])
    assert len(theirs) == len(games)
    agreed = ambiguous = 0
    for i, moves in enumerate(theirs, start=1):
        try:
            ours = read_pgn(text, i)
        except PgnError as exc:
            assert "ambiguous san" in str(exc)
            ambiguous += 1
            continue
        assert [m.uci() for m in ours.move_list()] == moves
        assert ours.headers["Event"] == f"random {i - 1}"
        agreed += 1
    assert agreed >= 50
