"""Belief-set (P) speed and memory: ours against OpenSpiel's dark_chess, in the same run.

Scenario (deterministic): a random FoW game (python `random.Random(10)`, moves drawn uniformly
from the FoW move list) followed from black's side for 25 plies, with P capped at 10^6 stored
positions. At ply 25 black's P has more than 10^6 consistent positions, so the cap holds exactly
10^6 rows: that set gives bytes_per_position.

- belief_children_per_s: candidate children tested (make the move, compute black's observation,
  compare) per second over every update of the scenario, one thread, Python overhead included.
- belief_vs_openspiel: the largest opponent-ply update of the scenario, ours over the same loop
  written against OpenSpiel `dark_chess` from Python (for each parent: `legal_actions()`, then per
  action `clone()`, `apply_action`, `observation_string(black)`, compare), timed on a uniform
  sample of its parents. Building an OpenSpiel state from each parent's FEN is left out of the
  timing (it would only make OpenSpiel slower).
- belief_threads2_speedup: the same largest update on two threads (`BeliefConfig.threads`: one
  filters the next parents while the other inserts the children found), over one thread.
- belief_cut_threads2_ratio: parents that update visits before a deadline 0.3 s away (about a
  1 s move's belief stage, where the engine cuts it) on two threads, over one.
- bytes_per_position: bytes of the stored rows over their number, at 10^6 positions.
- belief_picture_ms: the engines' picture of P for the review (`caligo.agents.belief_map`:
  `piece_shares` of a uniform sample of 4,096 positions, JSON-ready), at 10^6 positions;
  median of 51 runs, each with a fresh sample.
"""

from __future__ import annotations

import dataclasses
import random
import time

import numpy as np

from caligo.fow.belief import BeliefConfig, BeliefSet
from caligo.fow.movegen import legal_moves
from caligo.fow.observation import observe
from caligo.fow.position import BLACK, STARTING_FEN, UNDO_WORDS, from_fen, make_move, to_fen

SEED = 10
PLIES = 25
CAP = 1_000_000
CUT_SECONDS = 0.3  # about a 1 s move's belief stage (40% of its plan)


def _scenario() -> tuple[list[tuple[int, float, int, int]], BeliefSet, tuple[BeliefSet, str]]:
    """Run the scenario; return per-update (ply, seconds, tested, |P|), the final P, and the
    parent set and target (OpenSpiel form) of the largest opponent-ply update."""
    rng = random.Random(SEED)
    pos = from_fen(STARTING_FEN)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    belief = BeliefSet.initial(BLACK, config=BeliefConfig(max_positions=CAP))
    rows: list[tuple[int, float, int, int]] = []
    biggest: tuple[int, BeliefSet, np.ndarray] | None = None
    for ply in range(1, PLIES + 1):
        move = rng.choice(legal_moves(pos))
        mover = int(pos[12])
        make_move(pos, move, undo)
        obs = observe(pos, BLACK)
        before = belief
        t = time.perf_counter()
        if mover == BLACK:
            belief = belief.update_own_move(move, obs)
        else:
            belief = belief.update_opponent_move(obs)
        dt = time.perf_counter() - t
        assert belief.last is not None
        rows.append((ply, dt, belief.last.tested, len(belief)))
        if mover != BLACK and before.exact:
            if biggest is None or belief.last.tested > biggest[0]:
                biggest = (belief.last.tested, before, pos.copy())
    assert biggest is not None
    return rows, belief, (biggest[1], to_fen(biggest[2]))


def picture_ms(belief: BeliefSet, runs: int = 51) -> tuple[float, float]:
    """Median milliseconds of `piece_shares` alone and of the whole `belief_map` picture of
    `belief` (a fresh sample each run)."""
    from caligo.agents.belief_map import belief_map
    from caligo.fow.belief import piece_shares

    shares: list[float] = []
    whole: list[float] = []
    for run in range(runs):
        t = time.perf_counter()
        piece_shares(belief, rng=np.random.default_rng(run))
        shares.append(1000.0 * (time.perf_counter() - t))
        t = time.perf_counter()
        belief_map(belief, np.random.default_rng(run))
        whole.append(1000.0 * (time.perf_counter() - t))
    return float(np.median(shares)), float(np.median(whole))


def _ours_rate(parents: BeliefSet, true_fen: str, threads: int = 1) -> float:
    """Children tested per second by one opponent-ply update of `parents` on `threads`."""
    obs = observe(from_fen(true_fen), BLACK)
    parents = dataclasses.replace(parents,
                                  config=dataclasses.replace(parents.config, threads=threads))
    t = time.perf_counter()
    after = parents.update_opponent_move(obs)
    dt = time.perf_counter() - t
    assert after.last is not None
    return after.last.tested / dt


