"""Gate 2's reads of the world (issue 14): blast radius, postconditions, compensation, facts.

- **Blast radius** — the contract's ``blast_radius`` (globs; ``{argument}`` placeholders
  are the action's argument values, matched literally) against what the *verifier*
  observed changed (:attr:`VerifierReport.changed`), not the tool's own report. The tool's
  reported side effects are still checked (a tool that admits a write outside fails too).
- **Postconditions** — SHACL shapes the contract declares (``ToolSpec.postconditions``,
  Turtle) validated on the verifier's observation projected as RDF (:func:`observation_rdf`):
  the evidence it read under ``<urn:cradle:observed>``, the action's arguments under
  ``<urn:cradle:arguments>``. No shape declared: the check says ``not_declared``.
- **Compensation available** — from the contract, the compensation tool's registration
  and a permission of the acting identity for it on the same target; computed before the
  status (it counts).
- **Facts** — a verifier's :class:`FactCheck` s on the proposal's candidate facts: a
  confirmation needs the read's evidence; a contradiction fails the verification.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from ..errors import InputError
from ..graph.shacl import RustShaclEngine, shapes_from_turtle
from ..records import (
    Action,
    CandidateFact,
    ExecutionObservation,
    FactCheck,
    VerificationCheck,
    VerificationStatus,
)
from ..tools import ToolSpec, fill_template
from ..verifiers import VerifierReport

V = VerificationStatus
OBSERVED = "urn:cradle:observed"
ARGUMENTS = "urn:cradle:arguments"
#: the namespace of the observation's properties: one per key of the verifier's evidence
OBS_NS = "https://w3id.org/cradle/observed#"
#: (tool id, target) -> why the identity cannot compensate, or None when it can
CompensationCheck = Callable[[str, Action], str | None]


def _check(name: str, status: VerificationStatus, detail: str = "") -> VerificationCheck:
    return VerificationCheck(name=name, status=status, detail=detail)


# --- blast radius -----------------------------------------------------------------------------

def radius(spec: ToolSpec, arguments: BaseModel) -> list[str]:
    """The contract's radius with ``{argument}`` placeholders filled in (literally)."""
    out: list[str] = []
    for pattern in spec.blast_radius:
        try:
            out.append(fill_template(pattern, arguments) if "{" in pattern else pattern)
        except (KeyError, ValueError, IndexError):
            out.append("\0unresolvable:" + pattern)  # matches nothing: fails closed
    return out


def blast_radius(spec: ToolSpec, arguments: BaseModel, observation: ExecutionObservation,
                 report: VerifierReport | None) -> VerificationCheck:
    allowed = radius(spec, arguments)

    def outside(resources: Iterable[str]) -> list[str]:
        return [r for r in resources if not any(fnmatch.fnmatchcase(r, p) for p in allowed)]

    reported = outside(e.resource for e in observation.side_effects)
    if reported:
        return _check("no_forbidden_side_effect", V.FAILED,
                      "the tool reports side effects outside the declared blast radius: "
                      + ", ".join(f"`{r}`" for r in reported))
    observed = None if report is None else report.changed
    if observed is None:
        return _check("no_forbidden_side_effect", V.VERIFIED,
                      "not observed: the verifier reported no resource set"
                      if report is not None else "")
    out = outside(observed)
    if out:
        return _check("no_forbidden_side_effect", V.FAILED,
                      "the verifier observed changes outside the declared blast radius ("
                      + ", ".join(f"`{p}`" for p in allowed) + "): "
                      + ", ".join(f"`{r}`" for r in out))
    return _check("no_forbidden_side_effect", V.VERIFIED,
                  "observed changed: " + (", ".join(f"`{r}`" for r in observed) or "nothing"))


# --- postconditions as SHACL ------------------------------------------------------------------

@lru_cache(maxsize=4096)
def _key_terms(key: str) -> tuple[str, str]:
    """A key of the observation: its predicate IRI, and its IRI-quoted form (for a child's
    IRI) — the same few keys on every call, quoted once (bounded: any text may be a key)."""
    from ..graph.iris import quoted

    q = quoted(key)
    return f"<{OBS_NS}{q}>", q


