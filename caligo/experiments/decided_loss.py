"""Decided losses under unlikely roots: replay one match game and re-run decisions.

The one loss of Obscuro to a random mover (round 2.1 of docs/strength/random_iters100.pgn:
`caligo match --engine obscuro --engine random --tc iters=100 --seed 7`, pair 2, game 1) is
reproduced by replaying that pair's game 1 with the same engines and seeds: everything at a fixed
iteration budget is deterministic, so the game comes out move for move. At the chosen moves of
the Obscuro side, before it decides, its search agent is copied (tree, belief) and the decision
is run again under each configuration of `VARIANTS`; the original decision then proceeds
unchanged, so the game goes on as it went.

For each re-run decision the rows give the searched strategy's and the played (purified)
strategy's mass on *decided-loss moves*: moves after which, at some position of P (the exact
belief), the rules decide the game against us (`caligo.fow.evaluate.decided`: the opponent sees
our king and takes it next), and whether some move has no decided loss at any position of P.
Also: the gadget's p_max, the roots and how many were sampled, the tree's size and the moves
played. The search agent is read through the engine's `_search` attribute (an
`ObscuroAgent` internal, read and copied, never changed).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from caligo.experiments.runner import Column, ExperimentError, Table, write_outputs
from caligo.search.config import PRESETS, Preset, RootExpansion

VARIANTS: dict[str, dict[str, Any]] = {
    "obscuro": {},
    "expand roots": {"root_expansion": RootExpansion.INFOSET},
    "root floor 0.05": {"root_floor": 0.05},
    "expand roots + floor 0.05": {"root_expansion": RootExpansion.INFOSET, "root_floor": 0.05},
    "safe preset": dict(PRESETS[Preset.SAFE]),
}
"""Search-configuration changes tried at each decision (on top of the engine's own)."""


@dataclass(frozen=True)
class ReplayConfig:
    """Which game: the match's engines, budget and seed, the pair (1-based) and the game of the
    pair (1: the first engine has White), and the moves (1-based, of the first engine)."""

    engines: tuple[str, str] = ("obscuro", "random")
    time_control: str = "iters=100"
    match_seed: int = 7
    pair: int = 2
    game: int = 1
    moves: tuple[int, ...] = (10, 11)
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: dict(VARIANTS))

    def __post_init__(self) -> None:
        if self.pair < 1 or self.game not in (1, 2) or not self.moves or min(self.moves) < 1:
            raise ExperimentError(f"bad replay: pair {self.pair!r}, game {self.game!r}, moves "
                                  f"{self.moves!r}")


def decided_loss_moves(positions: np.ndarray, moves: Sequence[int], color: int) -> np.ndarray:
    """bool per move: at some position (rows of `positions`, `color` to move) the move leaves a
    position the rules decide against `color`."""
    from caligo.fow.evaluate import BLACK_WINS, WHITE_WINS, decided
    from caligo.fow.position import apply_move

    lost = BLACK_WINS if color == 0 else WHITE_WINS
    out = np.zeros(len(moves), dtype=np.bool_)
    child = np.empty((1, positions.shape[1]), dtype=positions.dtype)
    for i, m in enumerate(moves):
        for s in positions:
            apply_move(s, int(m), child[0])
            if int(decided(child)[0]) == lost:
                out[i] = True
                break
    return out


def _copy_search(sa: Any) -> Any:
    """A copy of the agent's `SearchAgent` whose decisions leave the original untouched."""
    snap = copy.copy(sa)
    snap.belief = copy.copy(sa.belief)
    eng = sa._search
    if eng is not None:
        eng = copy.copy(eng)
        eng.arena = sa._search.arena.copy()
        eng._spare = None
    snap._search = eng
    return snap


def root_rows(arena: Any, positions_of: Any, iterate: Any) -> list[dict[str, Any]]:
    """The gadget's root layer after a search, per root infoset J (its first root): the
    position (board part of the FEN), the alternate value, gift and threshold c_J, the root's
    value under the final profile, whether it was ever expanded, the prior alpha(J), and the
    final weight w_J with its Maxmargin and Resolve parts."""
    from caligo.fow.position import to_fen
    from caligo.search.arena import EXPANDED
    from caligo.search.construct import played_profile, profile

    prof = profile(arena, played_profile(arena, iterate))
    rt, nd = arena.roots, arena.nodes
    out = []
    for j in range(arena.n_j):
        r = int(rt.ptr[j])
        pos = positions_of(np.array([int(nd.state[r])], dtype=np.int64))[0]
        out.append({"J": j, "position": to_fen(pos).split(" ")[0],
                    "alt": float(rt.alt[j]), "gift": float(rt.gift[j]),
                    "threshold": float(rt.threshold[j]), "value": float(prof.v[r]),
                    "expanded": bool(nd.flags[r] & EXPANDED), "alpha": float(rt.alpha[j]),
                    "w": float(rt.w[j]), "maxmargin": float(rt.mm_strat[j]),
                    "resolve_enter": float(rt.res_strat[j, 0])})
    return out


