"""Registering a pack: what its manifest names, bound to its context, handed to a runtime.

The manifest's ``tools``, ``verifiers``, ``validators`` and ``invariants`` are lists of
``module:attribute`` entries, each naming a declaration of :mod:`.declarations`. They are
all imported and checked first (:func:`prepare_pack`); only then does anything get
registered, so a pack with a wrong entry changes nothing. The registrar is anything with
the runtime's four public ``register_*`` methods — this module never imports the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import CradleError, InputError, ManifestError
from ..graph.packproj import PackProjector
from ..loop.gate1.findings import DomainValidator
from ..tools import LookupFunction, ToolFunction, ToolSpec, contract_problems
from ..verifiers import VerifierFunction
from .declarations import (
    Invariant,
    Knowledge,
    PackContext,
    Projection,
    Tool,
    Validator,
    Verifier,
)
from .loader import Pack

if TYPE_CHECKING:  # the graph store and gate 2 (rdflib): not needed to list a pack's tools
    from ..graph.knowledge import KnowledgeSource
    from ..loop.gate2 import DomainInvariant


class Registrar(Protocol):
    def register_tool(self, spec: ToolSpec, fn: ToolFunction, *,
                      lookup: LookupFunction | None = None) -> None: ...

    def register_verifier(self, verifier_id: str, fn: VerifierFunction) -> None: ...

    def register_validator(self, tool_pattern: str, fn: DomainValidator, *, name: str,
                           pack: str | None = None) -> None: ...

    def register_invariant(self, tool_pattern: str, fn: DomainInvariant, *,
                           name: str) -> None: ...


D = TypeVar("D", Tool, Verifier, Validator, Invariant, Projection, Knowledge)

_DECORATOR = {Tool: "tool", Verifier: "verifier", Validator: "validator",
              Invariant: "invariant", Projection: "projection", Knowledge: "knowledge"}


def _declared(pack: Pack, entry: str, kind: type[D]) -> D:
    found: Any = pack.resolve(entry)
    where = f"{pack.path / 'manifest.yaml'}: `{entry}`"
    if not isinstance(found, kind):
        raise ManifestError(f"{where} is not a {_DECORATOR[kind]} declaration (`cradle_kg."
                            f"packs.sdk.{_DECORATOR[kind]}`), it is a `{type(found).__name__}`")
    if isinstance(found, Tool):
        problems = contract_problems(found.spec, has_lookup=found.lookup is not None,
                                     require_postconditions=True)
        if problems:
            raise ManifestError(f"{where}: tool `{found.spec.id}` has an incomplete contract: "
                                + "; ".join(problems))
    return found


@dataclass(frozen=True)
class PreparedPack:
    """A pack's declarations, imported and checked, bound to its context."""

    pack: Pack
    context: PackContext
    tools: tuple[tuple[str, Tool], ...]
    verifiers: tuple[tuple[str, Verifier], ...]
    validators: tuple[tuple[str, Validator], ...]
    invariants: tuple[tuple[str, Invariant], ...]
    projections: tuple[tuple[str, Projection], ...] = ()
    knowledge: tuple[tuple[str, Knowledge], ...] = ()

    @cached_property
    def ontology(self) -> KnowledgeSource | None:
        """The pack's ``ontology:`` files as one graph, read and parsed on first use, once
        (an :class:`~cradle_kg.errors.RdfParseError` naming the file and line when one does
        not parse); its text is what the store loads. ``Runtime.load_pack`` asks before
        anything is put in force (``tests/security/test_522``)."""
        from ..graph.knowledge import knowledge_graph, turtle_source

        files = self.pack.ontology_files()
        if not files:
            return None
        return turtle_source(knowledge_graph(self.pack.id, self.pack.version, "ontology"),
                             files)

    def knowledge_sources(self) -> list[KnowledgeSource]:
        """The pack's ontology (Turtle, as shipped) and its generated reference data, each
        a named graph of this version (``…/pack/<id>/<version>/<name>``)."""
        from ..graph.knowledge import KnowledgeSource, knowledge_graph

        pack, ctx = self.pack, self.context
        out: list[KnowledgeSource] = []
        if self.ontology is not None:
            out.append(self.ontology)
        for _, k in self.knowledge:
            out.append(KnowledgeSource(knowledge_graph(pack.id, pack.version, k.name),
                                       tuple(pack.file(f) for f in k.files),
                                       build=partial(k.body, ctx.folder)))
        return out

    def projectors(self) -> list[PackProjector]:
        """The manifest's projection hooks, in its order, tagged with the pack's ref."""
        return [PackProjector(pack=self.context.ref, name=p.name, kinds=p.kinds, body=p.body)
                for _, p in self.projections]

    def _spec(self, t: Tool) -> ToolSpec:
        """The tool's contract as registered: a tool without a version gets the pack's."""
        return t.spec if t.spec.version else replace(t.spec, version=self.context.version)

    def check_free(self, *, tool_taken: Callable[[str], bool],
                   verifier_taken: Callable[[str], bool],
                   contract: Callable[[ToolSpec], None]) -> None:
        """Refuse now what :meth:`register` would refuse half-way: a verifier or tool id
        already registered (by another pack, or twice in this one), a contract ``contract``
        refuses (its postconditions do not compile) — one line naming the manifest and the
        entry, nothing registered (``tests/security/test_515``)."""
        verifiers: set[str] = set()
        for entry, v in self.verifiers:
            with self._entry(entry):
                if verifier_taken(v.id) or v.id in verifiers:
                    raise ValueError(f"verifier `{v.id}` is already registered")
            verifiers.add(v.id)
        tools: set[str] = set()
        for entry, t in self.tools:
            with self._entry(entry):
                if tool_taken(t.spec.id) or t.spec.id in tools:
                    raise InputError(f"tool `{t.spec.id}` is already registered")
                contract(self._spec(t))
            tools.add(t.spec.id)

    def register(self, registrar: Registrar) -> None:
        """Everything the manifest names, in its order (gate 1 runs validators in it)."""
        ctx = self.context
        for entry, v in self.verifiers:
            with self._entry(entry):
                registrar.register_verifier(v.id, partial(v.body, ctx))
        for entry, t in self.tools:
            spec = self._spec(t)
            with self._entry(entry):
                registrar.register_tool(spec, partial(t.body, ctx), lookup=partial(
                    t.lookup, ctx) if t.lookup is not None else None)
        for entry, check in self.validators:
            with self._entry(entry):
                registrar.register_validator(check.tool_pattern, partial(check.body, ctx),
                                             name=check.name, pack=ctx.ref)
        for entry, inv in self.invariants:
            with self._entry(entry):
                registrar.register_invariant(inv.tool_pattern, partial(inv.body, ctx),
                                             name=inv.name)

    @contextmanager
    def _entry(self, entry: str) -> Iterator[None]:
        """A refused registration names the manifest and the entry."""
        where = f"{self.pack.path / 'manifest.yaml'}: `{entry}`"
        try:
            yield
        except CradleError as exc:
            raise ManifestError(f"{where}: {exc.message}") from exc
        except ValueError as exc:  # the verifier registry's "already registered"
            raise ManifestError(f"{where}: {exc}") from exc


def prepare_pack(pack: Pack, *, home: Path, clock: Callable[[], datetime]) -> PreparedPack:
    """Import what the manifest names and check each is the declaration its list wants.

    TRUST: this imports the pack's modules (their top level runs).
    """
    m = pack.manifest
    return PreparedPack(
        pack=pack,
        context=PackContext(pack_id=pack.id, version=pack.version, folder=pack.path,
                            home=home, clock=clock),
        tools=tuple((e, _declared(pack, e, Tool)) for e in m.tools),
        verifiers=tuple((e, _declared(pack, e, Verifier)) for e in m.verifiers),
        validators=tuple((e, _declared(pack, e, Validator)) for e in m.validators),
        invariants=tuple((e, _declared(pack, e, Invariant)) for e in m.invariants),
        projections=tuple((e, _declared(pack, e, Projection)) for e in m.projections),
        knowledge=tuple((e, _declared(pack, e, Knowledge)) for e in m.knowledge),
    )
