"""Commit-time enforcement of the integrity rules (SHACL) on the run's graph.

Before a ``StateTransition`` commits, the run's graph — what the journal already holds for
the run plus the events about to be committed — is validated against the integrity
shapes. Any violation aborts the commit (fail closed) and the report is journaled with
the aborted transition.

The run's triples are cached per run (grouped by proposal) as events are appended, so the
check costs one projection of the pending events and one validation, by the Rust engine,
of the committing proposal's part of the run (< 2 ms, however long the run). Only the
triples whose predicate the shapes can see are kept (:mod:`cradle_kg.graph.shape_reach`:
33 of a governed read's 113), and of the ``rdf:type`` triples those whose class the shapes
name (18 of the 33 left: a policy's, a tool's or a task's type is read by no rule); the
others cannot change a report.
"""

from __future__ import annotations

from collections import ChainMap, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from threading import Lock

from ..graph.packproj import PROJECTION_FAILED, PackProjector, pack_triples
from ..graph.project import event_retractions, event_triples, ntriples
from ..graph.shacl import ShaclEngine, load_shapes, make_engine
from ..graph.shape_reach import observed_classes, observed_predicates
from ..graph.vocab import INTEGRITY_SHAPES_FILE
from ..records import AuditEvent, built_event
from ..storage import GENESIS_HASH, Journal, NewEvent


def _pending(ev: NewEvent) -> AuditEvent:
    # built from a typed NewEvent: no validation pass (it would copy the payload)
    return built_event(
        seq=0, id="pending", run_id=ev.run_id, kind=ev.kind, subject=ev.subject,
        actor=ev.actor, at=ev.at, payload=ev.payload, payload_hash=GENESIS_HASH,
        prev_hash=GENESIS_HASH, hash=GENESIS_HASH)


_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def _fold(triples: list[str], ev: AuditEvent, projectors: Sequence[PackProjector] = (),
          strict: bool = False, keep: frozenset[str] | None = None,
          classes: frozenset[str] | None = None) -> list[str]:
    """Fold one event into ``triples``; returns the pack projectors' triples of it.
    ``keep``: the predicates the shapes can see (None: all), ``classes``: the classes whose
    ``rdf:type`` triples they can see (None: all) — the event's other triples cannot
    change a report (:mod:`cradle_kg.graph.shape_reach`) and are left out."""
    for gone in event_retractions(ev):
        while gone in triples:
            triples.remove(gone)
    if keep is None:
        triples.extend(event_triples(ev, header=False))
    else:
        triples.extend(event_triples(ev, header=False, keep=keep, classes=classes))
    if not projectors:
        return []
    extra = pack_triples(ev, projectors, strict=strict)
    triples.extend(extra)
    return extra


class _PackLinks:
    """Which pack nodes a proposal's group types, and which nodes its pack triples link to:
    a pack shape may join a node another proposal's projection describes (a production
    deployment and the staging verification it relies on), so a commit is checked with
    the groups its pack triples link into (one hop)."""

    def __init__(self) -> None:
        self.defined: dict[str, str] = {}  # typed pack node -> the first group typing it
        self.links: dict[str, set[str]] = {}  # group -> IRIs its pack triples point at
        self.typed: dict[str, set[str]] = {}  # group -> pack nodes it types

    def note(self, group: str, extra: list[str]) -> None:
        for t in extra:
            s, pred, o = t.split(" ", 2)
            if pred == _TYPE:
                self.defined.setdefault(s, group)
                self.typed.setdefault(group, set()).add(s)
            elif o.startswith("<"):
                self.links.setdefault(group, set()).add(o)

    def pulled(self, group: str, view: _PackLinks | None = None) -> set[str]:
        local = self.typed.get(group, set()) | (view.typed.get(group, set()) if view else set())
        links = self.links.get(group, set()) | (view.links.get(group, set()) if view else set())
        out = {self.defined[o] for o in links - local if o in self.defined}
        return out - {group}


