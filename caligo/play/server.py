"""`caligo engine`: serve any registered agent over `caligo-fow` v1 on stdin/stdout.

The server is the engine side of docs/protocol.md: it answers `hello` with its name, version
and options, `isready` with `readyok`, and turns `newgame` / `observe` / `force` / `go` /
`gameover` into `Agent` calls through the same `AgentSeat` the in-process referee uses, so an
agent behaves identically in-process and behind a pipe. Bad input never stops it: a malformed,
oversized, unknown or out-of-order message gets an `error` reply naming the problem, and the
server keeps serving until `quit` or the end of its input. Logging goes to stderr; stdout carries
protocol lines only.

Nothing reaches the agent that its own observations contradict: the `newgame` start FEN must
parse and its `observation` must be the engine's view of it, a `force` must be one of the legal
moves of the engine's latest observation (`caligo.fow.view.legal_moves_uci`), a `go`'s `legal`
list must be exactly those moves, a `force` or `go` must be for the engine's own ply and come
once a ply, and an `observe` after the engine's own ply must name the move it played (`null`
after the opponent's) and show the engine's own pieces as that move left them (after the
opponent's ply: no new own piece, at most one fewer), the other side to move and no castling
right regained. Anything else is answered with `error` and dropped, so
a broken referee cannot make the agent search from a corrupt state. An input that got an `error`
reply is logged as one warning line; a traceback is logged only for an agent that fails with an
exception that is not a `CaligoError` (a bug, not bad input).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import BinaryIO

from caligo import __version__
from caligo.agents.base import COLOR_NAMES, Agent
from caligo.agents.protocol import (
    MAX_LINE_BYTES,
    PROTOCOL,
    VERSION,
    EngineHello,
    EngineMessage,
    ErrorReply,
    Force,
    GameOver,
    Go,
    Hello,
    IsReady,
    MoveReply,
    NewGame,
    Observe,
    OptionInfo,
    ProtocolError,
    Quit,
    ReadyOk,
    ResignReply,
    SetOption,
    UnknownMessage,
    decode_referee_message,
    encode,
    shorten,
)
from caligo.agents.registry import AgentSpec, AgentSpecError, create, parse_spec
from caligo.errors import CaligoError
from caligo.fow.errors import FenError
from caligo.fow.observation import Observation, observe
from caligo.fow.position import from_fen, move_to_uci
from caligo.fow.view import legal_moves_uci, own_pieces_after
from caligo.play.referee import AgentSeat

log = logging.getLogger(__name__)


class EngineServer:
    """The engine side of the protocol for one agent spec; `handle` one line at a time."""

    def __init__(self, spec: str, send: Callable[[str], None]) -> None:
        self.spec: AgentSpec = parse_spec(spec)
        if self.spec.external:
            raise AgentSpecError(f"caligo engine serves a registered agent, not {spec!r}")
        self._options = dict(self.spec.options)
        self._send = send
        self.agent: Agent = create(self.spec)
        self.seat = AgentSeat(self.agent)
        self.game: str | None = None
        self.color: int | None = None
        self.ply = 0
        self.observation: Observation | None = None
        """The engine's latest observation in the current game (what `go` and `force` are
        checked against)."""
        self._played: str | None = None
        """The move of the engine's pending own ply (its `move` answer or the `force`d move)."""

    def reply(self, message: EngineMessage) -> None:
        self._send(encode(message))

    def error(self, message: str, ply: int | None = None) -> None:
        log.warning("caligo engine: %s", message)
        self.reply(ErrorReply(message, self.game, ply))

    def hello(self) -> EngineHello:
        """This engine's `hello`: name, version and the agent's options."""
        options = tuple(OptionInfo(k, "string", v) for k, v in self._options.items())
        return EngineHello(
            name=f"Caligo {self.spec.text}",
            engine_version=__version__,
            author="Caligo",
            options=options,
        )

    def handle_line(self, line: bytes) -> bool:
        """Process one raw line; return False when the server should stop (`quit`)."""
        if not line.strip():
            return True
        try:
            message = decode_referee_message(line, self.color)
        except ProtocolError as exc:
            self.error(str(exc))
            return True
        except Exception as exc:  # a decoder bug must not stop the server either
            log.exception("caligo engine: cannot decode %s", shorten(line))
            self.error(f"cannot decode the line: {type(exc).__name__}: {shorten(line)}")
            return True
        return self.handle(message)

    def handle(self, message: object) -> bool:
        """Process one decoded message; return False on `quit`."""
        try:
            return self._dispatch(message)
        except CaligoError as exc:  # a named failure of the agent: reported, the server goes on
            ply = getattr(message, "ply", None)
            self.error(f"agent failed: {type(exc).__name__}: {exc}", ply)
            return True
        except Exception as exc:  # an unexpected one is a bug: keep its traceback
            log.exception("caligo engine: failure on %r", message)
            ply = getattr(message, "ply", None)
            self.error(f"agent failed: {type(exc).__name__}: {exc}", ply)
            return True

    def _dispatch(self, message: object) -> bool:
        if isinstance(message, Quit):
            return False
        if isinstance(message, Hello):
            if message.protocol != PROTOCOL or message.version != VERSION:
                self.error(
                    f"unsupported protocol {message.protocol!r} version {message.version!r}; "
                    f"this engine speaks {PROTOCOL!r} version {VERSION}"
                )
            self.reply(self.hello())
        elif isinstance(message, IsReady):
            self.reply(ReadyOk(message.id))
        elif isinstance(message, SetOption):
            self._set_option(message)
        elif isinstance(message, NewGame):
            self._new_game(message)
        elif isinstance(message, Observe | Force | Go | GameOver):
            self._in_game(message)
        elif isinstance(message, UnknownMessage):
            self.error(f"unknown message type {message.type!r}")
        return True

    def _set_option(self, message: SetOption) -> None:
        if self.game is not None:
            self.error(f"setoption {message.name!r} during game {self.game!r}: ignored")
            return
        options = {**self._options, message.name: message.value}
        try:
            text = self.spec.name + ":" + ",".join(f"{k}={v}" for k, v in options.items())
            agent = create(text)
        except AgentSpecError as exc:
            self.error(str(exc))
            return
        self.agent.close()
        self._options = options
        self.agent = agent
        self.seat = AgentSeat(agent)

    def _new_game(self, message: NewGame) -> None:
        # a refused newgame leaves no current game: what follows for it is refused too
        self.game = self.color = self.observation = self._played = None
        try:
            start = from_fen(message.start)
        except FenError as exc:
            self.error(f"newgame {message.game!r}: bad start: {exc}")
            return
        expected = observe(start, message.color).dark_fen()
        if message.observation.dark_fen() != expected:
            self.error(
                f"newgame {message.game!r}: observation {message.observation.dark_fen()!r} is "
                f"not the {COLOR_NAMES[message.color]} view of the start ({expected!r})"
            )
            return
        self.seat.deliver(message)
        self.game, self.color, self.ply = message.game, message.color, 0
        self.observation = message.observation

    def _in_game(self, message: Observe | Force | Go | GameOver) -> None:
        if self.game is None or message.game != self.game:
            self.error(
                f"{type(message).__name__.lower()} for game {message.game!r}, "
                f"but the current game is {self.game!r}"
            )
            return
        if isinstance(message, GameOver):
            self.seat.deliver(message)
            self.game = self.color = self.observation = self._played = None
            return
        expected = self.ply + 1
        if message.ply != expected:
            self.error(
                f"{type(message).__name__.lower()} for ply {message.ply}, expected ply {expected}",
                message.ply,
            )
            return
        if isinstance(message, Observe):
            self._observe(message)
            return
        kind = type(message).__name__.lower()
        if not self._own_turn():
            self.error(f"{kind} for ply {message.ply}, the opponent's", message.ply)
        elif self._played is not None:  # one move a ply: the next message is its observe
            self.error(f"{kind} for ply {message.ply}: this engine already played "
                       f"{self._played!r} at it; observe comes next", message.ply)
        elif isinstance(message, Force):
            self._force(message)
        else:
            self._go(message)

    def _own_turn(self) -> bool:
        obs = self.observation
        return obs is not None and obs.side_to_move == obs.player

    def _observe(self, message: Observe) -> None:
        if self._own_turn():
            if self._played is None:
                self.error(f"observe for ply {message.ply}, your own, before go or force")
                return
            if message.own_move != self._played:
                self.error(
                    f"observe for ply {message.ply}: own_move {message.own_move!r}, "
                    f"but this engine played {self._played!r}",
                    message.ply,
                )
                return
        elif message.own_move is not None:
            self.error(
                f"observe for ply {message.ply}, the opponent's: own_move must be null, "
                f"got {message.own_move!r}",
                message.ply,
            )
            return
        problem = self._contradiction(message.observation)
        if problem:
            self.error(f"observe for ply {message.ply}: {problem}", message.ply)
            return
        self.seat.deliver(message)
        self.ply = message.ply
        self.observation = message.observation
        self._played = None

    def _contradiction(self, obs: Observation) -> str | None:
        """What in `obs` contradicts the engine's previous observation and own move, if any.

        After its own ply the engine knows its own pieces exactly (its move applied to them);
        after the opponent's it has at most one piece fewer and no new one. Side to move passes
        to the other player, and castling rights are never regained."""
        prev = self.observation
        assert prev is not None  # set with the game (`_new_game`)
        base = prev.player * 6
        own = obs.pieces[base:base + 6]
        if obs.side_to_move == prev.side_to_move:
            return f"{COLOR_NAMES[obs.side_to_move]} is still to move in {obs.dark_fen()!r}"
        if obs.castling & ~prev.castling:
            return f"castling rights regained in {obs.dark_fen()!r}"
        if self._played is not None:
            if own != own_pieces_after(prev, self._played):
                return (f"the engine's own pieces in {obs.dark_fen()!r} are not those after "
                        f"its move {self._played!r}")
            return None
        before = prev.pieces[base:base + 6]
        if any(a & ~b for a, b in zip(own, before, strict=True)):
            return f"a piece of the engine's appeared or moved in {obs.dark_fen()!r}"
        if (prev.own & ~obs.own).bit_count() > 1:
            return f"the opponent's one move took more than one piece in {obs.dark_fen()!r}"
        return None

    def _legal(self) -> list[str]:
        assert self.observation is not None  # set with the game (`_new_game`)
        return legal_moves_uci(self.observation)

    def _force(self, force: Force) -> None:
        if force.move not in self._legal():
            assert self.observation is not None
            self.error(
                f"force {force.move!r} at ply {force.ply} is not a legal move of your "
                f"observation {self.observation.dark_fen()!r}",
                force.ply,
            )
            return
        self.seat.deliver(force)
        self._played = force.move

    def _go(self, go: Go) -> None:
        if not go.legal:
            self.error(f"go without legal moves at ply {go.ply}", go.ply)
            return
        legal = self._legal()
        if sorted(go.legal) != legal:
            extra = sorted(set(go.legal) - set(legal))
            missing = sorted(set(legal) - set(go.legal))
            self.error(
                f"go at ply {go.ply}: 'legal' is not the legal move set of your observation "
                f"(not legal: {shorten(extra, 80)}; missing: {shorten(missing, 80)}; "
                f"{len(go.legal) - len(set(go.legal))} repeated)",
                go.ply,
            )
            return
        decision = self.seat.ask(go)
        assert self.game is not None
        if decision.resign:
            self.reply(ResignReply(self.game, go.ply))
            return
        move = move_to_uci(decision.move)
        policy = {move_to_uci(m): p for m, p in decision.policy.items()}
        self.reply(
            MoveReply(
                self.game,
                go.ply,
                move,
                policy=policy,
                value=decision.value,
                info=dict(decision.info),
            )
        )
        self._played = move


def _read_lines(stream: BinaryIO, limit: int) -> tuple[bytes, bool]:
    """Read one line of at most `limit` bytes; return (line, oversized)."""
    line = stream.readline(limit + 2)
    if line.endswith(b"\n") or len(line) <= limit:
        return line, False
    while line and not line.endswith(b"\n"):  # skip the rest of the oversized line
        line = stream.readline(1 << 16)
    return b"", True


def serve(spec: str, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve `spec` on binary stdin/stdout until `quit` or end of input; return 0."""

    def send(text: str) -> None:
        stdout.write(text.encode("utf-8"))
        stdout.flush()

    server = EngineServer(spec, send)
    try:
        while True:
            line, oversized = _read_lines(stdin, MAX_LINE_BYTES)
            if oversized:
                server.error(f"line longer than {MAX_LINE_BYTES} bytes: skipped")
                continue
            if not line:
                return 0
            if not server.handle_line(line):
                return 0
    finally:
        server.agent.close()


__all__ = ["EngineServer", "serve"]
