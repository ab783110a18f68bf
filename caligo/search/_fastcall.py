"""Call a numba kernel's compiled entry point directly, skipping the dispatcher's typing.

The dispatcher types every argument on every call; for the arena's namedtuples of arrays that
costs tens of microseconds, more than a leaf selection. `FastKernel(kernel)` makes the first
call through the dispatcher (compiling, or loading from the cache) and afterwards calls the one
compiled overload's entry point, which only unboxes. Use it only for kernels whose arguments
always have the same types (arena arrays of fixed dtypes; scalars normalised by the caller with
int() / float() / bool()); a kernel with more than one compiled signature keeps the dispatcher.
"""

from __future__ import annotations

from typing import Any


class FastKernel:
    """A numba dispatcher called through its single compiled entry point once it has one."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._entry: Any = None

    def __call__(self, *args: Any) -> Any:
        entry = self._entry
        if entry is not None:
            return entry(*args)
        out = self.kernel(*args)
        sigs = self.kernel.signatures
        if len(sigs) == 1:
            self._entry = self.kernel.overloads[sigs[0]].entry_point
        return out
