"""`caligo.search.export.export_trunk`, the search's one exporter, against what it must equal.

- With no gadget, on a fully expanded arena of a small game, the exported game is the source
  game: the core's best-response values against the arena's strategy, and the LP value, are
  those of the tree the arena was grown from (Kuhn poker's value -1/18 is Kuhn 1950's; the core
  agrees with OpenSpiel's exact solvers in tests/core).
- The vectorized sequence form the exporter caches for the LP equals the one the core
  computes from the exported tree (`caligo.core.sequence_form`).
- With a Maxmargin gadget after a re-root, the exported game with B has the LP value of a
  second, independent reading of the same arena (`tests/search/arena_reader.py`: through the
  game protocol and the core's `build_tree`; it shares no code with the exporter).
- Resolve against Maxmargin, an identity of the two gadgets (Zhang & Sandholm 2021, appendix
  D.4; Brown & Sandholm 2017, section 4): the opponent takes min(0, v_J - t_J) at each J under
  Resolve, so Resolve's value is 0 when Maxmargin's m is >= 0, and lies in [m, alpha_min * m]
  when m < 0 (at least m at Maxmargin's strategy, the priors summing to 1; at most
  alpha_min * m, since against any strategy some J is worth m or less).
- `write_back` stores the LP's solution where the search reads it: the slots, and the
  opponent's root weights w_J (the Maxmargin root's strategy, or alpha_J * PLAY under Resolve).
"""

from __future__ import annotations

import numpy as np
import pytest

from caligo.core.best_response import best_response_value, expected_value
from caligo.core.games import load_game
from caligo.core.lp import game_value, solve_player
from caligo.core.sequence_form import SequenceForm, sequence_form
from caligo.core.strategy import uniform_strategy
from caligo.core.tree import GameTree
from caligo.search.arena import FROZEN, Arena
from caligo.search.config import RootGadget
from caligo.search.export import RootLayer, TrunkGame, export_trunk, strategy_on_tree, write_back
from caligo.subgame.options import PLAY
from tests.search.arena_reader import arena_to_gametree, gadget_extra
from tests.search.conftest import full_search, rerooted

GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)"]


def _no_gadget(arena: Arena) -> RootLayer:
    return RootLayer(RootGadget.NONE, np.zeros(1), np.ones(1))


def _gadget(arena: Arena, kind: RootGadget) -> RootLayer:
    m = arena.n_j
    return RootLayer(kind, arena.roots.threshold[:m].copy(), arena.roots.alpha[:m].copy())


def _value(tree: GameTree, extra: object = None) -> float:
    """Player 0's game value by the core's LP (HiGHS), with extra payoffs B."""
    return float(solve_player(tree, 0, extra=extra).value)  # type: ignore[arg-type]


def _fresh_sequence_form(tree: GameTree) -> SequenceForm:
    cached = tree._cache.pop("sequence_form")
    try:
        return sequence_form(tree)
    finally:
        tree._cache["sequence_form"] = cached


def _rerooted(game: str, limit: int = 6) -> list[Arena]:
    """KLUSS subgames: nothing is frozen, so both readings are the same game."""
    out = rerooted(load_game(game), limit)
    for a in out:
        assert not (a.nodes.flags[: a.n_nodes] & FROZEN).any()
    return out


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("searcher", [0, 1])
def test_without_a_gadget_the_export_is_the_source_game(game: str, searcher: int) -> None:
    tree = load_game(game)
    eng = full_search(tree, 20, searcher=searcher)
    arena = eng.arena
    ex = export_trunk(arena, _no_gadget(arena), searcher)
    t = ex.tree
    assert t.num_nodes == tree.num_nodes and t.num_infosets == tree.num_infosets
    assert ex.offset == 0 and ex.root_infoset == -1 and (ex.slot_of >= 0).all()
    assert ex.extra.nnz == 0
    ours = arena.slots.strat[ex.slot_of]
    theirs = strategy_on_tree(arena, tree, uniform_strategy(tree))
    assert expected_value(t, ours) == pytest.approx(expected_value(tree, theirs), abs=1e-12)
    for responder in (0, 1):
        assert best_response_value(t, ours, responder) == pytest.approx(
            best_response_value(tree, theirs, responder), abs=1e-12)
    assert _value(t) == pytest.approx(game_value(tree), abs=1e-9)
    if game == "kuhn_poker":
        assert _value(t) == pytest.approx(-1 / 18, abs=1e-9)


