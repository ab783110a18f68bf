"""Where the opponent's pieces were last seen (`caligo.fow.last_seen`) and the redraw that
follows it (`caligo.fow.reseed`'s hints).

References: a brute-force reading of the whole observation history (the last observation that
showed each square, written here from the rules' definition, not from the tracker), python-
chess's move generator through `observe_reference` (a drawn position must give the very
observation it was drawn from), and binomial bounds on seeded draws.
"""

from __future__ import annotations

import json
from pathlib import Path

import chess
import numpy as np
import pytest

from caligo.cli import main
from caligo.fow.game import Game
from caligo.fow.last_seen import AGE_BIN, STAY, LastSeen, measure, placement
from caligo.fow.notation import write_pgn
from caligo.fow.observation import Observation, observe, observe_reference
from caligo.fow.position import KING, KNIGHT, STARTING_FEN, from_fen, to_fen
from caligo.fow.reseed import reseed, unseen_material
from tests.fow.test_reseed import _random_plies


def _history(moves: list[int], player: int) -> tuple[np.ndarray, list[Observation]]:
    """The start position and `player`'s observation after every ply of `moves`."""
    out = []
    replay = Game()
    for move in moves:
        replay.push(move)
        out.append(observe(replay.position, player))
    return from_fen(STARTING_FEN), out


def _brute_hints(start: np.ndarray, history: list[Observation],
                 unseen: list[int]) -> list[tuple[int, int, float]]:
    """The hints by definition: for each fog square of the last observation, the last
    observation (or the start, observation 0) that showed it; a piece of type t there makes
    it a hint of t, aged by our moves since; per type the most recent `unseen[t]`."""
    player = history[0].player
    them = 1 - int(player)
    last = history[-1]
    found: dict[int, list[tuple[int, int]]] = {t: [] for t in range(6)}
    for sq in range(64):
        if not (last.fog >> sq) & 1:
            continue
        for k in range(len(history), -1, -1):
            if k == 0:
                t = next((t for t in range(6) if (int(start[them * 6 + t]) >> sq) & 1), -1)
                break
            o = history[k - 1]
            if not (o.fog >> sq) & 1:
                t = next((t for t in range(6) if (o.pieces[them * 6 + t] >> sq) & 1), -1)
                break
        if t >= 0:
            found[t].append((k, sq))
    out = []
    for t in range(6):
        ranked = sorted(found[t], key=lambda ks: -ks[0])[: unseen[t]]
        for k, sq in sorted(ranked, key=lambda ks: (-ks[0], ks[1])):
            age = (len(history) - k) // 2 // AGE_BIN
            out.append((t, sq, STAY[t][min(age, 5)]))
    return out


def test_hints_agree_with_a_reading_of_the_whole_history() -> None:
    """Over random FoW games, for both players at several plies, the tracker's hints are the
    brute-force reading's (as sets: ties in recency may come in either order)."""
    checked = 0
    for seed in range(10):
        g = _random_plies(seed, 30 + 6 * seed)
        for player in (0, 1):
            start, history = _history(g.moves, player)
            seen = LastSeen(player, start)
            for n, obs in enumerate(history, start=1):
                seen.observe(obs)
                if n % 7:
                    continue
                unseen = [8, 2, 2, 2, 1, 1]  # the start's counts: stale sightings past them
                # are cut by recency in both readings
                assert set(seen.hints(obs, unseen)) == set(_brute_hints(start, history[:n],
                                                                         unseen)), (seed, n)
                checked += 1
    assert checked > 40


def test_the_start_is_known_and_a_sighting_replaces_it() -> None:
    """Before anything is seen, Black's hints are White's start squares in Black's fog; a
    knight seen on d4 and then lost in the fog is hinted on d4 first (the most recent, in the
    first age bin), and a square seen empty is no hint any more."""
    start = from_fen(STARTING_FEN)
    seen = LastSeen(1, start)
    g = Game()
    g.push_uci("e2e4")
    obs = observe(g.position, 1)
    seen.observe(obs)
    hints = seen.hints(obs, [8, 2, 2, 2, 1, 1])
    assert (KING, chess.E1, STAY[KING][0]) in hints
    assert {sq for t, sq, _ in hints if t == KNIGHT} == {chess.B1, chess.G1}
    # Black's pawn on e5 shows a white knight on d4; the pawn goes on to e4 and d4 is fog
    shown = observe(from_fen("rnbqkbnr/pppp1ppp/8/4p3/3N4/8/PPPPPPPP/R1BQKBNR b KQkq - 0 2"), 1)
    assert (shown.pieces[KNIGHT] >> chess.D4) & 1
    seen.observe(shown)
    lost = observe(from_fen("rnbqkbnr/pppp1ppp/8/8/3Np3/8/PPPPPPPP/R1BQKBNR b KQkq - 0 3"), 1)
    assert (lost.fog >> chess.D4) & 1
    seen.observe(lost)
    knights = [(sq, q) for t, sq, q in seen.hints(lost, [8, 2, 2, 2, 1, 1]) if t == KNIGHT]
    assert knights[0] == (chess.D4, STAY[KNIGHT][0]) and len(knights) == 2
    # d4 seen empty (the queen's file opened): no hint there any more
    empty = observe(from_fen("rnbqkbnr/ppp2ppp/8/4p3/8/8/PPPPPPPP/R1BQKBNR b KQkq - 0 4"), 1)
    assert not (empty.fog >> chess.D4) & 1
    seen.observe(empty)
    assert chess.D4 not in [sq for t, sq, _ in seen.hints(empty, [8, 2, 2, 2, 1, 1])]


