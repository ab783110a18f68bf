"""Continuing a match from its `--json` result when its database is gone
(`caligo.play.continuation`, `caligo match --continue FILE`).

Expected values: an uninterrupted run of the same match (pairs are reproducible from the match
seed and their number, `MatchConfig.pair`), so a continued match must end with exactly its
counts, LLR and SPRT decision; the SPRT's LLR is a function of the pentanomial counts alone
(fishtest's GSPRT, `caligo.play.stats.sprt`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caligo.cli import main
from caligo.cli.cmd_strength import table_row
from caligo.play.continuation import read_prior
from caligo.play.errors import MatchConfigError
from caligo.play.match import (
    GameRecord,
    MatchConfig,
    Outputs,
    PairResult,
    PairSpec,
    engine_configs,
)
from caligo.play.runner import _stored_crossing, run_match
from caligo.play.stats import SprtConfig, SprtDecision
from caligo.play.storage import GameStore
from tests.play.test_match import config


def test_a_continued_match_ends_as_one_run(tmp_path: Path) -> None:
    """Three pairs with a JSON and no database, continued to six: the counts of the six
    pairs of one run, the pairs 1 to 3 not played again (three progress lines), every pair
    listed."""
    first = tmp_path / "first.json"
    run_match(config(3), Outputs(json=first))
    lines: list[str] = []
    prior = read_prior(first, config(6))
    assert prior.pairs == 3 and prior.counted == {0, 1, 2} and prior.first_new == 0
    second = tmp_path / "second.json"
    continued = run_match(config(6), Outputs(json=second), on_pair=lines.append, prior=prior)
    whole = run_match(config(6))
    assert continued.tally == whole.tally and continued.resumed_pairs == 3
    assert len(lines) == 3 and lines[0].startswith("pair 4/6")
    data = json.loads(second.read_text())
    assert data["pair_numbers"] == [1, 2, 3, 4, 5, 6] and "unlisted_below" not in data
    assert dict(continued.terminations) == dict(whole.terminations)


def test_an_sprt_continues_to_the_same_decision(tmp_path: Path) -> None:
    """An SPRT stopped after 4 pairs and continued from its file stops at the same pair with
    the same LLR as the run that was never stopped."""
    engines = engine_configs(["test-kingtaker", "random"], [])
    cfg = MatchConfig(engines, rounds=400, sprt=SprtConfig(0, 100))
    whole = run_match(cfg)
    assert whole.sprt is not None and whole.tally.pairs > 4
    part = tmp_path / "part.json"
    run_match(MatchConfig(engines, rounds=4, sprt=SprtConfig(0, 100)), Outputs(json=part))
    continued = run_match(cfg, prior=read_prior(part, cfg))
    assert continued.sprt is not None
    assert continued.tally == whole.tally
    assert continued.sprt.decision is whole.sprt.decision
    assert continued.sprt.llr == pytest.approx(whole.sprt.llr, abs=1e-12)


def test_a_file_without_its_pairs_needs_a_first_pair(tmp_path: Path) -> None:
    """A file written before pairs were listed (as docs/strength's older results): refused
    without --from-pair, refused at a number its pairs may reach or past the last round, and
    continued from a number above them; the new file lists its own pairs and says where the
    others end."""
    old = tmp_path / "old.json"
    run_match(config(3), Outputs(json=old))
    data = json.loads(old.read_text())
    del data["pair_numbers"]
    old.write_text(json.dumps(data))
    with pytest.raises(MatchConfigError, match="does not list its pairs"):
        read_prior(old, config(8))
    with pytest.raises(MatchConfigError, match="--from-pair 3"):
        read_prior(old, config(8), from_pair=3)
    with pytest.raises(MatchConfigError, match="--from-pair 9 is past --rounds 8"):
        read_prior(old, config(8), from_pair=9)  # nothing left to play
    prior = read_prior(old, config(8), from_pair=6)
    assert prior.unlisted == 3 and prior.first_new == 5
    new = tmp_path / "new.json"
    result = run_match(config(8), Outputs(json=new), prior=prior)
    assert result.tally.pairs == 6 and result.resumed_pairs == 3  # pairs 6, 7 and 8 played
    out = json.loads(new.read_text())
    assert out["pair_numbers"] == [6, 7, 8] and out["unlisted_below"] == 6
    # and that file continues without --from-pair: its unlisted pairs lie below 6
    again = read_prior(new, config(9))
    assert again.counted == {5, 6, 7} and again.first_new == 5 and again.unlisted == 3


def _crossed(decision: Any, llr: Any, pairs: Any) -> dict[str, Any]:
    """An `sprt` entry of the SPRT the test below asks for, recording a crossing."""
    return {"config": str(SprtConfig(0, 30)), "decision": decision, "llr": 0.0,
            "bounds": [-2.94, 2.94], "crossed": {"pairs": pairs, "llr": llr}}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(match_id="m-000000000000"), "is the result of match"),
    (lambda d: d.update(pentanomial=[0, 0, 1, 0, 0]), "do not agree"),
    (lambda d: d.update(wins=-1), "'wins' must be a count"),
    (lambda d: d.update(pairs=10**400, wins=10**400), "must be a count, got 'over"),
    (lambda d: d.update(pentanomial="[1,2]"), "five counts"),
    (lambda d: d.update(white_share=float("nan")), "white_share"),
    (lambda d: d.update(terminations=["king capture"]), "terminations"),
    (lambda d: d.update(pair_numbers=[1, 1, 2]), "pair_numbers"),
    (lambda d: d.update(pair_numbers=[1, 2, True]), "pair_numbers"),
    (lambda d: d.update(unlisted_below=-4), "unlisted_below"),
    (lambda d: d.update(sprt={"config": "elo0=0,elo1=5,alpha=0.05,beta=0.05,model=logistic"}),
     "cannot change"),
    # a recorded crossing (`sprt.crossed`): hostile decisions, LLRs and pair counts
    (lambda d: d.update(sprt=_crossed([1], 3.0, 2)), "not an SPRT decision"),
    (lambda d: d.update(sprt=_crossed("continue", 3.0, 2)), "not an SPRT decision"),
    (lambda d: d.update(sprt=_crossed("H1 accepted", 10**400, 2)), "not an SPRT decision"),
    (lambda d: d.update(sprt=_crossed("H1 accepted", float("inf"), 2)), "not an SPRT decision"),
    (lambda d: d.update(sprt=_crossed("H1 accepted", True, 2)), "not an SPRT decision"),
    (lambda d: d.update(sprt=_crossed("H1 accepted", [[[0]]] * 1000, 2)), r"\.\.\. with"),
    (lambda d: d.update(sprt=_crossed("H0 accepted", -3.0, 10**400)), "must be a count"),
    (lambda d: d.update(sprt=_crossed("H0 accepted", -3.0, 0)), "crossed at 0 pairs of 3"),
])
def test_a_result_file_that_does_not_fit_is_refused(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str) -> None:
    """Every field the counts come from is checked, and the error names the file."""
    good = tmp_path / "good.json"
    run_match(config(3), Outputs(json=good))
    data = json.loads(good.read_text())
    edit(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    cfg = MatchConfig(config(3).engines, 3, sprt=SprtConfig(0, 30))
    with pytest.raises(MatchConfigError, match=message) as info:
        read_prior(bad, cfg)
    assert str(bad) in str(info.value) or "--from-pair" in str(info.value)


@pytest.mark.parametrize("content", [b"", b"[1, 2]", b"{" * 100_000, b"x" * (2 << 20)])
def test_malformed_files_are_refused_by_name(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(MatchConfigError, match=r"r\.json"):
        read_prior(path, config(3))
    with pytest.raises(MatchConfigError, match="cannot read"):
        read_prior(tmp_path / "missing.json", config(3))


def test_the_command_line_continues_and_refuses(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`caligo match --continue`: the counts carry on; a bad file is an error reply (exit 2)
    that names it; --from-pair alone is refused."""
    base = ["match", "--engine", "random", "--engine", "random:seed=1", "--quiet"]
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main([*base, "--rounds", "2", "--json", str(first)]) == 0
    assert main([*base, "--rounds", "4", "--continue", str(first), "--json", str(second)]) == 0
    assert json.loads(second.read_text())["pair_numbers"] == [1, 2, 3, 4]
    assert "2 resumed" in capsys.readouterr().out
    assert main([*base, "--rounds", "4", "--continue", str(tmp_path / "none.json")]) == 2
    assert "none.json" in capsys.readouterr().err
    assert main([*base, "--rounds", "4", "--from-pair", "3"]) == 2
    assert "--continue" in capsys.readouterr().err


class _Started:
    """A backend whose submitted pairs have all started (a process pool with busy workers:
    nothing is left to cancel), each won 2-0 by engine A but pair 13, lost 0-2."""

    def __init__(self) -> None:
        self.queue: list[PairSpec] = []

    def submit(self, spec: PairSpec) -> None:
        self.queue.append(spec)

    def pending(self) -> int:
        return len(self.queue)

    def next_result(self) -> tuple[PairSpec, PairResult]:
        spec = self.queue.pop(0)
        won = spec.index != 12
        games = tuple(
            GameRecord(f"{spec.index + 1}.{g}", f"g{spec.index}.{g}", "w", "b", a_white=g == 1,
                       result="1-0" if won == (g == 1) else "0-1", termination="king capture",
                       detail="", plies=10)
            for g in (1, 2))
        return spec, PairResult(spec.index, (games[0], games[1]))

    def cancel_pending(self) -> int:
        return 0

    def close(self) -> None:
        pass


def test_the_decision_is_where_the_llr_crossed(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve 2-0 pairs cross H1 (LLR 2.96 >= 2.94, `caligo.play.stats.sprt` on the
    pentanomial [0, 0, 0, 0, 12]); pair 13, already being played, is lost 0-2 and counted, and
    takes the LLR back to 2.64. The test decided at the crossing (fishtest's rule): the result,
    its file and its table row say H1 at 12 pairs, and a continuation plays nothing more."""
    monkeypatch.setattr("caligo.play.runner.make_backend", lambda config: _Started())
    engines = engine_configs(["test-kingtaker", "random"], [])
    cfg = MatchConfig(engines, rounds=400, sprt=SprtConfig(0, 100), concurrency=1)
    path = tmp_path / "r.json"
    result = run_match(cfg, Outputs(json=path))
    assert result.tally.penta == (1, 0, 0, 0, 12)
    assert result.sprt is not None and result.sprt.decision is SprtDecision.CONTINUE
    assert result.sprt.llr == pytest.approx(2.635, abs=1e-3)
    assert result.sprt_crossing is not None and result.sprt_crossing.pairs == 12
    assert result.sprt_crossing.llr == pytest.approx(2.964, abs=1e-3)
    assert result.sprt_decision is SprtDecision.H1
    data = json.loads(path.read_text())
    assert data["sprt"]["decision"] == "H1 accepted" and data["sprt"]["crossed"]["pairs"] == 12
    assert "H1 accepted at 12 pairs (LLR 2.96 [-2.94, 2.94]; 2.64 at 13)" in table_row(data)
    prior = read_prior(path, cfg)
    assert prior.crossing == result.sprt_crossing
    again = run_match(cfg, prior=prior)
    assert again.tally == result.tally and again.sprt_decision is SprtDecision.H1
    data["sprt"]["crossed"]["pairs"] = 14
    path.write_text(json.dumps(data))
    with pytest.raises(MatchConfigError, match="crossed at 14 pairs of 13"):
        read_prior(path, cfg)


def test_a_decided_test_resumed_from_its_database_plays_no_more(tmp_path: Path) -> None:
    """The database keeps the finished result (`GameStore.finish_match`); when it records a
    crossing, the same match run again on that database keeps the decision and plays no
    more pairs, though the LLR of its counted pairs (3 pairs of 2-0: 0.74) is inside the
    bounds. A result without a crossing, or of another SPRT, changes nothing."""
    engines = engine_configs(["test-kingtaker", "random"], [])
    db = tmp_path / "m.db"
    short = MatchConfig(engines, rounds=3, sprt=SprtConfig(0, 100))
    first = run_match(short, Outputs(db=db))
    assert first.tally.pairs == 3 and first.sprt_crossing is None
    longer = MatchConfig(engines, rounds=6, sprt=SprtConfig(0, 100))
    store = GameStore(db)
    data = {**first.to_dict(), "sprt": {"config": str(longer.sprt), "decision": "H1 accepted",
                                        "llr": 0.74, "bounds": [-2.94, 2.94],
                                        "crossed": {"pairs": 2, "llr": 3.1}}}
    store.finish_match(longer.match_id, data)
    store.close()
    again = run_match(longer, Outputs(db=db))
    assert again.tally.pairs == 3 and again.resumed_pairs == 3
    assert again.sprt_crossing is not None and again.sprt_crossing.pairs == 2
    assert again.sprt_decision is SprtDecision.H1 and again.stopped_early
    other = MatchConfig(engines, rounds=6, sprt=SprtConfig(0, 50))  # another test: ignored
    assert run_match(other, Outputs(db=db)).tally.pairs == 6
    # a stored result that is not JSON, nested too deep, or records a crossing beyond its
    # pairs is ignored (logged), and the match goes on
    for k, text in enumerate(["{" * 100_000, "not json", json.dumps(
            {"sprt": {**data["sprt"], "config": str(other.sprt),
                      "crossed": {"pairs": 99, "llr": 3.1}}})]):
        with sqlite3.connect(db) as con:
            con.execute("UPDATE matches SET result = ? WHERE id = ?", (text, other.match_id))
        more = MatchConfig(engines, rounds=7 + k, sprt=SprtConfig(0, 50))
        assert run_match(more, Outputs(db=db)).tally.pairs == 7 + k


class _KilledAfter13(_Started):
    """`_Started`, killed (Ctrl-C) after its 13th pair was counted, while more pairs are
    being played (two at a time: four started)."""

    def next_result(self) -> tuple[PairSpec, PairResult]:
        if any(spec.index == 13 for spec in self.queue[:1]):
            raise KeyboardInterrupt
        return super().next_result()


def test_a_match_killed_after_its_crossing_keeps_its_decision(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The crossing goes into the database when it happens (`GameStore.record_crossing`), not
    only with the finished result: the match of `test_the_decision_is_where_the_llr_crossed`
    (two pairs at a time), killed after pair 13 took its LLR back inside the bounds (2.64),
    still reads H1 at 12 pairs from its database, which is what a resumed run decides on
    (`_stored_crossing`)."""
    monkeypatch.setattr("caligo.play.runner.make_backend", lambda config: _KilledAfter13())
    engines = engine_configs(["test-kingtaker", "random"], [])
    cfg = MatchConfig(engines, rounds=400, sprt=SprtConfig(0, 100), concurrency=2)
    db = tmp_path / "m.db"
    with pytest.raises(KeyboardInterrupt):
        run_match(cfg, Outputs(db=db))
    store = GameStore(db)
    stored = store.match_result(cfg.match_id)
    assert stored["sprt"]["decision"] == "H1 accepted"
    assert stored["sprt"]["crossed"]["pairs"] == 12
    crossing = _stored_crossing(store, cfg, 13)
    assert crossing is not None and crossing.pairs == 12
    assert crossing.llr == pytest.approx(2.964, abs=1e-3)
    assert crossing.decision is SprtDecision.H1
    store.close()
