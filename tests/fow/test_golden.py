"""Golden files: what each player observes, ply by ply, in five short scripted games.

The files in tests/fow/golden/ were generated once (`python tests/fow/test_golden.py --regen`)
and reviewed by hand: the checks below read the *files* (not fresh output) and verify the key
squares against chess reasoning written out in each test, so the golden data is not our own
output echoed back. `test_golden_files_are_reproduced` then pins the kernel to the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest

from caligo.fow.observation import observe_reference
from caligo.fow.position import BLACK, WHITE
from caligo.fow.transcript import Transcript, transcripts_from_moves

GOLDEN = Path(__file__).resolve().parent / "golden"

GAMES: dict[str, list[str]] = {
    # 1.e4 b6 2.g3 Ba6 3.Bg2 e6 4.Nf3 Nc6 5.O-O (f1 attacked by Ba6: through check) Bxf1 6.Bxf1
    "castling_through_check": "e2e4 b7b6 g2g3 c8a6 f1g2 e7e6 g1f3 b8c6 e1g1 a6f1 g2f1".split(),
    # 1.e4 Nf6 2.e5 d5 3.exd6 e.p. cxd6
    "en_passant": "e2e4 g8f6 e4e5 d7d5 e5d6 c7d6".split(),
    # 1.e4 e5 (both pawns blocked, blockers unseen) 2.Nf3 Nf6 (the knights now see them)
    "blocked_pawn": "e2e4 e7e5 g1f3 g8f6".split(),
    # 1.a4 b5 2.axb5 a6 3.bxa6 Bb7 4.axb7 Nc6 5.bxa8=Q
    "promotion": "a2a4 b7b5 a4b5 a7a6 b5a6 c8b7 a6b7 b8c6 b7a8q".split(),
    # 1.f3 e5 2.g4 Qh4 (unseen by white) 3.a3 Qxe1: the king is captured
    "king_capture": "f2f3 e7e5 g2g4 d8h4 a2a3 h4e1".split(),
}


def _generate(name: str) -> dict[str, Any]:
    white, black = transcripts_from_moves(GAMES[name])
    return {"game": name, "moves": GAMES[name], "white": white.to_dict(), "black": black.to_dict()}


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    return data


def _obs(name: str, color: str, ply: int) -> str:
    """The dark FEN board field `color` saw after `ply` (1-based), from the golden file."""
    text: str = _load(name)[color]["plies"][ply - 1]["observation"]
    return text


def _at(dark_fen: str, square: str) -> str:
    """Return '?' (fog), '.' (visible empty) or the piece letter on `square` of a dark FEN."""
    board = dark_fen.split()[0]
    rank, file = int(square[1]), "abcdefgh".index(square[0])
    row = board.split("/")[8 - rank]
    f = 0
    for ch in row:
        if ch.isdigit():
            if f <= file < f + int(ch):
                return "."
            f += int(ch)
        else:
            if f == file:
                return ch
            f += 1
    raise AssertionError(square)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_files_are_reproduced(name: str) -> None:
    assert _load(name) == _generate(name)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_files_equal_the_python_chess_reference(name: str) -> None:
    board = chess.Board()
    data = _load(name)
    for ply, uci in enumerate(data["moves"], start=1):
        board.push(chess.Move.from_uci(uci))
        for color, player in (("white", WHITE), ("black", BLACK)):
            assert _obs(name, color, ply) == observe_reference(board, player).dark_fen()


@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_files_parse_as_transcripts(name: str) -> None:
    data = _load(name)
    for color, player in (("white", WHITE), ("black", BLACK)):
        t = Transcript.from_dict(data[color])
        assert t.player == player and len(t.entries) == len(data["moves"])
        own = [e.own_move for e in t.entries if e.own_move]
        assert own == data["moves"][player::2]


def test_castling_through_check() -> None:
    # after 4...Nc6 (ply 8) white may castle: Ba6's diagonal b5-c4-d3-e2-f1 is open (e2 empty)
    # and f1 is attacked, yet FoW castling only needs the right and empty f1, g1: g1 visible.
    assert _at(_obs("castling_through_check", "white", 8), "g1") == "."
    # the attacker is not seen: Bg2 reaches f1, h1, h3, f3 (then e4, own pawn); nothing white
    # reaches a6
    assert _at(_obs("castling_through_check", "white", 8), "a6") == "?"
    # after 5.O-O (ply 9): white king g1, rook f1; black's Ba6 sees along to f1: the rook
    after = _obs("castling_through_check", "black", 9)
    assert _at(after, "f1") == "R" and _at(after, "e2") == "." and _at(after, "g1") == "?"
    # white's castling rights are gone from white's observation; black never sees white's
    assert _obs("castling_through_check", "white", 9).split()[2] == "-"
    assert _obs("castling_through_check", "black", 9).split()[2] == "kq"
    # 5...Bxf1 (ply 10): white sees the bishop on f1 (king g1 and Bg2 are next to it)
    assert _at(_obs("castling_through_check", "white", 10), "f1") == "b"


def test_en_passant_visibility() -> None:
    # after 2...d5 (ply 4): white's e5 pawn may take e.p. on d6, so white sees d5 (the pawn that
    # can be captured) and d6, and the ep field says d6
    w = _obs("en_passant", "white", 4)
    assert _at(w, "d5") == "p" and _at(w, "d6") == "." and w.split()[3] == "d6"
    # black just moved: no ep for black; the e5 pawn is not seen by black (Nf6 sees e4, d5,
    # g4, h5, g8; the d-pawn is on d5 and its diagonals c4, e4 are empty)
    b = _obs("en_passant", "black", 4)
    assert b.split()[3] == "-" and _at(b, "e5") == "?"
    # after 3.exd6 (ply 5): the d5 pawn is gone; black's c7 pawn sees d6 (capture) -> 'P'
    assert _at(_obs("en_passant", "black", 5), "d6") == "P"
    # white's d6 pawn: push square d7 (empty since ...d5) and captures on c7, e7 (black pawns);
    # d5 behind it is reached by nothing white (the d2 pawn blocks the queen): fog
    w5 = _obs("en_passant", "white", 5)
    assert (_at(w5, "d7"), _at(w5, "c7"), _at(w5, "e7"), _at(w5, "d5")) == (".", "p", "p", "?")


def test_blocked_pawn() -> None:
    # after 1...e5 (ply 2): e4 and e5 block each other; neither pawn reveals its blocker and
    # nothing else reaches those squares (Qd1: e2-f3-g4-h5; Bf1: e2-d3-c4-b5-a6; Ng1: e2 f3 h3)
    assert _at(_obs("blocked_pawn", "white", 2), "e5") == "?"
    assert _at(_obs("blocked_pawn", "black", 2), "e4") == "?"
    # 2.Nf3 (ply 3): the knight attacks e5 -> white now sees the black pawn there
    assert _at(_obs("blocked_pawn", "white", 3), "e5") == "p"
    # 2...Nf6 (ply 4): black's knight attacks e4 -> black sees the white pawn
    assert _at(_obs("blocked_pawn", "black", 4), "e4") == "P"


def test_promotion() -> None:
    # before promoting (ply 8, after 4...Nc6): the b7 pawn sees a8 (rook to capture); b8 is
    # empty after ...Nc6 so the push square is seen too; c8 is empty (bishop left) -> not seen
    # by the pawn, but is it seen by anything else? Nothing of white reaches c8: fog.
    w = _obs("promotion", "white", 8)
    assert _at(w, "a8") == "r" and _at(w, "b8") == "." and _at(w, "c8") == "?"
    # 5.bxa8=Q (ply 9): a white queen on a8, seen by both (black's Qd8 sees along b8, c8 to a8)
    assert _at(_obs("promotion", "white", 9), "a8") == "Q"
    assert _at(_obs("promotion", "black", 9), "a8") == "Q"


def test_king_capture() -> None:
    # after 2...Qh4 (ply 4): the queen on h4 is unseen by white: the h2 pawn's double push is
    # blocked (h4 occupied) so it only reveals h3; g4's diagonals are f5 and h5
    w = _obs("king_capture", "white", 4)
    assert _at(w, "h4") == "?" and _at(w, "h3") == "."
    # f2 is empty since 1.f3 and the king e1 sees it: the e1-h4 diagonal is open but unseen
    assert _at(w, "f2") == "." and _at(w, "g3") == "?"
    # 3...Qxe1 (ply 6): white has no king left; the queen on e1 is next to white's pieces
    w = _obs("king_capture", "white", 6)
    assert "K" not in w.split()[0] and _at(w, "e1") == "q"


def _regen() -> None:
    for name in GAMES:
        (GOLDEN / f"{name}.json").write_text(json.dumps(_generate(name), indent=1) + "\n")


if __name__ == "__main__":
    if "--regen" in sys.argv:
        _regen()


# --- transcripts: JSON round trip, errors, belief from a transcript alone ----------------------


def test_transcript_json_round_trip(tmp_path: Path) -> None:
    from caligo.fow.transcript import read_transcript, write_transcript

    white, black = transcripts_from_moves(GAMES["promotion"])
    for t in (white, black):
        assert Transcript.from_json(t.to_json()) == t
        assert Transcript.from_json(t.to_json(indent=None)) == t
        write_transcript(t, tmp_path / "t.json")
        assert read_transcript(tmp_path / "t.json") == t


@pytest.mark.parametrize(
    ("mutate", "quoted"),
    [
        (lambda d: "not json {", "not json {"),
        (lambda d: json.dumps([1, 2]), "[1, 2]"),
        (lambda d: json.dumps({**d, "format": "pgn"}), "'pgn'"),
        (lambda d: json.dumps({**d, "player": "red"}), "'red'"),
        (lambda d: json.dumps({**d, "start": "8/8 w"}), "'8/8 w'"),
        (lambda d: json.dumps({**d, "plies": d["plies"][1:]}), "expected 1"),
        (
            lambda d: json.dumps({**d, "plies": [{**d["plies"][0], "own_move": None}]}),
            "own_move None",
        ),
        (
            lambda d: json.dumps({**d, "plies": [{**d["plies"][0], "observation": "8/8 w - -"}]}),
            "'8/8 w - -'",
        ),
        # issue 11: JSON true is not the number 1 (Python's True == 1 let both through)
        (lambda d: json.dumps({**d, "version": True}), "True"),
        (lambda d: json.dumps({**d, "plies": [{**d["plies"][0], "ply": True}]}), "True"),
        (lambda d: json.dumps({**d, "plies": [{**d["plies"][0], "ply": 1.0}]}), "1.0"),
        (lambda d: json.dumps({**d, "plies": [{**d["plies"][0], "own_move": "e2-e4"}]}), "e2-e4"),
    ],
)
def test_bad_transcript_raises_quoting_the_input(mutate: Any, quoted: str) -> None:
    from caligo.fow.transcript import TranscriptError

    white, _ = transcripts_from_moves(GAMES["en_passant"])
    with pytest.raises(TranscriptError) as err:
        Transcript.from_json(mutate(white.to_dict()))
    assert quoted in str(err.value)


def test_belief_from_a_transcript_alone_contains_the_truth() -> None:
    from caligo.fow.belief import BeliefSet
    from caligo.fow.position import STARTING_FEN, from_fen, make_move, move_from_uci
    from caligo.fow.transcript import belief_sizes

    moves = GAMES["castling_through_check"]
    white, black = transcripts_from_moves(moves)
    sizes = {p: belief_sizes(t) for p, t in ((WHITE, white), (BLACK, black))}
    pos = from_fen(STARTING_FEN)
    beliefs = [BeliefSet.initial(WHITE), BeliefSet.initial(BLACK)]
    undo = np.empty(4, dtype=np.uint64)
    for ply, uci in enumerate(moves):
        move = move_from_uci(pos, uci)
        mover = int(pos[12])
        make_move(pos, move, undo)
        for p, t in ((WHITE, white), (BLACK, black)):
            obs = t.entries[ply].observation
            b = beliefs[p]
            beliefs[p] = b.update_own_move(move, obs) if p == mover else b.update_opponent_move(obs)
            assert beliefs[p].contains(pos)
            assert sizes[p][ply] == (len(beliefs[p]), len(beliefs[p]), True)
    # black's first observation: black sees ranks 5-8 only and no first white move reaches
    # rank 5, so all 20 white first moves stay possible
    assert sizes[BLACK][0][0] == 20
