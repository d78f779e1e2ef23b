"""A pack's examples held to what they expect (``cradle-kg pack test``).

An example is a JSON object the pack's ``example_runner`` answers (``pack run``). What it
expects is said one of two ways:

* ``expect``: a partial answer — every key it names must be in the runner's answer with
  the value it gives; an object inside is compared the same way (the answer may say
  more), a list element by element (the same length), anything else by equality (``1``
  is not ``true``, nor ``1.0``);
* ``as_expected`` in the answer: the runner's own verdict, for a pack whose examples need
  more than equality (the runner reads the example's expectation itself) — when given, it
  is the verdict.

An example that says neither — or whose ``expect`` is an empty object, which every
object answered matches — has nothing to check: it is not a passing one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the answer's key a runner gives its own verdict under
AS_EXPECTED = "as_expected"


def verdict(example: Mapping[str, Any], answer: Any) -> str | None:
    """``None`` when ``answer`` is what ``example`` expects, else why not (one line)."""
    if isinstance(answer, Mapping) and isinstance(answer.get(AS_EXPECTED), bool):
        return None if answer[AS_EXPECTED] else f"the runner's answer says `{AS_EXPECTED}: false`"
    expect = example.get("expect")
    if not isinstance(expect, Mapping) or not expect:  # `{}` matches every object answered
        return ("nothing to check: the example has no `expect` object naming a key and "
                f"the runner's answer no `{AS_EXPECTED}`")
    return _differs(expect, answer, "")


def _differs(want: Any, got: Any, at: str) -> str | None:
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            return f"{at or 'the answer'}: expected an object, got {_short(got)}"
        for key, value in want.items():
            where = f"{at}.{key}" if at else str(key)
            if key not in got:
                return f"{where}: missing from the answer"
            found = _differs(value, got[key], where)
            if found:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            return f"{at}: expected {_short(want)}, got {_short(got)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            found = _differs(w, g, f"{at}[{i}]")
            if found:
                return found
        return None
    if type(want) is not type(got) or want != got:
        return f"{at}: expected {_short(want)}, got {_short(got)}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


__all__ = ["AS_EXPECTED", "verdict"]
