"""`caligo.agents.timing`: the move timer's plans against hand-computed budgets, its learning,
its solvency, and the time types' validation. All on a fake clock.

Expected values: computed by hand from the rule in the module docstring, with each preset's
knobs (`OBSCURO`, `ZS21`, `WEB`); the arithmetic is written next to each assertion.
"""

from __future__ import annotations

import math

import pytest

from caligo.agents.timing import (
    OBSCURO,
    UNTIMED,
    WEB,
    ZS21,
    Clock,
    MoveTimer,
    TcKind,
    TimeControl,
    TimeControlError,
    TimingPolicy,
    TimingPolicyError,
    phase_factor,
    strength_clock,
)
from caligo.limits import Deadline, Limits, LimitsError


class Fake:
    """A clock the test sets by hand (seconds)."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def plan_ms(policy: TimingPolicy, clock: Clock, own: TimeControl = UNTIMED, moves: int = 0,
            legal: int = 20, belief: int | None = None) -> tuple[float, float]:
    """(soft, hard) of one plan in ms from the move's start."""
    fake = Fake()
    timer = MoveTimer(policy, own, now=fake)
    timer.own_moves = moves
    timer.start()
    plan = timer.plan(clock, legal, belief)
    assert plan.deadline is not None and plan.start == 100.0
    return (round(1000 * (plan.deadline.soft - 100.0), 6),
            round(1000 * (plan.deadline.hard - 100.0), 6))


def clock(remaining: int, inc: int = 0, deadline: int | None = None) -> Clock:
    return Clock(TcKind.CLOCK, remaining_ms=remaining, increment_ms=inc, deadline_ms=deadline)


def test_move_time_plans() -> None:
    mt = Clock(TcKind.MOVETIME, movetime_ms=1000, deadline_ms=1000)
    # Obscuro: soft = 1000 (1 - 0.08) - 20, hard = 1000 - 20
    assert plan_ms(OBSCURO, mt) == (900.0, 980.0)
    # ZS21: soft = 2000 (1 - 0.1) - 30, hard = 2000 - 30
    assert plan_ms(ZS21, Clock(TcKind.MOVETIME, movetime_ms=2000)) == (1770.0, 1970.0)
    # the referee's deadline caps both: 1000 - 30
    capped = Clock(TcKind.MOVETIME, movetime_ms=5000, deadline_ms=1000)
    assert plan_ms(ZS21, capped) == (970.0, 970.0)
    # no budget at all: the policy's untimed 1000 ms as a move time
    assert plan_ms(OBSCURO, Clock()) == (900.0, 980.0)


def test_clock_plans() -> None:
    # Obscuro, 180+2 at move 0: usable 179700, 60 moves left -> 2995 + 0.75 * 2000 = 4495,
    # x phase 0.6 = 2697 (cap 0.2 usable + 1500 = 37440 not reached); maximum
    # min(3 x 2697, 0.2 usable + 2000, usable / 2 + 2000) = 8091; minus the 20 ms overhead
    assert plan_ms(OBSCURO, clock(180_000, 2000, 180_000)) == (2677.0, 8071.0)
    # at own move 20: 40 moves left -> 4492.5 + 1500 = 5992.5, x 1.3 = 7790.25; max 23370.75
    assert plan_ms(OBSCURO, clock(180_000, 2000), moves=20) == (7770.25, 23350.75)
    # ZS21, 60+1: 60000 / 30 + 750 = 2750 (no reserve, no phase); max min(5500, 13000, 31000)
    assert plan_ms(ZS21, clock(60_000, 1000)) == (2720.0, 5470.0)
    # ZS21 at 1 s + 2 s: 1000 / 30 + 1500 = 1533.3 capped at 0.2 x 1000 + 1500 = 1700 ->
    # 1533.33; max min(3066.7, 200 + 2000, 500 + 2000) = 2200
    soft, hard = plan_ms(ZS21, clock(1000, 2000))
    assert soft == pytest.approx(1000 / 30 + 1500 - 30) and hard == pytest.approx(2170.0)


