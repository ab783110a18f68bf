"""The referee's session: rules endings, clocks, forfeits, forced plies, replay, PGN.

Expected values: the FoW rules of Obscuro, appendix A (king capture wins; threefold and
fifty-move draws need no claim) as `caligo.fow.game` implements them (tests/fow/test_game.py);
the clock rules of issue 8 / docs/design.md, "The referee" (monotonic time from request to answer,
increment after the move, a late answer loses); PGN read back with `caligo.fow.notation.read_pgn`
and python-chess's PGN reader (for the tags and comments).
"""

from __future__ import annotations

import io

import chess.pgn
import pytest

from caligo.agents.base import Decision, TimeControl
from caligo.agents.policy import PolicyAgent
from caligo.agents.random_agent import RandomAgent
from caligo.fow.errors import FenError, MoveError
from caligo.fow.notation import read_pgn
from caligo.fow.position import BLACK, WHITE, move_to_uci
from caligo.play.errors import IllegalMoveError, SessionError
from caligo.play.pgn import session_pgn
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def code(session: GameSession, uci: str) -> int:
    return next(m for m in session.game.legal_moves() if move_to_uci(m) == uci)


def scripted(white: list[str], black: list[str], **kw: object) -> GameSession:
    session = GameSession(SessionConfig("s", **kw))  # type: ignore[arg-type]
    play_game(session, (PolicyAgent.scripted(white), PolicyAgent.scripted(black)))
    return session


def test_king_capture_threefold_fifty_moves() -> None:
    s = scripted(["e2e4", "d1h5", "h5e8"], ["f7f6", "a7a6"])
    assert s.end is not None and s.end.reason is EndReason.KING_CAPTURE
    assert (s.end.result, s.end.winner) == ("1-0", WHITE)
    shuffle_w, shuffle_b = ["g1f3", "f3g1"] * 2, ["g8f6", "f6g8"] * 2
    s = scripted(shuffle_w, shuffle_b)
    assert s.end is not None and s.end.reason is EndReason.THREEFOLD_REPETITION
    assert s.end.result == "1/2-1/2" and s.ply == 8
    # fifty-move rule: a start position with the half-move clock at 99
    s = scripted(["a1a2"], [], start_fen="4k3/8/8/8/8/8/8/R3K3 w - - 99 80")
    assert s.end is not None and s.end.reason is EndReason.FIFTY_MOVES and s.ply == 1


def test_clock_increment_and_flag_fall() -> None:
    now = FakeTime()
    tc = TimeControl.parse("1+0.5")
    s = GameSession(SessionConfig("c", time_controls=(tc, tc)), now=now)
    assert s.clock_ms(WHITE) == 1000
    now.t = 0.4  # white thinks 400 ms
    assert s.clock_ms(WHITE) == 600 and s.clock_ms(BLACK) == 1000
    s.play(WHITE, code(s, "e2e4"))
    assert s.clock_ms(WHITE) == 1100  # 1000 - 400 + 500
    seat = s.seat(BLACK)
    assert seat.clock is not None and seat.clock.remaining_ms == 1000
    assert seat.clock.opponent_ms is None  # not shared by default (Mistboard's rule)
    assert seat.clock.deadline_ms == 1000
    now.t += 1.2  # black takes 1200 ms with 1000 left: flag fall, the move is not played
    end = s.play(BLACK, code(s, "e7e5"))
    assert end is not None and end.reason is EndReason.TIME_FORFEIT and end.result == "1-0"
    assert "black flagged" in end.detail and s.ply == 1


def test_timemargin_movetime_timeout_and_shared_clock() -> None:
    now = FakeTime()
    tc = TimeControl.parse("1+0")
    cfg = SessionConfig("m", time_controls=(tc, tc), timemargin_ms=300, share_opponent_clock=True)
    s = GameSession(cfg, now=now)
    now.t = 1.2  # 200 ms over, within the 300 ms margin
    assert s.play(WHITE, code(s, "e2e4")) is None
    assert s.clock_ms(WHITE) == 0
    seat = s.seat(BLACK)
    assert seat.clock is not None and seat.clock.opponent_ms == 0
    s = GameSession(SessionConfig("mt", time_controls=(TimeControl.parse("mt=0.5"),) * 2), now=now)
    assert s.play(WHITE, code(s, "e2e4"), elapsed_ms=499) is None
    end = s.play(BLACK, code(s, "e7e5"), elapsed_ms=501)
    assert end is not None and end.reason is EndReason.TIME_FORFEIT
    s = GameSession(SessionConfig("to", move_timeout_ms=1000), now=now)
    end = s.play(WHITE, code(s, "e2e4"), elapsed_ms=1001)
    assert end is not None and "move timeout" in end.detail


def test_check_flag_for_async_drivers() -> None:
    now = FakeTime()
    tc = TimeControl.parse("2+0")
    s = GameSession(SessionConfig("f", time_controls=(tc, tc)), now=now)
    now.t = 1.9
    assert s.check_flag() is None
    now.t = 2.1
    end = s.check_flag()
    assert end is not None and end.reason is EndReason.TIME_FORFEIT and end.winner == BLACK


