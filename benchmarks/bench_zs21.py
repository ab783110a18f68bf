"""Benchmark the ZS21 agent: its speed at 1 s a move in FoW chess, and its subgame solves
against `caligo.subgame`'s on Leduc.

Measured in one run:

- FoW chess, Stockfish leaves, 1 s a move (the agent's own budget: 0.77 s): the agent
  plays White and Black against uniformly random moves, from fixed seeds, for up to 20 of its
  moves a game (4 games, `--games N`; 1 game of 8 moves with --short); `--penalty` picks the
  information term's form, to see how often each ends a move in Resolve. Per move: trunk
  nodes, deepening iterations, leaf expansions, LP solves, depth, |P|; overall LP solves per
  second of LP time, leaf expansions per second and the LP's share of the time. Issue 9 asks
  for "LP solves per second, trunk nodes per move at 1 s"; Zhang & Sandholm 2021 gives no figure to
  compare with (ZS21 ran on 6 cores, appendix D).
- The trunk LP: one HiGHS call reading the opponent's plan from the duals (what ZS21 runs)
  against `caligo.core.lp.solve_player` once per player, on the same FoW trunk (White's first
  move after 1,000 leaf expansions with the built-in evaluator; 300 with --short).
- Leduc, the same nested 1-KLSS subgames solved two ways (the tests check they give the same
  strategies): ZS21 on its arena (export to the sequence form, HiGHS) against
  `caligo.subgame.nested` (`make_subgame` builds each gadget as a `GameTree`, HiGHS). Seconds per
  subgame solve of each, and the ratio (caligo.subgame / ZS21).

Last line: `zs21 lp_solves_per_s=A trunk_nodes_1s=N expansions_per_s=E depth_1s=D
belief_1s=P lp_vs_two_solves=Q leduc_subgame_ratio=R`.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from caligo.cli.cmd_bench import bench_parser, short_run


def _fow(games: int, moves: int, seconds: float, penalty: str) -> list[dict[str, Any]]:
    """Decision.info of the agent's moves in games against random moves."""
    from caligo.agents.base import Clock, TcKind, TimeControl
    from caligo.agents.zs21 import Penalty, ZS21Config
    from caligo.agents.zs21.agent import EvaluatorChoice, ZS21Agent
    from caligo.fow.game import Game
    from caligo.fow.observation import observe
    from caligo.fow.position import STARTING_FEN

    agent = ZS21Agent(ZS21Config(penalty=Penalty(penalty)), EvaluatorChoice.STOCKFISH)
    clock = Clock(TcKind.MOVETIME, movetime_ms=round(seconds * 1000))
    infos: list[dict[str, Any]] = []
    try:
        for g in range(games):
            me = g % 2
            rng = random.Random(g)
            truth = Game()
            agent.new_game(me, STARTING_FEN, TimeControl.parse(f"mt={seconds}"), g)
            made = 0
            while not truth.is_over() and made < moves:
                legal = truth.legal_moves()
                if truth.ply % 2 == me:
                    dec = agent.act(legal, clock)
                    move = dec.move
                    infos.append(dict(dec.info))
                    made += 1
                else:
                    move = rng.choice(legal)
                truth.push(move)
                own = move if (truth.ply - 1) % 2 == me else None
                agent.observe(observe(truth.position, me), own)
    finally:
        agent.close()
    return infos


def _lp(expansions: int) -> tuple[int, float, float]:
    """(trunk nodes, one LP with the opponent from its duals, `solve_player` for each player):
    seconds, best of three, on the trunk of White's first move after `expansions` expansions
    with the built-in evaluator."""
    import numpy as np

    from caligo.agents.fow_belief import FowBelief
    from caligo.agents.fow_search import FowEvaluator, FowSearchGame
    from caligo.agents.zs21 import ZS21Budget, ZS21Config, ZS21Search, trunk_lp
    from caligo.core.lp import solve_player
    from caligo.fow.evaluate import SimpleEvaluator
    from caligo.search.construct import start_key
    from caligo.search.export import export_trunk
    from caligo.search.game import KeyMode

    game = FowSearchGame()
    s = ZS21Search(game, FowEvaluator(game, SimpleEvaluator()), ZS21Config(), 0)
    s.start(0)
    key = start_key(int(game.describe(np.array([0])).obs[0, 0]), KeyMode.INCREMENTAL)
    s.decide(FowBelief(game, 0), key, np.random.default_rng(0),
             ZS21Budget(seconds=None, expansions=expansions), 0)
    tr = export_trunk(s.arena, s.layer, 0, s.penalty)
    ours = ref = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        trunk_lp.solve(tr, s.arena)
        t1 = time.perf_counter()
        solve_player(tr.tree, 0, extra=tr.extra)
        solve_player(tr.tree, 1, extra=tr.extra)
        t2 = time.perf_counter()
        ours, ref = min(ours, t1 - t0), min(ref, t2 - t1)
    return tr.tree.num_nodes, ours, ref


