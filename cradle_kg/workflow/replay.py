"""Strict replay: re-run a run from its journal and reproduce it hash for hash.

The replay happens in a scratch home (a temporary directory, never the real one) on a
:class:`~.sandbox.SandboxRuntime` whose tools and verifiers serve their recorded
answers and whose model client serves the recorded responses. The rest of the journal
— other runs, human inputs, budgets, autonomy commands — is copied as recorded, at its
recorded place, so the replayed run sees exactly the journal it saw the first time.

Determinism seam: the runtime's two environmental inputs are fed from the record. The
injectable ``clock`` returns the ``at`` of the next event the replayed run must produce,
and the worker id journaled with intents is the recorded one. Every other id is derived
from content, so each produced event must carry the recorded hash; the first one that
does not raises :class:`ReplayDivergenceError` naming its seq and kind.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, ValidationError

from ..canonical import canonical_json, iso, sha256_bytes
from ..config import load_config
from ..errors import CradleError, InputError, PackVersionError, ReplayDivergenceError
from ..evidence import EvidenceStore
from ..home import Home
from ..inputs import load_json_file
from ..loop.approval_flow import decided_events
from ..loop.gate1.decision import PACK_DIGESTS
from ..packs.registry import PackRegistry
from ..policy import PolicyEngine
from ..policy.cedar import MAX_POLICY_FILE_BYTES, PolicySource
from ..records import ApprovalStatus, AuditEvent, Plan, Proposal
from ..storage import Anchor, Journal, NewEvent, SqliteJournal, event_hash, open_home_journal
from ..storage.counting import REFUSED_AGENT
from ..storage.digest_check import unkeyed
from ..storage.walk import anchor_problem
from ..tools import ToolSpec
from .autonomy import STAGE_KINDS
from .definitions import load_recorded_workflow
from .ending import cancelled_by
from .engine import Engine
from .model import ModelResponse, RecordedClient
from .sandbox import NotReplayable, Recording, SandboxRuntime
from .steps import workflow_factory

#: events a person (or the outside world) wrote: replay copies them, never re-derives them
#: (a person's close of a human task too: ``tests/security/test_441``)
INPUT_KINDS = frozenset({"approval.decided", "approval.viewed", "approval.refused",
                         "evidence.collected", "human.decided", "human_task.resolved",
                         "input.recorded", "run.claimed", "task.claimed"})
#: what may stand in a run no replay starts (a run of commands, uploads or claims): the
#: inputs, a budget or an autonomy stage a person set, a policy set put in force, what
#: ``mcp proxy`` registered and a tool it saw changed (``tests/security/test_614``). Any other
#: event is one the runtime only derives, in a run a proposal or a workflow starts
#: (``tests/security/test_438``)
COPIED_ALONE = INPUT_KINDS | {"budget.set", "policyset.activated", "tools.registered",
                              "tools.changed",
                              *STAGE_KINDS}

#: the packs one decision was made under, as it records them: each ``id@version`` with its
#: digest (None: not recorded — a journal written before ``tests/security/test_553``)
PackSet = tuple[tuple[str, str | None], ...]


class RecordedEvents(Sequence[AuditEvent]):
    """The recorded journal's events by position (``seq - 1``), read from the journal as
    they are asked for, never held all at once (``tests/security/test_526``): a window of
    :attr:`WINDOW` events read forward, and the last few events asked for elsewhere. Its
    length is the journal's head when it was opened: events appended since are not
    part of the record replayed."""

    WINDOW = 128
    KEPT = 64

    def __init__(self, journal: Journal, count: int) -> None:
        self._journal, self._count = journal, count
        self._start, self._window = 0, list[AuditEvent]()
        self._kept: OrderedDict[int, AuditEvent] = OrderedDict()

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> AuditEvent: ...
    @overload
    def __getitem__(self, index: slice) -> list[AuditEvent]: ...
    def __getitem__(self, index: int | slice) -> AuditEvent | list[AuditEvent]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        i = index + self._count if index < 0 else index
        if not 0 <= i < self._count:
            raise IndexError(index)
        if self._start <= i < self._start + len(self._window):
            return self._window[i - self._start]
        if i in self._kept:
            self._kept.move_to_end(i)
            return self._kept[i]
        if self._start <= i < self._start + 2 * self.WINDOW or not self._window:
            # reading on: the next window
            self._start = i
            self._window = self._read(i, min(self.WINDOW, self._count - i))
            return self._window[0]
        ev = self._read(i, 1)[0]
        self._kept[i] = ev
        if len(self._kept) > self.KEPT:
            self._kept.popitem(last=False)
        return ev

    def __iter__(self) -> Iterator[AuditEvent]:
        return islice(self._journal.events(), self._count)

    def _read(self, i: int, n: int) -> list[AuditEvent]:
        got = list(islice(self._journal.events(since_seq=i, batch=n), n))
        if len(got) != n or got[0].seq != i + 1:
            raise ReplayDivergenceError(f"the journal changed while it was replayed: seq "
                                        f"{i + 1} is not as it was read", seq=i + 1)
        return got


@dataclass
class Source:
    """A recorded home, read only.

    Indexed once, when opened (``tests/security/test_436``): which runs are workflows,
    each run's decisions and submissions, and one policy engine per recorded version. A
    replay asks at every step it triggers; before, each question read the whole journal
    again (and parsed every Cedar text again), and a run's replay took time in the square
    of its length. The events themselves are read from the journal as the replay asks
    for them (:class:`RecordedEvents`), the index holding their positions: a replay's
    memory does not follow the journal's length (``tests/security/test_526``). Close it
    (or use it as a context manager): it holds the journal open.
    """

    home: Path
    events: Sequence[AuditEvent]
    idem_keys: dict[int, str]
    evidence: EvidenceStore
    #: the journal's digest key (None: it has none): the scratch journal takes it, so the
    #: digests of secret arguments are made as they were (``tests/security/test_135``)
    digest_key: bytes | None = field(default=None, repr=False)
    journal: Journal | None = field(default=None, repr=False)

    @classmethod
    def open(cls, home: Path) -> Source:
        journal = open_home_journal(home, must_exist=True)
        try:
            events = RecordedEvents(journal, journal.head()[0])
            check_record(events)
            source = cls(home, events, journal.claimed_keys(),
                         EvidenceStore(Home(home).evidence), journal.stored_digest_key(),
                         journal)
        except BaseException:
            journal.close()
            raise
        return source

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def at_seq(self, seq: int) -> AuditEvent | None:
        """The recorded event at ``seq`` (None: there is none; seqs are positions + 1,
        :func:`check_record`)."""
        return self.events[seq - 1] if 1 <= seq <= len(self.events) else None

    def runs(self) -> list[str]:
        """Runs that replay can re-derive: submitted proposals, workflow runs, plans."""
        return list(self._index.runs)

    def runs_of(self, run_id: str) -> frozenset[str]:
        """The runs replaying ``run_id`` produces: itself, and the runs its plans' steps
        name (a plan submits each step in the step's own run when it names one,
        ``tests/security/test_524``)."""
        return frozenset({run_id, *self._index.plan_steps.get(run_id, ())})

    def is_workflow(self, run_id: str) -> bool:
        return run_id in self._index.started

    def model_calls(self, run_id: str) -> list[AuditEvent]:
        """The run's ``model.called`` events, in journal order."""
        return [self.events[i] for i in self._index.model_calls.get(run_id, [])]

    def started(self, run_id: str) -> AuditEvent | None:
        """The run's ``workflow.started`` (None: not a workflow run)."""
        return self._index.started.get(run_id)

    def next_decision_version(self, start: int, run_id: str | frozenset[str]) -> str | None:
        """The policy version of the first ``decision.made`` of the run (or runs) at
        position ``start`` of :attr:`events` or after it (None: there is none)."""
        found: tuple[int, str] | None = None
        for run in _runs(run_id):
            at, versions = self._index.decisions.get(run, ((), ()))
            k = bisect_left(at, start)
            if k < len(at) and (found is None or at[k] < found[0]):
                found = at[k], versions[k]
        return found[1] if found else None

    def next_submission(self, start: int, run_id: str | frozenset[str]) -> AuditEvent | None:
        """The first submission (:data:`_SUBMISSIONS`) of the run (or runs) at position
        ``start`` or after."""
        found: int | None = None
        for run in _runs(run_id):
            at = self._index.submissions.get(run, [])
            k = bisect_left(at, start)
            if k < len(at) and (found is None or at[k] < found):
                found = at[k]
        return self.events[found] if found is not None else None

    def first_submission(self, run_id: str, subject: str, attempt: Any,
                         before: int) -> AuditEvent | None:
        """The plain ``proposal.received`` of ``subject``'s ``attempt`` in the run that comes
        first in the journal, when it is before position ``before``: what a
        ``proposal.replayed`` answered the same proposal with."""
        first = self._index.first_received.get((run_id, subject, _json_key(attempt)))
        return self.events[first] if first is not None and first < before else None

    def recorded_packs(self, run_id: str) -> list[PackSet | None]:
        """The distinct sets of packs the decisions of ``run_id`` (and of the runs its
        plans' steps name) were made under, in journal order (empty: no decision; None:
        a decision whose ``pack_versions`` is not a list of ``id@version``)."""
        found: dict[PackSet | None, None] = {}
        for run in sorted(self.runs_of(run_id)):
            for packs in self._index.packs.get(run, {}):
                found.setdefault(packs)
        return list(found)

    @cached_property
    def installed_packs(self) -> PackRegistry:
        """The packs installed for the home (built in, its ``packs/``, entry points), found
        once per replay: each one's digest is read once, whatever the number of runs."""
        return PackRegistry.discover(self.home)

    def registered_spec(self, tool_id: str, before: int) -> ToolSpec | None:
        """The spec ``mcp proxy`` journaled for ``tool_id`` in the last ``tools.registered``
        before position ``before`` (``tests/security/test_585``); None: none names it."""
        at = self._index.registered.get(tool_id, [])
        i = bisect_left(at, before)
        if i == 0:
            return None
        ev = self.events[at[i - 1]]
        from ..integrations.proxy import recorded_spec

        entry = next(t for t in ev.payload["tools"] if t["id"] == tool_id)
        return recorded_spec(entry, str(ev.payload["source"]))

    def in_plan(self, position: int) -> bool:
        """Whether the submission at ``position`` is a plan's step, made by its
        ``plan.started`` (a live replay runs the plan, not each recorded step)."""
        return position in self._index.plan_members

    @cached_property
    def _index(self) -> _Index:
        return _Index.of(self.events)

    def check_definition(self, run_id: str) -> None:
        """Refuse, before the run is replayed, a workflow run whose recorded
        ``module:function`` names no workflow factory this process may build it with
        (:func:`.steps.workflow_factory`: a journal does not choose the code a replay
        runs, ``tests/security/test_322``). Called once the sandbox loaded its packs."""
        started = self.started(run_id)
        definition = str(started.payload.get("definition")) if started else "file:"
        if not definition.startswith("file:"):
            workflow_factory(definition)

    def policies(self, version: str) -> PolicyEngine | None:
        """The policy set in force under ``version``, rebuilt from its journaled texts
        (once: the same engine each time it is asked again)."""
        if version not in self._engines:
            ev = self._index.activations.get(version)
            self._engines[version] = None if ev is None else PolicyEngine(
                PolicySource(s["name"], self._text(s["ref"]), s.get("namespace"))
                for s in ev.payload["sources"])
        return self._engines[version]

    @cached_property
    def _engines(self) -> dict[str, PolicyEngine | None]:
        return {}

    def _text(self, ref: str) -> str:
        """A recorded policy text, read as a policy file is read: a handed ``evidence/``
        may hold a sparse file of any size under a text's name, and a blob is checked
        against its hash only once read (``tests/security/test_348``)."""
        return self.evidence.get(ref, max_bytes=MAX_POLICY_FILE_BYTES).decode()

    def recorded(self, ev: AuditEvent) -> NewEvent:
        return NewEvent(run_id=ev.run_id, kind=ev.kind, subject=ev.subject, actor=ev.actor,
                        at=ev.at, payload=ev.payload, idem_key=self.idem_keys.get(ev.seq))


