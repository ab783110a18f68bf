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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from caligo.fow.notation import write_pgn

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


__all__ = ["ply_comment", "session_pgn"]
