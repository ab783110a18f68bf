"""What the web app stores beside the play layer's games (the same SQLite file): which games are
its own, the human's colour, the engine and its strength, and the turns of games it unloaded.
The live-game driver (`caligo.web.live`) and the hub (`caligo.web.hub`) keep their state here."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from caligo.agents.base import COLOR_NAMES, TimeControl
from caligo.play.session import GameSession
from caligo.play.storage import GameStore


@dataclass(frozen=True)
class WebGameMeta:
    """What the web layer remembers of its own games beside the play layer's tables."""

    game_id: str
    human: int
    agent: str
    strength: TimeControl


_WEB_SCHEMA = """
CREATE TABLE IF NOT EXISTS web_games (
    id TEXT PRIMARY KEY, human TEXT, agent TEXT, strength TEXT);
CREATE TABLE IF NOT EXISTS web_paused (
    id TEXT PRIMARY KEY, ply INTEGER, spent_ms REAL, boot TEXT, at REAL);
"""


class WebStore:
    """The play layer's `GameStore` plus one table of the web's own (same SQLite file).

    `web_games` says which games are the web app's, which colour the human has and which agent
    at which strength plays the other side: what a restart needs to resume a game.
    """

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.games = GameStore(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_WEB_SCHEMA)
        self._lock = threading.Lock()

    def add(self, meta: WebGameMeta) -> None:
        """Remember a new web game."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO web_games (id, human, agent, strength) VALUES (?, ?, ?, ?)",
                (meta.game_id, COLOR_NAMES[meta.human], meta.agent, str(meta.strength)),
            )

    def create(self, session: GameSession, token: str, meta: WebGameMeta) -> None:
        """Store a new web game: the play layer's rows, the human's seat, the web record."""
        self.games.create(session)
        self.games.add_seat(token, meta.game_id, meta.human)
        self.add(meta)

    def meta(self, game_id: str) -> WebGameMeta | None:
        """The web record of `game_id`, None for a game the web app did not create."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, human, agent, strength FROM web_games WHERE id = ?", (game_id,)
            ).fetchone()
        if row is None:
            return None
        return WebGameMeta(row[0], COLOR_NAMES.index(row[1]), row[2], TimeControl.parse(row[3]))

    def pause(self, game_id: str, ply: int, spent_ms: float, boot: str, at: float) -> None:
        """Remember that game `game_id` was unloaded `spent_ms` into the turn after `ply` plies,
        by server `boot` at its monotonic time `at` (seconds)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO web_paused (id, ply, spent_ms, boot, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (game_id, ply, spent_ms, boot, at),
            )

    def resume(self, game_id: str, ply: int, boot: str, now: float) -> float:
        """Milliseconds already spent on the running turn of `game_id` (at `ply` plies) when it
        is resumed by server `boot` at its monotonic time `now`, and forget the pause: the time
        before the unload, plus the time since when the same server unloaded it (its clock ran
        on); 0 when the game was not unloaded at this ply."""
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT ply, spent_ms, boot, at FROM web_paused WHERE id = ?", (game_id,)
            ).fetchone()
            if row is None:
                return 0.0
            self._db.execute("DELETE FROM web_paused WHERE id = ?", (game_id,))
        if row[0] != ply:
            return 0.0
        spent = float(row[1])
        if row[2] == boot:
            spent += max(0.0, (now - float(row[3])) * 1000.0)
        return spent

    def carry_over(self, game_id: str, ply: int, boot: str, now: float) -> float:
        """At the start of server `boot` (its monotonic time `now`): the milliseconds game
        `game_id` (at `ply` plies) had spent on its running turn, and the game paused by
        `boot` from `now`, so its mover's clock runs again from this start (the downtime
        before was free); a turn no pause recorded (a crash) starts afresh."""
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT ply, spent_ms FROM web_paused WHERE id = ?", (game_id,)
            ).fetchone()
            spent = float(row[1]) if row is not None and row[0] == ply else 0.0
            self._db.execute(
                "INSERT OR REPLACE INTO web_paused (id, ply, spent_ms, boot, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (game_id, ply, spent, boot, now),
            )
        return spent

    def stop_boot(self, boot: str, now: float) -> None:
        """Server `boot` stops at its monotonic time `now`: charge the games it unloaded with
        the time until now (their clocks ran while it served); the downtime after is free."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE web_paused SET spent_ms = spent_ms + MAX(0.0, (? - at) * 1000.0), "
                "boot = '' WHERE boot = ?",
                (now, boot),
            )

    def close(self) -> None:
        """Close both connections."""
        with self._lock:
            self._db.close()
        self.games.close()


__all__ = ["WebGameMeta", "WebStore"]
