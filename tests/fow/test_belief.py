"""The belief set P: the true position is always in it, and it equals a python-chess reference.

Expected values come from (a) the true position, known to the test while each player only sees
their observations: by definition it is consistent with them, so it must be in P whenever P is
exact; (b) a slow pure-Python belief update built on python-chess (`_reference_update`): every
FoW move (python-chess pseudo-legal moves + FoW castling, `fow_moves_reference`) of every
position, kept when python-chess's `observe_reference` equals the observation received, deduped
by a key built from python-chess's board (pieces, side, castling, en passant when a pawn of the
side to move can capture there); (c) an uncapped run for the memory-cap tests.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator
from pathlib import Path

import chess
import numpy as np
import pytest

from caligo.fow.belief import (
    ROW_BYTES,
    ROW_WORDS,
    BeliefConfig,
    BeliefError,
    BeliefSet,
    SizeKind,
    pack_positions,
    piece_shares,
)
from caligo.fow.belief_kernels import _filter_kernel, _insert_kernel
from caligo.fow.movegen import legal_moves
from caligo.fow.observation import (
    Observation,
    fow_moves_reference,
    observe,
    observe_reference,
)
from caligo.fow.position import (
    BLACK,
    STARTING_FEN,
    UNDO_WORDS,
    WHITE,
    from_fen,
    make_move,
    move_from_uci,
    move_to_uci,
    to_fen,
)

SHORT = os.environ.get("CALIGO_SHORT") == "1"
_UNDO = np.empty(UNDO_WORDS, dtype=np.uint64)


def _play(pos: np.ndarray, move: int) -> None:
    make_move(pos, move, _UNDO)


def _over(pos: np.ndarray) -> bool:
    return int(pos[5]) == 0 or int(pos[11]) == 0


def _track(start_fen: str, plies: int, rng: random.Random, cap: int) -> tuple[int, int]:
    """Play random FoW moves from `start_fen`; check the true position is in both players' P.

    Returns (checks made with P exact, checks skipped because P was a capped sample).
    """
    pos = from_fen(start_fen)
    cfg = BeliefConfig(max_positions=cap, seed=rng.randrange(2**32))
    beliefs = [BeliefSet.initial(WHITE, start_fen, cfg), BeliefSet.initial(BLACK, start_fen, cfg)]
    exact_checks = skipped = 0
    for _ in range(plies):
        if _over(pos):
            break
        moves = legal_moves(pos)
        if not moves:
            break
        move = rng.choice(moves)
        mover = int(pos[12])
        _play(pos, move)
        for p in (WHITE, BLACK):
            obs = observe(pos, p)
            b = beliefs[p]
            beliefs[p] = b.update_own_move(move, obs) if p == mover else b.update_opponent_move(obs)
            last = beliefs[p].last
            assert last is not None and last.illegal_parents == 0
            if beliefs[p].exact:
                assert beliefs[p].contains(pos), (start_fen, to_fen(pos), p)
                assert len(beliefs[p]) == beliefs[p].size_seen
                exact_checks += 1
            else:
                skipped += 1
    return exact_checks, skipped


def _random_midgame_fens(n: int, rng: random.Random) -> list[str]:
    """FENs reached by 16-70 random FoW plies from the start (python-chess reference moves)."""
    out: list[str] = []
    while len(out) < n:
        board = chess.Board()
        for _ in range(rng.randrange(16, 70)):
            moves = fow_moves_reference(board)
            if not moves:
                break
            board.push(rng.choice(moves))
        if board.king(chess.WHITE) is None or board.king(chess.BLACK) is None:
            continue
        out.append(board.fen(en_passant="fen"))
    return out


def test_true_position_in_p_from_the_start() -> None:
    rng = random.Random(2024)
    games = 2000 if SHORT else 4000
    exact = skipped = 0
    for _ in range(games):
        e, s = _track(STARTING_FEN, 6, rng, cap=20000)
        exact += e
        skipped += s
    assert exact >= games * 11  # 12 checks a game, a few games end early
    assert skipped == 0


def test_true_position_in_p_from_midgame_starts() -> None:
    rng = random.Random(7)
    fens = _random_midgame_fens(150 if SHORT else 400, rng)
    exact = skipped = 0
    for fen in fens:
        e, s = _track(fen, 10, rng, cap=20000)
        exact += e
        skipped += s
    assert exact > 15 * len(fens)
    assert skipped < exact // 10


@pytest.mark.slow
def test_true_position_in_p_long_games() -> None:
    rng = random.Random(99)
    games = 12 if SHORT else 200
    exact = 0
    for _ in range(games):
        e, _s = _track(STARTING_FEN, 16, rng, cap=50000)
        exact += e
    assert exact > games * 10


# --- against the pure-Python reference -------------------------------------------------------


def _ref_key(board: chess.Board) -> tuple[str, bool, int, int | None]:
    ep = board.ep_square if board.has_pseudo_legal_en_passant() else None
    return (board.board_fen(), board.turn, board.castling_rights, ep)


def _reference_update(
    boards: dict[tuple[str, bool, int, int | None], chess.Board],
    player: int,
    obs_fen: str,
    own_move: str | None,
) -> dict[tuple[str, bool, int, int | None], chess.Board]:
    out: dict[tuple[str, bool, int, int | None], chess.Board] = {}
    for board in boards.values():
        for move in fow_moves_reference(board):
            if own_move is not None and move.uci() != own_move:
                continue
            child = board.copy(stack=False)
            child.push(move)
            if observe_reference(child, player).dark_fen() == obs_fen:
                out.setdefault(_ref_key(child), child)
    return out


def _rows_of(boards: dict[tuple[str, bool, int, int | None], chess.Board]) -> set[bytes]:
    positions = np.stack([from_fen(b.fen(en_passant="fen")) for b in boards.values()])
    return {row.tobytes() for row in pack_positions(positions)}


def test_update_equals_python_chess_reference() -> None:
    rng = random.Random(5)
    fens = [STARTING_FEN, *_random_midgame_fens(12 if SHORT else 30, rng)]
    compared = 0
    for fen in fens:
        pos = from_fen(fen)
        beliefs = [BeliefSet.initial(p, fen) for p in (WHITE, BLACK)]
        start = chess.Board(fen)
        refs: list[dict[tuple[str, bool, int, int | None], chess.Board] | None] = [
            {_ref_key(start): start},
            {_ref_key(start): start.copy()},
        ]
        for _ in range(8):
            moves = legal_moves(pos)
            if _over(pos) or not moves:
                break
            move = rng.choice(moves)
            uci = move_to_uci(move)
            mover = int(pos[12])
            _play(pos, move)
            for p in (WHITE, BLACK):
                ref = refs[p]
                if ref is None:
                    continue
                obs = observe(pos, p)
                own = uci if p == mover else None
                b = beliefs[p]
                beliefs[p] = b.update_own_move(move, obs) if own else b.update_opponent_move(obs)
                ref = _reference_update(ref, p, obs.dark_fen(), own)
                ours = {row.tobytes() for row in beliefs[p].rows}
                assert ours == _rows_of(ref), (fen, to_fen(pos), p)
                compared += 1
                refs[p] = ref if len(ref) <= 150 else None  # keep the slow reference affordable
    assert compared > 60


def test_pack_normalizes_en_passant_like_python_chess() -> None:
    # Expected: python-chess's has_pseudo_legal_en_passant decides whether the square matters.
    for fen, kept in (
        ("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3", True),
        ("rnbqkbnr/pppp1ppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", False),
    ):
        row = pack_positions(from_fen(fen)[None, :])[0]
        assert ((int(row[12]) >> 5) & 127 == 20) == kept
        assert chess.Board(fen).has_pseudo_legal_en_passant() == kept


# --- cap, sampling, storage, errors -----------------------------------------------------------


def _opening_beliefs(
    cap: int, seed: int = 0, count_factor: int = 4
) -> tuple[BeliefSet, BeliefSet, np.ndarray]:
    """Black's P after 1.Nf3 Nc6 2.Nc3 Nf6 3.e3 (capped, and uncapped), and the true position."""
    pos = from_fen(STARTING_FEN)
    cfg = BeliefConfig(max_positions=cap, seed=seed, count_factor=count_factor)
    b = BeliefSet.initial(BLACK, config=cfg)
    full = BeliefSet.initial(BLACK)
    for uci in ("g1f3", "b8c6", "b1c3", "g8f6", "e2e3"):
        move = move_from_uci(pos, uci)
        mover = int(pos[12])
        _play(pos, move)
        obs = observe(pos, BLACK)
        if mover == BLACK:
            b, full = b.update_own_move(move, obs), full.update_own_move(move, obs)
        else:
            b, full = b.update_opponent_move(obs), full.update_opponent_move(obs)
    return b, full, pos


