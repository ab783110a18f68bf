"""SQLite storage: a game in progress survives a restart; truth is revealed only after the end.

A child process plays part of a game while writing every ply, then dies without cleaning up
(`os._exit`); this process rebuilds the game from the file and finishes it. The expected state
is the one the child reported before dying (moves, clocks, transcripts), and the schema is the
one docs/design.md, "Storage", describes. WAL mode is read back from SQLite itself
(`PRAGMA journal_mode`).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from caligo.agents.base import Decision, TimeControl
from caligo.agents.random_agent import RandomAgent
from caligo.fow.notation import read_pgn
from caligo.fow.observation import parse_dark_fen
from caligo.fow.position import BLACK, WHITE
from caligo.play.errors import StorageError
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig
from caligo.play.storage import FINISHED, RUNNING, GameStore

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from caligo.agents.base import TimeControl
    from caligo.agents.random_agent import RandomAgent
    from caligo.play.session import GameSession, SessionConfig
    from caligo.play.storage import GameStore

    store = GameStore(sys.argv[1])
    tc = TimeControl.parse("300+2")
    session = GameSession(SessionConfig("live-1", time_controls=(tc, tc), seeds=(5, 6),
                                        names=("human", "random")))
    store.create(session)
    store.add_seat("token-white", "live-1", 0)
    agents = (RandomAgent(seed=5), RandomAgent(seed=6))
    from caligo.play.referee import AgentSeat
    seats = [AgentSeat(a) for a in agents]
    sent = [-1, -1]
    while session.ply < 21:
        for c in (0, 1):
            for m in session.project(c, sent[c]):
                if type(m).__name__ in ("Observe", "NewGame"):
                    seats[c].deliver(m)
            sent[c] = session.ply
        mover = session.to_move
        go = session.project(mover, session.ply)[-1]
        decision = seats[mover].ask(go)
        session.play(mover, decision.move, elapsed_ms=150.0 + session.ply, decision=decision)
        store.record_ply(session)
    print(json.dumps({"moves": [p.uci for p in session.plies],
                      "clocks": list(session.plies[-1].clocks_after),
                      "black": session.transcript(1).to_dict()}))
    sys.stdout.flush()
    os._exit(9)  # die without closing anything
    """
)


def test_a_game_in_progress_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "games.db"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(db)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 9, proc.stderr
    before = json.loads(proc.stdout)
    store = GameStore(db)
    row = store.game("live-1")
    assert row.status == RUNNING and row.white == "human" and row.tc == "300+2"
    assert store.seat("token-white") == ("live-1", WHITE) and store.seat("nope") is None
    with pytest.raises(StorageError, match="still running"):
        store.reveal("live-1")
    session = store.load_session("live-1")
    assert [p.uci for p in session.plies] == before["moves"]
    # the stored clocks after the last ply (Black's is running: a restart gives it a fresh
    # turn, so its reading now depends on wall time; White's does not run)
    assert list(session.plies[-1].clocks_after) == before["clocks"]
    assert session.clock_ms(0) == before["clocks"][0]
    assert session.transcript(BLACK).to_dict() == before["black"]
    assert session.to_move == BLACK  # 21 plies played
    # the game goes on where it stopped, and finishes
    play_game(session, (RandomAgent(seed=7), RandomAgent(seed=8)), on_ply=store.record_ply)
    store.finish(session, {"Event": "restart test"})
    row = store.game("live-1")
    assert row.status == FINISHED and session.end is not None
    assert row.result == session.end.result and row.termination == session.end.reason.value
    plies = store.reveal("live-1")
    assert [p.move_uci for p in plies] == [p.uci for p in session.plies]
    assert [p.san for p in plies] == session.sans()
    assert (
        parse_dark_fen(WHITE, plies[4].obs_white)
        == session.transcript(WHITE).entries[4].observation
    )
    assert plies[0].elapsed_ms == 150.0
    assert plies[0].engine_info["policy"]["a2a3"] == pytest.approx(0.05)  # 20 moves, uniform
    assert list(read_pgn(row.pgn).moves) == [p.move for p in session.plies]
    assert store.games(status=FINISHED)[0].id == "live-1"


def test_wal_mode_and_schema(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    GameStore(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = {r[1] for r in con.execute("PRAGMA table_info(plies)")}
    assert {
        "game_id",
        "ply",
        "move_uci",
        "san",
        "obs_white",
        "obs_black",
        "ms_white",
        "ms_black",
        "engine_info",
    } <= cols
    cols = {r[1] for r in con.execute("PRAGMA table_info(games)")}
    assert {
        "id",
        "created",
        "white",
        "black",
        "tc",
        "start_fen",
        "status",
        "result",
        "termination",
        "pgn",
    } <= cols
    assert {r[1] for r in con.execute("PRAGMA table_info(seats)")} == {"token", "game_id", "color"}


def test_forfeits_are_stored_and_restored(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "f.db")
    s = GameSession(SessionConfig("ff", time_controls=(TimeControl.parse("mt=1"),) * 2))
    move = s.legal(WHITE)[0]
    s.play(WHITE, move, 10, Decision(move, info={"belief": 1}))
    s.forfeit(BLACK, EndReason.ILLEGAL_MOVE, "black answered 'e7e4'")
    store.save(s)
    again = store.load_session("ff")
    assert again.end == s.end and again.ply == 1
    assert store.reveal("ff")[0].engine_info == {"info": {"belief": 1}}
    with pytest.raises(StorageError, match="no game"):
        store.game("missing")
    with pytest.raises(StorageError, match="not over"):
        store.finish(GameSession(SessionConfig("open")))
