"""OWL consistency and classification of the vocabulary, with HermiT.

OWL is kept for what it is good at here: is the curated vocabulary (our ontology plus
the packs' ontologies) consistent, are its classes satisfiable, what does it classify
under what. Business rules are SHACL's job, not this module's.

Measured facts this module is built around:
- owlready2 does not read Turtle, so files are merged with rdflib and handed over as
  N-Triples in a temporary file;
- HermiT runs on Java 17; owlready2's bundled Pellet does not, so it is not offered;
- an inconsistent ontology may surface as ``OwlReadyInconsistentOntologyError`` with an
  empty message, so the report words it itself;
- each check uses a fresh owlready2 ``World`` so that checks never leak into each other;
- owlready2's ``Ontology.load`` downloads every ``owl:imports`` (``urlopen``, no time
  limit, ``file:`` IRIs included) and *imports the Python module* an ontology names with
  its ``python_module`` annotation: the files checked are often a pack not trusted yet
  (``pack validate``), so those triples, and every other of owlready2's own namespace,
  are taken out before owlready2 reads the merge — the check covers the files given, and
  says which imports it did not follow (``tests/security/test_347``);
- owlready2 runs HermiT with ``subprocess.check_output`` and no timeout: an ontology hard
  for HermiT's tableau (the pigeonhole principle over a dozen nominals) ran for hours.
  owlready2 and HermiT now run in a child process of their own session
  (:mod:`cradle_kg.graph.hermit`), in the check's temporary directory; past the check's
  time limit the whole session — the child and its Java — is killed and reaped, and the
  check is :class:`ReasonerTimeoutError` (``tests/security/test_358``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from rdflib import OWL, Graph, URIRef

from cradle_kg.errors import (
    InputError,
    JavaMissingError,
    OntologyError,
    RdfParseError,
    ReasonerTimeoutError,
)
from cradle_kg.graph.rdfio import read_union
from cradle_kg.graph.vocab import ONTOLOGY_FILE

__all__ = ["DEFAULT_REASONER_TIMEOUT_S", "MAX_REASONER_TIMEOUT_S", "REASONER_TIMEOUT_ENV",
           "OntologyReport", "check_ontology", "reasoner_timeout"]

#: seconds HermiT may take over one check (``--reasoner-timeout``,
#: ``CRADLE_REASONER_TIMEOUT``); the core ontology and the shipped packs take a few
DEFAULT_REASONER_TIMEOUT_S = 120.0
MAX_REASONER_TIMEOUT_S = 86400.0
REASONER_TIMEOUT_ENV = "CRADLE_REASONER_TIMEOUT"
#: the namespace of owlready2's own annotations (``python_module``, ``python_name``, …)
_OWLREADY = "http://www.lesfleursdunormal.fr/static/_downloads/owlready_ontology.owl#"


class OntologyReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    consistent: bool
    unsatisfiable: list[str]
    # (class, direct named superclass) after classification, sorted
    hierarchy: list[tuple[str, str]]
    messages: list[str]
    #: the ``owl:imports`` of the files, not followed (nothing is fetched), sorted
    skipped_imports: list[str] = []


def reasoner_timeout(seconds: float | None = None) -> float:
    """The time limit of a check: ``seconds`` when given, else ``CRADLE_REASONER_TIMEOUT``
    when set, else the default; above 0 and at most a day."""
    source = "--reasoner-timeout"
    if seconds is None:
        env = os.environ.get(REASONER_TIMEOUT_ENV)
        if env is None or not env.strip():
            return DEFAULT_REASONER_TIMEOUT_S
        source = f"`{REASONER_TIMEOUT_ENV}`"
        try:
            seconds = float(env)
        except ValueError:
            raise InputError(f"{source} is `{env[:40]}`, not a number of seconds",
                             hint=f"e.g. {REASONER_TIMEOUT_ENV}=300") from None
    if not 0 < seconds <= MAX_REASONER_TIMEOUT_S:  # NaN fails too
        raise InputError(f"{source} is {seconds}: the reasoner's time limit is above 0 "
                         f"and at most {MAX_REASONER_TIMEOUT_S:.0f} seconds")
    return seconds


def check_ontology(paths: Sequence[Path] | None = None, *,
                   timeout: float | None = None) -> OntologyReport:
    """Check the union of ``paths`` (default: the built-in ontology) with HermiT, within
    ``timeout`` seconds (default: :func:`reasoner_timeout`); past it,
    :class:`ReasonerTimeoutError`, and nothing of the check left running."""
    limit = reasoner_timeout(timeout)
    files = list(paths) if paths else [ONTOLOGY_FILE]
    java = shutil.which("java")
    if java is None:
        raise JavaMissingError(
            "the OWL reasoner (HermiT) needs Java and `java` is not on PATH",
            hint="install a Java runtime (17 works) and make `java` available on PATH",
        )
    merged = _merge(files)
    skipped = _inert(merged)
    with tempfile.TemporaryDirectory(prefix="cradle-owl-") as tmp:
        nt_file = Path(tmp) / "ontology.nt"
        merged.serialize(destination=str(nt_file), format="nt", encoding="utf-8")
        report = _reason_in_child(nt_file, java, limit, Path(tmp))
    return report.model_copy(update={"skipped_imports": skipped})


def _inert(graph: Graph) -> list[str]:
    """Take out of ``graph`` what owlready2 would act on — each ``owl:imports`` (fetched)
    and each triple of owlready2's namespace (``python_module``: imported) — and give the
    imports' IRIs."""
    imports = sorted({str(o) for o in graph.objects(None, OWL.imports)})
    graph.remove((None, OWL.imports, None))
    for triple in [t for t in graph if any(isinstance(term, URIRef)
                                           and str(term).startswith(_OWLREADY)
                                           for term in t)]:
        graph.remove(triple)
    return imports


