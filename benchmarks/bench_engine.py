"""FoW engine speed: Stockfish calls (python-chess beside), the search's growth, a 5 s tree.

Measured in one run (issue 9, "Speed"; targets for 2 cores):

- sf_call_ms: one `go depth 1` MultiPV 256 call over our raw pipes, with python-chess's
  `chess.engine` call on the same positions beside it (the reference; `_engine_eval.measure`,
  which also prints the leaf, expansion-kernel and built-in-evaluator figures). Target <= 0.8.
- expansions_per_s, nodes_per_s: `ObscuroAgent`'s threaded search (one solver thread, one
  expander thread with its Stockfish process, `StockfishPool` with own_call_cap = 8) deciding
  at twelve middlegame positions (`_engine_eval.parents`, each the game's start, so P = {it}
  and the decision is the whole search), 1 s per move: leaf expansions and tree nodes per
  second of search. Targets >= 1,000 and >= 30,000.
- builtin_nodes_per_s: the same searches with the built-in evaluator. Target >= 200,000.
- nodes_5s: tree nodes after one 5 s move with Stockfish (the mean over positions; one
  position with --short). Target >= 150,000 (Obscuro: 1,070,552 on average with 5 s per move
  on 10+ cores in C++, Obscuro, appendix D).

The Stockfish share of the expander's time, solver iterations per second and the same search
with two expander threads are printed beside. Wall-clock figures depend on the machine's load;
say what it was.

Last line: `engine sf_call_ms=T expansions_per_s=N1 nodes_per_s=N2 builtin_nodes_per_s=N3
nodes_5s=N4`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from caligo.cli.cmd_bench import bench_parser, short_run

HERE = Path(__file__).resolve().parent

PAPER = {"expansions_per_s": 6_000.0, "nodes_per_s": 180_000.0, "nodes_5s": 1_070_552.0}
"""Obscuro's figures (Obscuro, appendix D; per second derived in docs/design.md, "Obscuro's reported
numbers")."""
TARGETS = {"sf_call_ms": 0.8, "expansions_per_s": 1_000.0, "nodes_per_s": 30_000.0,
           "builtin_nodes_per_s": 200_000.0, "nodes_5s": 150_000.0}


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decide(fen: str, options: str, seconds: float) -> dict[str, float] | None:
    """One Obscuro decision at `fen` (the game's start) with `seconds` of move time (None, and
    a notice on stderr, when it was answered overdue)."""
    from caligo.agents.base import Clock, TcKind, TimeControl, legal_moves
    from caligo.agents.obscuro import ObscuroAgent
    from caligo.agents.registry import create
    from caligo.fow.observation import observe
    from caligo.fow.position import W_STM, from_fen

    pos = from_fen(fen)
    stm = int(pos[W_STM])
    ms = round(1000 * seconds)
    agent = create(f"obscuro:{options}" if options else "obscuro")
    assert isinstance(agent, ObscuroAgent)
    try:
        agent.new_game(stm, fen, TimeControl(TcKind.MOVETIME, movetime_ms=ms), seed=1)
        pool = agent._pool
        sf0 = pool.stats().engine_seconds if pool is not None else 0.0  # after process starts
        d = agent.act(legal_moves(observe(pos, stm)),
                      Clock(TcKind.MOVETIME, movetime_ms=ms, deadline_ms=ms))
        sf_s = pool.stats().engine_seconds - sf0 if pool is not None else 0.0
    finally:
        agent.close()
    info = d.info
    t = info["time_ms"]
    if "search_total" not in t:  # answered overdue: its work was still running
        print(f"  overdue answer at {fen} ({options}, {seconds:g} s): {t.get('total')} ms; "
              "left out of the rates", file=sys.stderr)
        return None
    run_s = (t["search_total"] - t["construct"]) / 1000.0
    return {
        "run_s": run_s,
        "expansions": float(info["expansions"]),
        "nodes": float(info["nodes"]),
        "iterations": float(info["iterations"]),
        "expand_s": t["expand"] / 1000.0,
        "sf_s": sf_s,
        "depth": float(info["depth"]),
    }


