"""`caligo fow belief | perft | view` from the outside.

Expected values: |P| sizes from the library itself run ply by ply (the command must print what
`BeliefSet` computes, whatever the input form); perft counts from the python-chess reference
(`ref_perft`) and the chessprogramming wiki's published chess counts (Kiwipete depth 2: 2039);
views from `view_data(observe(...))` on the true position the test plays itself.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import chess
import pytest

from caligo.cli import main
from caligo.fow import BLACK, WHITE, BeliefConfig, BeliefSet, Game, observe, view_data
from tests.fow.test_movegen import ref_perft

# 1.e4 f6 2.Qh5 a6 3.Qxe8: white captures the king
KING_HUNT = ["e2e4", "f7f6", "d1h5", "a7a6", "h5e8"]


def _pgn(moves: list[str], **headers: str) -> str:
    game = Game()
    for uci in moves:
        game.push(uci)
    return game.to_pgn(headers)


def _sizes(moves: list[str], side: int, cap: int = 2_000_000) -> list[int]:
    """|P| after every ply, computed with the library directly."""
    game = Game()
    belief = BeliefSet.initial(side, config=BeliefConfig(max_positions=cap))
    out = [1]
    for uci in moves:
        mover = game.turn
        game.push(uci)
        obs = observe(game.position, side)
        if mover == side:
            belief = belief.update_own_move(uci, obs)
        else:
            belief = belief.update_opponent_move(obs)
        out.append(len(belief))
    return out


def test_belief_table_ends_with_result_and_termination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hunt.pgn"
    path.write_text(_pgn(KING_HUNT))
    assert main(["fow", "belief", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["ply", "move", "white", "black"]
    table = [line.split() for line in lines[2:-1]]
    assert [r[1] for r in table] == ["start", "e4", "f6", "Qh5", "a6", "Qxe8"]
    assert [int(r[2]) for r in table] == _sizes(KING_HUNT, WHITE)
    assert [int(r[3]) for r in table] == _sizes(KING_HUNT, BLACK)
    assert lines[-1] == "# result 1-0 (king capture)"


def test_belief_reads_stdin_bom_percent_lines_and_picks_a_game(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "\ufeff% two games\n" + _pgn(["e2e4"]) + "\n" + _pgn(KING_HUNT[:3])
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["fow", "belief", "-", "--game", "2", "--as", "black", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "stdin" and data["sides"] == ["black"]
    assert [r["black"]["stored"] for r in data["plies"]] == _sizes(KING_HUNT[:3], BLACK)
    assert [r["uci"] for r in data["plies"][1:]] == KING_HUNT[:3]
    assert data["result"] == "*" and data["termination"] is None
    # without --game a two-game file is refused with a hint
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["fow", "belief", "-"]) == 2
    assert "found 2" in capsys.readouterr().err


def test_belief_cap_wording_plot_and_bad_plot_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moves = ["g1f3", "b8c6", "b1c3", "g8f6", "e2e3"]
    path = tmp_path / "g.pgn"
    path.write_text(_pgn(moves))
    png = tmp_path / "sizes.png"
    # black's |P|: 1 20 18 200 155 1212; a cap of 400 keeps every ply exact but the last,
    # which is counted exactly (count_factor 4 * 400 > 1212) and sampled
    args = ["fow", "belief", str(path), "--as", "black", "--max-positions", "400"]
    assert main([*args, "--plot", str(png)]) == 0
    out = capsys.readouterr()
    last = out.out.splitlines()[-2]
    exact = _sizes(moves, BLACK)[-1]
    assert exact > 400
    assert f"black's P is a sample (cap 400): holding 400 of {exact} consistent positions" in last
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and str(png) in out.err
    # a bad plot path is refused before any work, with the path quoted
    assert main([*args, "--plot", str(tmp_path / "x.foo")]) == 2
    assert "x.foo" in capsys.readouterr().err


def test_belief_exits_quietly_on_a_closed_pipe(tmp_path: Path) -> None:
    # the reader is gone before the first line (as `| head -0`): every write hits EPIPE
    path = tmp_path / "hunt.pgn"
    path.write_text(_pgn(KING_HUNT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "caligo.cli", "fow", "belief", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141  # 128 + SIGPIPE, as a writer killed by it reports
    assert err == "", err


def test_perft_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fow", "perft", "startpos", "3"]) == 0
    assert capsys.readouterr().out.strip() == f"FoW perft 3: {ref_perft(chess.Board(), 3)}"
    kiwipete = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    assert main(["fow", "perft", kiwipete, "2", "--chess", "--divide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "standard chess perft 2: 2039"  # published (chessprogramming wiki)
    divide = dict(line.split(": ") for line in lines[:-2])
    board = chess.Board(kiwipete)
    assert set(divide) == {m.uci() for m in board.legal_moves}
    assert sum(int(v) for v in divide.values()) == 2039
    assert main(["fow", "perft", "8/8/8/8 w - - 0 1", "2"]) == 2
    assert "invalid fen" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fow", "perft", "startpos", "-1"])


def test_view_command_writes_the_players_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moves = ["e2e4", "d7d5", "a2a3", "d5e4"]
    path = tmp_path / "g.pgn"
    path.write_text(_pgn(moves))
    svg = tmp_path / "board.svg"
    assert main(["fow", "view", str(path), "--ply", "4", "--as", "white", "-o", str(svg)]) == 0
    text = svg.read_text()
    assert text.startswith("<svg") and text.count('class="fog"') > 0
    assert main(["fow", "view", str(path), "--ply", "4", "--as", "white", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    game = Game()
    for uci in moves[:3]:
        game.push(uci)
    after_own = observe(game.position, WHITE)
    game.push(moves[3])
    assert data == view_data(observe(game.position, WHITE), after_own, "a2a3")
    assert data["hints"] == {"own_last_move": "a2a3", "lost": ["e4"]}
    assert main(["fow", "view", str(path), "--ply", "9", "--as", "black"]) == 2
    assert "the game has 4 plies" in capsys.readouterr().err
