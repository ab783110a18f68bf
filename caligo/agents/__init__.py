"""Caligo agents: the `Agent` interface and the agents built on it (layering: docs/design.md).

`caligo.agents.base` defines the interface (`Agent`, `Decision`, `Clock`, `TimeControl`);
`caligo.agents.registry` maps names such as ``random:seed=3`` or ``cmd:./engine`` to agents;
`caligo.agents.protocol` is the `caligo-fow` wire format that `ExternalAgent` speaks;
`caligo.agents.untrusted_json.loads_untrusted` parses JSON from pipes, sockets and request bodies
within limits (depth, integer length, finite numbers, size).
"""

from caligo.agents.base import (
    UNTIMED,
    Agent,
    AgentBase,
    Clock,
    Decision,
    TcKind,
    TimeControl,
    TimeControlError,
    legal_moves,
    observed_move,
)
from caligo.agents.policy import PolicyAgent
from caligo.agents.random_agent import RandomAgent

__all__ = [
    "UNTIMED",
    "Agent",
    "AgentBase",
    "Clock",
    "Decision",
    "PolicyAgent",
    "RandomAgent",
    "TcKind",
    "TimeControl",
    "TimeControlError",
    "legal_moves",
    "observed_move",
]
