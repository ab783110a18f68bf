"""Sub-commands of the subgame area."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Add this area's sub-commands (none yet)."""