@contextmanager
def scratch_home(source: Source, *, packs: Sequence[str] = (),
                 exact: Sequence[str] | None = None) -> Iterator[Path]:
    """A temporary home with the source's config (and packs); removed afterwards.

    ``packs``: refs put in place of the config's version of each (live replay's
    ``--pack``); ``exact``: the packs to load, all of them and only them (pack folders:
    the versions a strict replay's run recorded, :func:`run_packs`)."""
    root = Path(tempfile.mkdtemp(prefix="cradle-replay-"))
    try:
        home = root / "home"
        (home / "policies").mkdir(parents=True)
        config = Home(source.home).config
        data: dict[str, Any] | None = None
        if config.is_file():
            load_config(config)  # a key twice, NaN ...: refused as the home itself refuses it
            data = load_json_file(config)
            for ref in packs:
                keep = [p for p in data.get("packs", []) if p.split("@")[0] != ref.split("@")[0]]
                data["packs"] = [*keep, ref]
            if isinstance(data.get("packs"), list):
                data["packs"] = _home_pack_folders(source.home, data["packs"])
        if exact is not None and (data is not None or exact):
            data = {**(data or {}), "packs": list(exact)}
        if data is not None:
            (home / "config.json").write_text(json.dumps(data), encoding="utf-8")
        if source.digest_key is not None:
            with SqliteJournal(Home(home).journal) as journal:
                journal.adopt_digest_key(source.digest_key)
        yield home
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: what a strict replay says of a run whose decisions name their packs without a digest
NOT_RECORDED = ("pack versions not recorded (a journal written before decisions named "
                "their packs' digests): replayed under the home's packs as they are now")


