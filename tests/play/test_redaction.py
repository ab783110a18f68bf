"""Leak tests: every message a seat receives is a function of that seat's transcript alone.

The three properties are Mistboard's redaction invariants as docs/design.md, "The referee" restates
them:
1. two different true histories with the same transcript for a seat give byte-identical
   messages to that seat;
2. every square a message names lies inside that ply's visibility;
3. an opponent move made entirely out of view is never mentioned.
The visibility of a ply is `caligo.fow.observation.observe` of the true position (checked
against python-chess and OpenSpiel's dark_chess in tests/fow), not anything the referee says.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from caligo.agents.base import Decision, TimeControl
from caligo.agents.belief_map import BELIEF_MAP, BELIEF_MAP_PREV, belief_map
from caligo.agents.protocol import Force, GameOver, Go, NewGame, Observe, encode
from caligo.agents.random_agent import RandomAgent
from caligo.fow.belief import BeliefSet
from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.game import Game
from caligo.fow.observation import observe
from caligo.fow.position import BLACK, WHITE, move_to_uci
from caligo.play.referee import play_game
from caligo.play.session import GameSession, SessionConfig
from tests.conftest import SHORT

CLOCK = TimeControl.parse("60+1")


class FakeTime:
    """A settable monotonic clock, so clock fields are identical across the two histories."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def twin_histories(seed: int, plies: int = 60) -> tuple[list[str], list[str]]:
    """Two move lists that differ in Black's moves but give White identical observations."""
    rng = random.Random(seed)
    a, b = Game(), Game()
    ma: list[str] = []
    mb: list[str] = []
    while len(ma) < plies and not a.is_over() and not b.is_over():
        if a.turn == WHITE:
            # a White move legal in both (it is: same observation) keeping the observations equal
            options = [
                m
                for m in a.legal_moves()
                if _white_view(a, move_to_uci(m)) == _white_view(b, move_to_uci(m))
            ]
            if not options:
                break
            uci = move_to_uci(rng.choice(options))
            ma.append(uci)
            mb.append(uci)
            a.push_uci(uci)
            b.push_uci(uci)
            continue
        move_a = move_to_uci(rng.choice(a.legal_moves()))
        target = _white_view(a, move_a)
        twins = [
            move_to_uci(m) for m in b.legal_moves() if _white_view(b, move_to_uci(m)) == target
        ]
        if not twins:
            break
        different = [u for u in twins if u != move_a]
        move_b = rng.choice(different) if different and rng.random() < 0.7 else rng.choice(twins)
        ma.append(move_a)
        mb.append(move_b)
        a.push_uci(move_a)
        b.push_uci(move_b)
    return ma, mb


def _white_view(game: Game, uci: str) -> object:
    game.push_uci(uci)
    view = observe(game.position, WHITE)
    game.pop()
    return view


def messages(
    moves: list[str], seat: int, first_move_ms: int = 0
) -> tuple[list[bytes], GameSession]:
    """Play `moves` through a session; return every message `seat` receives, as bytes."""
    now = FakeTime()
    config = SessionConfig(
        "twin",
        time_controls=(CLOCK, CLOCK),
        seeds=(11, 22),
        first_move_timeout_ms=(first_move_ms, first_move_ms),
    )
    session = GameSession(config, now=now)
    sent = -1
    out: list[bytes] = []
    for i, uci in enumerate(moves):
        out += [encode(m).encode() for m in session.project(seat, sent)]
        sent = session.ply
        now.t += 0.25 + 0.01 * i  # think time, the same in both histories
        move = next(m for m in session.legal(session.to_move or 0) if move_to_uci(m) == uci)
        # the mover's analysis holds belief pictures of the truth: P = {the true position}
        picture = belief_map(BeliefSet.initial(session.to_move or 0, session.game.fen()))
        info = {"secret": i, BELIEF_MAP: picture, BELIEF_MAP_PREV: picture}
        session.play(session.to_move or 0, move, decision=Decision(move, info=info))
        if session.is_over():
            break
    out += [encode(m).encode() for m in session.project(seat, sent)]
    return out, session


