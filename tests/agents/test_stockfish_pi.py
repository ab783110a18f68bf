"""`StockfishPIAgent`: legal moves, from positions sampled from P, through the referee.

Expected values: P is `caligo.fow.BeliefSet` replayed on the agent's transcript (not the
agent's own copy); chess legality of Stockfish's move in the sampled position is python-chess's
`Board.is_legal`; the king capture rule is Obscuro, appendix A (capturing the king wins); game
endings are the referee's.
"""

from __future__ import annotations

import chess
import pytest

from caligo.agents.base import TimeControl
from caligo.agents.random_agent import RandomAgent
from caligo.agents.registry import AgentSpecError, create
from caligo.agents.stockfish_pi import StockfishPIAgent
from caligo.fow.belief import BeliefSet
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.position import from_fen
from caligo.play.referee import play_game
from caligo.play.session import EndReason, GameSession, SessionConfig
from tests.agents.test_obscuro import HAVE_SF
from tests.conftest import SHORT

pytestmark = pytest.mark.skipif(not HAVE_SF, reason="Debian's stockfish is not installed")


def _game(agent: StockfishPIAgent, seed: int, white: bool) -> GameSession:
    config = SessionConfig(f"pi-{seed}", seeds=(seed, seed + 7),
                           time_controls=(TimeControl(), TimeControl()))
    session = GameSession(config)
    opponent = RandomAgent(seed=seed)
    play_game(session, (agent, opponent) if white else (opponent, agent))
    return session


def test_plays_legal_moves_from_positions_sampled_from_p() -> None:
    agent = create("stockfish-pi:depth=4")
    assert isinstance(agent, StockfishPIAgent)
    moves = captures = 0
    try:
        for g in range(2 if SHORT else 12):
            white = g % 2 == 0
            me = 0 if white else 1
            s = _game(agent, 40 + g, white)
            assert s.end is not None and s.end.reason not in (
                EndReason.ILLEGAL_MOVE, EndReason.CRASH, EndReason.TIME_FORFEIT), s.end
            p_set = BeliefSet.initial(me, s.config.start_fen)
            truth = Game(s.config.start_fen)
            for ply in s.plies:
                if ply.mover == me:
                    info = ply.decision.info  # type: ignore[union-attr]
                    sample = info["sample"]
                    assert p_set.contains(from_fen(sample))  # drawn from P
                    assert info["belief"] == len(p_set)
                    board = chess.Board(sample)
                    if info.get("reason") == "king capture":
                        captures += 1
                        assert ply.uci[2:4] == chess.square_name(board.king(not board.turn))
                    elif "bestmove" in info and "reason" not in info:
                        assert board.is_legal(chess.Move.from_uci(ply.uci)), (sample, ply.uci)
                        moves += 1
                truth.push(ply.move)
                obs = observe(truth.position, me)
                p_set = (p_set.update_own_move(ply.move, obs) if ply.mover == me
                         else p_set.update_opponent_move(obs))
    finally:
        agent.close()
    assert moves >= 10 and captures >= 1


def test_takes_a_visible_king() -> None:
    """Scholar's-mate geometry: White's queen sees the black king after 1. e4 f6 2. Qh5 g5
    (the h5-e8 diagonal is open), so the capture is played whatever the sample."""
    start = "rnbqkbnr/ppppp2p/5p2/6pQ/4P3/8/PPPP1PPP/RNB1KBNR w KQkq g6 0 3"
    agent = StockfishPIAgent(depth=2)
    config = SessionConfig("pi-k", start_fen=start, seeds=(1, 2))
    session = GameSession(config)
    try:
        play_game(session, (agent, RandomAgent(seed=1)))
    finally:
        agent.close()
    first = session.plies[0]
    assert first.uci == "h5e8"
    assert first.decision is not None and first.decision.info["reason"] == "king capture"
    assert session.end is not None and session.end.reason is EndReason.KING_CAPTURE


def test_same_seed_same_game() -> None:
    a, b = StockfishPIAgent(depth=3), StockfishPIAgent(depth=3)
    try:
        assert [p.uci for p in _game(a, 3, True).plies] == [p.uci for p in _game(b, 3, True).plies]
    finally:
        a.close()
        b.close()


def test_options_and_errors() -> None:
    for spec, match in (("stockfish-pi:depth=0", "depth must be an int"),
                        ("stockfish-pi:depth=x", "depth must be an integer"),
                        ("stockfish-pi:hash=4", "unknown option")):
        with pytest.raises(AgentSpecError, match=match):
            create(spec)
    with pytest.raises(FileNotFoundError, match="no Stockfish executable"):
        StockfishPIAgent(path="/nonexistent/stockfish")


def test_a_replayed_transcript_follows_p() -> None:
    """The web server resumes a game by replaying its transcript: `newgame`, every
    `observe` (our own moves without an `act` before them), then `go`. The agent's P after the
    replay is P replayed independently on the same observations (it used to lag a ply behind
    and fail on its own next move)."""
    from caligo.agents.protocol import Go
    from caligo.fow.position import move_to_uci
    from caligo.play.referee import AgentSeat

    class Stop(Exception):
        pass

    def stop_at_12(s: GameSession) -> None:
        if s.ply >= 12:
            raise Stop

    tcs = (TimeControl(), TimeControl())
    session = GameSession(SessionConfig("replay", seeds=(1, 2), time_controls=tcs))
    with pytest.raises(Stop):
        play_game(session, (RandomAgent(seed=1), RandomAgent(seed=2)), on_ply=stop_at_12)
    for spec in ("stockfish-pi:depth=1", "caligo:level=3"):
        agent = create(spec)
        seat = AgentSeat(agent)
        messages = session.project(0, -1)
        for m in messages[:-1]:
            seat.deliver(m)
        decision = seat.ask(messages[-1])
        inner = getattr(agent, "inner", agent)
        assert isinstance(inner, StockfishPIAgent) and inner._belief is not None
        truth = BeliefSet.initial(0, inner.start_fen)
        for own, obs in inner.history:
            truth = (truth.update_opponent_move(obs) if own is None
                     else truth.update_own_move(own, obs))
        assert len(inner._belief) == len(truth), spec
        go = messages[-1]
        assert isinstance(go, Go) and move_to_uci(decision.move) in go.legal, spec
        agent.close()
