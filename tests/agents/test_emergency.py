"""The emergency move (`caligo.agents.emergency`): a one-ply static judgement of the visible
board, not a uniformly drawn move.

Expected values and where they come from:

- which squares the seen enemy pieces attack, and the cheapest of them: python-chess's
  `Board.attackers` on a board holding our pieces and the enemy pieces we see (the emergency
  move's own picture of the board), over positions of random FoW games;
- the moves in the hand-made positions: what a chess player plays there (capture the hanging
  queen, move the attacked queen away, do not step the king beside the enemy king), each
  position written so that exactly that set of moves scores best.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import chess
import numpy as np

from caligo.agents.emergency import KING_LOST, VALUES, _attack_maps, emergency_move, move_scores
from caligo.fow.game import Game
from caligo.fow.observation import Observation, observe
from caligo.fow.position import move_to_uci, to_fen


def _seen_board(fen: str, color: int) -> tuple[chess.Board, Observation]:
    """python-chess's board of what `color` sees in `fen`, and the observation."""
    g = Game(fen)
    obs = observe(g.position, color)
    board = chess.Board(None)
    for code in range(12):
        bb = int(obs.pieces[code]) & int(obs.visible)
        for sq in chess.SquareSet(bb):
            side = chess.WHITE if code < 6 else chess.BLACK
            board.set_piece_at(sq, chess.Piece(code % 6 + 1, side))
    return board, obs


def _best(fen: str) -> set[str]:
    g = Game(fen)
    color = 0 if " w " in fen else 1
    legal = g.legal_moves()
    scores = move_scores(observe(g.position, color), color, legal)
    top = max(scores)
    return {move_to_uci(m) for m, s in zip(legal, scores, strict=True) if s == top}


def _random_positions(seed: int, every: int) -> Iterator[tuple[str, int, list[int]]]:
    """Every `every`-th position (FEN, side to move, FoW-legal moves) of 40 random FoW games
    of up to 80 plies."""
    rng = random.Random(seed)
    for _ in range(40):
        g = Game()
        for ply in range(80):
            legal = g.legal_moves()
            if not legal:
                break
            if ply % every == every // 2:
                yield to_fen(g.position), ply % 2, legal
            g.push(rng.choice(legal))


def test_attack_maps_agree_with_python_chess() -> None:
    """Over 40 random FoW games (every 7th ply): per square, the worth of the cheapest seen
    enemy attacker and the count of our attackers match python-chess's `attackers`."""
    checked = 0
    for fen, color, _ in _random_positions(5, every=7):
        board, obs = _seen_board(fen, color)
        us, them = color * 6, (1 - color) * 6
        theirs = [int(obs.pieces[them + p]) & int(obs.visible) for p in range(6)]
        ours = [int(obs.pieces[us + p]) for p in range(6)]
        occ = 0
        for b in theirs + ours:
            occ |= b
        cheapest, _, _ = _attack_maps(theirs, 1 - color, occ)
        _, count, _ = _attack_maps(ours, color, occ)
        enemy = chess.BLACK if color == 0 else chess.WHITE
        for sq in range(64):
            att = board.attackers(enemy, sq)
            want = min((VALUES[(board.piece_type_at(a) or 0) - 1] for a in att), default=0)
            assert cheapest[sq] == want, (board.fen(), sq)
            assert count[sq] == len(board.attackers(not enemy, sq)), (board.fen(), sq)
        checked += 1
    assert checked > 300


