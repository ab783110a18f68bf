"""Shared test settings.

CALIGO_SHORT=1 (set by CI) shortens the long runs marked `slow`.

`needs_sigint` marks a test that interrupts a long run with SIGINT (its own process or a child
it starts). A process started in the background by a shell without job control (`cmd &` in a
script, `nohup cmd &`) inherits SIGINT as *ignored*, and Python then installs no
KeyboardInterrupt handler; so do the children it starts. There the signal does nothing, the
billion-iteration run it should stop goes on for hours, and the test is skipped instead, with
that reason printed in pytest's summary (`-ra`).
"""

from __future__ import annotations

import os
import signal

import pytest

SHORT = os.environ.get("CALIGO_SHORT") == "1"

SIGINT_IGNORED = signal.getsignal(signal.SIGINT) is signal.SIG_IGN

needs_sigint = pytest.mark.skipif(
    SIGINT_IGNORED,
    reason="SIGINT is ignored in this test process (started in the background or under "
           "nohup), so the test's Ctrl-C would not stop the long run it starts; run the "
           "tests in the foreground to check Ctrl-C",
)
