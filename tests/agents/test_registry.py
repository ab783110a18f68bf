"""Agent specs and the registry: names, options, external commands, the strongest agent.

Expected values: the spec grammar of issue 8 (`random`, `random:seed=3`,
`obscuro:budget=iters=4000`, `cmd:PATH ARGS` split like a shell line).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from caligo.agents import registry
from caligo.agents.random_agent import RandomAgent
from caligo.agents.registry import AgentSpec, AgentSpecError, create, parse_spec, register


def test_parse_spec() -> None:
    assert parse_spec("random") == AgentSpec("random", "random")
    assert parse_spec("random:seed=3").options == (("seed", "3"),)
    spec = parse_spec("obscuro:budget=iters=4000,threads=2")
    assert spec.options == (("budget", "iters=4000"), ("threads", "2"))
    ext = parse_spec("cmd:/opt/my engine --hash 64 'two words'")
    assert ext.external and ext.command == ("/opt/my", "engine", "--hash", "64", "two words")
    assert ext.label == "my"
    for bad in ("", "Random", "random:seed", "random:seed=1,seed=2", "cmd:", "cmd:'open"):
        with pytest.raises(AgentSpecError):
            parse_spec(bad)


def test_create_and_option_errors() -> None:
    agent = create("random:seed=3")
    assert isinstance(agent, RandomAgent) and agent.base_seed == 3
    with pytest.raises(AgentSpecError, match=r"unknown agent 'nosuch'.*random"):
        create("nosuch")
    with pytest.raises(AgentSpecError, match="unknown option"):
        create("random:depth=3")
    with pytest.raises(AgentSpecError, match="seed must be an integer"):
        create("random:seed=x")


def test_each_description_names_every_option_its_agent_takes() -> None:
    """`caligo engine --list` and the web page show an agent's registered description; every
    key its option reader accepts (listed by its own unknown-key error) is named there as
    `key=`, so a new option cannot be left out of it."""
    import re

    built_in = [e for e in registry.agents()  # not the agents other tests register
                if isinstance(e.factory, str) and e.factory.startswith("caligo.")]
    assert {e.name for e in built_in} >= {"caligo", "obscuro", "zs21", "stockfish-pi", "random"}
    for entry in built_in:
        if entry.unavailable():  # cannot be built here (Stockfish missing): nothing to read
            continue
        with pytest.raises(AgentSpecError, match=r"known: ") as err:
            create(f"{entry.name}:no_such_key=1")
        found = re.search(r"\(known: ([^)]*)\)", str(err.value))
        assert found is not None, str(err.value)
        keys = [k.strip() for k in found.group(1).split(",")]
        missing = [k for k in keys if not re.search(rf"\b{re.escape(k)}=", entry.description)]
        assert keys and not missing, (entry.name, missing)


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    saved = dict(registry._REGISTRY)
    for name in list(registry._REGISTRY):  # only the built-in random agent: the test adds
        if name != "random":  # the stronger ones itself
            del registry._REGISTRY[name]
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_strongest_available_agent(scratch_registry: None) -> None:
    assert registry.strongest() == "random"

    def factory(options: Mapping[str, str]) -> RandomAgent:
        return RandomAgent()

    register("strong", factory, strength=100, requires=lambda: "stockfish not found")
    assert registry.strongest() == "random"  # unavailable agents are passed over
    with pytest.raises(AgentSpecError, match="not available here: stockfish not found"):
        create("strong")
    register("stronger", "caligo.agents.random_agent:RandomAgent.from_options", strength=50)
    assert registry.strongest() == "stronger"  # callers need no change when agents join
    assert isinstance(create("stronger:seed=2"), RandomAgent)
    assert [a.name for a in registry.agents()][:2] == ["strong", "stronger"]
    with pytest.raises(AgentSpecError, match="already registered"):
        register("random", factory)
