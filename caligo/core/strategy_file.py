"""Save and load strategies: one `.npz` file per strategy, validated on load.

The file holds (numpy `savez`, no pickles): `format` ("caligo-strategy"), `version` (1), `game`
(the game string the tree was loaded from), `num_slots`, `infosets` (a SHA-256 digest of the
tree's infoset names, in slot order, so a different tree with as many slots is caught), the
strategy itself (float64 over the tree's action slots) and `meta` (a JSON object: algorithm,
iterations, ...).

`save_strategy(path, tree, strategy, meta)` writes exactly `path` (no suffix added);
`load_strategy(path)` reads it back, rebuilds the tree from the stored game string (or checks a
given tree against the file) and validates the strategy (`check_strategy`).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from caligo.core.strategy import StrategyError, check_strategy
from caligo.core.tree import FloatArray, GameTree

FORMAT = "caligo-strategy"
VERSION = 1
_KEYS = {"format", "version", "game", "num_slots", "infosets", "strategy", "meta"}


class StrategyFileError(StrategyError):
    """A strategy file that cannot be read, is of another format or version, or does not fit."""


@dataclass(frozen=True, eq=False)
class SavedStrategy:
    """A strategy read from a file, with its tree and the metadata it was saved with."""

    tree: GameTree
    strategy: FloatArray = field(repr=False)
    meta: Mapping[str, Any]

    def __repr__(self) -> str:
        return f"<SavedStrategy for {self.tree.name!r}: {dict(self.meta)}>"


def infoset_digest(tree: GameTree) -> str:
    """SHA-256 of the tree's infoset names and action counts, in id order."""
    h = hashlib.sha256()
    for name, n in zip(tree.infoset_names, tree.infoset_num_actions.tolist(), strict=True):
        h.update(f"{n}\t{name}\n".encode())
    return h.hexdigest()


def save_strategy(path: str | Path, tree: GameTree, strategy: FloatArray,
                  meta: Mapping[str, Any] | None = None) -> Path:
    """Write `strategy` (validated against `tree`) to `path` in the format above; return it."""
    s = check_strategy(tree, strategy)
    try:
        meta_text = json.dumps(dict(meta or {}))
    except (TypeError, ValueError) as exc:
        raise StrategyFileError(f"strategy metadata must be JSON-serializable: {exc}") from exc
    out = Path(path)
    with out.open("wb") as fh:
        np.savez(fh, format=np.array(FORMAT), version=np.array(VERSION),
                 game=np.array(tree.name), num_slots=np.array(tree.num_slots),
                 infosets=np.array(infoset_digest(tree)), strategy=s,
                 meta=np.array(meta_text))
    return out


def load_strategy(path: str | Path, tree: GameTree | None = None) -> SavedStrategy:
    """Read a strategy file; check it against `tree`, or load its game when `tree` is None."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as data:
            fields = {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise
        raise StrategyFileError(f"{str(p)!r} is not a Caligo strategy file ({exc})") from exc
    missing = _KEYS - set(fields)
    if missing or str(fields.get("format")) != FORMAT:
        raise StrategyFileError(f"{str(p)!r} is not a Caligo strategy file "
                                f"(missing {sorted(missing)})" if missing else
                                f"{str(p)!r} is not a Caligo strategy file")
    version = int(fields["version"])
    if version != VERSION:
        raise StrategyFileError(f"{str(p)!r} has format version {version}; this Caligo reads "
                                f"version {VERSION}")
    game = str(fields["game"])
    if tree is None:
        from caligo.core.games import load_game

        tree = load_game(game)
    elif tree.name != game:
        raise StrategyFileError(f"{str(p)!r} holds a strategy for {game!r}, not {tree.name!r}")
    if int(fields["num_slots"]) != tree.num_slots or str(fields["infosets"]) != infoset_digest(
            tree):
        raise StrategyFileError(f"{str(p)!r} was saved for another tree of {game!r} (its "
                                "infosets differ from the ones built now)")
    try:
        meta = json.loads(str(fields["meta"]))
    except ValueError as exc:
        raise StrategyFileError(f"{str(p)!r} has unreadable metadata ({exc})") from exc
    try:
        strategy = check_strategy(tree, fields["strategy"])
    except StrategyError as exc:
        raise StrategyFileError(f"{str(p)!r}: {exc}") from exc
    return SavedStrategy(tree, strategy.copy(), meta if isinstance(meta, dict) else {})
