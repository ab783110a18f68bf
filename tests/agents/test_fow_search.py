"""The FoW adapters of the search (`caligo.agents.fow_search`) against `caligo.fow` and
python-chess.

Expected values come from code we did not write for the adapter: the children, observations and
terminal verdicts from `caligo.fow.expand.expand_reference` (built from the public `caligo.fow`
API: `legal_moves`, `make_move`, `observe`, the referee's `Game`), transposition identity from
python-chess's X-FEN EPD (pieces, side, castling, en passant when a pawn can capture), forcing
moves from python-chess's `is_capture` / `gives_check` / `promotion`, and the belief from
`caligo.fow.BeliefSet` itself. The root-set property runs a real `SearchAgent` search at every
decision of random games and looks for the referee's true position among the subgame's roots.
"""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from caligo.agents.fow_belief import REDRAW_MIN, TOP_UP, FowBelief
from caligo.agents.fow_search import (
    FowEvaluator,
    FowSearchError,
    FowSearchGame,
    compact_arena,
    evaluator_factory,
)
from caligo.errors import CaligoError
from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.evaluate import SimpleEvaluator
from caligo.fow.expand import Terminal, expand_reference, observation_key
from caligo.fow.game import Game
from caligo.fow.observation import Observation, observe
from caligo.fow.plausible import hint_bins, log_weights
from caligo.fow.position import W_STM, move_to_uci, to_fen, zobrist_key
from caligo.limits import Deadline
from caligo.search.agent import SearchAgent
from caligo.search.config import Iterations, SearchConfig
from caligo.search.game import TERMINAL, KeyMode
from tests.clocks import Ticker
from tests.conftest import SHORT
from tests.fow.test_expand import random_positions
from tests.fow.test_stockfish import needs_stockfish


def _parents(n: int, seed: int) -> tuple[FowSearchGame, np.ndarray]:
    game = FowSearchGame()
    pos = np.array(list(random_positions(n, seed)), dtype=np.uint64)
    return game, game.add_positions(pos)


@pytest.mark.parametrize("seed", [0, 1])
def test_children_observations_terminals_equal_caligo_fow(seed: int) -> None:
    n = 300 if SHORT else 1500
    game, parents = _parents(n, seed)
    seen = {"terminal": 0, "draw": 0, "children": 0}
    for lo in range(0, parents.size, 97):  # uneven batches
        batch_states = parents[lo : lo + 97]
        batch = game.expand(batch_states)
        info = game.describe(batch.state)
        np.testing.assert_array_equal(info.obs, batch.obs)
        np.testing.assert_array_equal(info.player, batch.player)
        np.testing.assert_array_equal(info.utility, batch.utility)
        kids = game.positions(batch.state)
        for i, s in enumerate(batch_states.tolist()):
            ref = expand_reference(game.positions(np.array([s]))[0])
            a, b = int(batch.ptr[i]), int(batch.ptr[i + 1])
            assert b - a == len(ref), to_fen(game.positions(np.array([s]))[0])
            for k, r in enumerate(ref):
                c = a + k
                assert int(batch.action[c]) == r.move
                np.testing.assert_array_equal(kids[c], r.position)
                assert int(batch.obs[c, 0]) == observation_key(r.white_obs)
                assert int(batch.obs[c, 1]) == observation_key(r.black_obs)
                want = TERMINAL if r.terminal != Terminal.NONE else int(r.position[W_STM])
                assert int(batch.player[c]) == want
                assert float(batch.utility[c]) == r.value
                seen["terminal"] += r.terminal == Terminal.KING_CAPTURE
                seen["draw"] += r.terminal == Terminal.NO_MOVES
            seen["children"] += len(ref)
        assert batch.chance_prob.shape == batch.state.shape
    assert seen["terminal"] > 0 and seen["children"] > 10 * n


def test_state_key_is_transposition_identity() -> None:
    """Equal Zobrist keys exactly when python-chess's X-FEN EPD is equal."""
    game, parents = _parents(200 if SHORT else 800, 3)
    batch = game.expand(parents)
    keys = game.state_key(batch.state)
    epds = [chess.Board(to_fen(p)).epd(en_passant="xfen") for p in game.positions(batch.state)]
    by_key: dict[int, str] = {}
    by_epd: dict[str, int] = {}
    for k, e in zip(keys.tolist(), epds, strict=True):
        assert by_key.setdefault(k, e) == e
        assert by_epd.setdefault(e, k) == k
    assert len(by_key) < keys.size  # random playouts do transpose
    assert int(keys[0]) == int(zobrist_key(game.positions(batch.state[:1])[0]))


