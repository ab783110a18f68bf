"""The engine's belief as a picture: where its set P puts the opponent's pieces.

Every agent that keeps P (Obscuro, ZS21, StockfishPI) reports, in `Decision.info`:

- `BELIEF_MAP` ("belief_map"): P at the decision, i.e. the positions the board could be in
  before the move it plays;
- `BELIEF_MAP_PREV` ("belief_map_prev"): P after its previous move and the observation that
  followed, i.e. what it believed while the opponent chose the move just made. It is computed
  in `observe` after the agent's own move (on the opponent's time, off the agent's clock) and
  sent with the next decision; the first decision of a game has none.

Both are `belief_map(P)`: per opponent piece kind, how many positions of P (or of a uniform
sample of `PIECE_SAMPLE` = 4,096 of them: `caligo.fow.belief.piece_shares`) hold that piece on
each square, sparse (squares with no position left out)::

    {"ply": 12,                 # plies since the start that P has followed
     "color": "white",          # whose pieces (the opponent of P's player)
     "size": 18634,             # |P|, the stored positions
     "seen": 18634,             # P's `size_seen` (number of consistent positions)
     "size_kind": "exact",      # "exact" | "lower bound" | "estimate" | "redrawn" (`SizeKind`)
     "exact": true,             # False once P is a capped subsample or a cut-short update
     "sample": 4096,            # positions counted (|P| when it is at most 4,096)
     "counts": {"p": {"e4": 4096, "d5": 1337, ...}, "n": {...}, "b": {}, "r": {...},
                "q": {...}, "k": {...}}}

The share of P with a white knight on f3 is `counts["n"]["f3"] / sample`. Stored with each ply
and revealed only after the game (`caligo.web.reveal`), like the rest of the analysis. Counts
rather than rounded shares: integers, exact for a small P, and zero means zero.

`read_belief_map` checks a map that came from elsewhere (an external engine's `info`): the
reveal shows only maps it accepts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caligo.errors import CaligoError
from caligo.fow.belief import PIECE_SAMPLE, BeliefSet, SizeKind, piece_shares
from caligo.fow.bitboard import SQUARE_NAMES

__all__ = [
    "BELIEF_MAP",
    "BELIEF_MAP_PREV",
    "KINDS",
    "BeliefMapError",
    "belief_map",
    "read_belief_map",
]

BELIEF_MAP = "belief_map"
"""`Decision.info` key: P at the decision (the position before the move played)."""
BELIEF_MAP_PREV = "belief_map_prev"
"""`Decision.info` key: P after the agent's previous move (the position before the opponent's
last move)."""
KINDS = "pnbrqk"
"""The piece kinds of `counts`, in `caligo.fow` order (pawn .. king)."""

_COLORS = ("white", "black")
_SQUARES = {name: i for i, name in enumerate(SQUARE_NAMES)}
_MAX_COUNT = 10**9  # far above any P an engine can hold; bounds what a map may claim
_MAX_PLY = 100_000


class BeliefMapError(CaligoError, ValueError):
    """A belief map that is not one `belief_map` could have written; the message names the
    bad field."""


def belief_map(belief: BeliefSet, rng: np.random.Generator | None = None,
               max_sample: int = PIECE_SAMPLE) -> dict[str, Any]:
    """The JSON-ready picture of `belief` (module docstring). `rng` draws the sample when
    |P| > max_sample (default: seeded by P's config seed and ply, so the picture never
    touches the agent's own generators and a game stays a function of its seed)."""
    if rng is None:
        rng = np.random.default_rng([belief.config.seed & 0xFFFFFFFF, belief.ply])
    shares = piece_shares(belief, max_sample, rng)
    counts: dict[str, dict[str, int]] = {}
    for k, letter in enumerate(KINDS):
        row = shares.counts[k]
        counts[letter] = {SQUARE_NAMES[s]: int(row[s]) for s in np.flatnonzero(row).tolist()}
    return {
        "ply": int(belief.ply),
        "color": _COLORS[int(shares.color)],
        "size": shares.size,
        "seen": int(belief.size_seen),
        "size_kind": belief.size_kind.value,
        "exact": bool(belief.exact) and not belief.partial,
        "sample": shares.sample,
        "counts": counts,
    }


def _int(obj: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise BeliefMapError(f"belief map field {key!r} must be an int in [{lo}, {hi}], "
                             f"got {v!r:.60}")
    return v


def read_belief_map(obj: object) -> dict[str, Any]:
    """Return a checked copy of a belief map (the shape `belief_map` writes, squares with a
    zero count dropped); raise BeliefMapError naming the first bad field."""
    if not isinstance(obj, dict):
        raise BeliefMapError(f"a belief map must be an object, got {type(obj).__name__}")
    sample = _int(obj, "sample", 1, _MAX_COUNT)
    size = _int(obj, "size", sample, _MAX_COUNT)
    seen = _int(obj, "seen", 0, 10**18)
    ply = _int(obj, "ply", 0, _MAX_PLY)
    color = obj.get("color")
    if color not in _COLORS:
        raise BeliefMapError(f"belief map field 'color' must be 'white' or 'black', got "
                             f"{color!r:.60}")
    kind = obj.get("size_kind")
    if kind not in {k.value for k in SizeKind}:
        raise BeliefMapError(f"belief map field 'size_kind' is not a SizeKind, got {kind!r:.60}")
    exact = obj.get("exact")
    if not isinstance(exact, bool):
        raise BeliefMapError(f"belief map field 'exact' must be true or false, got {exact!r:.60}")
    raw = obj.get("counts")
    if not isinstance(raw, dict) or not set(raw) <= set(KINDS):
        raise BeliefMapError(f"belief map field 'counts' must map piece kinds {KINDS!r} to "
                             f"squares, got {raw!r:.80}")
    counts: dict[str, dict[str, int]] = {}
    per_square = dict.fromkeys(SQUARE_NAMES, 0)
    for letter in KINDS:
        squares = raw.get(letter, {})
        if not isinstance(squares, dict):
            raise BeliefMapError(f"belief map counts[{letter!r}] must be an object, got "
                                 f"{squares!r:.60}")
        out: dict[str, int] = {}
        for name, n in squares.items():
            if name not in _SQUARES:
                raise BeliefMapError(f"belief map counts[{letter!r}] names no square: {name!r:.20}")
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= sample:
                raise BeliefMapError(f"belief map counts[{letter!r}][{name!r}] must be an int in "
                                     f"[0, sample={sample}], got {n!r:.40}")
            if n:
                out[name] = n
                per_square[name] += n
        counts[letter] = out
    crowded = [name for name, n in per_square.items() if n > sample]
    if crowded:  # a square holds one piece at most in each position
        raise BeliefMapError(f"belief map counts more than sample={sample} pieces on square "
                             f"{crowded[0]!r}")
    return {"ply": ply, "color": color, "size": size, "seen": seen, "size_kind": kind,
            "exact": exact, "sample": sample, "counts": counts}
