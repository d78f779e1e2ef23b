"""``cradle-kg pack``: list, validate, test, run, init."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config import load_config
from ..errors import CradleError, InputError
from ..graph.owl import reasoner_timeout as owl_limit
from ..home import Home, resolve_home
from ..inputs import load_json
from ..packs.registry import PackRegistry
from ..packs.validate import validate_pack
from .common import (
    Format,
    FormatOpt,
    HomeOpt,
    ReasonerTimeoutOpt,
    clean,
    console,
    fail,
    print_json,
    read_input,
    table,
)

pack_app = typer.Typer(
    help="Domain packs: list, validate, test, run, init. A pack is trusted code: loading it, "
         "`pack run` and `pack test` run its Python with your privileges; `pack validate` "
         "never does. Install only packs you trust.", no_args_is_help=True)


def _registry(home: Path | None) -> PackRegistry:
    try:
        return PackRegistry.discover(resolve_home(home))
    except CradleError as exc:
        fail(exc)


@pack_app.command("list")
def pack_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Installed packs: id, version, path and what they contribute."""
    rows: list[dict[str, Any]] = []
    for p in _registry(home).all():
        m = p.manifest
        rows.append({"id": m.id, "version": m.version, "path": str(p.path), "name": m.name,
                     "counts": {"ontology": len(m.ontology), "shapes": len(m.shapes),
                                "policies": len(m.policies), "validators": len(m.validators),
                                "tools": len(m.tools), "verifiers": len(m.verifiers),
                                "queries": len(m.queries),
                                "examples": len(p.example_files())}})
    if fmt is Format.JSON:
        print_json(rows)
        return
    table("packs", ["id", "version", "tools", "verifiers", "policies", "examples", "path"],
          [[r["id"], r["version"], r["counts"]["tools"], r["counts"]["verifiers"],
            r["counts"]["policies"], r["counts"]["examples"], r["path"]] for r in rows])


@pack_app.command("validate")
def pack_validate(folder: Path, fmt: FormatOpt = Format.TABLE, home: HomeOpt = None,
                  no_reasoner: Annotated[bool, typer.Option(
                      "--no-reasoner", help="Skip the OWL consistency check.")] = False,
                  reasoner_timeout: ReasonerTimeoutOpt = None) -> None:
    """Check a pack: manifest, files, Turtle/SHACL, Cedar against its schema, Python, OWL.

    Never runs the pack's code: Python entries are checked by parsing the source, so this
    is safe on a pack you do not trust yet. The folder is checked on its own; ``--home``
    is accepted like everywhere else.
    """
    try:
        limit = owl_limit(reasoner_timeout)
    except CradleError as exc:
        fail(exc)
    report = validate_pack(folder, reasoner=not no_reasoner, reasoner_timeout=limit)
    if fmt is Format.JSON:
        print_json({"pack": report.pack, "ok": report.ok, "errors": report.errors,
                    "warnings": report.warnings})
    else:
        for err in report.errors:
            console.print(f"[red]error[/]: {clean(err)}", highlight=False)
        for warn in report.warnings:
            console.print(f"[yellow]warning[/]: {clean(warn)}", highlight=False)
        console.print(f"{clean(report.pack)}: {'valid' if report.ok else 'INVALID'}",
                      highlight=False)
    raise typer.Exit(0 if report.ok else 1)


def run_example(pack_ref: str, example: dict[str, Any], home: Path) -> dict[str, Any]:
    """One input through the governed loop with that pack, in ``home``."""
    from ..loop.runtime import open_home

    registry = PackRegistry.discover(home)
    pack = registry.get(pack_ref)
    if not pack.manifest.example_runner:
        raise InputError(f"pack `{pack.ref}` declares no example_runner")
    runner = pack.resolve(pack.manifest.example_runner)
    with open_home(home) as rt:
        rt.load_pack(pack)
        result: dict[str, Any] = runner(rt, example.get("input", example))
        return result


