"""The PostgreSQL journal's schema objects: the catalog read, the functions derived, checked.

A write goes through ``cradle_append`` (:mod:`.pg_append`), run by the server: whoever may
run DDL on the journal's schema could ``CREATE OR REPLACE`` it with a version that skips a
guard — the approval's (``CK005``), the run's end (``CK004``), the lock — and the runtime,
calling it by name, trusted what it answered; so it did a trigger or a rule added to
``events``, a unique index made plain (an idempotency key claimed twice) or row-level
security. Only ``audit verify`` noticed, afterwards (``tests/security/test_350``,
``test_351``). Now:

* a journal opened to write reads :data:`OPEN_SQL` — what can change what a write does
  or what a guard reads: relations (and their row-level security), constraints, unique
  indexes (the others by name), triggers, rules, policies, functions — and refuses a
  schema that is not the migrations' (:func:`problem`); one opened to read warns and
  reads. ``audit verify`` reads all of :data:`CATALOG_SQL` (the columns and the plain
  indexes' definitions too);
* it pins what an append relies on most as it found it (:data:`PIN_SQL`: the rows of
  ``cradle_append``, ``events`` and ``head`` — a trigger, a rule or row-level security
  added to a table moves its row — and the index ``events_idem_key``), and each append,
  on either path, runs before its COMMIT a prepared check that none moved
  (:data:`PREPARE_CHECK_SQL`): a change while a worker runs fails that append, nothing
  written. A row moved but still the migrations' (a ``GRANT``, a ``VACUUM FULL``) is
  found so by the catalog read again, pinned anew, and the append retried.

The functions' lines are derived from the migrations' own SQL (:func:`function_lines`):
for each signature, the last ``CREATE OR REPLACE FUNCTION`` no later ``DROP FUNCTION``
took back — a migration that rewrites a function is covered by itself. ``db migrate``
installs those statements again over a function found altered (:func:`repairs`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import JournalError
from .pg_schema import FUNCTION_LINE, LATEST, STATEMENTS

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
    """The function's line in :data:`CATALOG_SQL`: the body's digest, and the
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


# --- the catalog ------------------------------------------------------------------------

_HERE: Final = "current_schema()::regnamespace"
_PARTS: Final = {
    "relation": "SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' rls=' "
                f"|| c.relrowsecurity::text FROM pg_class c WHERE c.relnamespace = {_HERE}",
    # as ``information_schema.columns`` says them for the journal's types, in a third of
    # the time (and a column of a domain type by its domain's name, not its base type's)
    "column": "SELECT 'column ' || c.relname || '.' || a.attname || ' ' "
              "|| format_type(a.atttypid, NULL) || ' ' "
              "|| CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END || ' ' "
              "|| coalesce(pg_get_expr(d.adbin, d.adrelid), '-') "
              "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
              "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
              f"WHERE c.relnamespace = {_HERE} AND c.relkind IN ('r', 'v', 'f', 'p') "
              "AND a.attnum > 0 AND NOT a.attisdropped",
    "index": "SELECT 'index ' || c.relname || ' ' || {definition} FROM pg_index i "
             f"JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = {_HERE}",
    "constraint": "SELECT 'constraint ' || conrelid::regclass::text || '.' || conname || ' ' "
                  f"|| pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = {_HERE}",
    "trigger": "SELECT 'trigger ' || t.tgname FROM pg_trigger t JOIN pg_class c "
               f"ON c.oid = t.tgrelid WHERE c.relnamespace = {_HERE} AND NOT t.tgisinternal",
    "rule": "SELECT 'rule ' || r.rulename FROM pg_rewrite r JOIN pg_class c "
            f"ON c.oid = r.ev_class WHERE c.relnamespace = {_HERE} AND r.rulename <> '_RETURN'",
    "policy": "SELECT 'policy ' || p.polname FROM pg_policy p JOIN pg_class c "
              f"ON c.oid = p.polrelid WHERE c.relnamespace = {_HERE}",
    "function": f"SELECT {FUNCTION_LINE} FROM pg_proc p WHERE p.pronamespace = {_HERE}",
}
_DEFINITION: Final = "replace(pg_get_indexdef(i.indexrelid), current_schema() || '.', '')"
#: a plain index's line in :data:`OPEN_SQL`: its name only (an index that refuses nothing)
_PLAIN: Final = "plain"

#: every relation, column, index, constraint, trigger, rule, policy and function in the
#: journal's schema, one normalised line each (qualifying ``<schema>.`` removed); a
#: function with a digest of its body and of its signature and settings
#: (:data:`.pg_schema.FUNCTION_LINE`). Read by ``audit verify``
CATALOG_SQL: Final = "\nUNION ALL\n".join(
    sql.format(definition=_DEFINITION) if kind == "index" else sql
    for kind, sql in _PARTS.items())
#: what a journal opened to write reads: :data:`CATALOG_SQL` but the columns, and a plain
#: index by its name (``pg_get_indexdef`` of every index was a third of the time)
OPEN_SQL: Final = "\nUNION ALL\n".join(
    sql.format(definition=f"CASE WHEN i.indisunique THEN {_DEFINITION} ELSE '{_PLAIN}' END")
    if kind == "index" else sql for kind, sql in _PARTS.items() if kind != "column")


