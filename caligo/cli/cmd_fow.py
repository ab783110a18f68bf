"""Sub-commands of the fow area: `caligo fow belief PGN --as white|black`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def _belief(args: argparse.Namespace) -> int:
    import numpy as np

    from caligo.fow.belief import BeliefConfig, BeliefSet, SizeKind
    from caligo.fow.notation import move_to_san, read_pgn
    from caligo.fow.observation import observe
    from caligo.fow.position import BLACK, UNDO_WORDS, WHITE, from_fen, make_move

    player = WHITE if args.side == "white" else BLACK
    game = read_pgn(Path(args.pgn).read_text())
    config = BeliefConfig(max_positions=args.max_positions, seed=args.seed)
    belief = BeliefSet.initial(player, game.start_fen, config)
    pos = from_fen(game.start_fen)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    print(f"# |P| for {args.side} after every ply of {args.pgn}")
    print(f"{'ply':>4}  {'move':<8} {'|P|':>10}")
    print(f"{0:>4}  {'start':<8} {len(belief):>10}")
    for ply, move in enumerate(game.moves, start=1):
        san = move_to_san(pos, move)
        mover = int(pos[12])
        make_move(pos, move, undo)
        obs = observe(pos, player)
        if mover == player:
            belief = belief.update_own_move(move, obs)
        else:
            belief = belief.update_opponent_move(obs)
        note = ""
        if not belief.exact:
            bound = {SizeKind.EXACT: "", SizeKind.LOWER_BOUND: ">= ", SizeKind.ESTIMATE: "~"}
            note = (
                f"  (uniform sample of {bound[belief.size_kind]}{belief.size_seen}"
                " consistent positions)"
            )
        print(f"{ply:>4}  {san:<8} {len(belief):>10}{note}")
        if int(pos[5]) == 0 or int(pos[11]) == 0:
            break
    return 0


def register(sub: Any) -> None:
    """Add this area's sub-commands."""
    fow = sub.add_parser("fow", help="Fog of War chess tools")
    fsub = fow.add_subparsers(dest="fow_command", required=True)
    p = fsub.add_parser("belief", help="print the size of a player's set P after every ply")
    p.add_argument("pgn", help="PGN file of one FoW game")
    p.add_argument("--as", dest="side", choices=("white", "black"), required=True)
    p.add_argument(
        "--max-positions", type=int, default=2_000_000, help="memory cap of P (positions)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the subsample past the cap")
    p.set_defaults(func=_belief)