def run_packs(source: Source, run_id: str) -> tuple[list[str] | None, str | None]:
    """The packs a strict replay of ``run_id`` loads — the folders of exactly the
    versions its decisions recorded, found among the home's installed packs (built in,
    the home's ``packs/``, entry points: versions side by side) — and a warning.

    ``(None, None)``: the run made no decision (the home's packs, as before);
    ``(None, warning)``: its decisions name their packs without a digest (a journal
    written before they did: replayed as before, :data:`NOT_RECORDED`). Refused
    (:class:`PackVersionError`, before anything is replayed): a recorded version that is
    not installed, one installed with other files (its digest differs), a run decided
    under more than one set of packs (a replay runs one run under one set). Before, the
    scratch home loaded the packs the home names *now*: after an upgrade the old run was
    decided again under the new version and diverged, and a pack edited in place under
    its version replayed as if it were the code that ran (``tests/security/test_553`` …
    ``test_555``)."""
    sets = source.recorded_packs(run_id)
    if not sets:
        return None, None
    if any(s is None or any(d is None for _, d in s) for s in sets):
        return None, f"run `{run_id}`: {NOT_RECORDED}"
    recorded = [s for s in sets if s is not None]
    if len(recorded) > 1:
        first, then = recorded[0], recorded[1]
        moved = next(ref for ref, digest in (*first, *then)
                     if (ref, digest) not in first or (ref, digest) not in then)
        raise PackVersionError(
            f"strict replay cannot run `{run_id}` with the code that decided it: it was "
            f"decided under more than one set of packs ({_named(first)}, then "
            f"{_named(then)}), and a replay runs a run under one", pack=pack_id(moved),
            recorded=_named(first), hint="`replay --live` runs it under the packs installed "
                                         "now and lists what differs")
    registry = source.installed_packs
    folders: list[str] = []
    for ref, digest in recorded[0]:
        assert digest is not None
        pack = registry.packs.get(ref)
        if pack is not None and pack.digest() == digest:
            folders.append(str(pack.path))
            continue
        pid = pack_id(ref)
        installed = tuple(f"`{p.ref}` (`{p.digest()}`)" for p in registry.all() if p.id == pid)
        where = (f"installed: {', '.join(installed)}" if installed
                 else f"no version of `{pid}` is installed")
        why = (f"pack `{ref}` (recorded digest `{digest}`) is not installed; {where}"
               if pack is None else
               f"pack `{ref}` is installed, but its files differ from those that decided "
               f"it: recorded digest `{digest}`, installed `{pack.digest()}`")
        raise PackVersionError(
            f"strict replay cannot run `{run_id}` with the code that decided it: {why}",
            pack=pid, recorded=f"{ref} ({digest})", installed=installed,
            hint=f"install `{ref}` as it was (a folder of the home's `packs/`, beside the "
                 "other versions) to replay it strictly; `replay --live` runs it under the "
                 "packs installed now and lists what differs")
    return folders, None


