"""`SearchConfig` (frozen, validated), its enums, and the frozen `SearchResult` of one search.

One enum per ablation of Obscuro, section 4.1 (purification, KLUSS vs KLSS, one- vs two-sided
GT-CFR, the Resolve prior) plus the switches the small-game study needs (last vs average
iterate, full expansion, the first decision's roots, true vs singleton opponent infosets at
sampled roots, carry-over of regrets, the gadget). Defaults are Obscuro's (Obscuro, Figs. 8-12,
appendix C; docs/design.md, "One move of Obscuro's search"), except where a field says otherwise.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from caligo.errors import CaligoError
from caligo.subgame.gadget import AlternateValues, ResolvePrior

__all__ = [
    "PRESETS",
    "AlternateValues",
    "CarryOver",
    "EvaluatorKind",
    "Expansion",
    "FirstDecision",
    "GadgetMode",
    "InitialStrategy",
    "Iterate",
    "Iterations",
    "Preset",
    "Purification",
    "ResolvePrior",
    "RootExpansion",
    "RootGadget",
    "RootInfosets",
    "Schedule",
    "SearchConfig",
    "SearchConfigError",
    "SearchError",
    "SearchResult",
    "Seconds",
    "SubgameKind",
    "TimeSplit",
    "preset",
]


class SearchError(CaligoError, ValueError):
    """Bad input to the search (a game, a state, a belief or an observation that does not fit)."""


class SearchConfigError(SearchError):
    """A `SearchConfig` field out of range or of the wrong type."""


class Expansion(enum.Enum):
    """How the tree grows (Obscuro, section 3.3, C.4; ablation 3)."""

    ONE_SIDED = "one_sided"  # the explorer mixes; the other player follows its current strategy
    TWO_SIDED = "two_sided"  # GT-CFR as published: both players explore on every walk
    FULL = "full"  # expand the whole subgame before solving (small games: isolates the solver)


class SubgameKind(enum.Enum):
    """Which knowledge-limited subgame is built at a decision (Obscuro, appendix C.6; ablation
    2).

    The kept set is I^2 for every kind but COMMON_KNOWLEDGE; the kinds differ in how the
    searcher plays at its *order-2* nodes, the nodes of I^2 \\ I and everything below them
    (`caligo.search.construct`, "Order-2 play"):

    - KLUSS: re-optimized (2-KLUSS, Obscuro appendix C.6);
    - KLSS: frozen at the blueprint (1-KLSS, Zhang and Sandholm 2021);
    - KLSS_ROOT: frozen at the searcher's first decision below each root outside I (the
      infosets parallel to I, which have a real blueprint from the previous search), and
      re-optimized at every later decision (whose blueprint is a shallow guess, Obscuro appendix C.6
      remark 3);
    - BLEND: the fixed mixture (1 - b) blueprint + b re-optimized at every order-2 infoset,
      b = `SearchConfig.order2_blend` (b = 0 is KLSS, b = 1 is KLUSS);
    - SAFE_KLUSS: re-optimized, but never worse than the blueprint against the opponent's
      current strategy by more than `SearchConfig.order2_floor` per unit of reach: the
      Safe-KLSS margin of Liu, Fu, Fu and Yang (ICML 2023), "Opponent-limited online search
      for imperfect information games", kept as a floor at every order-2 infoset.
    """

    KLUSS = "kluss"  # 2-KLUSS (Obscuro): the searcher's nodes in I^2 \\ I are re-optimized
    KLSS = "klss"  # 1-KLSS (ZS21): they (and everything below them) are frozen at the blueprint
    COMMON_KNOWLEDGE = "common_knowledge"  # I^inf within the carried tree: classic subgame
    # solving (safe with best-response alternate values; not an Obscuro option)
    KLSS_ROOT = "klss_root"  # 1-KLSS at the order-2 root decisions, re-optimized below them
    BLEND = "blend"  # (1 - b) blueprint + b re-optimized at the order-2 infosets
    SAFE_KLUSS = "safe_kluss"  # re-optimized with a floor at the blueprint's value minus a margin

    @property
    def marks_order2(self) -> bool:
        """Whether the construction flags the order-2 region (every kind but KLUSS and
        COMMON_KNOWLEDGE)."""
        return self not in (SubgameKind.KLUSS, SubgameKind.COMMON_KNOWLEDGE)


class RootExpansion(enum.Enum):
    """Which roots of the subgame are expanded when it is built (`caligo.search.construct`)."""

    NONE = "none"  # Obscuro: a root grows only when an expansion walk reaches it
    INFOSET = "infoset"  # every root in our own infoset gets its children at construction, so
    # every position of P in the subgame answers to our strategy there (a leaf root is a
    # constant: our move cannot change its value, however it ends one ply down)


class GadgetMode(enum.Enum):
    """The root gadget (Obscuro, appendix C.1, Fig. 10 lines 11-13)."""

    BLEND = "blend"  # Obscuro: p_max blend of Resolve and Maxmargin
    MAXMARGIN = "maxmargin"
    RESOLVE = "resolve"


class RootGadget(enum.Enum):
    """The root gadget a subgame is in (Zhang & Sandholm 2021, Algorithm 12; appendix D.4).

    The search's result says which one its final iterate used (what purification keys on:
    Maxmargin when p_max = 0, so Resolve never entered and the strategy is safe; Resolve when
    p_max > 0); ZS21 switches its exact trunk between the two; `caligo.search.export` writes
    the trunk in the form named here.
    """

    NONE = "none"  # no gadget: the subgame grows from the game's true start
    MAXMARGIN = "maxmargin"
    RESOLVE = "resolve"


class Purification(enum.Enum):
    """Move selection (Obscuro, section 3.5, C.8, Fig. 8; ablation 1)."""

    STABLE_TOP3 = "stable_top3"  # Obscuro: mix over stable actions (at most max_support)
    NONE = "none"  # play the searched strategy as it is


class Iterate(enum.Enum):
    """Which PCFR+ strategy is played and carried (Obscuro, appendix C.7)."""

    LAST = "last"  # Obscuro
    AVERAGE = "average"  # the sequence-form average (for the small-game comparisons)


class CarryOver(enum.Enum):
    """What survives from one decision's tree to the next (docs/design.md, "The arena, the solver
    and the expanders")."""

    PROFILE_ONLY = "profile_only"  # the tree and the last iterates (as the first iterate)
    PROFILE_AND_REGRETS = "profile_and_regrets"  # also cumulative regrets and predictions


