"""The ``cradle-kg`` command line: a thin face over the library.

Exit codes, for every command: 0 done (and for ``submit``: executed and verified);
1 a negative result (denied, failed verification, a broken chain, violations);
2 the input could not be read or the command could not be carried out.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CradleError

if TYPE_CHECKING:  # typer, pydantic and rich load in `entry`, garbage collection paused
    import typer

#: the module of each top-level command: a command loads its own module only, so a light
#: command (``schema``, ``tools list``, ``runs list``) imports no graph, SHACL or server
COMMANDS: dict[str, str] = {
    **dict.fromkeys(("demo", "submit", "schema", "audit", "tools", "runs"), "core"),
    **dict.fromkeys(("graph", "ontology", "export", "validate"), "graph"),
    "pack": "packs",
    "approvals": "approvals",
    "recover": "recovery",
    "tasks": "tasks",
    **dict.fromkeys(("replay", "autonomy", "budgets"), "workflow"),
    **dict.fromkeys(("workflow", "step"), "flows"),
    **dict.fromkeys(("inbox", "evidence"), "inbox"),
    "query": "query",
    **dict.fromkeys(("db", "journal", "worker"), "storage"),
    "mcp": "mcp",
    **dict.fromkeys(("serve", "api-token"), "serve"),
    **dict.fromkeys(("eval", "input"), "lineage"),
}
MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def build_app(modules: tuple[str, ...] = MODULES) -> typer.Typer:
    """The command line with the commands of ``modules`` (all of them by default)."""
    import typer

    built = typer.Typer(
        name="cradle-kg",
        help="A governed execution runtime for AI agents: agents propose, the runtime "
             "disposes.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").install(built)

    def version(value: bool) -> None:
        if value:
            from .. import __version__

            print(f"cradle-kg {__version__}")
            raise typer.Exit()

    # INVARIANT: always a group, even with one module of one command (`recover`, `query`):
    # typer would otherwise run that command with its own name as its first argument. The
    # option as a default, not `Annotated`: typer reads the annotations as text in this
    # module's globals, where typer is not (it loads in `entry`)
    @built.callback()
    def _group(_version: bool = typer.Option(
            False, "--version", callback=version, is_eager=True,
            help="Print the version and exit.")) -> None:
        """A governed execution runtime for AI agents: agents propose, the runtime
        disposes."""

    return built


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole command line, built on first use (tests, docs)
        globals()["app"] = whole = build_app()
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(argv: list[str]) -> typer.Typer:
    """Only the module of the command asked for; every module for help or a typo."""
    if argv[:1] == ["--version"]:  # loads no command
        return build_app(())
    module = COMMANDS.get(argv[0]) if argv else None
    return build_app((module,)) if module is not None else build_app()


def main() -> None:
    """Run a command; whatever it did not handle becomes one ``error: ...`` line, exit 2.

    typer's own usage errors exit 2 by themselves, and ``SystemExit`` passes through.
    Writes are transactional (the journal appends in one SQLite transaction), so a
    command stopped by an exception leaves nothing half-written.
    """
    _run(_app_for)


def entry() -> None:
    """The process's entry (the ``cradle-kg`` script, ``python -m cradle_kg``): :func:`main`,
    with the cyclic garbage collector paused while the command line loads.

    Loading it (typer, pydantic, our modules, the command's module, the app) allocates
    ~40,000 objects and frees almost none: with the collector on, they are scanned again
    and again as they age through its generations (~12 ms of a ~0.25 s start-up, issue
    17). They are moved to the permanent generation (``gc.freeze``, the pattern the
    :mod:`gc` documentation gives for a process that forks) and collection resumes before
    the command runs: a long-running command (``serve``, ``worker``) collects its own
    garbage as usual; what is frozen is the loaded modules (and the few hundred objects of
    garbage loading left, ~0.1% of them). Only here, once per process: tests that call
    :func:`main` repeatedly in one interpreter leave the collector alone."""
    def load(argv: list[str]) -> typer.Typer:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return _app_for(argv)
        finally:
            if collecting:
                gc.freeze()
                gc.enable()

    _run(load)


def _run(load: Callable[[list[str]], typer.Typer]) -> None:
    try:
        load(sys.argv[1:])()
    except CradleError as exc:  # anything a command did not handle itself
        from .common import report_error

        report_error(exc)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as exc:  # the last line of defence: never a traceback
        from .common import report_unexpected

        report_unexpected(exc)
        raise SystemExit(2) from None
