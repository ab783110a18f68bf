"""StockfishPool against a direct python-chess UCI session, on Debian's real Stockfish 15.1.

Expected values: (a) python-chess's `chess.engine` driving its own Stockfish process with the
same options (Hash 1, Threads 1, MultiPV 256, depth 1, and depth 2 for `obscuro:sfdepth=2`), fed
the exact sequence of positions our pool sent (Stockfish's depth-1 scores depend on its hash and
history, so both sessions must see the same sequence from a fresh start); (b) python-chess's
board for which positions Stockfish can take (both kings present, the side not to move not
attacked); (c) the mate mapping as stated in caligo/fow/stockfish.py, checked by hand numbers
and on a back-rank mate.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
from collections.abc import Iterator

import chess
import chess.engine
import numpy as np
import pytest

from caligo.errors import CaligoError
from caligo.fow.evaluate import (
    DECIDED_VALUE,
    UNDECIDED,
    LeafEvaluator,
    SimpleEvalConfig,
    SimpleEvaluator,
    decided,
)
from caligo.fow.expand import ExpandBuffers, expand
from caligo.fow.movegen import legal_moves
from caligo.fow.position import (
    W_CLOCKS,
    WHITE,
    from_fen,
    move_to_uci,
    to_fen,
)
from caligo.fow.stockfish import (
    DEBIAN_DIR,
    StockfishConfig,
    StockfishEngine,
    StockfishError,
    StockfishNotFoundError,
    StockfishPool,
    fen_bytes,
    find_stockfish,
    mate_value,
    move_keys,
    score_value,
    uci_key,
)
from tests.fow.test_expand import random_positions, run_threads

SHORT = os.environ.get("CALIGO_SHORT") == "1"
STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path=DEBIAN_DIR)
needs_stockfish = pytest.mark.skipif(
    STOCKFISH is None,
    reason="Stockfish is not installed (Debian package `stockfish`; CI installs it)",
)
_POSITION = re.compile(rb"position fen ([^\n]+)\n")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Every byte string any StockfishEngine writes to its process, in order."""
    log: list[bytes] = []
    original = StockfishEngine._write

    def spy(self: StockfishEngine, data: bytes) -> None:
        log.append(bytes(data))
        original(self, data)

    monkeypatch.setattr(StockfishEngine, "_write", spy)
    yield log


def _fens(log: list[bytes]) -> list[str]:
    return [m.group(1).decode() for data in log for m in _POSITION.finditer(data)]


def _leaf(pos: np.ndarray, buf: ExpandBuffers) -> tuple[np.ndarray, np.ndarray]:
    n = expand(pos, buf)
    return buf.children[:n], buf.moves[:n]


