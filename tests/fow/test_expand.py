"""The expansion kernel against its pure-Python reference built from the public caligo.fow API.

Expected values: `expand_reference` lists the children with `legal_moves` + `make_move`, the
observations with `observe` (itself checked against python-chess in test_observation.py), and
the terminals with the referee (`caligo.fow.game.Game` on the child's FEN, the history draws
left out). The positions are random FoW playouts from the start and from positions rich in
castling, en passant and promotion; the test counts that each of those, king captures and the
no-move draw actually occur among the children it checks.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from caligo.errors import CaligoError
from caligo.fow.expand import (
    STATUS_PARENT_OVER,
    STATUS_TOO_SMALL,
    ExpandBuffers,
    ExpandError,
    Terminal,
    expand,
    expand_kernel,
    expand_reference,
    observation_key,
    observation_keys,
)
from caligo.fow.movegen import MAX_MOVES, legal_moves
from caligo.fow.observation import Observation, observe
from caligo.fow.position import (
    BLACK,
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    POS_WORDS,
    STARTING_FEN,
    UNDO_WORDS,
    WHITE,
    from_fen,
    king_captured,
    make_move,
    move_kind,
    move_to_uci,
    to_fen,
)

SHORT = os.environ.get("CALIGO_SHORT") == "1"

PLAYOUT_FENS = (
    STARTING_FEN,
    # Kiwipete: castling both ways, en passant, pins
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    # pawns one step from promotion on both sides, castling rights, an en-passant right
    "r3k2r/1P4P1/8/2pP4/8/8/1p4p1/R3K2R w KQkq c6 0 1",
    "8/PPPk4/8/8/8/8/4Kppp/8 w - - 0 1",
    # after any white move black has no FoW move at all (the no-move draw)
    "7K/8/8/8/8/8/pppppppp/kbbbbbbb w - - 0 1",
)


def random_positions(n: int, seed: int) -> Iterator[np.ndarray]:
    """Yield `n` positions (copies) met in random FoW playouts, none with a captured king.

    Moves are drawn uniformly from the FoW move list, so games end in king captures; each
    playout starts from one of PLAYOUT_FENS in turn and runs for up to 160 plies.
    """
    rng = random.Random(seed)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    made = 0
    start = 0
    while True:
        pos = from_fen(PLAYOUT_FENS[start % len(PLAYOUT_FENS)])
        start += 1
        for _ in range(160):
            moves = legal_moves(pos)
            if not moves:
                break
            yield pos.copy()
            made += 1
            if made >= n:
                return
            make_move(pos, rng.choice(moves), undo)
            if king_captured(pos):
                break


def run_threads(*targets: Callable[[], None]) -> None:
    """Run each target in its own thread at the same time; return when all are done."""
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive(), "a thread did not finish in 600 s"


@pytest.mark.slow
def test_kernel_equals_reference_on_random_playouts() -> None:
    buf = ExpandBuffers.allocate()
    key_to_obs: dict[tuple[int, int], Observation] = {}
    obs_to_key: dict[Observation, int] = {}
    seen = {"promotion": 0, "castling": 0, "en passant": 0, "king capture": 0, "no moves": 0}
    parents = 0
    for pos in random_positions(1000 if SHORT else 5000, seed=9):
        n = expand(pos, buf)
        ref = expand_reference(pos)
        assert n == len(ref), to_fen(pos)
        parents += 1
        for i, child in enumerate(ref):
            where = (to_fen(pos), i)
            assert int(buf.moves[i]) == child.move, where
            assert np.array_equal(buf.children[i], child.position), where
            assert Terminal(int(buf.terminal[i])) == child.terminal, where
            assert float(buf.values[i]) == child.value, where
            for player, obs in ((WHITE, child.white_obs), (BLACK, child.black_obs)):
                key = int(buf.obs_keys[i, player])
                # equal keys <=> equal observations over everything sampled
                assert key_to_obs.setdefault((player, key), obs) == obs, where
                assert obs_to_key.setdefault(obs, key) == key, where
            kind = move_kind(child.move)
            seen["promotion"] += kind == KIND_PROMOTION
            seen["castling"] += kind == KIND_CASTLING
            seen["en passant"] += kind == KIND_EN_PASSANT
            seen["king capture"] += child.terminal == Terminal.KING_CAPTURE
            seen["no moves"] += child.terminal == Terminal.NO_MOVES
    assert parents >= 1000
    assert len(obs_to_key) > 20_000
    assert all(count > 0 for count in seen.values()), seen


def test_king_capture_values_are_the_capturers_win() -> None:
    # white queen takes the black king on e8 (+1); in the mirror black takes the white king (-1)
    buf = ExpandBuffers.allocate()
    for fen, uci, value in (
        ("4k3/8/8/8/8/8/8/3QK3 w - - 0 1", "d1d8", 0.0),  # gives check: the game goes on
        ("4k3/4Q3/8/8/8/8/8/4K3 w - - 0 1", "e7e8", 1.0),
        ("4k3/8/8/8/8/8/4q3/4K3 b - - 0 1", "e2e1", -1.0),
    ):
        pos = from_fen(fen)
        n = expand(pos, buf)
        ucis = [move_to_uci(int(m)) for m in buf.moves[:n]]
        i = ucis.index(uci)
        assert float(buf.values[i]) == value
        assert Terminal(int(buf.terminal[i])) == (
            Terminal.KING_CAPTURE if value else Terminal.NONE
        )


def test_no_move_draw_matches_the_referee() -> None:
    # black: pawns on rank 2 blocked by their own pieces on rank 1, bishops boxed by the pawns,
    # king in the corner: no FoW move at all after any white move; docs/fow.md scores it a draw.
    pos = from_fen("7K/8/8/8/8/8/pppppppp/kbbbbbbb w - - 0 1")
    buf = ExpandBuffers.allocate()
    n = expand(pos, buf)
    assert n == 3
    assert list(buf.terminal[:n]) == [Terminal.NO_MOVES] * 3
    assert list(buf.values[:n]) == [0.0] * 3


def test_too_small_buffers_report_the_count_and_write_nothing_past_them() -> None:
    pos = from_fen(STARTING_FEN)
    big = ExpandBuffers.allocate(32)
    for arr in (big.children, big.moves, big.obs_keys, big.terminal, big.values):
        arr[...] = 7
    small = ExpandBuffers(
        big.children[:5], big.moves[:5], big.obs_keys[:5], big.terminal[:5], big.values[:5],
        big.count,
    )
    status = expand_kernel(
        pos, small.children, small.moves, small.obs_keys, small.terminal, small.values,
        small.count,
    )
    assert status == STATUS_TOO_SMALL
    assert int(big.count[0]) == 20  # the 20 opening moves
    for arr in (big.children, big.moves, big.obs_keys, big.terminal, big.values):
        assert np.all(arr[5:] == 7)
    with pytest.raises(ExpandError, match="20 children of 'rnbqkbnr/") as info:
        expand(pos, small)
    assert isinstance(info.value, CaligoError)


def test_a_finished_parent_is_refused() -> None:
    pos = from_fen("8/8/8/8/8/8/8/4K3 b - - 0 1")  # black's king was captured
    buf = ExpandBuffers.allocate()
    assert (
        expand_kernel(
            pos, buf.children, buf.moves, buf.obs_keys, buf.terminal, buf.values, buf.count
        )
        == STATUS_PARENT_OVER
    )
    with pytest.raises(ExpandError, match="king was captured"):
        expand(pos, buf)


def test_children_land_in_views_of_a_store() -> None:
    store = np.zeros((100, POS_WORDS), dtype=np.uint64)
    store[0] = from_fen(STARTING_FEN)
    first = 1
    buf = ExpandBuffers(
        children=store[first : first + MAX_MOVES // 4],
        moves=np.zeros(64, dtype=np.uint16),
        obs_keys=np.zeros((64, 2), dtype=np.uint64),
        terminal=np.zeros(64, dtype=np.int8),
        values=np.zeros(64),
        count=np.zeros(1, dtype=np.int64),
    )
    n = expand(store[0], buf)
    assert n == 20
    ref = expand_reference(store[0])
    for i in range(n):
        assert np.array_equal(store[first + i], ref[i].position)
    assert not store[first + n :].any()


def test_batch_and_boundary_keys_equal_the_kernel_keys() -> None:
    buf = ExpandBuffers.allocate()
    for pos in random_positions(200, seed=3):
        n = expand(pos, buf)
        keys = observation_keys(buf.children[:n])
        assert np.array_equal(keys, buf.obs_keys[:n])
        for i in range(min(n, 3)):
            for p in (WHITE, BLACK):
                assert observation_key(observe(buf.children[i], p)) == int(buf.obs_keys[i, p])


def test_bad_buffers_are_type_errors() -> None:
    pos = from_fen(STARTING_FEN)
    good = ExpandBuffers.allocate()
    with pytest.raises(TypeError, match="moves"):
        expand(pos, ExpandBuffers(good.children, good.moves.astype(np.int64), good.obs_keys,
                                  good.terminal, good.values, good.count))
    with pytest.raises(TypeError, match="position"):
        expand(pos.astype(np.int64), good)
    with pytest.raises(ValueError, match="capacity"):
        ExpandBuffers.allocate(-1)


def test_kernel_signature_keeps_bitboards_uint64() -> None:
    buf = ExpandBuffers.allocate()
    expand(from_fen(STARTING_FEN), buf)
    sigs = [str(s) for s in expand_kernel.signatures]
    assert any(s.startswith("(Array(uint64, 1, 'C'") and "Array(uint16" in s for s in sigs), sigs


def test_threads_expand_concurrently() -> None:
    positions = list(random_positions(300, seed=5))
    expected = []
    buf = ExpandBuffers.allocate()
    for pos in positions:
        n = expand(pos, buf)
        expected.append(buf.obs_keys[:n].copy())
    errors: list[str] = []

    def work() -> None:
        mine = ExpandBuffers.allocate()
        for pos, keys in zip(positions, expected, strict=True):
            n = expand(pos, mine)
            if not np.array_equal(mine.obs_keys[:n], keys):
                errors.append(to_fen(pos))

    run_threads(work, work)
    assert not errors