def test_forcing_moves_match_python_chess() -> None:
    game, parents = _parents(150 if SHORT else 600, 4)
    batch = game.expand(parents)
    par = np.repeat(parents, np.diff(batch.ptr))
    ours = game.forcing(par, batch.state, batch.action)
    checked = 0
    for i in range(batch.state.size):
        board = chess.Board(to_fen(game.positions(par[i : i + 1])[0]))
        move = chess.Move.from_uci(move_to_uci(int(batch.action[i])))
        if int(batch.player[i]) == TERMINAL:
            continue  # a king capture; python-chess cannot play it
        want = board.is_capture(move) or move.promotion is not None or board.gives_check(move)
        assert bool(ours[i]) == want, (board.fen(), move.uci())
        checked += 1
    assert checked > 1000 and 0 < int(ours.sum()) < ours.size


def test_store_grows_compacts_and_rejects_bad_ids() -> None:
    game = FowSearchGame(capacity=16)
    b = game.expand(np.array([0]))
    b2 = game.expand(b.state)
    assert game.size == 1 + 20 + 400
    before = game.positions(b2.state[[5, 7]])
    new = game.compact(b2.state[[7, 5, 7]])
    assert new.tolist() == [2, 1, 2] and game.size == 3
    np.testing.assert_array_equal(game.positions(np.array([1, 2])), before)
    with pytest.raises(FowSearchError, match="state ids"):
        game.describe(np.array([3]))
    with pytest.raises(CaligoError):
        game.positions(np.array([-1]))
    over = game.add_positions(game.positions(np.array([0])))
    pos = game.positions(over)
    pos[0, 5] = 0  # no white king
    dead = game.add_positions(pos)
    with pytest.raises(FowSearchError, match="game is over"):
        game.expand(dead)
    assert game.describe(dead).player[0] == TERMINAL and game.describe(dead).utility[0] == -1.0


def test_concurrent_expansions_write_disjoint_rows() -> None:
    import threading

    game, parents = _parents(120, 5)
    out: list = [None, None]

    def work(i: int) -> None:
        out[i] = game.expand(parents)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive()
    a, b = out
    assert not np.intersect1d(a.state, b.state).size
    np.testing.assert_array_equal(game.positions(a.state), game.positions(b.state))


def test_evaluator_adapter_matches_the_leaf_evaluator() -> None:
    game, parents = _parents(60, 6)
    batch = game.expand(parents)
    simple = SimpleEvaluator()
    ev = FowEvaluator(game, simple)
    np.testing.assert_array_equal(ev.children(parents, batch),
                                  simple.evaluate(game.positions(batch.state)))

    class PerLeaf:  # the StockfishPool call pattern: one children() call per leaf
        calls = 0

        def children(self, parent, children, moves, out=None):  # type: ignore[no-untyped-def]
            PerLeaf.calls += 1
            return simple.children(parent, children, moves, out)

        def evaluate(self, positions, out=None):  # type: ignore[no-untyped-def]
            return simple.evaluate(positions, out)

        def close(self) -> None:
            pass

    ev2 = evaluator_factory(game, PerLeaf())()
    np.testing.assert_array_equal(ev2.children(parents, batch), ev.children(parents, batch))
    assert PerLeaf.calls == parents.size
    np.testing.assert_array_equal(ev2.states(parents), simple.evaluate(game.positions(parents)))
    assert ev.width == 1 and ev2.width == 1