def _two_knights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A quiet opening leaf (1. e4 e5 2. Nf3 Nc6): parent, children, moves."""
    parent = from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    children, moves = _leaf(parent, ExpandBuffers.allocate())
    return parent, children, moves


# --- no Stockfish needed ---------------------------------------------------------------------


def test_mate_mapping_by_hand() -> None:
    # d plies to mate: mate n > 0 -> d = 2n - 1; mate n <= 0 -> d = -2n; value 1 - (d + 1)/1000
    assert mate_value(1) == pytest.approx(0.998)
    assert mate_value(2) == pytest.approx(0.996)
    assert mate_value(0) == pytest.approx(-0.999)  # checkmated now
    assert mate_value(-1) == pytest.approx(-0.997)
    assert mate_value(-2) == pytest.approx(-0.995)
    assert mate_value(500) == pytest.approx(0.9)  # d capped at 99
    assert mate_value(-500) == pytest.approx(-0.9)
    ladder = [mate_value(n) for n in (0, -1, -2, -3, 3, 2, 1)]  # worst to best
    assert ladder == sorted(ladder)
    assert all(-1.0 < v < 1.0 for v in ladder)
    assert score_value(b"cp", 600) == pytest.approx(math.tanh(1.0))
    assert score_value(b"cp", -150) == pytest.approx(math.tanh(-0.25))
    with pytest.raises(ValueError, match="kind"):
        score_value(b"wdl", 1)


def test_fen_kernel_equals_to_fen_without_clocks_or_ep_in_check() -> None:
    dropped = 0
    for pos in random_positions(3000, seed=12):
        if decided(pos[None, :].copy())[0] != UNDECIDED:
            continue  # never sent
        zeroed = pos.copy()
        zeroed[W_CLOCKS] = np.uint64(1) << np.uint64(32)
        fields = to_fen(zeroed).split()
        if chess.Board(to_fen(pos)).is_check() and fields[3] != "-":
            fields[3] = "-"
            dropped += 1
        assert fen_bytes(pos).decode() == " ".join(fields)
    # the position Stockfish 15.1 crashed on: white in check from the d2 pawn, en passant c6
    crash = from_fen("r3k3/p2pqNb1/bn2p1p1/2pP1r2/PP2n3/R4P1Q/2Pp2PP/3BK2R w Kq c6 0 1")
    assert fen_bytes(crash) == b"r3k3/p2pqNb1/bn2p1p1/2pP1r2/PP2n3/R4P1Q/2Pp2PP/3BK2R w Kq - 0 1"
    assert dropped > 0


def test_move_keys_equal_uci_keys() -> None:
    seen_promotion = False
    for pos in random_positions(300, seed=13):
        moves = np.array(legal_moves(pos), dtype=np.uint16)
        keys = move_keys(moves)
        for m, k in zip(moves, keys, strict=True):
            uci = move_to_uci(int(m))
            seen_promotion |= len(uci) == 5
            assert uci_key(uci.encode()) == int(k), uci
    assert seen_promotion


def test_config_and_lookup_errors() -> None:
    with pytest.raises(StockfishNotFoundError, match="no Stockfish executable at") as info:
        find_stockfish("/nonexistent/stockfish")
    assert isinstance(info.value, CaligoError) and isinstance(info.value, FileNotFoundError)
    with pytest.raises(ValueError, match="depth"):
        StockfishConfig(depth=0)
    with pytest.raises(ValueError, match="call_timeout_s"):
        StockfishConfig(call_timeout_s=0.0)
    with pytest.raises(ValueError, match="cache_entries"):
        StockfishConfig(cache_entries=-1)


# --- real Stockfish --------------------------------------------------------------------------


@needs_stockfish
def test_never_sends_a_position_stockfish_cannot_take(sent: list[bytes]) -> None:
    buf = ExpandBuffers.allocate()
    refused_parents = 0
    decided_children = 0
    with StockfishPool() as pool:
        for pos in random_positions(120 if SHORT else 500, seed=31):
            children, moves = _leaf(pos, buf)
            values = pool.children(pos, children, moves)
            codes = decided(children)
            decided_children += int((codes != UNDECIDED).sum())
            assert np.array_equal(values[codes != UNDECIDED], DECIDED_VALUE[codes[codes != 0]])
            assert np.all(np.abs(values) <= 1.0)
            refused_parents += int(decided(pos[None, :].copy())[0] != UNDECIDED)
            # children whose king is already gone, or capturable, asked as single positions
            pool.evaluate(np.ascontiguousarray(children[codes != UNDECIDED][:4]))
        assert pool.stats().fallbacks == 0
    fens = _fens(sent)
    assert refused_parents > 0 and decided_children > 0  # the hard cases did occur
    assert len(fens) > 100
    for fen in fens:
        board = chess.Board(fen)
        kings = board.king(chess.WHITE), board.king(chess.BLACK)
        assert kings[0] is not None and kings[1] is not None, fen
        their_king = kings[1] if board.turn == chess.WHITE else kings[0]
        assert not board.is_attacked_by(board.turn, their_king), fen
        assert not board.is_check() or fen.split()[3] == "-", fen


@needs_stockfish
@pytest.mark.parametrize("depth", [1, 2])
def test_scores_match_a_python_chess_session(sent: list[bytes], depth: int) -> None:
    """At Obscuro's depth 1 and at depth 2 (`obscuro:sfdepth=2`): every child's value is the
    one python-chess's session reads at that depth."""
    buf = ExpandBuffers.allocate()
    leaves = []
    with StockfishPool(StockfishConfig(depth=depth)) as pool:
        for pos in random_positions(25 if SHORT else 100, seed=41):
            children, moves = _leaf(pos, buf)
            leaves.append((pos, children.copy(), moves.copy(), pool.children(pos, children, moves)))
        # a leaf with castling through check (f1 attacked): that child gets its own call
        pos = from_fen("r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1")
        children, moves = _leaf(pos, buf)
        leaves.append((pos, children.copy(), moves.copy(), pool.children(pos, children, moves)))
        assert pool.stats().own_calls >= 1
    fens = _fens(sent)
    assert len(fens) == len(set(fens))  # every position asked once (the cache)
    goes = re.findall(rb"go depth (\d+)", b"".join(sent))
    assert len(goes) == len(fens) and set(goes) == {str(depth).encode()}
    # replay the exact sequence in python-chess's own UCI session
    reference: dict[str, dict[str, float]] = {}
    assert STOCKFISH is not None
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
        engine.configure({"Hash": 1, "Threads": 1})
        for fen in fens:
            infos = engine.analyse(chess.Board(fen), chess.engine.Limit(depth=depth),
                                   multipv=256)
            reference[fen] = {
                info["pv"][0].uci(): _pychess_value(info["score"].relative)
                for info in infos
                if info.get("pv")
            }
    compared = own = 0
    for pos, children, moves, values in leaves:
        sign = 1.0 if int(pos[12]) == WHITE else -1.0
        lines = reference.get(fen_bytes(pos).decode(), {})
        codes = decided(children)
        for i, m in enumerate(moves):
            if codes[i] != UNDECIDED:
                continue
            uci = move_to_uci(int(m))
            if uci in lines:
                assert values[i] == pytest.approx(sign * lines[uci], abs=1e-12), (to_fen(pos), uci)
                compared += 1
            else:  # chess forbids the move: the child was asked on its own
                child_lines = reference[fen_bytes(children[i]).decode()]
                best = max(child_lines.values()) if child_lines else mate_value(0)
                assert values[i] == pytest.approx(-sign * best, abs=1e-12)
                own += 1
    assert compared > 500 and own >= 1


