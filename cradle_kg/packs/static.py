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
from dataclasses import dataclass
from pathlib import Path

#: a pack's Python file larger than this is not parsed (a check, not a compiler)
MAX_SOURCE_BYTES = 4 * 1024 * 1024


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


def check_entry(folder: Path, entry: str) -> EntryCheck:
    """Whether ``module:attribute`` names something the pack's source defines."""
    module, sep, attr = entry.partition(":")
    if not sep or not attr.isidentifier():
        return EntryCheck(error=f"`{entry}` is not a `module:attribute` entry")
    if not (folder / "__init__.py").is_file():
        return EntryCheck(error=f"`{entry}`: a pack with Python code needs `__init__.py`")
    found = _module_file(folder, module)
    if isinstance(found, str):
        return EntryCheck(error=f"`{entry}`: {found}")
    try:
        if found.stat().st_size > MAX_SOURCE_BYTES:
            return EntryCheck(error=f"`{entry}`: `{found}` is larger than "
                                    f"{MAX_SOURCE_BYTES} bytes")
        tree = ast.parse(found.read_bytes(), filename=str(found))
    except SyntaxError as exc:
        return EntryCheck(error=f"`{entry}`: {found}:{exc.lineno or 1}: syntax error: "
                                f"{exc.msg}")
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        return EntryCheck(error=f"`{entry}`: cannot read `{found}`: {type(exc).__name__}")
    names, opaque = _bound_names(tree.body)
    if attr in names:
        return EntryCheck()
    if opaque:
        return EntryCheck(warning=f"`{entry}`: `{found}` binds names dynamically; `{attr}` "
                                  "not checked")
    return EntryCheck(error=f"`{entry}`: module `{module}` has no `{attr}`")