class _RunGraph:
    """One run's triples, grouped by the proposal each event belongs to.

    Every integrity rule looks at one action and what decided, approved, verified and
    committed it — all events of that action's proposal (rule 8: one key is one action
    node, so a repeated key lands in the same group). A commit is therefore checked
    against its proposal's group, plus the groups whose approvals it used, plus the few
    events that belong to no proposal: the cost of a check does not grow with the run.
    """

    def __init__(self, projectors: Sequence[PackProjector] = (),
                 keep: frozenset[str] | None = None,
                 classes: frozenset[str] | None = None) -> None:
        #: the packs' projection hooks: their triples are checked with the core's
        self.projectors = projectors
        #: the predicates the shapes can see (None: every triple is kept)
        self.keep = keep
        #: the classes whose ``rdf:type`` triples the shapes can see (None: every one;
        #: always None beside a pack's projection, which may write ``rdfs:subClassOf``)
        self.classes = None if projectors else classes
        self.packs = _PackLinks()
        self.groups: dict[str, list[str]] = {}
        self.misc: list[str] = []
        self.owner: dict[str, str] = {}  # action / approval id -> proposal id
        self.uses: dict[str, set[str]] = {}  # proposal id -> approval ids it executed under
        #: how many events were folded in: a checked view is adopted only onto the same
        self.version = 0

    def group_of(self, ev: AuditEvent) -> str | None:
        pl = ev.payload
        if ev.kind == "proposal.received":
            return str(pl["proposal"]["id"])
        if ev.kind == "approval.requested":
            self.owner[pl["approval"]["id"]] = pl["approval"]["proposal_id"]
            return str(pl["approval"]["proposal_id"])
        if ev.kind == "action.intent":
            proposal = str(pl["action"]["proposal_id"])
            self.owner[pl["action"]["id"]] = proposal
            if pl.get("approval_id"):
                self.uses.setdefault(proposal, set()).add(pl["approval_id"])
            return proposal
        if "proposal_id" in pl:
            return str(pl["proposal_id"])
        if isinstance(pl.get("outcome"), dict):
            return str(pl["outcome"]["proposal_id"])
        for key in ("approval_id", "action_id"):
            if pl.get(key) in self.owner:
                return self.owner[pl[key]]
        if isinstance(pl.get("observation"), dict):
            return self.owner.get(pl["observation"]["execution_id"])
        return self.owner.get(ev.subject)

    def fold(self, ev: AuditEvent) -> None:
        self.version += 1
        group = self.group_of(ev)
        extra = _fold(self.misc if group is None else self.groups.setdefault(group, []), ev,
                      self.projectors, keep=self.keep, classes=self.classes)
        if extra and group is not None:
            self.packs.note(group, extra)

    def adopt(self, checked: _Checked) -> None:
        """Take a checked view's groups as this run's, as if its events had been folded
        in (they were: by the check, from the same objects) — the caller made sure the
        run did not change since the check and that exactly these events were written."""
        view = checked.view
        self.groups.update(checked.touched)
        self.owner.update(view.owner.maps[0])  # type: ignore[attr-defined]
        for proposal, approvals in view.uses.items():
            self.uses.setdefault(proposal, set()).update(approvals)
        for node, group in view.packs.defined.items():
            self.packs.defined.setdefault(node, group)
        for group, links in view.packs.links.items():
            self.packs.links.setdefault(group, set()).update(links)
        for group, typed in view.packs.typed.items():
            self.packs.typed.setdefault(group, set()).update(typed)
        self.version += len(checked.payloads)

    def pending_view(self, pending: Sequence[AuditEvent]) -> tuple[set[str], list[str]]:
        """The triples a commit of ``pending`` is checked against — without copying the run.

        Only the groups the pending events touch are copied; ownership learned from the
        pending events goes into overlays, so the cached run is left as it was.
        """
        touched, triples, _ = self.checked_view(pending)
        return touched, triples

    def checked_view(self, pending: Sequence[AuditEvent], payloads: Sequence[object] = ()
                     ) -> tuple[set[str], list[str], _Checked | None]:
        """:meth:`pending_view`, and what :meth:`adopt` needs to take it as the run's once
        the events are written — ``payloads``, the pending events' payload objects, name
        them (None when they touch what belongs to no proposal)."""
        view = _RunGraph(self.projectors, self.keep, self.classes)
        view.owner = ChainMap({}, self.owner)  # type: ignore[assignment]
        touched: dict[str, list[str]] = {}
        misc = list(self.misc)
        adoptable = True
        for ev in pending:
            group = view.group_of(ev)
            if group is None:
                _fold(misc, ev, self.projectors, strict=True, keep=self.keep,
                      classes=self.classes)
                adoptable = False
                continue
            if group not in touched:
                touched[group] = list(self.groups.get(group, ()))
            # INVARIANT: a pack projector that fails on a committing event fails the commit
            extra = _fold(touched[group], ev, self.projectors, strict=True, keep=self.keep,
                          classes=self.classes)
            if extra:
                view.packs.note(group, extra)
        wanted = set(touched)
        for proposal in touched:
            if self.projectors:
                wanted |= self.packs.pulled(proposal, view.packs)
            for approval in self.uses.get(proposal, set()) | view.uses.get(proposal, set()):
                owner = view.owner.get(approval)
                if owner is not None:
                    wanted.add(owner)
        out = list(misc)
        for proposal in sorted(wanted):
            out.extend(touched[proposal] if proposal in touched else self.groups.get(proposal, ()))
        checked = _Checked(view=view, touched=touched, version=self.version,
                           payloads=list(payloads)) if adoptable and payloads else None
        return set(touched), out, checked


@dataclass
class _Checked:
    """A commit check's view of a run with its pending events folded in."""

    view: _RunGraph
    touched: dict[str, list[str]]
    #: the run's version it was computed on
    version: int
    #: which events it folded: their payload objects, held (so that no other object can
    #: take one's place), which the journal's append hands on to the written events
    payloads: list[object]


@dataclass(frozen=True)
class PackShapes:
    """The integrity rules with a pack's shapes added, loaded, not yet in force."""

    files: list[Path]
    engine: ShaclEngine
    keep: frozenset[str] | None
    classes: frozenset[str] | None


