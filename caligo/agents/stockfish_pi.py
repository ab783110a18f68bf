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

Time (`caligo.agents.timing`, policy `STOCKFISH_PI`): the move starts when the opponent's
move is observed; P's update runs in its share of the move's plan (cut short, P is the children
of an evenly spread part of the parents, completed after our move), and under a time budget
Stockfish gets `go depth D movetime T` with T what is left to the plan's soft instant. The
engine process is started once per agent and gets `ucinewgame` at every game.

Options (`stockfish-pi:key=value`): depth=N, seed=N, stockfish=PATH.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from caligo.agents.base import AgentBase, Clock, Decision
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, belief_map
from caligo.agents.options import OptionReader
from caligo.agents.resources import EngineResources
from caligo.agents.timing import (
    STOCKFISH_PI,
    MovePlan,
    MoveTimer,
    TimeControl,
    collect_garbage,
)
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
from caligo.limits import Deadline

log = logging.getLogger(__name__)

__all__ = ["StockfishPIAgent", "StockfishPIError"]

_BESTMOVE = re.compile(rb"^bestmove (\S+)", re.MULTILINE)
DEFAULT_DEPTH = 8


class StockfishPIError(CaligoError, ValueError):
    """A malformed `stockfish-pi` option; the message quotes it."""


class StockfishPIAgent(AgentBase):
    """Stockfish on one position sampled from P (module docstring)."""

    def __init__(self, depth: int = DEFAULT_DEPTH, seed: int = 0, path: str | None = None, *,
                 clock: Callable[[], float] = time.perf_counter,
                 resources: EngineResources | None = None) -> None:
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
        self._queued: Observation | None = None
        self._cut = 0
        self._prev_map: dict[str, Any] | None = None
        self.timer = MoveTimer(STOCKFISH_PI, now=clock)
        self.resources = resources
        self._rng = np.random.default_rng(0)
        self._draw = random.Random(0)

    @classmethod
    def from_options(cls, options: Mapping[str, str],
                     resources: EngineResources | None = None) -> StockfishPIAgent:
        """Build from registry options (`caligo.agents.options`): depth=N, seed=N,
        stockfish=PATH."""
        opts = OptionReader("stockfish-pi", options, ("depth", "seed", "stockfish"))
        kw: dict[str, Any] = {key: opts.integer(key) for key in ("depth", "seed") if key in opts}
        if "stockfish" in opts:
            kw["path"] = opts.text("stockfish")
        return cls(**kw, resources=resources)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        """P = {start}; the engine starts a new game (`ucinewgame`: its answers no longer
        depend on what it searched before), or starts, at the agent's first game."""
        super().new_game(color, start_fen, time_control, seed)
        self.timer.new_game(time_control)
        self._belief = BeliefSet.initial(color, start_fen)
        self._queued = None
        self._prev_map = None
        mixed = np.random.SeedSequence([self.base_seed & 0xFFFFFFFF, seed & 0xFFFFFFFF, color])
        self._rng = np.random.default_rng(mixed)
        self._draw = random.Random(int(mixed.generate_state(1)[0]))
        if self._engine is None and self.resources is not None:
            config = self._config
            self._engine = self.resources.get(("stockfish-pi", config),
                                              lambda: StockfishEngine(self.path, config))
        if self._engine is not None:
            self._engine.new_game()
        else:
            self._engine = StockfishEngine(self.path, self._config)

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Follow P: the opponent's ply starts our move and its update waits for `act`; after
        our own ply, a partial update is completed (on the opponent's time) first."""
        super().observe(observation, own_move)
        assert self._belief is not None
        if own_move is None:
            self.timer.start()
            self._queued = observation
            return
        if self._queued is not None:  # our move came without `act` (forced, or a replay of
            # the game's transcript): the opponent's ply `act` would have taken in, whole
            self._belief = self._belief.update_opponent_move(self._queued)
            self._queued = None
        bel = self._belief
        if bel.partial:
            last = self.timer.last
            deadline = None if last is None or last.iterations is not None else (
                Deadline.within(max(0.2, 0.002 * last.optimum_ms), now=self.timer.now))
            bel = bel.complete(deadline)
            if bel.partial:
                bel = bel.truncate()
                self._cut += 1
        self._belief = bel.update_own_move(own_move, observation)
        self._prev_map = belief_map(self._belief)  # off the clock, reported with the next move
        collect_garbage()  # off the clock too (caligo.agents.timing)

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Stockfish's move in a position drawn from P (module docstring)."""
        assert self._belief is not None and self._engine is not None
        if not legal:
            raise ValueError("act needs at least one legal move")
        plan = self.timer.plan(clock, len(legal), len(self._belief))
        if self._queued is not None:
            self._belief = self._belief.update_opponent_move(
                self._queued, plan.belief_deadline, spread=plan.iterations is None)
            self._queued = None
        # the belief's picture for the review (`caligo.agents.belief_map`), before the search:
        # its cost comes out of Stockfish's time, never past the move's deadline
        t_map = time.perf_counter()
        pictures = {BELIEF_MAP: belief_map(self._belief)}
        if self._prev_map is not None:
            pictures[BELIEF_MAP_PREV] = self._prev_map
            self._prev_map = None
        map_ms = 1000.0 * (time.perf_counter() - t_map)
        decision = self._decide(legal, plan)
        info = {**decision.info, **pictures}
        total_ms = self.timer.finish(plan)
        info["time_ms"] = {"belief_map": round(map_ms, 2), "total": round(total_ms, 1)}
        info["plan"] = plan.to_info()
        if self._cut:
            info["belief_cut"] = self._cut
        return replace(decision, info=info)

    def _decide(self, legal: Sequence[int], plan: MovePlan) -> Decision:
        assert self._belief is not None and self._engine is not None
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
        movetime = None
        if plan.deadline is not None and plan.iterations is None:
            movetime = max(1, int(1000.0 * plan.deadline.soft_left()))
        try:
            (block,) = self._engine.search([fen_bytes(pos)], movetime_ms=movetime)
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
        """Stop the engine (a worker's shared engine stays)."""
        if self._engine is not None and self.resources is None:
            self._engine.close()
        self._engine = None