class FirstDecision(enum.Enum):
    """Where the subgame roots are when there is no previous tree."""

    TRUE_START = "true_start"  # search from the game's start state first (Obscuro, section 3:
    # "at the beginning of the game P contains only the starting position"), then re-root
    SAMPLED = "sampled"  # Fig. 9 literally: roots sampled from the belief, no blueprint


class RootInfosets(enum.Enum):
    """The opponent's infosets at roots sampled from the belief (Fig. 9 lines 12-13)."""

    SINGLETON = "singleton"  # Obscuro: the opponent is assumed to know the sampled state
    TRUE = "true"  # the game's true opponent infoset, with its other states, where provided


class InitialStrategy(enum.Enum):
    """The first strategy of a newly created infoset (Obscuro, appendix C.5)."""

    BEST_CHILD = "best_child"  # all weight on the child with the best heuristic value
    UNIFORM = "uniform"


class EvaluatorKind(enum.Enum):
    """Which leaf evaluator an agent on a `TreeGame` uses (`caligo.search.evaluators`)."""

    ZERO = "zero"
    PERFECT_INFO = "perfect_info"  # the Stockfish analogue
    EQUILIBRIUM = "equilibrium"  # subtree values under an LP equilibrium of the full game


class Schedule(enum.Enum):
    """How the solver and the expanders share time (Obscuro, section 3.4)."""

    DETERMINISTIC = "deterministic"  # one thread, a fixed interleaving, seeded: bit-identical
    THREADED = "threaded"  # one solver thread and `expanders` expander threads