def test_a_resumed_turn_is_charged_the_time_already_spent_on_it() -> None:
    """`begin_turn(spent_ms)`: a driver resuming a turn that had lasted `spent_ms` before the
    game was unloaded charges it (1000 ms clock - 300 ms before + 200 ms after = 500 ms)."""
    now = FakeTime()
    tc = TimeControl.parse("1+0")
    s = GameSession(SessionConfig("r", time_controls=(tc, tc)), now=now)
    now.t = 50.0
    s.begin_turn(300.0)
    assert s.clock_ms(WHITE) == 700 and s.turn_elapsed_ms() == pytest.approx(300.0)
    now.t += 0.2
    assert s.clock_ms(WHITE) == 500
    s.play(WHITE, code(s, "e2e4"))
    assert s.clock_ms(WHITE) == 500 and s.clock_ms(BLACK) == 1000
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(SessionError, match="time spent"):
            s.begin_turn(bad)


def test_first_move_rule_clock_starts_after_each_sides_first_move() -> None:
    """lichess's and chess.com's opening rule (`first_move_timeout_ms`): a side's first move is
    free on its clock and earns no increment; its clock runs from its second move on."""
    now = FakeTime()
    tc = TimeControl.parse("60+2")
    cfg = SessionConfig("fm", time_controls=(tc, tc), first_move_timeout_ms=(30_000, 30_000))
    s = GameSession(cfg, now=now)
    assert s.first_move_pending(WHITE) and s.first_move_pending(BLACK)
    now.t = 20.0  # white takes 20 s over its first move: the clock does not run
    assert s.clock_ms(WHITE) == 60_000
    assert s.deadline_ms(WHITE) == 30_000
    assert s.check_flag() is None
    s.play(WHITE, code(s, "e2e4"))
    assert s.clock_ms(WHITE) == 60_000 and not s.first_move_pending(WHITE)
    seat = s.seat(BLACK)
    assert seat.clock is not None and seat.clock.remaining_ms == 60_000
    assert seat.clock.deadline_ms == 30_000  # the first-move window, not the clock
    now.t += 5.0
    s.play(BLACK, code(s, "e7e5"))
    assert s.clock_ms(BLACK) == 60_000
    now.t += 3.0  # white's second move: 60 - 3 + 2
    assert s.clock_ms(WHITE) == 57_000
    s.play(WHITE, code(s, "g1f3"))
    assert s.clock_ms(WHITE) == 59_000
    assert [p.clocks_after for p in s.plies] == [(60_000, 60_000)] * 2 + [(59_000, 60_000)]
    plies = [(p.uci, p.elapsed_ms) for p in s.plies]
    assert GameSession.replay(cfg, plies).clock_ms(WHITE) == 59_000  # the same after a restart
    assert SessionConfig.from_dict(cfg.to_dict()) == cfg
    old = cfg.to_dict()
    del old["first_move_timeout_ms"]  # configs stored before the rule: off
    assert SessionConfig.from_dict(old).first_move_timeout_ms == (0, 0)


def test_no_first_move_in_time_aborts_the_game() -> None:
    now = FakeTime()
    tc = TimeControl.parse("60+0")
    cfg = SessionConfig("ab", time_controls=(tc, tc), first_move_timeout_ms=(10_000, 10_000))
    s = GameSession(cfg, now=now)
    now.t = 9.9
    assert s.check_flag() is None
    now.t = 10.1
    end = s.check_flag()
    assert end is not None and end.reason is EndReason.ABORTED and end.result == "*"
    assert end.winner is None and "no first move" in end.detail
    # black's first move is late too: aborted, and the late move is not played
    s = GameSession(cfg, now=now)
    s.play(WHITE, code(s, "e2e4"))
    now.t += 11.0
    end = s.play(BLACK, code(s, "e7e5"))
    assert end is not None and end.reason is EndReason.ABORTED and s.ply == 1
    # untimed sides and the default (matches) keep their rules: no abort, clocks from ply 1
    s = GameSession(SessionConfig("u", first_move_timeout_ms=(10_000, 10_000)), now=now)
    now.t += 20.0
    assert s.check_flag() is None and not s.first_move_pending(WHITE)
    s = GameSession(SessionConfig("d", time_controls=(tc, tc)), now=now)
    now.t += 5.0
    assert s.clock_ms(WHITE) == 55_000 and not s.first_move_pending(WHITE)
    # per colour: here only White has the rule; Black's clock runs from its first move
    s = GameSession(SessionConfig("p", time_controls=(tc, tc), first_move_timeout_ms=(10_000, 0)))
    assert s.first_move_pending(WHITE) and not s.first_move_pending(BLACK)
    with pytest.raises(SessionError):
        SessionConfig("bad", first_move_timeout_ms=(-1, 0))