def _pychess_value(score: chess.engine.Score) -> float:
    cp = score.score()
    if cp is not None:
        return math.tanh(cp / 600)
    mate = score.mate()
    assert mate is not None
    return mate_value(mate)


@needs_stockfish
def test_mate_scores_on_a_back_rank_mate() -> None:
    parent = from_fen("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    buf = ExpandBuffers.allocate()
    children, moves = _leaf(parent, buf)
    ucis = [move_to_uci(int(m)) for m in moves]
    with StockfishPool() as pool:
        values = pool.children(parent, children, moves)
        mate = ucis.index("a1a8")
        assert values[mate] == pytest.approx(mate_value(1))  # Ra8 mates in 1: +0.998
        # the mated position itself, black to move: "mate 0" for black = -0.999, White +0.999
        after = np.ascontiguousarray(children[mate : mate + 1])
        assert pool.evaluate(after)[0] == pytest.approx(-mate_value(0))
        # black to move, the same back rank for white: black mates with ...Ra1 (mirror)
        mirror = from_fen("r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1")
        children, moves = _leaf(mirror, buf)
        values = pool.children(mirror, children, moves)
        i = [move_to_uci(int(m)) for m in moves].index("a8a1")
        assert values[i] == pytest.approx(-mate_value(1))


@needs_stockfish
def test_a_depth_one_value_already_resolves_the_captures_that_follow() -> None:
    """Why the leaf needs no quiescence check of its own (issue: "a quiescence-style check of
    hanging pieces"): `go depth 1` searches each root move to depth 0, where Stockfish runs its
    capture search, so a child that hangs a piece is valued after the recapture. Expected
    values from Stockfish itself: the queen taking a defended pawn (Qxd5 exd5) leaves king and
    pawn against king (about 0), every quiet queen move keeps a queen (about +6 pawns)."""
    parent = from_fen("4k3/8/4p3/3p4/8/8/3Q4/4K3 w - - 0 1")
    children, moves = _leaf(parent, ExpandBuffers.allocate())
    ucis = [move_to_uci(int(m)) for m in moves]
    with StockfishPool() as pool:
        values = pool.children(parent, children, moves)
    hangs = values[ucis.index("d2d5")]
    assert abs(hangs) < math.tanh(100 / 600)  # the queen is lost: no more than a pawn
    quiet = [values[ucis.index(u)] for u in ("d2c2", "d2e3", "d2h6", "d2a2")]
    assert min(quiet) > math.tanh(400 / 600)  # the queen kept: more than four pawns


def _fresh_leaf_values(fen: str) -> dict[str, float]:
    """Scores of a fresh python-chess session's first call on `fen` (side to move's view)."""
    assert STOCKFISH is not None
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
        engine.configure({"Hash": 1, "Threads": 1})
        infos = engine.analyse(chess.Board(fen), chess.engine.Limit(depth=1), multipv=256)
    return {i["pv"][0].uci(): _pychess_value(i["score"].relative) for i in infos if i.get("pv")}


def _sabotage(monkeypatch: pytest.MonkeyPatch, how: signal.Signals) -> list[int]:
    """Make the next `go` meet a dead (SIGKILL) or frozen (SIGSTOP) engine; return the pids."""
    victims: list[int] = []
    original = StockfishEngine._write

    def write(self: StockfishEngine, data: bytes) -> None:
        if b"go depth" in data and not victims and self._proc is not None:
            victims.append(self._proc.pid)
            os.kill(self._proc.pid, how)
            if how == signal.SIGKILL:
                self._proc.wait(timeout=30)
        original(self, data)

    monkeypatch.setattr(StockfishEngine, "_write", write)
    return victims


@needs_stockfish
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["crash", "hang"])
def test_a_dead_or_hung_engine_is_restarted_and_the_call_returns_the_right_values(
    monkeypatch: pytest.MonkeyPatch, how: signal.Signals
) -> None:
    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 0 1"
    expected = _fresh_leaf_values(fen)  # a restarted engine is fresh: its first call
    parent = from_fen(fen)
    buf = ExpandBuffers.allocate()
    children, moves = _leaf(parent, buf)
    with StockfishPool(StockfishConfig(call_timeout_s=0.5)) as pool:
        first_pid = pool.engine().pid
        victims = _sabotage(monkeypatch, how)
        values = pool.children(parent, children, moves)
        assert victims == [first_pid]
        assert pool.engine().pid != first_pid
        stats = pool.stats()
        assert stats.restarts == 1 and stats.fallbacks == 0
    codes = decided(children)
    for i, m in enumerate(moves):
        if codes[i] == UNDECIDED:
            assert values[i] == pytest.approx(expected[move_to_uci(int(m))], abs=1e-12)
    with pytest.raises(ProcessLookupError):
        os.kill(victims[0], 0)  # the old process is gone (reaped)


