"""The built-in leaf evaluator: material plus the squares each side sees, through tanh(cp/600).

Obscuro, section 4.1, ablation 6 ("simple-eval Obscuro"): "a simple evaluation function that
takes into account only the material difference and number of squares visible to each player",
used in place of Stockfish. Obscuro beat it 81.9%, yet it still beat ZS21 55.0%. Caligo uses it
as the fast test evaluator and, with the static-exchange check below (`SEE_EVAL`), when
Stockfish is absent and as the fallback of `StockfishPool`.

In centipawns, White minus Black (weights in `SimpleEvalConfig`)::

    cp = sum over N, B, R, Q, P of value(piece) * (white count - black count)
       + per_square * (|squares White sees| - |squares Black sees|)

with the standard values 1, 3, 3, 5, 9 pawns, and the visible squares exactly as the players
observe them (`observation.observe_kernel`: own pieces' squares plus every square a piece could
move to). The value is tanh(cp / 600), the transform ZS21 and Obscuro apply to Stockfish's
centipawns (Zhang & Sandholm 2021, appendix D.1: tau = 6 pawns; Obscuro, appendix C.5), so the two
evaluators share one scale.

Positions whose value the rules decide (`decided`) are scored exactly, before any heuristic:

    a king is missing                 the capturer won: +1 / -1
    the side to move sees the enemy   it captures the king next: a win for the side to move.
    king                              (Any attacker of the king square sees the king, so a
                                      mover who left its king capturable has lost, +-1.)
    the side to move has no FoW move  the no-move draw (docs/fow.md): 0

Values are in White's view in [-1, 1]; `to_mover_view` flips them for the side that moved.
`evaluate_reference` is the slow python-chess reference the tests hold the kernel to.

Exchanges (`SimpleEvalConfig.exchange`, the `simple-see` evaluator; off in the paper's
ablation). A leaf's material count ignores a piece left hanging: a move that puts the queen
where a pawn takes it scores as the queen's best square. With `exchange`, the side to move
also gets its best capture, valued by static exchange evaluation (the "swap" algorithm of
chess programs: on the target square each side captures with its least valuable attacker,
x-rays included, and either may stop): cp gains max(0, the best exchange) for the side to
move. This is a one-ply quiescence check of hanging pieces. The exchange is as visible in Fog
of War as in chess (a piece that attacks a square sees it), and no capture is illegal (a king
that takes a defended piece is taken: a king is worth `KING_EXCHANGE_CP` in an exchange). Like
most static exchange evaluators it leaves out en passant and what a pawn capturing onto the
last rank promotes to. Stockfish needs no such check: its depth-1 search runs its capture
search below every move it scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numba import njit

from caligo.fow.bitboard import U0, U1, lsb, popcount
from caligo.fow.expand import _check_array, terminal_kind
from caligo.fow.observation import O_VISIBLE, OBS_WORDS, observe_kernel
from caligo.fow.position import BLACK, KING, POS_WORDS, QUEEN, W_STM, WHITE, to_fen
from caligo.fow.position_kernels import attackers_to, occupied_bb, piece_at, side_bb

UNDECIDED = 0
WHITE_WINS = 1
BLACK_WINS = 2
DRAW = 3
DECIDED_VALUE = np.array([0.0, 1.0, -1.0, 0.0])
"""DECIDED_VALUE[code]: White's value of a decided position (float64 (4,))."""

KING_EXCHANGE_CP = 100_000.0
"""A king's value in an exchange (`SimpleEvalConfig.exchange`): more than anything it could
take, so a king never captures onto a defended square."""


