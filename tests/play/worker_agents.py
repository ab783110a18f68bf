"""Agents the worker tests register in each worker process (`worker_init`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from caligo.agents import registry
from caligo.agents.base import Clock, Decision
from caligo.agents.random_agent import RandomAgent


class HangingAgent(RandomAgent):
    """A random mover whose every search after the first never ends (a hung engine)."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.moves = 0

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        self.moves += 1
        if self.moves > 1:
            time.sleep(3600)
        return super().act(legal, clock)


def register() -> None:
    """Register the test agents (idempotent)."""
    registry.register("test-hang", lambda options: HangingAgent(), replace=True)