def test_answer_instants() -> None:
    """The watchdog's instant (`MovePlan.answer_ms`): half the policy's overhead before the
    move's limit, never before the hard instant; none for an iteration count."""

    def answer(policy: TimingPolicy, c: Clock, own: TimeControl = UNTIMED) -> float:
        timer = MoveTimer(policy, own, now=Fake())
        return timer.plan(c).answer_ms

    # Obscuro at mt=1: 1000 - 20 / 2 = 990 (hard 980); at mt=0.1: 100 - 10 = 90 (hard 80)
    assert answer(OBSCURO, Clock(TcKind.MOVETIME, movetime_ms=1000, deadline_ms=1000)) == 990.0
    assert answer(OBSCURO, Clock(TcKind.MOVETIME, movetime_ms=100, deadline_ms=100)) == 90.0
    # ZS21 (overhead 30): a referee deadline below the move time caps it: 1000 - 15
    assert answer(ZS21, Clock(TcKind.MOVETIME, movetime_ms=5000, deadline_ms=1000)) == 985.0
    # a clock: the plan's maximum (8091, see test_clock_plans) - 10
    assert answer(OBSCURO, clock(180_000, 2000, 180_000)) == 8081.0
    # an iteration count is deterministic work: no watchdog
    fake = Fake()
    plan = MoveTimer(OBSCURO, TimeControl.parse("iters=500"), now=fake).plan(
        Clock(TcKind.MOVETIME, movetime_ms=300, deadline_ms=10_000))
    assert plan.answer_ms == 0.0 and plan.answer_by is None
    timed = MoveTimer(OBSCURO, now=fake).plan(Clock(TcKind.MOVETIME, movetime_ms=300))
    assert timed.answer_by == pytest.approx(100.0 + 0.290)


def test_plans_spend_less_on_forced_moves_and_known_positions() -> None:
    # one legal move: the optimum is forced_ms = 20, minus 20 of overhead, floored at 5 ms
    assert plan_ms(OBSCURO, clock(60_000), legal=1)[0] == 5.0
    mt = Clock(TcKind.MOVETIME, movetime_ms=1000)
    assert plan_ms(OBSCURO, mt, legal=1)[0] == 20.0
    # |P| = 1: half the clock's optimum (60000 - 300) / 60 x 0.6 = 597 -> 298.5 - 20
    assert plan_ms(OBSCURO, clock(60_000), belief=1)[0] == pytest.approx(278.5)
    assert plan_ms(OBSCURO, clock(60_000), belief=2)[0] == pytest.approx(577.0)


def test_own_budget_options() -> None:
    fake = Fake()
    timer = MoveTimer(OBSCURO, TimeControl.parse("iters=500"), now=fake)
    plan = timer.plan(Clock(TcKind.MOVETIME, movetime_ms=300, deadline_ms=10_000))
    # an own iteration count replaces the referee's budget; its deadline is only a guard
    assert plan.iterations == 500 and plan.limits == Limits(500, plan.deadline)
    assert plan.deadline is not None and plan.deadline.soft == plan.deadline.hard == 100.0 + 9.98
    # under a count, a stage is its share of the guard (the belief update's 40%)
    bd = plan.belief_deadline
    assert bd is not None and bd.hard == pytest.approx(100.0 + 0.4 * 9.98)
    # a replay of a lost P may use half of the guard (10 s - 20 ms of overhead), then P is
    # redrawn; a timed move's replay half of the move (it used to run on until
    # the watchdog answered)
    r = plan.repair_deadline
    assert r is not None and r.hard == pytest.approx(100.0 + 0.5 * 9.98)
    timed = MoveTimer(OBSCURO, now=fake).plan(Clock(TcKind.MOVETIME, movetime_ms=300))
    r = timed.repair_deadline  # hard: half of 300 ms - 20 ms of overhead
    assert r is not None and r.hard == pytest.approx(100.14) and r.soft <= r.hard
    # an own move time inside the game clock: the clock's optimum wins when it is smaller
    # (60000 - 300) / 60 x 0.6 = 597 < 1500
    assert plan_ms(OBSCURO, clock(60_000), TimeControl.parse("mt=1.5"))[0] == 577.0
    assert plan_ms(OBSCURO, clock(600_000), TimeControl.parse("mt=1.5"))[0] == 1480.0
    # the referee's iteration budget, no deadline: a bare count
    plan = MoveTimer(OBSCURO, now=fake).plan(Clock(TcKind.ITERATIONS, iterations=50))
    assert plan.iterations == 50 and plan.deadline is None and plan.limits.timed is False
    with pytest.raises(TimingPolicyError, match="own budget"):
        MoveTimer(OBSCURO, TimeControl.parse("3+2"))


def test_stages_share_the_move_from_its_start() -> None:
    fake = Fake()
    timer = MoveTimer(OBSCURO, now=fake)
    timer.start()
    fake.t = 100.25  # the plan comes 250 ms into the move (the start is the opponent's move)
    plan = timer.plan(Clock(TcKind.MOVETIME, movetime_ms=1000))
    assert plan.start == 100.0
    assert plan.deadline == Deadline(100.9, 100.98, fake)
    b = plan.belief_deadline  # 40% of the way to each instant
    c = plan.construct_deadline  # 65%
    assert b is not None and c is not None
    assert (b.soft, b.hard) == pytest.approx((100.36, 100.392))
    assert (c.soft, c.hard) == pytest.approx((100.585, 100.637))