def test_illegal_moves_turns_and_forfeits() -> None:
    s = GameSession(SessionConfig("i"))
    e2e5 = 12 | (36 << 6)  # a pawn jumping three squares: a code outside the legal set
    with pytest.raises(IllegalMoveError, match="'e2e5'") as info:
        s.play(WHITE, e2e5)
    assert info.value.uci == "e2e5" and not s.is_over()
    with pytest.raises(SessionError, match="not black's turn"):
        s.play(BLACK, code(s, "e2e4"))
    assert s.legal(BLACK) == [] and len(s.legal(WHITE)) == 20
    end = s.forfeit(WHITE, EndReason.CRASH, "boom")
    assert (end.result, end.winner, end.detail) == ("0-1", BLACK, "boom")
    with pytest.raises(SessionError, match="over"):
        s.resign(BLACK)
    assert GameSession(SessionConfig("r")).resign(BLACK).result == "1-0"
    aborted = GameSession(SessionConfig("a")).abort("server shutdown")
    assert aborted.result == "*" and aborted.score(WHITE) is None


def test_config_validation() -> None:
    with pytest.raises(FenError):
        SessionConfig("x", start_fen="not a fen")
    with pytest.raises(MoveError, match="e2e5"):
        SessionConfig("x", forced=("e2e5",))
    with pytest.raises(SessionError):
        SessionConfig("")
    cfg = SessionConfig(
        "x",
        time_controls=(TimeControl.parse("3+2"), TimeControl.parse("mt=1")),
        forced=("d2d4",),
        seeds=(4, 5),
        names=("A", "B"),
    )
    assert SessionConfig.from_dict(cfg.to_dict()) == cfg


def test_forced_opening_plies_go_through_force() -> None:
    tc = TimeControl.parse("10+1")
    cfg = SessionConfig("o", forced=("e2e4", "c7c5", "g1f3"), time_controls=(tc, tc), seeds=(1, 2))
    s = GameSession(cfg)
    assert s.pending_force(WHITE) == "e2e4"
    messages = s.project(WHITE)
    assert type(messages[-1]).__name__ == "Force" and messages[-1].move == "e2e4"  # type: ignore[union-attr]
    with pytest.raises(SessionError, match="forced"):
        s.play(WHITE, code(s, "d2d4"))
    play_game(s, (RandomAgent(seed=1), RandomAgent(seed=2)))
    assert [p.uci for p in s.plies[:3]] == ["e2e4", "c7c5", "g1f3"]
    assert all(p.forced for p in s.plies[:3]) and not s.plies[3].forced
    assert s.plies[2].clocks_after == (10000, 10000)  # book plies leave the clocks alone
    assert s.transcript(BLACK).entries[1].own_move == "c7c5"


def test_replay_rebuilds_the_same_game() -> None:
    tc = TimeControl.parse("30+0.1")
    cfg = SessionConfig("p", time_controls=(tc, tc), seeds=(3, 4), forced=("d2d4",))
    s = GameSession(cfg)
    play_game(s, (RandomAgent(seed=3), RandomAgent(seed=4)))
    plies = [(p.uci, p.elapsed_ms) for p in s.plies]
    r = GameSession.replay(cfg, plies, s.end)
    assert [p.uci for p in r.plies] == [p.uci for p in s.plies]
    assert [p.clocks_after for p in r.plies] == [p.clocks_after for p in s.plies]
    assert r.transcript(WHITE) == s.transcript(WHITE) and r.end == s.end
    with pytest.raises(IllegalMoveError):
        GameSession.replay(cfg, [("d2d4", 0), ("e2e5", 0)])


def test_pgn_tags_comments_and_round_trip() -> None:
    tc = TimeControl.parse("60+1")
    s = GameSession(
        SessionConfig(
            "g",
            time_controls=(tc, TimeControl.parse("30+1")),
            names=("Alpha", "Beta"),
            forced=("e2e4",),
        )
    )
    agent = PolicyAgent(lambda state: {}, deterministic=True)  # uniform fallback, first max
    play_game(s, (RandomAgent(seed=5), agent))
    text = session_pgn(s, {"Round": "3.2", "Event": "test"})
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    h = game.headers
    assert h["Variant"] == "Fog of War" and h["Round"] == "3.2"
    assert h["White"] == "Alpha" and h["Black"] == "Beta"
    assert h["WhiteTimeControl"] == "60+1" and h["BlackTimeControl"] == "30+1"
    assert s.end is not None and h["Termination"] == s.end.reason.value
    assert h["Result"] == s.end.result
    comments = [node.comment for node in game.mainline()]
    assert comments[0] == "book"
    assert all(c.startswith("t=") and "[%clk" in c for c in comments[1:])
    parsed = read_pgn(text)
    assert list(parsed.moves) == [p.move for p in s.plies]
    assert "{" not in session_pgn(s, comments=False)


def test_pgn_comment_shows_diagnostics() -> None:
    s = GameSession(SessionConfig("d"))
    move = code(s, "e2e4")
    s.play(
        WHITE, move, 1234.0, Decision(move, value=0.12, info={"nodes": 1070552, "belief": 17264})
    )
    assert "1. e4 {t=1.234 n=1070552 P=17264 v=0.12} *" in session_pgn(s)