def pack_id(ref: str) -> str:
    """The id of a pack's ``id@version``."""
    return ref.rpartition("@")[0] or ref


def _named(packs: PackSet) -> str:
    return "[" + ", ".join(f"`{ref}`" for ref, _ in packs) + "]"


def _home_pack_folders(root: Path, refs: list[Any]) -> list[Any]:
    """``refs`` with each naming a pack of the home's own ``packs/`` replaced by that
    pack's folder: the scratch home runs the home's packs where they are, the module the
    home itself imports (a copy per scratch home was imported anew — once per run of a
    strict replay — and stayed in ``sys.modules``: ``tests/security/test_523``). A
    built-in or installed pack, or a ref that names none, is left as written (the scratch
    runtime resolves it, or refuses it, as the home does)."""
    own = root / "packs"
    if not own.is_dir():
        return refs
    registry = PackRegistry.discover(root)
    out: list[Any] = []
    for ref in refs:
        try:
            pack = registry.get(ref) if isinstance(ref, str) else None
        except CradleError:
            pack = None
        out.append(str(pack.path) if pack is not None and pack.path.is_relative_to(
            own.resolve()) else ref)
    return out


#: what a replay reads of each recorded kind, by path, and the type it must have there
#: (``object``: present): an event shaped otherwise is none the runtime wrote
_NEEDS: dict[str, dict[str, type]] = {
    "decision.made": {"decision": dict, "decision.policy_version": object,
                      "decision.verdict": str, "proposal_id": str},
    "action.observed": {"observation": dict},
    "verification.recorded": {"action_id": str, "verification": dict,
                              "verification.status": str},
    "policyset.activated": {"version": object, "sources": list},
    "tools.registered": {"source": str, "tools": list},
    "proposal.received": {"proposal": dict},
    "run.outcome": {"outcome": dict, "outcome.proposal_id": str, "outcome.status": str},
    "model.called": {"response": dict},
    "workflow.started": {"definition": object, "version": object, "input": object},
    "step.completed": {"step": object, "output": object, "by": object},
    "step.failed": {"step": object, "code": object},
    "human.requested": {"step": object},
    "plan.started": {"plan": dict},
}
#: lists a replay reads item by item: (kind, field) -> what each item must hold
_ITEMS: dict[tuple[str, str], dict[str, type]] = {
    ("decision.made", "validator_findings"): {"validator": str, "findings": list},
    ("policyset.activated", "sources"): {"name": str, "ref": str},
    ("tools.registered", "tools"): {"id": str, "definition": dict, "contract": dict},
}
#: recorded objects a replay rebuilds whole: (kind, field) -> their model
_MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("proposal.received", "proposal"): Proposal,
    ("model.called", "response"): ModelResponse,
    ("plan.started", "plan"): Plan,
}


def _shape_problem(kind: str, payload: dict[str, Any]) -> str | None:
    """What of ``payload`` is not as the runtime writes a ``kind`` (None: nothing)."""
    for path, wanted in _NEEDS.get(kind, {}).items():
        here: Any = payload
        for name in path.split("."):
            if not isinstance(here, dict) or name not in here:
                return f"`payload.{path}` is missing"
            here = here[name]
        if not isinstance(here, wanted):
            return f"`payload.{path}` is not a {wanted.__name__}"
    for (k, name), needs in _ITEMS.items():
        items = payload.get(name, []) if k == kind else []
        if not isinstance(items, list):
            return f"`payload.{name}` is not a list"
        for i, item in enumerate(items):
            for key, wanted in needs.items():
                if not isinstance(item, dict) or not isinstance(item.get(key), wanted):
                    return f"`payload.{name}[{i}].{key}` is not a {wanted.__name__}"
    for (k, name), model in _MODELS.items():
        if k == kind:
            try:
                model.model_validate(payload[name])
            except ValidationError as exc:
                return f"`payload.{name}` is not a {model.__name__}: " \
                       f"{exc.errors()[0].get('msg', '')}"
    return None


def check_record(events: Iterable[AuditEvent]) -> None:
    """Refuse, as a divergence naming it, a recorded event whose payload is not shaped as
    the runtime writes it, where the replay reads it (``tests/security/test_440``): a
    handed journal's author writes every byte, and before, such a payload ended the
    replay in ``unexpected TypeError`` / ``KeyError`` / ``ValidationError``. An event
    missing from the chain (seqs follow on from 1, as ``audit verify`` wants them) is
    one too: the replay finds each event by its seq."""
    for i, ev in enumerate(events, start=1):
        if ev.seq != i:
            raise ReplayDivergenceError(
                f"replay diverges at seq {i}: the journal has no event there (the next is "
                f"at seq {ev.seq}); `audit verify` says why", seq=i)
        problem = _shape_problem(ev.kind, ev.payload)
        if problem is not None:
            raise ReplayDivergenceError(
                f"replay diverges at seq {ev.seq} (`{ev.kind}`): {problem}, as the runtime "
                "never writes it; nothing replays it", seq=ev.seq)


def _json_key(value: Any) -> str:
    return canonical_json(value)


def _runs(run_id: str | frozenset[str]) -> frozenset[str]:
    return frozenset({run_id}) if isinstance(run_id, str) else run_id