def _leduc(short: bool) -> tuple[float, float, int, int]:
    """(ZS21 seconds per decision, caligo.subgame seconds per solve, decisions, solves)."""
    from caligo.agents.zs21 import Penalty, StartMode, ZS21Budget, ZS21Config
    from caligo.agents.zs21.tree import zs21_strategy
    from caligo.core.games import load_game
    from caligo.core.lp import solve_player
    from caligo.subgame.gadget import GadgetKind, SubgameOptions
    from caligo.subgame.nested import NestedConfig, nested_solve

    tree = load_game("kuhn_poker" if short else "leduc_poker")
    cfg = ZS21Config(start=StartMode.SOLVE_FROM_START, penalty=Penalty.OFF, shuffle_merge=False,
                     budget=ZS21Budget(expansions=10**7), expand_all=True, particles=0)
    t0 = time.perf_counter()
    ours = zs21_strategy(tree, cfg, 0)
    t_ours = time.perf_counter() - t0
    opts = SubgameOptions(kind=GadgetKind.MAXMARGIN, k=1, reach=True, merge_transpositions=True)
    bp = solve_player(tree, 0).strategy
    t0 = time.perf_counter()
    res = nested_solve(tree, bp, NestedConfig(options=opts))
    t_ref = time.perf_counter() - t0
    return t_ours / ours.decisions, t_ref / max(res.solves, 1), ours.decisions, res.solves


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the figures and the machine-readable last line."""
    p = bench_parser("zs21", __doc__)
    p.add_argument("--penalty", default="text", choices=["text", "algorithm", "off"],
                   help="the information term's form (docs/zs21.md)")
    p.add_argument("--games", type=int, default=None, help="FoW games (default 4, 1 short)")
    args = p.parse_args(list(argv or []))
    short = short_run(args)
    games, moves = (1, 8) if short else (4, 20)
    if args.games is not None:
        games = max(int(args.games), 1)
    infos = _fow(games, moves, 1.0, args.penalty)
    lp_s = sum(i["lp_seconds"] for i in infos)
    solves = sum(i["lp_solves"] for i in infos)
    elapsed = sum(i["elapsed"] for i in infos)
    exps = sum(i["expansions"] for i in infos)

    def mean(key: str) -> float:
        return statistics.fmean(float(i[key]) for i in infos)

    print(f"fow     {len(infos)} moves at 1 s (Stockfish leaves, {games} games vs random)")
    for key in ("trunk_nodes", "iterations", "expansions", "lp_solves", "depth", "belief_size",
                "particles", "carried_nodes", "elapsed"):
        vals = [float(i[key]) for i in infos]
        print(f"        {key:14s} mean {statistics.fmean(vals):10.1f}   median "
              f"{statistics.median(vals):10.1f}   max {max(vals):10.1f}")
    resolve = sum(i["gadget"] == "resolve" for i in infos) / len(infos)
    print(f"        LP solves/s of LP time {solves / lp_s:.1f}; LP share of the move "
          f"{lp_s / elapsed:.0%}; leaf expansions/s {exps / elapsed:.0f}; Resolve at the end of "
          f"{resolve:.0%} of the moves")
    nodes, lp1, lp2 = _lp(300 if short else 1000)
    print(f"lp      {nodes}-node trunk: one LP + duals {lp1 * 1e3:.1f} ms, solve_player for each "
          f"player {lp2 * 1e3:.1f} ms, ratio {lp2 / lp1:.2f}")
    ours, ref, n_ours, n_ref = _leduc(short)
    game = "kuhn" if short else "leduc"
    print(f"{game:8s}ZS21 arena {ours * 1e3:.1f} ms per decision ({n_ours} decisions); "
          f"caligo.subgame {ref * 1e3:.1f} ms per solve ({n_ref} solves); ratio "
          f"{ref / ours:.2f}")
    print(f"zs21 lp_solves_per_s={solves / lp_s:.1f} trunk_nodes_1s={mean('trunk_nodes'):.0f} "
          f"expansions_per_s={exps / elapsed:.0f} depth_1s={mean('depth'):.1f} "
          f"belief_1s={mean('belief_size'):.0f} lp_vs_two_solves={lp2 / lp1:.2f} "
          f"leduc_subgame_ratio={ref / ours:.2f}")
    return 0
