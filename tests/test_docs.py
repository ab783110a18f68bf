"""The repository stands alone, and its docs say where things are truthfully.

- No file of the repository links to or names a path outside it (another checkout's files, a
  machine's home or work directory), nor cites a source document by a number only its authors
  had ("seed 001"): papers are cited by the short names of docs/design.md, "References".
- Every relative Markdown link in docs/ and README.md resolves to a file in the repository, and
  every `#anchor` to a heading of its page.
- Every citation of a docs/design.md section (`docs/design.md, "Traps"`) names a heading there.
- The layering docs/design.md states (its "Layout" table) holds for every import in `caligo/`.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()

TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".js", ".css", ".html", ".json",
                 ".jsonl", ".csv", ".pgn", ".yml", ".yaml", ".sh", ""}
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
             "build", "dist", "out", "node_modules"}

# Paths outside the repository: a sibling checkout's shared notes, the notes' own names, and
# absolute paths of a machine. Spelled so that this file does not match itself.
OUTSIDE = re.compile(
    r"\.\./" "shared|\\bshared/(?:design|reference|reviews|seeds)\\b|\\breviews/"
    r"|\b(?:SEARCH|PLAY|DESIGN|STYLE)\.md\b|\bvalues\.md\b"
    r"|(?<![\w.])/(?:work|root|home|Users)/|\b[A-Z]:\\\\Users\\\\")
SEED = re.compile(r"\b[Ss]eeds?\s+(?:#\s*)?00[0-4]\b")


def _repository_files() -> list[Path]:
    """The tracked files (git ls-files), or every file outside build and cache folders."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                             check=True, timeout=60).stdout.decode()
        files = [ROOT / name for name in out.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in ROOT.rglob("*")
                 if not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)]
    return [p for p in files if p.is_file() and p.resolve() != THIS
            and (p.suffix in TEXT_SUFFIXES or p.name == "Makefile")]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # an image or other binary file
        return None


def test_no_file_names_a_path_outside_the_repository() -> None:
    found = []
    files = _repository_files()
    assert len(files) > 100  # the walk found the repository
    for path in files:
        text = _text(path)
        if text is None:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            for pattern in (OUTSIDE, SEED):
                for m in pattern.finditer(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {m.group(0)!r} in "
                                 f"{line.strip()[:100]!r}")
    assert not found, "references to files outside the repository:\n" + "\n".join(found)


def test_a_file_outside_is_caught() -> None:
    """The patterns above catch the forms they are meant to (so the test above can fail)."""
    for bad in ("see ../" "shared/DESIGN.md", "(seed 001 C.5)", "seed\n    # 000 appendix D",
                "design/SEARCH.md section 4.7", "/" "work/main/.venv", "/" "root/.cache"):
        assert OUTSIDE.search(bad) or SEED.search(bad), bad
    for good in ("docs/design.md", "Obscuro, appendix C.5", "seed 7", "random:seed=3"):
        assert not (OUTSIDE.search(good) or SEED.search(good)), good


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _headings(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+)$", text, re.MULTILINE)]


LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]\n]*\]\(([^)\s]+)\)")


def _markdown_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_relative_markdown_link_resolves() -> None:
    pages = _markdown_pages()
    assert len(pages) >= 10
    broken = []
    checked = 0
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for m in LINK.finditer(text):
            target = m.group(1) or m.group(2)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            checked += 1
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if ROOT not in dest.parents and dest != ROOT:
                broken.append(f"{where} points outside the repository")
            elif not dest.exists():
                broken.append(f"{where} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in {
                    _slug(h) for h in _headings(dest)}:
                broken.append(f"{where} names no heading of {dest.name}")
    assert checked >= 5
    assert not broken, "\n".join(broken)


# `docs/design.md, "Title"`, `docs/design.md, "A" and "B"`, `docs/design.md, "A", "B" and "C"`;
# titles and separators may be wrapped over lines of a docstring or of '#' comments.
_GAP = r"\s*(?:#\s*)?"
CITATION = re.compile(
    rf'docs/design\.md,{_GAP}("[^"]+"(?:(?:,|,?\s+and){_GAP}"[^"]+")*)')


def test_every_design_section_cited_exists() -> None:
    titles = set(_headings(ROOT / "docs" / "design.md"))
    assert {"Layout", "Traps", "References", "Time and budgets"} <= titles
    missing = []
    cited = 0
    for path in _repository_files():
        text = _text(path)
        if text is None:
            continue
        for m in CITATION.finditer(text):
            for raw in re.findall(r'"([^"]+)"', m.group(1)):
                title = " ".join(raw.replace("#", " ").split())
                cited += 1
                if title not in titles:
                    line = text.count("\n", 0, m.start()) + 1
                    missing.append(f"{path.relative_to(ROOT)}:{line}: {title!r}")
    assert cited >= 20
    assert not missing, "sections of docs/design.md that do not exist:\n" + "\n".join(missing)


# The "Layout" table of docs/design.md: a layer imports only from the layers before it, and
# caligo.fow from none of core, subgame and search (it is independent).
LAYERS = ["core", "subgame", "search", "fow", "agents", "play", "web", "experiments", "cli"]
FOW_MAY_NOT = {"core", "subgame", "search"}


def _imported_layers(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "caligo" and len(parts) > 1 and parts[1] in LAYERS:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_the_layering_of_docs_design_holds(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    if layer == "fow":
        allowed -= FOW_MAY_NOT
    wrong = []
    files = sorted((ROOT / "caligo" / layer).rglob("*.py"))
    assert files
    for path in files:
        for other in _imported_layers(path) - allowed:
            wrong.append(f"{path.relative_to(ROOT)} imports caligo.{other}")
    assert not wrong, "\n".join(wrong)
