"""Games, plies, seats and matches in SQLite (stdlib `sqlite3`, WAL mode).

The `plies` table is the event log (the Mistboard pattern): one row per ply with the true move,
both players' observations (dark FENs), both clocks after the ply, the mover's think time and
the engine's diagnostics (JSON). A game in progress is rebuilt after a restart by replaying its
plies (`GameStore.load_session`). Truth and diagnostics are read back only once the game is
finished (`GameStore.reveal`); while it runs, a seat's view comes from `project` on the
rebuilt session, never from these rows.

The match runner writes the same tables (plus `matches`), so matches appear in the web app's
game list and a match resumes from its finished pairs (`GameStore.match_games`).

Schema (docs/design.md, "Storage" plus the columns a restart and a match need)::

    games   (id, created, white, black, tc, start_fen, status, result, termination, pgn,
             detail, config, match_id, round)
    plies   (game_id, ply, move_uci, san, obs_white, obs_black, ms_white, ms_black,
             engine_info, elapsed_ms)
    seats   (token, game_id, color)
    matches (id, created, config, status, result)

`status` is "running" or "finished"; `config` is the `SessionConfig` JSON; `ms_*` are the clocks
after the ply (NULL without a clock); `round` is "pair.game" for match games.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caligo.agents.base import COLOR_NAMES, Decision, color_from_name
from caligo.fow.position import move_to_uci
from caligo.play.errors import StorageError
from caligo.play.pgn import session_pgn
from caligo.play.session import EndReason, GameEnd, GameSession, PlyRecord, SessionConfig

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, created TEXT, white TEXT, black TEXT, tc TEXT, start_fen TEXT,
    status TEXT, result TEXT, termination TEXT, pgn TEXT,
    detail TEXT, config TEXT, match_id TEXT, round TEXT);
CREATE INDEX IF NOT EXISTS games_match ON games (match_id);
CREATE TABLE IF NOT EXISTS plies (
    game_id TEXT, ply INTEGER, move_uci TEXT, san TEXT, obs_white TEXT, obs_black TEXT,
    ms_white INTEGER, ms_black INTEGER, engine_info TEXT, elapsed_ms REAL,
    PRIMARY KEY (game_id, ply));
CREATE TABLE IF NOT EXISTS seats (token TEXT PRIMARY KEY, game_id TEXT, color TEXT);
CREATE TABLE IF NOT EXISTS matches (
    id TEXT PRIMARY KEY, created TEXT, config TEXT, status TEXT, result TEXT);
"""

RUNNING = "running"
FINISHED = "finished"


@dataclass(frozen=True)
class GameRow:
    """One row of `games`."""

    id: str
    created: str
    white: str
    black: str
    tc: str
    start_fen: str
    status: str
    result: str
    termination: str
    pgn: str
    detail: str
    config: str
    match_id: str | None
    round: str | None

    @property
    def finished(self) -> bool:
        return self.status == FINISHED


@dataclass(frozen=True)
class PlyRow:
    """One row of `plies` (truth: returned only for finished games)."""

    ply: int
    move_uci: str
    san: str
    obs_white: str
    obs_black: str
    ms_white: int | None
    ms_black: int | None
    engine_info: dict[str, Any]
    elapsed_ms: float


def decision_json(decision: Decision | None) -> dict[str, Any]:
    """A decision's diagnostics as JSON types: {"policy": {uci: p}, "value": v, "info": {...}}."""
    if decision is None:
        return {}
    out: dict[str, Any] = {}
    if decision.policy:
        out["policy"] = {move_to_uci(m): round(p, 6) for m, p in decision.policy.items()}
    if decision.value is not None:
        out["value"] = decision.value
    if decision.info:
        out["info"] = dict(decision.info)
    return out


def _now_text() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


_GAME_COLUMNS = (
    "id, created, white, black, tc, start_fen, status, result, termination, pgn, detail,"
    " config, match_id, round"
)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


@dataclass(frozen=True)
class StoredGame:
    """The rows of one game, built without a database (workers build them, the driver writes)."""

    game: tuple[Any, ...]
    plies: tuple[tuple[Any, ...], ...]


def ply_rows(session: GameSession, start: int = 0) -> list[tuple[Any, ...]]:
    """The `plies` rows of `session` from ply `start` + 1 on."""
    plies = session.plies[start:]
    if not plies:
        return []
    sans = session.sans()
    white = session.dark_fens(0)
    black = session.dark_fens(1)
    return [
        _ply_row(session.game_id, p, sans[p.ply - 1], white[p.ply - 1], black[p.ply - 1])
        for p in plies
    ]