@dataclass
class _Index:
    """What a replay asks of a recorded journal at each step, read from it once.
    Positions are indices into ``Source.events``."""

    #: runs a replay can re-derive, in journal order
    runs: dict[str, None] = field(default_factory=dict)
    #: each workflow run's ``workflow.started``
    started: dict[str, AuditEvent] = field(default_factory=dict)
    #: run -> (positions of its ``decision.made``, their policy versions)
    decisions: dict[str, tuple[list[int], list[str]]] = field(default_factory=dict)
    #: run -> positions of its submissions
    submissions: dict[str, list[int]] = field(default_factory=dict)
    #: (run, subject, attempt) -> position of its first plain ``proposal.received``
    first_received: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: policy version -> its first ``policyset.activated``
    activations: dict[str, AuditEvent] = field(default_factory=dict)
    #: run -> positions of its ``model.called`` events
    model_calls: dict[str, list[int]] = field(default_factory=dict)
    #: a plan's run -> the other runs its steps name (its ``plan.started``)
    plan_steps: dict[str, set[str]] = field(default_factory=dict)
    #: positions of the submissions a plan made (its steps, between its start and finish)
    plan_members: set[int] = field(default_factory=set)
    #: run -> the distinct sets of packs its decisions were made under (None: unreadable)
    packs: dict[str, dict[PackSet | None, None]] = field(default_factory=dict)
    #: tool id -> positions of the ``tools.registered`` that name it (``mcp proxy``'s)
    registered: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[AuditEvent]) -> _Index:
        out = cls()
        #: (plan's run, plan id) -> its steps (run, proposal id), while it runs
        running: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for i, ev in enumerate(events):
            run, p = ev.run_id, ev.payload
            if ev.kind in _SUBMISSIONS and any((run, ev.subject) in steps
                                               for steps in running.values()):
                out.plan_members.add(i)
            elif ev.kind == "plan.finished":
                running.pop((run, ev.subject), None)
            if ev.kind in _STARTS:
                out.runs.setdefault(run, None)
            if ev.kind == "workflow.started":
                out.started.setdefault(run, ev)
            elif ev.kind == "plan.started":
                plan = Plan.model_validate(p["plan"])
                steps = {(s.proposal.run_id or run, s.proposal.id) for s in plan.steps}
                running[(run, plan.id)] = steps
                out.plan_steps.setdefault(run, set()).update(r for r, _ in steps if r != run)
            elif ev.kind == "decision.made":
                at, versions = out.decisions.setdefault(run, ([], []))
                at.append(i)
                versions.append(str(p["decision"]["policy_version"]))
                out.packs.setdefault(run, {}).setdefault(_pack_set(p))
            elif ev.kind == "policyset.activated":
                out.activations.setdefault(str(p.get("version")), ev)
            elif ev.kind == "model.called":
                out.model_calls.setdefault(run, []).append(i)
            elif ev.kind == "tools.registered":
                for tool in p["tools"]:
                    out.registered.setdefault(str(tool["id"]), []).append(i)
            if ev.kind in _SUBMISSIONS:
                out.submissions.setdefault(run, []).append(i)
            if ev.kind == "proposal.received" and "submission" not in p:
                attempt = _json_key(p["proposal"].get("attempt", 0))
                out.first_received.setdefault((run, ev.subject, attempt), i)
        return out


def _pack_set(payload: dict[str, Any]) -> PackSet | None:
    """The packs a recorded ``decision.made`` names, each with its recorded digest."""
    refs = payload["decision"].get("pack_versions")
    digests = payload.get(PACK_DIGESTS)
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        return None
    found = digests if isinstance(digests, dict) else {}
    return tuple((ref, d if isinstance(d := found.get(ref), str) else None) for ref in refs)


def _trace_as_recorded(ev: NewEvent, rec: AuditEvent) -> NewEvent:
    """A refused proposal's trace as a journal recorded before the twenty-fourth round
    wrote it: naming its key's action (``act:<key>``), where the runtime now names the
    proposal's own (``act:<key>/<decision>``, ``tests/security/test_480``). Only that
    difference is taken from the record; any other still diverges."""
    made, was = ev.payload.get("trace"), rec.payload.get("trace")
    if not (isinstance(made, dict) and isinstance(was, dict)):
        return ev
    ours, theirs = str(made.get("action_id", "")), str(was.get("action_id", ""))
    if not (theirs and ours.startswith(theirs + "/") and ev.subject == ours
            and rec.subject == theirs):
        return ev
    payload = {**ev.payload, "trace": {**made, "action_id": theirs}}
    return replace(ev, subject=theirs, payload=payload)


def _first_difference(a: Any, b: Any, path: str = "payload") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}"
            found = _first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else path


def _why(rec: AuditEvent, got: AuditEvent, idem_key: str | None) -> str:
    if got.kind != rec.kind:
        return f"the replay produced `{got.kind}` instead"
    for name in ("run_id", "subject", "actor", "at"):
        if getattr(got, name) != getattr(rec, name):
            return f"`{name}` differs: recorded `{getattr(rec, name)}`, replayed " \
                   f"`{getattr(got, name)}`"
    diff = _first_difference(rec.payload, got.payload)
    if diff:
        return f"`{diff}` differs from the recorded event"
    own = event_hash(seq=rec.seq, event_id=rec.id, run_id=rec.run_id, kind=rec.kind,
                     subject=rec.subject, actor=rec.actor, at=iso(rec.at),
                     payload_hash=sha256_bytes(canonical_json(rec.payload).encode()),
                     prev_hash=rec.prev_hash, idem_key=idem_key)
    if own != rec.hash:
        return "the recorded event does not match its own hash: the journal was edited"
    return "the chain before it differs"


@dataclass
class StrictReport:
    runs: list[str]
    events: int
    head_hash: str
    warnings: list[str] = field(default_factory=list)
    #: the anchor the reproduced journal was found to contain (None: none was given)
    anchor: Anchor | None = None