@needs_stockfish
def test_a_two_engine_pool_splits_the_leaves_of_a_call() -> None:
    """`FowEvaluator.children` over a pool of width 2 (the agent's own call): each engine
    scores a contiguous half of the 60 leaves, with the values one engine gives them (the
    reference: the same pool's slot-0 engine alone, bound as an expander; up to Stockfish's
    drift between call orders, tests/fow/test_stockfish.py, and an expander keeps to its
    own engine)."""
    from caligo.fow.stockfish import SlotPool, StockfishConfig

    game, parents = _parents(60, 6)
    batch = game.expand(parents)
    with SlotPool(StockfishConfig(cache_entries=0)) as pool:
        pool.start(2)
        ev = FowEvaluator(game, pool)
        assert ev.width == 2
        spread = ev.children(parents, batch)
        calls = [pool._slots[s].calls for s in (0, 1)]
        stats = pool.stats()
        # a MultiPV call a leaf Stockfish can take and the own calls: 30 leaves an engine
        assert sum(calls) == stats.leaf_calls + stats.own_calls and stats.leaf_calls >= 50
        assert min(calls) >= 25
        pool.bind(0)
        assert ev.width == 1
        alone = ev.children(parents, batch)
        assert pool._slots[1].calls == calls[1]  # an expander keeps to its own engine
    # depth-1 MultiPV scores of random positions drift more than single ones: 2 of 1,727
    # children moved by 0.5 and 0.8 between the two call orders
    off = np.abs(spread - alone)
    assert np.median(off) < 0.01 and np.mean(off > 0.2) < 0.01


def _play_random(seed: int, plies: int) -> Game:
    rng = random.Random(seed)
    g = Game()
    for _ in range(plies):
        if g.is_over():
            break
        g.push(rng.choice(g.legal_moves()))
    return g


def test_belief_follows_the_belief_set_and_samples_outside_the_tree() -> None:
    g = _play_random(11, 6)
    game = FowSearchGame()
    bel = FowBelief(game, 1)
    ref = bel.set
    replay = Game()
    for move in g.moves:
        replay.push(move)
        obs = observe(replay.position, 1)
        own = move if replay.ply % 2 == 0 else None
        if own is None:
            ref = ref.update_opponent_move(obs)
        else:
            ref = ref.update_own_move(move, obs)
        bel.expect(obs)
        bel.update(observation_key(obs), own)
    assert sorted(bel.set.fens()) == sorted(ref.fens()) and bel.exact and bel.size() > 3
    rng = np.random.default_rng(0)
    every = bel.states()
    keys = game.state_key(every)
    exclude = keys[::2]
    got = bel.sample(bel.size(), exclude, rng)
    assert sorted(game.state_key(got).tolist()) == sorted(keys[1::2].tolist())
    few = bel.sample(2, exclude, rng)
    assert few.size == 2 and not np.isin(game.state_key(few), exclude).any()
    np.testing.assert_array_equal(bel.weights(few), [1.0, 1.0])
    with pytest.raises(FowSearchError, match="does not match"):
        bel.update(12345, None)
    # uniform over the free positions: a chi-square test of 2,000 draws of 10 (scipy)
    from scipy.stats import chisquare

    counts = dict.fromkeys(keys[1::2].tolist(), 0)
    for _ in range(2000):
        for k in game.state_key(bel.sample(10, exclude, rng)).tolist():
            counts[k] += 1
    assert chisquare(list(counts.values())).pvalue > 1e-4


def test_belief_reports_its_memory_cap() -> None:
    game = FowSearchGame()
    bel = FowBelief(game, 1, BeliefConfig(max_positions=5))
    g = Game()
    g.push_uci("e2e4")
    bel.update(observe(g.position, 1), None)
    assert bel.size() == 5 and not bel.exact
    assert FowBelief(game, 0).exact



def _random_game(seed: int, plies: int = 80) -> list[tuple[Observation, int | None]]:
    """Black's (observation, own move or None) after each ply of a random game."""
    rng = random.Random(seed)
    g = Game()
    out: list[tuple[Observation, int | None]] = []
    while not g.is_over() and g.ply < plies:
        move = rng.choice(g.legal_moves())
        g.push(move)
        out.append((observe(g.position, 1), None if g.ply % 2 == 1 else int(move)))
    return out


def _feed(bel: FowBelief, plies: list[tuple[Observation, int | None]],
          repair_by: Deadline | None = None, first: bool = False) -> int | None:
    """Follow `plies` (each White ply settled as in a move, with `repair_by` until a replay
    began; with `first`, stop there); the index of the ply whose update first lost the
    truth, or None."""
    began = None
    for i, (obs, own) in enumerate(plies):
        bel.update(obs, own)
        if own is None:
            bel.settle(None, None, repair_by if began is None else None)
        if began is None and (bel.lost or bel.repairs or bel.redraws):
            began = i
            if first:
                break
    return began


Plies = list[tuple[Observation, int | None]]