def open_lines(catalog: Iterable[str]) -> frozenset[str]:
    """The lines :data:`OPEN_SQL` reads of a schema whose :data:`CATALOG_SQL` lines are
    ``catalog``."""
    return frozenset(
        f"index {line.split(' ')[1]} {_PLAIN}" if line.startswith("index ")
        and " CREATE UNIQUE INDEX " not in line else line
        for line in catalog if not line.startswith("column "))


# --- what a journal pinned -----------------------------------------------------------

#: what an append's check raises (in a cast error: SQL has no RAISE outside PL/pgSQL)
ALTERED_MARK: Final = "cradle-kg: the schema changed"
#: ``cradle_append``'s signature, resolved as the journal's call resolves it
_SIGNATURE: Final = "cradle_append({})".format(", ".join(next(
    types for (name, types) in function_statements(STATEMENTS) if name == "cradle_append")))
#: the tables an append's check pins: the chain's (a trigger, a rule or row-level
#: security added to one moves its catalog row), and the index that claims a key once
_CHAIN: Final = ("events", "head")
_CLAIM: Final = "events_idem_key"
_CLASS: Final = "(SELECT {col} FROM pg_class c WHERE c.oid = to_regclass('{name}'))"
#: what a journal pins when it opens: the function it calls (oid, its row's version, its
#: catalog line), the chain's tables (oids, row versions) and the claim's index (oid: one
#: made plain is dropped and made again)
PIN_SQL: Final = (
    f"SELECT p.oid, p.xmin::text, {FUNCTION_LINE}, "
    + ", ".join(_CLASS.format(col=col, name=name) for name in _CHAIN
                for col in ("c.oid", "c.xmin::text"))
    + f", to_regclass('{_CLAIM}')::oid FROM pg_proc p "
    f"WHERE p.oid = to_regprocedure('{_SIGNATURE}')")
#: the line the migrations' ``cradle_append`` has
APPEND_LINE: Final = next(line for line in function_lines(STATEMENTS)
                          if line.startswith("function cradle_append "))
#: the check an append runs before its COMMIT (prepared once per connection: planned once;
#: the failing branch reads the condition, which the fence keeps computed once and never
#: while planning). Measured: +27 us for the function alone, ~+60 us with the tables and the
#: index, against +130 to +200 us for every table and unique index of the schema. It also
#: finds the journal still at this code's migration: a newer release's ``db migrate`` run
#: while this worker is open (its derivations take the append lock, as this append holds
#: it) would have this worker write without what the newer schema derives
#: (``tests/security/test_418``; one probe of ``schema_migrations``' primary key)
PREPARE_CHECK_SQL: Final = (
    "PREPARE cradle_append_check(oid, xid, oid, xid, oid, xid, oid) AS "
    f"SELECT CASE WHEN s.ok THEN 0 ELSE ('{ALTERED_MARK} ' || s.ok::text)::int END FROM ("
    "SELECT (SELECT count(*) FROM pg_proc p WHERE p.oid = $1 AND p.xmin = $2) = 1 "
    "AND (SELECT count(*) FROM pg_class c WHERE c.oid = $3 AND c.xmin = $4) = 1 "
    "AND (SELECT count(*) FROM pg_class c WHERE c.oid = $5 AND c.xmin = $6) = 1 "
    "AND (SELECT count(*) FROM pg_index i WHERE i.indexrelid = $7 AND i.indisunique "
    "AND i.indisvalid) = 1 "
    f"AND NOT EXISTS (SELECT 1 FROM schema_migrations m WHERE m.version > {LATEST}) "
    "AS ok OFFSET 0) s")
_DIGITS: Final = re.compile(r"[0-9]{1,20}")


@dataclass(frozen=True, slots=True)
class Pin:
    """What :data:`PIN_SQL` read but the line: numbers, each a text of digits (checked)."""

    values: tuple[str, ...]

    @classmethod
    def of(cls, row: Sequence[object]) -> Pin:
        values = tuple(str(v) for i, v in enumerate(row) if i != 2)
        if len(values) != 7 or not all(_DIGITS.fullmatch(v) for v in values):
            raise ValueError(f"not the numbers of a pin: {values!r}")
        return cls(values)

    def check_sql(self) -> str:
        """The statement of an append's check that nothing pinned moved."""
        # INVARIANT: digits only (of): the literals cannot end their quotes
        return "EXECUTE cradle_append_check({})".format(
            ", ".join(v if i % 2 == 0 else f"'{v}'" for i, v in enumerate(self.values)))


#: a journal opened only to read: its check never runs (no append), and fails if it did
UNPINNED: Final = Pin(("0",) * 7)


__all__ = ["ALTERED_MARK", "APPEND_LINE", "CATALOG_SQL", "NOT_WRITTEN", "OPEN_SQL", "PIN_SQL",
           "PREPARE_CHECK_SQL", "READ", "REFUSED", "UNPINNED", "Pin", "altered_error",
           "function_lines", "function_statements", "open_lines", "problem", "repairs"]
