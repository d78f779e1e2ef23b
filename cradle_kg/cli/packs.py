"""``cradle-kg pack``: list, validate, test, run, init."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config import load_config
from ..errors import CradleError, InputError
from ..graph.owl import reasoner_timeout as owl_limit
from ..home import Home, resolve_home
from ..inputs import load_json, load_json_file
from ..packs.loader import Pack, load_pack
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


def run_example(pack_ref: str | Pack, example: dict[str, Any], home: Path) -> dict[str, Any]:
    """One input through the governed loop with that pack (a ref, or the pack), in ``home``."""
    from ..loop.runtime import open_home

    pack = PackRegistry.discover(home).get(pack_ref) if isinstance(pack_ref, str) else pack_ref
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
def pack_test(folder: Path, home: HomeOpt = None,
              data: Annotated[Path | None, typer.Option(
                  "--data", help="A data directory for the pack's `init` hook (as `pack "
                                 "init`), run in the examples' home first.")] = None,
              now: Annotated[str | None, typer.Option(
                  "--now", help="The domain clock the `init` hook sets (ISO-8601).")] = None
              ) -> None:
    """Run the pack's own tests and its examples, in isolated homes.

    The tests (``tests/``) run under pytest; each example the manifest lists runs through
    the pack's ``example_runner`` in a fresh home of its own and must answer what it
    expects (``expect``, or the runner's ``as_expected``). Exit 0 only when the tests
    passed and every example matched, and at least one of them ran; a pack with neither
    checks nothing and fails. Runs the pack's code with your privileges (the homes are
    isolated, the process is not): only for packs you trust. ``--home`` is accepted like
    everywhere.
    """
    folder = folder.resolve()  # pytest runs from the isolated directory
    report = validate_pack(folder, reasoner=False)
    if not report.ok:
        for err in report.errors:
            console.print(f"[red]error[/]: {clean(err)}", highlight=False)
        raise typer.Exit(1)
    name = clean(report.pack)
    with tempfile.TemporaryDirectory(prefix="cradle-pack-test-") as tmp:
        tests = _run_tests(folder, Path(tmp))
        not_run: str | None = None
        try:
            examples = _run_examples(folder, Path(tmp) / "examples", data=data, now=now)
        except _NotRun as exc:
            examples, not_run = [], str(exc)
    ok = True
    if tests is None:
        console.print(f"{name}: no tests (no `tests/` folder)", highlight=False)
    else:
        ok = tests.ok
        console.print(f"{name}: {tests.line()}", highlight=False)
    if not_run is not None:
        ok = False
        console.print(f"{name}: examples FAILED: {clean(not_run)}", highlight=False)
    elif examples is None:
        console.print(f"{name}: no examples", highlight=False)
    else:
        wrong = [(ex, why) for ex, why in examples if why is not None]
        ok = ok and not wrong
        if wrong:
            console.print(f"{name}: examples FAILED: {len(wrong)} of {len(examples)} examples "
                          "not as expected", highlight=False)
            for ex, why in wrong:
                console.print(f"  {clean(ex)}: {clean(why or '')}", highlight=False)
        else:
            console.print(f"{name}: examples matched: {len(examples)} of {len(examples)}",
                          highlight=False)
    if tests is None and examples is None:
        ok = False
        console.print(f"{name}: FAILED: no tests and no examples, nothing was checked",
                      highlight=False)
    raise typer.Exit(0 if ok else 1)


@dataclass(frozen=True)
class _Tests:
    """How the pack's pytest run went: counts from its JUnit report, and its exit code."""

    code: int
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def ok(self) -> bool:
        return self.code == 0 and self.failed == 0 and self.passed > 0

    def line(self) -> str:
        if self.code == 5 or (self.code == 0 and self.passed == 0):
            return "tests FAILED: `tests/` holds no test pytest collects"
        counts = f"{self.passed} passed, {self.failed} failed" + (
            f", {self.skipped} skipped" if self.skipped else "")
        if self.ok:
            return f"tests passed ({counts})"
        return f"tests FAILED ({counts}; pytest exit {self.code})"