class _StrictRun:
    """Drives one run's replay; the other runs of the journal are copied as recorded."""

    def __init__(self, source: Source, run_id: str) -> None:
        self.source = source
        self.events = source.events
        self.run = run_id
        #: the runs this replay produces: the run, and those its plans' steps name
        self.runs = source.runs_of(run_id)
        self.pos = 0
        self.rt: SandboxRuntime | None = None
        self.last: datetime | None = None
        #: positions of the events this run must produce, and of its intents among them:
        #: each step finds the next one by bisection, never by reading the journal again
        #: (positions only, in one pass over the record: ``tests/security/test_526``)
        self.producible, self.intents = array("q"), array("q")
        #: positions of this run's ``approval.decided`` whose outcome a person's decision
        #: wrote with it: the decision is copied, the outcome derived again from it
        self.decisions: set[int] = set()
        before: AuditEvent | None = None
        for i, ev in enumerate(self.events):
            if self._producible(ev, before):
                self.producible.append(i)
                if ev.kind in ("action.intent", "action.retry"):
                    self.intents.append(i)
            elif ev.run_id in self.runs and decided_outcome(ev, before):
                self.decisions.add(i - 1)
            before = ev

    def by_seq(self, seq: int) -> AuditEvent | None:
        return self.source.at_seq(seq)

    def check_tools(self, rt: SandboxRuntime) -> None:
        """Register in the scratch home each tool the run's decisions were made for that
        no installed pack provides, as ``mcp proxy`` journaled it (``tools.registered``:
        the upstream's definition and the operator's contract, the spec rebuilt by the
        proxy's own code) with a function never called — strict replay serves the
        recorded answers (``tests/security/test_585``). Refuse the run, before it replays,
        when the journal does not say what the tool was (a host's ``register_tool``; a
        proxy's journal written before the record), or says another version than the
        decision's (``test_586``): replayed, gate 1 would decide the call as an unknown
        tool, and the record would read as tampered (``test_580``). The run's own events
        only: no pass over the journal."""
        rebuilt: dict[str, str] = {}
        for i in self.producible:
            ev = self.events[i]
            if ev.kind != "decision.made":
                continue
            provenance = (ev.payload.get("decision") or {}).get("provenance") or {}
            ref = provenance.get("tool_ref")
            if not isinstance(ref, str):
                continue
            tool_id = ref.rsplit("@", 1)[0]
            if tool_id in rebuilt:
                if rebuilt[tool_id] != ref:
                    raise self._unrunnable(ev, ref, f"an earlier decision of the run was "
                                           f"made for `{rebuilt[tool_id]}`, and a replay "
                                           "registers one version of a tool")
                continue
            if rt.tools.has(tool_id):
                continue
            try:
                spec = self.source.registered_spec(tool_id, i)
            except CradleError as exc:
                raise self._unrunnable(ev, ref, exc.message) from None
            if spec is None:
                raise self._unrunnable(ev, ref, "which no installed pack provides, and the "
                                       "journal records no definition of (a tool a process "
                                       "registered itself: a host's `register_tool`, or "
                                       "`mcp proxy`'s before it journaled `tools.registered`)")
            if spec.ref != ref:
                raise self._unrunnable(ev, ref, "but the journal's `tools.registered` "
                                       f"before it makes `{spec.ref}` of it")
            register_unreached(rt, spec)
            rebuilt[tool_id] = ref

    def _unrunnable(self, ev: AuditEvent, ref: str, why: str) -> ReplayDivergenceError:
        return ReplayDivergenceError(
            f"strict replay cannot run `{self.run}`: its decision at seq {ev.seq} was made "
            f"for the tool `{ref}`, {why}; the journal is not judged: `cradle-kg audit "
            "verify` checks it", seq=ev.seq)

    def _producible(self, ev: AuditEvent, before: AuditEvent | None) -> bool:
        # a person's cancel is an input as their answers are: copied, never re-derived;
        # so is the outcome their decision of an approval wrote with it (test_300)
        return (ev.run_id in self.runs and ev.kind not in INPUT_KINDS
                and cancelled_by(ev) is None and not decided_outcome(ev, before))

    def _producible_at(self, ev: AuditEvent) -> bool:
        return self._producible(ev, self.by_seq(ev.seq - 1))

    def _peek(self) -> datetime:
        k = bisect_left(self.producible, self.pos)
        while k < len(self.producible):
            ev = self.events[self.producible[k]]
            if self.last is None or ev.at > self.last:
                return ev.at
            k += 1
        return self.last or self.events[-1].at

    def clock(self) -> datetime:
        """Each runtime reading is the next recorded time of this run (readings increase)."""
        self.last = self._peek()
        return self.last

    def peek(self) -> datetime:
        """The gateway's unjournaled "started" reading: the next time, not consumed."""
        return self._peek()

    def worker(self) -> str | None:
        k = bisect_left(self.intents, self.pos)
        ev = self.events[self.intents[k]] if k < len(self.intents) else None
        return str(ev.payload.get("worker")) if ev and ev.payload.get("worker") else None

    def fail(self, rec: AuditEvent, why: str) -> ReplayDivergenceError:
        return ReplayDivergenceError(f"strict replay of `{self.run}` diverges at seq "
                                     f"{rec.seq} (`{rec.kind}`): {why}", seq=rec.seq)

    # AppendHook
    def before(self, events: Sequence[NewEvent]) -> Sequence[NewEvent]:
        self.flush()
        out = list(events)
        for offset, ev in enumerate(events, start=1):
            rec = self.by_seq(self.pos + offset)
            # a journal written before refusals were counted: its refusing
            # ``decision.made`` has no ``refused_agent`` (a count's key, no part of the
            # decision); the replay writes it as it was written then
            if rec is not None and rec.kind == ev.kind == "decision.made" \
                    and REFUSED_AGENT in ev.payload and REFUSED_AGENT not in rec.payload:
                del ev.payload[REFUSED_AGENT]
            # nor, before ``test_553``, its packs' digests (a run replayed under the home's
            # packs now, and said so: :data:`NOT_RECORDED`)
            if rec is not None and rec.kind == ev.kind == "decision.made" \
                    and PACK_DIGESTS in ev.payload and PACK_DIGESTS not in rec.payload:
                del ev.payload[PACK_DIGESTS]
            if rec is not None and rec.kind == ev.kind == "lineage.traced":
                out[offset - 1] = _trace_as_recorded(ev, rec)
        return out

    def after(self, written: Sequence[AuditEvent]) -> None:
        for got in written:
            rec = self.by_seq(got.seq)
            if rec is None:
                raise ReplayDivergenceError(
                    f"strict replay of `{self.run}` diverges at seq {got.seq} (`{got.kind}`): "
                    "the replay produced an event the journal does not have", seq=got.seq)
            if rec.hash != got.hash:
                raise self.fail(rec, _why(rec, got, self.source.idem_keys.get(rec.seq)))
            self.pos = got.seq
            if self._producible_at(rec):
                self.last = max(self.last or got.at, got.at)

    def flush(self) -> None:
        """Copy the recorded inputs and other runs' events up to the next event this run
        must produce; a person's decision that ended a wait is copied and the outcome it
        wrote with it derived again (:meth:`_decided`)."""
        batch: list[NewEvent] = []
        while self.pos + len(batch) < len(self.events) and not self._producible_at(
                self.events[self.pos + len(batch)]):
            if self.pos + len(batch) in self.decisions:
                self._copy(batch)
                batch = []
                self._decided(self.events[self.pos])
                continue
            batch.append(self.source.recorded(self.events[self.pos + len(batch)]))
        self._copy(batch)

    def _copy(self, batch: list[NewEvent]) -> None:
        if batch:
            assert self.rt is not None, "the sandbox appended before the replay began"
            self.after(self.rt.append_recorded(batch))

    def _decided(self, decision: AuditEvent) -> None:
        """A person's rejection (or request for changes) as the runtime writes it: their
        recorded ``approval.decided``, and the outcome that ends the proposal's wait made
        again by the code that made it (``approval_flow.decided_events``), compared hash
        for hash. Before, that outcome was copied as recorded, whatever it said
        (``tests/security/test_437``)."""
        assert self.rt is not None, "the sandbox appended before the replay began"
        outcome = self.by_seq(decision.seq + 1)
        assert outcome is not None, "a decided outcome follows its decision"
        p = decision.payload
        try:
            state, seen = self.rt.approvals.read(str(p["approval_id"]))
            reason = p.get("reason")
            made = decided_events(self.rt.approvals, state, seen,
                                  self.source.recorded(decision),
                                  status=ApprovalStatus(str(p["status"])),
                                  approver_id=str(p["approver_id"]),
                                  reason=reason if isinstance(reason, str) else None,
                                  now=decision.at)
        except (CradleError, KeyError, ValueError) as exc:
            raise self.fail(outcome, "the outcome of the decision before it cannot be made "
                                     f"again: {exc}") from exc
        self.after(self.rt.append_recorded(made))

    def replay(self, rt: SandboxRuntime, engine: Engine) -> None:
        self.rt = rt
        while True:
            self.flush()
            if self.pos >= len(self.events):
                return
            ev, before = self.events[self.pos], self.pos
            try:
                self._trigger(ev, engine)
            except ReplayDivergenceError:
                raise
            except CradleError as exc:
                raise self.fail(ev, f"the replay raised: {exc.message}") from exc
            if self.pos == before:
                raise self.fail(ev, "the replay did not produce this event")

    def _trigger(self, ev: AuditEvent, engine: Engine) -> None:
        version = self.source.next_decision_version(self.pos, self.runs)
        engine_for = self.source.policies(version) if version else None
        assert self.rt is not None
        if engine_for is not None:
            self.rt.policies = engine_for
        if ev.kind == "workflow.started":
            p = ev.payload
            wf = load_recorded_workflow(str(p["definition"]), version=str(p["version"]))
            who = p.get("started_by")
            engine.start(wf, p["input"], run_id=self.run,
                         started_by=who if isinstance(who, str) else None)
        elif ev.kind == "plan.started":
            # the plan run again by the code that ran it: each step submitted in the
            # sandbox, skipped or aborted as its policy says (tests/security/test_524)
            self.rt.run_plan(Plan.model_validate(ev.payload["plan"]))
        elif self.source.is_workflow(self.run):
            engine.advance(self.run)
        else:
            proposal = self.source.next_submission(self.pos, self.runs)
            if proposal is not None and proposal.kind == "proposal.replayed":
                # the identical proposal again, answered with its recorded outcome
                proposal = self._recorded_proposal(proposal)
            if (ev.kind not in (*_SUBMISSIONS, "policyset.activated")
                    or proposal is None):
                raise self.fail(ev, f"no replay trigger produces `{ev.kind}`")
            self.rt.submit(Proposal.model_validate(proposal.payload["proposal"]))

    def _recorded_proposal(self, replayed: AuditEvent) -> AuditEvent | None:
        return self.source.first_submission(replayed.run_id, replayed.subject,
                                            replayed.payload.get("attempt", 0), self.pos)