def test_the_bshare_option_moves_the_belief_stage() -> None:
    """`obscuro:bshare=F` gives P's update F of the plan (the construction keeps its 25%);
    the shares are fractions of the way to each instant, as above."""
    from caligo.agents.obscuro_config import ObscuroConfig, ObscuroConfigError

    fake = Fake()
    timer = MoveTimer(ObscuroConfig.from_options({"bshare": "0.2"}).time, now=fake)
    timer.start()
    plan = timer.plan(Clock(TcKind.MOVETIME, movetime_ms=1000))
    b, c = plan.belief_deadline, plan.construct_deadline
    assert b is not None and c is not None
    assert (b.soft, b.hard) == pytest.approx((100.18, 100.196))  # 20%
    assert (c.soft, c.hard) == pytest.approx((100.405, 100.441))  # 45%
    assert ObscuroConfig().time == OBSCURO and OBSCURO.belief_share == 0.4
    for bad in ("0", "0.75", "-1"):
        with pytest.raises(ObscuroConfigError, match=r"bshare must be in \(0, 0.75\)"):
            ObscuroConfig.from_options({"bshare": bad})


def test_the_timer_learns_its_overhead() -> None:
    fake = Fake()
    timer = MoveTimer(OBSCURO, now=fake)
    mt = Clock(TcKind.MOVETIME, movetime_ms=1000)
    timer.start()
    plan = timer.plan(mt)
    assert plan.overhead_ms == 20.0
    fake.t = 100.95  # 50 ms past the soft instant 100.9
    assert timer.finish(plan) == pytest.approx(950.0)
    assert timer.own_moves == 1 and timer.started is None
    fake.t = 200.0
    plan = timer.plan(mt)  # no start: the move starts at the plan
    assert plan.start == 200.0 and plan.overhead_ms == pytest.approx(70.0)
    fake.t = plan.deadline.soft if plan.deadline else 0.0  # on time: the tail decays by 0.9
    timer.finish(plan)
    assert timer.tail_ms == pytest.approx(45.0)
    timer.new_game(TimeControl.parse("mt=1"))
    assert timer.own_moves == 0 and timer.tail_ms == pytest.approx(45.0)  # the machine's


@pytest.mark.parametrize("policy", [OBSCURO, ZS21, WEB])
@pytest.mark.parametrize("initial,inc", [(5000, 100), (2000, 0), (180_000, 2000), (1000, 0),
                                         (60_000, 0), (300, 50)])
@pytest.mark.parametrize("spend", ["optimum", "maximum"])
def test_plans_are_solvent(policy: TimingPolicy, initial: int, inc: int, spend: str) -> None:
    """Spending each plan's optimum, or even its maximum, on every move of a game far longer
    than expected never empties the clock."""
    fake = Fake()
    timer = MoveTimer(policy, now=fake)
    remaining = float(initial)
    for _ in range(300):
        timer.start()
        plan = timer.plan(clock(int(remaining), inc, int(remaining)))
        d = plan.deadline
        assert d is not None
        used = 1000.0 * ((d.soft if spend == "optimum" else d.hard) - plan.start)
        fake.t += used / 1000.0
        timer.finish(plan)
        assert 0.0 <= used <= remaining
        remaining = remaining - used + inc
        assert remaining > 0.0


def test_phase_factor() -> None:
    assert phase_factor(0) == phase_factor(4) == 0.6
    assert phase_factor(8) == pytest.approx(0.95) and phase_factor(12) == pytest.approx(1.3)
    assert phase_factor(35) == 1.3 and phase_factor(50) == pytest.approx(1.0)
    assert phase_factor(200) == 1.0


def test_strength_clock_for_the_web() -> None:
    """The web app's strength inside a game clock: 1/30 of the clock plus 80% of the
    increment, at least 50 ms; iterations as they are; the deadline kept."""
    mt = TimeControl.parse("mt=3")
    assert strength_clock(mt, Clock(TcKind.NONE)).movetime_ms == 3000
    c = clock(30_000, 0, 30_000)
    assert strength_clock(mt, c) == Clock(TcKind.MOVETIME, movetime_ms=1000,
                                          deadline_ms=30_000)
    assert strength_clock(mt, clock(30_000, 1000)).movetime_ms == 1800  # 1000 + 800
    assert strength_clock(mt, clock(600)).movetime_ms == 50
    it = strength_clock(TimeControl.parse("iters=4000"), c)
    assert (it.kind, it.iterations, it.deadline_ms) == (TcKind.ITERATIONS, 4000, 30_000)