def _run_tests(folder: Path, tmp: Path) -> _Tests | None:
    """The pack's ``tests/`` under pytest in ``tmp`` with a fresh home; None without one."""
    tests = folder / "tests"
    if not tests.is_dir():
        return None
    env = {**os.environ, "CRADLE_HOME": str(tmp / "home")}
    config = _pytest_config(folder, tmp)
    junit = tmp / "pytest-report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-c", str(config), "--rootdir", str(folder),
                           "--confcutdir", str(folder), f"--junit-xml={junit}", str(tests)],
                          env=env, check=False, cwd=tmp)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if junit.is_file():
        import xml.etree.ElementTree as ET  # our own pytest's report, written just now

        try:
            root = ET.parse(junit).getroot()
        except ET.ParseError:
            root = None
        suites = [] if root is None else (
            [root] if root.tag == "testsuite" else list(root.iter("testsuite")))
        for suite in suites:
            for key in counts:
                counts[key] += int(suite.get(key) or 0)
    failed = counts["failures"] + counts["errors"]
    passed = counts["tests"] - failed - counts["skipped"]
    return _Tests(code=done.returncode, passed=max(passed, 0), failed=failed,
                  skipped=counts["skipped"])


def _run_examples(folder: Path, work: Path, *, data: Path | None, now: str | None
                  ) -> list[tuple[str, str | None]] | None:
    """Each example the manifest lists, through the pack's runner in a fresh home: its
    name and why it is not as expected (None: it is). None when the pack lists none.

    The home is made once — the pack's ``init`` hook (with ``data``, ``now``) and the pack
    loaded, so its knowledge is in the graph store — and copied for each example: one
    example's writes are never another's state. Each home is embedded (a journal or graph
    store named by the environment would be shared by all of them)."""
    from ..loop.runtime import open_home
    from ..packs.examples import verdict
    from ..packs.setup import init_pack

    pack = load_pack(folder)  # this folder, even where a pack of its id@version is installed
    files = pack.example_files()
    if not files:
        return None
    names = [str(f.relative_to(folder)) for f in files]
    if not pack.manifest.example_runner:
        return [(n, "the manifest names no `example_runner`") for n in names]
    template = work / "template"
    results: list[tuple[str, str | None]] = []
    with _embedded_stores():
        try:
            template.mkdir(parents=True)
            if pack.manifest.init:
                init_pack(template, pack, data=data, now=now, enable=False)
            with open_home(template) as rt:
                rt.load_pack(pack)
        except CradleError as exc:  # said once, not once per example
            raise _NotRun(f"{len(names)} examples not run: no home to run them in: "
                          f"{exc.message}") from exc
        for i, (file, name) in enumerate(zip(files, names, strict=True)):
            home = work / f"example-{i}"
            shutil.copytree(template, home)
            try:
                example = load_json_file(file)
                if not isinstance(example, dict):
                    raise InputError("an example is a JSON object")
                why = verdict(example, run_example(pack, example, home))
            except CradleError as exc:
                why = f"{type(exc).__name__}: {exc.message}"
            except Exception as exc:  # the pack's code: its failure is this example's
                why = f"{type(exc).__name__}: {exc}"
            finally:
                shutil.rmtree(home, ignore_errors=True)
            results.append((name, why))
    return results


class _NotRun(Exception):
    """No example could run (the home they run in could not be made)."""


@contextmanager
def _embedded_stores() -> Iterator[None]:
    """The environment without ``CRADLE_JOURNAL_URL`` and ``CRADLE_GRAPH_URL`` for the
    block: the examples' homes keep their journal and graph store inside them."""
    saved = {k: os.environ.pop(k) for k in ("CRADLE_JOURNAL_URL", "CRADLE_GRAPH_URL")
             if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


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