def _replay_case(at_own_ply: bool = False) -> tuple[Plies, int]:
    """A random game whose 2-position P first loses the truth at ply `i` (White's ply, a
    settle; or with `at_own_ply`, Black's own), 5+ plies in, and whose replay with no deadline
    survives two more plies: (its plies, i)."""
    game = FowSearchGame()
    for seed in range(80):
        plies = _random_game(seed)
        probe = FowBelief(game, 1, BeliefConfig(max_positions=2))
        i = _feed(probe, plies, first=True)
        if i is None or i < 4 or (plies[i][1] is not None) != at_own_ply:
            continue
        free = FowBelief(game, 1, BeliefConfig(max_positions=2))
        _feed(free, plies[: i + 3])
        if not free.lost and free.repairs == 1:
            return plies, i
    pytest.fail(f"no game of 80 lost the truth from a 2-position P (at_own_ply={at_own_ply})")


def _observes(bel: FowBelief, obs: Observation) -> bool:
    """Every position of P gives `obs` (Black's view)."""
    return len(bel.set) > 0 and all(observe(p, 1) == obs for p in bel.set.positions())


def _ply_clock(monkeypatch: pytest.MonkeyPatch) -> Ticker:
    """A fake clock that every belief update (a replayed ply) moves on by 1 s."""
    clock = Ticker()

    def timed(method):  # type: ignore[no-untyped-def]
        def run(*args, **kwargs):  # type: ignore[no-untyped-def]
            try:
                return method(*args, **kwargs)
            finally:
                clock.t += 1.0
        return run

    monkeypatch.setattr(BeliefSet, "update_opponent_move", timed(BeliefSet.update_opponent_move))
    monkeypatch.setattr(BeliefSet, "update_own_move", timed(BeliefSet.update_own_move))
    return clock


