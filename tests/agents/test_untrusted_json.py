"""`loads_untrusted`: the guarded `json.loads` for text from pipes, sockets and request bodies.

Reference: the standard library's `json.loads` (not ours). Whatever `loads_untrusted` accepts it
returns exactly as `json.loads` does; what it refuses is refused with `UntrustedJsonError`
naming the limit, where plain `json.loads` would raise RecursionError (nesting), a bare
ValueError (Python 3.11's 4,300-digit integer limit) or hand back `inf`/`nan`.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caligo.agents.untrusted_json import (
    JsonProblem,
    UntrustedJsonError,
    loads_untrusted,
    nesting_depth,
)

LIMIT = 1 << 16

# JSON values within every limit: finite floats, short integers, shallow nesting
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


def _loads(text: str | bytes) -> object:
    return loads_untrusted(text, max_bytes=LIMIT)


@given(_values)
@settings(max_examples=300, deadline=None)
def test_valid_json_within_the_limits_reads_as_json_loads_reads_it(value: object) -> None:
    text = json.dumps(value)
    assert _loads(text) == json.loads(text)
    assert _loads(text.encode()) == json.loads(text)


def test_nesting_deeper_than_the_limit_is_refused_before_the_parser_recurses() -> None:
    # plain json.loads recurses once per bracket: past the interpreter's limit it fails
    deep = "[" * (sys.getrecursionlimit() + 100) + "]" * (sys.getrecursionlimit() + 100)
    with pytest.raises(RecursionError):
        json.loads(deep)
    for text in (deep, '{"a":' * 500 + "1" + "}" * 500, "[" * 500):
        with pytest.raises(UntrustedJsonError, match="nested too deeply") as info:
            _loads(text)
        assert info.value.problem is JsonProblem.TOO_DEEP
        assert text[:20] in str(info.value)  # quotes the input
    assert loads_untrusted("[" * 5 + "]" * 5, max_bytes=LIMIT, max_depth=5) == [[[[[]]]]]
    with pytest.raises(UntrustedJsonError, match="deeper than 4"):
        loads_untrusted("[" * 5 + "]" * 5, max_bytes=LIMIT, max_depth=4)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"pad": "[" * 1000, "esc": '\\"[[[', "k": [1]})
    assert _loads(text) == json.loads(text)
    assert nesting_depth(text, 32) == 2  # the object and the list, not the string brackets


def test_an_unterminated_string_is_malformed_not_slow_or_deep() -> None:
    text = '["' + '\\"[' * 20_000  # escaped quotes and brackets, never closed
    with pytest.raises(UntrustedJsonError) as info:
        _loads(text)
    assert info.value.problem is JsonProblem.MALFORMED


def test_an_integer_longer_than_the_limit_is_refused_before_int() -> None:
    huge = "1" * 5000
    with pytest.raises(ValueError, match="4300"):  # Python 3.11's limit, a bare ValueError
        json.loads(huge)
    for text in (huge, '{"id":-' + huge + "}", "[" + "9" * 41 + "]"):
        with pytest.raises(UntrustedJsonError, match="integer too long") as info:
            _loads(text)
        assert info.value.problem is JsonProblem.INTEGER_TOO_LONG
    assert _loads("[" + "9" * 40 + "]") == [int("9" * 40)]
    assert _loads('["' + "9" * 100 + '"]') == ["9" * 100]  # digits in a string are text


@pytest.mark.parametrize(
    "text",
    ["NaN", "[Infinity]", '{"a":-Infinity}', "1e400", "[-1e400]", "1" * 400 + ".0"],
)
def test_non_finite_numbers_are_refused_anywhere(text: str) -> None:
    shown = repr(json.loads(text))  # json.loads hands these back as inf / nan
    assert "inf" in shown or "nan" in shown
    with pytest.raises(UntrustedJsonError, match="non-finite") as info:
        _loads(text)
    assert info.value.problem is JsonProblem.NON_FINITE


def test_oversized_and_non_utf8_input_is_refused() -> None:
    with pytest.raises(UntrustedJsonError, match="too large") as info:
        loads_untrusted('"' + "x" * 100 + '"', max_bytes=50)
    assert info.value.problem is JsonProblem.TOO_LARGE
    with pytest.raises(UntrustedJsonError, match="too large"):
        loads_untrusted('"' + "é" * 30 + '"', max_bytes=50)  # 62 bytes in 32 characters
    with pytest.raises(UntrustedJsonError, match="not UTF-8") as info:
        _loads(b'{"a":"\xff"}')
    assert info.value.problem is JsonProblem.NOT_UTF8
    with pytest.raises(UntrustedJsonError, match="malformed JSON"):
        _loads("{not json")


# hostile text: JSON-ish fragments, deep brackets, long digit runs, non-finite literals
_fragments = st.sampled_from(
    ["[", "]", "{", "}", ",", ":", '"', "\\", '"a"', "1", "-", "e400", ".5", "NaN", "Infinity",
     "-Infinity", "true", "null", " ", '{"type":', "9" * 50, "[" * 40, "]" * 40, "\u00e9", "\x00"]
)
_hostile = st.one_of(
    st.lists(_fragments, max_size=60).map("".join),
    st.text(st.characters(exclude_categories=()), max_size=200),  # surrogates too
    st.builds(lambda n, d: "[" * d + "9" * n + "]" * d, st.integers(0, 6000), st.integers(0, 80)),
    st.builds(
        lambda v, d: "[" * d + json.dumps(v, allow_nan=True) + "]" * d,
        st.floats() | st.integers(),
        st.integers(0, 50),
    ),
)


@given(_hostile)
@settings(max_examples=500, deadline=None)
def test_any_text_either_decodes_as_json_loads_does_or_raises_the_named_error(text: str) -> None:
    try:
        value = _loads(text)
    except UntrustedJsonError as exc:
        assert isinstance(exc.problem, JsonProblem)
        return
    assert json.dumps(value, allow_nan=False)  # finite: it serialises back under strict rules
    assert value == json.loads(text)
