"""`StockfishPIAgent`: Stockfish's move in one position sampled from P (the naive baseline).

"Guess and best-respond" (docs/design.md, "Agents"): the agent keeps the exact set P of
positions consistent with its observations (`caligo.fow.BeliefSet`, as Obscuro does), and at
each move draws one position of P uniformly (seeded by the game's seed) and plays what Stockfish
would play there, as if the game were ordinary chess with that position on the board. It never
reasons about what the opponent knows, which is exactly what Obscuro's search adds.

What Stockfish cannot be asked (docs/design.md, "Traps") is decided first:

- the enemy king is visible and capturable: every position of P shows it (the observation is
  the same), so the capture is played (FoW's only winning move, and one Stockfish refuses to
  see: it returns no score when the side to move can capture the king);
- Stockfish has no legal chess move in the sample (checkmate or stalemate there): every FoW
  move walks into capture in that position, so a move is drawn uniformly from the legal ones.

The position goes to Stockfish as `stockfish.fen_bytes` writes it (clocks reset, no en-passant
square while in check: the SIGSEGV trap of docs/engine.md), with `go depth D` (`depth`
option, default 8) over raw pipes, one process per agent, restarted per game so that a game is
a function of its seed. Chess-legal moves are FoW-legal in every position of P, so Stockfish's
move is always among the legal ones; if it is not (a bug), or the engine fails for good, a
uniformly drawn legal move is played and the analysis says so.

Options (`stockfish-pi:key=value`): depth=N, seed=N, stockfish=PATH.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision, TimeControl
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefSet
from caligo.fow.evaluate import UNDECIDED, decided
from caligo.fow.observation import Observation
from caligo.fow.position import KING, move_to_uci, to_fen
from caligo.fow.stockfish import (
    StockfishConfig,
    StockfishEngine,
    StockfishError,
    fen_bytes,
    find_stockfish,
)

log = logging.getLogger(__name__)

__all__ = ["StockfishPIAgent", "StockfishPIError"]

_BESTMOVE = re.compile(rb"^bestmove (\S+)", re.MULTILINE)
DEFAULT_DEPTH = 8


class StockfishPIError(CaligoError, ValueError):
    """A malformed `stockfish-pi` option; the message quotes it."""


class StockfishPIAgent(AgentBase):
    """Stockfish on one position sampled from P (module docstring)."""

    def __init__(self, depth: int = DEFAULT_DEPTH, seed: int = 0, path: str | None = None) -> None:
        super().__init__()
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 60:
            raise StockfishPIError(f"stockfish-pi: depth must be an int in [1, 60], got "
                                   f"{depth!r}")
        self.depth = depth
        self.base_seed = int(seed)
        self.path = find_stockfish(path)
        self._config = StockfishConfig(path=self.path, multipv=1, depth=depth,
                                       call_timeout_s=30.0)
        self._engine: StockfishEngine | None = None
        self._belief: BeliefSet | None = None
        self._rng = np.random.default_rng(0)
        self._draw = random.Random(0)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> StockfishPIAgent:
        """Build from registry options: depth=N, seed=N, stockfish=PATH."""
        unknown = sorted(set(options) - {"depth", "seed", "stockfish"})
        if unknown:
            raise StockfishPIError(f"unknown option(s) for stockfish-pi: {unknown!r} (known: "
                                   "depth, seed, stockfish)")
        kw: dict[str, Any] = {}
        for key in ("depth", "seed"):
            if key in options:
                try:
                    kw[key] = int(options[key])
                except ValueError:
                    raise StockfishPIError(f"stockfish-pi: {key} must be an integer, got "
                                           f"{options[key]!r}") from None
        if "stockfish" in options:
            kw["path"] = options["stockfish"]
        return cls(**kw)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """P = {start}; a fresh engine (its answers depend on what it searched before)."""
        super().new_game(color, start_fen, time_control, seed)
        self._belief = BeliefSet.initial(color, start_fen)
        mixed = np.random.SeedSequence([self.base_seed & 0xFFFFFFFF, seed & 0xFFFFFFFF, color])
        self._rng = np.random.default_rng(mixed)
        self._draw = random.Random(int(mixed.generate_state(1)[0]))
        if self._engine is not None:
            self._engine.restart()
        else:
            self._engine = StockfishEngine(self.path, self._config)

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Follow P."""
        super().observe(observation, own_move)
        assert self._belief is not None
        if own_move is None:
            self._belief = self._belief.update_opponent_move(observation)
        else:
            self._belief = self._belief.update_own_move(own_move, observation)

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Stockfish's move in a position drawn from P (module docstring)."""
        assert self._belief is not None and self._engine is not None
        if not legal:
            raise ValueError("act needs at least one legal move")
        pos = self._belief.sample_array(1, self._rng)[0]
        info: dict[str, Any] = {"belief": len(self._belief), "sample": to_fen(pos)}
        them = (1 - self.color) * 6 + KING
        king_sq = int(pos[them]).bit_length() - 1
        captures = [m for m in legal if (m >> 6) & 63 == king_sq]
        if captures:
            info["reason"] = "king capture"
            return Decision(int(captures[0]), policy={int(captures[0]): 1.0}, info=info)
        if int(decided(pos[None, :].copy())[0]) != UNDECIDED:  # pragma: no cover - see above
            return self._random(legal, info, "decided sample")
        try:
            (block,) = self._engine.search([fen_bytes(pos)])
        except StockfishError as exc:
            log.error("stockfish-pi: the engine failed (%s); playing a random move", exc)
            return self._random(legal, info, f"engine failed: {exc}")
        found = _BESTMOVE.search(block)
        uci = found.group(1).decode() if found else "(none)"
        info["bestmove"] = uci
        by_uci = {move_to_uci(int(m)): int(m) for m in legal}
        move = by_uci.get(uci)
        if move is None:
            reason = "no chess move in the sample" if uci == "(none)" else "not a legal move"
            return self._random(legal, info, reason)
        return Decision(move, policy={move: 1.0}, info=info)

    def _random(self, legal: Sequence[int], info: dict[str, Any], reason: str) -> Decision:
        move = int(legal[self._draw.randrange(len(legal))])
        info["reason"] = reason
        return Decision(move, policy={int(m): 1.0 / len(legal) for m in legal}, info=info)

    def close(self) -> None:
        """Stop the engine."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None
