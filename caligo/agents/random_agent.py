"""`RandomAgent`: uniform over the FoW-legal moves, seeded (docs/design.md, "Agents").

Obscuro won 1000 of 1000 games against a random mover (Obscuro, section 4.2), which makes this
agent a sanity gate for every engine and the workhorse of the referee's tests and benchmarks.
Its policy is the uniform distribution it samples from; its game seed comes from `new_game`
(the referee derives one per game and seat), mixed with the optional `seed` option so two
differently configured random agents never play the same games.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from caligo.agents.base import AgentBase, Clock, Decision, TimeControl
from caligo.agents.options import OptionError, OptionReader
from caligo.fow.observation import Observation


class RandomAgent(AgentBase):
    """Pick a legal move uniformly at random from a per-game seeded generator."""

    def __init__(self, seed: int = 0, report_policy: bool = True) -> None:
        super().__init__()
        self.base_seed = int(seed)
        self.report_policy = report_policy
        self._rng = random.Random(self._mix(0))

    def _mix(self, game_seed: int) -> str:
        # str seeds hash with SHA-512: the same stream in every process and Python build
        return f"caligo-random:{self.base_seed}:{game_seed}"

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> RandomAgent:
        """Build from registry options (`caligo.agents.options`): `seed=N` (int),
        `policy=0|1` (report the policy)."""
        opts = OptionReader("random", options, ("seed", "policy"))
        seed = opts.integer("seed") if "seed" in opts else 0
        policy = opts.text("policy") if "policy" in opts else "1"
        if policy not in ("0", "1"):
            raise OptionError(f"random: policy must be 0 or 1, got {policy!r}")
        return cls(seed=seed, report_policy=policy == "1")

    def new_game(self, color: int, start_fen: str, time_control: TimeControl, seed: int) -> None:
        super().new_game(color, start_fen, time_control, seed)
        self._rng = random.Random(self._mix(seed))

    def observe(self, observation: Observation, own_move: int | None) -> None:
        """Nothing to remember: the choice depends on the legal moves only."""

    def act(self, legal: Sequence[int], clock: Clock) -> Decision:
        """Return a uniformly drawn legal move (and the uniform policy)."""
        move = legal[self._rng.randrange(len(legal))]
        if not self.report_policy:
            return Decision(move)
        p = 1.0 / len(legal)
        return Decision(move, policy=dict.fromkeys(legal, p))


__all__ = ["RandomAgent"]