@needs_stockfish
def test_an_engine_that_keeps_failing_falls_back_to_the_builtin_evaluator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent, children, moves = _two_knights()
    with StockfishPool(StockfishConfig(max_retries=1, call_timeout_s=0.5)) as pool:
        pool.engine()
        original = StockfishEngine._write

        def always_dies(self: StockfishEngine, data: bytes) -> None:
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait(timeout=30)
            original(self, data)

        monkeypatch.setattr(StockfishEngine, "_write", always_dies)
        values = pool.children(parent, children, moves)
        assert pool.stats().fallbacks == 1
    see = SimpleEvaluator(SimpleEvalConfig(exchange=True))  # what eval=auto plays without it
    assert np.array_equal(values, see.evaluate(np.ascontiguousarray(children)))


@needs_stockfish
def test_each_thread_gets_its_own_engine_and_close_stops_them(sent: list[bytes]) -> None:
    positions = list(random_positions(40, seed=51))
    pool = StockfishPool()
    pids: list[int | None] = []
    errors: list[BaseException] = []

    def work(part: list[np.ndarray]) -> None:
        try:
            buf = ExpandBuffers.allocate()
            for pos in part:
                children, moves = _leaf(pos, buf)
                values = pool.children(pos, children, moves)
                assert np.all(np.abs(values) <= 1.0)
            pids.append(pool.engine().pid)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    run_threads(lambda: work(positions[0::2]), lambda: work(positions[1::2]))
    assert not errors, errors
    assert len(set(pids)) == 2 and pool.stats().engines == 2
    engines = list(pool._engines)
    pool.close()
    assert all(e.pid is None for e in engines)
    for pid in pids:
        assert pid is not None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    buf = ExpandBuffers.allocate()
    children, moves = _leaf(positions[0], buf)
    with pytest.raises(StockfishError, match="closed"):
        pool.children(positions[0], children, moves)
    assert sent[-1] == b"quit\n" or b"quit\n" in sent


