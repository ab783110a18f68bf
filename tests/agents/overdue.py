"""The watchdog's contract for a FoW engine (Obscuro, ZS21), shared by their tests: a stall that
no poll can cut is answered at the plan's answer instant with a legal emergency move, the work
ends after the answer and is joined when our own ply is observed, and the game goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from caligo.agents.base import Clock, TcKind, TimeControl
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.position import STARTING_FEN
from tests.clocks import Ticker

Stall = Callable[[Callable[..., Any]], Callable[..., Any]]
"""Wraps one of the agent's stages into a stalled one."""


def play_an_overdue_move(agent: Any, clock: Ticker,
                         install: Callable[[Stall], Callable[[], None]]) -> Game:
    """Black's first move stalls in the stage `install` wraps (it returns the undo): ten fake
    seconds pass inside it while it waits on an event. Checks the answer, the join and the
    next, normal move; returns the game (the truth) for the caller's own checks of P."""
    release = threading.Event()

    def stall(original: Callable[..., Any]) -> Callable[..., Any]:
        def stalled(*args: Any, **kwargs: Any) -> Any:
            clock.t += 10.0  # ten fake seconds inside one uncuttable step
            release.wait()
            return original(*args, **kwargs)
        return stalled

    try:
        agent.new_game(1, STARTING_FEN, TimeControl.parse("mt=0.05"), 3)
        g = Game()
        g.push_uci("e2e4")
        agent.observe(observe(g.position, 1), None)
        undo = install(stall)
        d = agent.act(g.legal_moves(), Clock(TcKind.MOVETIME, movetime_ms=50, deadline_ms=50))
        assert d.info["overdue"] is True and d.info["overdue_moves"] == 1
        assert d.move in g.legal_moves()
        assert agent._overdue is not None and not agent._overdue.done  # still held
        release.set()
        undo()
        g.push(d.move)
        agent.observe(observe(g.position, 1), d.move)  # joins the overdue work
        assert agent._overdue is None
        g.push(g.legal_moves()[0])  # the opponent's reply
        agent.observe(observe(g.position, 1), None)
        d2 = agent.act(g.legal_moves(), Clock(TcKind.MOVETIME, movetime_ms=1000,
                                                deadline_ms=1000))
        assert "overdue" not in d2.info and d2.move in g.legal_moves()
        return g
    finally:
        release.set()
        agent.close()