def register_unreached(rt: SandboxRuntime, spec: ToolSpec) -> None:
    """Register ``spec`` (a tool ``mcp proxy`` served, as it journaled it) with a function,
    a verifier and a lookup that are never reached: the sandbox serves the recorded
    answers in their place, and a call with none is a divergence (``NotReplayable``)."""
    from ..integrations.proxy import looked_up

    def unreached(*_: Any) -> Any:
        raise NotReplayable(f"`{spec.ref}` is an upstream's tool: a replay never calls it")

    if spec.verifier is not None:
        rt.register_verifier(spec.verifier, unreached)
    rt.register_tool(spec, unreached, lookup=unreached if looked_up(spec) else None)


def decided_outcome(ev: AuditEvent, before: AuditEvent | None) -> bool:
    """Whether ``ev`` is the ``run.outcome`` a person's rejection of an approval (or their
    request for changes, or a cancel's rejection) wrote in the append of their
    ``approval.decided`` (``before``, the event just before it): it ends the proposal's
    wait with what they decided (``loop/approval_flow.py`` ``decided_events``). Nothing of
    the run makes it again: before, strict replay walked the run to produce it, submitted
    the step's proposal again and diverged (``tests/security/test_300``)."""
    if ev.kind != "run.outcome" or before is None or before.kind != "approval.decided":
        return False
    outcome = ev.payload.get("outcome")
    approval = outcome.get("approval") if isinstance(outcome, dict) else None
    if not isinstance(approval, dict):
        return False
    p = before.payload
    return (approval.get("id") == p.get("approval_id")
            and approval.get("status") == p.get("status") != "approved"
            and approval.get("approver_id") == p.get("approver_id") == before.actor
            and ev.at == before.at)