@pack_app.command("run")
def pack_run(pack: str, example: Path, home: HomeOpt = None) -> None:
    """Run one input (an example JSON) through the governed loop; print the outcome JSON.

    Runs the pack's code with your privileges: only for packs you trust.
    """
    root = resolve_home(home)
    try:
        limits = load_config(Home(root).config).input_limits
        raw = load_json(read_input(str(example), limits.max_bytes), limits=limits,
                        source=str(example))
        if not isinstance(raw, dict):
            raise InputError(f"`{example}`: an example is a JSON object")
        print_json(run_example(pack, raw, root))
    except CradleError as exc:
        fail(exc)


@pack_app.command("test")
def pack_test(folder: Path, home: HomeOpt = None) -> None:
    """Run the pack's own tests and its examples, in an isolated home.

    Runs the pack's code with your privileges (the home is isolated, the process is not):
    only for packs you trust. The tests always get a fresh home of their own; ``--home``
    is accepted like everywhere.
    """
    folder = folder.resolve()  # pytest runs from the isolated directory
    report = validate_pack(folder, reasoner=False)
    if not report.ok:
        for err in report.errors:
            console.print(f"[red]error[/]: {clean(err)}", highlight=False)
        raise typer.Exit(1)
    with tempfile.TemporaryDirectory(prefix="cradle-pack-test-") as tmp:
        env = {**os.environ, "CRADLE_HOME": str(Path(tmp) / "home")}
        tests = folder / "tests"
        code = 0
        if tests.is_dir():
            config = _pytest_config(folder, Path(tmp))
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   "-c", str(config), "--rootdir", str(folder),
                                   "--confcutdir", str(folder), str(tests)],
                                  env=env, check=False, cwd=tmp)
            code = done.returncode
        console.print(f"{clean(report.pack)}: tests {'passed' if code == 0 else 'FAILED'}",
                      highlight=False)
    raise typer.Exit(0 if code == 0 else 1)


#: the files pytest reads its configuration from, in its own order of precedence, with the
#: section that makes each one a pytest configuration
_PYTEST_CONFIGS = (("pytest.ini", ""), ("pyproject.toml", "[tool.pytest.ini_options]"),
                   ("tox.ini", "[pytest]"), ("setup.cfg", "[tool:pytest]"))


def _pytest_config(folder: Path, tmp: Path) -> Path:
    """The pytest configuration a pack's tests run under: the pack's own, else ours.

    Never a folder's above the pack: pytest looks for one upwards from the tests, so a pack
    inside a repository ran under the repository's (its ``addopts`` and plugins: the
    pack's tests of this repository failed with ``Error importing plugin``)."""
    for name, section in _PYTEST_CONFIGS:
        found = folder / name
        if found.is_file() and (not section or section in found.read_text(errors="replace")):
            return found
    # importlib: a pack's test modules import each other relatively (`from .conftest import
    # …`), as they do in this repository's suite, without an `__init__.py` on sys.path
    empty = tmp / "pytest.ini"
    empty.write_text("[pytest]\naddopts = --import-mode=importlib\n", encoding="utf-8")
    return empty


@pack_app.command("init")
def pack_init(pack: str, home: HomeOpt = None,
              data: Annotated[Path | None, typer.Option(
                  "--data", help="A data directory the pack's `init` hook loads.")] = None,
              now: Annotated[str | None, typer.Option(
                  "--now", help="The domain clock to set (ISO-8601).")] = None) -> None:
    """Prepare a home for a pack (its manifest's `init` hook) and enable it there.

    The hook builds the pack's own state from `--data` and returns the identities the home
    needs; only then is `config.json` changed (identities merged, the pack added to
    `packs`). Runs the pack's code with your privileges: only for packs you trust.
    """
    from ..packs.setup import init_pack

    try:
        done = init_pack(resolve_home(home), pack, data=data, now=now)
    except CradleError as exc:
        fail(exc)
    print_json({"pack": done.pack, "home": str(done.home), "agents": list(done.agents),
                "permissions": done.permissions})


def install(app: typer.Typer) -> None:
    app.add_typer(pack_app, name="pack")
