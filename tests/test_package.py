"""The package's front door: lazy top-level exports, light imports, metadata.

The expected numbers are Kuhn's 58 nodes (Zhang & Sandholm 2021, Table 2) and OpenSpiel's
uniform-policy NashConv 11/12 on Kuhn (../shared/reference/values.md).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import caligo


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
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
