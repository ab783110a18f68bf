"""Match runner: reproducible colour-swapped pairs, outputs, resume, SPRT stop, openings.

Expected values: fastchess/cutechess conventions (docs/design.md, "Matches": pair k has A as White
in game k.1 and as Black in k.2, from the same opening), fishtest's pentanomial bins (LL .. WW), and
the files read back with `caligo.fow.notation.read_pgns` and `caligo.fow.transcript.Transcript`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from caligo.agents.base import AgentBase, Clock, Decision, TimeControl
from caligo.agents.registry import register
from caligo.fow.notation import read_pgns
from caligo.fow.position import KING, move_to, move_to_uci
from caligo.fow.transcript import Transcript, transcripts_from_moves
from caligo.play.errors import MatchConfigError, PlayError
from caligo.play.match import (
    MatchConfig,
    Opening,
    Outputs,
    engine_configs,
    read_openings,
)
from caligo.play.runner import run_match
from caligo.play.stats import SprtConfig, SprtDecision
from caligo.play.storage import GameStore
from tests.conftest import SHORT


class KingTaker(AgentBase):
    """Captures a visible king when it can, else plays the first legal move after a shuffle."""

    def __init__(self) -> None:
        super().__init__()
        import random

        self._rng = random.Random(0)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        import random

        super().new_game(color, start_fen, time_control, seed)
        self._rng = random.Random(seed)

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        obs = self.history[-1][1] if self.history else None
        if obs is not None:
            king = obs.pieces[(1 - self.color) * 6 + KING]
            for m in legal:
                if (king >> move_to(m)) & 1:
                    return Decision(m)
        return Decision(legal[self._rng.randrange(len(legal))])


def _kingtaker(options: Mapping[str, str]) -> KingTaker:
    return KingTaker()


register("test-kingtaker", _kingtaker, strength=-1, replace=True)


def config(rounds: int, concurrency: int = 1, **kw: object) -> MatchConfig:
    engines = engine_configs(["random", "random:seed=1"], [])
    return MatchConfig(engines, rounds, concurrency, **kw)  # type: ignore[arg-type]


def test_pairs_are_colour_swapped_and_reproducible_across_workers(tmp_path: Path) -> None:
    one = run_match(config(6), Outputs(pgn=tmp_path / "a.pgn"))
    two = run_match(config(6, concurrency=2), Outputs(pgn=tmp_path / "b.pgn"))
    assert one.tally == two.tally
    assert one.tally.pairs == 6 and one.tally.games == 12
    games_a = {g.headers["Round"]: g for g in read_pgns((tmp_path / "a.pgn").read_text())}
    games_b = {g.headers["Round"]: g for g in read_pgns((tmp_path / "b.pgn").read_text())}
    assert games_a.keys() == games_b.keys() == {f"{k}.{g}" for k in range(1, 7) for g in (1, 2)}
    for rnd, game in games_a.items():
        assert game.moves == games_b[rnd].moves
        a_white = rnd.endswith(".1")
        assert game.headers["White"] == ("random" if a_white else "random:seed=1")
        assert game.headers["Variant"] == "Fog of War" and game.headers["TimeControl"] == "-"
    # each side's transcript beside the PGN equals the one rebuilt from the moves
    lines = (tmp_path / "a.transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 12
    for line in lines:
        item = json.loads(line)
        game = games_a[item["round"]]
        expect = transcripts_from_moves([move_to_uci(m) for m in game.moves])
        assert (Transcript.from_dict(item["white"]), Transcript.from_dict(item["black"])) == expect


def test_outputs_json_db_and_resume(tmp_path: Path) -> None:
    db, js = tmp_path / "m.db", tmp_path / "m.json"
    first = run_match(config(3), Outputs(db=db, json=js))
    assert first.resumed_pairs == 0
    data = json.loads(js.read_text())
    assert data["pairs"] == 3 and data["games"] == 6 and sum(data["pentanomial"]) == 3
    assert data["wins"] + data["draws"] + data["losses"] == 6
    # the same match with more rounds resumes: only pairs 4 and 5 are played
    lines: list[str] = []
    resumed = run_match(config(5), Outputs(db=db), on_pair=lines.append)
    assert resumed.resumed_pairs == 3 and len(lines) == 2
    fresh = run_match(config(5))
    assert resumed.tally == fresh.tally
    store = GameStore(db)
    rows = store.match_games(config(5).match_id)
    assert [r.round for r in rows] == [f"{k}.{g}" for k in range(1, 6) for g in (1, 2)]
    assert all(r.status == "finished" and r.pgn.startswith("[Event") for r in rows)
    # a half-played pair is played again whole
    store.delete_game(rows[-1].id)
    store.close()
    again = run_match(config(5), Outputs(db=db))
    assert again.resumed_pairs == 4 and again.tally == fresh.tally
    # another experiment (seed) is another match in the same file
    other = run_match(config(2, seed=9), Outputs(db=db))
    assert other.resumed_pairs == 0


def test_sprt_stops_the_match_early() -> None:
    engines = engine_configs(["test-kingtaker", "random"], [])
    cfg = MatchConfig(engines, rounds=400, sprt=SprtConfig(0, 100))
    lines: list[str] = []
    result = run_match(cfg, on_pair=lines.append)
    assert result.sprt is not None and result.sprt.decision is SprtDecision.H1
    assert result.stopped_early and result.tally.pairs < 400
    assert result.sprt.llr >= result.sprt.upper
    assert "LLR" in lines[-1] and f"pair {result.tally.pairs}/400" in lines[-1]


def test_openings_force_both_games_of_a_pair(tmp_path: Path) -> None:
    pgn = tmp_path / "book.pgn"
    pgn.write_text(
        '[Variant "Fog of War"]\n\n1. d4 d5 2. c4 *\n\n[Variant "Fog of War"]\n\n1. e4 *\n'
    )
    openings = read_openings(pgn)
    assert openings == (Opening(moves=("d2d4", "d7d5", "c2c4")), Opening(moves=("e2e4",)))
    epd = tmp_path / "book.epd"
    epd.write_text("# comment\n4k3/8/8/8/8/8/8/R3K3 w Q - bm Ra8;\n")
    assert read_openings(epd)[0].fen == "4k3/8/8/8/8/8/8/R3K3 w Q - 0 1"
    out = tmp_path / "o.pgn"
    run_match(config(3, openings=openings), Outputs(pgn=out))
    games = {g.headers["Round"]: g for g in read_pgns(out.read_text())}
    for k, book in ((1, 3), (2, 1), (3, 3)):
        for g in (1, 2):
            assert len(games[f"{k}.{g}"].moves) > book
        assert games[f"{k}.1"].moves[:book] == games[f"{k}.2"].moves[:book]
    assert "{book}" in out.read_text()
    bad = tmp_path / "bad.epd"
    bad.write_text("not a fen\n")
    with pytest.raises(MatchConfigError, match="line 1"):
        read_openings(bad)



@pytest.mark.parametrize(("suffix", "text", "words"), [
    # Fog of War (chess.com; Obscuro appendix A): capturing the king ends the game
    (".pgn", '[Variant "Fog of War"]\n\n1. e4 f6 2. Qh5 a6 3. Qxe8 1-0\n',
     "opening 1: its move 5 (h5e8) ends the game (king capture, 1-0)"),
    # FIDE 9.2.2: the start position for the third time after 1. Nf3 Nf6 2. Ng1 Ng8 (twice)
    (".pgn", '[Variant "Fog of War"]\n\n1. e4 *\n\n[Variant "Fog of War"]\n\n'
     "1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 1/2-1/2\n",
     "opening 2: its move 8 (f6g8) ends the game (threefold repetition, 1/2-1/2)"),
    # FIDE 9.3: 100 plies without a pawn move or capture
    (".epd", "4k3/8/8/8/8/8/8/R3K3 w Q - 100 80\n", "over at its start"),
])
def test_an_opening_that_ends_the_game_is_refused_when_read(
        tmp_path: Path, suffix: str, text: str, words: str) -> None:
    """Found before any pair: it used to fail at play time ("pair 1 failed three times")."""
    book = tmp_path / f"book{suffix}"
    book.write_text(text)
    with pytest.raises(MatchConfigError) as info:
        read_openings(book)
    assert words in str(info.value) and str(book) in str(info.value)


def test_time_odds_and_config_errors(tmp_path: Path) -> None:
    tcs = [TimeControl.parse("60+1"), TimeControl.parse("30+0.5")]
    engines = engine_configs(["random", "random"], tcs)
    assert engines[0].name == "random#1" and engines[1].name == "random#2"
    out = tmp_path / "odds.pgn"
    run_match(MatchConfig(engines, 1), Outputs(pgn=out))
    g1, g2 = read_pgns(out.read_text())
    assert g1.headers["WhiteTimeControl"] == "60+1" and g1.headers["BlackTimeControl"] == "30+0.5"
    assert g2.headers["WhiteTimeControl"] == "30+0.5"
    with pytest.raises(MatchConfigError, match="exactly two"):
        engine_configs(["random"], [])
    with pytest.raises(MatchConfigError, match="unknown agent 'nosuch'"):
        engine_configs(["random", "nosuch"], [])
    with pytest.raises(MatchConfigError, match="rounds"):
        config(0)


def test_a_pair_that_keeps_failing_stops_the_match(tmp_path: Path) -> None:
    engines = engine_configs(["random", f"cmd:{tmp_path / 'no-such-engine'}"], [])
    with pytest.raises(PlayError, match="failed three times"):
        run_match(MatchConfig(engines, 2))


def test_a_spec_that_cannot_build_stops_the_match_at_once(tmp_path: Path) -> None:
    """An engine whose options its agent refuses fails the first pair with the agent's own
    message, not after the three tries a crashed pair gets: playing it again cannot help."""
    engines = engine_configs(["random", "random:policy=7"], [])
    db = tmp_path / "m.db"
    with pytest.raises(PlayError, match=r"pair \d cannot start: invalid options in "
                       r"'random:policy=7': random: policy must be 0 or 1, got '7'"):
        run_match(MatchConfig(engines, 3), Outputs(db=db))
    assert GameStore(db).games() == []


@pytest.mark.slow
def test_thousand_random_games(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 8: 1,000 games RandomAgent vs RandomAgent, no crash, results and White's share."""
    pairs = 50 if SHORT else 500
    # the full run uses both cores; the short CI form runs inline (no pool start-up)
    result = run_match(config(pairs, concurrency=1 if SHORT else 2, seed=2024))
    t = result.tally
    assert t.games == 2 * pairs and t.wins + t.draws + t.losses == t.games
    assert sum(t.penta) == pairs
    rules = {"king capture", "threefold repetition", "fifty-move rule", "no moves"}
    assert {name for name, _ in result.terminations} <= rules
    assert sum(n for _, n in result.terminations) == t.games
    with capsys.disabled():
        print(
            f"\n{t.games} random games: +{t.wins} ={t.draws} -{t.losses}, penta {list(t.penta)}, "
            f"White's share {100 * t.white_share:.1f}%, terminations {dict(result.terminations)}"
        )


def test_a_ray_address_that_does_not_answer_is_refused_at_once() -> None:
    """`ray.init` retries an unreachable cluster for about two minutes; the probe refuses it
    first. Expected values: the operating system's own answers on this machine (a port just
    closed refuses, a listening one accepts)."""
    from caligo.play.backends import probe_ray_address

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        probe_ray_address(f"127.0.0.1:{listening.getsockname()[1]}")
        probe_ray_address(f"ray://127.0.0.1:{listening.getsockname()[1]}")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(MatchConfigError, match=f"'127.0.0.1:{port}' does not answer"):
        probe_ray_address(f"127.0.0.1:{port}")
    for bad in ("nohost", "host:", "host:99999", ":6379", "host:" + "9" * 5000, "host:６３７９"):
        with pytest.raises(MatchConfigError, match="expected host:port"):
            probe_ray_address(bad)
    probe_ray_address("auto")  # left to Ray
