"""Built-in games defined by their observations (Zhang & Sandholm 2021, section 2).

Each state keeps every player's observation sequence as a tuple; that tuple is the player's
infoset key. Simultaneous moves are made turn-based: player 0 moves first, and player 1 does not
observe player 0's action.

- `matching_pennies_n(N)`: Zhang & Sandholm 2021, section 4. Chance draws n in 1..N uniformly;
  player 0 observes floor(n/2), player 1 observes floor((n+1)/2); both pick heads or tails; HH pays
  n, TT pays N - n, a mismatch pays 0 (to player 0).
- `rock_paper_scissors()`: Ha 2016, section F.1 (Figure F.1): player 1 picks without seeing
  player 0's choice; win 1, loss -1, draw 0.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from caligo.core.game import CHANCE, TERMINAL, GameError

HEADS, TAILS = 0, 1
ROCK, PAPER, SCISSORS = 0, 1, 2


@dataclass(frozen=True)
class TableState:
    """A node of a small game given by transition functions; immutable."""

    spec: TableGame
    history: tuple[int, ...]
    obs: tuple[tuple[Hashable, ...], tuple[Hashable, ...]]

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def current_player(self) -> int:
        return self.spec.player_fn(self.history)

    def legal_actions(self) -> Sequence[int]:
        return self.spec.actions_fn(self.history)

    def chance_outcomes(self) -> Sequence[tuple[int, float]]:
        acts = self.spec.actions_fn(self.history)
        return [(a, 1.0 / len(acts)) for a in acts]

    def child(self, action: int) -> TableState:
        mover = self.current_player()
        hist = (*self.history, action)
        new_obs = []
        for p in (0, 1):
            seq = self.obs[p]
            if mover == p:
                seq = (*seq, ("act", action))
            seq = (*seq, self.spec.observe_fn(hist, p))
            new_obs.append(seq)
        return TableState(self.spec, hist, (new_obs[0], new_obs[1]))

    def infoset_key(self, player: int) -> Hashable:
        return self.obs[player]

    def infoset_name(self, player: int) -> str:
        parts = []
        for item in self.obs[player]:
            if isinstance(item, tuple) and item and item[0] == "act":
                parts.append(self.spec.action_names[item[1]])
            elif item is not None:
                parts.append(str(item))
        return f"p{player}:" + "/".join(parts)

    def utility(self) -> float:
        return self.spec.utility_fn(self.history)

    def action_string(self, action: int) -> str:
        return self.spec.action_names[action]


@dataclass(frozen=True)
class TableGame:
    """A small game given by pure functions of the action history."""

    name: str
    player_fn: Callable[[tuple[int, ...]], int]
    actions_fn: Callable[[tuple[int, ...]], Sequence[int]]
    observe_fn: Callable[[tuple[int, ...], int], Hashable]
    utility_fn: Callable[[tuple[int, ...]], float]
    action_names: dict[int, str]

    def new_initial_state(self) -> TableState:
        return TableState(self, (), ((None,), (None,)))


MAX_PENNIES = 100_000
"""The largest N: chance lists its N outcomes in full before any node limit applies."""


def matching_pennies_n(n: int = 100) -> TableGame:
    """N-matching pennies of Zhang & Sandholm 2021, section 4 (Table 2 uses N = 100)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PENNIES:
        raise GameError(f"matching_pennies_n needs an integer n in [1, {MAX_PENNIES}], "
                        f"got n={n!r}")

    def player_fn(h: tuple[int, ...]) -> int:
        return (CHANCE, 0, 1, TERMINAL)[len(h)]

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        return list(range(1, n + 1)) if len(h) == 0 else [HEADS, TAILS]

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        if len(h) == 1:  # chance has drawn h[0]
            return h[0] // 2 if p == 0 else (h[0] + 1) // 2
        return None  # the opponent's penny is not observed; the result is the utility

    def utility_fn(h: tuple[int, ...]) -> float:
        k, a, b = h
        if a == b == HEADS:
            return float(k)
        if a == b == TAILS:
            return float(n - k)
        return 0.0

    names = {HEADS: "H", TAILS: "T"}
    return TableGame(f"matching_pennies_n(n={n})", player_fn, actions_fn, observe_fn, utility_fn,
                     names)


def rock_paper_scissors() -> TableGame:
    """Rock-paper-scissors as in Ha 2016, Figure F.1 (player 1 does not see player 0's pick)."""

    def player_fn(h: tuple[int, ...]) -> int:
        return (0, 1, TERMINAL)[len(h)]

    def actions_fn(h: tuple[int, ...]) -> Sequence[int]:
        return [ROCK, PAPER, SCISSORS]

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        return None

    def utility_fn(h: tuple[int, ...]) -> float:
        a, b = h
        return float(((a - b + 4) % 3) - 1)  # rock beats scissors: (0 - 2 + 4) % 3 - 1 = 1

    names = {ROCK: "rock", PAPER: "paper", SCISSORS: "scissors"}
    return TableGame("rock_paper_scissors", player_fn, actions_fn, observe_fn, utility_fn, names)
