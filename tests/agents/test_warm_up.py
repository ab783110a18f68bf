"""An engine's warm-up leaves no compiled kernel to load during its games.

numba loads a cached kernel at its first call while holding Python's lock (10-60 ms, more on a
busy machine): inside a timed move that is time no watchdog can give back (a ZS21 move of 143 ms
for a 100 ms budget was traced to such a stall). Each engine is therefore warmed before its
clock runs (`caligo.agents.obscuro_warm.warm_up`, `caligo.agents.zs21.agent.warm_up`). These tests
run each engine in a fresh interpreter (so no other test has loaded anything for it), take the
kernels' signatures at its first move, play short timed games against a random mover, and check
that no kernel of the package gained a signature. The expected value is the empty set; a failure
names the kernels the warm-up missed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from caligo.agents.obscuro import stockfish_available

needs_sf = pytest.mark.skipif(not stockfish_available(),
                              reason="Debian's stockfish is not installed")

PROBE = textwrap.dedent("""
    import sys
    from caligo.agents.base import TimeControl
    from caligo.agents.random_agent import RandomAgent
    from caligo.agents.registry import create
    from caligo.play.referee import play_game
    from caligo.play.session import GameSession, SessionConfig

    def signatures():
        out = {}
        for name, mod in list(sys.modules.items()):
            if name.startswith("caligo"):
                for key, obj in list(vars(mod).items()):
                    if hasattr(obj, "signatures") and hasattr(obj, "py_func"):
                        out[obj.py_func.__module__ + "." + obj.py_func.__name__] = {
                            str(s) for s in obj.signatures}
        return out

    engine = create(sys.argv[1])
    opponent = RandomAgent(seed=3)
    seen = {}
    act = engine.act

    def first_act(legal, clock):
        if not seen:
            seen.update(signatures())
        return act(legal, clock)

    engine.act = first_act
    tc = TimeControl.parse("mt=0.05")
    for g in range(int(sys.argv[2])):
        session = GameSession(SessionConfig(
            f"warm{g}", time_controls=(tc, tc), seeds=(g, g + 50), names=("engine", "random"),
            move_timeout_ms=600_000))
        play_game(session, (engine, opponent))
    engine.close()
    new = {k: sorted(v - seen.get(k, set())) for k, v in signatures().items()}
    for k, v in sorted(new.items()):
        for s in v:
            print("NEW", k, s)
""")


@needs_sf
@pytest.mark.parametrize("engine", ["obscuro", "zs21"])
def test_no_kernel_is_loaded_after_the_warm_up(engine: str) -> None:
    # a generous move timeout: only what was loaded is checked, never how long a move took
    out = subprocess.run([sys.executable, "-c", PROBE, engine, "3"], capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    missed = [line for line in out.stdout.splitlines() if line.startswith("NEW")]
    assert missed == [], "kernels first loaded inside a game:\n" + "\n".join(missed)


def test_the_rare_belief_kernels_are_loaded_with_the_update_s_types() -> None:
    """`load_rare_kernels` gives each rare-path kernel the signature an update calls it with
    (2-D C-contiguous uint64 tables and rows, int64 counts, a uint64 threshold)."""
    from caligo.fow import belief_kernels as belief

    belief.load_rare_kernels()
    table = "Array(uint64, 2, 'C', False, aligned=True)"
    assert f"({table}, {table}, uint64)" in {str(s) for s in belief._shrink.signatures}
    assert f"({table}, int64, {table})" in {str(s) for s in belief._dedupe_kernel.signatures}
    rows = {str(s) for s in belief._trim.signatures}
    assert f"({table}, Array(uint64, 1, 'C', False, aligned=True), int64, int64)" in rows


def test_a_failing_warm_up_search_is_logged_and_the_warm_up_goes_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The warm-up is no game: when one of its searches fails (here the first, the
    deterministic one, on its first move), the engine process must not die before its first
    move (as a web worker once did); the failure is logged with its reason and the rest of
    the warm-up runs (the threaded search's six moves, the belief's rare kernels)."""
    from caligo.agents import obscuro_warm
    from caligo.search.agent import SearchAgent
    from caligo.search.config import SearchError

    act = SearchAgent.act
    played = []

    def failing(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self.config.schedule.value == "deterministic":
            raise SearchError("the searcher's infoset is not in the tree: (a test)")
        played.append(1)
        return act(self, *args, **kwargs)

    rare = []
    monkeypatch.setattr(obscuro_warm, "WARMED", set())
    monkeypatch.setattr(SearchAgent, "act", failing)
    monkeypatch.setattr(obscuro_warm, "load_rare_kernels", lambda: rare.append(1))
    with caplog.at_level("WARNING", logger="caligo.agents.obscuro_warm"):
        obscuro_warm.warm_up(None)
    assert len(played) == 6 and rare == [1] and obscuro_warm.WARMED == {"search"}
    assert "deterministic search failed (the searcher's infoset is not in the tree" in (
        caplog.text)
