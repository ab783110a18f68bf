"""`PolicyAgent`: plays a fixed policy of its information state, for small and scripted tests.

A FoW information state is the player's sequence of own moves and observations from the public
start (Obscuro, appendix B: an infoset is a player's sequence). `InfoState.key()` writes it as
text, so a policy can be a table `{key: {uci: probability}}`, or any function of the
`InfoState`; `PolicyAgent.scripted(["e2e4", ...])` plays a fixed move list (the k-th own turn
plays the k-th move). This is OpenSpiel's tabular-policy bot for FoW chess (docs/design.md,
"Agents"): deterministic given the game seed, and a function of the transcript only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from caligo.agents.base import COLOR_NAMES, AgentBase, Clock, Decision, TimeControl
from caligo.errors import CaligoError
from caligo.fow.observation import Observation
from caligo.fow.position import move_to_uci


class PolicyError(CaligoError, ValueError):
    """The policy has no legal move for an information state (with `Missing.RAISE`)."""


class Missing(Enum):
    """What to do when the policy names no legal move."""

    UNIFORM = "uniform"
    RAISE = "raise"


@dataclass(frozen=True)
class InfoState:
    """A player's information state: colour, public start and (own move, observation) pairs."""

    color: int
    start_fen: str
    history: tuple[tuple[int | None, Observation], ...]
    turn: int
    """How many own moves were played before this decision."""

    def key(self) -> str:
        """The state as text: colour | start | own-move-or-dash:dark-FEN per ply, joined by ;."""
        plies = ";".join(
            f"{'-' if own is None else move_to_uci(own)}:{obs.dark_fen()}"
            for own, obs in self.history
        )
        return f"{COLOR_NAMES[self.color]}|{self.start_fen}|{plies}"


PolicyFn = Callable[[InfoState], Mapping[str, float]]


class PolicyAgent(AgentBase):
    """Sample (or take the most likely) move of a fixed policy over UCI moves."""

    def __init__(
        self,
        policy: PolicyFn | Mapping[str, Mapping[str, float]],
        deterministic: bool = False,
        missing: Missing = Missing.UNIFORM,
    ) -> None:
        super().__init__()
        if isinstance(policy, Mapping):
            table = policy
            self._policy: PolicyFn = lambda state: table.get(state.key(), {})
        else:
            self._policy = policy
        self.deterministic = deterministic
        self.missing = missing
        self._turn = 0
        self._rng = random.Random(0)

    @classmethod
    def scripted(cls, moves: Sequence[str], missing: Missing = Missing.RAISE) -> PolicyAgent:
        """Play `moves[k]` at the agent's k-th own turn (UCI)."""
        script = list(moves)

        def policy(state: InfoState) -> Mapping[str, float]:
            return {script[state.turn]: 1.0} if state.turn < len(script) else {}

        return cls(policy, deterministic=True, missing=missing)

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        super().new_game(color, start_fen, time_control, seed)
        self._turn = 0
        self._rng = random.Random(f"caligo-policy:{seed}")

    def observe(self, observation: Observation, own_move: int | None) -> None:
        super().observe(observation, own_move)
        if own_move is not None:
            self._turn += 1

    def state(self) -> InfoState:
        """The current information state."""
        return InfoState(self.color, self.start_fen, tuple(self.history), self._turn)

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Return a move drawn from the policy restricted to `legal` (renormalised)."""
        state = self.state()
        wanted = self._policy(state)
        by_uci = {move_to_uci(m): m for m in legal}
        probs = {by_uci[u]: float(p) for u, p in wanted.items() if u in by_uci and p > 0}
        total = sum(probs.values())
        if total <= 0:
            if self.missing is Missing.RAISE:
                raise PolicyError(
                    f"policy names no legal move at own turn {state.turn} "
                    f"(asked for {sorted(wanted)!r})"
                )
            probs = dict.fromkeys(legal, 1.0)
            total = float(len(legal))
        policy = {m: p / total for m, p in probs.items()}
        if self.deterministic:
            move = max(policy, key=lambda m: (policy[m], -m))
        else:
            moves = list(policy)
            move = self._rng.choices(moves, weights=[policy[m] for m in moves])[0]
        return Decision(move, policy=policy)


__all__ = ["InfoState", "Missing", "PolicyAgent", "PolicyError"]