def _merge(files: Sequence[Path]) -> Graph:
    try:
        return read_union(files)
    except RdfParseError as exc:
        raise OntologyError(f"cannot read ontology: {exc.message}", hint=exc.hint) from exc


def _reason_in_child(nt_file: Path, java: str, limit: float, tmp: Path) -> OntologyReport:
    """``python -P -m cradle_kg.graph.hermit`` on ``nt_file``, in a session of its own and
    in ``tmp`` (its working folder and owlready2's temporary files: a pack's folder is not
    on its path, and nothing it writes outlives the check); killed with its Java at
    ``limit`` seconds."""
    package = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "TMPDIR": str(tmp),
           "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH"))
                                         if p)}
    try:
        proc = subprocess.Popen([sys.executable, "-P", "-m", "cradle_kg.graph.hermit",
                                 str(nt_file), java], cwd=tmp, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise OntologyError(f"the OWL reasoner could not be started: {exc}") from exc
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        raise ReasonerTimeoutError(
            f"the OWL reasoner (HermiT) did not finish within {limit:g} s: the ontology is "
            "too hard to reason over in that time (reasoner_timeout)",
            hint=f"raise the limit with --reasoner-timeout SECONDS or {REASONER_TIMEOUT_ENV}"
                 "=SECONDS (or skip the check: `pack validate --no-reasoner`)") from None
    finally:  # the timeout, an interrupt: the child and its Java go, and are reaped
        if proc.returncode is None:
            _kill_session(proc)
    try:
        answer = json.loads(out)
        if "error" in answer:
            raise OntologyError(str(answer["error"]))
        return OntologyReport.model_validate(answer["report"])
    except (ValueError, TypeError, KeyError, ValidationError):
        why = " ".join(err.decode("utf-8", "replace").split())[-300:] or "no answer"
        raise OntologyError(f"the OWL reasoner failed (exit {proc.returncode}): {why}") \
            from None


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