@needs_stockfish
def test_the_cache_answers_a_repeated_leaf_without_the_engine(sent: list[bytes]) -> None:
    parent, children, moves = _two_knights()
    with StockfishPool() as pool:
        first = pool.children(parent, children, moves).copy()
        writes = len(sent)
        again = pool.children(parent, children, moves)
        assert len(sent) == writes
        assert np.array_equal(first, again)
        assert pool.stats().leaf_cache_hits == 1
        # the clocks are not part of the key and not sent: same leaf, other clocks
        clocked = parent.copy()
        clocked[W_CLOCKS] = np.uint64(57) | (np.uint64(40) << np.uint64(32))
        assert np.array_equal(pool.children(clocked, children, moves), first)


@needs_stockfish
def test_bad_leaf_arguments_are_type_errors() -> None:
    parent, children, moves = _two_knights()
    with StockfishPool() as pool:
        evaluators: list[LeafEvaluator] = [pool, SimpleEvaluator()]  # one interface (mypy)
        assert all(callable(e.children) for e in evaluators)
        with pytest.raises(TypeError, match="moves"):
            pool.children(parent, children, moves.astype(np.int64))
        with pytest.raises(ValueError, match="child rows"):
            pool.children(parent, children[:3], moves)
        with pytest.raises(TypeError, match="parent"):
            pool.children(parent[:8], children, moves)


@needs_stockfish
def test_a_large_batch_is_pipelined_in_chunks(sent: list[bytes]) -> None:
    rows = [p for p in random_positions(600, seed=61) if decided(p[None, :].copy())[0] == 0]
    positions = np.ascontiguousarray(np.stack(rows[:200]))
    with StockfishPool(StockfishConfig(cache_entries=0)) as pool:
        values = pool.evaluate(positions)
        stats = pool.stats()
    assert stats.own_calls == 200 and stats.restarts == 0 and stats.fallbacks == 0
    assert np.all(np.abs(values) < 1.0)
    batches = [data.count(b"go depth") for data in sent if b"go depth" in data]
    assert batches == [64, 64, 64, 8]


@needs_stockfish
def test_own_call_cap_gives_the_rest_the_builtin_value(sent: list[bytes]) -> None:
    # white to move can take the black king (Re1xe8): Stockfish refuses the parent, so every
    # other child needs its own call; with a cap of 3, three get one, the rest the built-in
    # evaluator with its exchange check (what eval=auto plays without Stockfish)
    parent = from_fen("4k3/8/8/8/8/8/8/K3R3 w - - 0 1")
    children, moves = _leaf(parent, ExpandBuffers.allocate())
    codes = decided(children)
    open_ = np.flatnonzero(codes == UNDECIDED)
    assert open_.size > 3
    with StockfishPool(StockfishConfig(own_call_cap=3)) as pool:
        values = pool.children(parent, children, moves)
        stats = pool.stats()
    assert stats.leaf_calls == 0 and stats.own_calls == 3 and stats.capped == open_.size - 3
    assert len(_fens(sent)) == 3
    see = SimpleEvaluator(SimpleEvalConfig(exchange=True))
    builtin = see.evaluate(np.ascontiguousarray(children))
    assert np.array_equal(values[open_[3:]], builtin[open_[3:]])
    capture = [move_to_uci(int(m)) for m in moves].index("e1e8")
    assert values[capture] == 1.0
    with pytest.raises(ValueError, match="own_call_cap"):
        StockfishConfig(own_call_cap=-1)


