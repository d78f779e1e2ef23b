"""The PostgreSQL journal's schema objects, checked when a journal opens.

A write goes through ``cradle_append`` (:mod:`.pg_append`), run by the server: whoever
may run DDL on the journal's schema could ``CREATE OR REPLACE`` it with a version that
skips a guard — the approval's (``CK005``), the run's end (``CK004``), the chain's head —
and the runtime, calling it by name, trusted what it answered; so it did a trigger or a
rule added to ``events``, a unique index made plain (an idempotency key claimed twice) or
row-level security. Only ``audit verify`` noticed, afterwards. Now a journal opened to
write reads the catalog ``audit verify`` reads (:data:`.pg_schema.CATALOG_SQL`, one
query) and refuses a schema that is not exactly the one the migrations made; a journal
opened to read says so in a warning and reads (``tests/security/test_350``, ``test_351``).

The functions' lines are derived from the migrations' own SQL (:func:`function_lines`):
for each signature, the last ``CREATE OR REPLACE FUNCTION`` no later ``DROP FUNCTION``
took back — a migration that rewrites a function is covered by itself. ``db migrate``
installs those statements again over a function found altered (:func:`repairs`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Final

from ..errors import JournalError
from .pg_schema import FUNCTION_LINE, STATEMENTS

#: a function as the migrations write it: name, parameters, language, body (the dollar
#: quote's tag matched back); nothing else (SECURITY DEFINER, SET, STABLE …: not derived)
_CREATE: Final = re.compile(
    r"\s*CREATE OR REPLACE FUNCTION (\w+)\((.*?)\)\s*LANGUAGE (\w+) AS \$(\w*)\$(.*)\$\4\$\s*",
    re.DOTALL)
_DROP: Final = re.compile(r"\s*DROP FUNCTION IF EXISTS (\w+)\((.*)\)\s*", re.DOTALL)
_MODES: Final = ("IN", "OUT", "INOUT", "VARIADIC")


def _params(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split(",") if p.strip()]


def _input_types(params: Sequence[str]) -> tuple[str, ...]:
    """The types a function is named by: its parameters but the ``OUT`` ones, unnamed."""
    return tuple(p.split(" ", 1)[1] for p in params if not p.startswith("OUT "))


def _line(name: str, params: Sequence[str], body: str) -> str:
    """The function's line in :data:`.pg_schema.CATALOG_SQL`: the body's digest, and the
    signature's with its kind, security, volatility and settings (the defaults: a plain,
    volatile function run as its caller, with no ``SET``)."""
    outs = [p.split(" ")[-1] for p in params if p.startswith("OUT ")]
    if not outs or any(p.split(" ")[0] in _MODES[2:] for p in params):
        raise ValueError(f"function `{name}`: only IN and OUT parameters are derived")
    result = "record" if len(outs) > 1 else outs[0]
    signature = f"{', '.join(params)} -> {result} ffalsev"
    return (f"function {name} {hashlib.md5(body.encode()).hexdigest()} "
            f"{hashlib.md5(signature.encode()).hexdigest()}")


def function_statements(statements: Iterable[str]) -> dict[tuple[str, tuple[str, ...]], str]:
    """Per function (name, input types) the statement that made it as it is after
    ``statements`` (the migrations', in order): the last creation not dropped since."""
    made: dict[tuple[str, tuple[str, ...]], str] = {}
    for statement in statements:
        if (drop := _DROP.fullmatch(statement)) is not None:
            made.pop((drop[1], tuple(_params(drop[2]))), None)
        elif (create := _CREATE.fullmatch(statement)) is not None:
            made[create[1], _input_types(_params(create[2]))] = statement
        elif re.search(r"\bFUNCTION\b", statement, re.IGNORECASE):
            raise ValueError(f"a migration's function statement is not derived: "
                             f"{statement.strip()[:80]}")
    return made


def function_lines(statements: Iterable[str]) -> frozenset[str]:
    """The catalog's ``function`` lines the migrations' ``statements`` make."""
    out = set()
    for statement in function_statements(statements).values():
        create = _CREATE.fullmatch(statement)
        assert create is not None  # INVARIANT: function_statements kept creations only
        if create[3] != "plpgsql":
            raise ValueError(f"function `{create[1]}`: only plpgsql bodies are derived")
        out.add(_line(create[1], _params(create[2]), create[5]))
    return frozenset(out)


def problem(found: set[str], expected: frozenset[str]) -> str | None:
    """What differs between a schema's catalog lines and the expected ones, naming the
    first object (missing, altered, then unexpected), or None."""
    for line in sorted(expected - found):
        kind, name = line.split(" ")[:2]
        same = any(f.split(" ")[:2] == [kind, name] for f in found)
        return f"the journal's {kind} `{name}` " + ("was altered" if same else "is missing")
    for line in sorted(found - expected):
        kind, name = line.split(" ")[:2]
        return f"the journal has an unexpected {kind} `{name}`"
    return None


#: what a journal found altered when it opens to write, opens to read, or appends
REFUSED: Final = "it was not opened to write: its SQL would run with every append"
READ: Final = "it is read; opened to write, it would be refused"
NOT_WRITTEN: Final = "the append was not written"


def altered_error(location: str, problem: str, *, then: str = REFUSED) -> JournalError:
    """The refusal of a journal whose schema is not the migrations' (``problem``: what
    :func:`problem` said; ``then``: what was done about it)."""
    function = problem.startswith("the journal's function")
    return JournalError(
        f"the journal `{location}`: {problem} (not the schema its migrations made); {then}",
        hint=("`cradle-kg db migrate` installs the migrations' own functions again; then "
              "`cradle-kg audit verify` checks what was written meanwhile" if function else
              "drop what cradle-kg did not make and restore what it did (`cradle-kg audit "
              "verify` names each difference)"))


def repairs(found: set[str], statements: Iterable[str]) -> list[tuple[str, tuple[str, str]]]:
    """The functions whose line is not in ``found`` (altered, or dropped), as (name, the
    statements that make it again: its signature dropped — a function whose results were
    changed cannot be replaced — and the migrations' own creation)."""
    return sorted((name, (f"DROP FUNCTION IF EXISTS {name}({', '.join(types)})", statement))
                  for (name, types), statement in function_statements(statements).items()
                  if not function_lines([statement]) <= found)


def call_check_sql(name: str) -> str:
    """A statement that fails its transaction unless the function ``name`` the journal
    calls (resolved as the call resolves it) is still the migrations' — run after the call,
    before the append commits: a function replaced while a journal is open is caught at
    its next append (the line compared is the catalog's, computed by the server)."""
    ((types, statement),) = [(t, st) for (n, t), st in function_statements(STATEMENTS).items()
                             if n == name]
    (line,) = function_lines([statement])
    signature = f"{name}({', '.join(types)})"
    # INVARIANT: the literals below hold no quote (names, types and hex digests)
    assert all(_LITERAL.fullmatch(t) for t in (signature, line, ALTERED_MARK))
    return (f"SELECT CASE WHEN count(*) = 1 THEN 0 ELSE ('{ALTERED_MARK} ' || count(*))::int "
            f"END FROM pg_proc p WHERE p.oid = to_regprocedure('{signature}') AND "
            f"({FUNCTION_LINE}) = '{line}'")


#: what the check's failure says (in a cast error: SQL has no RAISE outside PL/pgSQL, and
#: a ``DO`` block compiled at every append cost 3 times as much)
ALTERED_MARK: Final = "cradle-kg: the function was altered"
_LITERAL: Final = re.compile(r"[\w\[\](),: -]+")
#: the check of ``cradle_append`` (:mod:`.pg_append`), after each one-trip append's call
APPEND_CHECK_SQL: Final = call_check_sql("cradle_append")


__all__ = ["ALTERED_MARK", "APPEND_CHECK_SQL", "NOT_WRITTEN", "READ", "REFUSED", "altered_error",
           "call_check_sql", "function_lines", "function_statements", "problem", "repairs"]