def test_drawn_positions_with_hints_still_give_the_observation() -> None:
    """With the tracker's hints, every kept draw observes as the truth did (python-chess's
    reference), and the opponent's material is the truth's."""
    checked = 0
    for seed in range(10):
        g = _random_plies(seed, 24 + 6 * seed)
        if g.is_over():
            continue
        me = g.ply % 2
        start, history = _history(g.moves, me)
        seen = LastSeen(me, start)
        for obs in history:
            seen.observe(obs)
        truth = np.array(g.position, dtype=np.uint64)
        material = [int(truth[(1 - me) * 6 + t]).bit_count() for t in range(6)]
        obs = history[-1]
        hints = seen.hints(obs, unseen_material(obs, material))
        p = reseed(obs, material, g.ply, draws=200, rng=np.random.default_rng(seed),
                   hints=hints)
        for pos in p.positions()[:20]:
            assert observe_reference(chess.Board(to_fen(pos)), me) == obs, (seed, to_fen(pos))
            assert [int(pos[(1 - me) * 6 + t]).bit_count() for t in range(6)] == material
            checked += 1
    assert checked >= 100


def _one_knight_case() -> tuple[Observation, list[int], int]:
    """Black to move after 1. Nf3: a white knight on f3 in Black's fog (f3 is on rank 3)."""
    g = Game()
    g.push_uci("g1f3")
    truth = np.array(g.position, dtype=np.uint64)
    obs = observe(truth, 1)
    assert (obs.fog >> chess.F3) & 1
    return obs, [int(truth[t]).bit_count() for t in range(6)], chess.F3


@pytest.mark.parametrize("chance", [0.0, 0.3, 1.0])
def test_a_hint_places_its_piece_with_its_chance(chance: float) -> None:
    """A knight hinted on f3 with chance q stands there in about a share q + (1 - q) u of the
    draws, u the uniform draw's share (measured here with no hint): within 4 binomial
    standard deviations over 2,000 seeded single-draw reseeds."""
    obs, material, sq = _one_knight_case()

    def share(hints: list[tuple[int, int, float]]) -> float:
        hits = 0
        for i in range(2000):
            p = reseed(obs, material, 1, draws=1, rng=np.random.default_rng(i), hints=hints)
            hits += sum(int((pos[KNIGHT] >> np.uint64(sq)) & np.uint64(1))
                        for pos in p.positions())
        return hits / 2000

    u = share([])
    got = share([(KNIGHT, sq, chance)])
    want = chance + (1 - chance) * u
    sd = (want * (1 - want) / 2000) ** 0.5
    assert abs(got - want) <= 4 * sd + 1e-9, (chance, got, want, u)
    if chance == 1.0:
        assert got == 1.0


def test_hints_on_impossible_squares_are_ignored() -> None:
    """A hint on a square the observation shows (here e6, empty) never places a piece there:
    the draws are the same positions as without it, one by one (the hint is filtered out
    before any random number is drawn)."""
    obs, material, _ = _one_knight_case()
    visible = chess.E6  # the square ahead of Black's e-pawn: seen, and empty
    assert not (obs.fog >> visible) & 1
    a = reseed(obs, material, 1, draws=64, rng=np.random.default_rng(5))
    b = reseed(obs, material, 1, draws=64, rng=np.random.default_rng(5),
               hints=[(KNIGHT, visible, 1.0)])
    assert np.array_equal(a.rows, b.rows)


def test_measure_counts_what_the_reading_of_the_history_counts() -> None:
    """`measure` over two random games: its hint count per type is the brute-force reading's
    at every decision from ply 10, capped at the true unseen counts, and a hint holds when
    the truth has the piece there."""
    games = [_random_plies(s, 40) for s in (1, 2)]
    hints, held = measure([(STARTING_FEN, g.moves) for g in games])
    want = np.zeros(6, dtype=np.int64)
    want_held = np.zeros(6, dtype=np.int64)
    for g in games:
        replay = Game()
        for i, move in enumerate(g.moves):
            if i >= 10 and not replay.is_over():
                me = replay.ply % 2
                truth = np.array(replay.position, dtype=np.uint64)
                start, history = _history(g.moves[:i], me)
                obs = history[-1]
                unseen = [int(truth[(1 - me) * 6 + t]) & obs.fog for t in range(6)]
                for t, sq, _ in _brute_hints(start, history, [b.bit_count() for b in unseen]):
                    want[t] += 1
                    want_held[t] += (unseen[t] >> sq) & 1
            replay.push(move)
    assert hints.sum(axis=1).tolist() == want.tolist()
    assert held.sum(axis=1).tolist() == want_held.tolist()


def test_placement_and_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`placement` redraws at every Nth decision both ways and reports shares in [0, 1], the
    prior's well above the uniform draw's;
    `caligo fow last-seen` prints the table beside STAY and the comparison, or JSON."""
    games = [_random_plies(s, 40) for s in (1, 2)]
    got = placement([(STARTING_FEN, g.moves) for g in games], every=7, draws=64)
    assert got["decisions"] > 0
    assert all(0.0 <= got[k] <= 1.0 for k in ("uniform_pieces", "hinted_pieces",
                                              "uniform_king", "hinted_king"))
    # a random mover moves any one piece rarely, so its last-known squares mostly hold: the
    # prior places far more of its unseen pieces right (0.39 against 0.22 on these games)
    assert got["hinted_pieces"] > got["uniform_pieces"] + 0.1
    path = tmp_path / "g.pgn"
    path.write_text("\n".join(write_pgn(g.moves, result=g.result) for g in games),
                    encoding="utf-8")
    assert main(["fow", "last-seen", str(path), "--every", "7"]) == 0
    out = capsys.readouterr().out
    assert "2 games" in out and "[0.75]" in out and "redrawn P at" in out
    assert main(["fow", "last-seen", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games"] == 2 and len(data["hints"]) == 6
