"""Zhang & Sandholm 2021, Table 2 (appendix B.2): game statistics and average knowledge-set sizes.

Columns: nodes (chance + decision + terminal), infosets (decision infosets of both players),
the diameter, and the average |I^k| for k = 1..4 and inf. The convention that reproduces the
paper's averages (docs/knowledge.md has the search that found it):

- hypergraph `Convention.LIVE`: a player's observation-sequence infoset is a hyperedge at a node
  only while that player still acts at or below the node;
- the average runs over decision nodes h, uniformly;
- I is the set of nodes that share an infoset of either player with h (h's own infoset joined with
  the opponent's live infoset at h), so the tabulated |I^k| is the size of {h}^(k+1);
- diam is the smallest k with I^k = I^inf for all such I.

With it Kuhn, Leduc and goofspiel with increasing order come out to every printed digit. The
paper's 100-matching pennies is matched exactly by the mirror image of Zhang & Sandholm 2021,
section 4's definition (the first mover observes floor((n+1)/2), the second floor(n/2));
`matching_pennies_first_mover_pairs` builds it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from caligo.core.builtin_games import TableGame, matching_pennies_n
from caligo.core.game import ArgumentError
from caligo.core.games import load_game
from caligo.core.knowledge import Convention, _sizes, knowledge_graph
from caligo.core.tree import GameTree, build_tree

KMAX = 4


@dataclass(frozen=True)
class PaperRow:
    """One row of Table 2 as printed (None where the paper leaves the cell blank)."""

    label: str
    spec: str
    nodes: int
    infosets: int
    diameter: int
    avg: tuple[float | None, ...]  # k = 1, 2, 3, 4, inf


PAPER_TABLE2: tuple[PaperRow, ...] = (
    PaperRow(
        "2x2 Abrupt Dark Hex",
        "dark_hex(gameversion=adh,num_rows=2,num_cols=2)",
        471,
        94,
        13,
        (5.23, 12.00, 18.17, 22.04, 29.58),
    ),
    PaperRow(
        "4-card Goofspiel, random",
        "goofspiel(num_cards=4,imp_info=True,points_order=random)",
        26773,
        3608,
        4,
        (5.84, 8.90, 9.19, 9.20, None),
    ),
    PaperRow(
        "4-card Goofspiel, increasing",
        "goofspiel(num_cards=4,imp_info=True,points_order=ascending)",
        1077,
        162,
        4,
        (5.83, 9.05, 9.31, 9.32, None),
    ),
    PaperRow("Kuhn poker", "kuhn_poker", 58, 12, 3, (2.50, 3.50, 4.00, None, None)),
    PaperRow(
        "3-rank limit Leduc poker", "leduc_poker", 9457, 936, 3, (6.14, 14.71, 15.40, None, None)
    ),
    PaperRow(
        "Liar's Dice, 5-sided die",
        "liars_dice(dice_sides=5)",
        51181,
        5120,
        2,
        (7.00, 15.00, None, None, None),
    ),
    PaperRow(
        "100-Matching pennies",
        "matching_pennies_n(n=100)",
        701,
        101,
        99,
        (3.63, 4.29, 4.93, 5.57, 35.97),
    ),
)


@dataclass(frozen=True)
class Table2Row:
    """Our statistics for one game beside the paper's.

    `avg` holds the average |I^k| for k = 1..4 and inf, with None where the paper's layout
    leaves the cell blank for our diameter (k > diam, and inf when diam <= 4, since then
    I^k = I^inf already). `avg_full` has every value.
    """

    label: str
    spec: str
    nodes: int
    infosets: int
    diameter: int
    avg: tuple[float | None, ...]
    avg_full: tuple[float, ...]
    paper: PaperRow


@dataclass(frozen=True)
class KnowledgeStats:
    """Average knowledge-set sizes over decision nodes (the Table 2 convention)."""

    avg: tuple[float, ...]  # k = 1..kmax, then inf
    diameter: int


def knowledge_stats(tree: GameTree, kmax: int = KMAX) -> KnowledgeStats:
    """Average |{h}^(k+1)| over decision nodes h on the LIVE hypergraph, and the diameter."""
    g = knowledge_graph(tree, Convention.LIVE)
    dec = np.flatnonzero(tree.player <= 1).astype(np.int32)
    # nodes with the same pair of hyperedges have the same {h}^2, hence the same sizes
    pairs = g.node_edge[dec]
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    reps = dec[first]
    set_ptr = np.arange(reps.size + 1, dtype=np.int32)
    sizes, ecc = _sizes(g, set_ptr, reps, kmax + 1)
    per_node = sizes[inverse.ravel()]
    # {h}^(k+1) is column k of the sizes from {h}; the last column is the closure
    avg = per_node[:, 1:].mean(axis=0)
    diam = int(ecc.max()) if ecc.size else 1  # {h}^(k+1) = closure iff k >= ecc
    return KnowledgeStats(avg=tuple(float(v) for v in avg), diameter=max(diam, 1))


def table2_row(paper: PaperRow, tree: GameTree | None = None) -> Table2Row:
    """Compute one row of Table 2 (the tree defaults to `load_game(paper.spec)`)."""
    if tree is None:
        tree = load_game(paper.spec)
    stats = knowledge_stats(tree)
    full = stats.avg
    shown: list[float | None] = [
        full[k - 1] if k <= stats.diameter else None for k in range(1, KMAX + 1)
    ]
    shown.append(full[-1] if stats.diameter > KMAX else None)
    return Table2Row(
        label=paper.label,
        spec=paper.spec,
        nodes=tree.num_nodes,
        infosets=tree.num_infosets,
        diameter=stats.diameter,
        avg=tuple(shown),
        avg_full=full,
        paper=paper,
    )


def table2_rows(specs: Sequence[str] | None = None) -> list[Table2Row]:
    """Rows of Zhang & Sandholm 2021, Table 2 for its seven games (or the subset whose specs are
    given)."""
    papers = PAPER_TABLE2
    if specs is not None:
        known = {p.spec: p for p in PAPER_TABLE2}
        unknown = [s for s in specs if s not in known]
        if unknown:
            raise ArgumentError(f"not a Table 2 game: {unknown!r}; known: {sorted(known)!r}")
        papers = tuple(known[s] for s in specs)
    return [table2_row(p) for p in papers]


def _fmt(v: float | int | None) -> str:
    if v is None:
        return ""
    return str(v) if isinstance(v, int) else f"{v:.2f}"


def _cell(ours: float | int | None, paper: float | int | None) -> str:
    """`ours (paper)`."""
    if ours is None and paper is None:
        return ""
    return f"{_fmt(ours)} ({_fmt(paper)})"


NOTE = ("Cells: ours (paper). Average |I^k| over decision nodes h, I = nodes sharing an infoset "
        "with h, hyperedges = infosets of players still to act (docs/knowledge.md).")


def format_table2(rows: Sequence[Table2Row], markdown: bool = True) -> str:
    """Table 2: Markdown with each cell `ours (paper)`, or with `markdown=False` aligned text
    for a terminal, a line of ours and a line of the paper's per game, `*` marking our cells
    whose printed digits differ from the paper's."""
    head = ["game", "nodes", "infosets", "diam", "k=1", "k=2", "k=3", "k=4", "k=inf"]
    if markdown:
        lines = [
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
        ]
        for r in rows:
            pairs = [(r.nodes, r.paper.nodes), (r.infosets, r.paper.infosets),
                     (r.diameter, r.paper.diameter), *zip(r.avg, r.paper.avg, strict=True)]
            lines.append("| " + " | ".join([r.label] + [_cell(o, p) for o, p in pairs]) + " |")
        return "\n".join([*lines, "", NOTE])
    body = []
    for r in rows:
        ours = [r.nodes, r.infosets, r.diameter, *r.avg]
        paper = [r.paper.nodes, r.paper.infosets, r.paper.diameter, *r.paper.avg]
        body.append([r.label] + [_fmt(o) + ("*" if _fmt(o) != _fmt(p) else " ")
                                 for o, p in zip(ours, paper, strict=True)])
        body.append(["  paper"] + [_fmt(p) + " " for p in paper])
    widths = [max(len(row[c]) for row in [head, *body]) for c in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) if c == 0 else cell.rjust(w)
                         for c, (cell, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    head = [head[0]] + [h + " " for h in head[1:]]
    out = [line(head), *(line(b) for b in body), "",
           "Ours, and the paper's print below. Average |I^k| over decision nodes h, I = nodes "
           "sharing an\ninfoset with h, hyperedges = infosets of players still to act; * = our "
           "digits differ\nfrom the paper's (docs/knowledge.md explains the differences)."]
    return "\n".join(out)


def matching_pennies_first_mover_pairs(n: int = 100) -> TableGame:
    """N-matching pennies with the observations mirrored: the first mover sees floor((n+1)/2).

    This orientation reproduces the paper's 100-matching pennies row exactly (docs/knowledge.md).
    """
    base = matching_pennies_n(n)

    def observe_fn(h: tuple[int, ...], p: int) -> Hashable:
        if len(h) == 1:
            return (h[0] + 1) // 2 if p == 0 else h[0] // 2
        return None

    return dataclasses.replace(
        base, name=f"matching_pennies_first_mover_pairs(n={n})", observe_fn=observe_fn
    )


def matching_pennies_mirrored_row(n: int = 100) -> Table2Row:
    """The 100-matching pennies row computed on `matching_pennies_first_mover_pairs`."""
    paper = PAPER_TABLE2[-1]
    return table2_row(paper, build_tree(matching_pennies_first_mover_pairs(n)))


__all__ = [
    "KMAX",
    "PAPER_TABLE2",
    "KnowledgeStats",
    "PaperRow",
    "Table2Row",
    "format_table2",
    "knowledge_stats",
    "matching_pennies_first_mover_pairs",
    "matching_pennies_mirrored_row",
    "table2_row",
    "table2_rows",
]
