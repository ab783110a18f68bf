"""Stockfish as the FoW leaf evaluator: one depth-1 MultiPV call scores a whole expanded leaf.

Obscuro, appendix C.5: when a leaf is expanded, Stockfish runs "in MultiPV mode, at depth 1" on the
*parent*, "which gives evaluations for all children in a single call", clamped to [-1, 1] as
ZS21 does (Zhang & Sandholm 2021, appendix D.1: x -> tanh(x / tau), tau = 6 pawns). `StockfishPool`
does that over raw UCI pipes to Debian's Stockfish 15.1 (`Hash 1`, `Threads 1`, `MultiPV 256`, `go
depth 1`), one process per calling thread, and returns White's values for the whole leaf at once.

What Stockfish cannot be asked, and what is asked instead (docs/design.md, "Traps"):

- A position with a missing king crashes it, and one where the side to move can capture the
  enemy king gets no score. Such positions are *decided* by the rules (`evaluate.decided`: the
  capturer won, or the side to move takes the king next; also the no-move draw) and are scored
  exactly (+-1, 0) before anything reaches the engine. Children are classified that way first;
  a parent that is itself decided is never searched.
- FoW moves that chess forbids are missing from the MultiPV lines: moving into or staying in
  check, and leaving a pinned piece's king open, give a child where the opponent captures the
  king (decided: a loss for the mover); castling out of or through check gives a legal child
  that Stockfish never scored, so it gets its own `go depth 1` (its value negated). So do all
  open children of a parent whose side to move could capture the king (that parent is refused).
  Own calls are pipelined: all their commands are written at once and the answers read in order.
- Positions are sent as FEN with the clocks reset (`0 1`): the search ignores the 50-move rule
  (the clock is hidden and the belief set does not track it), so the engine must not score a
  clock-based draw, and a cached value must not depend on a clock.

Score mapping (the side to move's view of the searched position; White's view is the sign of
the mover times that):

    score cp x      tanh(x / 600)
    score mate n    a mate d plies away, d = 2n - 1 for n > 0 (the side to move mates) and
                    d = -2n for n <= 0 (it is mated; "mate 0" = checkmated now), scores
                    +-(1 - (min(d, 99) + 1) / 1000): mate in 1 = +0.998, mated now = -0.999,
                    mated in 1 = -0.997; always strictly inside (-1, 1), where only decided
                    positions lie. A chess checkmate is a FoW loss: every FoW reply leaves the
                    king capturable (castling out of check to a safe square excepted).
    no legal move   ("info depth 0 score cp 0", chess stalemate) every FoW move walks into
                    capture, so it is scored like being mated now: -0.999.

Cache: the engine's answers keyed by the searched position's Zobrist key
(`position.zobrist_key`: pieces, side, castling, en-passant square), so one answer serves both a
leaf call on a position and an own call on it; and whole leaves (White's values of all
children) keyed by the parent's key, the move list compared on a hit. Both are bounded LRU maps
shared by the pool's threads (`cache_entries` each; about 1 KB per entry).

Failures: every read has a deadline (`call_timeout_s`). A crashed (EOF, broken pipe) or hung
(no answer in time) engine is killed, restarted and asked the same thing again, up to
`max_retries` times; if it still fails, the affected children get the built-in evaluator's
values and the failure is logged and counted, so a game is never lost to the engine.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import select
import shutil
import subprocess
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
from numba import njit

from caligo.errors import CaligoError
from caligo.fow.bitboard import U1, lsb
from caligo.fow.evaluate import (
    DECIDED_VALUE,
    UNDECIDED,
    SimpleEvaluator,
    _check_positions,
    _out,
    decided,
)
from caligo.fow.expand import _check_array, _check_position
from caligo.fow.position import (
    KIND_PROMOTION,
    KING,
    NO_EP,
    POS_WORDS,
    W_CASTLE,
    W_EP,
    W_STM,
    WHITE,
    square_attacked,
    zobrist_key,
)

logger = logging.getLogger(__name__)

DEBIAN_DIR = "/usr/games"
"""Where Debian's `stockfish` package installs the binary (not on every PATH)."""

