"""2-KLUSS, knowledge-limited *unfrozen* subgame solving (Obscuro, appendix C.6).

k-KLSS keeps I^k and freezes player 0 (turns her nodes into chance nodes at the blueprint) in
I^{k+1} \\ I^k; with Algorithm 12 those frozen nodes are folded into the top row of B. KLUSS keeps
the player-0 nodes of I^{k+1} \\ I^k in the gadget and re-optimizes them: the kept set is
I^{k+1} (for k = 1: I^2, the nodes sharing a player-1 infoset with a node of I), "pretending
that I^2 = I^inf". Every root infoset of player 1 is then wholly kept (I^{k+1} is closed under
player 1's infosets), so nothing is folded into B but alternate values and gifts. Player-0
infosets that I^{k+1} cuts are re-optimized over their kept nodes only, and `lift` writes that
play back for the whole infoset (Obscuro keeps the previous solve's strategy everywhere).

This is `make_subgame` with `SubgameOptions(kluss=True)`; the functions here are named presets.
"""

from __future__ import annotations

import dataclasses

import scipy.sparse as sp

from caligo.core.tree import FloatArray, GameTree
from caligo.subgame.gadget import Subgame, SubgameOptions, make_subgame


def kluss_options(options: SubgameOptions | None = None, k: int = 1) -> SubgameOptions:
    """`options` (default Maxmargin) with kluss on and order k (2-KLUSS for k = 1)."""
    base = options if options is not None else SubgameOptions()
    return dataclasses.replace(base, k=k, kluss=True, merge_transpositions=False)


def make_kluss_subgame(
    tree: GameTree,
    blueprint: FloatArray,
    infoset: int,
    options: SubgameOptions | None = None,
    B: sp.spmatrix | None = None,
) -> Subgame:
    """The 2-KLUSS gadget (Obscuro, appendix C.6) at player 0's infoset `infoset`."""
    return make_subgame(tree, blueprint, infoset, kluss_options(options), B)
