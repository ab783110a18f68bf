"""The choices of a gadget construction (`caligo.subgame.gadget.make_subgame`): the gadget kind
(Resolve, Maxmargin, Reach variants), where alternate values come from, the Resolve prior, the
options object, and the error a bad construction raises."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from caligo.errors import CaligoError

EXIT, PLAY = 0, 1
"""The actions of the Maxmargin gadget's opponent node: take the alternate value or play on."""


class SubgameError(CaligoError, ValueError):
    """Bad input to the gadget construction (infoset, strategy, extra payoffs or options)."""


class GadgetKind(enum.Enum):
    """Which gadget game to build (see the module docstring)."""

    MAXMARGIN = "maxmargin"
    RESOLVE = "resolve"
    UNSAFE = "unsafe"


class AlternateValues(enum.Enum):
    """Where alternate values and gifts come from."""

    BEST_RESPONSE = "best_response"  # u*(x|J), Zhang & Sandholm 2021 / Brown and Sandholm 2017
    BLUEPRINT = "blueprint"  # u(x, y|J) of the blueprint profile, Obscuro, appendix C.2


class ResolvePrior(enum.Enum):
    """The chance distribution over root infosets of the Resolve gadget."""

    UNIFORM = "uniform"  # Burch et al. 2014, Algorithm 12 line 30
    BLUEPRINT_MIX = "blueprint_mix"  # Obscuro, appendix C.3: half uniform, half blueprint reach


@dataclass(frozen=True)
class SubgameOptions:
    """How to build a gadget; validated at construction.

    kind: a `GadgetKind` (its value, e.g. "maxmargin", is accepted and converted).
    k: odd positive int or math.inf (the order of the knowledge set; inf = common knowledge).
    reach: subtract gift estimates from the alternate values (Reach subgame solving).
    merge_transpositions: Algorithm 12 lines 10-14, only with k = 1.
    kluss: keep (and re-optimize) I^{k+1} instead of I^k (Obscuro, appendix C.6; k = 1 gives
    2-KLUSS).
    """

    kind: GadgetKind = GadgetKind.MAXMARGIN
    k: float = 1
    reach: bool = False
    merge_transpositions: bool = False
    alternate_values: AlternateValues = AlternateValues.BEST_RESPONSE
    resolve_prior: ResolvePrior = ResolvePrior.UNIFORM
    kluss: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.kind, str):  # "maxmargin" -> GadgetKind.MAXMARGIN at the boundary
            try:
                object.__setattr__(self, "kind", GadgetKind(self.kind))
            except ValueError:
                raise SubgameError(f"kind must be one of {[k.value for k in GadgetKind]}, "
                                   f"got {self.kind!r}") from None
        if not isinstance(self.kind, GadgetKind):
            raise SubgameError(f"kind must be a GadgetKind, got {self.kind!r}")
        if not isinstance(self.alternate_values, AlternateValues):
            raise SubgameError(
                f"alternate_values must be an AlternateValues, got {self.alternate_values!r}"
            )
        if not isinstance(self.resolve_prior, ResolvePrior):
            raise SubgameError(f"resolve_prior must be a ResolvePrior, got {self.resolve_prior!r}")
        k = self.k
        if isinstance(k, bool) or not (
            k == math.inf or (isinstance(k, int | np.integer) and k >= 1 and k % 2 == 1)
        ):
            raise SubgameError(f"k must be an odd positive int or math.inf, got {k!r}")
        for name in ("reach", "merge_transpositions", "kluss"):
            if not isinstance(getattr(self, name), bool):
                raise SubgameError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.merge_transpositions and (k != 1 or self.kluss):
            raise SubgameError("merge_transpositions is only valid with k = 1 (and no kluss)")

    @property
    def order(self) -> float:
        """The order of the kept knowledge set: k, or k + 1 with kluss."""
        return self.k + 1 if self.kluss and self.k != math.inf else self.k
