"""What is fixed about one game before it starts (`caligo.play.session`): `SessionConfig`, the
time controls, seeds, names, forced opening plies and the referee's timeouts of both seats,
validated here and stored as JSON with the game."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caligo.agents.base import UNTIMED, TimeControl
from caligo.fow.game import Game
from caligo.fow.position import STARTING_FEN, from_fen
from caligo.play.errors import SessionError


@dataclass(frozen=True)
class SessionConfig:
    """Everything fixed about one game before it starts (validated here, stored as JSON).

    `forced` lists opening plies in UCI that the referee imposes through `force` (both seats
    then observe them as usual); `seeds` are the per-seat seeds sent in `newgame`; `names` are
    shown in PGN tags. Times in milliseconds.
    """

    game_id: str
    start_fen: str = STARTING_FEN
    time_controls: tuple[TimeControl, TimeControl] = (UNTIMED, UNTIMED)
    seeds: tuple[int, int] = (0, 0)
    forced: tuple[str, ...] = ()
    names: tuple[str, str] = ("?", "?")
    share_opponent_clock: bool = False
    timemargin_ms: int = 0
    move_timeout_ms: int = 60_000
    first_move_timeout_ms: tuple[int, int] = (0, 0)
    """Per colour. 0: the clock runs from the first ply (matches). Above 0, lichess's and
    chess.com's rule for a side with a CLOCK: its clock starts only after its own first move
    (that move costs no time and earns no increment), and a side that makes no first move within
    this many ms has the game aborted, not lost."""

    def __post_init__(self) -> None:
        if not isinstance(self.game_id, str) or not self.game_id:
            raise SessionError(f"invalid game id: {self.game_id!r}")
        from_fen(self.start_fen)  # raises FenError quoting the FEN
        if len(self.time_controls) != 2 or not all(
            isinstance(tc, TimeControl) for tc in self.time_controls
        ):
            raise SessionError(f"time_controls must be two TimeControl: {self.time_controls!r}")
        if len(self.seeds) != 2 or len(self.names) != 2:
            raise SessionError(f"seeds and names need one entry per colour: {self!r}")
        first = self.first_move_timeout_ms
        if (
            self.timemargin_ms < 0
            or self.move_timeout_ms <= 0
            or len(first) != 2
            or not all(isinstance(ms, int) and ms >= 0 for ms in first)
        ):
            raise SessionError(
                f"invalid timing: margin {self.timemargin_ms!r}, timeout {self.move_timeout_ms!r}, "
                f"first move {self.first_move_timeout_ms!r}"
            )
        if self.forced:
            game = Game(self.start_fen)
            for uci in self.forced:
                game.push_uci(uci)  # raises MoveError quoting the move
                if game.is_over():
                    raise SessionError(f"forced opening ends the game: {self.forced!r}")

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (storage)."""
        return {
            "game_id": self.game_id,
            "start_fen": self.start_fen,
            "time_controls": [tc.to_dict() for tc in self.time_controls],
            "seeds": list(self.seeds),
            "forced": list(self.forced),
            "names": list(self.names),
            "share_opponent_clock": self.share_opponent_clock,
            "timemargin_ms": self.timemargin_ms,
            "move_timeout_ms": self.move_timeout_ms,
            "first_move_timeout_ms": list(self.first_move_timeout_ms),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionConfig:
        """Parse `to_dict` output (raises SessionError / TimeControlError / FenError)."""
        try:
            first = [int(ms) for ms in data.get("first_move_timeout_ms", (0, 0))]
            tcs = tuple(TimeControl.from_dict(d) for d in data["time_controls"])
            return cls(
                game_id=data["game_id"],
                start_fen=data["start_fen"],
                time_controls=(tcs[0], tcs[1]),
                seeds=(int(data["seeds"][0]), int(data["seeds"][1])),
                forced=tuple(data["forced"]),
                names=(str(data["names"][0]), str(data["names"][1])),
                share_opponent_clock=bool(data["share_opponent_clock"]),
                timemargin_ms=int(data["timemargin_ms"]),
                move_timeout_ms=int(data["move_timeout_ms"]),
                first_move_timeout_ms=(first[0], first[1]),
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise SessionError(f"invalid session config: {data!r} ({exc})") from None
