"""The root of every error Caligo raises at its boundary.

Every specific exception (a bad game string, a malformed FEN, an LP that HiGHS rejects, a broken
protocol message) derives from `CaligoError`, so the command line and servers catch one class
and print its message. This module sits outside the layers (docs/design.md) and imports nothing, so
every layer, `caligo.fow` included, may derive from it.
"""

from __future__ import annotations


class CaligoError(Exception):
    """Base class of every error Caligo raises on bad input or a failed computation."""