@dataclass(frozen=True)
class SimpleEvalConfig:
    """Weights of the built-in evaluation, in centipawns; `scale` is tau of tanh(cp / tau)."""

    pawn: float = 100.0
    knight: float = 300.0
    bishop: float = 300.0
    rook: float = 500.0
    queen: float = 900.0
    per_square: float = 4.0
    scale: float = 600.0
    exchange: bool = False
    """Add the side to move's best capture by static exchange (module docstring)."""

    def __post_init__(self) -> None:
        if not isinstance(self.exchange, bool):
            raise ValueError(f"SimpleEvalConfig.exchange must be a bool: {self.exchange!r}")
        for name in ("pawn", "knight", "bishop", "rook", "queen", "per_square", "scale"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"SimpleEvalConfig.{name} must be a finite number >= 0: {value!r}")
        if self.scale <= 0:
            raise ValueError(f"SimpleEvalConfig.scale must be > 0: {self.scale!r}")

    def weights(self) -> np.ndarray:
        """Return the kernel's weight vector, float64 (8,): P N B R Q, per square, scale,
        exchange (1.0 on, 0.0 off)."""
        return np.array(
            [self.pawn, self.knight, self.bishop, self.rook, self.queen, self.per_square,
             self.scale, 1.0 if self.exchange else 0.0],
            dtype=np.float64,
        )


SEE_EVAL = SimpleEvalConfig(exchange=True)
"""The built-in evaluation wherever Stockfish does not score a leaf and the plain count is not
asked for by name (`eval=simple`, the simple-eval ablation): `eval=auto` without Stockfish,
`eval=simple-see`, and the Stockfish pool's fallback. At 400 iterations it beat the plain count
69 to 3 (72 games, Elo +544 [+409, +1200], docs/strength.md)."""


# --- kernels ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _decided(pos: np.ndarray, vis_white: np.uint64, vis_black: np.uint64) -> int:
    """Return UNDECIDED, WHITE_WINS, BLACK_WINS or DRAW for a position (uint64 (16,)).

    vis_white, vis_black: the players' visible masks (`observe_kernel` word 0).
    """
    stm = int(pos[W_STM])
    stm_vis = vis_white if stm == WHITE else vis_black
    kind = terminal_kind(pos, stm_vis)
    if kind == 1:
        return WHITE_WINS if pos[6 + KING] == U0 else BLACK_WINS
    if stm_vis & pos[(1 - stm) * 6 + KING]:
        return WHITE_WINS if stm == WHITE else BLACK_WINS
    if kind == 2:
        return DRAW
    return UNDECIDED


@njit(cache=True, nogil=True, inline="always")
def _visible_masks(pos: np.ndarray, obs: np.ndarray) -> tuple[np.uint64, np.uint64]:
    """Return White's and Black's visible masks of pos (uint64 (16,)); obs is scratch
    (uint64 (OBS_WORDS,))."""
    observe_kernel(pos, WHITE, obs)
    vw = obs[O_VISIBLE]
    observe_kernel(pos, BLACK, obs)
    return vw, obs[O_VISIBLE]


@njit(cache=True, nogil=True)
def _best_exchange(pos: np.ndarray, worth: np.ndarray, gain: np.ndarray) -> float:
    """The side to move's best capture by static exchange, at least 0 (it may capture
    nothing), in centipawns. worth float64 (6,): P N B R Q K in an exchange; gain float64
    (>= 33,) scratch (the swap list)."""
    stm = 1 if pos[W_STM] != U0 else 0  # (int(uint64) stays unsigned: 1 - it is a float)
    them = 1 - stm
    occ = occupied_bb(pos)
    best = 0.0
    targets = side_bb(pos, them) & ~pos[them * 6 + KING]
    while targets:
        sq = lsb(targets)
        targets &= targets - U1
        side = stm
        att = attackers_to(pos, sq, occ, side)
        if not att:
            continue
        gain[0] = worth[piece_at(pos, sq) - them * 6]  # the target's kind
        o = occ
        d = 0
        while att:
            kind = 0  # the least valuable attacker (lowest square among equals)
            while not (att & pos[side * 6 + kind]):
                kind += 1
            frm = att & pos[side * 6 + kind]
            d += 1
            gain[d] = worth[kind] - gain[d - 1]  # if this capturer is taken in turn
            o &= ~(frm & (~frm + U1))
            side = 1 - side
            att = attackers_to(pos, sq, o, side)
        while d > 1:  # either side stops when capturing on would lose
            d -= 1
            gain[d - 1] = -max(-gain[d - 1], gain[d])
        best = max(best, gain[0])
    return best


