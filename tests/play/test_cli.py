"""`caligo match` and `caligo engine --list` from the command line (in-process `main`).

Expected values: the files the command promises (PGN with Variant, transcripts, JSON result with
W-D-L and pentanomial counts that add up), and clear errors for bad options.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caligo.cli import main


def test_match_command_writes_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgn, db, js = tmp_path / "m.pgn", tmp_path / "m.db", tmp_path / "m.json"
    status = main(
        [
            "match",
            "--engine",
            "random",
            "--engine",
            "random:seed=2",
            "--rounds",
            "3",
            "--tc",
            "60+1",
            "--sprt",
            "elo0=0,elo1=10",
            "--pgn",
            str(pgn),
            "--db",
            str(db),
            "--json",
            str(js),
        ]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert out.count("pair ") == 3 and "LLR" in out and "White's share" in out
    assert "Pentanomial [LL, LD+DL, LW+DD+WL, DW+WD, WW]" in out
    result = json.loads(js.read_text())
    assert result["games"] == 6 and sum(result["pentanomial"]) == 3
    assert result["command"].startswith("caligo match --engine random --engine random:seed=2 ")
    assert result["version"]
    assert result["sprt"]["bounds"] == pytest.approx([-2.944439, 2.944439], abs=1e-6)
    assert pgn.read_text().count('[Variant "Fog of War"]') == 6
    assert len((tmp_path / "m.transcripts.jsonl").read_text().splitlines()) == 6
    # the same command again resumes from the database: nothing left to play
    assert (
        main(
            [
                "match",
                "--engine",
                "random",
                "--engine",
                "random:seed=2",
                "--rounds",
                "3",
                "--tc",
                "60+1",
                "--db",
                str(db),
                "--quiet",
            ]
        )
        == 0
    )
    assert "3 resumed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "random"], "exactly two"),
        (["--engine", "random", "--engine", "bogus"], "unknown agent 'bogus'"),
        (["--engine", "random", "--engine", "random", "--tc", "fast"], "invalid time control"),
        (["--engine", "random", "--engine", "random", "--sprt", "elo0=1"], "SPRT"),
        (["--engine", "random", "--engine", "random:policy=7"], "pair 1 cannot start"),
    ],
)
def test_match_command_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["match", *args]) == 2
    assert message in capsys.readouterr().err


def _refused_argument(args: list[str], option: str,
                      capsys: pytest.CaptureFixture[str]) -> str:
    """argparse's refusal of `option` (exit code 2, the option named): its message."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}:" in err, err
    return err


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e300", "soon"])
@pytest.mark.parametrize(("command", "option"), [
    (["match", "--engine", "random", "--engine", "random"], "--timeout"),
    (["web", "serve"], "--idle-seconds"),
    (["web", "serve"], "--first-move-seconds"),
])
def test_durations_must_be_finite_seconds(
    command: list[str], option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`caligo match --timeout inf` and `nan` ended in an OverflowError traceback; now argparse
    refuses them, with the option's name, before any pair starts. The web server's durations
    are read by the same type (`caligo.cli._util.seconds`)."""
    assert "seconds" in _refused_argument([*command, option, value], option, capsys)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--games-per-minute", "1.5", "not a whole number"),
    ("--games-per-minute", "-1", "must be at least 0"),
    ("--max-live-games", "0", "must be at least 1"),
    ("--engine-load", "nan", "must lie in [0, 1]"),
    ("--engine-load", "1.5", "must lie in [0, 1]"),
    ("--port", "-1", "must be at least 0"),
    ("--port", "65536", "a port is 0 to 65535"),  # was an OverflowError from bind()
    ("--host", "", "expected an address"),  # was every interface, against the help's loopback
    ("--db", ".", "is a directory"),
])
def test_web_serve_limits_are_read_by_the_shared_types(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`caligo web serve` reads its counts and its load share with the same argument types as
    every other command (`caligo.cli._util`), so a bad limit is refused before the server
    binds, with the option's name."""
    assert message in _refused_argument(["web", "serve", option, value], option, capsys)


@pytest.mark.parametrize("option", ["--json", "--pgn", "--db"])
def test_match_outputs_are_checked_before_the_first_game(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`caligo match --json DIR/x.json` with a folder that cannot exist played the whole match
    and then lost its result in a FileNotFoundError; the outputs are now checked as arguments."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    _refused_argument(["match", "--engine", "random", "--engine", "random", option,
                       str(blocker / "x.out")], option, capsys)


def test_match_json_goes_into_a_new_folder(tmp_path: Path) -> None:
    out = tmp_path / "new" / "folder" / "r.json"
    assert main(["match", "--engine", "random", "--engine", "random:seed=2", "--rounds", "1",
                 "--tc", "none", "--json", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["pairs"] == 1


def test_web_serve_refuses_a_file_that_is_not_a_game_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed the URL and then died in the app's start-up with a traceback; now the file
    is opened before the server binds, and the error names it."""
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database\n")
    assert main(["web", "serve", "--agent", "random", "--port", "0", "--db", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "Caligo web:" not in captured.out and str(bad) in captured.err


def test_engine_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "--list"]) == 0
    assert "random" in capsys.readouterr().out


@pytest.mark.parametrize("command", [
    ["fow", "belief"], ["fow", "last-seen"], ["fow", "plausible"],
    ["match", "--engine", "random", "--engine", "random", "--rounds", "1", "--openings"],
])
def test_a_file_that_is_not_utf8_is_named(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python's codec message ('can't decode byte 0xff in position 0') named no file; with
    several files on the command line the user could not tell which one was bad."""
    bad = tmp_path / "latin1.pgn"
    bad.write_bytes(b'\xff\xfe[Event "x"]\n')
    assert main([*command, str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
