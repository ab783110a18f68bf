"""Shared test settings: CALIGO_SHORT=1 (set by CI) shortens the long runs marked `slow`."""

from __future__ import annotations

import os

SHORT = os.environ.get("CALIGO_SHORT") == "1"
