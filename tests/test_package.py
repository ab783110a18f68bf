"""The package's front door: lazy top-level exports, light imports, metadata.

The expected numbers are Kuhn's 58 nodes (Zhang & Sandholm 2021, Table 2) and OpenSpiel's
uniform-policy NashConv 11/12 on Kuhn (docs/design.md, "Reference values").
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import caligo


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    return done.stdout.strip()


def test_issue_11_bar_one_liner() -> None:
    assert _python("import caligo; print(caligo.load_game('kuhn_poker').num_nodes)") == "58"


def test_light_imports_stay_light() -> None:
    """`import caligo`, `caligo.errors` and `caligo.fow` load neither OpenSpiel, scipy nor the
    solver kernels; the first use of a top-level name does."""
    heavy = ("pyspiel", "scipy", "caligo.core", "caligo.core._cfr_kernels", "caligo.subgame")
    code = ("import sys, caligo, caligo.errors, caligo.fow; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    assert _python(code) == ""


def test_every_export_resolves_and_is_listed() -> None:
    from caligo import _EXPORTS

    assert set(caligo.__all__) == {"CaligoError", "__version__", *_EXPORTS}
    for name in _EXPORTS:
        assert getattr(caligo, name).__name__ == name
    assert set(caligo.__all__) <= set(dir(caligo))
    with pytest.raises(AttributeError, match="no_such_name"):
        caligo.no_such_name  # noqa: B018


def test_quick_start_of_docs_api() -> None:
    """The first lines of docs/api.md's quick start, run as written there."""
    tree = caligo.load_game("kuhn_poker")
    assert caligo.nash_conv(tree, caligo.uniform_strategy(tree)) == pytest.approx(11 / 12)
    result = caligo.solve_cfr(tree, caligo.CFRConfig.cfr_plus(), 200)
    assert caligo.openspiel_exploitability(tree, result.average) < 1e-2
    assert repr(tree) == "<GameTree 'kuhn_poker': 58 nodes, 12 infosets, 24 action slots>"


def test_license_metadata() -> None:
    from importlib.metadata import metadata

    meta = metadata("caligo")
    assert "GPL-3.0-or-later" in (meta.get("License-Expression") or meta.get("License") or "")


def test_fow_quick_start_of_docs_api() -> None:
    """The FoW lines of docs/api.md's quick start. Expected sizes by hand from chess.com's rules
    (docs/fow.md): after 1.e4 black sees only ranks 5-8, so white's 20 first moves remain; after
    1...d5 black's pawn sees e4 as a capture target, so P is the one true position, and after
    2.exd5 (black's pawn vanishes into a white one) it stays one."""
    from caligo.fow.belief import BeliefSet
    from caligo.fow.game import Game
    from caligo.fow.observation import observe
    from caligo.fow.position import BLACK, from_fen, move_from_uci

    pos = from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    assert "?" in observe(pos, BLACK).dark_fen()
    game = Game()
    belief = BeliefSet.initial(BLACK, game.fen())
    sizes = []
    for uci in ("e2e4", "d7d5", "e4d5"):
        mover, move = game.turn, move_from_uci(game.position, uci)
        game.push_uci(uci)
        obs = observe(game.position, BLACK)
        belief = (belief.update_own_move(move, obs) if mover == BLACK
                  else belief.update_opponent_move(obs))
        sizes.append(len(belief))
    assert sizes == [20, 1, 1]


def test_python_blocks_of_the_docs_run(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ```python block of docs/api.md and the README runs as written (in a scratch
    directory, since the quick start saves a file)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(str(tmp_path))
    blocks = []
    for doc in (root / "docs" / "api.md", root / "README.md"):
        blocks += re.findall(r"```python\n(.*?)```", doc.read_text(), re.DOTALL)
    assert len(blocks) >= 3
    for code in blocks:
        exec(compile(code, "docs", "exec"), {})