def test_a_replay_that_cannot_finish_by_its_deadline_gives_way_to_a_redraw(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A capped P that lost the truth is replayed with new salts from the last exact P (up to
    a dozen capped updates: over a minute at the 2,000,000-position cap, more than a move's
    repair share). A replay that reaches its deadline (here after two replayed plies, on a
    fake clock) gives way to a P drawn afresh from the observation: P is available at once,
    consistent with the observation, and the game goes on from it. A replay that has the
    time repairs P instead. (A stopped replay used to go on at the next moves, P unavailable
    meanwhile: the agent played its emergency move, and a timed move's replay ran into the
    watchdog.)"""
    plies, i = _replay_case()
    game = FowSearchGame()
    free = FowBelief(game, 1, BeliefConfig(max_positions=2), redraw_min=1)
    _feed(free, plies[: i + 1])
    assert not free.lost and free.repairs == 1 and free.redraws == 0
    late = FowBelief(game, 1, BeliefConfig(max_positions=2), redraw_min=1)
    _feed(late, plies[:i])
    clock = _ply_clock(monkeypatch)
    # 1 s an update: the failed one (0 to 1), replayed plies at 1 and 2, then 3 + 1 >= 4
    stop = Deadline(clock.t + 4.0, clock.t + 4.0, clock)
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        assert _feed(late, plies[i : i + 1], stop) == 0
    assert "reached its deadline after 2 of" in caplog.text and "P redrawn" in caplog.text
    assert not late.lost and late.repairs == 0 and late.redraws == 1
    assert _observes(late, plies[i][0])
    _feed(late, plies[i + 1 : i + 3])  # Black's move, then White's
    assert not late.lost and _observes(late, plies[i + 2][0])


def test_a_replay_never_begins_a_ply_it_has_no_time_for(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """One capped update cannot be cut, so a replay begins its next ply only if the dearest ply
    it replayed would still end before its deadline: on a clock that every update moves on by
    1 s, a deadline 3.5 s after the failed update stops the replay after two plies, before
    the deadline (a third would have ended past it), and P is redrawn."""
    plies, i = _replay_case()
    late = FowBelief(FowSearchGame(), 1, BeliefConfig(max_positions=2), redraw_min=1)
    _feed(late, plies[:i])
    assert not late.lost
    clock = _ply_clock(monkeypatch)
    stop = Deadline(3.5, 3.5, clock)
    late.update(*plies[i])
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        late.settle(None, None, stop)  # the failed update (t = 1), then plies at 1 and 2
    assert "reached its deadline after 2 of" in caplog.text and "took 1000 ms" in caplog.text
    assert clock.t == 3.0 and not stop.passed()
    assert not late.lost and late.redraws == 1 and _observes(late, plies[i][0])


def test_a_replay_stops_within_its_first_ply_at_its_deadline(
        caplog: pytest.LogCaptureFixture) -> None:
    """The dearest-ply rule cannot bound a replay's first ply (there is no dearest yet: in a
    match one took 5.4 s of a 1 s move). An opponent's ply replayed stops at the deadline
    itself, and P is redrawn. Random game 1 at a 400-position cap loses the truth at Black's
    own ply (index 45): the replay, begun there, starts from an exact P of 286 positions, more
    than the update's first chunk of parents, so a deadline reached during that chunk leaves
    the update partial (a fake clock moved on by each reading)."""
    plies = _random_game(1)
    bel = FowBelief(FowSearchGame(), 1, BeliefConfig(max_positions=400), redraw_min=1)
    i = _feed(bel, plies, first=True)
    assert i is not None and plies[i][1] is not None and bel.repairing
    bel.update(*plies[i + 1])
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        bel.settle(None, None, Deadline(3.0, 3.0, Ticker(step=1.0)))
    assert "reached its deadline within ply 1 of" in caplog.text and "P redrawn" in caplog.text
    assert not bel.lost and bel.repairs == 0 and bel.redraws == 1
    assert _observes(bel, plies[i + 1][0])


def test_a_p_that_loses_the_truth_from_an_exact_set_is_redrawn_without_replays(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Replays differ only in what a capped update keeps. An update that fails from an exact P
    (in play: one that descends from a redraw, which never held the truth) fails the same way
    with every salt, so P is redrawn at once, and the update runs once, not four times. Here
    an uncapped P follows random game 3 for six plies and is then shown White's seventh ply
    of game 4: no position of P gives that observation."""
    plies, other = _random_game(3), _random_game(4)
    assert plies[6][1] is None and plies[6][0] != other[6][0]
    bel = FowBelief(FowSearchGame(), 1, redraw_min=1)
    _feed(bel, plies[:6])
    assert bel.exact and bel.repairs == bel.redraws == 0
    calls = []
    original = BeliefSet.update_opponent_move

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(BeliefSet, "update_opponent_move", counted)
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        bel.update(other[6][0], None)
        bel.settle()
    assert len(calls) == 1 and "no salt can change it" in caplog.text
    assert not bel.lost and bel.redraws == 1 and _observes(bel, other[6][0])


def _redrawn(last_seen: bool) -> tuple[FowBelief, list[tuple[Observation, int | None]]]:
    """The redraw of the test above (random game 3's P shown game 4's seventh ply), with or
    without `last_seen`; the belief and game 4's plies."""
    plies, other = _random_game(3), _random_game(4)
    bel = FowBelief(FowSearchGame(), 1, redraw_min=1, last_seen=last_seen)
    _feed(bel, plies[:6])
    bel.update(other[6][0], None)
    bel.settle()
    assert bel.redraws == 1 and _observes(bel, other[6][0])
    return bel, other


def test_a_redrawn_p_whose_guesses_are_all_refuted_is_redrawn_without_replays(
        caplog: pytest.LogCaptureFixture) -> None:
    """After the redraw above, Black follows game 4: the redrawn P (guesses, which the cap
    never thins) loses every position some plies later. Replays with other salts would
    repeat the same updates, so P is redrawn at once, and the warning says why instead of
    asking for a larger `max_positions`."""
    bel, other = _redrawn(False)
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        for obs, own in other[7:37]:
            bel.update(obs, own)
            if own is None:
                bel.settle()
                assert not bel.lost and _observes(bel, obs)
    assert bel.redraws >= 2 and bel.repairs == 0
    assert "every guess is refuted" in caplog.text and "no salt can change it" in caplog.text
    assert "the subsample of P" not in caplog.text and "replaying" not in caplog.text


