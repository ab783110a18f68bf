"""The example game of Zhang & Sandholm 2021, Figure 1 (section 5, appendix C): `figure1`.

A modified 4-matching pennies with player 0 (red, ⊕) moving first. Chance picks the root's
child n in {1, 2, 3, 4, e} uniformly. Player 0 observes R1 for n in {1, 2}, R3 for n in {3, 4};
player 1 observes C0' for n = 1, C2' for n in {2, 3}, C4' for n = 4 (she does not act there).
Player 0 plays h or t (R1, R3); player 1, who does not see that move, then plays h or t at C0,
C2, C4. Both heads pay n to player 0, both tails pay 5 - n, a mismatch pays 0.

The payoffs are the ones appendix C implies: its A matrices list p'(z) u(z) = u(1hh) = 1,
u(1tt) = 4 (c0' has one node), u(2hh) = 2, u(2tt) = 3 (1/2 u at c2' in the common-knowledge
gadget, u in the 1-KLSS one), u(3hh) = 3, u(3tt) = 2, u(4hh) = 4, u(4tt) = 1, and zeros for
mismatches. The subgame at e is "irrelevant" (Figure 1 caption): here it is a separate matching
pennies, player 0 at Re and player 1 at Ce', paying 2 on a match, so that it lies outside R1's
common-knowledge closure.

Observations are named so that infoset names read like the figure: player 0's decision infosets
are `p0:R1`, `p0:R3`, `p0:Re`; player 1's are `p1:C0'/C0`, `p1:C2'/C2`, `p1:C4'/C4`,
`p1:Ce'/Ce`. Actions: 10 = h, 11 = t; chance outcomes 1..4 and 5 = e.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from caligo.core.builtin_games import TableGame
from caligo.core.game import CHANCE, TERMINAL

H, T = 10, 11  # distinct from the chance outcomes 1..5
E = 5


def figure1() -> TableGame:
    """Zhang & Sandholm 2021, Figure 1's game (see the module docstring)."""

    def player_fn(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        return [1, 2, 3, 4, E] if len(h) == 0 else [H, T]

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        n = h[0]
        if len(h) == 1:
            if n == E:
                return "Re" if p == 0 else "Ce'"
            return f"R{2 * ((n + 1) // 2) - 1}" if p == 0 else f"C{2 * (n // 2)}'"
        if len(h) == 2 and p == 1:  # player 1 learns that player 0 has moved, not the move
            return "Ce" if n == E else f"C{2 * (n // 2)}"
        return None

    def utility_fn(h: tuple[int, ...]) -> float:
        n, a, b = h
        if n == E:
            return 2.0 if a == b else 0.0
        if a == b == H:
            return float(n)
        if a == b == T:
            return float(5 - n)
        return 0.0

    names = {H: "h", T: "t", 1: "1", 2: "2", 3: "3", 4: "4", E: "e"}
    return TableGame("figure1", player_fn, actions_fn, observe_fn, utility_fn, names)