class IntegrityChecker:
    """A runtime commit hook and append listener; thread-safe."""

    def __init__(self, journal: Journal, *, extra_shapes: Sequence[Path] = (),
                 engine: str = "rust", cache_runs: int = 512) -> None:
        self._engine_name = engine
        self._shape_files: list[Path] = [INTEGRITY_SHAPES_FILE, *extra_shapes]
        shapes = load_shapes(self._shape_files, builtin=False)
        self.engine: ShaclEngine = make_engine(engine, shapes)
        #: the predicates the shapes can see: the run graph keeps only those triples
        self.keep = observed_predicates(shapes.ntriples)
        #: the classes whose ``rdf:type`` triples the shapes can see: the others are left
        #: out too (a governed read's 33 kept triples are 18)
        self.classes = observed_classes(shapes.ntriples)
        #: the loaded packs' projection hooks (:meth:`add_pack`)
        self.projectors: list[PackProjector] = []
        self.journal = journal
        self._cache: OrderedDict[str, _RunGraph] = OrderedDict()
        self._limit = cache_runs
        self._lock = Lock()
        #: per run, the view the last check computed (adopted when its events are written)
        self._checked: dict[str, _Checked] = {}

    def pack_shapes(self, shapes: Sequence[Path]) -> PackShapes:
        """The integrity rules with a pack's ``shapes`` added, loaded and compiled — so
        refused here (a :class:`~cradle_kg.errors.ShapesError`) when they are refused — but
        not put in force: :meth:`add_pack` puts them in force, which then cannot fail."""
        with self._lock:
            files = [*self._shape_files, *(s for s in shapes if s not in self._shape_files)]
        loaded = load_shapes(files, builtin=False)
        return PackShapes(files=files, engine=make_engine(self._engine_name, loaded),
                          keep=observed_predicates(loaded.ntriples),
                          classes=observed_classes(loaded.ntriples))

    def add_pack(self, *, shapes: Sequence[Path] = (),
                 projectors: Sequence[PackProjector] = (),
                 checked: PackShapes | None = None) -> None:
        """A loaded pack's shapes join the integrity rules at commit, and its projectors'
        triples join the run graph they are checked on (``checked``: the shapes as
        :meth:`pack_shapes` loaded them)."""
        if checked is None and shapes:
            checked = self.pack_shapes(shapes)
        with self._lock:
            if checked is not None:
                self.engine, self.keep, self.classes = checked.engine, checked.keep, \
                    checked.classes
                self._shape_files = checked.files
            self.projectors.extend(projectors)
            self._cache.clear()  # cached runs were folded without them
            self._checked.clear()

    def _cached(self, run_id: str) -> _RunGraph:
        """The run's graph (caller holds the lock)."""
        cached = self._cache.get(run_id)
        if cached is not None:
            self._cache.move_to_end(run_id)
            return cached
        graph = _RunGraph(self.projectors, self.keep, self.classes)
        for ev in self.journal.events(run_id=run_id):
            graph.fold(ev)
        self._cache[run_id] = graph
        while len(self._cache) > self._limit:
            self._cache.popitem(last=False)
        return graph

    def on_append(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            start = self._adopt(events)
            for ev in events[start:]:
                cached = self._cache.get(ev.run_id)
                if cached is not None:
                    cached.fold(ev)

    def _adopt(self, events: Sequence[AuditEvent]) -> int:
        """How many of ``events`` the last check of their run had folded already: when the
        written events begin with exactly the checked ones (the same payload objects, in
        order, one run) and the run did not change in between, the check's view becomes
        the cached run — the commit is not projected twice. Otherwise 0 (fold them all)."""
        if not events:
            return 0
        run_id = events[0].run_id
        checked = self._checked.pop(run_id, None)
        cached = self._cache.get(run_id)
        n = len(checked.payloads) if checked is not None else 0
        if (checked is None or cached is None or cached.version != checked.version
                or len(events) < n or any(e.run_id != run_id for e in events[:n])
                or any(e.payload is not p for e, p in zip(events, checked.payloads,
                                                          strict=False))):
            return 0
        cached.adopt(checked)
        return n

    def check(self, run_id: str, pending: Sequence[NewEvent]) -> list[str]:
        events = [_pending(new) for new in pending]
        with self._lock:
            graph = self._cached(run_id)
            touched, triples, checked = graph.checked_view(
                events, payloads=[new.payload for new in pending])
            if checked is not None:
                self._checked[run_id] = checked
            else:
                self._checked.pop(run_id, None)
            while len(self._checked) > self._limit:
                self._checked.pop(next(iter(self._checked)))
            if not touched:  # nothing to attribute: check the whole run
                triples = [t for g in graph.groups.values() for t in g] + triples
        failed = [t for t in triples if PROJECTION_FAILED in t] if self.projectors else []
        report = self.engine.validate(ntriples(triples), format="nt", report=False)
        return [f"pack projection failed: {t.split(PROJECTION_FAILED, 1)[1].strip()}"
                for t in failed] + [f"rule {v.rule if v.rule is not None else '-'}: {v.message} "
                f"(focus <{v.focus_node}>)" for v in report.violations]


__all__ = ["IntegrityChecker"]
