"""Player views: built from observations only, legal moves known, fog unmistakable.

Expected values: the true move list of the position (part A's `legal_moves`) for the legal moves
a view derives from the observation alone; python-chess's board after the move (not ours) for the
own pieces a move leaves; for the hints, a scripted game (1.e4 d5 2.a3 dxe4:
white's e4 pawn is captured on e4, so white's hint is "lost e4").
"""

from __future__ import annotations

import json
import random

import chess
import numpy as np
import pytest

from caligo.fow.belief import BeliefSet
from caligo.fow.movegen import legal_moves
from caligo.fow.observation import observe
from caligo.fow.position import (
    BLACK,
    STARTING_FEN,
    UNDO_WORDS,
    WHITE,
    from_fen,
    make_move,
    move_from_uci,
    move_to_uci,
)
from caligo.fow.view import (
    legal_moves_uci,
    own_pieces_after,
    player_view,
    view_data,
    view_svg,
)

_UNDO = np.empty(UNDO_WORDS, dtype=np.uint64)


def test_legal_moves_from_the_observation_equal_the_true_ones() -> None:
    rng = random.Random(8)
    checked = 0
    for _ in range(150):
        pos = from_fen(STARTING_FEN)
        for _ply in range(120):
            moves = legal_moves(pos)
            if not moves or int(pos[5]) == 0 or int(pos[11]) == 0:
                break
            mover = int(pos[12])
            obs = observe(pos, mover)
            assert legal_moves_uci(obs) == sorted(move_to_uci(m) for m in moves)
            assert legal_moves_uci(observe(pos, 1 - mover)) == []
            checked += 1
            make_move(pos, rng.choice(moves), _UNDO)
    assert checked > 5000


def test_own_pieces_after_a_move_match_python_chess() -> None:
    """Random legal games in python-chess, castling, en passant and promotions included: the
    own pieces `own_pieces_after` predicts from the observation alone are python-chess's."""
    rng = random.Random(9)
    seen: set[str] = set()
    for _ in range(200):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 160:
            move = rng.choice(list(board.legal_moves))
            mover = WHITE if board.turn == chess.WHITE else BLACK
            obs = observe(from_fen(board.fen()), mover)
            kinds = (board.is_castling(move), board.is_en_passant(move), bool(move.promotion))
            seen.update(k for k, on in zip(("castle", "ep", "promo"), kinds, strict=True) if on)
            board.push(move)
            expected = tuple(int(board.pieces_mask(t, board.turn == chess.BLACK))
                             for t in chess.PIECE_TYPES)
            assert own_pieces_after(obs, move.uci()) == expected, (board.fen(), move)
    assert seen == {"castle", "ep", "promo"}
    with pytest.raises(ValueError, match="'e2e5' is not a legal move"):
        own_pieces_after(observe(from_fen(STARTING_FEN), WHITE), "e2e5")


def _play(pos: np.ndarray, *ucis: str) -> None:
    for uci in ucis:
        make_move(pos, move_from_uci(pos, uci), _UNDO)


def test_same_observation_gives_byte_identical_views() -> None:
    # black's P after 1.Nf3 Nc6 2.Nc3: different true positions, one observation
    pos = from_fen(STARTING_FEN)
    belief = BeliefSet.initial(BLACK)
    for uci in ("g1f3", "b8c6", "b1c3"):
        mover = int(pos[12])
        move = move_from_uci(pos, uci)
        make_move(pos, move, _UNDO)
        obs = observe(pos, BLACK)
        if mover == BLACK:
            belief = belief.update_own_move(move, obs)
        else:
            belief = belief.update_opponent_move(obs)
    truths = belief.positions()
    assert len(truths) > 100
    views = set()
    for truth in truths[:50]:
        o = observe(truth, BLACK)
        views.add((json.dumps(view_data(o, own_last_move="b8c6")), view_svg(o, None, "b8c6")))
    assert len(views) == 1
    assert len({t.tobytes() for t in truths[:50]}) == 50


def test_view_takes_an_observation_not_a_position() -> None:
    with pytest.raises(TypeError, match="Observation"):
        view_data(from_fen(STARTING_FEN))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Observation"):
        view_svg(from_fen(STARTING_FEN))  # type: ignore[arg-type]


def test_view_data_is_json_ready_and_says_what_is_fogged() -> None:
    obs = observe(from_fen(STARTING_FEN), WHITE)
    data = view_data(obs)
    assert json.loads(json.dumps(data)) == data
    # white sees ranks 1-4 at the start: 32 fog squares, ranks 5-8
    assert len(data["fog"]) == 32 and all(sq[1] in "5678" for sq in data["fog"])
    assert data["pieces"]["e1"] == "K" and "e8" not in data["pieces"]
    assert len(data["legal_moves"]) == 20 and data["your_turn"] is True
    assert data["castling"] == "KQ" and data["en_passant"] is None


def test_fog_is_drawn_hatched_and_never_like_an_empty_square() -> None:
    obs = observe(from_fen(STARTING_FEN), BLACK)
    svg = view_svg(obs)
    assert svg.count('class="fog"') == 32
    assert '<pattern id="fog"' in svg and 'fill="url(#fog)"' in svg
    # an empty visible square (e5 for black) is drawn with a board colour, not the fog pattern
    e5 = next(line for line in svg.splitlines() if 'data-square="e5"' in line)
    assert "url(#fog)" not in e5
    # black's view is drawn from black's side: a8 is at the bottom right
    a8 = next(line for line in svg.splitlines() if 'data-square="a8"' in line)
    assert 'x="335"' in a8 and 'y="335"' in a8


def test_hints_own_last_move_and_lost_piece() -> None:
    pos = from_fen(STARTING_FEN)
    _play(pos, "e2e4", "d7d5", "a2a3")
    after_own = observe(pos, WHITE)
    _play(pos, "d5e4")
    now = observe(pos, WHITE)
    view = player_view(now, after_own, "a2a3")
    assert view.lost == ["e4"] and view.own_last_move == "a2a3"
    # who took is not shown: nothing of white reaches e4 (Bf1 runs e2-d3-c4, Qd1 runs e2-f3,
    # Ng1 reaches e2/f3/h3, the d2 and f2 pawns' diagonals are c3/e3 and e3/g3), so e4 is fog
    assert "e4" in view.fog and "e4" not in view.pieces
    assert view_data(after_own, None, "a2a3")["hints"] == {"own_last_move": "a2a3", "lost": []}


def test_pieces_are_vector_drawings_of_the_visible_pieces_only() -> None:
    # usability #31: no font glyphs; one python-chess chess.svg drawing per piece kind shown,
    # placed on the squares the observation shows (black sees only its own 16 pieces here)
    import xml.etree.ElementTree as ET

    import chess.svg

    obs = observe(from_fen(STARTING_FEN), BLACK)
    svg = view_svg(obs)
    root = ET.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    uses = root.findall(".//svg:use", ns)
    assert len(uses) == 16 and {u.get("data-piece") for u in uses} == set("pnbrqk")
    assert all(u.get("href", "").startswith("#black-") for u in uses)
    for kind in ("pawn", "knight", "bishop", "rook", "queen", "king"):
        assert f'id="black-{kind}"' in svg and f'id="white-{kind}"' not in svg
    assert chess.svg.PIECES["k"] in svg
    assert not any(glyph in svg for glyph in "♙♘♗♖♕♔♟♞♝♜♛♚")
