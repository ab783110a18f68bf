"""Engine resources: the processes an engine worker owns and lends to the agents it hosts.

An agent that plays one game at a time owns its Stockfish processes. A worker that hosts the
agents of many games (`caligo.play.workers`) must not start processes per game: it makes one
`EngineResources`, passes it to every agent it builds (`registry.create(spec, resources=...)`),
and the agents take their Stockfish pool from it (`get(key, make)`: one object per key, made
on first use, shared afterwards) instead of starting their own. The agents use it one at a time
(a worker runs one job at a time), give each game a fresh start on it (`ucinewgame`), and never
close it: `close()` does, when the worker stops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

__all__ = ["EngineResources"]

T = TypeVar("T")


class _Closable(Protocol):
    def close(self) -> None: ...


class EngineResources:
    """Shared, long-lived engine resources of one worker (module docstring)."""

    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self.closed = False

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The resource under `key`, made with `make()` on first use."""
        with self._lock:
            if self.closed:
                raise RuntimeError("the engine resources were closed")
            if key not in self._items:
                self._items[key] = make()
            return self._items[key]  # type: ignore[no-any-return]

    def items(self) -> list[Any]:
        """Every resource made so far."""
        with self._lock:
            return list(self._items.values())

    def close(self) -> None:
        """Close every resource (stop its processes); idempotent."""
        with self._lock:
            self.closed = True
            items, self._items = list(self._items.values()), {}
        for item in items:
            close: Callable[[], None] | None = getattr(item, "close", None)
            if close is not None:
                close()
