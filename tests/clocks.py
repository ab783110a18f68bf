"""Fake clocks for the timing tests: the suite never asserts wall time (it must pass on a busy
machine), so loops with deadlines run on a clock the test drives."""

from __future__ import annotations


class Ticker:
    """A fake clock: each reading returns `t` and moves it on by `step` seconds (so the loops
    that poll a deadline on it reach the deadline after a bounded number of readings); tests
    also set `t` by hand."""

    def __init__(self, t: float = 0.0, step: float = 0.0) -> None:
        self.t = t
        self.step = step

    def __call__(self) -> float:
        t = self.t
        self.t += self.step
        return t
