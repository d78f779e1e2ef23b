"""The shape of the package, read from its source with ``ast``.

* no import circle among the modules of ``cradle_kg`` — every import counts: at the top,
  inside a function, under ``if TYPE_CHECKING:``;
* no module imports a private name (``_x``) from another of our modules (a dependency's
  private name is that dependency's business: ``graph/shacl.py`` says why it uses one);
* no module reaches a private member (``x._y``) of an object that is not its own
  (``self``, ``cls``, ``super()``);
* no mixin borrows members: a class body never declares, under ``TYPE_CHECKING``, what
  another class provides;
* one writer: only the loop's context appends to the journal, and only the gateway holds
  a tool's functions;
* one seam: only ``cradle_kg.storage`` imports a database driver (``sqlite3``,
  ``psycopg``) for the journal, and only it opens a graph store (a pyoxigraph ``Store``;
  the rest goes through the ``GraphStore`` protocol).

Each rule reports every offence with its file and line, so a failure says what to fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cradle_kg"
ROOT = PACKAGE.parent
#: the only module that appends to the journal
JOURNAL_WRITER = "cradle_kg.loop.context"
#: the only module that reaches a tool's side-effecting function (or its lookup)
TOOL_CALLER = "cradle_kg.loop.gateway"
TOOL_FUNCTIONS = ("implementation", "lookup_for")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, tuple[Path, ast.Module]]:
    return {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"), str(p)))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name: str) -> bool:
    found = _modules().get(name)
    return found is not None and found[0].name == "__init__.py"


def _base(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``import from`` names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    if not _is_package(module):
        parts.pop()
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _imports(module: str, tree: ast.Module) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) for every import in the module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in _modules():  # `from . import x`: the submodule x
                    yield node.lineno, sub, None
                else:
                    yield node.lineno, base, alias.name


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: {target for _, target, _ in _imports(name, tree)
                   if target in mods and target != name}
            for name, (_, tree) in mods.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object's own members."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def _where(module: str, line: int) -> str:
    return f"{_modules()[module][0].relative_to(ROOT)}:{line}"


def test_the_import_walk_sees_every_kind_of_import() -> None:
    """The walk must see imports under TYPE_CHECKING and inside functions, or it proves
    nothing about circles hidden there."""
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from .b import B\ndef f() -> None:\n    from ..c import _d\n")
    got = {(target, name) for _, target, name in _imports("cradle_kg.loop.a", tree)}
    assert ("cradle_kg.loop.b", "B") in got
    assert ("cradle_kg.c", "_d") in got
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle() -> None:
    circles = _circles(_graph())
    assert circles == [], "import circles: " + "; ".join(" ↔ ".join(c) for c in circles)


def test_no_private_name_is_imported_across_modules() -> None:
    offences = [f"{_where(mod, line)}: `{name}` from `{target}`"
                for mod, (_, tree) in _modules().items()
                for line, target, name in _imports(mod, tree)
                if name is not None and _private(name) and target != mod
                and target.partition(".")[0] == "cradle_kg"]
    assert offences == []


def test_no_private_member_of_another_object_is_used() -> None:
    offences = [f"{_where(mod, node.lineno)}: `{ast.unparse(node)}`"
                for mod, (_, tree) in _modules().items() for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and _private(node.attr)
                and not _own(node.value)]
    assert offences == []


def test_no_mixin_borrows_members() -> None:
    offences = [f"{_where(mod, cls.lineno)}: class `{cls.name}`"
                for mod, (_, tree) in _modules().items() for cls in ast.walk(tree)
                if isinstance(cls, ast.ClassDef) and any(
                    isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
                    for stmt in cls.body)]
    assert offences == []


def _calls(attr: str) -> Iterator[tuple[str, ast.Call]]:
    for mod, (_, tree) in _modules().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == attr):
                yield mod, node


def _names_journal(node: ast.expr) -> bool:
    return ((isinstance(node, ast.Name) and node.id == "journal")
            or (isinstance(node, ast.Attribute) and node.attr == "journal"))


def test_only_the_loop_context_appends_to_the_journal() -> None:
    offences = [_where(mod, call.lineno) for mod, call in _calls("append")
                if isinstance(call.func, ast.Attribute) and _names_journal(call.func.value)
                and mod != JOURNAL_WRITER]
    assert offences == []
    assert any(mod == JOURNAL_WRITER for mod, _ in _calls("append"))


def test_only_the_gateway_reaches_a_tools_functions() -> None:
    offences = [_where(mod, call.lineno) for attr in TOOL_FUNCTIONS
                for mod, call in _calls(attr) if mod != TOOL_CALLER]
    assert offences == []
    assert {attr for attr in TOOL_FUNCTIONS
            for mod, _ in _calls(attr) if mod == TOOL_CALLER} == set(TOOL_FUNCTIONS)


#: modules outside ``cradle_kg.storage`` that may import a database driver, and why
DRIVER_USERS = {"cradle_kg.packs.store": "a pack's own SQLite database, not the journal"}
DRIVERS = ("sqlite3", "psycopg")


def test_only_storage_talks_to_a_journal_database() -> None:
    """The journal is reached through ``cradle_kg.storage.Journal`` only: no module
    outside ``storage/`` imports ``sqlite3`` or ``psycopg`` (``DRIVER_USERS`` excepted)."""
    offences = [f"{path.relative_to(ROOT)}:{line} imports `{target}`"
                for name, (path, tree) in _modules().items()
                if not name.startswith("cradle_kg.storage") and name not in DRIVER_USERS
                for line, target, _ in _imports(name, tree)
                if target.split(".")[0] in DRIVERS]
    assert offences == [], "\n".join(offences)
    assert set(DRIVER_USERS) <= set(_modules()), "a DRIVER_USERS entry names no module"


#: modules outside ``cradle_kg.storage`` that may open a pyoxigraph ``Store``, and why
STORE_OPENERS = {
    "cradle_kg.graph.lineage": "a run's lineage held in memory for one query, then dropped",
    "cradle_kg.server.dataset": "the endpoint's private store, whose checkpoints the query "
                                "workers read (it follows the journal like any store)",
}


def _opens_a_store(node: ast.AST) -> bool:
    """``ox.Store(...)`` or ``ox.Store.read_only(...)`` (any alias of pyoxigraph)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("read_only", "secondary"):
        func = func.value  # type: ignore[assignment]
    return isinstance(func, ast.Attribute) and func.attr == "Store"


def test_only_storage_opens_a_graph_store() -> None:
    """The graph is reached through ``cradle_kg.storage.graph.GraphStore``: no module
    outside ``storage/`` opens a pyoxigraph ``Store`` of its own (``STORE_OPENERS``
    excepted) — pyoxigraph stays usable as an RDF toolkit (terms, parsing, results)."""
    offences = [f"{path.relative_to(ROOT)}:{node.lineno} opens a pyoxigraph store"
                for name, (path, tree) in _modules().items()
                if not name.startswith("cradle_kg.storage") and name not in STORE_OPENERS
                for node in ast.walk(tree) if _opens_a_store(node)]
    assert offences == [], "\n".join(offences)
    assert set(STORE_OPENERS) <= set(_modules()), "a STORE_OPENERS entry names no module"