def run_replay(config: ReplayConfig | None = None,
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Replay the game; return the decision rows (one per move and variant), the root rows
    (`root_rows`, per move, variant and J) and the game's moves."""
    from caligo.agents.base import TimeControl
    from caligo.agents.registry import create
    from caligo.fow.position import move_to_uci
    from caligo.play.match import EngineConfig, MatchConfig
    from caligo.play.referee import play_game
    from caligo.play.session import GameSession

    cfg = config if config is not None else ReplayConfig()
    tc = TimeControl.parse(cfg.time_control)
    names = (cfg.engines[0], cfg.engines[1] + "#2" if cfg.engines[1] == cfg.engines[0]
             else cfg.engines[1])
    match = MatchConfig((EngineConfig(cfg.engines[0], names[0], tc),
                         EngineConfig(cfg.engines[1], names[1], tc)),
                        rounds=cfg.pair, seed=cfg.match_seed, move_timeout_ms=120_000)
    session_cfg = match.pair(cfg.pair - 1).session_config(cfg.game)
    first, second = create(cfg.engines[0]), create(cfg.engines[1])
    agents = (first, second) if cfg.game == 1 else (second, first)
    color = 0 if cfg.game == 1 else 1
    rows: list[dict[str, Any]] = []
    roots: list[dict[str, Any]] = []
    own = [0]
    original_act = first.act

    def act(legal: Sequence[int], clock: Any) -> Any:
        own[0] += 1
        if own[0] in cfg.moves:
            sa = first._search  # type: ignore[attr-defined]
            base, _ = first._budget(clock)  # type: ignore[attr-defined]
            positions = sa.belief.set.positions()
            for name, changes in cfg.variants.items():
                snap = _copy_search(sa)
                snap.set_budget(replace(base, **dict(changes)), None)
                res = snap.act().search
                lose = decided_loss_moves(positions, res.actions.tolist(), color)
                top = np.argsort(-res.play, kind="stable")[:3]
                for rr in root_rows(snap._search.arena, snap.game.positions,
                                    snap.config.iterate):
                    roots.append({"move": own[0], "variant": name, **rr})
                rows.append({
                    "move": own[0], "variant": name, "belief": int(positions.shape[0]),
                    "policy_loss": float(res.policy[lose].sum()),
                    "play_loss": float(res.play[lose].sum()),
                    "safe_move_exists": bool((~lose).any()), "p_max": float(res.p_max),
                    "roots": int(res.roots), "sampled": int(res.sampled),
                    "nodes": int(res.nodes),
                    "played": ", ".join(f"{move_to_uci(int(res.actions[i]))} "
                                        f"{res.play[i]:.2f}" for i in top if res.play[i] > 0),
                })
        return original_act(legal, clock)

    first.act = act  # type: ignore[method-assign]
    try:
        session = GameSession(session_cfg)
        end = play_game(session, agents)
    finally:
        for a in (first, second):
            a.close()
    return rows, roots, " ".join(session.sans()) + f" {end.result}"


def replay_tables(rows: Sequence[Mapping[str, Any]], roots: Sequence[Mapping[str, Any]],
                  line: str) -> tuple[Table, Table]:
    """The decision rows and the root rows as tables."""
    cols = (Column("move", "move"), Column("variant", "search"), Column("belief", "|P|"),
            Column("policy_loss", "searched mass on decided losses", "{:.3f}"),
            Column("play_loss", "played mass on decided losses", "{:.3f}"),
            Column("safe_move_exists", "a move avoids them everywhere"),
            Column("p_max", "p_max", "{:.2f}"), Column("roots", "roots"),
            Column("sampled", "sampled"), Column("nodes", "nodes"), Column("played", "played"))
    rcols = (Column("move", "move"), Column("variant", "search"), Column("J", "J"),
             Column("position", "root position"), Column("alt", "v_alt", "{:+.3f}"),
             Column("gift", "gift", "{:.3f}"), Column("threshold", "c_J", "{:+.3f}"),
             Column("value", "value", "{:+.3f}"), Column("expanded", "expanded"),
             Column("alpha", "alpha", "{:.3f}"), Column("w", "w_J", "{:.4f}"),
             Column("maxmargin", "Maxmargin", "{:.4f}"),
             Column("resolve_enter", "Resolve enters", "{:.3f}"))
    return (Table("decided_loss", tuple(dict(r) for r in rows), cols, (f"game: {line}",)),
            Table("decided_loss_roots", tuple(dict(r) for r in roots), rcols))


def write_replay(rows: Sequence[Mapping[str, Any]], roots: Sequence[Mapping[str, Any]],
                 line: str, out_dir: Path | None = None) -> list[Path]:
    """decided_loss.{md,csv,json} and decided_loss_roots.{md,csv,json} in `out_dir`."""
    a, b = replay_tables(rows, roots, line)
    return write_outputs(a, out_dir) + write_outputs(b, out_dir)


__all__ = ["VARIANTS", "ReplayConfig", "decided_loss_moves", "replay_tables", "root_rows",
           "run_replay", "write_replay"]