@pytest.mark.parametrize("first_move_ms", [0, 30_000], ids=["clocks-from-ply-1", "web-first-move"])
def test_same_transcript_gives_byte_identical_messages(first_move_ms: int) -> None:
    differing = 0
    for seed in range(4 if SHORT else 12):
        ma, mb = twin_histories(seed)
        if ma == mb:
            continue
        differing += 1
        white_a, sa = messages(ma, WHITE, first_move_ms)
        white_b, sb = messages(mb, WHITE, first_move_ms)
        assert white_a == white_b, f"seed {seed}: white's messages differ"
        assert sa.transcript(WHITE) == sb.transcript(WHITE)
        # the histories really differ: other true positions, other messages to Black
        assert any(
            not np.array_equal(p, q)
            for p, q in zip(sa.game.positions, sb.game.positions, strict=False)
        )
        black_a, _ = messages(ma, BLACK, first_move_ms)
        black_b, _ = messages(mb, BLACK, first_move_ms)
        assert black_a != black_b
        # diagnostics (the "secret" info, the belief pictures) never reach a seat during the game
        for m in white_a + black_a:
            assert b"secret" not in m and b"belief" not in m and b'"counts"' not in m
    assert differing >= 3


def _named_squares(message: object) -> set[str]:
    """Every square a message names explicitly (moves, en passant field of the dark FEN)."""
    squares: set[str] = set()
    if isinstance(message, Observe):
        if message.own_move:
            squares |= {message.own_move[0:2], message.own_move[2:4]}
        ep = message.observation.dark_fen().split()[3]
        if ep != "-":
            squares.add(ep)
    elif isinstance(message, Go):
        for uci in message.legal:
            squares |= {uci[0:2], uci[2:4]}
    elif isinstance(message, Force):
        squares |= {message.move[0:2], message.move[2:4]}
    return squares


def _mask_squares(mask: int) -> set[str]:
    return {SQUARE_NAMES[sq] for sq in range(64) if (mask >> sq) & 1}


def random_session(seed: int, forced: tuple[str, ...] = ()) -> tuple[GameSession, list[list]]:
    """A random game; per seat, the messages of every ply (index = plies played before)."""
    config = SessionConfig(f"r{seed}", seeds=(seed, seed + 1), forced=forced)
    session = GameSession(config)
    agents = (RandomAgent(seed=seed), RandomAgent(seed=seed + 100))
    per_ply: list[list] = [[], []]

    def record(s: GameSession) -> None:
        for c in (WHITE, BLACK):
            per_ply[c].append(s.project(c, s.ply - 1))

    for c in (WHITE, BLACK):
        per_ply[c].append(session.project(c, -1))
    play_game(session, agents, on_ply=record)
    return session, per_ply


def test_every_named_square_is_inside_that_plys_visibility() -> None:
    for seed in range(3 if SHORT else 10):
        session, per_ply = random_session(seed, forced=("e2e4",) if seed % 2 else ())
        positions = session.game.positions
        for color in (WHITE, BLACK):
            for k, batch in enumerate(per_ply[color]):
                # messages sent after ply k: observe of ply k (visibility after it) and go/force
                now = observe(positions[min(k, len(positions) - 1)], color).visible
                before = observe(positions[max(k - 1, 0)], color).visible
                for message in batch:
                    if isinstance(message, NewGame | GameOver):
                        continue
                    allowed = _mask_squares(now | before)
                    if isinstance(message, Observe):
                        allowed = _mask_squares(
                            observe(positions[message.ply], color).visible
                            | observe(positions[message.ply - 1], color).visible
                        )
                    outside = _named_squares(message) - allowed
                    assert not outside, f"seed {seed} ply {k}: {message} names {outside}"


def test_out_of_view_opponent_moves_are_never_mentioned() -> None:
    hidden = 0
    for seed in range(3 if SHORT else 10):
        session, per_ply = random_session(seed)
        positions = session.game.positions
        for p in session.plies:
            seat = 1 - p.mover
            view = (
                observe(positions[p.ply - 1], seat).visible
                | observe(positions[p.ply], seat).visible
            )
            frm, to = SQUARE_NAMES.index(p.uci[0:2]), SQUARE_NAMES.index(p.uci[2:4])
            if (view >> frm) & 1 or (view >> to) & 1:
                continue
            hidden += 1
            after = per_ply[seat][p.ply]  # what the seat got after this ply: observe, go or end
            text = b"".join(encode(m).encode() for m in after)
            assert p.uci.encode() not in text
            for message in after:
                assert not _named_squares(message) & {p.uci[0:2], p.uci[2:4]}
    assert hidden > 50