def search_speed(fens: list[str], options: str, seconds: float) -> dict[str, float]:
    """Mean rates over one decision per position."""
    rows = [r for f in fens if (r := decide(f, options, seconds)) is not None]
    if not rows:
        raise SystemExit(f"every decision with {options} was answered overdue")
    run = sum(r["run_s"] for r in rows)
    exp_s = sum(r["expand_s"] for r in rows)
    return {
        "expansions_per_s": sum(r["expansions"] for r in rows) / run,
        "nodes_per_s": sum(r["nodes"] for r in rows) / run,
        "iterations_per_s": sum(r["iterations"] for r in rows) / run,
        "sf_share": sum(r["sf_s"] for r in rows) / exp_s if exp_s > 0 else 0.0,
        "nodes": float(np.mean([r["nodes"] for r in rows])),
        "depth": float(np.mean([r["depth"] for r in rows])),
        "run_s": run / len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table with targets and references, end with the `engine ...` line."""
    args = bench_parser("engine", __doc__).parse_args(argv)
    short = short_run(args)
    ev = _load("_engine_eval")
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} (2-core figures move with it)")
    r = ev.measure(short)
    import chess

    fens = []
    for pos in ev.parents():
        from caligo.fow.position import to_fen

        fens.append(chess.Board(to_fen(pos)).fen(en_passant="fen"))
    if short:
        fens = fens[:3]
    secs = 1.0
    sf = search_speed(fens, "eval=stockfish", secs)
    sf2 = search_speed(fens[:3], "eval=stockfish,expanders=2", secs)
    simple = search_speed(fens, "eval=simple", secs)
    five = [row["nodes"] for f in (fens[:1] if short else fens[:3])
            if (row := decide(f, "eval=stockfish", 5.0)) is not None]
    if not five:
        raise SystemExit("every 5 s decision was answered overdue")
    nodes_5s = float(np.mean(five))
    out = {
        "sf_call_ms": r["sf_call_ms"],
        "expansions_per_s": sf["expansions_per_s"],
        "nodes_per_s": sf["nodes_per_s"],
        "builtin_nodes_per_s": simple["nodes_per_s"],
        "nodes_5s": nodes_5s,
    }
    print(f"\nObscuro's threaded search, 1 solver + 1 expander, {secs:g} s per move at "
          f"{len(fens)} middlegame positions (P = the position):")
    print(f"  with Stockfish        {sf['expansions_per_s']:>9,.0f} expansions/s "
          f"{sf['nodes_per_s']:>10,.0f} nodes/s  {sf['iterations_per_s']:>8,.0f} it/s  "
          f"Stockfish {100 * sf['sf_share']:.0f}% of expander time, depth {sf['depth']:.1f}")
    print(f"  2 expander threads    {sf2['expansions_per_s']:>9,.0f} expansions/s "
          f"{sf2['nodes_per_s']:>10,.0f} nodes/s  {sf2['iterations_per_s']:>8,.0f} it/s  "
          f"(3 positions)")
    print(f"  built-in evaluator    {simple['expansions_per_s']:>9,.0f} expansions/s "
          f"{simple['nodes_per_s']:>10,.0f} nodes/s  {simple['iterations_per_s']:>8,.0f} it/s")
    print(f"  tree after a 5 s move {nodes_5s:>10,.0f} nodes ({len(five)} position(s))")
    print("\nfigure                  measured      target   ratio   Obscuro (10+ cores, C++)")
    for key, value in out.items():
        target = TARGETS[key]
        ratio = target / value if key == "sf_call_ms" else value / target
        paper = f"{PAPER[key]:>12,.0f}" if key in PAPER else ""
        print(f"  {key:<20} {value:>10,.3f}  {target:>10,.1f}  {ratio:>5.2f}x  {paper}")
    print(f"  (sf_call_ms: python-chess takes {r['sf_pychess_ms']:.3f} ms, {r['sf_ratio']:.1f}x "
          f"ours; ratios above 1 meet the target)")
    print(f"engine sf_call_ms={out['sf_call_ms']:.4g} "
          f"expansions_per_s={out['expansions_per_s']:.0f}"
          f" nodes_per_s={out['nodes_per_s']:.0f} builtin_nodes_per_s="
          f"{out['builtin_nodes_per_s']:.0f} nodes_5s={out['nodes_5s']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
