"""What a browser seat is shown during a game: a pure function of that seat's `project()` messages.

The play layer's `caligo.play.session.project` is the one function that builds every message a
seat may receive (docs/design.md, "The referee" and "The web app"). `SeatTracker` consumes exactly
those messages (`newgame`, `observe`, `go`, `force`, `gameover`) and nothing else, and derives what
a chess.com or lichess player expects beside the board, each item from the seat's own transcript:

- the board: `caligo.fow.view.view_data` of the latest observation, with the own last move and
  the squares where own pieces vanished during the opponent's last ply;
- the own move list in SAN (`own_san`: piece letter, disambiguation among the seat's own legal
  moves, "x" when the destination held a visible enemy piece or for an en-passant capture); the
  opponent's plies are listed without a move;
- the material tally from the seat's own knowledge: pieces taken by own moves (the destination of
  an own move is always visible) and own pieces that vanished during opponent plies.

The clocks are the only other item on a frame (`state_frame(..., clocks=...)`): both remaining
times are public in over-the-board and chess.com play, so the web layer adds them from the
session; they carry no square, piece or move. A seat's frames therefore depend on the true game
only through the seat's transcript and the clocks, which `tests/web/test_seat_view.py` checks by
feeding two different true histories with the same transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from caligo.agents.base import COLOR_NAMES
from caligo.agents.protocol import Force, GameOver, Go, NewGame, Observe, RefereeMessage
from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.observation import Observation
from caligo.fow.position import KING, PAWN, PIECE_SYMBOLS, PIECE_VALUES
from caligo.fow.view import legal_moves_uci, view_data
from caligo.web.errors import WebError

_SQUARE_INDEX = {name: sq for sq, name in enumerate(SQUARE_NAMES)}


def _square(name: str) -> int:
    return _SQUARE_INDEX[name]


def own_san(obs: Observation, uci: str, legal: Sequence[str] | None = None) -> str:
    """Return the SAN of the observer's move `uci`, from the observation before it.

    `legal` is the observer's legal move list at that point (default: rebuilt from `obs`).
    Everything SAN needs is in the observation: the moving piece is the observer's own, the
    destination of a legal move is visible (so a capture is known), and disambiguation is
    among the observer's own legal moves. FoW has no check, so there are no check marks.
    """
    frm, to = _square(uci[0:2]), _square(uci[2:4])
    code = obs.piece_at(frm)
    if code is None or code < 0 or code // 6 != obs.player:
        raise WebError(f"no own piece on the from-square of {uci!r}")
    ptype = code % 6
    if ptype == KING and abs((frm & 7) - (to & 7)) == 2:
        return "O-O" if to > frm else "O-O-O"
    target = obs.piece_at(to)
    capture = (target is not None and target >= 0) or (ptype == PAWN and (frm & 7) != (to & 7))
    to_name = SQUARE_NAMES[to]
    if ptype == PAWN:
        text = f"{uci[0]}x{to_name}" if capture else to_name
        if len(uci) == 5:
            text += "=" + uci[4].upper()
        return text
    if legal is None:
        legal = legal_moves_uci(obs)
    rivals = []
    for other in legal:
        if other == uci or other[2:4] != uci[2:4]:
            continue
        ofrm = _square(other[0:2])
        ocode = obs.piece_at(ofrm)
        if ocode is not None and ocode % 6 == ptype and not _is_castling(ptype, ofrm, to):
            rivals.append(ofrm)
    dis = ""
    if rivals:
        if not any(r & 7 == frm & 7 for r in rivals):
            dis = uci[0]
        elif not any(r >> 3 == frm >> 3 for r in rivals):
            dis = uci[1]
        else:
            dis = uci[0:2]
    return PIECE_SYMBOLS[ptype].upper() + dis + ("x" if capture else "") + to_name


def _is_castling(ptype: int, frm: int, to: int) -> bool:
    return ptype == KING and abs((frm & 7) - (to & 7)) == 2


@dataclass(frozen=True)
class OwnPly:
    """One ply of the seat's move list: its own move (UCI and SAN) or None for the opponent's."""

    ply: int
    uci: str | None
    san: str | None


class SeatTracker:
    """Fold one seat's `project()` messages into the frame its browser is shown.

    Feed it every message `project(seat, since)` returns (in order, `since` = `synced_ply`), then
    call `state_frame`. It holds no reference to a session: only what the messages carried.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.game_id = ""
        self.color = -1
        self.start_fen = ""
        self.time_control: dict[str, Any] = {}
        self._initial: Observation | None = None
        self._obs: Observation | None = None
        self._after_own: Observation | None = None
        self._own_last: str | None = None
        self._plies: list[OwnPly] = []
        self._captured: list[int] = []
        self._lost: list[int] = []
        self._legal: tuple[str, ...] | None = None
        self._end: GameOver | None = None
        self._view: dict[str, Any] | None = None

    @property
    def synced_ply(self) -> int:
        """The last ply fed (-1 before `newgame`): pass it as `since` to `project`."""
        return -1 if self._initial is None else len(self._plies)

    @property
    def started(self) -> bool:
        """True once `newgame` was fed."""
        return self._initial is not None

    def feed(self, messages: Iterable[RefereeMessage]) -> None:
        """Consume messages from `project` (newgame first, then observes, then go/gameover)."""
        for message in messages:
            if isinstance(message, NewGame):
                self._new_game(message)
            elif isinstance(message, Observe):
                self._observe(message)
            elif isinstance(message, Go):
                self._legal = message.legal
            elif isinstance(message, GameOver):
                self._end = message
            elif isinstance(message, Force):
                continue  # the forced move arrives with the next observe, as for an engine
            else:
                raise WebError(f"a seat receives no {type(message).__name__} message")

    def _new_game(self, message: NewGame) -> None:
        self._reset()  # a newgame starts the seat afresh
        self.game_id = message.game
        self.color = message.color
        self.start_fen = message.start
        self.time_control = message.time_control.to_dict()
        self._initial = message.observation
        self._obs = message.observation

    def _observe(self, message: Observe) -> None:
        prev = self._obs
        if prev is None:
            raise WebError(f"observe before newgame in game {message.game!r}")
        if message.ply != len(self._plies) + 1:
            raise WebError(f"observe of ply {message.ply} after ply {len(self._plies)}")
        obs = message.observation
        if message.own_move is not None:
            uci = message.own_move
            legal = self._legal if self._legal is not None else None
            san = own_san(prev, uci, legal)
            target = prev.piece_at(_square(uci[2:4]))
            if target is not None and target >= 0:
                if target % 6 != KING:  # the king's capture ends the game: no material
                    self._captured.append(target % 6)
            elif san[1:2] == "x" and san[0].islower():  # a pawn's diagonal onto an empty square
                self._captured.append(PAWN)
            self._plies.append(OwnPly(message.ply, uci, san))
            self._after_own = obs
            self._own_last = uci
        else:
            gone = prev.own & ~obs.own
            for sq in range(64):
                if (gone >> sq) & 1:
                    code = prev.piece_at(sq)
                    if code is not None and code >= 0 and code % 6 != KING:
                        self._lost.append(code % 6)
            self._plies.append(OwnPly(message.ply, None, None))
        self._obs = obs
        self._legal = None
        self._view = None

    def view(self) -> dict[str, Any]:
        """The board data of the latest observation (cached until the next observe)."""
        if self._obs is None:
            raise WebError("no newgame fed yet")
        if self._view is None:
            self._view = view_data(self._obs, self._after_own, self._own_last)
        return self._view

    def material(self) -> dict[str, Any]:
        """Own captures and own losses (piece letters, lower case) and the balance in pawns."""
        captured = sorted(self._captured, key=lambda p: (-PIECE_VALUES[p], p))
        lost = sorted(self._lost, key=lambda p: (-PIECE_VALUES[p], p))
        balance = sum(PIECE_VALUES[p] for p in captured) - sum(PIECE_VALUES[p] for p in lost)
        return {
            "captured": [PIECE_SYMBOLS[p] for p in captured],
            "lost": [PIECE_SYMBOLS[p] for p in lost],
            "balance": balance,
        }

    def moves(self) -> list[dict[str, Any]]:
        """The seat's move list: one entry per ply, `san`/`uci` null on opponent plies."""
        return [{"ply": p.ply, "uci": p.uci, "san": p.san} for p in self._plies]

    def state_frame(self, clocks: dict[str, Any] | None = None, **public: Any) -> dict[str, Any]:
        """Return the `state` frame: board view, own moves, material, status (and `public`).

        `clocks` is the public clock block (see the module docstring); `public` adds fields that
        are public by construction (the opponent's name, the time control text, the detail of a
        finished game's ending).
        """
        if self._obs is None:
            raise WebError("no newgame fed yet")
        view = self.view()
        end = None
        if self._end is not None:
            view = {**view, "legal_moves": []}  # nothing is playable once the game is over
            winner = {"1-0": "white", "0-1": "black"}.get(self._end.result)
            end = {
                "result": self._end.result,
                "termination": self._end.termination,
                "winner": winner,
            }
        frame: dict[str, Any] = {
            "type": "state",
            "game": self.game_id,
            "color": COLOR_NAMES[self.color],
            "ply": len(self._plies),
            "status": "over" if end is not None else "playing",
            "your_turn": end is None and bool(view["your_turn"]),
            "view": view,
            "moves": self.moves(),
            "material": self.material(),
            "time_control": self.time_control,
            "clocks": clocks,
            "end": end,
        }
        frame.update(public)
        return frame


__all__ = ["PIECE_VALUES", "OwnPly", "SeatTracker", "own_san"]