@needs_stockfish
def test_one_slot_engine_asked_from_two_threads_answers_each_its_own() -> None:
    """A SlotPool's slot-0 engine serves any unbound thread (a move's overdue work and the next
    job of the same worker may overlap): requests are taken one at a time, so each thread gets
    the values a lone call gives (the reference: the same positions evaluated alone first, up
    to Stockfish's own drift between calls)."""
    import threading

    from caligo.fow.stockfish import SlotPool

    rows = [p for p in random_positions(400, seed=67) if decided(p[None, :].copy())[0] == 0]
    a = np.ascontiguousarray(np.stack(rows[:40]))
    b = np.ascontiguousarray(np.stack(rows[40:80]))
    with SlotPool(StockfishConfig(cache_entries=0)) as pool:
        alone = (pool.evaluate(a), pool.evaluate(b))
        got: dict[str, np.ndarray] = {}
        go = threading.Barrier(2)

        def ask(name: str, positions: np.ndarray) -> None:
            go.wait()
            got[name] = pool.evaluate(positions)

        threads = [threading.Thread(target=ask, args=(n, p)) for n, p in (("a", a), ("b", b))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        stats = pool.stats()
    # every position answered by the one engine, none misread: no restart, no fallback
    assert stats.engines == 1 and stats.restarts == 0 and stats.fallbacks == 0
    assert stats.own_calls == 160
    # Stockfish's depth-1 score depends a little on its history tables (the order of calls),
    # not on which thread asked: the same positions score as alone, within that drift
    np.testing.assert_allclose(got["a"], alone[0], atol=0.2)
    np.testing.assert_allclose(got["b"], alone[1], atol=0.2)


@needs_stockfish
def test_an_unbound_call_spreads_over_the_started_slots() -> None:
    """A SlotPool started with two slots: a call from an unbound thread (the agent's own, the
    subgame's roots) gives each engine a contiguous half of the positions, answered as one
    engine answers them (the reference: a one-slot pool; up to Stockfish's drift between call
    orders, as above); a thread bound to a slot (an expander) keeps to its own engine; an
    error in one part is raised once every part has ended."""
    import threading

    from caligo.fow.stockfish import SlotPool

    rows = [p for p in random_positions(400, seed=71) if decided(p[None, :].copy())[0] == 0]
    positions = np.ascontiguousarray(np.stack(rows[:41]))
    with SlotPool(StockfishConfig(cache_entries=0)) as one:
        one.start(1)
        assert one.width == 1
        alone = one.evaluate(positions)
    with SlotPool(StockfishConfig(cache_entries=0)) as pool:
        pool.start(2)
        assert pool.width == 2
        spread = pool.evaluate(positions)
        calls = [pool._slots[s].calls for s in (0, 1)]
        assert calls == [20, 21]  # contiguous halves, one per engine
        assert pool.stats().own_calls == 41 and pool.stats().restarts == 0
        np.testing.assert_allclose(spread, alone, atol=0.2)

        widths: list[int] = []

        def expander() -> None:
            pool.bind(0)
            widths.append(pool.width)
            pool.evaluate(positions[:4])

        th = threading.Thread(target=expander)
        th.start()
        th.join()
        assert widths == [1] and pool._slots[0].calls == 24 and pool._slots[1].calls == 21

        ended: list[str] = []

        def fails() -> None:
            raise StockfishError("part 0 failed")

        def slow() -> None:
            threading.Event().wait(0.05)
            ended.append("part 1")

        with pytest.raises(StockfishError, match="part 0 failed"):
            pool.spread([fails, slow])
        assert ended == ["part 1"]
        with pytest.raises(ValueError, match="3 jobs for 2 engines"):
            pool.spread([slow, slow, slow])
