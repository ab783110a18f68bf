"""`caligo strength`: tables of match results and of an engine's per-move statistics.

    caligo strength table RESULT.json ...     one markdown row per match (`caligo match --json`)
    caligo strength ladder RESULT.json ...    the strength ladder's ratings (`caligo:level=N`),
                                              chained from neighbour matches, random = 0
    caligo strength moves MATCH.db --engine NAME [--json OUT]
                                              means of the analysis an engine reported per
                                              move (`Decision.info`) over a match's games,
                                              beside Obscuro, appendix D's figures

Both read files `caligo match` wrote; nothing is recomputed from the games.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from caligo.cli._util import HelpFormatter
from caligo.errors import CaligoError


class StrengthError(CaligoError, ValueError):
    """A file `caligo strength` cannot read, or an engine the database does not hold."""


PAPER_STATS = {
    "plies_per_game": 116.6,
    "depth": 10.7,
    "nodes": 1_070_552.0,
    "infosets": 14_404.0,
    "carried_nodes": 181_421.0,
    "carried_infosets": 3_162.0,
    "belief": 17_264.0,
}
"""Obscuro, appendix D: averages over 1,000 games at 5 s per move (10 cores, 5 per side)."""

TIME_FIELDS = (("belief", "belief"), ("construct", "construct"),
               ("search", "search"), ("total", "total"), ("after_move", "after_move"))
"""The time split of a move (`info["time_ms"]`, `caligo.agents.timing`): our name, the info's
key. `after_move` is the work after the agent's own move (on the opponent's time in a match
of in-process agents only if the referee did not settle it first; it never does)."""

MOVE_FIELDS = ("belief", "nodes", "infosets", "carried_nodes", "carried_infosets", "depth",
               "iterations", "expansions", "sampled", "roots", "stable")
"""Per-move statistics of the analysis; `stable`: the actions purification may play (Obscuro,
appendix C.8: stable over the second half of the search)."""


ALIASES = {"nodes": "trunk_nodes", "belief": "belief_size"}
"""ZS21's names (docs/zs21.md) for the statistics Obscuro's analysis calls otherwise."""


def _read_json(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise StrengthError(f"cannot read match result {path!r}: {exc}") from None
    if not isinstance(data, dict) or "engines" not in data:
        raise StrengthError(f"{path!r} is not a `caligo match --json` result")
    problem = _result_problem(data)
    if problem:
        raise StrengthError(f"{path!r} is not a `caligo match --json` result: {problem}")
    return data


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _pair_of(x: Any, test: Any) -> bool:
    return isinstance(x, list) and len(x) == 2 and all(test(v) for v in x)


def _result_problem(data: dict[str, Any]) -> str:
    """What is wrong with the fields `table_row` and `ladder_rows` read ('' if nothing)."""
    if not _pair_of(data["engines"], lambda v: isinstance(v, str)):
        return "'engines' must be two names"
    if "time_controls" in data and not _pair_of(data["time_controls"],
                                                lambda v: isinstance(v, str)):
        return "'time_controls' must be two time controls"
    for key in ("games", "wins", "draws", "losses", "pairs"):
        if not _is_count(data.get(key)):
            return f"{key!r} must be a count, got {data.get(key)!r}"
    penta = data.get("pentanomial")
    if not (isinstance(penta, list) and len(penta) == 5 and all(map(_is_count, penta))):
        return f"'pentanomial' must be five counts, got {penta!r}"
    elo = data.get("elo")
    if elo is not None and not (isinstance(elo, dict) and _is_number(elo.get("logistic"))
                                and _pair_of(elo.get("ci95"), _is_number)
                                and _is_number(data.get("score"))
                                and 0.0 <= data["score"] <= 1.0):
        return "'elo' must hold a finite 'logistic' and 'ci95', beside a 'score' in [0, 1]"
    sprt = data.get("sprt")
    if sprt is not None:
        crossed = sprt.get("crossed") if isinstance(sprt, dict) else None
        if not (isinstance(sprt, dict) and _pair_of(sprt.get("bounds"), _is_number)
                and _is_number(sprt.get("llr")) and isinstance(sprt.get("decision"), str)
                and (crossed is None or (isinstance(crossed, dict)
                                         and _is_count(crossed.get("pairs"))
                                         and _is_number(crossed.get("llr"))))):
            return "'sprt' must hold 'bounds', a finite 'llr' and a 'decision'"
    return ""


def table_row(data: dict[str, Any]) -> str:
    """One markdown row: engines, time controls, games, W-D-L, pentanomial, score, Elo, SPRT."""
    a, b = data["engines"]
    tcs = data.get("time_controls", ["?", "?"])
    tc = tcs[0] if tcs[0] == tcs[1] else f"{tcs[0]} / {tcs[1]}"
    elo = data.get("elo")
    penta_counts = data["pentanomial"]
    if elo and data["pairs"] and max(penta_counts[0], penta_counts[-1]) == data["pairs"]:
        # every pair won (or lost) 2-0: the variance is 0 and the Elo has no finite estimate
        e = "unbounded (every pair 2-0)" if penta_counts[-1] else "unbounded (every pair 0-2)"
        score = f"{100 * data['score']:.1f}%"
    elif elo:
        lo, hi = elo["ci95"]
        e = f"{elo['logistic']:+.0f} [{lo:+.0f}, {hi:+.0f}]"
        score = f"{100 * data['score']:.1f}%"
    else:
        e = score = "-"
    sprt = data.get("sprt")
    s = "-"
    if sprt:
        bounds = f"[{sprt['bounds'][0]:.2f}, {sprt['bounds'][1]:.2f}]"
        crossed = sprt.get("crossed")
        if crossed:  # decided there; pairs being played then moved the LLR on
            s = (f"{sprt['decision']} at {crossed['pairs']} pairs (LLR {crossed['llr']:.2f} "
                 f"{bounds}; {sprt['llr']:.2f} at {data['pairs']})")
        else:
            s = f"{sprt['decision']} (LLR {sprt['llr']:.2f} {bounds})"
    penta = ", ".join(str(x) for x in data["pentanomial"])
    return (f"| {a} | {b} | {tc} | {data['games']} | +{data['wins']} ={data['draws']} "
            f"-{data['losses']} | [{penta}] | {score} | {e} | {s} |")


TABLE_HEADER = ("| engine A | engine B | budget | games | A: W-D-L | pentanomial | A's score "
                "| Elo (95% CI) | SPRT |\n|---|---|---|---|---|---|---|---|---|")


P_DECADES = (0, 1_000, 10_000, 100_000, 1_000_000)
"""The lower ends of the |P| classes `move_stats` splits the time by (the last is open)."""


def _ply_info(text: Any, where: str) -> dict[str, Any]:
    """The `info` of a ply's stored engine analysis; StrengthError naming `where` if damaged."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StrengthError(f"{where}: its engine analysis is not JSON ({exc})") from None
    info = data.get("info", {}) if isinstance(data, dict) else None
    if not isinstance(info, dict):
        raise StrengthError(f"{where}: its engine analysis is not an object with an 'info'")
    return info


