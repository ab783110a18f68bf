"""What the lost-subsample tests of both engines read from their decisions (a capped P that
lost every consistent position is repaired or given up: `caligo.agents.fow_belief.FowBelief`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def repairs_and_losses(infos: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(the most repairs and redraws of P any decision reported, how many decisions played
    without P)."""
    repairs = lost = 0
    for info in infos:
        repairs = max(repairs, info.get("belief_repairs", 0) + info.get("belief_redraws", 0),
                      info.get("repairs", 0))
        lost += bool(info.get("belief_lost"))
    return repairs, lost
