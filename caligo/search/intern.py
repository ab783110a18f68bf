"""Infoset identity: 64-bit observation-sequence keys and an interning hash table.

An infoset of the growing tree is the pair (player, key), where key is a uint64 hash of the
player's observation sequence (Obscuro, appendix B.1: two nodes are in one infoset of player i
exactly when i's sequences of observations and own actions agree). The same pair always maps to the
same infoset id, found through `_lookup_kernel` / `_insert_kernel`: an open-addressing table with
linear probing that stores the full (player, key) pair, so two different pairs never share an id (a
64-bit hash collision between two different sequences is the only way to merge infosets; at 10^6
infosets its probability is about 10^-8).

Keys are built by `mix_key(parent_key, action, obs)` (games whose observations are per step,
`KeyMode.INCREMENTAL`) or taken from the game (`KeyMode.CUMULATIVE`), salted per sampled root
where the opponent is assumed to know the state (design notes in `caligo.search.arena`).

All arithmetic is on np.uint64 with np.uint64 constants (docs/design.md, "Traps": a bare int
literal turns uint64 arithmetic into int64 or float64).
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # marks a free table cell (never a key: see `mix_key`)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_ONE = np.uint64(1)

# Status codes of the kernels.
OK = 0
TABLE_FULL = 1


@njit(cache=True, nogil=True)
def splitmix64(x: np.uint64) -> np.uint64:
    """The splitmix64 finalizer: a bijective mix of 64 bits."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def mix_key(parent: np.uint64, action: np.int64, obs: np.uint64) -> np.uint64:
    """The key of a sequence extended by an own action (or -1 for none) and an observation.

    Never returns `EMPTY` (the table's free marker): that one value is folded onto EMPTY - 1.
    """
    k = splitmix64(parent ^ splitmix64(np.uint64(action + 2) * _GOLDEN))
    k = splitmix64(k ^ obs)
    if k == EMPTY:
        k = EMPTY - _ONE
    return k


@njit(cache=True, nogil=True)
def _slot_of(player: np.int64, key: np.uint64, mask: np.uint64) -> np.int64:
    return np.int64(splitmix64(key ^ (np.uint64(player) * _GOLDEN)) & mask)


@njit(cache=True, nogil=True)
def _lookup_kernel(
    table_key: np.ndarray, table_player: np.ndarray, table_id: np.ndarray,
    player: np.int64, key: np.uint64,
) -> int:
    """The id stored for (player, key), or -1.

    table_key: uint64[cap] (EMPTY where free), table_player: int8[cap], table_id: int32[cap];
    cap a power of two.
    """
    cap = table_key.shape[0]
    mask = np.uint64(cap - 1)
    i = _slot_of(player, key, mask)
    for _ in range(cap):
        k = table_key[i]
        if k == EMPTY:
            return -1
        if k == key and table_player[i] == player:
            return int(table_id[i])
        i = (i + 1) & (cap - 1)
    return -1


@njit(cache=True, nogil=True)
def _insert_kernel(
    table_key: np.ndarray, table_player: np.ndarray, table_id: np.ndarray,
    player: np.int64, key: np.uint64, value: np.int64,
) -> int:
    """Store (player, key) -> value unless present; return the stored id, or -1 when full.

    Arrays as in `_lookup_kernel`. The caller keeps the load below one half.
    """
    cap = table_key.shape[0]
    mask = np.uint64(cap - 1)
    i = _slot_of(player, key, mask)
    for _ in range(cap):
        k = table_key[i]
        if k == EMPTY:
            table_key[i] = key
            table_player[i] = player
            table_id[i] = value
            return int(value)
        if k == key and table_player[i] == player:
            return int(table_id[i])
        i = (i + 1) & (cap - 1)
    return -1


def table_capacity(max_entries: int) -> int:
    """A power of two at least twice `max_entries` (load at most one half)."""
    cap = 16
    while cap < 2 * max_entries:
        cap *= 2
    return cap


class InternTable:
    """A (player, key) -> id table over numpy arrays (the kernels above do the work)."""

    def __init__(self, max_entries: int) -> None:
        cap = table_capacity(max_entries)
        self.key = np.full(cap, EMPTY, dtype=np.uint64)
        self.player = np.zeros(cap, dtype=np.int8)
        self.id = np.full(cap, -1, dtype=np.int32)

    def lookup(self, player: int, key: int) -> int:
        """The id of (player, key), or -1."""
        return int(_lookup_kernel(self.key, self.player, self.id, np.int64(player),
                                  np.uint64(key)))

    def insert(self, player: int, key: int, value: int) -> int:
        """Store (player, key) -> value unless present; the stored id (-1: table full)."""
        return int(_insert_kernel(self.key, self.player, self.id, np.int64(player),
                                  np.uint64(key), np.int64(value)))


def reference_lookup(entries: dict[tuple[int, int], int], player: int, key: int) -> int:
    """The obvious dict version of `InternTable.lookup` (tests compare the two)."""
    return entries.get((int(player), int(key)), -1)