#: the deepest object of the observation (and of the arguments) written for the shapes:
#: the input limits' ceiling (``cradle_kg.inputs.CEILINGS.max_depth``), so any argument
#: the runtime takes is written whole; deeper, :class:`TooDeep` (the work stays bounded)
MAX_OBSERVED_DEPTH = 100


class TooDeep(Exception):
    """The observation or the arguments nest deeper than :data:`MAX_OBSERVED_DEPTH`."""


def _triples(subject: str, value: Any, out: list[str], depth: int = 0,
             keep: frozenset[str] | None = None) -> None:
    from ..graph.project import lit  # the projection's writer: not to compile shapes

    if not isinstance(value, dict):
        return
    if depth > MAX_OBSERVED_DEPTH:
        # INVARIANT: never a part left out without a word — stopping at the ninth object,
        # a rejection an upstream nested ten deep was not written and "nowhere a line
        # `rejected`" held, the effect committed (tests/security/test_470)
        raise TooDeep(f"the verifier's observation or the arguments nest deeper than "
                      f"{MAX_OBSERVED_DEPTH} objects")
    for key, item in sorted(value.items()):
        pred, qkey = _key_terms(str(key))
        kept = keep is None or pred in keep
        items = item if isinstance(item, list) else (item,)
        for index, v in enumerate(items):
            if isinstance(v, dict):
                child = f"<{subject[1:-1]}/{qkey}/{index}>"
                if kept:
                    out.append(f"{subject} {pred} {child} .\n")
                _triples(child, v, out, depth + 1, keep)
            elif v is None or not kept:
                continue
            elif isinstance(v, _SCALARS):
                out.append(f"{subject} {pred} {lit(v)} .\n")
            else:
                out.append(f"{subject} {pred} {lit(json.dumps(v, default=str))} .\n")


#: the values written as one literal each (a tuple: ``isinstance`` is faster on it than on
#: a union)
_SCALARS = (str, int, float, bool)
_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_CHANGED = f"<{OBS_NS}changed>"


def observation_rdf(report: VerifierReport, arguments: BaseModel,
                    keep: frozenset[str] | None = None) -> str:
    """The verifier's observation as N-Triples: what it read, and what was asked.

    ``keep``: only the triples whose predicate is in it (as N-Triples writes it) — the
    predicates the shapes that will read it can see (:func:`seen_by`); the others cannot
    change their report (:mod:`cradle_kg.graph.shape_reach`). None: every triple.
    Raises :class:`TooDeep` for a value nested past :data:`MAX_OBSERVED_DEPTH`."""
    from ..graph.project import lit
    out: list[str] = []
    if keep is None or _TYPE in keep:
        out.append(f"<{OBSERVED}> {_TYPE} <https://w3id.org/cradle#VerifierObservation> .\n")
    _triples(f"<{OBSERVED}>", report.evidence, out, 0, keep)
    _triples(f"<{ARGUMENTS}>", arguments.model_dump(mode="json"), out, 0, keep)
    if keep is None or _CHANGED in keep:
        for resource in report.changed or ():
            out.append(f"<{OBSERVED}> {_CHANGED} {lit(resource)} .\n")
    return "".join(out)


@lru_cache(maxsize=128)
def _engine(shapes_turtle: tuple[str, ...]) -> RustShaclEngine:
    return RustShaclEngine(shapes_from_turtle(shapes_turtle))


@lru_cache(maxsize=128)
def seen_by(shapes_turtle: tuple[str, ...]) -> frozenset[str] | None:
    """The predicates the contract's shapes can see (None: any —
    :func:`~cradle_kg.graph.shape_reach.observed_predicates`): the observation is given to
    the engine with only those (the airline's passenger change: 13 of its 35 triples)."""
    from ..graph.shape_reach import observed_predicates

    return observed_predicates(_engine(shapes_turtle).shapes.ntriples)