def move_stats(db: str, engine: str) -> dict[str, Any]:
    """Means of `engine`'s per-move analysis over the finished games of the database, and the
    counts of its moves with no search behind them: watchdog answers (`overdue_answers`, with
    the latest return of control, `late_ms_max`) and moves with P lost (`belief_lost_moves`).
    Those are left out of the means. Also P's repairs and redraws over the games (each game's
    last count: the analysis reports them so far in the game), the games with a redraw, and
    the timed moves by the size of P (`P_DECADES`): their share, P's exact share, the belief
    update's and the search's mean time (a large P's update takes the search's time)."""
    import sqlite3

    if not Path(db).is_file():
        raise StrengthError(f"no database {db!r}")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        games = con.execute("SELECT id, white, black, start_fen FROM games WHERE status = "
                            "'finished'").fetchall()
        sums: dict[str, float] = dict.fromkeys(MOVE_FIELDS, 0.0)
        counts: dict[str, int] = dict.fromkeys(MOVE_FIELDS, 0)
        exact = moves = n_games = plies = overdue = lost = repairs = redraws = redraw_games = 0
        late_max = 0.0
        ms = 0.0
        time_sums: dict[str, float] = {name: 0.0 for name, _ in TIME_FIELDS}
        timed = 0
        search_shares: list[float] = []
        belief_shares: list[float] = []
        by_size = [[0.0, 0.0, 0.0, 0.0] for _ in P_DECADES]  # moves, exact, belief, search ms
        for gid, white, black, fen in games:
            if engine not in (white, black):
                continue
            n_games += 1
            if not isinstance(fen, str):
                raise StrengthError(f"{db!r}: game {gid!r} has no start FEN")
            black_first = " b " in fen
            rows = con.execute("SELECT ply, engine_info, elapsed_ms FROM plies WHERE game_id = ?",
                               (gid,)).fetchall()
            plies += len(rows)
            game_p = [0.0, 0.0]  # P's repairs and redraws so far in the game (counters)
            for ply, text, elapsed in rows:
                if isinstance(ply, bool) or not isinstance(ply, int):
                    raise StrengthError(f"{db!r}: game {gid!r} has a ply numbered {ply!r}")
                mover_white = (ply % 2 == 1) != black_first
                if (white if mover_white else black) != engine or not text:
                    continue
                info = _ply_info(text, f"{db!r}: game {gid!r} ply {ply}")
                for k, key in enumerate(("belief_repairs", "belief_redraws")):
                    game_p[k] = max(game_p[k], _finite(info.get(key)))
                if info.get("overdue") is True:  # the watchdog's answer (`overdue_answer`)
                    overdue += 1
                    late_max = max(late_max, _finite(info.get("late_ms")))
                    continue
                if info.get("belief_lost") is True:  # P lost: a move with no search behind it
                    lost += 1
                    continue
                if "nodes" not in info and "trunk_nodes" not in info:
                    continue  # not an analysed search move (a forced move, another agent)
                moves += 1
                ms += _finite(elapsed)
                exact += bool(info.get("belief_exact", True))
                for key in MOVE_FIELDS:
                    value = info.get(key, info.get(ALIASES.get(key, ""), None))
                    if isinstance(value, int | float) and math.isfinite(value):
                        sums[key] += float(value)
                        counts[key] += 1
                split = info.get("time_ms")
                if isinstance(split, dict) and "search" not in split and "search_total" in split:
                    # an analysis from before Obscuro named the search's wall time
                    split = {**split, "search": _finite(split["search_total"]) -
                             _finite(split.get("construct"))}
                if isinstance(split, dict) and "total" in split:
                    timed += 1
                    for name, key in TIME_FIELDS:
                        time_sums[name] += _finite(split.get(key))
                    size = _finite(info.get("belief"))
                    row = by_size[sum(size >= lo for lo in P_DECADES[1:])]
                    row[0] += 1
                    row[1] += bool(info.get("belief_exact", True))
                    row[2] += _finite(split.get("belief"))
                    row[3] += _finite(split.get("search"))
                    plan = info.get("plan")
                    optimum = _finite(plan.get("optimum")) if isinstance(plan, dict) else 0.0
                    if optimum > 0:
                        search_shares.append(_finite(split.get("search")) / optimum)
                        belief_shares.append(_finite(split.get("belief")) / optimum)
            repairs += int(game_p[0])
            redraws += int(game_p[1])
            redraw_games += game_p[1] > 0
    except sqlite3.DatabaseError as exc:  # not SQLite, or no match tables (a copy without -wal)
        raise StrengthError(f"{db!r} is not a readable `caligo match --db` database: "
                            f"{exc}") from None
    finally:
        con.close()
    if not moves:
        raise StrengthError(f"no analysed move of engine {engine!r} in {db!r}")
    out: dict[str, Any] = {"engine": engine, "games": n_games, "moves": moves,
                           "plies_per_game": plies / n_games, "ms_per_move": ms / moves,
                           "belief_exact_share": exact / moves, "overdue_answers": overdue,
                           "late_ms_max": late_max, "belief_lost_moves": lost,
                           "belief_repairs": repairs, "belief_redraws": redraws,
                           "redraw_games": redraw_games}
    for key in MOVE_FIELDS:
        out[key] = sums[key] / counts[key] if counts[key] else None
    if timed:
        out["time_ms"] = {name: time_sums[name] / timed for name, _ in TIME_FIELDS}
        out["timed_moves"] = timed
        out["by_belief_size"] = [
            {"from": lo, "moves": int(n), "share": n / timed, "exact_share": ex / n,
             "belief_ms": b / n, "search_ms": se / n}
            for lo, (n, ex, b, se) in zip(P_DECADES, by_size, strict=True) if n]
    if search_shares:
        shares = sorted(search_shares)
        out["search_share"] = {"mean": sum(shares) / len(shares), "min": shares[0],
                               "p05": shares[int(0.05 * (len(shares) - 1))],
                               "moves": len(shares)}
        beliefs = sorted(belief_shares)
        out["belief_share"] = {"mean": sum(beliefs) / len(beliefs), "max": beliefs[-1],
                               "p95": beliefs[int(0.95 * (len(beliefs) - 1))]}
    return out


