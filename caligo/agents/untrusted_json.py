"""`loads_untrusted`: `json.loads` for text from a pipe, a socket or a request body.

Python's `json.loads` trusts its input in four ways that a hostile or broken peer can exploit:

- it recurses once per nested array/object, so a 1 KB line of 500 brackets raises
  `RecursionError` (or worse, near the interpreter's limit, in the caller);
- it hands every integer literal to `int()`, which raises a bare `ValueError` above 4,300 digits
  (Python 3.11's integer-string limit) and is quadratic below it;
- it accepts `NaN`, `Infinity` and `-Infinity`, and turns a literal such as `1e400` into
  `inf`, which then raises `OverflowError` in `int()` or poisons arithmetic;
- it reads any length it is given.

`loads_untrusted` refuses each of these with one named exception, `UntrustedJsonError`, whose
`problem` says which limit was hit and whose message quotes a short prefix of the input. The
nesting depth is measured by a linear scan *before* `json.loads` runs, so the parser never
recurses deeper than `max_depth`; numbers are checked by the parser's own hooks as they are
read (`parse_int`, `parse_float`, `parse_constant`), so no other exception escapes.
"""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from typing import Any

from caligo.errors import CaligoError

DEFAULT_MAX_DEPTH = 32
"""Deepest nesting of arrays/objects accepted (every protocol message needs at most 3)."""
DEFAULT_MAX_INT_DIGITS = 40
"""Longest integer literal accepted, in digits (a 64-bit seed needs 20)."""
QUOTE_CHARS = 60
"""How much of the input an error message quotes."""


class JsonProblem(Enum):
    """Why a text was refused."""

    TOO_LARGE = "too large"
    NOT_UTF8 = "not UTF-8"
    TOO_DEEP = "nested too deeply"
    INTEGER_TOO_LONG = "integer too long"
    NON_FINITE = "non-finite number"
    MALFORMED = "malformed JSON"


class UntrustedJsonError(CaligoError, ValueError):
    """Untrusted JSON text was refused; `problem` names the limit, the message quotes the text."""

    def __init__(self, problem: JsonProblem, detail: str, text: str | bytes) -> None:
        super().__init__(f"{problem.value} ({detail}): {quote(text)}")
        self.problem = problem
        self.detail = detail


def quote(text: str | bytes, limit: int = QUOTE_CHARS) -> str:
    """Return repr of the first `limit` characters of `text`, marked when cut."""
    head = text[:limit]
    return repr(head) + ("..." if len(text) > limit else "")


# A JSON string (the escapes consumed pair-wise, so an escaped quote never ends it), a bracket,
# or a lone quote: an unterminated string, where the parser stops and the scan may stop too.
# Every alternative is anchored on its first character, so the scan is linear in the text.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"|[\[\]{}]|"', re.DOTALL)


def nesting_depth(text: str, limit: int) -> int:
    """Return the deepest nesting of arrays/objects outside strings in `text` (up to `limit + 1`).

    The scan stops as soon as the depth passes `limit` or at an unterminated string (the parser
    stops there as well), so it reads each character at most once.
    """
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif token in ("]", "}"):
            depth -= 1
        elif token == '"':  # a lone quote: the rest is an unterminated string
            break
    return deepest


def loads_untrusted(
    text: str | bytes,
    *,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_int_digits: int = DEFAULT_MAX_INT_DIGITS,
) -> Any:
    """Parse `text` as JSON within the limits; raise UntrustedJsonError naming the one it broke.

    `max_bytes` bounds the UTF-8 size, `max_depth` the nesting of arrays/objects (a scalar has
    depth 0), `max_int_digits` the digits of an integer literal; `NaN`, `Infinity` and literals
    that overflow a float (`1e400`) are refused anywhere in the document. Bytes must be UTF-8.
    """
    if isinstance(text, bytes | bytearray):
        raw = bytes(text)
        if len(raw) > max_bytes:
            raise UntrustedJsonError(
                JsonProblem.TOO_LARGE, f"{len(raw)} bytes, limit {max_bytes}", raw
            )
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UntrustedJsonError(JsonProblem.NOT_UTF8, "invalid byte sequence", raw) from None
    elif isinstance(text, str):
        decoded = text
        # a character is 1 to 4 UTF-8 bytes: skip the encoding for a text far over the limit
        size = len(decoded) if len(decoded) > max_bytes else _utf8_size(decoded)
        if size > max_bytes:
            raise UntrustedJsonError(
                JsonProblem.TOO_LARGE, f"{size} bytes or more, limit {max_bytes}", decoded
            )
    else:
        raise TypeError(f"loads_untrusted reads str or bytes, not {type(text).__name__}")
    # fast path: fewer opening brackets than the limit cannot nest deeper than it
    opening = decoded.count("[") + decoded.count("{")
    if opening > max_depth and nesting_depth(decoded, max_depth) > max_depth:
        raise UntrustedJsonError(
            JsonProblem.TOO_DEEP, f"deeper than {max_depth} levels", decoded
        )

    def parse_int(literal: str) -> int:
        digits = len(literal) - (literal[0] == "-")
        if digits > max_int_digits:
            raise UntrustedJsonError(
                JsonProblem.INTEGER_TOO_LONG,
                f"{digits} digits, limit {max_int_digits}",
                decoded,
            )
        return int(literal)

    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise UntrustedJsonError(
                JsonProblem.NON_FINITE, f"{quote(literal, 20)} overflows a float", decoded
            )
        return value

    def parse_constant(name: str) -> Any:
        raise UntrustedJsonError(JsonProblem.NON_FINITE, f"{name} is not JSON", decoded)

    # fast path: without a run of more digits than the limit, no integer literal is too long
    long_run = re.search(f"[0-9]{{{max_int_digits + 1}}}", decoded) is not None
    try:
        return json.loads(
            decoded,
            parse_int=parse_int if long_run else None,
            parse_float=parse_float,
            parse_constant=parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise UntrustedJsonError(
            JsonProblem.MALFORMED, str(exc), decoded
        ) from None


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_INT_DIGITS",
    "JsonProblem",
    "UntrustedJsonError",
    "loads_untrusted",
    "nesting_depth",
    "quote",
]
