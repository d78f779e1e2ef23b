"""``cradle-kg pack validate``: everything a manifest names exists and parses.

Checks, each reported as ``file:line: message``: the manifest's schema; every named file
exists inside the pack folder; Turtle and SHACL parse; the shapes compile; Cedar policies
parse, carry no duplicate ids and validate against the pack's Cedar schema; examples are
JSON; every ``module:attribute`` entry names something the pack's source defines; the
pack's ontology is consistent with the core ontology (HermiT).

TRUST: validation never executes the pack's Python. Entries are checked by parsing the
source (:mod:`.static`), so ``pack validate`` is safe to run on a pack you do not trust
yet; loading the pack, ``pack run`` and ``pack test`` do execute it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CradleError, InputError, JavaMissingError, ReasonerTimeoutError
from ..graph.owl import check_ontology
from ..graph.queries import QueryCatalog
from ..graph.rdfio import read_rdf
from ..graph.shacl import load_shapes
from ..graph.vocab import ONTOLOGY_FILE, ONTOLOGY_VERSION
from ..inputs import load_json_file, read_text_file
from ..lineage.rules import load_rules
from ..policy import PolicyEngine, validate_against_schema
from ..policy.cedar import check_schema_shape
from .loader import Pack, load_pack
from .manifest import ENTRY, line_of, satisfies
from .static import Sources, check_entry

#: the largest Cedar schema file `pack validate` reads (a schema is a few KB)
MAX_SCHEMA_BYTES = 1 << 20


@dataclass
class PackReport:
    pack: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _manifest_line(pack: Pack, needle: str) -> str:
    path = pack.path / "manifest.yaml"
    line = line_of(path.read_text(encoding="utf-8"), needle)
    return f"{path}:{line}" if line else str(path)


def _policy_line(file: Path, message: str) -> int | None:
    """Best effort: the line of the policy a cedar message names (by @id or position)."""
    text = file.read_text(encoding="utf-8")
    named = re.search(r"policy `([^`]+)`", message)
    if named:
        line = line_of(text, f'@id("{named.group(1)}")')
        if line:
            return line
        positional = re.match(r"policy(\d+)$", named.group(1))
        if positional:
            starts = [m.start() for m in re.finditer(r"^\s*(permit|forbid)\s*\(", text, re.M)]
            index = int(positional.group(1))
            if index < len(starts):
                return text.count("\n", 0, starts[index]) + 1
    return None


def validate_pack(folder: Path, *, reasoner: bool = True,
                  reasoner_timeout: float | None = None) -> PackReport:
    try:
        pack = load_pack(folder)
    except CradleError as exc:
        return PackReport(str(folder), errors=[exc.message])
    report = PackReport(pack.ref)
    m = pack.manifest
    if not satisfies(ONTOLOGY_VERSION, m.core_ontology):
        report.errors.append(f"{_manifest_line(pack, 'core_ontology')}: needs core ontology "
                             f"`{m.core_ontology}`, this is `{ONTOLOGY_VERSION}`")
    named = [*m.ontology, *m.shapes, *m.policies, *m.queries.values(), *m.examples,
             *([m.cedar_schema] if m.cedar_schema else []), *m.data.values()]
    for rel in named:
        try:
            exists = pack.file(rel).exists()
        except CradleError:
            report.errors.append(f"{_manifest_line(pack, rel)}: `{rel}` is outside the pack "
                                 "folder")
            continue
        except OSError as exc:  # a name too long for the filesystem (tests/security/test_279)
            report.errors.append(f"{_manifest_line(pack, rel)}: `{rel[:80]}` cannot be looked "
                                 f"up: {exc.strerror or exc}")
            continue
        if not exists:
            report.errors.append(f"{_manifest_line(pack, rel)}: names `{rel}`, which does not "
                                 "exist")
    if report.errors:
        return report
    try:
        examples = pack.example_files()
    except CradleError as exc:
        report.errors.append(exc.message)
        return report
    for file in [*pack.ontology_files(), *pack.shape_files()]:
        try:
            read_rdf(file)
            report.checked.append(str(file))
        except CradleError as exc:
            report.errors.append(exc.message)
    if pack.shape_files() and not report.errors:
        try:
            load_shapes(pack.shape_files())
        except CradleError as exc:
            report.errors.append(exc.message)
    _check_policies(pack, report)
    _check_graph_policies(pack, report)
    _check_queries(pack, report)
    _check_examples(examples, report)
    # INVARIANT: nothing here imports the pack — entries are checked on the parsed source
    sources = Sources()  # each module parsed once, within a budget (tests/security/test_95)
    for entry in [*m.validators, *m.tools, *m.verifiers, *m.invariants, *m.projections,
                  *m.knowledge,
                  *[e for e in (m.example_runner, m.init) if e],
                  *[e for e in m.hooks.values() if ENTRY.match(e)]]:
        found = check_entry(pack.path, entry, sources)
        if found.error:
            report.errors.append(f"{_manifest_line(pack, entry)}: {found.error}")
        if found.warning:
            report.warnings.append(f"{_manifest_line(pack, entry)}: {found.warning}")
    if reasoner and pack.ontology_files() and not report.errors:
        try:
            owl = check_ontology([ONTOLOGY_FILE, *pack.ontology_files()],
                                 timeout=reasoner_timeout)
            if not owl.consistent or owl.unsatisfiable:
                report.errors.append(f"{pack.ontology_files()[0]}: inconsistent with the core "
                                     "ontology: " + "; ".join(owl.messages + owl.unsatisfiable))
            report.warnings += [f"{pack.ontology_files()[0]}: `owl:imports <{iri}>` not "
                                "followed (nothing is fetched): the consistency check covers "
                                "the pack's own files" for iri in owl.skipped_imports]
        except JavaMissingError as exc:
            report.warnings.append(f"ontology consistency not checked: {exc.message}")
        except ReasonerTimeoutError as exc:  # not checked is not valid (test_358)
            report.errors.append(f"{pack.ontology_files()[0]}: ontology consistency not "
                                 f"checked: {exc.message}; {exc.hint}")
    return report


def _check_examples(files: list[Path], report: PackReport) -> None:
    for file in files:
        try:  # the strict loader: a key given twice, NaN, a FIFO or a huge file is refused
            load_json_file(file)
        except InputError as exc:
            why = exc.message.removeprefix(f"`{file}`: ")
            report.errors.append(f"{file}: not a JSON example: {why}")


def _check_graph_policies(pack: Pack, report: PackReport) -> None:
    """Each graph policy read as the runtime reads it when the pack loads: one it would
    refuse (an unreadable or misspelled annotation, a verdict it does not know, a query
    that does not compile) is reported here, not first when a home opens."""
    for file in pack.files(pack.manifest.graph_policies):
        try:
            load_rules([file], namespace=pack.id)
            report.checked.append(str(file))
        except CradleError as exc:
            report.errors.append(exc.message)


def _check_queries(pack: Pack, report: PackReport) -> None:
    """Each named query read as a home reads it when the pack loads: one past the size,
    nesting or operator caps is reported here, not first when a home opens or a query
    runs (``tests/security/test_329``)."""
    catalog = QueryCatalog()
    for name, rel in pack.manifest.queries.items():
        try:
            catalog.add_file(name, pack.file(rel), origin=pack.id)
            report.checked.append(str(pack.file(rel)))
        except CradleError as exc:
            report.errors.append(f"{pack.file(rel)}: {exc.message}")


def _check_policies(pack: Pack, report: PackReport) -> None:
    files = pack.policy_files()
    if not files:
        return
    try:
        PolicyEngine.from_paths(files, namespace=pack.id)  # ids as the runtime cites them
    except CradleError as exc:
        report.errors.append(exc.message)
        return
    if pack.manifest.cedar_schema is None:
        report.warnings.append("no cedar_schema: policies parsed but not type-checked")
        return
    try:
        schema = read_text_file(pack.file(pack.manifest.cedar_schema),
                                max_bytes=MAX_SCHEMA_BYTES)
    except InputError as exc:
        report.errors.append(exc.message)
        return
    try:  # once, before any policy file is checked against it (tests/security/test_327)
        check_schema_shape(schema, str(pack.file(pack.manifest.cedar_schema)))
    except CradleError as exc:
        report.errors.append(exc.message)
        return
    for file in files:
        for problem in validate_against_schema(
                file.read_text(encoding="utf-8"), schema, name=str(file),
                schema_name=str(pack.file(pack.manifest.cedar_schema))):
            line = _policy_line(file, problem)
            report.errors.append(problem.replace(f"{file}:", f"{file}:{line}:", 1)
                                 if line else problem)
