"""What a pack declares: tools with their contracts, verifiers, validators, invariants,
projection hooks.

A pack's Python is plain functions. Each one the runtime should call is wrapped by one of
the decorators below and named in the manifest (``tools``, ``verifiers``, ``validators``,
``invariants``: ``module:attribute``); loading the pack registers exactly what the manifest
names (:mod:`.registration`). Every function receives the :class:`PackContext` first — the
home it keeps its state under, its own version, the runtime's clock — so a pack needs no
registration code and holds no reference to the runtime.

    @tool("demo.ledger.credit", input_model=CreditInput, output_model=CreditOutput,
          side_effect_class=SideEffectClass.EXTERNAL_WRITE, ..., lookup=credit_lookup)
    def credit(ctx: PackContext, call: ToolCall) -> CreditOutput: ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..graph.packproj import ProjectorBody, Triple
from ..loop.gate1.findings import Finding
from ..records import Action, Proposal
from ..tools import ToolCall, ToolSpec
from ..verifiers import VerifierReport, VerifyRequest


@dataclass(frozen=True)
class PackContext:
    """What a pack's functions may know of the runtime that loaded the pack."""

    pack_id: str
    version: str
    #: the pack's folder (its data files)
    folder: Path
    #: the runtime's home; a pack keeps its own state in a folder of its own under it
    home: Path
    #: the runtime's clock (a pinned clock in replays and golden journals)
    clock: Callable[[], datetime]

    @property
    def ref(self) -> str:
        return f"{self.pack_id}@{self.version}"


ToolBody = Callable[[PackContext, ToolCall], BaseModel | dict[str, Any]]
LookupBody = Callable[[PackContext, ToolCall], BaseModel | dict[str, Any] | None]
VerifierBody = Callable[[PackContext, VerifyRequest], VerifierReport]
ValidatorBody = Callable[[PackContext, Proposal, ToolSpec], Sequence[Finding]]
InvariantBody = Callable[[PackContext, Action, BaseModel | None], Sequence[str]]


@dataclass(frozen=True)
class Tool:
    """A tool's contract and its implementation. ``spec.version`` empty: the pack's."""

    spec: ToolSpec
    body: ToolBody
    lookup: LookupBody | None = None


@dataclass(frozen=True)
class Verifier:
    id: str
    body: VerifierBody


@dataclass(frozen=True)
class Validator:
    """A gate-1 domain check of the proposals for tools matching ``tool_pattern``."""

    tool_pattern: str
    name: str
    body: ValidatorBody


@dataclass(frozen=True)
class Invariant:
    """A gate-2 domain invariant over the action and the tool's (parsed) output."""

    tool_pattern: str
    name: str
    body: InvariantBody


@dataclass(frozen=True)
class Projection:
    """A projection hook: journal events of ``kinds`` in, triples for the run graph out.

    Pure and deterministic like the core projection — no clock, no uuid, no I/O, no
    :class:`PackContext` — so a sync, a rebuild and the commit check agree
    (:mod:`cradle_kg.graph.packproj` says what is enforced)."""

    name: str
    kinds: frozenset[str]
    body: ProjectorBody


KnowledgeBody = Callable[[Path], Iterable[Triple]]


@dataclass(frozen=True)
class Knowledge:
    """Reference data as a named graph of the pack's version, generated at load time from
    ``files`` (relative to the pack folder): the body gets the folder, returns triples.
    Re-generated only when the files (or the pack version) change."""

    name: str
    files: tuple[str, ...]
    body: KnowledgeBody


Declaration = Tool | Verifier | Validator | Invariant | Projection | Knowledge


def tool(tool_id: str, *, lookup: LookupBody | None = None, version: str = "",
         **contract: Any) -> Callable[[ToolBody], Tool]:
    """Declare a tool: ``contract`` is :class:`~cradle_kg.tools.ToolSpec`'s fields.

    The contract is built here, when the pack's module is imported, so a field that does
    not exist fails the load; what its side-effect class requires (a verifier, a lookup,
    ``target_from``) is checked when the tool is registered.
    """
    spec = ToolSpec(id=tool_id, version=version, **contract)

    def declare(body: ToolBody) -> Tool:
        return Tool(spec=spec, body=body, lookup=lookup)
    return declare


def verifier(verifier_id: str) -> Callable[[VerifierBody], Verifier]:
    def declare(body: VerifierBody) -> Verifier:
        return Verifier(id=verifier_id, body=body)
    return declare


def validator(tool_pattern: str, *, name: str) -> Callable[[ValidatorBody], Validator]:
    def declare(body: ValidatorBody) -> Validator:
        return Validator(tool_pattern=tool_pattern, name=name, body=body)
    return declare


def projection(name: str, *, kinds: Sequence[str]) -> Callable[[ProjectorBody], Projection]:
    """Declare a projection hook reading the journal events of ``kinds`` (e.g.
    ``"action.observed"``, ``"decision.made"``, ``"verification.recorded"``)::

        @projection("customs.classifications", kinds=("action.observed",))
        def classifications(event: AuditEvent) -> Iterable[Triple]:
            yield (iri(...), iri(RDF_TYPE), literal("..."))
    """
    if not kinds or isinstance(kinds, str):
        raise ValueError("`kinds` is a non-empty list of journal event kinds")

    def declare(body: ProjectorBody) -> Projection:
        return Projection(name=name, kinds=frozenset(kinds), body=body)
    return declare


def knowledge(name: str, *, files: Sequence[str]) -> Callable[[KnowledgeBody], Knowledge]:
    """Declare a knowledge graph built from the pack's data ``files``::

        @knowledge("hs2022", files=("data/hs2022/harmonized-system.csv",))
        def hs2022(folder: Path) -> Iterable[Triple]: ...
    """
    if not re.match(r"^[a-z][a-z0-9-]*$", name):
        raise ValueError(f"`{name}` is not a knowledge graph name (lowercase, digits, -)")
    if not files or isinstance(files, str):
        raise ValueError("`files` is a non-empty list of the pack's data files")

    def declare(body: KnowledgeBody) -> Knowledge:
        return Knowledge(name=name, files=tuple(files), body=body)
    return declare


def invariant(tool_pattern: str, *, name: str) -> Callable[[InvariantBody], Invariant]:
    def declare(body: InvariantBody) -> Invariant:
        return Invariant(tool_pattern=tool_pattern, name=name, body=body)
    return declare
