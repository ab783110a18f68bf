"""The settings of the Obscuro engine (`caligo.agents.obscuro`): `ObscuroConfig` and its option
parser (`OPTIONS_HELP`), the ablations of Obscuro, section 4.1, the budget option, the arena
sizing constants, and whether Stockfish is there."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from caligo.agents.options import EvalChoice, OptionReader
from caligo.agents.timing import (
    OBSCURO,
    UNTIMED,
    TcKind,
    TimeControl,
    TimingPolicy,
)
from caligo.errors import CaligoError
from caligo.fow.belief_update import MAX_THREADS
from caligo.fow.stockfish import (
    StockfishConfig,
    StockfishError,
    find_stockfish,
)
from caligo.search.config import (
    PRESETS,
    CarryOver,
    Expansion,
    Iterations,
    Preset,
    ResolvePrior,
    SearchConfig,
    SubgameKind,
)

MAX_SF_DEPTH = 4
"""The deepest `sfdepth`: a MultiPV call over every move costs about 1.8 times depth 1's at
depth 2 and 2.4 to 2.9 times at depth 3 (random middlegames), and one call must stay within
`StockfishConfig.call_timeout_s`."""


class ObscuroConfigError(CaligoError, ValueError):
    """A malformed Obscuro option or configuration field; the message quotes it."""


def _belief_share(share: float) -> TimingPolicy:
    """Obscuro's timing policy with P's update given `share` of a timed move's plan (the
    `bshare` option); ObscuroConfigError unless the update and the construction leave the
    search a share."""
    top = 1.0 - OBSCURO.construct_share
    if not 0.0 < share < top:
        raise ObscuroConfigError(f"bshare must be in (0, {top:g}) (the construction takes "
                                 f"{OBSCURO.construct_share:g} of the plan): {share!r}")
    return replace(OBSCURO, belief_share=share)


class Ablation(Enum):
    """Obscuro, section 4.1: the agent with one technique turned off (or all four)."""

    NONE = "none"  # full Obscuro
    NO_PURIFY = "no_purify"  # 1: mix over all stable actions, also under Resolve, no top-3
    KLSS = "klss"  # 2: 1-KLSS, the searcher's nodes in I^2 minus I frozen at the blueprint
    TWO_SIDED = "two_sided"  # 3: two-sided GT-CFR (both players explore)
    UNIFORM_PRIOR = "uniform_prior"  # 4: Resolve picks the root infoset uniformly
    ALL_OFF = "all_off"  # 5: all four of the above
    SIMPLE_EVAL = "simple_eval"  # 6: the simple evaluation instead of Stockfish

    def apply(self, config: SearchConfig) -> SearchConfig:
        """The search configuration with this ablation's switches turned."""
        changes: dict[str, Any] = {}
        if self in (Ablation.KLSS, Ablation.ALL_OFF):
            changes["subgame"] = SubgameKind.KLSS
        if self in (Ablation.TWO_SIDED, Ablation.ALL_OFF):
            changes["expansion"] = Expansion.TWO_SIDED
        if self in (Ablation.UNIFORM_PRIOR, Ablation.ALL_OFF):
            changes["resolve_prior"] = ResolvePrior.UNIFORM
        return replace(config, **changes) if changes else config

    @property
    def purifies(self) -> bool:
        """False for the ablations that play Obscuro's "purification off" policy."""
        return self not in (Ablation.NO_PURIFY, Ablation.ALL_OFF)


class Redraw(Enum):
    """How a P that lost the truth is drawn afresh (`caligo.agents.fow_belief.FowBelief`).
    `LAST_SEEN` places the pieces better but did not play stronger in a match (H0 accepted
    against `UNIFORM` with P capped at 1,000 positions, docs/strength.md)."""

    UNIFORM = "uniform"  # the opponent's unseen pieces anywhere the observation allows
    LAST_SEEN = "last_seen"  # pieces on their last-seen squares by chance (`caligo.fow.last_seen`),
    # and a redrawn P topped up with fresh draws while it thins (`FowBelief._top_up`)


class Sample(Enum):
    """Which positions of P the subgame's sampled roots are (`FowBelief.sample`): `UNIFORM`
    as Obscuro (Fig. 9 line 11), or `LAST_SEEN`: drawn by how plausible each is given where
    the opponent's pieces were last seen (`caligo.fow.plausible`, fitted on played games)."""

    UNIFORM = "uniform"
    LAST_SEEN = "last_seen"


