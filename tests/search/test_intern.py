"""The interning table against a dict (the obvious reference), and the key mixer's contract."""

from __future__ import annotations

import numpy as np

from caligo.search.intern import EMPTY, InternTable, mix_key, reference_lookup


def test_table_matches_a_dict() -> None:
    """Random inserts and lookups give what a Python dict gives (same pair -> same id)."""
    rng = np.random.default_rng(0)
    table = InternTable(2000)
    ref: dict[tuple[int, int], int] = {}
    keys = rng.integers(0, 2**63, size=1500, dtype=np.uint64)
    keys[:20] = keys[20:40]  # repeated keys
    for i, k in enumerate(keys.tolist()):
        p = int(rng.integers(0, 2))
        got = table.insert(p, k, i)
        want = ref.setdefault((p, k), i)
        assert got == want
    for (p, k), v in ref.items():
        assert table.lookup(p, k) == v == reference_lookup(ref, p, k)
        assert table.lookup(1 - p, k) == reference_lookup(ref, 1 - p, k)
    assert table.lookup(0, 12345) == -1


def test_mix_key_is_a_function_and_avoids_the_free_marker() -> None:
    a = mix_key(np.uint64(7), np.int64(3), np.uint64(11))
    assert a == mix_key(np.uint64(7), np.int64(3), np.uint64(11))
    assert a != mix_key(np.uint64(7), np.int64(-1), np.uint64(11))  # own action matters
    assert a != mix_key(np.uint64(8), np.int64(3), np.uint64(11))  # the past matters
    seen = {int(mix_key(np.uint64(i), np.int64(i % 5 - 1), np.uint64(i * 31))) for i in range(5000)}
    assert len(seen) == 5000 and int(EMPTY) not in seen