#: why a journal written before secret arguments were keyed does not replay hash for hash
UNKEYED_RECORD = ("the journal digested a secret argument unkeyed (written by a cradle-kg "
                  "before SQLite journal format 9 / PostgreSQL migration 10), and a replay "
                  "keys it: those events cannot be made again hash for hash; `audit verify` "
                  "still checks them")

def unkeyed_record(rec: AuditEvent | None) -> bool:
    """Whether a recorded decision digested its action's secret arguments unkeyed."""
    return rec is not None and rec.kind == "decision.made" and unkeyed(rec.payload)


#: the events a submission starts with: a proposal received, or one answered from the record
_SUBMISSIONS = ("proposal.received", "proposal.replayed")
#: the events that start a run a replay re-derives: a proposal's, a workflow's, a plan's
_STARTS = ("proposal.received", "workflow.started", "plan.started")


def strict_replay(home: Path, run_ids: Sequence[str] = (), *,
                  anchor: Anchor | None = None) -> StrictReport:
    """Replay each run; raise :class:`ReplayDivergenceError` at the first difference.

    ``anchor``: a head kept elsewhere (``audit anchor``). The journal must contain it, or
    nothing is replayed: a journal cut at its tail, or re-chained without a run, replays
    to its own head hash for hash, and only the anchor says it is not the journal that
    ran (``tests/security/test_525``). Every event replayed is compared hash for hash, so
    the journal reproduced contains the anchor too."""
    with Source.open(home) as source:
        return _strict_replay(source, run_ids, anchor)


def _strict_replay(source: Source, run_ids: Sequence[str],
                   anchor: Anchor | None) -> StrictReport:
    home = source.home
    if anchor is not None:
        problem = anchor_problem(anchor, ((e.seq, e.hash, e.id) for e in source.events))
        if problem is not None:
            seq, why = problem
            raise ReplayDivergenceError(f"strict replay refuses the journal: {why}", seq=seq)
    runs = list(run_ids) or source.runs()
    known = set(source.runs())
    unknown = [r for r in runs if r not in known]
    if unknown:
        raise InputError(f"no replayable run `{unknown[0]}` in `{home}`",
                         hint="`cradle-kg runs list` shows the runs")
    if not run_ids:  # every run: no event the runtime derives may be left only copied
        stray = next((e for e in source.events
                      if e.run_id not in known and e.kind not in COPIED_ALONE), None)
        if stray is not None:
            raise ReplayDivergenceError(
                f"strict replay diverges at seq {stray.seq} (`{stray.kind}`): it is in run "
                f"`{stray.run_id}`, which no proposal or workflow starts; the runtime writes "
                "no such event there, and nothing replays it", seq=stray.seq)
    head = ""
    warnings: list[str] = []
    for run in runs:
        driver = _StrictRun(source, run)
        # refused here, before the run is replayed: a recorded pack not installed as it was
        folders, warning = run_packs(source, run)
        if warning is not None:
            warnings.append(warning)
        with scratch_home(source, exact=folders) as scratch:
            rt = SandboxRuntime(scratch, recording=Recording.of(source.events), strict=True,
                                clock=driver.clock, hook=driver, worker=driver.worker,
                                gateway_clock=driver.peek)
            try:
                source.check_definition(run)
                driver.check_tools(rt)
                started = source.started(run)
                packages = started.payload.get("packages") if started else None
                engine = Engine(rt, client=RecordedClient.from_events(source.model_calls(run),
                                                                      run),
                                packages=packages,
                                budgets=started.payload.get("budgets") if started else None)
                driver.replay(rt, engine)
                head = rt.journal.head()[1]
            except ReplayDivergenceError as exc:
                if not unkeyed_record(driver.by_seq(exc.seq or 0)):
                    raise
                # the replay keyed a secret's digest the record made without a key
                raise ReplayDivergenceError(f"{exc.message}: {UNKEYED_RECORD}",
                                            seq=exc.seq) from exc
            finally:
                rt.close()
    recorded_head = source.events[-1].hash if source.events else ""
    if head != recorded_head:
        raise ReplayDivergenceError(f"strict replay ends at head `{head}`, the journal at "
                                    f"`{recorded_head}`", seq=None)
    return StrictReport(runs, len(source.events), head, warnings=warnings, anchor=anchor)
