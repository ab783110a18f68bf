"""The synchronous referee loop: two agents, one `GameSession`, every message from `project`.

`AgentSeat` turns the protocol messages `project` builds into `Agent` calls (the same mapping
the `caligo engine` server uses on the other end of a pipe), and `play_game` runs a session to
its end: it measures each answer from the request to the reply with a monotonic clock, and turns
every failure into a logged, forfeited game, never an exception that stops a match:

- an answer outside the legal moves: `illegal move`;
- an answer later than the deadline: `time forfeit` (see `play_game` for what is timed);
- an agent that raises, an engine that crashes, hangs past its read deadline or reports an
  error: `engine crash` (or `time forfeit` for a missed deadline);
- `Decision.resign`: `resignation`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from caligo.agents.base import (
    COLOR_NAMES,
    Agent,
    Decision,
    observed_move,
    observed_moves,
)
from caligo.agents.external import EngineIllegalMove, EngineTimeout
from caligo.agents.protocol import (
    Force,
    GameOver,
    Go,
    NewGame,
    Observe,
    RefereeMessage,
)
from caligo.fow.observation import Observation
from caligo.play.errors import IllegalMoveError
from caligo.play.session import EndReason, GameEnd, GameSession

log = logging.getLogger(__name__)


class AgentSeat:
    """Deliver protocol messages to an `Agent`; answer `go` with its `Decision`.

    Moves arrive as UCI text and are turned into move codes from the seat's own latest
    observation (`observed_move`), so the agent receives nothing the messages do not carry.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._obs: Observation | None = None
        self._legal: dict[str, int] = {}

    def deliver(self, message: RefereeMessage) -> None:
        """Pass one non-`go` message to the agent."""
        agent = self.agent
        if isinstance(message, Observe):
            own = None
            if message.own_move is not None:
                own = self._legal.get(message.own_move)
                if own is None and self._obs is not None:
                    own = observed_move(self._obs, message.own_move)
            self._legal = {}
            self._obs = message.observation
            agent.observe(message.observation, own)
        elif isinstance(message, NewGame):
            self._obs = message.observation
            self._legal = {}
            agent.new_game(message.color, message.start, message.time_control, message.seed)
        elif isinstance(message, Force):
            assert self._obs is not None
            move = observed_move(self._obs, message.move)
            self._legal = {message.move: move}
            agent.force(move)
        elif isinstance(message, GameOver):
            agent.game_over(message.result, message.termination)
        else:
            raise TypeError(f"AgentSeat cannot deliver {message!r}")

    def ask(self, go: Go) -> Decision:
        """Ask the agent for the move of `go`."""
        assert self._obs is not None
        moves = observed_moves(self._obs, go.legal)
        self._legal = dict(zip(go.legal, moves, strict=True))
        return self.agent.act(moves, go.clock)


STARTUP_LIMIT_S = 120.0
"""The longest a seat's per-game start-up (`new_game`: processes, memory, compiled kernels)
may take before the game is lost as a crash; it is timed apart from the move times."""