def compile_postconditions(spec: ToolSpec) -> None:
    """Parse and compile a contract's shapes (at registration: a bad shape refuses the
    contract with an :class:`~cradle_kg.errors.InputError`)."""
    if not spec.postconditions:
        return
    try:
        _engine(tuple(spec.postconditions))
    except Exception as exc:  # the Turtle parser's and the SHACL engine's own errors
        raise InputError(f"tool `{spec.ref}`: its postcondition shapes do not compile: "
                         f"{exc}") from exc


def postconditions(spec: ToolSpec, arguments: BaseModel, report: VerifierReport | None,
                   extra: Sequence[VerificationCheck]) -> VerificationCheck:
    """The declared shapes on the observation, with the verifier's own extra checks."""
    parts: list[str] = []
    statuses: list[VerificationStatus] = []
    if spec.postconditions:
        if report is None:
            return _check("postconditions", V.INCONCLUSIVE,
                          "declared, but there is no verifier observation to check them on")
        shapes = tuple(spec.postconditions)
        try:
            data = observation_rdf(report, arguments, seen_by(shapes))
        except TooDeep as exc:  # not read whole: not checked
            statuses.append(V.INCONCLUSIVE)
            parts.append(f"shapes: not checked: {exc}")
        else:
            result = _engine(shapes).validate(data, format="nt", report=False)
            statuses.append(V.VERIFIED if result.conforms else V.FAILED)
            parts.append("shapes: held" if result.conforms else "shapes: " + "; ".join(
                v.message or v.shape for v in result.violations))
    statuses += [c.status for c in extra]
    parts += [f"{c.name}: {c.status}" + (f" ({c.detail})" if c.detail else "") for c in extra]
    if not statuses:
        return _check("postconditions", V.VERIFIED, "not_declared")
    status = (V.FAILED if V.FAILED in statuses else
              V.INCONCLUSIVE if V.INCONCLUSIVE in statuses else V.VERIFIED)
    return _check("postconditions", status, "; ".join(parts))


# --- compensation, facts ------------------------------------------------------------------------

def compensation(spec: ToolSpec, action: Action,
                 available: CompensationCheck | None) -> VerificationCheck:
    tool = spec.compensation_tool
    if not tool:
        return _check("compensation_available", V.VERIFIED,
                      "no compensation declared: a failure escalates to a human")
    problem = available(tool, action) if available is not None else None
    if problem is not None:
        return _check("compensation_available", V.INCONCLUSIVE,
                      f"compensation tool `{tool}` is not available: {problem}")
    return _check("compensation_available", V.VERIFIED,
                  f"compensation tool `{tool}` registered and permitted for "
                  f"`{action.executed_by}` on `{action.target}`")


def facts(candidates: Sequence[CandidateFact], report: VerifierReport | None
          ) -> tuple[VerificationCheck | None, tuple[FactCheck, ...]]:
    """The ``facts`` check and the fact checks that stand (a confirmation without evidence
    does not: the fact stays a candidate)."""
    if report is None or not report.facts:
        return None, ()
    bad = [f for f in report.facts if f.fact >= len(candidates)]
    if bad:
        return _check("facts", V.FAILED, "the verifier names facts the proposal does not "
                      "carry: " + ", ".join(f"#{f.fact}" for f in bad)), ()
    contradicted = [f for f in report.facts if f.status == "contradicted"]
    confirmed = [f for f in report.facts if f.status == "verified"]
    if contradicted:
        return _check("facts", V.FAILED, "contradicted by the verifier's read: " + "; ".join(
            f"`{candidates[f.fact].predicate}` of `{candidates[f.fact].subject}`"
            + (f" ({f.detail})" if f.detail else "") for f in contradicted)), report.facts
    if not report.evidence:
        return _check("facts", V.INCONCLUSIVE,
                      "facts confirmed without evidence stay candidates"), ()
    return _check("facts", V.VERIFIED, "confirmed: " + ", ".join(
        f"`{candidates[f.fact].predicate}`" for f in confirmed)), report.facts