def test_a_replay_that_drops_nothing_and_fails_is_not_tried_again(
        caplog: pytest.LogCaptureFixture) -> None:
    """Black's P follows random game 3 uncapped, but White's 13th ply is cut short (settled
    with no time, then given up: a subsample, `subsampled`) and then Black is shown game 4's
    15th ply. Other salts or more time could have kept the truth, so a replay from the last
    exact P runs; it completes the cut ply and fails at game 4's ply from an exact set, which
    no salt changes: P is redrawn after that one replay, not after three."""
    plies, other = _random_game(3), _random_game(4)
    bel = FowBelief(FowSearchGame(), 1, redraw_min=1)
    _feed(bel, plies[:12])
    bel.update(*plies[12])
    bel.settle(Deadline(0.5, 0.5, Ticker(step=1.0)))
    assert bel.set.partial
    assert not bel.finish(Deadline(0.0, 0.0, Ticker(step=1.0)))
    assert bel.cut == 1 and bel.set.subsampled
    bel.update(*plies[13])
    with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
        bel.update(other[14][0], None)
        bel.settle()
    assert "replaying 3 plies with new salts" in caplog.text
    assert "replay 1 of P lost it without dropping a position" in caplog.text
    assert bel.redraws == 1 and bel.repairs == 0 and _observes(bel, other[14][0])


def test_a_second_repair_from_the_same_base_tries_salts_not_tried_yet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that repaired a 2-position P follows one salt's line; when that line loses
    the truth again before P is exact, the next repair replays from the same base. The salts
    it tried before are lines already seen to fail there (the same updates give the same
    sets), so it must try others: no salt twice from one base (it used to start again at
    the first salt)."""
    tried: dict[int, list[int]] = {}  # the base's ply: the salted seeds replayed from it
    repairs: dict[int, int] = {}  # the base's ply: repairs begun from it
    salted, repair = FowBelief._salted, FowBelief._repair

    def spy_salted(self: FowBelief) -> BeliefSet:
        out = salted(self)
        tried.setdefault(self._base.ply, []).append(out.config.seed)
        return out

    def spy_repair(self: FowBelief, exc: Exception) -> None:
        repairs[self._base.ply] = repairs.get(self._base.ply, 0) + 1
        repair(self, exc)  # type: ignore[arg-type]

    monkeypatch.setattr(FowBelief, "_salted", spy_salted)
    monkeypatch.setattr(FowBelief, "_repair", spy_repair)
    game = FowSearchGame()
    for seed in range(80):
        tried.clear()
        repairs.clear()
        bel = FowBelief(game, 1, BeliefConfig(max_positions=2), redraw_min=1)
        for obs, own in _random_game(seed, 120):
            bel.update(obs, own)
            if own is None:
                bel.settle()
        again = [ply for ply, n in repairs.items() if n >= 2 and len(tried[ply]) >= 2]
        if again:
            for seeds in tried.values():
                assert len(seeds) == len(set(seeds)), seeds
            return
    pytest.fail("no game of 80 repaired a 2-position P twice from one base")


def test_a_cut_update_is_finished_on_one_thread_on_the_opponent_s_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """P's update in a move runs on P's threads (two here); the rest of a cut update, finished
    after our move while the opponent thinks (`finish`), and our own move's update take one
    core, whatever the config says: the opponent's search has the other."""
    import threading

    import caligo.fow.belief_update as update

    monkeypatch.setattr(update, "MIN_SPLIT", 1)  # any update would split
    on: list[bool] = []  # per round: filtered on the calling thread?
    filter_ = update._Lane.filter
    me = threading.get_ident()

    def recording(self: update._Lane, exp: update._Expansion, start: int, end: int) -> None:
        on.append(threading.get_ident() == me)
        filter_(self, exp, start, end)

    monkeypatch.setattr(update._Lane, "filter", recording)
    plies = _random_game(3)
    bel = FowBelief(FowSearchGame(), 1, BeliefConfig(threads=2))
    _feed(bel, plies[:12])
    assert on and not all(on)  # the moves' updates used the helper
    bel.update(*plies[12])
    on.clear()
    bel.settle(Deadline(0.5, 0.5, Ticker(step=1.0)))  # in our move: cut after a round or two
    assert bel.set.partial and on and not any(on)
    on.clear()
    assert bel.finish()  # the opponent's time
    assert not bel.set.partial and on and all(on)
    bel.update(*plies[13])
    bel.update(*plies[14])
    bel.settle(Deadline(0.5, 0.5, Ticker(step=1.0)))
    assert bel.set.partial
    on.clear()
    bel.update(*plies[15])  # our own move's update finishes the cut one: the opponent's time
    assert not bel.set.partial and on and all(on)