def test_king_exposure_agrees_with_python_chess() -> None:
    """Over 40 random FoW games (every 5th ply), every legal move but the en-passant ones (and
    king captures, scored apart): it scores KING_LOST exactly when, on python-chess's board of
    what the mover sees, the move leaves its king attacked (castling with its rook, captures
    removing an attacker, pinned pieces stepping aside)."""
    checked = 0
    for fen, color, legal in _random_positions(8, every=5):
        seen, obs = _seen_board(fen, color)
        seen.turn = chess.WHITE if color == 0 else chess.BLACK
        seen.set_castling_fen(fen.split()[2])
        for m, s in zip(legal, move_scores(obs, color, legal), strict=True):
            move = chess.Move.from_uci(move_to_uci(m))
            if seen.is_en_passant(move) or (m >> 14) & 3 == 2:
                continue
            if seen.piece_type_at(move.to_square) == chess.KING:
                assert s == 10 * VALUES[-1]
                continue
            board = seen.copy()
            board.push(move)
            king = board.king(not board.turn)
            assert king is not None
            exposed = board.is_attacked_by(board.turn, king)
            assert (s <= KING_LOST // 2) == exposed, (fen, move_to_uci(m), s)
            checked += 1
    assert checked > 5000


def test_takes_the_hanging_queen() -> None:
    """Black's queen on d5 stands undefended in front of White's e4 pawn: exd5 (9 pawns) is
    the only best move."""
    assert _best("4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1") == {"e4d5"}


def test_moves_the_attacked_queen_to_a_safe_square() -> None:
    """White's queen on d4 is attacked by the pawn on c5, which the pawn on d6 defends, which
    the pawn on e7 defends (seen by the rook on e1): taking either pawn wins a pawn for the
    queen, so every best move takes the queen to a square no seen black piece attacks."""
    fen = "4k3/4p3/3p4/2p5/3Q4/8/8/K3R3 w - - 0 1"
    best = _best(fen)
    board, _ = _seen_board(fen, 0)
    assert len(best) > 5
    for m in best:
        assert m.startswith("d4")
        assert not board.is_attacked_by(chess.BLACK, chess.parse_square(m[2:4])), m
    # with e7 and the rook gone, d6 is undefended: Qxd6 both saves the queen and wins a pawn
    assert _best("4k3/8/3p4/2p5/3Q4/8/8/K7 w - - 0 1") == {"d4d6"}


def test_scores_by_hand() -> None:
    """The module docstring's rule, worked by hand on White's queen d1, knight a4 (which sees
    the black pawn on c3) and king h1: Qd2 stands on a square the pawn attacks and no other
    white piece defends (-9, the queen's own attack on d2 is not a defence); Nxc3 wins the
    pawn and stands where no seen piece attacks (+1); Qd3 and Qc2 are quiet (0)."""
    fen = "7k/8/8/8/N7/2p5/8/3Q3K w - - 0 1"
    g = Game(fen)
    legal = g.legal_moves()
    scores = dict(zip((move_to_uci(m) for m in legal),
                      move_scores(observe(g.position, 0), 0, legal), strict=True))
    assert (scores["d1d2"], scores["a4c3"], scores["d1d3"], scores["d1c2"]) == (-9, 1, 0, 0)


def test_the_king_does_not_walk_into_a_seen_attacker() -> None:
    """White's king on e1 beside a seen black rook on d2 (the rook on e8 is out of its
    sight): the king moves that end attacked on python-chess's board of what White sees
    (Kd1, Ke2, Kf2) score KING_LOST, the others (Kxd2, Kf1) do not."""
    fen = "4r1k1/8/8/8/8/8/3r4/4K3 w - - 0 1"
    g = Game(fen)
    legal = g.legal_moves()
    scores = move_scores(observe(g.position, 0), 0, legal)
    seen, _ = _seen_board(fen, 0)
    lost = set()
    for m, s in zip(legal, scores, strict=True):
        board = seen.copy()
        board.push(chess.Move.from_uci(move_to_uci(m)))
        king = board.king(chess.WHITE)
        assert king is not None
        attacked = board.is_attacked_by(chess.BLACK, king)
        assert (s <= KING_LOST // 2) == attacked, (move_to_uci(m), s)
        if attacked:
            lost.add(move_to_uci(m))
    assert lost == {"e1d1", "e1e2", "e1f2"}
    assert _best(fen) == {"e1d2"}


def test_a_visible_king_is_captured() -> None:
    """A king in sight is taken, whatever else is on offer (the rule before this one, kept):
    the rook on a8 sees the king on e8 along the empty rank."""
    assert _best("R3k3/8/8/8/8/8/8/4K3 w - - 0 1") == {"a8e8"}
    assert _best("R3k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1") == {"a8e8"}


def test_the_draw_among_the_best_follows_the_generator() -> None:
    """Equal best moves are drawn with the agent's generator: one seed, one move."""
    fen = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"
    g = Game(fen)
    legal = g.legal_moves()
    obs = observe(g.position, 0)
    picks = {emergency_move([(None, obs)], 0, legal, np.random.default_rng(s)) for s in range(30)}
    assert len(picks) > 1
    again = {emergency_move([(None, obs)], 0, legal, np.random.default_rng(s)) for s in range(30)}
    assert picks == again