def play_game(
    session: GameSession,
    agents: tuple[Agent, Agent],
    on_ply: Callable[[GameSession], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    startup_limit_s: float = STARTUP_LIMIT_S,
) -> GameEnd:
    """Play `session` to its end between `agents` (indexed by colour); return the ending.

    `on_ply(session)` runs after every ply (storage writes, live views). `clock` measures the
    think time (seconds, monotonic).

    Time is charged so that every agent pays only for its own work, in process and behind a
    pipe alike:

    - start-up: both seats get `newgame` before any clock runs (an `ExternalAgent` waits for
      `readyok` after it); each seat's start-up is timed apart (`GameSession.startup_ms`)
      and may take `startup_limit_s`;
    - before the mover is asked, the other seat takes in the last ply (its own move's
      observation: an in-process agent's belief update runs here, on nobody's clock, as an
      engine process would run it while the opponent thinks);
    - then the mover's clock starts (`GameSession.begin_turn`) and its move is timed from
      the delivery of its observations (the opponent's move: its belief update is part of its
      move) to its answer.
    """
    seats = (AgentSeat(agents[0]), AgentSeat(agents[1]))
    sent = [-1, -1]
    for color in (0, 1):
        if not session.is_over():
            _start_up(session, seats[color], sent, color, clock, startup_limit_s)
    while True:
        end = session.end
        if end is not None:
            for color in (0, 1):
                _send_gameover(seats[color], session, color)
            return end
        mover = session.to_move
        assert mover is not None
        other = 1 - mover
        _catch_up(session, seats[other], sent, other)
        if session.is_over():
            continue
        session.begin_turn()
        _turn(session, seats[mover], sent, mover, clock)
        if on_ply is not None:
            on_ply(session)


def _start_up(session: GameSession, seat: AgentSeat, sent: list[int], color: int,
              clock: Callable[[], float], limit_s: float) -> None:
    """Deliver `newgame` to `color` (off the clock), timed; a failure or an overlong start-up
    loses the game as a crash."""
    message = session.project(color, -1)[0]
    assert isinstance(message, NewGame)
    start = clock()
    try:
        seat.deliver(message)
    except Exception as exc:  # a start-up that fails or never ends is a crash, not a flag
        detail = f"{COLOR_NAMES[color]} (start-up): {type(exc).__name__}: {exc}"
        log.warning("game %s: %s loses: %s", session.game_id, COLOR_NAMES[color], detail)
        session.forfeit(color, EndReason.CRASH, detail)
        return
    ms = (clock() - start) * 1000.0
    session.note_startup(color, ms)
    sent[color] = 0
    if ms > limit_s * 1000.0:
        detail = (f"{COLOR_NAMES[color]}: start-up took {ms:.0f} ms (limit "
                  f"{limit_s * 1000:.0f} ms)")
        log.warning("game %s: %s loses: %s", session.game_id, COLOR_NAMES[color], detail)
        session.forfeit(color, EndReason.CRASH, detail)


def _catch_up(session: GameSession, seat: AgentSeat, sent: list[int], color: int) -> None:
    """Deliver the observations `color` has not seen (not to move: off every clock)."""
    messages = session.project(color, sent[color])
    try:
        for message in messages:
            if isinstance(message, Go | Force | GameOver):
                break
            seat.deliver(message)
    except Exception as exc:
        _crash(session, color, exc)
        return
    sent[color] = session.ply


def _turn(session: GameSession, seat: AgentSeat, sent: list[int], mover: int,
          clock: Callable[[], float]) -> None:
    """The mover's turn, timed from its first pending message to its answer."""
    start = clock()
    messages = session.project(mover, sent[mover])
    request: RefereeMessage | None = None
    try:
        for message in messages:
            if isinstance(message, Go | Force | GameOver):
                request = message
                break
            seat.deliver(message)
    except Exception as exc:
        _crash(session, mover, exc)
        return
    sent[mover] = session.ply
    if isinstance(request, Force):
        try:
            seat.deliver(request)
        except Exception as exc:  # an agent failing on force loses like any crash
            _crash(session, mover, exc)
            return
        session.play_forced()
    elif isinstance(request, Go):
        _ask(session, seat, mover, request, clock, start)
    else:  # pragma: no cover - project ends with go or force for the mover
        raise AssertionError(f"no request for the mover: {request!r}")


def _send_gameover(seat: AgentSeat, session: GameSession, color: int) -> None:
    message = session.project(color, session.ply)[-1]
    try:
        seat.deliver(message)
    except Exception as exc:  # the game is decided; a failing goodbye is only logged
        log.warning("game %s: %s failed on gameover: %s", session.game_id, COLOR_NAMES[color], exc)


def _crash(session: GameSession, color: int, exc: BaseException) -> None:
    if session.is_over():
        return
    detail = f"{COLOR_NAMES[color]}: {type(exc).__name__}: {exc}"
    log.warning("game %s: %s loses: %s", session.game_id, COLOR_NAMES[color], detail)
    reason = EndReason.TIME_FORFEIT if isinstance(exc, EngineTimeout) else EndReason.CRASH
    session.forfeit(color, reason, detail)


def _ask(
    session: GameSession,
    seat: AgentSeat,
    mover: int,
    go: Go,
    clock: Callable[[], float],
    start: float,
) -> None:
    try:
        decision = seat.ask(go)
    except EngineIllegalMove as exc:
        log.warning("game %s: %s loses: %s", session.game_id, COLOR_NAMES[mover], exc)
        session.forfeit(mover, EndReason.ILLEGAL_MOVE, str(exc))
        return
    except Exception as exc:  # any failure of the agent loses the game, the match goes on
        _crash(session, mover, exc)
        return
    elapsed_ms = (clock() - start) * 1000.0
    if decision.resign:
        log.info("game %s: %s resigns", session.game_id, COLOR_NAMES[mover])
        session.forfeit(mover, EndReason.RESIGNATION, f"{COLOR_NAMES[mover]} resigns")
        return
    try:
        end = session.play(mover, decision.move, elapsed_ms, decision)
    except IllegalMoveError as exc:
        log.warning("game %s: %s loses: %s", session.game_id, COLOR_NAMES[mover], exc)
        session.forfeit(mover, EndReason.ILLEGAL_MOVE, str(exc))
        return
    if end is not None and end.reason is EndReason.TIME_FORFEIT:
        log.warning("game %s: %s", session.game_id, end.detail)


__all__ = ["AgentSeat", "play_game"]