NODES_PER_S_STOCKFISH = 60_000
NODES_PER_S_SIMPLE = 300_000
"""Tree growth to size an arena for a time budget (about what `caligo bench engine` measures
on 2 cores)."""
MIN_CAPACITY = 32_768
MIN_TIMED_CAPACITY = 32_768
"""Arena rows on top of the growth under an iteration / a time budget (the iteration floor was
100,000 rows: about 30 MB more per hosted game of the web's iters=200 engine for nothing)."""
def parse_budget(text: str) -> TimeControl:
    """The agent's own budget option: ``auto`` (the referee's), ``iters=N`` or
    ``mt=SECONDS``; raise ObscuroConfigError quoting anything else."""
    t = text.strip().lower()
    if t in ("auto", "", "none"):
        return UNTIMED
    try:
        tc = TimeControl.parse(t)
    except CaligoError:
        tc = UNTIMED
    if tc.kind in (TcKind.ITERATIONS, TcKind.MOVETIME):
        return tc
    raise ObscuroConfigError(f"invalid budget {text!r} (expected auto, iters=N or mt=SECONDS)")


# --- Stockfish engines bound to expander slots -----------------------------------------------


def stockfish_available(path: str | None = None) -> bool:
    """True when a Stockfish executable is found (`find_stockfish`)."""
    try:
        find_stockfish(path)
    except StockfishError:
        return False
    return True


# --- configuration ---------------------------------------------------------------------------


OPTIONS_HELP = (
    "budget=auto|iters=N|mt=SECONDS, eval=auto|stockfish|simple, ablation=none|no_purify|klss|"
    "two_sided|uniform_prior|all_off|simple_eval, subgame=kluss|klss|common_knowledge (the "
    "subgame when no ablation overrides it), preset=obscuro|safe|obscuro_fix (the subgame "
    "construction of `caligo.search.config.PRESETS`; not with subgame=), carry=profile_only|"
    "profile_and_regrets (what the next move's search keeps), expand=R (expansions "
    "per iteration under an iteration budget), roots=N, rootshare=F (the share of the "
    "construction's time left that expanding our infoset's roots may take, in (0, 1]), "
    "prior=T (the temperature of a PUCT prior from the evaluator's values; default none), "
    "expanders=N, engines=N (Stockfish processes), nodes=N (arena capacity), belief=N (P cap), "
    "bthreads=N (threads of P's update; default: the search's, 1 + expanders), "
    "bshare=F (the share of a timed move's plan P's update may take, in (0, 0.75); default "
    "0.4), "
    "sfdepth=N (the depth of Stockfish's MultiPV call on a leaf, 1 to 4; default 1, Obscuro's), "
    "redraw=uniform|last_seen (how a P that lost the truth is drawn afresh and kept up), "
    "sample=uniform|last_seen (which positions of P the subgame's sampled roots are), seed=N, "
    "stockfish=PATH"
)