MATE_STEP = 1e-3
MATE_MAX_PLIES = 99
PIPELINE = 64
"""Positions per pipelined write: about 6 KB of commands, so the write never blocks on a full
pipe (64 KB) while the engine waits for us to read its answers."""
FEN_BYTES = 96
"""Longest FEN `_fen_kernel` writes: 71 board + ' w KQkq e3 0 1' (uint8 buffer size)."""


class StockfishError(CaligoError):
    """Stockfish could not be started or kept answering; the message says what happened."""


class StockfishNotFoundError(StockfishError, FileNotFoundError):
    """No Stockfish executable where it was looked for."""


class _EngineFailure(Exception):
    """Internal: the process died, hung or refused; the caller restarts and retries."""


@dataclass(frozen=True)
class StockfishConfig:
    """How to run Stockfish. Defaults are Obscuro, appendix C.5's setting on one core per engine."""

    path: str | None = None
    """Executable; None: `stockfish` on PATH, then Debian's /usr/games/stockfish."""
    hash_mb: int = 1
    threads: int = 1
    multipv: int = 256
    depth: int = 1
    scale_cp: float = 600.0
    """tau of tanh(cp / tau), Zhang & Sandholm 2021, appendix D.1 (6 pawns)."""
    call_timeout_s: float = 2.0
    """Longest wait for one answer before the engine counts as hung."""
    start_timeout_s: float = 20.0
    max_retries: int = 3
    """Restarts per call before falling back to the built-in evaluator."""
    cache_entries: int = 50_000
    """Entries of each LRU cache (leaves, single positions); 0 turns caching off."""
    max_engines: int = 16
    """At most this many processes (one per calling thread)."""
    own_call_cap: int | None = None
    """At most this many own calls per leaf; None: no cap (every child is Stockfish's). Past
    the cap, in move order, children get the built-in evaluator's value. A leaf whose side to
    move can capture the king needs an own call per child, and its other moves are all
    dominated by the capture; opowell's engine caps these calls at 8 (docs/design.md, "Leaf values
    and Stockfish")."""

    def __post_init__(self) -> None:
        for name in ("hash_mb", "threads", "multipv", "depth", "max_engines"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"StockfishConfig.{name} must be an int >= 1: {value!r}")
        for name in ("max_retries", "cache_entries"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"StockfishConfig.{name} must be an int >= 0: {value!r}")
        for name in ("scale_cp", "call_timeout_s", "start_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
                raise ValueError(f"StockfishConfig.{name} must be a number > 0: {value!r}")
        if self.own_call_cap is not None and (
            not isinstance(self.own_call_cap, int) or self.own_call_cap < 0
        ):
            raise ValueError(f"StockfishConfig.own_call_cap must be None or an int >= 0: "
                             f"{self.own_call_cap!r}")
        if self.path is not None and not isinstance(self.path, str):
            raise ValueError(f"StockfishConfig.path must be a string: {self.path!r}")


@dataclass(frozen=True)
class PoolStats:
    """Counters of a pool since it was made (all engines, all threads)."""

    engines: int
    leaf_calls: int
    """`go` commands on parents (one per uncached leaf with open children)."""
    own_calls: int
    """`go` commands on single positions (chess-forbidden moves, refused parents, roots)."""
    leaf_cache_hits: int
    answer_cache_hits: int
    """Positions whose engine answer came from the cache."""
    restarts: int
    fallbacks: int
    """Calls answered by the built-in evaluator after the engine failed `max_retries` times."""
    capped: int
    """Children given the built-in evaluator's value past `own_call_cap`."""
    engine_seconds: float
    """Wall time spent waiting on engine answers."""


def find_stockfish(path: str | None = None) -> str:
    """Return the Stockfish executable: `path`, else `stockfish` on PATH, else Debian's."""
    if path is not None:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise StockfishNotFoundError(f"no Stockfish executable at {path!r}")
    found = shutil.which("stockfish") or shutil.which("stockfish", path=DEBIAN_DIR)
    if found is None:
        raise StockfishNotFoundError(
            f"stockfish not found on PATH or in {DEBIAN_DIR}; install Debian's `stockfish`"
        )
    return found


def mate_value(n: int) -> float:
    """Return the value of UCI `score mate n` for the side to move (module docstring)."""
    plies = 2 * n - 1 if n > 0 else -2 * n
    v = 1.0 - (min(plies, MATE_MAX_PLIES) + 1) * MATE_STEP
    return v if n > 0 else -v


def score_value(kind: bytes, amount: int, scale_cp: float = 600.0) -> float:
    """Return the value in [-1, 1] of a UCI score (`b"cp"` or `b"mate"`, side to move's view)."""
    if kind == b"cp":
        return math.tanh(amount / scale_cp)
    if kind == b"mate":
        return mate_value(amount)
    raise ValueError(f"unknown UCI score kind: {kind!r}")


# --- FEN and move keys -----------------------------------------------------------------------

_PIECE_CHARS = np.frombuffer(b"PNBRQKpnbrqk", dtype=np.uint8).copy()
_CASTLE_CHARS = np.frombuffer(b"KQkq", dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def _fen_kernel(pos: np.ndarray, out: np.ndarray) -> int:
    """Write the FEN Stockfish is sent for `pos` into out; return its length in bytes.

    pos uint64 (16,) with both kings; out uint8 (>= FEN_BYTES,). As `position.to_fen` but with
    clocks "0 1", and without the en-passant square when the side to move is in check (see
    `fen_bytes`).
    """
    board = np.full(64, -1, dtype=np.int64)
    for code in range(12):
        bb = pos[code]
        while bb:
            board[lsb(bb)] = code
            bb &= bb - U1
    n = 0
    for rank in range(7, -1, -1):
        empty = 0
        for f in range(8):
            code = board[8 * rank + f]
            if code < 0:
                empty += 1
                continue
            if empty:
                out[n] = 48 + empty
                n += 1
                empty = 0
            out[n] = _PIECE_CHARS[code]
            n += 1
        if empty:
            out[n] = 48 + empty
            n += 1
        if rank:
            out[n] = 47  # '/'
            n += 1
    out[n] = 32
    out[n + 1] = 119 if pos[W_STM] == 0 else 98  # 'w' / 'b'
    out[n + 2] = 32
    n += 3
    cr = int(pos[W_CASTLE])
    if cr == 0:
        out[n] = 45  # '-'
        n += 1
    for i in range(4):
        if cr & (1 << i):
            out[n] = _CASTLE_CHARS[i]
            n += 1
    out[n] = 32
    n += 1
    ep = np.int64(pos[W_EP])
    stm = int(pos[W_STM])
    king = pos[stm * 6 + KING]
    if ep < NO_EP and king and square_attacked(pos, lsb(king), 1 - stm):
        ep = np.int64(NO_EP)
    if ep >= NO_EP:
        out[n] = 45
        n += 1
    else:
        out[n] = 97 + (ep & 7)
        out[n + 1] = 49 + (ep >> 3)
        n += 2
    for ch in (32, 48, 32, 49):  # " 0 1"
        out[n] = ch
        n += 1
    return n


def fen_bytes(pos: np.ndarray, buf: np.ndarray | None = None) -> bytes:
    """Return the FEN Stockfish is sent for `pos` (a position it can take), as ASCII bytes.

    Clocks are "0 1" (module docstring). The en-passant square is left out when the side to
    move is in check: Stockfish 15.1 generates an en-passant capture as a check evasion on the
    assumption that the checker is the pawn that just moved (the only way in chess), so with a
    FoW check by another knight or pawn it plays an illegal capture and crashes (SIGSEGV; found
    by the tests). The en-passant child is then missing from the MultiPV lines and gets its
    own call like every move chess forbids.
    """
    if buf is None:
        buf = np.empty(FEN_BYTES, dtype=np.uint8)
    n = _fen_kernel(pos, buf)
    return buf[:n].tobytes()


def move_keys(moves: np.ndarray) -> np.ndarray:
    """Return int64 keys of uint16 moves, equal to `uci_key` of their UCI text:
    from | to << 6 | p << 12 with p = 0 for no promotion, 1..4 for n, b, r, q."""
    m = moves.astype(np.int64)
    promo = np.where(((m >> 14) & 3) == KIND_PROMOTION, ((m >> 12) & 3) + 1, 0)
    return (m & 0xFFF) | (promo << 12)


_PROMO_KEY = {ord("n"): 1, ord("b"): 2, ord("r"): 3, ord("q"): 4}


@functools.cache
def uci_key(uci: bytes) -> int:
    """Return the key (`move_keys`) of a UCI move in bytes, e.g. b"e7e8q"."""
    frm = (uci[0] - 97) + 8 * (uci[1] - 49)
    to = (uci[2] - 97) + 8 * (uci[3] - 49)
    promo = _PROMO_KEY[uci[4]] if len(uci) > 4 else 0
    return frm | (to << 6) | (promo << 12)


_LINE = re.compile(
    rb"multipv \d+ score (cp|mate) (-?\d+)[^\n]*? pv ([a-h][1-8][a-h][1-8][nbrq]?)"
)
_NO_MOVE = re.compile(rb"info depth 0 score (cp|mate) (-?\d+)")


@dataclass(frozen=True)
class Answer:
    """One `go` answer: the scored moves (sorted keys) and the position's own value.

    keys int64 (k,) sorted `move_keys`; values float64 (k,) each move's value for the side to
    move; best: the position's value for its side to move (the best line; with no legal chess
    move, checkmate or stalemate, `mate_value(0)`: every FoW move then leaves the king
    capturable, castling out of check to a safe square aside).
    """

    keys: np.ndarray
    values: np.ndarray
    best: float


def parse_answer(block: bytes, scale_cp: float = 600.0) -> Answer:
    """Parse one `go` answer (the engine's text up to `bestmove`); raise StockfishError if it
    holds no score at all. A move printed twice keeps its last (deepest) line."""
    lines = {
        uci_key(uci): (
            math.tanh(int(amount) / scale_cp) if kind == b"cp" else mate_value(int(amount))
        )
        for kind, amount, uci in _LINE.findall(block)
    }
    if not lines:
        if _NO_MOVE.search(block) is None:
            raise StockfishError(f"no score in the Stockfish answer {block[-200:]!r}")
        empty = np.empty(0, dtype=np.int64)
        return Answer(empty, np.empty(0, dtype=np.float64), mate_value(0))
    keys = np.fromiter(lines.keys(), dtype=np.int64, count=len(lines))
    values = np.fromiter(lines.values(), dtype=np.float64, count=len(lines))
    order = np.argsort(keys)
    return Answer(keys[order], values[order], float(values.max()))


# --- one engine process ----------------------------------------------------------------------


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process and reap it (also when stopped); close its pipes."""
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            logger.error("Stockfish pid %d did not die after SIGKILL", proc.pid)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


class StockfishEngine:
    """One Stockfish process over raw UCI pipes. Not thread-safe: one per thread (the pool)."""

    def __init__(self, path: str, config: StockfishConfig) -> None:
        self.path = path
        self.config = config
        self.restarts = 0
        self.calls = 0
        self.seconds = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None  # type: ignore[type-arg]
        self._buf = bytearray()
        self._closed = False
        # one request at a time: a slot's engine may be asked from two threads when a move's
        # overdue work still runs as the next job of the same worker starts (caligo.limits)
        self._request = threading.RLock()
        self._run(b"", 0)  # start now: a broken binary shows at once, not mid-search

    @property
    def pid(self) -> int | None:
        """The running process id, None while there is none."""
        return None if self._proc is None else self._proc.pid

    @property
    def closed(self) -> bool:
        """True after `close`."""
        return self._closed

    # pipe I/O ------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Write raw UCI text to the engine's stdin."""
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:  # BrokenPipeError once the process died
            raise _EngineFailure(f"cannot write to the engine: {exc}") from None

    def _read_blocks(self, token: bytes, count: int, timeout: float) -> list[bytes]:
        """Read until `count` lines starting with `token` arrived; return the text up to and
        including each of them. Each block must arrive within `timeout` seconds."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf = self._buf
        blocks: list[bytes] = []
        scan = 0
        deadline = time.monotonic() + timeout
        while len(blocks) < count:
            idx = buf.find(token, scan)
            while idx > 0 and buf[idx - 1] != 10:  # not at a line start
                idx = buf.find(token, idx + 1)
            if idx >= 0:
                end = buf.find(b"\n", idx)
                if end >= 0:
                    blocks.append(bytes(buf[: end + 1]))
                    del buf[: end + 1]
                    scan = 0
                    deadline = time.monotonic() + timeout
                    continue
                scan = idx  # the token's line is still arriving
            else:
                scan = max(0, len(buf) - len(token))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _EngineFailure(f"no {token.decode()!r} within {timeout:g} s (hung)")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _EngineFailure(f"no {token.decode()!r} within {timeout:g} s (hung)")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = self._proc.poll()
                raise _EngineFailure(f"the engine exited (status {code})")
            buf += chunk
        return blocks

    # life cycle ----------------------------------------------------------------------------

    def _start(self) -> None:
        """Start the process and configure it; raise _EngineFailure if it does not answer."""
        self._buf.clear()
        try:
            proc = subprocess.Popen(
                [self.path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
            )
        except OSError as exc:
            raise StockfishError(f"cannot start Stockfish {self.path!r}: {exc}") from exc
        self._proc = proc
        self._finalizer = weakref.finalize(self, _kill, proc)
        cfg = self.config
        self._write(b"uci\n")
        self._read_blocks(b"uciok", 1, cfg.start_timeout_s)
        self._write(
            b"setoption name Hash value %d\n"
            b"setoption name Threads value %d\n"
            b"setoption name MultiPV value %d\n"
            b"ucinewgame\nisready\n" % (cfg.hash_mb, cfg.threads, cfg.multipv)
        )
        self._read_blocks(b"readyok", 1, cfg.start_timeout_s)

    def _stop_process(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps
            self._finalizer = None
        self._proc = None
        self._buf.clear()

    def new_game(self) -> None:
        """Forget the previous game: `ucinewgame` clears Stockfish's hash table and its search
        histories (`Search::clear`), so a depth-limited search answers as a fresh process
        would; restart the process if it does not answer."""
        if self._closed:
            raise StockfishError("the engine was closed")
        if self._proc is None:
            self._run(b"", 0)
            return
        try:
            self._write(b"ucinewgame\nisready\n")
            self._read_blocks(b"readyok", 1, self.config.start_timeout_s)
        except _EngineFailure as exc:
            logger.warning("Stockfish pid %s failed on ucinewgame (%s); restarting", self.pid, exc)
            self.restart()

    def restart(self) -> None:
        """Kill the process and start a new one (history and hash start empty)."""
        self._stop_process()
        self.restarts += 1
        self._start()

    def close(self) -> None:
        """Ask the engine to quit, kill it if it does not within a second; idempotent."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                self._write(b"quit\n")
                proc.wait(timeout=1.0)
            except (_EngineFailure, subprocess.TimeoutExpired):
                pass
        self._stop_process()

    # searching -----------------------------------------------------------------------------

    def search(self, fens: Sequence[bytes], movetime_ms: int | None = None) -> list[bytes]:
        """Run `go depth D` on each FEN (`go depth D movetime T` with a time limit: the first
        one reached stops the search), pipelined; return each raw answer (up to bestmove).

        Commands go out in chunks of `PIPELINE` positions, each chunk written at once and its
        answers read in order (a chunk fits the pipe, so writing it never waits on the engine,
        which may itself be waiting for us to read). A crash or hang restarts the engine and
        repeats the chunk, up to `max_retries` times; then StockfishError.
        """
        if self._closed:
            raise StockfishError("the engine was closed")
        depth = b"go depth %d\n" % self.config.depth
        if movetime_ms is not None:
            depth = b"go depth %d movetime %d\n" % (self.config.depth, max(1, int(movetime_ms)))
        blocks: list[bytes] = []
        for i in range(0, len(fens), PIPELINE):
            chunk = fens[i : i + PIPELINE]
            payload = b"".join(b"position fen " + fen + b"\n" + depth for fen in chunk)
            blocks += self._run(payload, len(chunk))
        self.calls += len(fens)
        return blocks

    def _run(self, payload: bytes, answers: int) -> list[bytes]:
        """Write `payload`, read `answers` bestmove blocks; restart and repeat on failure (one
        request at a time, whichever thread asks)."""
        with self._request:
            return self._run_locked(payload, answers)

    def _run_locked(self, payload: bytes, answers: int) -> list[bytes]:
        failure: _EngineFailure | None = None
        tries = self.config.max_retries + 1
        for attempt in range(tries):
            t = time.perf_counter()
            try:
                if self._proc is None:
                    self._start()
                if not answers:
                    return []
                self._write(payload)
                return self._read_blocks(b"bestmove", answers, self.config.call_timeout_s)
            except _EngineFailure as exc:
                failure = exc
                logger.warning(
                    "Stockfish pid %s failed (%s) on %r; restarting (attempt %d of %d)",
                    self.pid, exc, payload[:100], attempt + 1, tries,
                )
                self._stop_process()
                self.restarts += 1
            finally:
                self.seconds += time.perf_counter() - t
        raise StockfishError(f"Stockfish failed {tries} times on {payload[:100]!r}: {failure}")


# --- the pool --------------------------------------------------------------------------------


class _Lru:
    """A bounded LRU map shared by threads (a lock around an OrderedDict)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[int, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: int) -> Any:
        if not self.capacity:
            return None
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: int, value: Any) -> None:
        if not self.capacity:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.capacity:
                self._data.popitem(last=False)


@dataclass
class _Counters:
    leaf_calls: int = 0
    own_calls: int = 0
    leaf_cache_hits: int = 0
    answer_cache_hits: int = 0
    fallbacks: int = 0
    capped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, k: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + k)


class StockfishPool:
    """Stockfish leaf evaluation for FoW search threads: one engine process per thread.

    `children(parent, children, moves, out)` returns White's values in [-1, 1] of a whole
    expanded leaf (children uint64 (n, 16), row i after moves[i]); `evaluate(positions)` scores
    single positions. Both run on the calling thread's own engine (`engine()`), started on
    first use; caches and counters are shared. Close the pool (or use it as a context manager)
    to stop every process.
    """

    def __init__(self, config: StockfishConfig | None = None) -> None:
        self.config = config if config is not None else StockfishConfig()
        self.path = find_stockfish(self.config.path)
        self._local = threading.local()
        self._engines: list[StockfishEngine] = []
        self._lock = threading.Lock()
        self._leaves = _Lru(self.config.cache_entries)
        self._answers = _Lru(self.config.cache_entries)
        self._counters = _Counters()
        self._fallback = SimpleEvaluator()
        self._closed = False

    def __enter__(self) -> StockfishPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def engine(self) -> StockfishEngine:
        """Return the calling thread's engine, starting it on first use."""
        eng: StockfishEngine | None = getattr(self._local, "engine", None)
        if eng is not None and not eng.closed:
            return eng
        with self._lock:
            if self._closed:
                raise StockfishError("the Stockfish pool was closed")
            live = sum(1 for e in self._engines if not e.closed)
            if live >= self.config.max_engines:
                raise StockfishError(
                    f"{live} Stockfish engines already run (max_engines = "
                    f"{self.config.max_engines}); one per calling thread"
                )
            eng = StockfishEngine(self.path, self.config)
            self._engines.append(eng)
        self._local.engine = eng
        return eng

    def new_game(self) -> None:
        """Start a new game on every engine (`StockfishEngine.new_game`) and forget the caches
        and counters: the next game's scores are those a fresh pool would give."""
        with self._lock:
            engines = [e for e in self._engines if not e.closed]
            self._leaves = _Lru(self.config.cache_entries)
            self._answers = _Lru(self.config.cache_entries)
            self._counters = _Counters()
        for eng in engines:
            eng.new_game()

    def close(self) -> None:
        """Stop every engine process; idempotent."""
        with self._lock:
            self._closed = True
            engines = list(self._engines)
        for eng in engines:
            eng.close()

    def stats(self) -> PoolStats:
        """Return the counters so far."""
        with self._lock:
            engines = list(self._engines)
        c = self._counters
        return PoolStats(
            engines=len(engines),
            leaf_calls=c.leaf_calls,
            own_calls=c.own_calls,
            leaf_cache_hits=c.leaf_cache_hits,
            answer_cache_hits=c.answer_cache_hits,
            restarts=sum(e.restarts for e in engines),
            fallbacks=c.fallbacks,
            capped=c.capped,
            engine_seconds=sum(e.seconds for e in engines),
        )

    # evaluation ----------------------------------------------------------------------------

    def children(
        self,
        parent: np.ndarray,
        children: np.ndarray,
        moves: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Return White's value in [-1, 1] of each child of `parent` (see the class doc).

        parent uint64 (16,); children uint64 (>= n, 16); moves uint16 (n,); out float64
        (>= n,) or None. Decided children are exact; the rest come from one MultiPV call on
        the parent plus own calls for chess-forbidden moves (module docstring).
        """
        n = _check_leaf(parent, children, moves)
        if self._closed:
            raise StockfishError("the Stockfish pool was closed")
        values = _out(out, n)
        pkey = int(zobrist_key(parent))
        hit = self._leaves.get(pkey)
        if hit is not None and np.array_equal(hit[0], moves[:n]):
            self._counters.add("leaf_cache_hits")
            values[:n] = hit[1]
            return values
        rows = children[:n]
        codes = decided(rows)
        values[:n] = DECIDED_VALUE[codes]
        open_ = np.flatnonzero(codes == UNDECIDED)
        if open_.size == 0:
            self._leaves.put(pkey, (moves[:n].copy(), values[:n].copy()))
            return values
        sign = 1.0 if int(parent[W_STM]) == WHITE else -1.0
        self.engine()
        try:
            own = open_
            if int(decided(parent[None, :].copy())[0]) == UNDECIDED:
                (answer,) = self._answers_of(parent[None, :], "leaf_calls")
                found = np.zeros(open_.size, dtype=np.bool_)
                if answer.keys.size:
                    wanted = move_keys(moves[open_])
                    at = np.minimum(np.searchsorted(answer.keys, wanted), answer.keys.size - 1)
                    found = answer.keys[at] == wanted
                    values[open_[found]] = sign * answer.values[at[found]]
                own = open_[~found]
            cap = self.config.own_call_cap
            if cap is not None and own.size > cap:
                past = own[cap:]
                own = own[:cap]
                self._counters.add("capped", past.size)
                values[past] = self._fallback.evaluate(np.ascontiguousarray(rows[past]))
            if own.size:
                # each child's side to move is the mover's opponent: negate its value
                answers = self._answers_of(rows[own], "own_calls")
                values[own] = [-sign * a.best for a in answers]
        except StockfishError as exc:
            values[open_] = self._fall_back(rows[open_], exc)
            return values
        self._leaves.put(pkey, (moves[:n].copy(), values[:n].copy()))
        return values

    def evaluate(self, positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Return White's value in [-1, 1] of each row of `positions` (uint64 (n, 16))."""
        _check_positions(positions)
        if self._closed:
            raise StockfishError("the Stockfish pool was closed")
        n = positions.shape[0]
        values = _out(out, n)
        codes = decided(positions)
        values[:n] = DECIDED_VALUE[codes]
        open_ = np.flatnonzero(codes == UNDECIDED)
        if open_.size:
            self.engine()
            signs = np.where(positions[open_, W_STM] == 0, 1.0, -1.0)
            try:
                answers = self._answers_of(positions[open_], "own_calls")
                values[open_] = signs * np.array([a.best for a in answers])
            except StockfishError as exc:
                values[open_] = self._fall_back(positions[open_], exc)
        return values

    def _fall_back(self, rows: np.ndarray, exc: StockfishError) -> np.ndarray:
        """White's values of rows from the built-in evaluator, after the engine failed."""
        logger.error("Stockfish failed; the built-in evaluator scores %d positions: %s",
                     rows.shape[0], exc)
        self._counters.add("fallbacks")
        return self._fallback.evaluate(np.ascontiguousarray(rows))

    def _answers_of(self, rows: np.ndarray, counter: str) -> list[Answer]:
        """Engine answers for undecided positions rows (uint64 (k, 16)): from the cache, the
        rest from one pipelined batch on the calling thread's engine (counted in `counter`)."""
        keys = [int(zobrist_key(row)) for row in rows]
        answers: list[Answer | None] = [self._answers.get(key) for key in keys]
        todo = [j for j, a in enumerate(answers) if a is None]
        if len(todo) < len(keys):
            self._counters.add("answer_cache_hits", len(keys) - len(todo))
        if todo:
            buf = np.empty(FEN_BYTES, dtype=np.uint8)
            blocks = self.engine().search([fen_bytes(rows[j], buf) for j in todo])
            self._counters.add(counter, len(todo))
            for j, block in zip(todo, blocks, strict=True):
                answer = parse_answer(block, self.config.scale_cp)
                answers[j] = answer
                self._answers.put(keys[j], answer)
        return [a for a in answers if a is not None]


def _check_leaf(parent: np.ndarray, children: np.ndarray, moves: np.ndarray) -> int:
    _check_position(parent, "parent")
    _check_array(moves, np.uint16, 1, "moves")
    _check_array(children, np.uint64, 2, "children", POS_WORDS)
    n = moves.shape[0]
    if children.shape[0] < n:
        raise ValueError(f"{n} moves but only {children.shape[0]} child rows")
    return int(n)


class SlotPool(StockfishPool):
    """A `StockfishPool` whose engines belong to slots, not threads.

    A search starts fresh expander threads at every move; a plain pool would start new
    processes every move. `bind(slot)` makes the calling thread use slot `slot`'s engine
    (slot i of every search's expanders reuses one process); unbound threads use slot 0's: an
    agent calls from one thread at a time outside its search (the subgame's roots, a
    deterministic search's leaves, a move's work on its watchdog thread) and never while an
    expander runs, so one process serves them all (a process is ~120 MB). Caches and counters
    are the pool's.
    """

    def __init__(self, config: StockfishConfig | None = None) -> None:
        super().__init__(config)
        self._slots: dict[int, StockfishEngine] = {}
        self._slot_lock = threading.Lock()
        self._bound = threading.local()

    def start(self, slots: int) -> None:
        """Start the engines of slots 0 .. slots-1 now (off the clock: a process takes about
        0.1 s to start)."""
        bound = getattr(self._bound, "slot", None)
        try:
            for slot in range(max(1, slots)):
                self._bound.slot = slot
                self.engine()
        finally:
            self._bound.slot = -1 if bound is None else bound

    def bind(self, slot: int) -> None:
        """Use slot `slot`'s engine on the calling thread from now on."""
        self._bound.slot = int(slot)

    def engine(self) -> StockfishEngine:
        """The engine of the calling thread's slot (slot 0's when unbound), started on first
        use."""
        slot = max(0, int(getattr(self._bound, "slot", -1)))
        with self._slot_lock:
            eng = self._slots.get(slot)
            if eng is not None and not eng.closed:
                return eng
            if self._closed:
                raise StockfishError("the Stockfish pool was closed")
            eng = StockfishEngine(self.path, self.config)
            self._slots[slot] = eng
            with self._lock:
                self._engines.append(eng)
        return eng


__all__ = [
    "DEBIAN_DIR",
    "Answer",
    "PoolStats",
    "SlotPool",
    "StockfishConfig",
    "StockfishEngine",
    "StockfishError",
    "StockfishNotFoundError",
    "StockfishPool",
    "fen_bytes",
    "find_stockfish",
    "mate_value",
    "move_keys",
    "parse_answer",
    "score_value",
    "uci_key",
]