@pytest.mark.parametrize("kind", [RootGadget.NONE, RootGadget.MAXMARGIN, RootGadget.RESOLVE])
def test_the_cached_sequence_form_is_the_core_s(kind: RootGadget) -> None:
    arenas = ([full_search(load_game("leduc_poker"), 5).arena] if kind is RootGadget.NONE
              else _rerooted("leduc_poker", 3))
    for arena in arenas:
        layer = _no_gadget(arena) if kind is RootGadget.NONE else _gadget(arena, kind)
        t = export_trunk(arena, layer, arena.searcher).tree
        cached, core = t._cache["sequence_form"], _fresh_sequence_form(t)
        for name in ("A", "E", "F"):
            a, b = getattr(cached, name), getattr(core, name)
            assert a.shape == b.shape, name
            np.testing.assert_allclose(a.toarray(), b.toarray(), atol=1e-12, err_msg=name)
        np.testing.assert_array_equal(cached.e, core.e)
        np.testing.assert_array_equal(cached.f, core.f)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_maxmargin_export_has_the_value_of_the_protocol_reading(game: str) -> None:
    for arena in _rerooted(game):
        ex = export_trunk(arena, _gadget(arena, RootGadget.MAXMARGIN), arena.searcher)
        other = arena_to_gametree(arena)
        assert ex.tree.num_nodes == other.num_nodes
        sign = 1.0 if arena.searcher == 0 else -1.0
        ours = sign * _value(ex.tree, ex.extra)
        theirs = sign * _value(other, gadget_extra(arena, other))
        assert ours == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_resolve_is_zero_exactly_when_maxmargin_is_not_negative(game: str) -> None:
    for arena in _rerooted(game):
        sign = 1.0 if arena.searcher == 0 else -1.0
        mm = export_trunk(arena, _gadget(arena, RootGadget.MAXMARGIN), arena.searcher)
        rs = export_trunk(arena, _gadget(arena, RootGadget.RESOLVE), arena.searcher)
        m = sign * _value(mm.tree, mm.extra)
        r = sign * _value(rs.tree, rs.extra)
        alpha = arena.roots.alpha[: arena.n_j]
        assert alpha.sum() == pytest.approx(1.0, abs=1e-12)
        if m >= -1e-9:
            assert r == pytest.approx(0.0, abs=1e-8)
        else:
            assert m - 1e-8 <= r <= float(alpha.min()) * m + 1e-8
    # thresholds with margin pushed down by a constant make Maxmargin negative on purpose
    arena = _rerooted(game, 1)[0]
    m_arena = arena.n_j
    sign = 1.0 if arena.searcher == 0 else -1.0
    base = export_trunk(arena, _gadget(arena, RootGadget.MAXMARGIN), arena.searcher)
    m0 = sign * _value(base.tree, base.extra)
    shift = abs(m0) + 1.0  # every t_J raised by this: the margin falls by exactly it
    layer = RootLayer(RootGadget.MAXMARGIN, arena.roots.threshold[:m_arena] + shift,
                      arena.roots.alpha[:m_arena].copy())
    mm = export_trunk(arena, layer, arena.searcher)
    assert sign * _value(mm.tree, mm.extra) == pytest.approx(m0 - shift, abs=1e-8)
    rs = export_trunk(arena, RootLayer(RootGadget.RESOLVE, layer.threshold, layer.alpha),
                      arena.searcher)
    r = sign * _value(rs.tree, rs.extra)
    assert m0 - shift - 1e-8 <= r < -1e-9


def _solve_both(ex: TrunkGame) -> np.ndarray:
    me = ex.searcher
    mine = solve_player(ex.tree, me, extra=ex.extra).strategy
    theirs = solve_player(ex.tree, 1 - me, extra=ex.extra).strategy
    out = mine.copy()
    opp = ex.tree.infoset_player[ex.tree.slot_infoset()] == 1 - me
    out[opp] = theirs[opp]
    return out


@pytest.mark.parametrize("kind", [RootGadget.MAXMARGIN, RootGadget.RESOLVE])
def test_write_back_puts_the_solution_where_the_search_reads_it(kind: RootGadget) -> None:
    for arena in _rerooted("leduc_poker", 3):
        layer = _gadget(arena, kind)
        ex = export_trunk(arena, layer, arena.searcher)
        s = _solve_both(ex)
        write_back(ex, arena, s)
        ok = ex.slot_of >= 0
        np.testing.assert_array_equal(arena.slots.strat[ex.slot_of[ok]], s[ok])
        m = arena.n_j
        t = ex.tree
        if kind is RootGadget.MAXMARGIN:
            o = int(t.infoset_offset[0])
            np.testing.assert_allclose(arena.roots.w[:m], s[o : o + m], atol=0)
        else:
            play = s[t.infoset_offset[:m] + PLAY]
            np.testing.assert_allclose(arena.roots.w[:m], layer.alpha * play, atol=0)
        w = arena.roots.w[:m]
        if w.sum() > 0:
            np.testing.assert_allclose(arena.slots.strat[:m], w / w.sum(), atol=1e-15)
        # the exported game read again from the arena plays what was written
        again = export_trunk(arena, layer, arena.searcher)
        np.testing.assert_array_equal(arena.slots.strat[again.slot_of[ok]], s[ok])
