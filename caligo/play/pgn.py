"""PGN of a refereed game: `[Variant "Fog of War"]`, termination, time control, round, comments.

Tags follow docs/design.md, "Matches" and fastchess's `-pgnout`: the seven-tag roster, `Variant`,
`Termination` (the `EndReason` text, e.g. "king capture", "time forfeit"), `TimeControl` (or
`WhiteTimeControl` / `BlackTimeControl` under time odds, as cutechess writes them), the
`Round` "pair.game" of a match, and any extra tags. After every move a comment carries the
mover's think time and, when the engine reported them, its diagnostics::

    1. e4 {t=0.012 n=1070552 P=17264 v=0.12} e5 {t=0.004 [%clk 0:02:59]}

(t seconds, n nodes, it iterations, d depth, P belief size, v value; `[%clk]` the clock left
after the move; `{book}` marks a forced opening ply). The PGN is written after the game, so the
diagnostics reveal nothing during play. `caligo.fow.notation.read_pgn` reads it back (comments
are skipped).

Standard chess programs cannot read the whole of such a PGN: at the first move only Fog of War
allows (moving into check or leaving the king in check, castling out of or through check,
capturing the king) python-chess's `chess.pgn.read_game` stops with an "illegal san" error, and
it already refuses the `Variant` tag ("unsupported variant"). `standard_pgn` writes the same
game for those programs: no `Variant` tag, the moves up to the first FoW-only move (judged by
python-chess, a rules implementation we did not write), the rest in a final comment, the real
result, and a `FogOfWar` tag saying where the standard moves stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import chess
import chess.pgn

from caligo.fow.game import Game
from caligo.fow.notation import move_to_san, read_pgn, write_pgn
from caligo.fow.position import WHITE, move_to_uci

if TYPE_CHECKING:
    from caligo.play.session import GameSession, PlyRecord

_INFO_KEYS = (("nodes", "n"), ("iterations", "it"), ("depth", "d"), ("belief", "P"))


def _clock_text(ms: int) -> str:
    seconds = ms // 1000
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def ply_comment(ply: PlyRecord) -> str:
    """The comment text for one ply (without braces)."""
    if ply.forced:
        return "book"
    parts = [f"t={ply.elapsed_ms / 1000:.3f}"]
    decision = ply.decision
    if decision is not None:
        info: dict[str, Any] = dict(decision.info)
        if "belief" not in info and "belief_size" in info:
            info["belief"] = info["belief_size"]
        for key, short in _INFO_KEYS:
            value = info.get(key)
            if isinstance(value, bool):
                continue
            if isinstance(value, int):
                parts.append(f"{short}={value}")
            elif isinstance(value, float):
                parts.append(f"{short}={value:.6g}")
        if decision.value is not None:
            parts.append(f"v={decision.value:.2f}")
    clock = ply.clocks_after[ply.mover]
    if clock is not None:
        parts.append(f"[%clk {_clock_text(clock)}]")
    return " ".join(parts)


def session_pgn(
    session: GameSession, headers: dict[str, str] | None = None, comments: bool = True
) -> str:
    """Return the PGN of `session` (finished or not: an unfinished game has result "*")."""
    cfg = session.config
    end = session.end
    result = "*" if end is None else end.result
    tags = {"White": cfg.names[0], "Black": cfg.names[1]}
    if end is not None:
        tags["Termination"] = end.reason.value
    tcs = cfg.time_controls
    if tcs[0] == tcs[1]:
        tags["TimeControl"] = tcs[0].pgn_tag()
    else:
        tags["WhiteTimeControl"] = tcs[0].pgn_tag()
        tags["BlackTimeControl"] = tcs[1].pgn_tag()
    tags.update(headers or {})
    plies = session.plies
    moves = [p.move for p in plies]
    if not comments:
        return write_pgn(moves, cfg.start_fen, tags, result)
    head = write_pgn([], cfg.start_fen, tags, result).split("\n\n", 1)[0]
    tokens: list[str] = []
    sans = session.sans()
    first_white = session.game.positions[0][12] == 0
    number = int(session.game.positions[0][15]) >> 32
    for i, p in enumerate(plies):
        white = (i % 2 == 0) == bool(first_white)
        if white:
            tokens.append(f"{number}.")
        elif i == 0:
            tokens.append(f"{number}...")
        tokens.append(sans[i])
        tokens.append("{" + ply_comment(p).replace("}", ")") + "}")
        if not white:
            number += 1
    tokens.append(result)
    lines: list[str] = []
    line = ""
    for tok in tokens:
        if line and len(line) + 1 + len(tok) > 80:
            lines.append(line)
            line = tok
        else:
            line = f"{line} {tok}" if line else tok
    lines.append(line)
    return head + "\n\n" + "\n".join(lines) + "\n"


@dataclass(frozen=True)
class StandardCut:
    """Where standard chess stops following a FoW game.

    `plies`: how many moves from the start standard chess allows; `total`: the game's plies;
    `first`: the first FoW-only move with its number ("23. Kxe8", "12... O-O"), None if every
    move is a standard one.
    """

    plies: int
    total: int
    first: str | None


def _numbered(board: chess.Board, san: str) -> str:
    dots = "." if board.turn == chess.WHITE else "..."
    return f"{board.fullmove_number}{dots} {san}"


def standard_cut(start_fen: str, ucis: Sequence[str]) -> StandardCut:
    """Find the first of `ucis` (from `start_fen`) that standard chess does not allow."""
    board = chess.Board(start_fen)
    fow = Game(start_fen)
    for i, uci in enumerate(ucis):
        move = chess.Move.from_uci(uci)
        if not board.is_legal(move):
            code = next(m for m in fow.legal_moves() if move_to_uci(m) == uci)
            return StandardCut(i, len(ucis), _numbered(board, move_to_san(fow.position, code)))
        board.push(move)
        fow.push_uci(uci)
    return StandardCut(len(ucis), len(ucis), None)


def standard_pgn(fow_pgn: str) -> str:
    """The game of `fow_pgn` (one FoW game, e.g. `session_pgn`'s) for standard chess programs.

    Every move it holds is legal in standard chess, so `chess.pgn.read_game` reads all of them
    without an error; the moves from the first FoW-only one on are listed in FoW SAN in the
    comment after the last standard move (see the module docstring).
    """
    parsed = read_pgn(fow_pgn)
    ucis = [move_to_uci(m) for m in parsed.moves]
    cut = standard_cut(parsed.start_fen, ucis)
    game = chess.pgn.Game()
    for key, value in parsed.headers.items():
        if key != "Variant":
            game.headers[key] = value
    if parsed.start_fen != chess.STARTING_FEN:
        game.setup(chess.Board(parsed.start_fen))
    game.headers["Result"] = parsed.result
    node: chess.pgn.GameNode = game
    for uci in ucis[: cut.plies]:
        node = node.add_main_variation(chess.Move.from_uci(uci))
    if cut.first is not None:
        rest_board = node.board()
        fow = Game(parsed.start_fen)
        for uci in ucis[: cut.plies]:
            fow.push_uci(uci)
        tokens = []
        number = rest_board.fullmove_number
        for i, code in enumerate(parsed.moves[cut.plies :]):
            san = move_to_san(fow.position, code)
            white = fow.turn == WHITE
            if white:
                tokens.append(f"{number}. {san}")
            else:
                tokens.append(f"{number}... {san}" if i == 0 else san)
                number += 1
            fow.push(code)
        game.headers["FogOfWar"] = (
            f"standard chess stops after {cut.plies} of {cut.total} plies, at {cut.first}"
        )
        node.comment = (
            "Fog of War game; it goes on with moves standard chess does not allow: "
            + " ".join(tokens)
            + f" {parsed.result}"
        )
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return str(game.accept(exporter)) + "\n"


__all__ = ["StandardCut", "ply_comment", "session_pgn", "standard_cut", "standard_pgn"]