def _visited_by(parents: BeliefSet, true_fen: str, threads: int, seconds: float) -> int:
    """Parents an update of `parents` on `threads` visits before a deadline `seconds` away (a
    move's belief stage: the update is cut there)."""
    from caligo.limits import Deadline

    obs = observe(from_fen(true_fen), BLACK)
    parents = dataclasses.replace(parents,
                                  config=dataclasses.replace(parents.config, threads=threads))
    part = parents.update_opponent_move(obs, Deadline.within(seconds))
    if part.pending is None:
        return len(parents)
    return part.pending.update.exp.visited


def _openspiel_states(parents: BeliefSet, n_parents: int) -> list[object]:
    import pyspiel

    sample = parents.sample(n_parents, np.random.default_rng(0))
    return [pyspiel.load_game("dark_chess", {"fen": to_fen(p)}).new_initial_state() for p in sample]


def _openspiel_rate(states: list[object], true_fen: str) -> float:
    """The same loop in OpenSpiel: children tested per second over `states` (parents)."""
    import pyspiel

    black = 0  # OpenSpiel's player 0 is black
    target = (
        pyspiel.load_game("dark_chess", {"fen": true_fen})
        .new_initial_state()
        .observation_string(black)
    )
    tested = 0
    hits = 0
    t = time.perf_counter()
    for state in states:
        for action in state.legal_actions():  # type: ignore[attr-defined]
            child = state.clone()  # type: ignore[attr-defined]
            child.apply_action(action)
            if child.observation_string(black) == target:
                hits += 1
            tested += 1
    return tested / (time.perf_counter() - t)


def measure(short: bool) -> dict[str, float]:
    """Run the belief benchmark; print a table; return the three numbers of `caligo bench fow`."""
    BeliefSet.initial(BLACK).update_opponent_move(
        observe(from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"), BLACK)
    )  # compile outside the timings
    rows, final, (parents, true_fen) = _scenario()
    seconds = sum(r[1] for r in rows)
    tested = sum(r[2] for r in rows)
    children_per_s = tested / seconds
    # interleaved, best of 3 each: other processes on the machine slow both alike
    states = _openspiel_states(parents, 150 if short else 600)
    ours = theirs = two = 0.0
    cut = [0, 0]  # parents visited in 0.3 s on one and on two threads
    for _ in range(3):
        ours = max(ours, _ours_rate(parents, true_fen))
        theirs = max(theirs, _openspiel_rate(states, true_fen))
        two = max(two, _ours_rate(parents, true_fen, threads=2))
        for k in (0, 1):
            cut[k] = max(cut[k], _visited_by(parents, true_fen, k + 1, CUT_SECONDS))
    bytes_per_position = final.nbytes / len(final)
    shares_ms, picture = picture_ms(final)

    print("FoW belief set P (black's side of a random game, seed 10, cap 10^6)")
    print(f"{'ply':>4} {'seconds':>9} {'children tested':>16} {'|P|':>9}")
    for ply, dt, n, size in rows:
        if n >= 10_000:
            print(f"{ply:>4} {dt:>9.3f} {n:>16,} {size:>9,}")
    print(f"  all {len(rows)} updates: {tested:,} children in {seconds:.2f} s")
    print(
        f"  belief_children_per_s  {children_per_s:>14,.0f}   (target >= 2,000,000)\n"
        f"  largest opponent ply   {ours:>14,.0f} /s ours, {theirs:,.0f} /s OpenSpiel\n"
        f"  belief_vs_openspiel    {ours / theirs:>14.1f}   (target >= 20)\n"
        f"  on two threads         {two:>14,.0f} /s: belief_threads2_speedup {two / ours:.2f}"
        f" over one (a filter thread ahead of the inserting one; the limit is 2)\n"
        f"  cut at {CUT_SECONDS} s         {cut[1]:>14,} of {len(parents):,} parents on two"
        f" threads, {cut[0]:,} on one: belief_cut_threads2_ratio {cut[1] / cut[0]:.2f}\n"
        f"  bytes_per_position     {bytes_per_position:>14.1f}   at {len(final):,} positions"
        f" ({final.size_seen:,} consistent; exact={final.exact}) (target <= 128)\n"
        f"  belief_picture_ms      {picture:>14.2f}   at {len(final):,} positions, sample 4,096"
        f" (piece_shares alone {shares_ms:.2f} ms)"
    )
    return {
        "belief_children_per_s": float(children_per_s),
        "belief_vs_openspiel": float(ours / theirs),
        "belief_threads2_speedup": float(two / ours),
        "belief_cut_threads2_ratio": float(cut[1] / cut[0]),
        "bytes_per_position": float(bytes_per_position),
        "belief_picture_ms": picture,
    }


if __name__ == "__main__":
    import sys

    print(measure("--short" in sys.argv))