@njit(cache=True, nogil=True)
def _decided_kernel(positions: np.ndarray, n: int, codes: np.ndarray) -> int:
    """Write the decided code of positions[:n] into codes; return how many are UNDECIDED.

    positions uint64 (>= n, 16); codes int8 (>= n,).
    """
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    open_ = 0
    for i in range(n):
        vw, vb = _visible_masks(positions[i], obs)
        code = _decided(positions[i], vw, vb)
        codes[i] = code
        if code == UNDECIDED:
            open_ += 1
    return open_


@njit(cache=True, nogil=True)
def _evaluate_kernel(positions: np.ndarray, n: int, weights: np.ndarray, out: np.ndarray) -> int:
    """Write White's value of positions[:n] into out; return 0.

    positions uint64 (>= n, 16); weights float64 (8,) as `SimpleEvalConfig.weights`;
    out float64 (>= n,) receives values in [-1, 1].
    """
    obs = np.empty(OBS_WORDS, dtype=np.uint64)
    scale = weights[6]
    worth = np.empty(6, dtype=np.float64)
    worth[:5] = weights[:5]
    worth[5] = KING_EXCHANGE_CP
    gain = np.empty(40, dtype=np.float64)
    for i in range(n):
        pos = positions[i]
        vw, vb = _visible_masks(pos, obs)
        code = _decided(pos, vw, vb)
        if code != UNDECIDED:
            out[i] = DECIDED_VALUE[code]
            continue
        cp = weights[5] * (popcount(vw) - popcount(vb))
        for p in range(QUEEN + 1):
            cp += weights[p] * (popcount(pos[p]) - popcount(pos[6 + p]))
        if weights[7] != 0.0:
            swing = _best_exchange(pos, worth, gain)
            cp += swing if pos[W_STM] == WHITE else -swing
        out[i] = math.tanh(cp / scale)
    return 0


# --- public API ------------------------------------------------------------------------------


def _check_positions(positions: np.ndarray, name: str = "positions") -> None:
    _check_array(positions, np.uint64, 2, name, POS_WORDS)


def _out(out: np.ndarray | None, n: int) -> np.ndarray:
    if out is None:
        return np.empty(n, dtype=np.float64)
    _check_array(out, np.float64, 1, "out")
    if out.shape[0] < n:
        raise ValueError(f"out holds {out.shape[0]} values, {n} needed")
    return out