def stored_game(
    session: GameSession,
    match_id: str | None = None,
    round: str | None = None,
    headers: dict[str, str] | None = None,
) -> StoredGame:
    """The `games` row (running, or finished with result and PGN) and the `plies` rows."""
    cfg = session.config
    tcs = cfg.time_controls
    tc = str(tcs[0]) if tcs[0] == tcs[1] else f"{tcs[0]} / {tcs[1]}"
    end = session.end
    status, result, termination, detail, pgn = RUNNING, "*", "", "", ""
    if end is not None:
        status, result, termination, detail = FINISHED, end.result, end.reason.value, end.detail
        pgn = session_pgn(session, headers)
    game = (
        cfg.game_id,
        _now_text(),
        cfg.names[0],
        cfg.names[1],
        tc,
        cfg.start_fen,
        status,
        result,
        termination,
        pgn,
        detail,
        json.dumps(cfg.to_dict()),
        match_id,
        round,
    )
    return StoredGame(game, tuple(ply_rows(session)))


class GameStore:
    """A SQLite file of games; safe to share between threads (one connection, one lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open game database {self.path!r}: {exc}") from None
        self._lock = threading.RLock()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> GameStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._db:
            yield self._db

    # --- writing a game ------------------------------------------------------------------

    def insert(self, stored: StoredGame) -> None:
        """Insert a game row and its plies in one transaction."""
        with self._tx() as db:
            db.execute(f"INSERT INTO games ({_GAME_COLUMNS}) VALUES ({_marks(14)})", stored.game)
            db.executemany(f"INSERT INTO plies VALUES ({_marks(10)})", stored.plies)

    def create(
        self, session: GameSession, match_id: str | None = None, round: str | None = None
    ) -> None:
        """Insert a running game (and any plies it already has); see `record_ply`, `finish`."""
        self.insert(stored_game(session, match_id, round))

    def _stored_plies(self, db: sqlite3.Connection, game_id: str) -> int:
        row = db.execute(
            "SELECT COALESCE(MAX(ply), 0) FROM plies WHERE game_id = ?", (game_id,)
        ).fetchone()
        return int(row[0])

    def record_ply(self, session: GameSession) -> None:
        """Append the plies of `session` not stored yet (call after every ply)."""
        with self._tx() as db:
            start = self._stored_plies(db, session.game_id)
            db.executemany(f"INSERT INTO plies VALUES ({_marks(10)})", ply_rows(session, start))

    def finish(self, session: GameSession, headers: dict[str, str] | None = None) -> None:
        """Store the remaining plies, the result, the termination and the PGN."""
        end = session.end
        if end is None:
            raise StorageError(f"game {session.game_id} is not over")
        pgn = session_pgn(session, headers)
        with self._tx() as db:
            start = self._stored_plies(db, session.game_id)
            db.executemany(f"INSERT INTO plies VALUES ({_marks(10)})", ply_rows(session, start))
            db.execute(
                "UPDATE games SET status = ?, result = ?, termination = ?, detail = ?, pgn = ?"
                " WHERE id = ?",
                (FINISHED, end.result, end.reason.value, end.detail, pgn, session.game_id),
            )

    def save(
        self,
        session: GameSession,
        match_id: str | None = None,
        round: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Store a whole game in one transaction (the match runner's path)."""
        self.insert(stored_game(session, match_id, round, headers))

    # --- seats -------------------------------------------------------------------------------

    def add_seat(self, token: str, game_id: str, color: int) -> None:
        """Bind a seat token (a random secret held by a browser) to a colour of a game."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO seats (token, game_id, color) VALUES (?, ?, ?)",
                (token, game_id, COLOR_NAMES[color]),
            )

    def seat(self, token: str) -> tuple[str, int] | None:
        """Return (game id, colour) of a seat token, or None for an unknown token."""
        with self._lock:
            row = self._db.execute(
                "SELECT game_id, color FROM seats WHERE token = ?", (token,)
            ).fetchone()
        return None if row is None else (row[0], color_from_name(row[1]))

    # --- reading -----------------------------------------------------------------------------

    def game(self, game_id: str) -> GameRow:
        """The `games` row of `game_id`; raise StorageError if there is none."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_GAME_COLUMNS} FROM games WHERE id = ?", (game_id,)
            ).fetchone()
        if row is None:
            raise StorageError(f"no game {game_id!r} in {self.path!r}")
        return GameRow(*row)

    def games(
        self, status: str | None = None, match_id: str | None = None, limit: int = 1000
    ) -> list[GameRow]:
        """Games, newest first, optionally filtered by status and match."""
        sql = f"SELECT {_GAME_COLUMNS} FROM games"
        where, args = [], []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if match_id is not None:
            where.append("match_id = ?")
            args.append(match_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, rowid DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*args, limit)).fetchall()
        return [GameRow(*r) for r in rows]

    def reveal(self, game_id: str) -> list[PlyRow]:
        """Every ply with truth, both observations and diagnostics; only for finished games."""
        if not self.game(game_id).finished:
            raise StorageError(f"game {game_id!r} is still running: nothing is revealed yet")
        return self._plies(game_id)

    def _plies(self, game_id: str) -> list[PlyRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT ply, move_uci, san, obs_white, obs_black, ms_white, ms_black,"
                " engine_info, elapsed_ms FROM plies WHERE game_id = ? ORDER BY ply",
                (game_id,),
            ).fetchall()
        return [
            PlyRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7] or "{}"), r[8])
            for r in rows
        ]

    def load_session(self, game_id: str, now: Callable[[], float] = time.monotonic) -> GameSession:
        """Rebuild a game (running or finished) by replaying its stored plies."""
        row = self.game(game_id)
        config = SessionConfig.from_dict(json.loads(row.config))
        end = None
        if row.finished:
            end = GameEnd(row.result, EndReason(row.termination), _winner(row.result), row.detail)
        plies = [(p.move_uci, float(p.elapsed_ms)) for p in self._plies(game_id)]
        return GameSession.replay(config, plies, end, now=now)

    # --- matches -----------------------------------------------------------------------------

    def open_match(self, match_id: str, config: dict[str, Any]) -> bool:
        """Create the match row unless it exists; return True when it already existed."""
        with self._tx() as db:
            row = db.execute("SELECT config FROM matches WHERE id = ?", (match_id,)).fetchone()
            if row is not None:
                return True
            db.execute(
                "INSERT INTO matches (id, created, config, status, result) VALUES (?, ?, ?, ?, '')",
                (match_id, _now_text(), json.dumps(config), RUNNING),
            )
            return False

    def finish_match(self, match_id: str, result: dict[str, Any]) -> None:
        """Store the match's final result JSON."""
        with self._tx() as db:
            db.execute(
                "UPDATE matches SET status = ?, result = ? WHERE id = ?",
                (FINISHED, json.dumps(result), match_id),
            )

    def record_crossing(self, match_id: str, sprt: dict[str, Any]) -> None:
        """Store a running match's SPRT entry at its crossing (`MatchResult.to_dict`'s "sprt"
        with "crossed") as its result until `finish_match` replaces it: a match killed while
        the pairs started before its crossing finish keeps its decision."""
        with self._tx() as db:
            db.execute("UPDATE matches SET result = ? WHERE id = ?",
                       (json.dumps({"sprt": sprt}), match_id))

    def match_result(self, match_id: str) -> Any:
        """The result JSON `finish_match` (or, while it runs, `record_crossing`) stored for the
        match (parsed), or None when there is none or the text is not JSON (nested too deep
        included)."""
        with self._lock:
            row = self._db.execute("SELECT result FROM matches WHERE id = ?",
                                   (match_id,)).fetchone()
        try:
            return json.loads(row[0]) if row is not None and row[0] else None
        except (ValueError, RecursionError):
            return None

    def match_games(self, match_id: str) -> list[GameRow]:
        """The finished games of a match, in round order."""
        rows = self.games(status=FINISHED, match_id=match_id, limit=1 << 30)
        return sorted(rows, key=lambda r: _round_key(r.round))

    def delete_game(self, game_id: str) -> None:
        """Remove a game and its plies and seats (e.g. an unfinished match pair)."""
        with self._tx() as db:
            db.execute("DELETE FROM plies WHERE game_id = ?", (game_id,))
            db.execute("DELETE FROM seats WHERE game_id = ?", (game_id,))
            db.execute("DELETE FROM games WHERE id = ?", (game_id,))


def _round_key(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in (text or "").split("."))
    except ValueError:
        return (1 << 30,)


def _winner(result: str) -> int | None:
    return {"1-0": 0, "0-1": 1}.get(result)


def _ply_row(game_id: str, p: PlyRecord, san: str, white: str, black: str) -> tuple[Any, ...]:
    info = decision_json(p.decision)
    return (
        game_id,
        p.ply,
        p.uci,
        san,
        white,
        black,
        p.clocks_after[0],
        p.clocks_after[1],
        json.dumps(info) if info else None,
        round(p.elapsed_ms, 3),
    )


__all__ = [
    "FINISHED",
    "RUNNING",
    "GameRow",
    "GameStore",
    "PlyRow",
    "StoredGame",
    "decision_json",
    "ply_rows",
    "stored_game",
]