@dataclass(frozen=True)
class ObscuroConfig:
    """Everything an `ObscuroAgent` needs; validated at construction.

    budget: the agent's own budget (`auto`: the referee's time control). evaluator, ablation:
    above. subgame: the subgame built at a decision (KLUSS in Obscuro; the `klss` ablations
    override it). preset: a named construction (`caligo.search.config.Preset`: its subgame,
    knowledge order, root expansion and root floor) in place of `subgame`. carry_over: what a
    move's search keeps of the last one's (Obscuro: the tree and the last iterates; also the
    cumulative regrets and predictions with `PROFILE_AND_REGRETS`). expand_ratio: leaf
    expansions per solver iteration under an iteration budget (the deterministic schedule
    spreads them over the iterations). min_roots: Fig. 9's MININFOSETSIZE. root_share: the
    search's `root_expansion_share` (a preset's root expansion under a time budget).
    puct_prior: the search's `puct_prior` (None: Obscuro's PUCT, with no prior).
    expanders: expander threads under a time budget. engines: Stockfish processes (`slots`:
    at least one per expander); the search's expanders use theirs, and the agent's own calls
    outside the search (the subgame's roots and their expansion, while the solver's core is
    idle) are spread over all of them. max_nodes: the arena's capacity. belief_cap: P's memory cap
    in positions. belief_threads: threads of P's opponent-ply update in a move (None: the
    search's own count, a solver and `expanders`; the update runs before the search, while
    those cores would idle; its result is the same on any number). On the opponent's time a
    cut update is finished on one thread. redraw: how a P that lost the truth is drawn
    afresh (`Redraw`). sample: which positions of P the subgame's sampled roots are
    (`Sample`). seed: mixed
    into every game's seed.
    stockfish: the StockfishPool settings (path, own-call cap, ...). time: the timing policy
    (`caligo.agents.timing`).
    """

    budget: TimeControl = UNTIMED
    evaluator: EvalChoice = EvalChoice.AUTO
    ablation: Ablation = Ablation.NONE
    subgame: SubgameKind = SubgameKind.KLUSS
    preset: Preset | None = None
    carry_over: CarryOver = CarryOver.PROFILE_ONLY
    expand_ratio: float = 0.25
    min_roots: int = 256
    root_share: float = 1.0
    puct_prior: float | None = None
    expanders: int = 1
    engines: int = 2
    expander_batch: int = 4
    max_nodes: int = 2_000_000
    belief_cap: int = 2_000_000
    belief_threads: int | None = None
    redraw: Redraw = Redraw.UNIFORM
    sample: Sample = Sample.UNIFORM
    seed: int = 0
    stockfish: StockfishConfig = field(
        default_factory=lambda: StockfishConfig(own_call_cap=8))
    time: TimingPolicy = OBSCURO

    def __post_init__(self) -> None:
        for name, kind in (("evaluator", EvalChoice), ("ablation", Ablation),
                           ("subgame", SubgameKind), ("carry_over", CarryOver),
                           ("redraw", Redraw), ("sample", Sample),
                           ("budget", TimeControl), ("stockfish", StockfishConfig),
                           ("time", TimingPolicy)):
            if not isinstance(getattr(self, name), kind):
                raise ObscuroConfigError(f"{name} must be a {kind.__name__}: "
                                         f"{getattr(self, name)!r}")
        if not isinstance(self.expand_ratio, int | float) or not (
            math.isfinite(self.expand_ratio) and self.expand_ratio > 0
        ):
            raise ObscuroConfigError(f"expand_ratio must be > 0: {self.expand_ratio!r}")
        if not isinstance(self.root_share, int | float) or not 0.0 < self.root_share <= 1.0:
            raise ObscuroConfigError(f"root_share must be in (0, 1]: {self.root_share!r}")
        if self.puct_prior is not None and (
            not isinstance(self.puct_prior, int | float) or not math.isfinite(self.puct_prior)
            or self.puct_prior <= 0
        ):
            raise ObscuroConfigError(f"puct_prior must be > 0: {self.puct_prior!r}")
        for name, lo in (("min_roots", 0), ("expanders", 1), ("engines", 1), ("expander_batch", 1),
                         ("max_nodes", 1024), ("belief_cap", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ObscuroConfigError(f"{name} must be an int >= {lo}: {v!r}")
        for name in ("expanders", "engines"):  # each a thread or a Stockfish process
            if getattr(self, name) > MAX_THREADS:
                raise ObscuroConfigError(f"{name} must be at most {MAX_THREADS}: "
                                         f"{getattr(self, name)!r}")
        bt = self.belief_threads
        if bt is not None and (isinstance(bt, bool) or not isinstance(bt, int)
                               or not 1 <= bt <= MAX_THREADS):
            raise ObscuroConfigError(f"belief_threads must be an int in [1, {MAX_THREADS}]: "
                                     f"{bt!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ObscuroConfigError(f"seed must be an int: {self.seed!r}")
        if self.preset is not None and not isinstance(self.preset, Preset):
            raise ObscuroConfigError(f"preset must be a Preset: {self.preset!r}")
        if self.preset is not None and self.subgame is not SubgameKind.KLUSS:
            raise ObscuroConfigError(f"a preset ({self.preset.value}) decides the subgame; "
                                     f"do not also set subgame={self.subgame.value}")
        if self.budget.kind is TcKind.CLOCK:
            raise ObscuroConfigError(f"the budget option is auto, iters=N or mt=SECONDS, not a "
                                     f"clock: {self.budget}")

    @property
    def update_threads(self) -> int:
        """The threads of P's opponent-ply update (`belief_threads`, else the search's)."""
        if self.belief_threads is not None:
            return self.belief_threads
        return min(MAX_THREADS, 1 + self.expanders)

    @property
    def slots(self) -> int:
        """The Stockfish processes of the agent's pool (`SlotPool` slots)."""
        return max(self.engines, self.expanders)

    @property
    def builtin(self) -> EvalChoice:
        """Which built-in evaluator scores the leaves when Stockfish does not: the plain one
        under the simple-eval ablation (the paper's), else the `eval` choice's
        (`EvalChoice.builtin_evaluator`)."""
        return EvalChoice.SIMPLE if self.ablation is Ablation.SIMPLE_EVAL else self.evaluator

    @property
    def last_seen(self) -> bool:
        """Whether a redrawn P follows where the opponent's pieces were last seen (`Redraw`)."""
        return self.redraw is Redraw.LAST_SEEN

    @property
    def weigh_roots(self) -> bool:
        """Whether the subgame's sampled roots are drawn by plausibility (`Sample`)."""
        return self.sample is Sample.LAST_SEEN

    @property
    def uses_stockfish(self) -> bool:
        """Whether games use Stockfish (AUTO resolves to it when the binary is found)."""
        if self.ablation is Ablation.SIMPLE_EVAL or self.evaluator.builtin:
            return False
        if self.evaluator is EvalChoice.STOCKFISH:
            return True
        return stockfish_available(self.stockfish.path)

    def search_config(self) -> SearchConfig:
        """The search's configuration before a move's budget is set (ablation applied)."""
        base = SearchConfig(
            budget=Iterations(1000), expansions=250, expand_ratio=self.expand_ratio,
            min_roots=self.min_roots, subgame=self.subgame,
            expanders=self.expanders, expander_batch=self.expander_batch,
            max_nodes=self.max_nodes, seed=self.seed, carry_over=self.carry_over,
        )
        if self.preset is not None:
            base = replace(base, **PRESETS[self.preset])  # type: ignore[arg-type]
        return self.ablation.apply(replace(base, root_expansion_share=self.root_share,
                                           puct_prior=self.puct_prior))

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ObscuroConfig:
        """Parse registry options (`OPTIONS_HELP`, read by `caligo.agents.options`); raise
        OptionError or ObscuroConfigError quoting them."""
        opts = OptionReader("obscuro", options, (
            "budget", "eval", "ablation", "subgame", "preset", "carry", "expand", "roots",
            "rootshare", "prior", "expanders", "engines", "nodes", "belief", "bthreads", "bshare",
            "sfdepth", "redraw", "sample", "seed", "stockfish"))
        kw: dict[str, Any] = {}
        if "budget" in opts:
            kw["budget"] = parse_budget(opts.text("budget"))
        for key, name, kind in (("eval", "evaluator", EvalChoice), ("ablation", "ablation",
                                Ablation), ("subgame", "subgame", SubgameKind),
                                ("preset", "preset", Preset),
                                ("carry", "carry_over", CarryOver),
                                ("redraw", "redraw", Redraw), ("sample", "sample", Sample)):
            if key in opts:
                kw[name] = opts.choice(key, kind)
        if "expand" in opts:
            kw["expand_ratio"] = opts.number("expand")
        if "rootshare" in opts:
            kw["root_share"] = opts.number("rootshare")
        if "prior" in opts:
            kw["puct_prior"] = opts.number("prior")
        if "bshare" in opts:
            kw["time"] = _belief_share(opts.number("bshare"))
        for key, name in (("roots", "min_roots"), ("expanders", "expanders"),
                          ("engines", "engines"), ("nodes", "max_nodes"),
                          ("belief", "belief_cap"), ("bthreads", "belief_threads"),
                          ("seed", "seed")):
            if key in opts:
                kw[name] = opts.integer(key)
        if "stockfish" in opts:
            kw["stockfish"] = StockfishConfig(path=opts.text("stockfish"), own_call_cap=8)
        if "sfdepth" in opts:
            depth = opts.integer("sfdepth")
            if not 1 <= depth <= MAX_SF_DEPTH:
                raise ObscuroConfigError(f"sfdepth must be in [1, {MAX_SF_DEPTH}]: {depth}")
            kw["stockfish"] = replace(kw.get("stockfish", cls().stockfish), depth=depth)
        config = cls(**kw)
        named = config.stockfish.path is not None and not config.evaluator.builtin
        if named and not stockfish_available(config.stockfish.path):  # not AUTO's fallback
            raise ObscuroConfigError(f"obscuro: no Stockfish executable at "
                                     f"{config.stockfish.path!r} (option stockfish)")
        if config.evaluator is EvalChoice.STOCKFISH and not stockfish_available(
            config.stockfish.path
        ):
            raise ObscuroConfigError("obscuro: eval=stockfish but no Stockfish executable was "
                                     "found (install Debian's `stockfish`)")
        return config
