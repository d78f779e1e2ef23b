"""Checking a pack's ``module:attribute`` entries by reading its source, never importing it.

``pack validate`` is what an operator runs on a pack *before* trusting it, so it must not
execute a line of the pack: importing a module runs its top level. Instead, the module's
file is found inside the pack folder, parsed with :mod:`ast`, and the attribute is looked
for among the names its top level binds (``def``, ``class``, assignments, imports —
including those under ``if`` / ``try`` / ``with``). A module that can bind names in ways
this cannot see (``from x import *``, a module ``__getattr__``) gets a warning, not a pass.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

#: a pack's Python file larger than this is not parsed (a check, not a compiler)
MAX_SOURCE_BYTES = 4 * 1024 * 1024
#: the most tokens one module may hold to be parsed: ``ast.parse`` holds ~700 bytes per
#: token of dense code (``a = (b, b, …)``), so this bounds a parse to ~150 MB (a 900 KB
#: module of a real library is ~90,000 tokens)
MAX_SOURCE_TOKENS = 200_000
#: the most tokens one ``pack validate`` parses, all of the pack's modules together
MAX_PACK_TOKENS = 1_000_000
#: the most ``{`` one f-string may hold: Python 3.11 tokenizes an f-string as one token and
#: parses its replacement fields in time quadratic in their number (40,000: 1.6 s)
MAX_FSTRING_FIELDS = 1_000


@dataclass(frozen=True)
class EntryCheck:
    error: str | None = None
    warning: str | None = None


def inside(folder: Path, path: Path) -> bool:
    """``path``, with every symlink followed, is ``folder`` or under it."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _module_file(folder: Path, module: str) -> Path | str:
    """The file of ``a.b`` (``a/b.py`` or ``a/b/__init__.py``), or why there is none."""
    parts = module.split(".")
    if any(not part.isidentifier() for part in parts):
        return f"`{module}` is not a module name"
    base = folder.joinpath(*parts)
    for candidate in (base.with_name(parts[-1] + ".py"), base / "__init__.py"):
        if candidate.is_file():
            if not inside(folder, candidate):
                return f"module `{module}` is outside the pack folder"
            return candidate
    return f"no module `{module}` in the pack (looked for `{'/'.join(parts)}.py`)"


def _bound_names(body: list[ast.stmt]) -> tuple[set[str], bool]:
    """Names a module's top level binds, and whether it may bind others unseen."""
    names: set[str] = set()
    opaque = False
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    opaque = True
                else:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(stmt, ast.If | ast.Try | ast.With | ast.For | ast.While):
            nested: list[ast.stmt] = [*stmt.body, *getattr(stmt, "orelse", []),
                                      *getattr(stmt, "finalbody", [])]
            for handler in getattr(stmt, "handlers", []):
                nested.extend(handler.body)
            inner, inner_opaque = _bound_names(nested)
            names |= inner
            opaque = opaque or inner_opaque
    return names, opaque or "__getattr__" in names


class _TooMuch(Exception):
    pass


def _tokens(data: bytes, limit: int) -> int:
    """How many tokens ``data`` holds (an f-string's ``{`` each count as one), counted by the
    streaming tokenizer in constant memory; :class:`_TooMuch` past ``limit`` or an f-string
    past :data:`MAX_FSTRING_FIELDS`. A file the tokenizer refuses is counted up to there
    (the parser reports it)."""
    count = 0
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            count += 1
            if token.type == tokenize.STRING:
                prefix = token.string[:token.string.find(token.string[-1])]
                if "f" in prefix.lower():
                    fields = token.string.count("{")
                    if fields > MAX_FSTRING_FIELDS:
                        raise _TooMuch(f"an f-string of {fields} `{{` (line {token.start[0]}) "
                                       f"is more than the {MAX_FSTRING_FIELDS} checked")
                    count += fields
            if count > limit:
                raise _TooMuch(f"more than {limit} tokens")
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        pass
    return count


@dataclass
class Sources:
    """A pack's Python modules as ``pack validate`` reads them: each parsed at most once,
    whatever the entries naming it, within :data:`MAX_SOURCE_TOKENS` a module and
    :data:`MAX_PACK_TOKENS` for the pack, counted before the parser builds its tree.

    Before, each entry parsed its module again, and only the file's size was bounded: a
    4 MiB module of ``a = (b, b, …)`` took ``ast.parse`` to 2.9 GB and 10 s, once per entry
    naming it (a manifest holds thousands), and a 40,000-field f-string took 1.6 s, growing
    with the square of its fields (``tests/security/test_95``)."""

    left: int = field(default_factory=lambda: MAX_PACK_TOKENS)
    read: dict[Path, tuple[set[str], bool] | str] = field(default_factory=dict)

    def names(self, found: Path) -> tuple[set[str], bool] | str:
        """The names ``found``'s top level binds and whether it may bind others unseen, or
        why it is not checked."""
        key = found.resolve()
        if key not in self.read:
            self.read[key] = self._parse(found)
        return self.read[key]

    def _parse(self, found: Path) -> tuple[set[str], bool] | str:
        try:
            if found.stat().st_size > MAX_SOURCE_BYTES:
                return f"`{found}` is larger than {MAX_SOURCE_BYTES} bytes"
            data = found.read_bytes()
        except OSError as exc:
            return f"cannot read `{found}`: {type(exc).__name__}"
        limit = min(MAX_SOURCE_TOKENS, self.left)
        try:
            self.left -= _tokens(data, limit)
        except _TooMuch as exc:
            more = "" if limit == MAX_SOURCE_TOKENS else (
                f" (what is left of the {MAX_PACK_TOKENS} tokens `pack validate` parses "
                "for one pack)")
            return f"`{found}` is not checked: {exc}{more}"
        try:
            tree = ast.parse(data, filename=str(found))
        except SyntaxError as exc:
            return f"{found}:{exc.lineno or 1}: syntax error: {exc.msg}"
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"cannot read `{found}`: {type(exc).__name__}"
        return _bound_names(tree.body)


def check_entry(folder: Path, entry: str, sources: Sources | None = None) -> EntryCheck:
    """Whether ``module:attribute`` names something the pack's source defines
    (``sources``: the modules read so far, shared by the entries of one pack)."""
    module, sep, attr = entry.partition(":")
    if not sep or not attr.isidentifier():
        return EntryCheck(error=f"`{entry}` is not a `module:attribute` entry")
    if not (folder / "__init__.py").is_file():
        return EntryCheck(error=f"`{entry}`: a pack with Python code needs `__init__.py`")
    found = _module_file(folder, module)
    if isinstance(found, str):
        return EntryCheck(error=f"`{entry}`: {found}")
    read = (sources if sources is not None else Sources()).names(found)
    if isinstance(read, str):
        return EntryCheck(error=f"`{entry}`: {read}")
    names, opaque = read
    if attr in names:
        return EntryCheck()
    if opaque:
        return EntryCheck(warning=f"`{entry}`: `{found}` binds names dynamically; `{attr}` "
                                  "not checked")
    return EntryCheck(error=f"`{entry}`: module `{module}` has no `{attr}`")