def test_a_redraw_with_last_seen_puts_pieces_where_they_were_last_seen() -> None:
    """The redraw of the test above, with and without `last_seen`: Black has not seen
    White's king since the start, so with the prior about STAY's chance of the redrawn
    positions (over 60%, as their first age bin says, less the draws the observation
    rejects) have it on e1, and uniformly only a few; both Ps give the observation."""
    shares = []
    for last_seen in (False, True):
        bel, other = _redrawn(last_seen)
        kings = bel.set.positions()[:, 5]  # White's king
        shares.append(float(np.mean(kings == np.uint64(1 << 4))))
    assert (other[6][0].fog >> 4) & 1  # e1 is in Black's fog
    assert shares[0] < 0.2 < 0.5 < shares[1], shares


def test_with_last_seen_a_redrawn_p_is_topped_up_while_it_thins() -> None:
    """After the redraw above, Black follows game 4 for 30 more plies. Without `last_seen`
    the redrawn P thins with every observation (to a few positions, then none, and is
    redrawn); with it, P is topped up to `TOP_UP` positions after any opponent ply that
    leaves fewer, with fresh draws that give the observation, like every survivor."""
    smallest = []
    for last_seen in (False, True):
        bel, other = _redrawn(last_seen)
        sizes = []
        for obs, own in other[7:37]:
            bel.update(obs, own)
            if own is None:
                bel.settle()
                assert not bel.lost and _observes(bel, obs)
                sizes.append(len(bel.set))
        smallest.append(min(sizes))
        assert (bel.top_ups > 0) is last_seen and ("belief_top_ups" in bel.report()) is last_seen
    assert smallest[0] < TOP_UP <= smallest[1], smallest


def test_a_replay_begun_by_our_own_move_waits_for_a_bound() -> None:
    """Our own move's update runs after the move, with no deadline: when it loses the truth
    the replay is only begun there (P unavailable), and runs at the next settle, within that
    move's repair stage (here none: it completes)."""
    plies, i = _replay_case(at_own_ply=True)
    bel = FowBelief(FowSearchGame(), 1, BeliefConfig(max_positions=2))
    _feed(bel, plies[:i])
    bel.update(*plies[i])
    assert bel.lost and bel.repairing and bel.repairs == 0
    bel.update(*plies[i + 1])
    bel.settle()
    assert not bel.lost and bel.repairs == 1


def test_p_is_redrawn_when_no_replay_survives(caplog: pytest.LogCaptureFixture) -> None:
    """A 2-position P soon loses the truth for every salt: P is then drawn afresh from the
    last observation and the opponent's material (`caligo.fow.reseed`; here with no floor on
    the redrawn P's size, `redraw_min=1`) instead of being given up, and the game goes on with
    it: after every later ply P is available again (a redraw or a repair at worst), every
    position in it gives the ply's observation, and the opponent has as many pieces in it as
    on the referee's board (a pawn promoted unseen is still counted as a pawn)."""
    game = FowSearchGame()
    for seed in range(40):
        plies = _random_game(seed, 120)
        g = _replayed_games(seed, 120)
        bel = FowBelief(game, 1, BeliefConfig(max_positions=2), redraw_min=1)
        with caplog.at_level("WARNING", logger="caligo.agents.fow_belief"):
            for k, (obs, own) in enumerate(plies):
                bel.update(obs, own)
                if own is None:
                    bel.settle()
                if bel.redraws and own is None:
                    assert not bel.lost
                    truth = g[k]
                    for pos in bel.set.positions():
                        assert observe(pos, 1) == obs
                        assert sum(int(pos[t]).bit_count() for t in range(6)) == \
                            sum(int(truth[t]).bit_count() for t in range(6))
        if bel.redraws:
            assert "P redrawn from the observation" in caplog.text
            assert "P is lost" not in caplog.text
            return
    pytest.fail("no game of 40 lost every replay of a 2-position P")