def decided(positions: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
    """Return the decided code (int8: UNDECIDED, WHITE_WINS, BLACK_WINS, DRAW) of each row."""
    _check_positions(positions)
    n = positions.shape[0]
    if codes is None:
        codes = np.empty(n, dtype=np.int8)
    _check_array(codes, np.int8, 1, "codes")
    if codes.shape[0] < n:
        raise ValueError(f"codes holds {codes.shape[0]} values, {n} needed")
    _decided_kernel(positions, n, codes)
    return codes


def to_mover_view(values: np.ndarray, mover: int, out: np.ndarray | None = None) -> np.ndarray:
    """Return White-view values from the view of `mover` (WHITE: unchanged; BLACK: negated)."""
    if mover not in (WHITE, BLACK):
        raise ValueError(f"mover must be 0 (white) or 1 (black), got {mover!r}")
    if out is None:
        out = np.empty_like(values)
    if mover == WHITE:
        out[...] = values
    else:
        np.negative(values, out=out)
    return out


class LeafEvaluator(Protocol):
    """What the search's FoW adapter needs from an evaluator (`SimpleEvaluator`,
    `stockfish.StockfishPool`): White's values in [-1, 1] of a whole leaf, or of positions."""

    def children(
        self,
        parent: np.ndarray,
        children: np.ndarray,
        moves: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Values of the children (uint64 (n, 16), row i after moves[i]) of parent."""
        ...

    def evaluate(self, positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Values of single positions (uint64 (n, 16))."""
        ...

    def close(self) -> None:
        """Release what the evaluator holds (processes)."""
        ...


class SimpleEvaluator:
    """The built-in evaluator (Obscuro, ablation 6), numba and nogil, safe to share by threads.

    `children(parent, children, moves, out)` scores a whole expanded leaf in one call, with the
    same signature as `StockfishPool.children`, so the search's adapter can take either.
    """

    def __init__(self, config: SimpleEvalConfig | None = None) -> None:
        self.config = config if config is not None else SimpleEvalConfig()
        self._weights = self.config.weights()

    def evaluate(self, positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Return White's value in [-1, 1] of each row of `positions` (uint64 (n, 16))."""
        _check_positions(positions)
        n = positions.shape[0]
        values = _out(out, n)
        _evaluate_kernel(positions, n, self._weights, values)
        return values

    def children(
        self,
        parent: np.ndarray,
        children: np.ndarray,
        moves: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Return White's value of each child of `parent` (children uint64 (n, 16), row i
        after moves[i]); the parent and the moves are not needed by this evaluator."""
        del parent, moves
        return self.evaluate(children, out)

    def close(self) -> None:
        """Nothing to release (present so evaluators share one life cycle)."""


# --- pure-Python reference -------------------------------------------------------------------


def evaluate_reference(pos: np.ndarray, config: SimpleEvalConfig | None = None) -> float:
    """Return White's value of one position the slow way, on python-chess's board: its attack
    tables, its piece counts, and `observe_reference` (python-chess moves) for what each side
    sees."""
    import chess

    from caligo.fow.observation import fow_moves_reference, observe_reference

    cfg = config if config is not None else SimpleEvalConfig()
    board: Any = chess.Board(to_fen(pos))
    white_king = board.king(chess.WHITE)
    black_king = board.king(chess.BLACK)
    if black_king is None:
        return 1.0
    if white_king is None:
        return -1.0
    stm = board.turn
    their_king = black_king if stm == chess.WHITE else white_king
    stm_sign = 1.0 if stm == chess.WHITE else -1.0
    if board.is_attacked_by(stm, their_king):
        return stm_sign
    if not fow_moves_reference(board):
        return 0.0
    cp = 0.0
    for piece, value in (
        (chess.PAWN, cfg.pawn),
        (chess.KNIGHT, cfg.knight),
        (chess.BISHOP, cfg.bishop),
        (chess.ROOK, cfg.rook),
        (chess.QUEEN, cfg.queen),
    ):
        cp += value * (
            len(board.pieces(piece, chess.WHITE)) - len(board.pieces(piece, chess.BLACK))
        )
    seen_w = bin(observe_reference(board, WHITE).visible).count("1")
    seen_b = bin(observe_reference(board, BLACK).visible).count("1")
    cp += cfg.per_square * (seen_w - seen_b)
    if cfg.exchange:
        worth = {chess.PAWN: cfg.pawn, chess.KNIGHT: cfg.knight, chess.BISHOP: cfg.bishop,
                 chess.ROOK: cfg.rook, chess.QUEEN: cfg.queen, chess.KING: KING_EXCHANGE_CP}
        targets = [sq for sq, piece in board.piece_map().items()
                   if piece.color != stm and piece.piece_type != chess.KING]
        best = max([_exchange_reference(board, sq, stm, worth) for sq in targets], default=0.0)
        cp += stm_sign * best
    return math.tanh(cp / cfg.scale)


def _exchange_reference(board: Any, sq: int, side: bool, worth: dict[int, float]) -> float:
    """What `side` wins by capturing on `sq` with its least valuable attacker (python-chess's
    `attackers`, on a board the earlier captures were made on) and letting the other side
    answer the same way, or 0 if it had better not: the exchange as a recursion."""
    attackers = list(board.attackers(side, sq))
    if not attackers:
        return 0.0
    frm = min(attackers, key=lambda a: (board.piece_type_at(a), a))
    taken = worth[board.piece_type_at(sq)]
    after = board.copy(stack=False)
    after.set_piece_at(sq, after.remove_piece_at(frm))
    return max(0.0, taken - _exchange_reference(after, sq, not side, worth))


__all__ = [
    "BLACK_WINS",
    "DECIDED_VALUE",
    "DRAW",
    "SEE_EVAL",
    "UNDECIDED",
    "WHITE_WINS",
    "LeafEvaluator",
    "SimpleEvalConfig",
    "SimpleEvaluator",
    "decided",
    "evaluate_reference",
    "to_mover_view",
]