def _finite(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


def _moves(args: argparse.Namespace) -> int:
    stats = move_stats(args.db, args.engine)
    print(f"{stats['engine']}: {stats['moves']} moves in {stats['games']} games, "
          f"{stats['ms_per_move']:.0f} ms per move")
    print("| statistic (mean per move) | Caligo | Obscuro, appendix D (5 s/move, 10 cores) |")
    print("|---|---|---|")
    for key in ("plies_per_game", "depth", "nodes", "infosets", "carried_nodes",
                "carried_infosets", "stable", "belief", "iterations", "expansions", "sampled",
                "roots"):
        v = stats.get(key)
        ref = PAPER_STATS.get(key)
        print(f"| {key} | {'-' if v is None else f'{v:,.1f}'} | "
              f"{'' if ref is None else f'{ref:,.1f}'} |")
    print(f"| P exact (share of moves) | {100 * stats['belief_exact_share']:.1f}% | |")
    print(f"\nmoves without a search: {stats['overdue_answers']} watchdog answers (the move's "
          f"work overdue; control back at most {stats['late_ms_max']:,.0f} ms after the answer "
          f"instant), {stats['belief_lost_moves']} with P lost")
    print(f"P repaired by a replay {stats['belief_repairs']} times, redrawn "
          f"{stats['belief_redraws']} times (in {stats['redraw_games']} of the games)")
    split = stats.get("time_ms")
    if split:
        total = split["total"] or 1.0
        print(f"\ntime split over {stats['timed_moves']} moves (mean ms per move; share of the "
              "move's total):")
        print("| belief | construct | search | total | after the move |")
        print("|---|---|---|---|---|")
        print("| " + " | ".join(f"{split[k]:,.1f} ({100 * split[k] / total:.0f}%)"
                                for k in ("belief", "construct", "search")) +
              f" | {split['total']:,.1f} | {split['after_move']:,.1f} |")
    rows = stats.get("by_belief_size")
    if rows:
        print("\nby the size of P (timed moves; mean ms per move):")
        print("| P from | moves (share) | P exact | belief | search |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['from']:,} | {r['moves']} ({100 * r['share']:.0f}%) | "
                  f"{100 * r['exact_share']:.0f}% | {r['belief_ms']:,.0f} | "
                  f"{r['search_ms']:,.0f} |")
    share = stats.get("search_share")
    if share:
        print(f"search's share of the planned optimum ({share['moves']} timed moves): mean "
              f"{100 * share['mean']:.0f}%, 5th percentile {100 * share['p05']:.0f}%, "
              f"min {100 * share['min']:.0f}%")
        b = stats["belief_share"]
        print(f"the belief update's share of it: mean {100 * b['mean']:.0f}%, 95th percentile "
              f"{100 * b['p95']:.0f}%, max {100 * b['max']:.0f}% (its share in the timing "
              "policy: 40%)")
    if args.json:
        Path(args.json).write_text(json.dumps(stats, indent=1) + "\n")
    return 0


ELO_CAP = 1199.0
"""|Elo| at which `caligo.play.stats.elo_from_score` clamps (a score of 1 - 1e-3): an interval
bound there is no bound."""

LADDER_HEADER = ("| level | engine | vs level below: games, score | step Elo (95% CI) | "
                 "rating (95% CI) |\n|---|---|---|---|---|")


def ladder_rows(results: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The ladder's table from matches of `caligo:level=N` against `caligo:level=N-1`: each
    level's step over the one below and its rating, the steps summed from level 1 (random)
    = 0; the rating's interval adds the steps' half-intervals in quadrature (the matches are
    independent; a normal approximation of each interval's two sides). Also whether the
    levels are monotone within their intervals (no step's interval lies below 0).
    StrengthError for a match that is not between neighbouring levels, or a level missing."""
    from caligo.agents.ladder import LEVELS, Level
    from caligo.agents.registry import AgentSpecError, parse_spec

    steps: dict[int, dict[str, Any]] = {}
    for data in results:
        numbers = []
        for label in data["engines"]:
            name = str(label).split("#")[0]  # "caligo:level=3#1" when both have one name
            try:
                spec = parse_spec(name)
            except AgentSpecError:
                spec = None
            opts = dict(spec.options) if spec is not None else {}
            if spec is None or spec.name != "caligo" or not opts.get("level", "").isdigit():
                raise StrengthError(f"not a ladder match (caligo:level=N): {label!r}")
            numbers.append(int(opts["level"]))
        hi, lo = numbers
        if hi == lo - 1:
            raise StrengthError(f"level {hi} against {lo}: engine A must be the higher level")
        if hi != lo + 1:
            raise StrengthError(f"levels {hi} and {lo} are not neighbours")
        if hi in steps:
            raise StrengthError(f"two matches of level {hi} against {lo}")
        steps[hi] = data
    missing = [n for n in range(2, len(LEVELS) + 1) if n not in steps]
    if missing:
        raise StrengthError(f"no match for level(s) {missing} against the level below")
    def engine(lvl: Level) -> str:
        noise = f", {lvl.noise:.0%} of its moves at random" if lvl.noise else ""
        return f"{lvl.engine_spec}{noise}"

    rows = [f"| 1 | {engine(LEVELS[0])} | (anchor) | 0 | 0 |"]
    rating, var_lo, var_hi, bounded, monotone = 0.0, 0.0, 0.0, True, True
    for lvl in LEVELS[1:]:
        data = steps[lvl.number]
        penta = data["pentanomial"]
        if not data["pairs"] or not data.get("elo"):
            raise StrengthError(f"the match of level {lvl.number} has no finished pair")
        games = f"{data['games']}, {100 * data['score']:.1f}%"
        step = data["elo"]["logistic"]
        lo, hi = data["elo"]["ci95"]
        sweep = max(penta[0], penta[-1]) == data["pairs"]
        if sweep or max(abs(lo), abs(hi)) >= ELO_CAP:
            # every pair 2-0 (or 0-2), or an interval at the estimator's cap: a side without a
            # finite bound, so no finite rating from here up
            bounded = False
            monotone = monotone and hi > 0.0
            lo_text = "unbounded" if sweep or lo <= -ELO_CAP else f"{lo:+.0f}"
            hi_text = "unbounded" if sweep or hi >= ELO_CAP else f"{hi:+.0f}"
            step_text = "unbounded" if sweep else f"{step:+.0f}"
            rows.append(f"| {lvl.number} | {engine(lvl)} | {games} | {step_text} "
                        f"[{lo_text}, {hi_text}] | unbounded |")
            continue
        monotone = monotone and hi >= 0.0
        rating += step
        var_lo += (step - lo) ** 2
        var_hi += (hi - step) ** 2
        cum = (f"{rating:+.0f} [{rating - math.sqrt(var_lo):+.0f}, "
               f"{rating + math.sqrt(var_hi):+.0f}]" if bounded else "unbounded")
        rows.append(f"| {lvl.number} | {engine(lvl)} | {games} | {step:+.0f} [{lo:+.0f}, "
                    f"{hi:+.0f}] | {cum} |")
    return rows, monotone


def _ladder(args: argparse.Namespace) -> int:
    try:
        rows, monotone = ladder_rows([_read_json(path) for path in args.results])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        if isinstance(exc, StrengthError):
            raise
        raise StrengthError(f"a ladder result lacks a match field or has a bad one: "
                            f"{exc!r}") from None
    print(LADDER_HEADER)
    print("\n".join(rows))
    print(f"\nmonotone within the intervals: {'yes' if monotone else 'no'}")
    return 0


def _table(args: argparse.Namespace) -> int:
    print(TABLE_HEADER)
    for path in args.results:
        print(table_row(_read_json(path)))
    return 0


TABLE_EPILOG = """\
examples:
  caligo strength table docs/strength/random.json docs/strength/spi.json
  caligo match --engine obscuro --engine random --rounds 10 --json r.json   then:
  caligo strength table r.json"""

LADDER_EPILOG = """\
examples:
  caligo match --engine caligo:level=2 --engine caligo:level=1 --tc none --rounds 50 --json l2.json
  caligo strength ladder l2.json l3.json l4.json l5.json l6.json l7.json l8.json"""

MOVES_EPILOG = """\
examples:
  caligo match --engine obscuro --engine random --tc mt=1 --rounds 2 --db m.db   then:
  caligo strength moves m.db --engine obscuro --json moves.json"""


def register(sub: Any) -> None:
    """Add `caligo strength`."""
    p = sub.add_parser("strength", help="tables of match results and per-move statistics",
                       description=__doc__.splitlines()[0] if __doc__ else None,
                       epilog=TABLE_EPILOG + "\n" + MOVES_EPILOG.removeprefix("examples:\n"),
                       formatter_class=HelpFormatter)
    s = p.add_subparsers(dest="strength_command", required=True, metavar="COMMAND")
    t = s.add_parser("table", help="markdown rows of `caligo match --json` results",
                     epilog=TABLE_EPILOG, formatter_class=HelpFormatter)
    t.add_argument("results", nargs="+", help="JSON files written by `caligo match --json`")
    t.set_defaults(func=_table)
    lad = s.add_parser("ladder", help="the strength ladder's ratings from neighbour matches",
                       epilog=LADDER_EPILOG, formatter_class=HelpFormatter)
    lad.add_argument("results", nargs="+", help="`caligo match --json` results of "
                     "caligo:level=N against caligo:level=N-1, one per level above 1")
    lad.set_defaults(func=_ladder)
    m = s.add_parser("moves", help="an engine's per-move analysis averaged over a match",
                     epilog=MOVES_EPILOG, formatter_class=HelpFormatter)
    m.add_argument("db", help="SQLite file written by `caligo match --db`")
    m.add_argument("--engine", required=True, help="the engine's name in the match")
    m.add_argument("--json", help="also write the statistics here")
    m.set_defaults(func=_moves)