@pytest.mark.parametrize("referee", [None, 7 * 24 * 3600 * 1000])
def test_an_iteration_strength_always_has_a_guard(referee: int | None) -> None:
    """With no referee deadline (a GUI's bare `go`) or a longer one (the web page's untimed
    game gives a human days), an iteration strength is still asked within
    `ITERATION_GUARD_MS`, so the belief update and a replay of P are bounded, the replay by
    half of it (P past its cap took up to 24 s of belief update in the ladder's matches; with
    no guard nothing bounded it)."""
    it = strength_clock(TimeControl.parse("iters=100"), Clock(TcKind.NONE, deadline_ms=referee))
    assert (it.kind, it.iterations, it.deadline_ms) == (TcKind.ITERATIONS, 100, 60_000)
    fake = Fake()
    plan = MoveTimer(OBSCURO, now=fake).plan(it)
    assert plan.iterations == 100 and plan.deadline is not None
    r = plan.repair_deadline
    assert r is not None and r.hard == pytest.approx(100.0 + 0.5 * (60.0 - 0.02))


@pytest.mark.parametrize("text", ["mt=inf", "mt=1e400", "movetime=infinity", "mt=nan",
                                  "mt=-1", "inf+2", "1e9+0", "iters=99999999999999", "iters=-3",
                                  "iters=1e3", "3+nan", "mt=" + "9" * 400])
def test_time_controls_refuse_non_finite_and_huge_numbers(text: str) -> None:
    with pytest.raises(TimeControlError, match="invalid time control"):
        TimeControl.parse(text)


@pytest.mark.parametrize("data", [
    {"kind": "clock", "own_ms": math.inf}, {"kind": "clock", "own_ms": 1e400},
    {"kind": "clock", "own_ms": -5}, {"kind": "clock", "own_ms": 10**30},
    {"kind": "movetime", "movetime_ms": "300"}, {"kind": "clock", "own_ms": 2.5},
    {"kind": "iterations", "iterations": math.nan}, {"kind": "clock", "increment_ms": True},
    {"kind": "later"}, [], None,
])
def test_clocks_refuse_bad_numbers(data: object) -> None:
    with pytest.raises(TimeControlError, match="clock"):
        Clock.from_dict(data)


def test_clock_round_trip_and_aging() -> None:
    c = Clock(TcKind.CLOCK, remaining_ms=5000, increment_ms=100, deadline_ms=5100)
    assert Clock.from_dict(c.to_dict(), deadline_ms=5100) == c
    assert Clock.from_dict({"kind": "clock", "own_ms": 5000.0}).remaining_ms == 5000
    aged = c.aged(1200.4)
    assert (aged.remaining_ms, aged.deadline_ms, aged.increment_ms) == (3799, 3899, 100)
    assert c.aged(10_000).remaining_ms == 0 and Clock().aged(5) == Clock()
    with pytest.raises(TimeControlError):
        Clock.from_dict({"kind": "clock"}, deadline_ms=math.inf)  # type: ignore[arg-type]


def test_deadlines_and_limits() -> None:
    fake = Fake(10.0)
    d = Deadline.within(0.5, 1.0, now=fake)
    assert (d.soft, d.hard) == (10.5, 11.0) and not d.passed() and d.left() == 1.0
    fake.t = 10.6
    assert d.soft_passed() and not d.passed() and d.soft_left() == pytest.approx(-0.1)
    assert d.capped(soft=10.2, hard=10.8) == Deadline(10.2, 10.8, fake)
    assert d.capped(hard=10.1) == Deadline(10.1, 10.1, fake)  # soft never after hard
    assert d.stage(10.0, 0.5) == Deadline(10.25, 10.5, fake)
    for bad in (lambda: Deadline(2.0, 1.0), lambda: Deadline(math.nan, 1.0),
                lambda: Deadline.within(math.inf), lambda: Limits(),
                lambda: Limits(iterations=0), lambda: d.stage(10.0, 1.5)):
        with pytest.raises(LimitsError):
            bad()
    assert Limits(deadline=d).timed and not Limits(iterations=3).timed
    assert not Limits(iterations=3).passed()
    fake.t = 11.0
    assert Limits(3, d).passed()


def test_policy_validation() -> None:
    for kw in ({"max_share": 0.0}, {"belief_share": 0.7, "construct_share": 0.4},
               {"game_moves": 0}, {"hard_factor": 0.5}, {"overhead_ms": math.inf},
               {"safety_share": 0.6}):
        with pytest.raises(TimingPolicyError):
            TimingPolicy(**kw)  # type: ignore[arg-type]