def test_memory_cap_gives_a_flagged_uniform_subsample() -> None:
    _, full, _ = _opening_beliefs(cap=10**6)
    assert full.exact and len(full) > 300
    universe = {row.tobytes() for row in full.rows}
    cap = len(full) // 4
    counts: dict[bytes, int] = {}
    runs = 200
    for seed in range(runs):
        capped, _, _ = _opening_beliefs(cap=cap, seed=seed, count_factor=10**6)
        assert not capped.exact
        assert len(capped) == cap
        assert capped.size_seen == len(full)  # the true size is reported, not lost
        rows = {row.tobytes() for row in capped.rows}
        assert len(rows) == cap and rows <= universe
        for r in rows:
            counts[r] = counts.get(r, 0) + 1
    # inclusion frequency of every position ~ cap/|P| (binomial; 6 sigma band)
    p = cap / len(full)
    freq = np.array([counts.get(r, 0) for r in universe]) / runs
    sigma = np.sqrt(p * (1 - p) / runs)
    assert np.all(np.abs(freq - p) < 6 * sigma)
    assert abs(freq.mean() - p) < 1e-9


def test_a_set_knows_whether_the_cap_dropped_a_position_since_the_start() -> None:
    """`subsampled` is the set's lineage: False while every update kept all consistent
    positions (exact sets), True from the first update the cap thinned on, through later
    updates the cap left alone (here Black's own move 3...d6 after White's capped 3.e3)."""
    _, full, pos = _opening_beliefs(cap=10**6)
    assert full.exact and not full.subsampled
    capped, _, _ = _opening_beliefs(cap=len(full) // 4)
    assert not capped.exact and capped.subsampled
    move = move_from_uci(pos, "d7d6")
    _play(pos, move)
    later = capped.update_own_move(move, observe(pos, BLACK))
    assert len(later) == later.size_seen and later.subsampled


def test_sample_is_uniform_without_replacement() -> None:
    _, full, _ = _opening_beliefs(cap=10**6)
    rng = np.random.default_rng(3)
    k = 10
    hits = np.zeros(len(full))
    keys = {row.tobytes(): i for i, row in enumerate(full.rows)}
    for _ in range(400):
        sample = full.sample_array(k, rng)
        rows = pack_positions(sample)
        idx = [keys[r.tobytes()] for r in rows]
        assert len(set(idx)) == k
        hits[idx] += 1
    assert abs(hits.mean() - 400 * k / len(full)) < 1e-9
    assert full.sample_array(10**9).shape == (len(full), 16)
    # the Position form is the same draw
    positions = full.sample(k, np.random.default_rng(5))
    assert [p.arr.tobytes() for p in positions] == [
        a.tobytes() for a in full.sample_array(k, np.random.default_rng(5))
    ]
    assert all(p in full for p in positions) and len(list(full)) == len(full)
    assert full.fens() == [p.fen() for p in full]


def test_storage_is_104_bytes_a_position() -> None:
    _, full, _ = _opening_beliefs(cap=10**6)
    assert ROW_WORDS == 13 and ROW_BYTES == 104
    assert full.nbytes == 104 * len(full)


def test_inconsistent_observation_raises() -> None:
    pos = from_fen(STARTING_FEN)
    b = BeliefSet.initial(BLACK)
    _play(pos, move_from_uci(pos, "e2e4"))
    # an observation with black's own pawn gone is inconsistent with every white move
    gone = observe(from_fen("rnbqkbnr/1ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1"), BLACK)
    with pytest.raises(BeliefError, match="no position is consistent"):
        b.update_opponent_move(gone)
    with pytest.raises(BeliefError, match="opponent move update"):
        BeliefSet.initial(WHITE).update_opponent_move(observe(pos, WHITE))
    with pytest.raises(BeliefError, match="white's observation given to black's belief set"):
        b.update_opponent_move(observe(pos, WHITE))


def test_kernel_signature_is_uint64_throughout() -> None:
    BeliefSet.initial(BLACK).update_opponent_move(
        observe(from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"), BLACK),
    )
    from numba import types

    rows2d = types.Array(types.uint64, 2, "C")
    words = types.Array(types.uint64, 1, "C")
    for sig in _filter_kernel.signatures:
        # rows, end, n_total, mul, add, player, target, clocks, salt, pend_rows, pend_fp,
        # lstate, max_moves
        assert sig[0] == rows2d and sig[6] == words and sig[9] == rows2d  # rows, target, out
        assert sig[7] == sig[8] == types.uint64  # clocks, salt
        assert sig[10] == rows2d  # fingerprints
        assert not any(isinstance(t, types.Float) for t in sig)
    for sig in _insert_kernel.signatures:
        # pend_rows, pend_fp, lo, hi, threshold, count_threshold, out_rows, out_hash, table,
        # state
        assert sig[0] == sig[1] == sig[6] == sig[8] == rows2d  # rows, fingerprints, table
        assert sig[4] == sig[5] == types.uint64  # thresholds
        assert sig[7] == words
        assert not any(isinstance(t, types.Float) for t in sig)


def test_cli_prints_the_size_of_p_after_every_ply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from caligo.cli import main
    from caligo.fow.notation import write_pgn

    pos = from_fen(STARTING_FEN)
    moves = []
    for uci in ("e2e4", "b7b6", "g2g3", "c8a6"):
        move = move_from_uci(pos, uci)
        moves.append(move)
        _play(pos, move)
    pgn = tmp_path / "game.pgn"
    pgn.write_text(write_pgn(moves))
    assert main(["fow", "belief", str(pgn), "--as", "black"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "# result * (game unfinished)"
    rows = [line.split() for line in lines[2:-1]]
    # black: 1 start position; after 1.e4 all 20 white first moves are possible (black sees
    # ranks 5-8 only); 1...b6 reveals nothing of white (the b6 pawn sees b5; its diagonals a5,
    # c5 are empty; the c8 bishop now sees b7, a6)
    assert [r[2] for r in rows[:3]] == ["1", "20", "20"]
    assert [r[1] for r in rows] == ["start", "e4", "b6", "g3", "Ba6"]


def _last_ply_with(cap: int, seed: int = 0, count_factor: int = 4) -> tuple[BeliefSet, int]:
    """Black's P after 3.e3 computed from the exact P before it under a (small) cap; and the
    exact size of that P."""
    pos = from_fen(STARTING_FEN)
    b = BeliefSet.initial(BLACK, config=BeliefConfig(max_positions=10**6))
    for uci in ("g1f3", "b8c6", "b1c3", "g8f6"):
        move = move_from_uci(pos, uci)
        mover = int(pos[12])
        _play(pos, move)
        obs = observe(pos, BLACK)
        b = b.update_own_move(move, obs) if mover == BLACK else b.update_opponent_move(obs)
    _play(pos, move_from_uci(pos, "e2e3"))
    obs = observe(pos, BLACK)
    exact = b.update_opponent_move(obs)
    assert exact.exact
    cfg = BeliefConfig(max_positions=cap, seed=seed, count_factor=count_factor)
    return dataclasses.replace(b, config=cfg).update_opponent_move(obs), len(exact)


def test_count_past_the_table_bound_is_an_estimate() -> None:
    # Expected: the exact |P| from an uncapped run; the bottom-k estimate is unbiased with a
    # relative error ~ 1/sqrt(k), k = count_factor * cap / 2 = 8 here: 60 runs average it.
    estimates = []
    for seed in range(60):
        b, true_size = _last_ply_with(cap=4, seed=seed, count_factor=4)
        assert len(b) == 4 and not b.exact
        assert b.size_kind is SizeKind.ESTIMATE
        estimates.append(b.size_seen)
    assert abs(np.mean(estimates) / true_size - 1) < 0.25
    # with room to count, the same cap reports the exact size
    b, true_size = _last_ply_with(cap=4, count_factor=10**6)
    assert b.size_kind is SizeKind.EXACT and b.size_seen == true_size


@pytest.mark.parametrize("cap", [1, 2, 31])
def test_tiny_caps_work(cap: int) -> None:
    b, true_size = _last_ply_with(cap=cap, count_factor=10**6)
    assert len(b) == cap and b.size_seen == true_size and not b.exact
    assert b.size_kind is SizeKind.EXACT


def _brute_force_opponent_update(
    parents: np.ndarray, player: int, target: np.ndarray
) -> set[bytes]:
    """Every move of every parent, kept when the observation equals target: a plain loop over
    the move generator and the observation function (no prefilters, no hash table)."""
    from caligo.fow.observation import observe_array

    out: set[bytes] = set()
    for parent in parents:
        for move in legal_moves(parent):
            child = parent.copy()
            make_move(child, move, _UNDO)
            if np.array_equal(observe_array(child, player), target):
                out.add(pack_positions(child[None, :])[0].tobytes())
    return out


def _random_updates(
    fens: tuple[str, ...], games: int, plies: int, rng: random.Random
) -> Iterator[tuple[int, bool, int, Observation, BeliefSet, BeliefSet]]:
    """Random FoW games from `fens` (in turn), both players' P updated after every ply; yields
    (player, own move?, move, observation, P before, P after) per player and ply."""
    for game in range(games):
        fen = fens[game % len(fens)]
        pos = from_fen(fen)
        beliefs = [BeliefSet.initial(WHITE, fen), BeliefSet.initial(BLACK, fen)]
        for _ply in range(plies):
            moves = legal_moves(pos)
            if _over(pos) or not moves:
                break
            move = rng.choice(moves)
            mover = int(pos[12])
            _play(pos, move)
            for p in (WHITE, BLACK):
                obs = observe(pos, p)
                before = beliefs[p]
                if p == mover:
                    beliefs[p] = before.update_own_move(move, obs)
                else:
                    beliefs[p] = before.update_opponent_move(obs)
                yield p, p == mover, move, obs, before, beliefs[p]


def test_opponent_update_equals_brute_force_on_larger_sets() -> None:
    compared = 0
    updates = _random_updates((STARTING_FEN,), 6 if SHORT else 20, 14, random.Random(12))
    for p, own, _move, obs, before, after in updates:
        if not own and len(before) <= 3000:
            expected = _brute_force_opponent_update(before.positions(), p, obs.to_array())
            assert {r.tobytes() for r in after.rows} == expected
            compared += 1
    assert compared > 30


# --- own moves that erase the opponent's castling right ------------------------------------------


def _brute_force_own_update(
    parents: np.ndarray, player: int, move: int, target: np.ndarray
) -> list[bytes]:
    """The own move on every parent that has it, kept when the observation equals target; a
    plain loop over the move generator and the observation function; duplicates kept."""
    from caligo.fow.observation import observe_array

    out: list[bytes] = []
    for parent in parents:
        if move not in legal_moves(parent):
            continue
        child = parent.copy()
        make_move(child, move, _UNDO)
        if np.array_equal(observe_array(child, player), target):
            out.append(pack_positions(child[None, :])[0].tobytes())
    return out


def test_own_capture_on_the_rook_corner_merges_parents() -> None:
    # Issue 11's reproduction. Expected: the python-chess reference update, which keys positions
    # by python-chess's board (pieces, side, castling, en passant): 16 distinct positions.
    fen = "n3k2r/8/8/8/7N/8/8/4K2R w k - 0 1"
    pos = from_fen(fen)
    belief = BeliefSet.initial(WHITE, fen)
    start = chess.Board(fen)
    ref = {_ref_key(start): start}
    for uci in "e1e2 h8g8 e2e1 g8h8 h4f5 a8b6 h1h8".split():
        move = move_from_uci(pos, uci)
        mover = int(pos[12])
        _play(pos, move)
        obs = observe(pos, WHITE)
        if mover == WHITE:
            belief = belief.update_own_move(move, obs)
        else:
            belief = belief.update_opponent_move(obs)
        ref = _reference_update(ref, WHITE, obs.dark_fen(), uci if mover == WHITE else None)
    rows = [row.tobytes() for row in belief.rows]
    assert len(ref) == 16
    assert len(belief) == len(set(rows)) == belief.size_seen == 16 and belief.exact
    assert set(rows) == _rows_of(ref)
    assert belief.last is not None and belief.last.matched == 18  # two pairs merged


# Kings on their home squares with both rights, rooks on the corners, pawns one step from
# capturing a corner with promotion (b7xa8, g2xh1 ...) and knights near the kings: random play
# captures kings on e1/e8 and rooks on their corners, erasing the opponent's castling rights.
_CORNER_FENS = (
    "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1",
    "r3k2r/1P4P1/3N4/8/8/3n4/1p4p1/R3K2R b KQkq - 0 1",
    "r3k2r/6P1/2N5/8/8/5n2/1p6/R3K2R w KQkq - 0 1",
    "rn2k2r/6PN/8/8/8/8/1p4pn/R3K1NR b KQkq - 0 1",
)


def test_own_moves_equal_brute_force_with_multiplicity() -> None:
    # Expected: a plain loop over movegen + observe (both checked against python-chess) with
    # the duplicates kept; P must hold each distinct child exactly once.
    compared = 0
    updates = _random_updates(_CORNER_FENS, 40 if SHORT else 160, 14, random.Random(31))
    for p, own, move, obs, before, after in updates:
        if not own or len(before) > 2000:
            continue
        children = _brute_force_own_update(before.positions(), p, move, obs.to_array())
        rows = [r.tobytes() for r in after.rows]
        assert len(rows) == len(set(rows)) == len(set(children)), move_to_uci(move)
        assert set(rows) == set(children)
        assert after.size_seen == len(rows) and after.exact
        compared += 1
    assert compared > 200


def _rights_variants(pos: np.ndarray) -> list[np.ndarray]:
    """`pos` with every subset of the castling rights of the side not to move that its king and
    rooks at home allow (python-chess `clean_castling_rights` decides which are possible)."""
    board = chess.Board(to_fen(pos))
    board.castling_rights = chess.BB_CORNERS  # all four, then keep the possible ones
    possible = board.clean_castling_rights()
    them = 1 - int(pos[12])
    bits = [
        bit
        for bit, sq in ((1, chess.H1), (2, chess.A1), (4, chess.H8), (8, chess.A8))
        if possible & chess.BB_SQUARES[sq] and (bit >= 4) == (them == BLACK)
    ]
    out = []
    for mask in range(1 << len(bits)):
        variant = pos.copy()
        rights = int(variant[13]) & ~sum(bits)
        for j, bit in enumerate(bits):
            if mask >> j & 1:
                rights |= bit
        variant[13] = np.uint64(rights)
        out.append(variant)
    return out


def test_own_captures_on_home_squares_merge_like_brute_force() -> None:
    # P built to hold positions that differ only in the opponent's castling rights; the own
    # move captures a king on e1/e8 or a rook on its corner (g2h1r-style promotions included).
    # Expected: the brute-force loop's distinct children, each once.
    rng = random.Random(5)
    kinds: set[str] = set()
    merged = 0
    for game in range(80 if SHORT else 300):
        pos = from_fen(_CORNER_FENS[game % len(_CORNER_FENS)])
        for _ply in range(12):
            moves = legal_moves(pos)
            if _over(pos) or not moves:
                break
            mover = int(pos[12])
            for move in moves:
                to = (move >> 6) & 63
                if to not in (0, 4, 7, 56, 60, 63):
                    continue
                victim = [c for c in range(12) if int(pos[c]) >> to & 1]
                if not victim:
                    continue
                parents = np.stack(_rights_variants(pos))
                child = parents[0].copy()
                _play(child, move)
                obs = observe(child, mover)
                children = _brute_force_own_update(parents, mover, move, obs.to_array())
                start = BeliefSet.initial(mover, to_fen(pos))
                belief = dataclasses.replace(start, rows=pack_positions(parents))
                after = belief.update_own_move(move, obs)
                rows = [r.tobytes() for r in after.rows]
                assert len(rows) == len(set(rows)) == after.size_seen, (to_fen(pos), move)
                assert set(rows) == set(children)
                if len(children) > len(set(children)):
                    merged += 1
                    kinds.add("king" if victim[0] % 6 == 5 else move_to_uci(move)[2:])
            _play(pos, rng.choice(moves))
    assert merged > 20
    assert {"king", "h1r", "a8q"} <= kinds, kinds


# --- where P puts the opponent's pieces (`piece_shares`) --------------------------------------


def _chess_counts(fens: list[str], them: chess.Color) -> np.ndarray:
    """Per kind (pawn .. king) and square (a1 = 0), the FENs with a piece of `them` there:
    python-chess's `Board.piece_at` on every square of every position."""
    out = np.zeros((6, 64), dtype=np.int64)
    for fen in fens:
        board = chess.Board(fen)
        for sq in chess.SQUARES:
            piece = board.piece_at(sq)
            if piece is not None and piece.color == them:
                out[piece.piece_type - 1, sq] += 1
    return out


def _random_belief(player: int, plies: int, seed: int) -> tuple[BeliefSet, np.ndarray]:
    """`player`'s exact P after `plies` random FoW plies from the start, and the true position."""
    rng = random.Random(seed)
    pos = from_fen(STARTING_FEN)
    belief = BeliefSet.initial(player)
    for _ in range(plies):
        move = rng.choice(legal_moves(pos))
        mover = int(pos[12])
        _play(pos, move)
        obs = observe(pos, player)
        belief = (belief.update_own_move(move, obs) if mover == player
                  else belief.update_opponent_move(obs))
    return belief, pos


@pytest.mark.parametrize(("player", "plies", "seed"), [(WHITE, 6, 3), (BLACK, 5, 2)])
def test_piece_shares_of_a_small_p_count_every_position(player: int, plies: int,
                                                        seed: int) -> None:
    """|P| <= the sample size: every position is counted, exactly as python-chess reads them;
    the true position is in P, so each of its opponent pieces has a count on its square."""
    belief, truth = _random_belief(player, plies, seed)
    assert belief.exact and 500 < len(belief) <= 4096
    shares = piece_shares(belief)  # default sample 4096 >= |P|
    them = chess.BLACK if player == WHITE else chess.WHITE
    assert shares.sample == shares.size == len(belief) and shares.exact
    assert shares.color == (BLACK if player == WHITE else WHITE)
    assert np.array_equal(shares.counts, _chess_counts(belief.fens(), them))
    assert np.allclose(shares.shares, shares.counts / len(belief))
    board = chess.Board(to_fen(truth))
    for sq, piece in board.piece_map().items():
        if piece.color == them:
            assert shares.counts[piece.piece_type - 1, sq] > 0, chess.square_name(sq)
    # one piece per square: the kinds' counts add up to at most |P| on every square
    assert shares.counts.sum(axis=0).max() <= len(belief)


@pytest.mark.parametrize(("player", "plies", "seed"), [(WHITE, 6, 2), (BLACK, 7, 0)])
def test_piece_shares_of_a_sample_are_the_sampled_positions_counts(player: int, plies: int,
                                                                   seed: int) -> None:
    """|P| > the sample size: the counts are python-chess's over the positions `sample` draws
    with the same generator, and the shares lie within 6 standard errors of P's exact ones."""
    belief, _ = _random_belief(player, plies, seed)
    k = len(belief) // 3
    assert belief.exact and k >= 400
    shares = piece_shares(belief, k, np.random.default_rng(42))
    assert shares.sample == k and shares.size == len(belief) and not shares.exact
    drawn = [p.fen() for p in belief.sample(k, np.random.default_rng(42))]
    them = chess.BLACK if player == WHITE else chess.WHITE
    assert np.array_equal(shares.counts, _chess_counts(drawn, them))
    exact = _chess_counts(belief.fens(), them) / len(belief)
    # drawn without replacement: the standard error is at most the binomial one
    sigma = np.sqrt(exact * (1 - exact) / k) + 1e-12
    assert np.all(np.abs(shares.shares - exact) <= 6 * sigma)
    assert np.array_equal(shares.counts, piece_shares(belief, k, np.random.default_rng(42)).counts)


def test_piece_shares_refuses_bad_input() -> None:
    belief = BeliefSet.initial(WHITE)
    for bad in (0, -3, True, 2.5, "10"):
        with pytest.raises(ValueError, match="max_sample"):
            piece_shares(belief, bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list"):
        piece_shares([], 10)  # type: ignore[arg-type]
    start = piece_shares(belief)  # P = {the start}: black's pieces on ranks 7 and 8
    assert start.sample == 1 and start.counts.sum() == 16
    assert start.counts[0, 48:56].tolist() == [1] * 8 and start.counts[5, 60] == 1