def test_a_redraw_the_memory_cap_cuts_to_a_few_guesses_gives_p_up(
        caplog: pytest.LogCaptureFixture) -> None:
    """With the default `REDRAW_MIN`, a 2-position cap would leave a redrawn P of 2 guesses,
    which a search trusts (redrawing at a 3-position cap lost to giving P up: Elo -70
    [-157, +8], 20 pairs); P is given up instead and the agent plays its emergency move."""
    game = FowSearchGame()
    for seed in range(40):
        bel = FowBelief(game, 1, BeliefConfig(max_positions=2))
        with caplog.at_level("ERROR", logger="caligo.agents.fow_belief"):
            for obs, own in _random_game(seed, 120):
                bel.update(obs, own)
                if own is None:
                    bel.settle()
        if "P is lost" in caplog.text:
            assert bel.lost and bel.redraws == 0
            assert f"fewer than {REDRAW_MIN}" in caplog.text
            return
    pytest.fail("no game of 40 lost every replay of a 2-position P")


def _replayed_games(seed: int, plies: int) -> list[np.ndarray]:
    """The true positions after each ply of `_random_game(seed, plies)`."""
    rng = random.Random(seed)
    g = Game()
    out = []
    while not g.is_over() and g.ply < plies:
        g.push(rng.choice(g.legal_moves()))
        out.append(np.array(g.position, dtype=np.uint64))
    return out


def _roots_hold_the_truth(seed: int, seat: int, plies: int) -> int:
    """Play a SearchAgent (seat) against random moves; at each decision where P is exact and
    at most min_roots, the true position must be a root of the searched subgame."""
    rng = random.Random(seed)
    game = FowSearchGame()
    bel = FowBelief(game, seat)
    cfg = SearchConfig(budget=Iterations(12), expansions=8, max_nodes=20_000,
                       seed=seed)
    agent = SearchAgent(game, bel, FowEvaluator(game, SimpleEvaluator()), cfg, capacity=20_000)
    assert game.key_mode is KeyMode.INCREMENTAL
    agent.new_game(seat)
    truth = Game()
    checked = 0
    while not truth.is_over() and truth.ply < plies:
        mover = truth.ply % 2
        if mover == seat:
            dec = agent.act()
            move = int(dec.action)
            assert move in truth.legal_moves()
            eng = agent._search
            assert eng is not None
            if bel.exact and bel.size() <= cfg.min_roots:
                roots = eng.arena.nodes.state[: eng.arena.n_roots]
                assert int(zobrist_key(truth.position)) in set(game.state_key(roots).tolist())
                checked += 1
        else:
            move = rng.choice(truth.legal_moves())
        truth.push(move)
        obs = observe(truth.position, seat)
        bel.expect(obs)
        agent.observe(observation_key(obs), move if mover == seat else None)
        if truth.ply % 8 == 0 and agent._search is not None:
            compact_arena(game, agent._search.arena)
    return checked


@pytest.mark.parametrize("seat", [0, 1])
def test_true_position_is_a_root_when_p_is_exact_and_small(seat: int) -> None:
    games = 4 if SHORT else 24
    checked = sum(_roots_hold_the_truth(100 * seat + s, seat, 80) for s in range(games))
    assert checked >= 3 * games


def test_weighed_roots_are_distinct_positions_of_p_drawn_by_plausibility() -> None:
    """With `weigh_roots`, `sample` still returns distinct positions of P outside `exclude`
    (python-chess's X-FEN identity through `state_key`, membership by `BeliefSet`), but
    drawn by `caligo.fow.plausible`'s weights: over 20 draws of 64 roots from Black's P of
    11,058 positions, their mean log weight is well above that of uniform draws (which the
    default still makes, rng for rng as before)."""
    plies = _random_game(2, 40)
    means = []
    for weigh in (False, True):
        game = FowSearchGame()
        bel = FowBelief(game, 1, weigh_roots=weigh)
        for obs, own in plies[:15]:
            bel.update(obs, own)
            if own is None:
                bel.settle()
        assert bel.size() > 10_000
        hints = bel._hints()
        assert hints
        exclude = game.state_key(bel.states()[:500])
        got = []
        for k in range(20):
            ids = bel.sample(64, exclude, np.random.default_rng(k))
            keys = game.state_key(ids)
            assert ids.size == 64 and np.unique(keys).size == 64
            assert not np.isin(keys, exclude).any()
            pos = game.positions(ids)
            assert all(bel.set.contains(p) for p in pos[:8])
            got.append(log_weights(pos, 1, hints, hint_bins(bel._seen, hints)))
        means.append(float(np.mean(got)))
    assert means[1] > means[0] + 0.5, means
