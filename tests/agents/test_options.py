"""One option vocabulary for every engine (`caligo.agents.options`).

The keys every engine shares mean the same thing in each (the table in docs/engine.md), and a
bad key or value is refused the same way, naming the engine, the key and the value. Expected
values are the ones written in the specs below (nothing computed).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from caligo.agents.obscuro import ObscuroAgent
from caligo.agents.options import EvalChoice, OptionError, OptionReader
from caligo.agents.registry import AgentSpecError, create
from caligo.agents.zs21.agent import EvaluatorChoice, ZS21Agent


def test_the_reader_checks_keys_and_values() -> None:
    r = OptionReader("eng", {"seed": "7", "eval": "Simple", "x": "1.5"}, ("seed", "eval", "x"))
    assert r.integer("seed") == 7 and r.choice("eval", EvalChoice) is EvalChoice.SIMPLE
    assert r.number("x") == 1.5 and "seed" in r and "belief" not in r
    with pytest.raises(OptionError, match=r"unknown option\(s\) for eng: \['depth'\].*seed"):
        OptionReader("eng", {"depth": "3"}, ("seed",))
    for opts, call, match in (
        ({"seed": "x"}, lambda r: r.integer("seed"), "eng: seed must be an integer, got 'x'"),
        ({"seed": "0"}, lambda r: r.integer("seed", 1), "seed must be an integer >= 1"),
        ({"seed": "inf"}, lambda r: r.number("seed"), "seed must be a finite number"),
        ({"seed": "nnue"}, lambda r: r.choice("seed", EvalChoice),
         "eng: invalid seed 'nnue' .one of auto, stockfish, simple, simple-see"),
    ):
        with pytest.raises(OptionError, match=match):
            call(OptionReader("eng", opts, ("seed",)))


def test_an_old_name_is_an_alias_and_not_a_second_value() -> None:
    r = OptionReader("zs21", {"evaluator": "simple"}, ("eval",), aliases={"evaluator": "eval"})
    assert r.choice("eval", EvalChoice) is EvalChoice.SIMPLE
    with pytest.raises(OptionError, match="invalid evaluator 'x'"):  # named as given
        OptionReader("zs21", {"evaluator": "x"}, ("eval",),
                     aliases={"evaluator": "eval"}).choice("eval", EvalChoice)
    with pytest.raises(OptionError, match="'eval' given twice"):
        OptionReader("zs21", {"eval": "simple", "evaluator": "auto"}, ("eval",),
                     aliases={"evaluator": "eval"})


def test_obscuro_and_zs21_read_the_shared_keys_alike() -> None:
    assert EvaluatorChoice is EvalChoice  # one evaluator choice
    z = create("zs21:eval=simple,nodes=5000,belief=1000,seed=2")
    o = create("obscuro:eval=simple,nodes=5000,belief=1000,seed=2")
    try:
        assert isinstance(z, ZS21Agent) and isinstance(o, ObscuroAgent)
        assert z.evaluator_choice is o.config.evaluator is EvalChoice.SIMPLE
        assert z.config.max_nodes == o.config.max_nodes == 5000
        assert z.belief_config.max_positions == o.config.belief_cap == 1000
        assert z.config.seed == o.config.seed == 2
    finally:
        z.close()
        o.close()
    old = create("zs21:evaluator=simple,max_nodes=5000,max_positions=1000")
    try:
        assert isinstance(old, ZS21Agent)
        assert (old.evaluator_choice, old.config.max_nodes,
                old.belief_config.max_positions) == (EvalChoice.SIMPLE, 5000, 1000)
    finally:
        old.close()
    for spec, match in (("zs21:eval=nnue", "invalid eval 'nnue'"),
                        ("zs21:belief=0", "belief must be an integer >= 1"),
                        ("zs21:nodes=many", "nodes must be an integer"),
                        ("zs21:depth=3", "unknown option")):
        with pytest.raises(AgentSpecError, match=match):
            create(spec)


def test_simple_see_gives_both_engines_the_exchange_evaluator() -> None:
    """`eval=simple-see`: the built-in evaluator with static exchanges
    (`caligo.fow.evaluate`), never Stockfish, in both engines; so do `auto` without Stockfish
    and Stockfish's fallback, while `eval=simple` and the simple-eval ablation keep the plain
    count (the paper's)."""
    assert EvalChoice.SIMPLE_SEE.builtin and not EvalChoice.AUTO.builtin
    assert not EvalChoice.SIMPLE.builtin_evaluator().config.exchange
    assert EvalChoice.AUTO.builtin_evaluator().config.exchange  # no Stockfish: the stronger one
    assert EvalChoice.STOCKFISH.builtin_evaluator().config.exchange  # as the pool's fallback
    paper = create("obscuro:ablation=simple_eval")  # Obscuro's ablation 6 stays the plain count
    try:
        assert isinstance(paper, ObscuroAgent) and not paper.config.uses_stockfish
        assert not paper._evaluator().config.exchange  # type: ignore[attr-defined]
    finally:
        paper.close()
    for spec in ("obscuro", "zs21"):
        blind = create(spec)  # eval=auto on a machine with no Stockfish to run: its path is
        # made a missing one after the spec check (which refuses a missing path named in it)
        try:
            if isinstance(blind, ObscuroAgent):
                missing = replace(blind.config.stockfish, path="no-such-stockfish")
                blind.config = replace(blind.config, stockfish=missing)
                leaf = blind._evaluator()
            else:
                blind.stockfish_path = "no-such-stockfish"  # type: ignore[attr-defined]
                leaf = blind._leaf()  # type: ignore[attr-defined]
            assert leaf.config.exchange, spec  # type: ignore[attr-defined]
        finally:
            blind.close()
    z = create("zs21:eval=simple-see")
    o = create("obscuro:eval=simple-see")
    try:
        assert isinstance(z, ZS21Agent) and isinstance(o, ObscuroAgent)
        assert not o.config.uses_stockfish
        assert z._leaf().config.exchange  # type: ignore[attr-defined]
        assert o._evaluator().config.exchange  # type: ignore[attr-defined]
        assert o.evaluator_name == "simple-see"
    finally:
        z.close()
        o.close()
