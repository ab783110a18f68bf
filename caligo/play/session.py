"""The referee's game session: the only holder of the true position, and the one projection.

A `GameSession` holds the true `caligo.fow.game.Game`, both players' transcripts and both
clocks. It is step-able: `to_move`, `legal(color)`, `play(color, move, elapsed_ms)`,
`forfeit(color, reason)`; it declares king capture, threefold repetition, the fifty-move rule
and "no moves" (through `Game`), and flag fall, illegal moves, crashes, resignations and aborts
(for the caller). `caligo.play.referee` drives it synchronously between two agents; the web app
drives the same object asynchronously with a human seat.

`project(seat, since)` is the ONE function that builds every message a seat receives
(docs/design.md, "The referee" and "The web app"): it takes a `SeatState`, which
`GameSession.seat(color)` builds from that colour's transcript, its own clock and the public status
only, so no message can depend on anything the seat has not observed (tests/play/test_redaction.py
checks byte identity across different true histories). Engine diagnostics never enter a `SeatState`.

Time (docs/design.md, "The referee"): monotonic milliseconds, measured from the request to the
answer; a CLOCK side loses when its answer takes longer than its remaining time plus
`timemargin_ms`; a MOVETIME side when it exceeds the move time plus the margin; untimed and
fixed-iteration sides when they exceed `move_timeout_ms` (a hang guard). The increment is added
after each own move. With `first_move_timeout_ms` set for it, a clock side's clock starts only after
its own first move, and a first move that does not come in time aborts the game (the web app's rule,
as on lichess).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from caligo.agents.base import COLOR_NAMES, Clock, Decision, TcKind, TimeControl
from caligo.agents.protocol import Force, GameOver, Go, NewGame, Observe, RefereeMessage
from caligo.fow.game import Game, Termination
from caligo.fow.notation import move_to_san
from caligo.fow.observation import Observation, observe
from caligo.fow.position import BLACK, WHITE, move_to_uci
from caligo.fow.transcript import FORMAT as TRANSCRIPT_FORMAT
from caligo.fow.transcript import VERSION as TRANSCRIPT_VERSION
from caligo.fow.transcript import Transcript, TranscriptEntry
from caligo.fow.view import legal_moves_uci
from caligo.play.errors import IllegalMoveError, SessionError
from caligo.play.session_config import SessionConfig


class EndReason(Enum):
    """Why a game ended (PGN `Termination` values; the first four come from `Game`)."""

    KING_CAPTURE = "king capture"
    THREEFOLD_REPETITION = "threefold repetition"
    FIFTY_MOVES = "fifty-move rule"
    NO_MOVES = "no moves"
    TIME_FORFEIT = "time forfeit"
    ILLEGAL_MOVE = "illegal move"
    CRASH = "engine crash"
    RESIGNATION = "resignation"
    ABORTED = "aborted"

    @classmethod
    def from_termination(cls, termination: Termination) -> EndReason:
        """Map a rules ending of `caligo.fow.game` onto this enum."""
        return cls(termination.value)


@dataclass(frozen=True)
class GameEnd:
    """How a game ended: result text, reason, winner (None for a draw or abort), detail."""

    result: str
    reason: EndReason
    winner: int | None
    detail: str = ""

    def score(self, color: int) -> float | None:
        """Return 1, 0.5 or 0 for `color`, None for an aborted game."""
        if self.result == "*":
            return None
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == color else 0.0


def _forfeit_result(loser: int) -> str:
    return "0-1" if loser == WHITE else "1-0"


@dataclass(frozen=True)
class PlyRecord:
    """One ply as the referee saw it (truth; revealed only after the game)."""

    ply: int
    mover: int
    move: int
    uci: str
    elapsed_ms: float
    clocks_after: tuple[int | None, int | None]
    forced: bool = False
    decision: Decision | None = None


@dataclass(frozen=True)
class SeatState:
    """Everything one seat is entitled to right now: the input of `project`, nothing else.

    `clock` is set only while the seat is to move (and `forced_move` only when the referee
    imposes the seat's next move); `end` only once the game is over.
    """

    game_id: str
    color: int
    start_fen: str
    seed: int
    time_control: TimeControl
    initial: Observation
    entries: tuple[TranscriptEntry, ...]
    clock: Clock | None = None
    forced_move: str | None = None
    end: GameEnd | None = None

    @property
    def last_observation(self) -> Observation:
        """The seat's latest observation (the initial one before the first ply)."""
        return self.entries[-1].observation if self.entries else self.initial


def project(seat: SeatState, since: int = -1) -> list[RefereeMessage]:
    """Return the messages for `seat` after ply `since` (-1: from the start, with `newgame`).

    The result is `newgame` (if since < 0), one `observe` per transcript entry with ply > since,
    then `gameover` once the game is over, else `force` when the referee imposes the seat's
    move, else `go` when the seat is to move. Built from the seat's state only.
    """
    game = seat.game_id
    out: list[RefereeMessage] = []
    if since < 0:
        out.append(
            NewGame(game, seat.color, seat.start_fen, seat.seed, seat.time_control, seat.initial)
        )
    for entry in seat.entries[max(since, 0) :]:
        out.append(Observe(game, entry.ply, entry.own_move, entry.observation))
    ply = len(seat.entries) + 1
    if seat.end is not None:
        out.append(GameOver(game, seat.end.result, seat.end.reason.value))
    elif seat.forced_move is not None:
        out.append(Force(game, ply, seat.forced_move))
    elif seat.clock is not None:
        legal = tuple(legal_moves_uci(seat.last_observation))
        out.append(Go(game, ply, legal, seat.clock))
    return out


@dataclass
class _Side:
    initial: Observation
    entries: list[TranscriptEntry] = field(default_factory=list)
    remaining_ms: float | None = None


class GameSession:
    """One game under the referee: truth, transcripts, clocks, and the end when it comes.

    `now` returns monotonic seconds (injectable for tests and replays).
    """

    def __init__(self, config: SessionConfig, now: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._now = now
        self._game = Game(config.start_fen)
        pos = self._game.position
        self._sides = (_Side(observe(pos, WHITE)), _Side(observe(pos, BLACK)))
        for color in (WHITE, BLACK):
            tc = config.time_controls[color]
            if tc.kind is TcKind.CLOCK:
                self._sides[color].remaining_ms = float(tc.initial_ms)
        self._plies: list[PlyRecord] = []
        self._sans: list[str] = []
        self._fens: tuple[list[str], list[str]] = ([], [])
        self._end: GameEnd | None = None
        self._moved = [False, False]
        self._turn_started = now()
        self._startup_ms: list[float | None] = [None, None]

    # --- state -------------------------------------------------------------------------------

    @property
    def game_id(self) -> str:
        return self.config.game_id

    @property
    def game(self) -> Game:
        """The true game record (referee side only: never hand it to a seat)."""
        return self._game

    @property
    def plies(self) -> list[PlyRecord]:
        """Every ply so far (truth and diagnostics: reveal only after the game)."""
        return list(self._plies)

    @property
    def ply(self) -> int:
        """Number of plies played."""
        return len(self._plies)

    @property
    def end(self) -> GameEnd | None:
        """How the game ended, or None while it goes on."""
        return self._end

    def is_over(self) -> bool:
        """Return True once the game has ended."""
        return self._end is not None

    @property
    def to_move(self) -> int | None:
        """The colour to move, None once the game is over."""
        return None if self._end is not None else self._game.turn

    def legal(self, color: int) -> list[int]:
        """The legal moves of `color` ([] unless it is to move)."""
        if self.to_move != color:
            return []
        return self._game.legal_moves()

    def pending_force(self, color: int) -> str | None:
        """The opening move the referee imposes on `color` now, if any."""
        if self.to_move != color or self.ply >= len(self.config.forced):
            return None
        return self.config.forced[self.ply]

    def sans(self) -> list[str]:
        """The SAN of every ply so far (computed on demand: SAN needs move generation)."""
        if len(self._sans) < len(self._plies):
            positions = self._game.positions
            for i in range(len(self._sans), len(self._plies)):
                self._sans.append(move_to_san(positions[i], self._plies[i].move))
        return list(self._sans)

    def dark_fens(self, color: int) -> list[str]:
        """`color`'s observation after every ply as dark FEN text (cached: it is not cheap)."""
        cache = self._fens[color]
        entries = self._sides[color].entries
        for i in range(len(cache), len(entries)):
            cache.append(entries[i].observation.dark_fen())
        return list(cache)

    def transcript_dict(self, color: int) -> dict[str, Any]:
        """`self.transcript(color).to_dict()`, from the cached dark FENs."""
        fens = self.dark_fens(color)
        entries = self._sides[color].entries
        return {
            "format": TRANSCRIPT_FORMAT,
            "version": TRANSCRIPT_VERSION,
            "player": COLOR_NAMES[color],
            "start": self.config.start_fen,
            "plies": [
                {"ply": e.ply, "own_move": e.own_move, "observation": fens[i]}
                for i, e in enumerate(entries)
            ],
        }

    def transcript(self, color: int) -> Transcript:
        """The seat's transcript so far (a `caligo.fow.transcript.Transcript`)."""
        return Transcript(color, self.config.start_fen, tuple(self._sides[color].entries))

    def first_move_pending(self, color: int) -> bool:
        """True while `color`'s clock waits for its first move (`first_move_timeout_ms`)."""
        return (
            self.config.first_move_timeout_ms[color] > 0
            and self.config.time_controls[color].kind is TcKind.CLOCK
            and not self._moved[color]
        )

    def turn_elapsed_ms(self) -> float:
        """Milliseconds since the side to move was asked (its turn started)."""
        return (self._now() - self._turn_started) * 1000.0

    @property
    def startup_ms(self) -> tuple[float | None, float | None]:
        """Each seat's per-game start-up time (ms; None until the driver noted it): timed
        apart from the moves, never on a clock."""
        return (self._startup_ms[0], self._startup_ms[1])

    def note_startup(self, color: int, ms: float) -> None:
        """Record `color`'s start-up time (the driver times `new_game`)."""
        self._startup_ms[color] = float(ms)

    def begin_turn(self, spent_ms: float = 0.0) -> None:
        """Start the side to move's clock now, with `spent_ms` of the turn already used.

        A turn starts when the previous ply is played; a driver that first lets the other seat
        take in that ply (an in-process agent's own-move observation, the engine's work after
        its move in the web app) calls this when it asks the mover, so that work is not charged
        to the mover. Any other time already past is forgotten: call it before the mover is
        told anything. A driver that resumes a stored game whose running turn had already
        lasted `spent_ms` before it was unloaded passes it, so the mover is charged for it.
        """
        if not 0.0 <= spent_ms < float("inf"):
            raise SessionError(f"invalid time spent on a turn: {spent_ms!r} ms")
        self._turn_started = self._now() - spent_ms / 1000.0

    def clock_ms(self, color: int) -> int | None:
        """`color`'s remaining clock now (the mover's is running), None without a clock."""
        rem = self._sides[color].remaining_ms
        if rem is None:
            return None
        if self.to_move == color and not self.first_move_pending(color):
            rem -= self.turn_elapsed_ms()
        return max(0, round(rem))

    def deadline_ms(self, color: int) -> int:
        """The longest answer (from the turn's start) `color` may take before losing on time."""
        tc = self.config.time_controls[color]
        margin = self.config.timemargin_ms
        if self.first_move_pending(color):
            return self.config.first_move_timeout_ms[color] + margin
        if tc.kind is TcKind.CLOCK:
            rem = self._sides[color].remaining_ms
            return max(0, round(rem or 0.0)) + margin
        if tc.kind is TcKind.MOVETIME:
            return tc.movetime_ms + margin
        return self.config.move_timeout_ms

    def seat(self, color: int) -> SeatState:
        """Build `color`'s `SeatState` (its transcript, own clock and public status only)."""
        if color not in (WHITE, BLACK):
            raise SessionError(f"invalid colour: {color!r}")
        side = self._sides[color]
        tc = self.config.time_controls[color]
        clock = None
        forced = None
        if self._end is None and self._game.turn == color:
            forced = self.pending_force(color)
            if forced is None:
                clock = self._clock_view(color, tc)
        return SeatState(
            game_id=self.config.game_id,
            color=color,
            start_fen=self.config.start_fen,
            seed=self.config.seeds[color],
            time_control=tc,
            initial=side.initial,
            entries=tuple(side.entries),
            clock=clock,
            forced_move=forced,
            end=self._end,
        )

    def _clock_view(self, color: int, tc: TimeControl) -> Clock:
        opponent = None
        if self.config.share_opponent_clock:
            opponent = self.clock_ms(1 - color)
        return Clock(
            kind=tc.kind,
            remaining_ms=self.clock_ms(color),
            increment_ms=tc.increment_ms,
            movetime_ms=tc.movetime_ms if tc.kind is TcKind.MOVETIME else None,
            iterations=tc.iterations if tc.kind is TcKind.ITERATIONS else None,
            opponent_ms=opponent,
            deadline_ms=max(0, self.deadline_ms(color) - round(self.turn_elapsed_ms())),
        )

    def project(self, color: int, since: int = -1) -> list[RefereeMessage]:
        """`project(self.seat(color), since)`."""
        return project(self.seat(color), since)

    # --- play --------------------------------------------------------------------------------

    def _check_turn(self, color: int) -> None:
        if self._end is not None:
            raise SessionError(f"game {self.game_id} is over ({self._end.result})")
        if color != self._game.turn:
            raise SessionError(f"not {COLOR_NAMES[color]}'s turn in game {self.game_id}")

    def play(
        self,
        color: int,
        move: int,
        elapsed_ms: float | None = None,
        decision: Decision | None = None,
    ) -> GameEnd | None:
        """Play `color`'s `move`, which took `elapsed_ms` (default: since its turn started).

        Raise IllegalMoveError for a move outside the legal set (the caller decides whether that
        forfeits: it does for an engine, not for a human's misclick) and SessionError when it
        is not `color`'s turn. A move that came too late loses on time instead of being played.
        Return the end of the game if this ply ended it.
        """
        self._check_turn(color)
        if move not in self._game.legal_moves():
            uci = move_to_uci(move) if isinstance(move, int) and 0 <= move < 1 << 16 else str(move)
            raise IllegalMoveError(
                f"illegal move for {COLOR_NAMES[color]} at ply {self.ply + 1}: {uci!r}", uci
            )
        if self.pending_force(color) is not None:
            raise SessionError(f"ply {self.ply + 1} is a forced opening move")
        if elapsed_ms is None:
            elapsed_ms = self.turn_elapsed_ms()
        late = self._late(color, elapsed_ms)
        if late:
            return self._timed_out(color, late)
        return self._apply(color, move, elapsed_ms, decision, forced=False)

    def _timed_out(self, color: int, late: str) -> GameEnd:
        """A late answer: a loss on time, or an abort when it was `color`'s first move."""
        if self.first_move_pending(color):
            return self.abort(late)
        return self.forfeit(color, EndReason.TIME_FORFEIT, late)

    def play_forced(self) -> GameEnd | None:
        """Play the pending forced opening move of the side to move."""
        color = self.to_move
        forced = None if color is None else self.pending_force(color)
        if color is None or forced is None:
            raise SessionError(f"no forced move pending in game {self.game_id}")
        move = next(m for m in self._game.legal_moves() if move_to_uci(m) == forced)
        return self._apply(color, move, 0.0, None, forced=True)

    def _late(self, color: int, elapsed_ms: float) -> str:
        tc = self.config.time_controls[color]
        margin = self.config.timemargin_ms
        if self.first_move_pending(color):
            limit = self.config.first_move_timeout_ms[color]
            if elapsed_ms > limit + margin:
                return f"{COLOR_NAMES[color]} made no first move within {limit} ms"
        elif tc.kind is TcKind.CLOCK:
            rem = self._sides[color].remaining_ms or 0.0
            if elapsed_ms > rem + margin:
                return f"{COLOR_NAMES[color]} flagged: {elapsed_ms:.0f} ms with {rem:.0f} ms left"
        elif tc.kind is TcKind.MOVETIME:
            if elapsed_ms > tc.movetime_ms + margin:
                return (
                    f"{COLOR_NAMES[color]} took {elapsed_ms:.0f} ms for a "
                    f"{tc.movetime_ms} ms move time"
                )
        elif elapsed_ms > self.config.move_timeout_ms:
            return (
                f"{COLOR_NAMES[color]} gave no move within the "
                f"{self.config.move_timeout_ms} ms move timeout"
            )
        return ""

    def _apply(
        self, color: int, move: int, elapsed_ms: float, decision: Decision | None, forced: bool
    ) -> GameEnd | None:
        tc = self.config.time_controls[color]
        side = self._sides[color]
        # book plies and a first move under `first_move_timeout_ms` leave the clocks alone
        if side.remaining_ms is not None and not forced and not self.first_move_pending(color):
            side.remaining_ms = max(0.0, side.remaining_ms - elapsed_ms) + tc.increment_ms
        if not forced:
            self._moved[color] = True
        outcome = self._game.push(move)
        pos = self._game.position
        uci = move_to_uci(move)
        ply = self._game.ply
        for c in (WHITE, BLACK):
            obs = observe(pos, c)
            own = uci if c == color else None
            self._sides[c].entries.append(TranscriptEntry(ply=ply, own_move=own, observation=obs))
        clocks = (self._rounded(WHITE), self._rounded(BLACK))
        self._plies.append(
            PlyRecord(ply, color, int(move), uci, float(elapsed_ms), clocks, forced, decision)
        )
        self._turn_started = self._now()
        if outcome is not None:
            winner = outcome.winner
            self._end = GameEnd(
                outcome.result, EndReason.from_termination(outcome.termination), winner
            )
        return self._end

    def _rounded(self, color: int) -> int | None:
        rem = self._sides[color].remaining_ms
        return None if rem is None else round(rem)

    # --- endings the rules of chess do not know ----------------------------------------------

    def forfeit(self, color: int, reason: EndReason, detail: str = "") -> GameEnd:
        """End the game as a loss for `color` (time, illegal move, crash, resignation)."""
        if self._end is not None:
            raise SessionError(f"game {self.game_id} is over ({self._end.result})")
        if color not in (WHITE, BLACK):
            raise SessionError(f"invalid colour: {color!r}")
        self._end = GameEnd(_forfeit_result(color), reason, 1 - color, detail)
        return self._end

    def resign(self, color: int) -> GameEnd:
        """`color` resigns."""
        return self.forfeit(color, EndReason.RESIGNATION, f"{COLOR_NAMES[color]} resigns")

    def abort(self, detail: str = "") -> GameEnd:
        """End the game without a result ("*")."""
        if self._end is not None:
            raise SessionError(f"game {self.game_id} is over ({self._end.result})")
        self._end = GameEnd("*", EndReason.ABORTED, None, detail)
        return self._end

    def check_flag(self) -> GameEnd | None:
        """End the game if the side to move has run out of time by now (for async drivers)."""
        color = self.to_move
        if color is None:
            return self._end
        late = self._late(color, self.turn_elapsed_ms())
        if late and self.config.time_controls[color].kind in (TcKind.CLOCK, TcKind.MOVETIME):
            return self._timed_out(color, late)
        return None

    # --- restore -----------------------------------------------------------------------------

    @classmethod
    def replay(
        cls,
        config: SessionConfig,
        plies: Sequence[tuple[str, float]],
        end: GameEnd | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> GameSession:
        """Rebuild a session from its (uci, elapsed_ms) plies, e.g. after a restart.

        Clocks are recomputed from the elapsed times; the current turn starts afresh. `end` is
        the stored ending for games that ended off the board (forfeits, aborts).
        """
        session = cls(config, now=now)
        for uci, elapsed in plies:
            color = session._game.turn
            if session.pending_force(color) == uci:
                session.play_forced()
                continue
            legal = {move_to_uci(m): m for m in session._game.legal_moves()}
            if uci not in legal:
                raise IllegalMoveError(
                    f"stored move {uci!r} is illegal at ply {session.ply + 1}", uci
                )
            session._apply(color, legal[uci], float(elapsed), None, forced=False)
        if end is not None and session._end is None:
            session._end = end
        return session


__all__ = [
    "EndReason",
    "GameEnd",
    "GameSession",
    "PlyRecord",
    "SeatState",
    "SessionConfig",
    "project",
]
