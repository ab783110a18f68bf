"""Sub-commands of the search area.

- `caligo search exploitability GAME [--budget 10,100,1000] [--seeds R] [--preset P] [switches]`:
  the exact exploitability of the search agent (both seats, Zhang and Sandholm 2021's
  definition per seat and NashConv / 2), one row per budget; `--json` / `--csv` write the
  rows. `--preset` picks the construction (`caligo.search.config.PRESETS`), explicit switches
  override it.
- `caligo search run GAME [--seat S | --infoset NAME] [--budget N] [switches]`: one search at a
  first decision, printing the `SearchResult` (policy, purified policy, tree size, timings).
- `caligo search study [--grid exploitability|constructions] [--out DIR] [--games ...] [--short]`:
  the grids of docs/search.md,
  resumable (rows are appended to DIR/study.jsonl as they finish), then CSV, JSON and the PNG.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import enum
import json
from pathlib import Path
from typing import Any

from caligo.cli._util import HelpFormatter, count_list
from caligo.search.config import (
    PRESETS,
    AlternateValues,
    CarryOver,
    EvaluatorKind,
    Expansion,
    FirstDecision,
    GadgetMode,
    InitialStrategy,
    Iterate,
    Iterations,
    Preset,
    Purification,
    ResolvePrior,
    RootExpansion,
    RootInfosets,
    SearchConfig,
    SubgameKind,
)

_SWITCHES: tuple[tuple[str, type[enum.Enum], str | None], ...] = (
    ("expansion", Expansion, "full"),
    ("subgame", SubgameKind, None),  # None: the preset's
    ("root_expansion", RootExpansion, None),
    ("gadget", GadgetMode, "blend"),
    ("resolve_prior", ResolvePrior, "blueprint_mix"),
    ("alternate_values", AlternateValues, "blueprint"),
    ("purification", Purification, "none"),
    ("iterate", Iterate, "last"),
    ("carry_over", CarryOver, "profile_only"),
    ("first_decision", FirstDecision, "true_start"),
    ("root_infosets", RootInfosets, "singleton"),
    ("initial_strategy", InitialStrategy, "best_child"),
)


def _budgets(text: str) -> list[int]:
    return count_list(text, "--budget", "iteration counts", 1)


def _config(args: argparse.Namespace, budget: int) -> SearchConfig:
    """The switches on top of the preset's construction (an explicit flag wins)."""
    kw: dict[str, Any] = dict(PRESETS[Preset(args.preset)])
    kw.update({"budget": Iterations(budget), "expansions": args.expansions,
               "gifts": not args.no_gifts, "min_roots": args.min_roots,
               "order2_blend": args.order2_blend, "order2_floor": args.order2_floor})
    for name, kind, _ in _SWITCHES:
        if getattr(args, name) is not None:
            kw[name] = kind(getattr(args, name))
    for name in ("knowledge_order", "root_floor"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    return SearchConfig(**kw)


def _exploitability(args: argparse.Namespace) -> int:
    from caligo.core.games import load_game
    from caligo.search.exploitability import EvaluatorKind, make_evaluator, search_exploitability

    tree = load_game(args.game)
    ev = make_evaluator(tree, EvaluatorKind(args.evaluator))
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    rows = []
    print(f"{'budget':>7} {'nashconv/2':>11} {'±ci95':>9} {'seat0':>9} {'seat1':>9} "
          f"{'mixture':>9} {'searches':>8} {'seconds':>8}")
    for b in _budgets(args.budget):
        rep = search_exploitability(tree, _config(args, b), ev, list(range(args.seeds)))
        secs = sum(r.seconds for r in rep.runs)
        row = {"game": args.game, "budget": b, "nashconv_half": rep.mean.nashconv_half,
               "ci95": rep.ci95, "seat0": rep.mean.seat0, "seat1": rep.mean.seat1,
               "mixture": rep.mixture.nashconv_half,
               "searches": sum(r.searches for r in rep.runs), "seconds": secs}
        rows.append(row)
        print(f"{b:>7} {row['nashconv_half']:>11.6f} {row['ci95']:>9.2g} {row['seat0']:>9.5f} "
              f"{row['seat1']:>9.5f} {row['mixture']:>9.5f} {row['searches']:>8} "
              f"{secs:>8.1f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"config": {k: (v.value if isinstance(v, enum.Enum) else repr(v)) for k, v in
                        dataclasses.asdict(_config(args, 1)).items() if k != "budget"},
             "evaluator": args.evaluator, "rows": rows}, indent=1))
        print(f"wrote {args.json}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from caligo.core.games import load_game
    from caligo.search.agent import tree_agent
    from caligo.search.exploitability import make_evaluator
    from caligo.search.game import TreeGame

    tree = load_game(args.game)
    index = tree.infoset_index()
    if args.infoset is None:
        seat = 0 if args.seat is None else args.seat
        own = tree.infosets_of(seat)
        if not len(own):
            raise ValueError(f"game {args.game!r} has no decision for seat {seat}")
        g = int(own[0])
    elif args.infoset in index:
        g = index[args.infoset]
    else:
        raise ValueError(f"game {args.game!r} has no infoset named {args.infoset!r}")
    seat = int(tree.infoset_player[g])
    if args.seat is not None and args.seat != seat:
        raise ValueError(f"infoset {args.infoset!r} is seat {seat}'s, not seat {args.seat}'s")
    if int(tree.infoset_parent_seq[g]) != 0:
        raise ValueError(f"infoset {tree.infoset_names[g]!r} is not a first decision; "
                         "`run` searches first decisions (use `exploitability` for the rest)")
    agent = tree_agent(TreeGame(tree), make_evaluator(tree, EvaluatorKind(args.evaluator)),
                       _config(args, _budgets(args.budget)[0]), seat)
    agent.new_game(seat, args.seed)
    agent.observe(int(tree.infoset_kinfo[g]))
    d = agent.act()
    r = d.search
    print(f"infoset {tree.infoset_names[g]!r} (player {seat})")
    for a, p, q, st in zip(d.actions, d.policy, d.play, r.stable, strict=True):
        print(f"  action {int(a):>4}  policy {p:.4f}  play {q:.4f}  {'stable' if st else ''}")
    print(f"move {d.action}  value {r.value:.5f}  gadget {r.gadget.value}  p_max {r.p_max:.3f}")
    print(f"nodes {r.nodes}  infosets {r.infosets}  roots {r.roots} (sampled {r.sampled})  "
          f"carried {r.carried_nodes}/{r.carried_infosets}  depth {r.depth}")
    print(f"iterations {r.iterations}  expansions {r.expansions}  T_1/2 {r.t_half}  "
          f"node visits {r.node_visits}  time {r.time.total:.3f} s (construct "
          f"{r.time.construct:.3f}, solve {r.time.solve:.3f}, expand {r.time.expand:.3f})")
    return 0


def _names(text: str, sep: str, option: str) -> tuple[str, ...]:
    """The `sep`-separated names of `option`; ValueError for an empty one (`a;;b`, ``)."""
    names = tuple(n.strip() for n in text.split(sep))
    if not all(names):
        raise ValueError(f"{option} {text!r}: an empty name (names are {sep!r}-separated)")
    return names


def _study(args: argparse.Namespace) -> int:
    from caligo.search import study, study_report

    if args.grid not in study.GRIDS:
        raise ValueError(f"unknown grid {args.grid!r}; known: {', '.join(study.GRIDS)}")
    grid = study.GRIDS[args.grid]
    out = Path(args.out if args.out is not None else grid.out)
    games = _names(args.games, ";", "--games") if args.games is not None else grid.games
    variants = grid.variants
    if args.variants is not None:
        want = set(_names(args.variants, ",", "--variants"))
        unknown = want - {v.label for v in variants}
        if unknown:
            raise ValueError(f"unknown variants {sorted(unknown)}; known: "
                             f"{', '.join(v.label for v in variants)}")
        variants = tuple(v for v in variants if v.label in want)
    if not args.plot_only:
        study.run_study(out, games, variants, short=args.short,
                        progress=lambda msg: print(msg, flush=True), grid=grid)
    rows = study.load_rows(out / "study.jsonl")
    for p in [*study_report.write_tables(rows, out, grid),
              study_report.plot(rows, out / "study.png", grid)]:
        print(f"wrote {p}")
    return 0


SEARCH_EPILOG = """\
examples:
  caligo search exploitability kuhn_poker       both seats, budgets 10, 100, 1000
  caligo search run leduc_poker --seat 1        one search: policy, tree, timings
  caligo search study --short --out out/study"""

EXPLOITABILITY_EPILOG = """\
examples:
  caligo search exploitability kuhn_poker
  caligo search exploitability leduc_poker --budget 100,1000 --seeds 3 --json out/leduc.json
  caligo search exploitability kuhn_poker --expansion one_sided --purification stable_top3
  caligo search exploitability leduc_poker --budget 1000 --subgame klss --evaluator zero
  caligo search exploitability kuhn_poker --subgame blend --order2-blend 0.1
  caligo search exploitability leduc_poker --preset safe --budget 100,1000,10000"""

RUN_EPILOG = """\
examples:
  caligo search run kuhn_poker
  caligo search run leduc_poker --seat 1 --budget 2000 --evaluator zero"""

STUDY_EPILOG = """\
examples:
  caligo search study --short --out out/study   budgets 10, 100, 1000 only
  caligo search study --plot-only               rebuild docs/search's tables and figure
  caligo search study --grid constructions      the subgame constructions, docs/search/safe"""


def register(sub: Any) -> None:
    """Add `caligo search exploitability|run|study`."""
    p = sub.add_parser("search", help="growing-tree search: exact exploitability of the agent",
                       epilog=SEARCH_EPILOG, formatter_class=HelpFormatter)
    ss = p.add_subparsers(dest="search_command", required=True)
    e = ss.add_parser("exploitability", help="exact exploitability of the search agent",
                      epilog=EXPLOITABILITY_EPILOG, formatter_class=HelpFormatter)
    r = ss.add_parser("run", help="one search at a first decision; print the SearchResult",
                      epilog=RUN_EPILOG, formatter_class=HelpFormatter)
    for q in (e, r):
        q.add_argument("game", help="a game string (OpenSpiel or built-in)")
    e.add_argument("--budget", default="10,100,1000",
                   help="comma-separated iteration budgets per search (default 10,100,1000)")
    r.add_argument("--budget", default="1000", help="iterations (default 1000)")
    r.add_argument("--seat", type=int, default=None, choices=(0, 1),
                   help="the searching seat (default 0, or the --infoset's player)")
    r.add_argument("--infoset", default=None, help="the infoset's name (default: the seat's "
                   "first infoset)")
    r.add_argument("--seed", type=int, default=0)
    e.add_argument("--seeds", type=int, default=1, help="number of seeds (default 1)")
    for q in (e, r):
        q.add_argument("--expansions", type=int, default=128,
                       help="leaf expansions per search when not --expansion full (default 128)")
        q.add_argument("--evaluator", default="perfect_info",
                       choices=[k.value for k in EvaluatorKind],
                       help="leaf evaluator (default perfect_info, the Stockfish analogue)")
        q.add_argument("--min-roots", dest="min_roots", type=int, default=256)
        q.add_argument("--no-gifts", dest="no_gifts", action="store_true",
                       help="no gift estimates in the alternate values")
        q.add_argument("--order2-blend", dest="order2_blend", type=float, default=0.5,
                       help="--subgame blend: share b of the re-optimized strategy in the "
                       "searcher's order-2 play (0 = klss, 1 = kluss; default 0.5)")
        q.add_argument("--order2-floor", dest="order2_floor", type=float, default=0.0,
                       help="--subgame safe_kluss: how far (in units of the largest payoff, "
                       "per unit of reach) order-2 play may fall below the blueprint against "
                       "the opponent's current strategy (default 0)")
        q.add_argument("--knowledge-order", dest="knowledge_order", type=int, default=None,
                       help="k of k-KLSS (odd): keep I^(k+1), the order-2 region starts "
                       "outside I^k (default: the preset's, 1; 3 with --subgame klss is "
                       "3-KLSS)")
        q.add_argument("--root-floor", dest="root_floor", type=float, default=None,
                       help="eps: the share of the Resolve prior in the root weights, so no "
                       "root's outcome weighs zero (default: the preset's; obscuro 0, safe "
                       "0.05)")
        q.add_argument("--preset", default="obscuro", choices=[p.value for p in Preset],
                       help="the construction (subgame, knowledge order, root expansion, root "
                       "floor) before the flags above: obscuro (the Obscuro paper's, default), "
                       "safe (1-KLSS with the decided-loss fix; docs/search.md) or "
                       "obscuro_fix (KLUSS with the fix)")
        for name, kind, default in _SWITCHES:
            q.add_argument("--" + name.replace("_", "-"), dest=name, default=default,
                           choices=[k.value for k in kind],
                           help="(default: the preset's)" if default is None else None)
    e.add_argument("--json", default=None, help="write the rows and the config as JSON")
    e.add_argument("--csv", default=None, help="write the rows as CSV")
    e.set_defaults(func=_exploitability)
    r.set_defaults(func=_run)
    s = ss.add_parser("study", help="the exploitability grids of docs/search.md (resumable)",
                      epilog=STUDY_EPILOG, formatter_class=HelpFormatter)
    s.add_argument("--grid", default="exploitability",
                   help="exploitability (the default: constructions x budgets x games) or "
                   "constructions (the subgames between 1-KLSS and 2-KLUSS, with head-to-head "
                   "values)")
    s.add_argument("--out", default=None, help="output directory (default: the grid's, "
                   "docs/search or docs/search/safe)")
    s.add_argument("--games", default=None, help="';'-separated game strings (default: all)")
    s.add_argument("--variants", default=None, help="comma-separated variant labels")
    s.add_argument("--short", action="store_true", help="budgets 10, 100, 1000 only")
    s.add_argument("--plot-only", dest="plot_only", action="store_true",
                   help="rebuild the tables and figure from the results file")
    s.set_defaults(func=_study)