@dataclass(frozen=True)
class Iterations:
    """A budget of solver iterations (one iteration updates both players)."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int | np.integer) or self.n < 1:
            raise SearchConfigError(f"Iterations needs a positive int, got {self.n!r}")


@dataclass(frozen=True)
class Seconds:
    """A wall-clock budget for one search."""

    s: float

    def __post_init__(self) -> None:
        if isinstance(self.s, bool) or not isinstance(self.s, int | float) or not (
            math.isfinite(self.s) and self.s > 0
        ):
            raise SearchConfigError(f"Seconds needs a positive finite number, got {self.s!r}")


def _enum(name: str, value: object, kind: type[enum.Enum]) -> None:
    if not isinstance(value, kind):
        raise SearchConfigError(f"{name} must be a {kind.__name__}, got {value!r}")


@dataclass(frozen=True)
class SearchConfig:
    """Every knob of one search and of the agent loop around it; validated at construction.

    budget: `Iterations(n)` or `Seconds(s)`. expansions: leaf expansions per search (each adds
    all children of one leaf); in the deterministic schedule they are spread evenly over the
    first (1 - solver_tail) of the iterations; with `Seconds` they are a cap (None: no cap).
    solver_tail: the share of the budget the solver runs on after the expanders stop (Obscuro,
    section 3.4; the paper does not quantify it). min_roots / max_roots: Fig. 9's MININFOSETSIZE
    (256) and an optional cap on the carried roots of our infoset (None: none). puct_c, explore_mix:
    C and the weight of the PUCT argmax in the explorer's mix (C.4). max_support: Fig. 8's
    MAXSUPPORT. gifts: subtract the gift estimate (C.2) from alternate values. max_nodes: the
    arena's node capacity (it never grows during a search). expanders: expander threads (THREADED
    only); expander_batch: walks an expander makes per claim, expanded with one game call and one
    evaluator call (amortises Python per leaf). seed: the root of every random choice. order2_blend:
    b of `SubgameKind.BLEND`, the share of the re-optimized strategy in the searcher's order-2 play.
    order2_floor: the margin of `SubgameKind.SAFE_KLUSS`, in units of the game's largest payoff per
    unit of reach. knowledge_order: k of Zhang and Sandholm's k-KLSS (odd): the kept set is I^(k+1)
    and the order-2 region starts at the roots outside I^k (1: Obscuro's 2-KLUSS and ZS21's 1-KLSS;
    3: 3-KLSS, whose re-optimized infosets of the searcher are complete, and 4-KLUSS).
    root_expansion: which roots are expanded at construction (`RootExpansion`). root_floor: eps, the
    share of the Resolve prior alpha(J) in the gadget opponent's root weights: w_J = (1 - eps)
    w_J(gadget) + eps alpha(J), so no root's outcome ever weighs zero (a restricted opponent in the
    sense of Johanson, Zinkevich and Bowling 2008, "Computing robust counter-strategies"; 0 is
    Obscuro). root_expansion_share: the share of the construction's time left (to each instant
    of its deadline) that expanding those roots may take; 1 is all of it (a timed search
    only: an iteration count's construction has only the referee's guard). puct_prior: the
    temperature T of a prior on the PUCT bonus from the evaluator's values of a node's children
    (v, in the acting player's view, divided by the utility scale): action a's bonus is weighed
    by n softmax(v / T)_a, so the weights average 1 and T -> inf is no prior. None is Obscuro's
    C.4 (no prior); AlphaZero's PUCT takes its prior from a policy network instead (Silver et al.
    2018, "A general reinforcement learning algorithm that masters chess, shogi, and Go through
    self-play").
    """

    budget: Iterations | Seconds = field(default_factory=lambda: Iterations(1000))
    expansions: int | None = 1000
    expand_ratio: float | None = None
    expansion: Expansion = Expansion.ONE_SIDED
    subgame: SubgameKind = SubgameKind.KLUSS
    gadget: GadgetMode = GadgetMode.BLEND
    resolve_prior: ResolvePrior = ResolvePrior.BLUEPRINT_MIX
    alternate_values: AlternateValues = AlternateValues.BLUEPRINT
    gifts: bool = True
    purification: Purification = Purification.STABLE_TOP3
    max_support: int = 3
    iterate: Iterate = Iterate.LAST
    carry_over: CarryOver = CarryOver.PROFILE_ONLY
    first_decision: FirstDecision = FirstDecision.TRUE_START
    root_infosets: RootInfosets = RootInfosets.SINGLETON
    initial_strategy: InitialStrategy = InitialStrategy.BEST_CHILD
    min_roots: int = 256
    max_roots: int | None = None
    puct_c: float = 1.0
    explore_mix: float = 0.5
    solver_tail: float = 0.15
    schedule: Schedule = Schedule.DETERMINISTIC
    expanders: int = 1
    expander_batch: int = 8
    max_nodes: int = 2_000_000
    seed: int = 0
    order2_blend: float = 0.5
    order2_floor: float = 0.0
    knowledge_order: int = 1
    root_expansion: RootExpansion = RootExpansion.NONE
    root_floor: float = 0.0
    root_expansion_share: float = 1.0
    puct_prior: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Iterations | Seconds):
            raise SearchConfigError(f"budget must be Iterations or Seconds, got {self.budget!r}")
        for name, kind in (
            ("expansion", Expansion), ("subgame", SubgameKind), ("gadget", GadgetMode),
            ("resolve_prior", ResolvePrior), ("alternate_values", AlternateValues),
            ("purification", Purification), ("iterate", Iterate), ("carry_over", CarryOver),
            ("first_decision", FirstDecision), ("root_infosets", RootInfosets),
            ("initial_strategy", InitialStrategy), ("schedule", Schedule),
            ("root_expansion", RootExpansion),
        ):  # fmt: skip
            _enum(name, getattr(self, name), kind)
        if self.expansions is not None and (
            isinstance(self.expansions, bool)
            or not isinstance(self.expansions, int | np.integer)
            or self.expansions < 0
        ):
            raise SearchConfigError(f"expansions must be a nonnegative int or None, got "
                                    f"{self.expansions!r}")
        if self.expansions is None and isinstance(self.budget, Iterations) and (
            self.expansion is not Expansion.FULL and self.expand_ratio is None
        ):
            raise SearchConfigError("an Iterations budget needs an expansion count "
                                    "(or Expansion.FULL)")
        for name, lo in (("max_support", 1), ("min_roots", 0), ("expanders", 1),
                         ("expander_batch", 1), ("max_nodes", 16), ("knowledge_order", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
                raise SearchConfigError(f"{name} must be an int >= {lo}, got {v!r}")
        if self.max_roots is not None and (
            isinstance(self.max_roots, bool) or not isinstance(self.max_roots, int | np.integer)
            or self.max_roots < 1
        ):
            raise SearchConfigError(f"max_roots must be a positive int or None, got "
                                    f"{self.max_roots!r}")
        for name in ("puct_c", "explore_mix", "solver_tail", "order2_blend", "order2_floor",
                     "root_floor", "root_expansion_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SearchConfigError(f"{name} must be a finite number, got {v!r}")
        if self.puct_prior is not None and (
            isinstance(self.puct_prior, bool) or not isinstance(self.puct_prior, int | float)
            or not math.isfinite(self.puct_prior) or self.puct_prior <= 0
        ):
            raise SearchConfigError(f"puct_prior must be a finite number > 0 or None, got "
                                    f"{self.puct_prior!r}")
        if self.puct_c < 0:
            raise SearchConfigError(f"puct_c must be >= 0, got {self.puct_c!r}")
        if not 0.0 <= self.explore_mix <= 1.0:
            raise SearchConfigError(f"explore_mix must be in [0, 1], got {self.explore_mix!r}")
        if not 0.0 <= self.solver_tail < 1.0:
            raise SearchConfigError(f"solver_tail must be in [0, 1), got {self.solver_tail!r}")
        if self.knowledge_order % 2 != 1:
            raise SearchConfigError(f"knowledge_order must be odd (k of k-KLSS), got "
                                    f"{self.knowledge_order!r}")
        if not 0.0 <= self.order2_blend <= 1.0:
            raise SearchConfigError(f"order2_blend must be in [0, 1], got {self.order2_blend!r}")
        if not 0.0 <= self.root_floor <= 1.0:
            raise SearchConfigError(f"root_floor must be in [0, 1], got {self.root_floor!r}")
        if not 0.0 < self.root_expansion_share <= 1.0:
            raise SearchConfigError(f"root_expansion_share must be in (0, 1], got "
                                    f"{self.root_expansion_share!r}")
        if self.order2_floor < 0.0:
            raise SearchConfigError(f"order2_floor must be >= 0, got {self.order2_floor!r}")
        if not isinstance(self.gifts, bool):
            raise SearchConfigError(f"gifts must be a bool, got {self.gifts!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise SearchConfigError(f"seed must be an int, got {self.seed!r}")
        if self.schedule is Schedule.DETERMINISTIC and isinstance(self.budget, Seconds):
            raise SearchConfigError("the deterministic schedule needs an Iterations budget")


class Preset(enum.Enum):
    """Named constructions (`PRESETS`; `preset`): the fields of `SearchConfig` that decide the
    subgame at a decision, nothing else (budget, expansion, purification stay the caller's)."""

    OBSCURO = "obscuro"  # Obscuro's paper: 2-KLUSS, roots grow when walks reach them, no floor
    SAFE = "safe"  # (docs/search.md, "The presets and the recommendation"): 1-KLSS,
    # every root of our infoset expanded at construction, a 5% floor of the prior on the weights
    OBSCURO_FIX = "obscuro_fix"  # Obscuro's KLUSS with the same decided-loss fix


PRESETS: dict[Preset, dict[str, object]] = {
    Preset.OBSCURO: {"subgame": SubgameKind.KLUSS, "knowledge_order": 1,
                     "root_expansion": RootExpansion.NONE, "root_floor": 0.0},
    Preset.SAFE: {"subgame": SubgameKind.KLSS, "knowledge_order": 1,
                  "root_expansion": RootExpansion.INFOSET, "root_floor": 0.05},
    Preset.OBSCURO_FIX: {"subgame": SubgameKind.KLUSS, "knowledge_order": 1,
                         "root_expansion": RootExpansion.INFOSET, "root_floor": 0.05},
}


def preset(which: Preset, **overrides: object) -> SearchConfig:
    """A `SearchConfig` with the preset's construction fields, then `overrides`."""
    if not isinstance(which, Preset):
        raise SearchConfigError(f"preset must be a Preset, got {which!r}")
    return SearchConfig(**{**PRESETS[which], **overrides})  # type: ignore[arg-type]


@dataclass(frozen=True)
class TimeSplit:
    """Where one search's wall time went, in seconds."""

    construct: float  # building the subgame from the previous tree and the belief
    solve: float  # solver passes (including the gadget root updates)
    expand: float  # leaf selection, game expansion, evaluation and appending
    total: float


@dataclass(frozen=True, eq=False)
class SearchResult:
    """One finished search at the searching player's infoset.

    actions: int32[k], the game's action labels at the infoset; policy: float64[k], the played
    iterate (last or average); play: float64[k], the purified policy the agent samples from;
    stable: bool[k], actions in the support continuously since T_1/2. value: the searcher's
    value of the subgame under the final profile (the gadget's value when a gadget is used),
    in the searcher's utility. nodes / infosets: the arena's size at the end; carried_nodes /
    carried_infosets: what survived from the previous tree; roots: root states of the subgame
    (sampled: how many of them came from the belief). iterations, expansions: work done;
    t_half: the iteration reached at half the budget; depth: the deepest node. p_max and
    gadget: the Resolve/Maxmargin blend at the end.
    """

    actions: np.ndarray
    policy: np.ndarray
    play: np.ndarray
    stable: np.ndarray
    value: float
    nodes: int
    infosets: int
    carried_nodes: int
    carried_infosets: int
    roots: int
    sampled: int
    iterations: int
    expansions: int
    t_half: int
    depth: int
    p_max: float
    gadget: RootGadget
    node_visits: int
    time: TimeSplit
