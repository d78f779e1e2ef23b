"""The governed execution loop, start to end (§5 of the paper).

    Proposal → Gate 1 → Decision → [HumanApproval] → Tool Gateway → Observation
             → Gate 2 → Verification → StateTransition committed | aborted → Outcome

:class:`Runtime` composes the stages of :mod:`cradle_kg.loop` over one
:class:`~.context.LoopContext`, the journal's one writer; :meth:`Runtime.submit` reads as
the loop. Everything the runtime knows — runs, approvals, usage against limits, recorded
outcomes — it reads back from the journal, so a process that restarts picks up exactly
where the last one stopped.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..canonical import sha256_bytes
from ..config import Approver, ConfigFile, RuntimeConfig
from ..errors import (
    CradleError,
    GraphStoreError,
    JournalError,
    QuotaExceededError,
    RunOwnershipError,
    ToolUnavailableError,
)
from ..evidence import (
    AGENT_ROLE,
    COLLECTED,
    COLLECTOR_ROLE,
    EVIDENCE_RUN,
    FOR_ACTION,
    HOST_COLLECTOR_PREFIX,
    EvidenceStore,
    check_binding,
    check_named_run,
    collector_role,
)
from ..graph.catchup import catch_up
from ..graph.knowledge import KnowledgeSource
from ..graph.knowledge import install as install_knowledge
from ..graph.knowledge import stage as stage_knowledge
from ..graph.knowledge import write as write_knowledge
from ..graph.packproj import PackProjector
from ..home import Home, resolve_home
from ..lineage.index import PREVIEW_SEQ
from ..lineage.inputs import checked_input, input_payload, record_input
from ..lineage.rules import load_rules
from ..packs.loader import Pack
from ..packs.registration import prepare_pack
from ..packs.registry import PackRegistry
from ..policy import PolicyEngine
from ..records import (
    Action,
    ApprovalStatus,
    AuditEvent,
    HumanApproval,
    Outcome,
    Plan,
    Proposal,
    Verdict,
    built_event,
)
from ..runs import after_the_end, run_end
from ..storage import (
    ApprovalMoved,
    IdempotencyKeyTaken,
    Journal,
    Lease,
    LimitReached,
    NewEvent,
    RunEnded,
    RunNotNew,
    SqliteJournal,
    UsageCap,
    home_journal_target,
    is_postgres,
    open_journal,
)
from ..storage.counting import REFUSALS_SCOPE
from ..storage.graph import GraphStore
from ..storage.graph_opening import open_graph_store
from ..storage.journal import NoLease, read_only_error
from ..throttling import record_reached
from ..tools import LookupFunction, ReadyFunction, ToolFunction, ToolRegistry, ToolSpec
from ..verifiers import VerifierFunction, VerifierRegistry
from .approval_flow import ApprovalFlow, KeyedRequestRaced
from .approvals import ApprovalBook, ToolVersions, excluded_for_agent
from .commit import Commit, CommitHook
from .context import (
    RUN_CLAIM_PREFIX,
    AppendListener,
    Clock,
    LoopContext,
    ProposalIdClaimed,
    TaskClaimed,
)
from .escalation import HumanTask, repair_or_escalate, resolve_task
from .execution import Execution
from .gate1.checks import Gate1, GateInput
from .gate1.decision import REFUSED_VERDICTS, decide, decision_events
from .gate1.findings import DomainValidator, ValidatorBinding
from .gate1.keys import derive_idempotency_key
from .gate1.lineage import LineageGate, with_trace
from .gate2 import DomainInvariant, Gate2, InvariantBinding
from .gate2_world import compile_postconditions
from .gateway import Gateway
from .integrity import IntegrityChecker
from .outcomes import VERDICT_STATUS, Dumped, outcome_event, recorded_outcome
from .plans import PlanOutcome, run_plan
from .policies import PolicySet
from .proposal import (
    check_agent_proposal,
    check_run_namespace,
    parse_proposal,
    recorded_answer,
    run_namespace_owner,
)
from .recovery import Recovery, RecoveryReport
from .settlement import Settlement
from .task_claims import check_task_owner, task_claim, task_limited

#: a submission that loses the race for its proposal id is evaluated again, this often
_CLAIM_ATTEMPTS = 3
#: the window of ``input_limits.refusals_per_agent_per_hour``
_REFUSALS_WINDOW = timedelta(hours=1)


class _InForceMoved(Exception):
    """Internal signal: the policies or the configuration changed while a proposal was
    being decided; nothing of it was written (it is decided again)."""


def refusals_error(cap: UsageCap) -> QuotaExceededError:
    """The refusal of a proposal past its agent's refusals in the hour (the cap the journal
    found full: :meth:`Runtime._refusals_capped`): nothing of it was journaled."""
    limit = cap.max_calls or 0
    return QuotaExceededError(
        f"`{cap.subject}` had {limit} proposals refused in the last hour: the limit is "
        f"{limit}; this one was refused and not journaled" if limit else
        f"`{cap.subject}`: no refused proposal is journaled in this home "
        "(`input_limits.refusals_per_agent_per_hour` is 0); this one was not journaled",
        hint="the agent's proposals are being denied: see `cradle-kg runs list` and why; "
             "the limit is `input_limits.refusals_per_agent_per_hour` in the home's "
             "config.json (an hour's sliding window)",
        quota="refusals_per_agent_per_hour", identity=cap.subject, limit=cap.max_calls)
#: the retired agents (no longer in the config) whose uploads of one blob the evidence
#: check looks past before it gives up on the blob (fails closed: no evidence)
MAX_RETIRED_COLLECTORS = 8


def _other_host(collector: str, proposer: str) -> bool:
    """Whether ``collector`` is the host of an agent other than ``proposer``: its upload is
    no evidence for ``proposer``'s proposals (``tests/security/test_320``)."""
    return (collector.startswith(HOST_COLLECTOR_PREFIX)
            and collector != HOST_COLLECTOR_PREFIX + proposer)


#: the start of any journal's time: "ever", for a probe of an actor's events
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


#: the event an entry point writes to make a new run its agent's (:meth:`Runtime.claim_run`)
#: under the key ``RUN_CLAIM_PREFIX + run id``, held once per run by the journal
RUN_CLAIMED = "run.claimed"


def check_run_owner(journal: Journal, run_id: str, agent_id: str) -> str | None:
    """Raise :class:`RunOwnershipError` — before anything is journaled in the run — when the
    run's first proposal or claim was another agent's; returns the run's agent, or None.

    INVARIANT: at the entry points an agent reaches with its own credentials — the MCP
    gateway and proxy, LangGraph (:class:`~cradle_kg.integrations.calls.GovernedSession`)
    and the JSON API, through :meth:`Runtime.claim_run` — a run is the agent's of its first
    proposal or claim: another identity that names
    it (run ids are not secrets: results, pages and hand-offs show them) could otherwise
    append steps to it or speak in it as its user. Refused rather than denied, so that
    nothing of the attempt lands in the owner's run (a denial there would become the
    run's latest outcome). The host's own code (``Runtime.submit`` in process, the CLI)
    may still run several agents in one run, as an incident team does; an approval is
    usable only by the agent that asked for it whoever submits
    (:meth:`.approvals.ApprovalBook.usable`)."""
    owner = run_owner(journal, run_id)
    if owner is not None and owner != agent_id and run_namespace_owner(run_id) == agent_id:
        # INVARIANT: a run of the agent's namespace another identity claimed before the
        # namespace was the run id's form (an older journal: `tests/security/test_259`)
        # is said so, and shared with neither: the claimant is refused by the namespace
        raise RunOwnershipError(
            f"`run_id`: run `{run_id}` is in the namespace of `{agent_id}` "
            f"(`run:{agent_id}/…`) but `{owner}` claimed it first, before namespaces "
            "held for undeclared identities (an older journal): it is nobody's to "
            "propose in now", hint="start a new run (another session or thread name); "
                                   "an approver can read what the run holds")
    if owner is not None and owner != agent_id:
        raise RunOwnershipError(
            f"`run_id`: run `{run_id}` belongs to `{owner}`: an agent proposes only in its "
            "own runs", hint="start a new run (leave `run_id` out, or name a new one)")
    return owner


def run_owner(journal: Journal, run_id: str) -> str | None:
    """The agent a run belongs to: its first proposal's or claim's — or, for a workflow
    run nobody proposed in yet (its first steps ask a model or a person), the workflow's
    agent, which its ``workflow.started`` names. Without that, any agent could claim a
    workflow run before its first tool step and speak in it — and a proposal of its own
    under the id the tool step would use made the engine take that outcome for the step's
    (``tests/security/test_39``)."""
    owner = journal.run_agent(run_id)
    if owner is None:
        first = next(iter(journal.events(run_id=run_id, batch=1)), None)
        if first is not None and first.kind == "workflow.started":
            owner = str(first.payload.get("agent") or "") or None
    return owner


def _utcnow() -> datetime:
    return datetime.now(UTC)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _writes(method: Callable[Concatenate[Runtime, _P], _R]
            ) -> Callable[Concatenate[Runtime, _P], _R]:
    """A method of :class:`Runtime` that writes: refused first, before anything of it is
    read, stored or called, on a runtime opened read only (``tests/security/test_312``)."""
    @functools.wraps(method)
    def guarded(self: Runtime, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self.read_only:
            raise read_only_error(f"the home `{self.home.root}`")
        return method(self, *args, **kwargs)
    return guarded


class Runtime:
    """One governed runtime over one home. Thread-safe for ``submit``."""

    def __init__(self, home: str | Path | None = None, *, config: RuntimeConfig | None = None,
                 policy_paths: Sequence[Path] = (), clock: Clock | None = None,
                 load_plugins: bool = True, integrity: bool = True,
                 graph_sync: bool = True, recover: bool = True,
                 journal: str | Path | None = None, read_only: bool = False) -> None:
        self.home = Home(resolve_home(home))
        #: opened only to read (what the commands that only read open: ``tests/security/
        #: test_309`` …): the journal opened read only (never made, switched to WAL,
        #: upgraded or appended to), no worker's lease, no recovery pass, no graph store,
        #: no evidence stored; every method that writes refuses first
        #: (:class:`~cradle_kg.errors.JournalError`)
        self.read_only = read_only
        #: what :meth:`close` lets go of last (a read only runtime's empty journal's folder:
        #: :meth:`_empty_if_none`)
        self._closing = contextlib.ExitStack()
        if not read_only:
            self.home.root.mkdir(parents=True, exist_ok=True)
        #: the home's file as it says who its identities are now, when the configuration
        #: is the file's (given in process: the given one's)
        self.config_file: ConfigFile | None = None
        if config is None:
            config, self.config_file = ConfigFile.load(self.home.config)
        #: the file's configuration last put in force (:meth:`refresh`)
        self._file_config = config
        #: why the home's ``config.json``, changed since, does not load (None: it does):
        #: every proposal is denied until it loads again (:meth:`refresh`)
        self.config_problem: str | None = None
        #: the journal of record: ``journal`` (a SQLite path or a PostgreSQL URL), else
        #: ``CRADLE_JOURNAL_URL``, else the config's ``journal``, else the home's file
        target = journal if journal is not None \
            else home_journal_target(self.home.root, config.journal)
        self.journal = open_journal(self._empty_if_none(target) if read_only else target,
                                    read_only=read_only)
        if isinstance(self.journal, SqliteJournal):  # PostgreSQL: the server's WAL writer
            self.journal.flush_window = config.deferred_flush_ms / 1000
        try:
            #: held for the life of this runtime; recovery leaves a live lease's intents alone
            lease = NoLease() if read_only else self.journal.acquire_lease()
        except BaseException:
            self.journal.close()
            raise
        self.context = self._new_context(self.journal, config=config, clock=clock or _utcnow,
                                         lease=lease)
        self.evidence = EvidenceStore(self.home.evidence, read_only=read_only)
        self.tools = ToolRegistry()
        self.verifiers = VerifierRegistry()
        self.validators: list[ValidatorBinding] = []
        self.invariants: list[InvariantBinding] = []
        self.pack_versions: list[str] = []
        #: each loaded pack's ``id@version`` -> the digest of its folder's files, as it was
        #: loaded (:func:`~cradle_kg.packs.loader.pack_digest`): journaled with every
        #: decision (``pack_digests``), what replay loads a run's packs by
        self.pack_digests: dict[str, str] = {}
        self.commit_hooks: list[CommitHook] = []
        #: the loaded packs' projection hooks (the graph store and the commit check use them)
        self.projectors: list[PackProjector] = []
        #: the loaded packs' knowledge graphs, installed when the graph store opens
        self.knowledge: list[KnowledgeSource] = []
        self.approvals = ApprovalBook(self.journal, config, approvers=self._approvers_now)
        #: lineage of argument values: the runs' derived index and the graph policies
        self.lineage = LineageGate(self.journal, self.tools)
        self.policy_set = PolicySet(self.context, evidence=self.evidence,
                                    paths=(self.home.policies, *policy_paths),
                                    pack_versions=self.pack_versions)
        # --- the stages, in loop order -------------------------------------------------
        self.approval_flow = ApprovalFlow(self.context, self.approvals, submit=self.submit,
                                          holds_tool=self.tools.has)
        self.gateway = Gateway(self.tools, self.context, clock=self.context.clock)
        self.gate2 = Gate2(verifiers=self.verifiers, invariants=self.invariants,
                           max_read_age=timedelta(seconds=config.verification_max_age_seconds),
                           compensation=self._compensation_problem)
        self.settlement = Settlement(self.context, submit=self._submit)
        self.commit = Commit(self.context, gate2=self.gate2, hooks=self.commit_hooks,
                             settlement=self.settlement)
        self.execution = Execution(self.context, gateway=self.gateway, approvals=self.approvals,
                                   approval_flow=self.approval_flow, commit=self.commit,
                                   policies=self.policy_set)
        self.integrity: IntegrityChecker | None = None
        if integrity:
            # INVARIANT: the integrity rules are checked before every commit (fail closed)
            self.integrity = IntegrityChecker(self.journal)
            self.commit_hooks.append(self.integrity.check)
            self.listeners.append(self.integrity.on_append)
        #: the proposals :meth:`parse_proposal` returned, by id, while they live: what
        #: :meth:`submit` need not check again
        self._checked: weakref.WeakValueDictionary[int, Proposal] = (
            weakref.WeakValueDictionary())
        self._graph_sync = graph_sync and not read_only
        self._graph: GraphStore | None = None
        #: read only: the store is never opened (catching it up writes it)
        self._graph_unavailable = read_only
        self._graph_lock = threading.Lock()
        if load_plugins:
            try:
                if config.packs:
                    registry = PackRegistry.discover(self.home.root)
                    for ref in config.packs:
                        self.load_pack(registry.get(ref))
            except BaseException:
                self.close()  # a refused pack leaves no lease or handle behind
                raise
        # INVARIANT: dangling intents are reconciled before this runtime does anything else
        self.recovery: RecoveryReport | None = (self.recover() if recover and not read_only
                                                else None)

    def _empty_if_none(self, target: str | Path) -> str | Path:
        """The journal a read only runtime reads: ``target``, or, for an embedded journal
        that does not exist yet, a new empty one made in a temporary folder (gone at
        :meth:`close`), never the home's. Such a home reads as one with an empty journal —
        nothing waits, no run is known, as before — and no file or folder of the home is
        made (``tests/security/test_311``)."""
        import tempfile

        if is_postgres(str(target)) or Path(target).exists():
            return target
        scratch = self._closing.enter_context(
            tempfile.TemporaryDirectory(prefix="cradle-kg-no-journal-"))
        empty = Path(scratch) / "journal.sqlite"
        SqliteJournal(empty).close()
        return empty

    def _new_context(self, journal: Journal, *, config: RuntimeConfig, clock: Clock,
                     lease: Lease) -> LoopContext:
        """The loop's context (a replay sandbox watches its appends)."""
        return LoopContext(journal, config=config, clock=clock, lease=lease)

    # --- what the loop reads: kept in its context ---------------------------------

    @property
    def config(self) -> RuntimeConfig:
        return self.context.config

    @property
    def clock(self) -> Clock:
        return self.context.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.context.clock = clock

    @property
    def lease(self) -> Lease:
        return self.context.lease

    @property
    def listeners(self) -> list[AppendListener]:
        return self.context.listeners

    @property
    def policies(self) -> PolicyEngine:
        return self.policy_set.engine

    @policies.setter
    def policies(self, engine: PolicyEngine) -> None:
        self.policy_set.engine = engine
        self.policy_set.follows_files = False  # set in process: the files no longer rule

    def refresh(self) -> None:
        """Put in force what the home's files say now, when they changed since they were
        read — ``config.json`` (what a declared agent may do: its permissions, limits,
        environments, input limits; the approvers) and the policy files: one ``stat`` per
        file while none changed, nothing parsed. Run before every decision, so that a
        long-lived process (``serve``, ``mcp serve``, ``cradle-kg worker``) narrows an agent
        or applies a forbid added during an incident at the next call, without a restart
        (the new policy set is journaled, ``policyset.activated``, before a decision names
        its version). A file that does not load denies every proposal, saying why, until it
        loads again (fail closed). What only a start sets up stays as the start read it:
        the packs loaded, the journal, the graph store, ``deferred_flush_ms``. A runtime
        given its configuration in process keeps that one."""
        if self.config_file is not None:
            config, self.config_problem = self.config_file.current()
            if config is not None and config is not self._file_config:
                self._file_config = config
                running = self.config
                self._put_in_force(config.model_copy(update={
                    "packs": running.packs, "journal": running.journal,
                    "graph": running.graph, "deferred_flush_ms": running.deferred_flush_ms}))
        self.policy_set.refresh()

    # --- registration -------------------------------------------------------------

    def register_tool(self, spec: ToolSpec, fn: ToolFunction, *,
                      lookup: LookupFunction | None = None,
                      ready: ReadyFunction | None = None) -> None:
        """``ready``: whether the tool can be reached now — a call it refuses is refused
        before anything is journaled (:meth:`submit`), with its retryable error."""
        compile_postconditions(spec)  # a shape that does not compile refuses the contract
        self.tools.register(spec, fn, lookup=lookup, ready=ready)

    def register_verifier(self, verifier_id: str, fn: VerifierFunction) -> None:
        self.verifiers.register(verifier_id, fn)

    def register_validator(self, tool_pattern: str, fn: DomainValidator, *, name: str,
                           pack: str | None = None) -> None:
        self.validators.append(ValidatorBinding(tool_pattern, fn, name, pack))

    def register_invariant(self, tool_pattern: str, fn: DomainInvariant, *, name: str) -> None:
        self.invariants.append(InvariantBinding(tool_pattern, fn, name))

    def _compensation_problem(self, tool: str, action: Action) -> str | None:
        """Why the acting identity could not run ``tool`` on the action's target (gate 2's
        `compensation_available`), or None: registered, and a permission grants it."""
        if not self.tools.has(tool):
            return f"`{tool}` is not registered"
        who = action.executed_by
        if not any(p.subject == who and fnmatch.fnmatchcase(tool, p.action_type)
                   and fnmatch.fnmatchcase(action.target, p.resource_selector)
                   for p in self.config.permissions):
            return f"`{who}` holds no permission for `{tool}` on `{action.target}`"
        return None

    def configure(self, config: RuntimeConfig) -> None:
        """Replace the configuration (identities, permissions, approvers, limits) in force.

        For an embedding that sets up its identities after the runtime is built — a pack's
        example runner, a demo. Later decisions and approvals read the new configuration,
        and only it: the home's ``config.json`` is no longer followed (who the approvers
        and agents are is the given configuration's, as for a runtime built with one).
        """
        self.config_file, self.config_problem = None, None
        self._put_in_force(config)

    def _put_in_force(self, config: RuntimeConfig) -> None:
        self.context.config = config
        self.approvals.config = config
        self.gate2.max_read_age = timedelta(seconds=config.verification_max_age_seconds)

    def add_policy_paths(self, paths: Sequence[Path], *, namespace: str | None = None) -> None:
        """Put more policies in force (see :meth:`.policies.PolicySet.add`)."""
        self.policy_set.add(paths, namespace=namespace)

    def load_pack(self, pack: Pack) -> None:
        """Plug a domain pack in: its policies, its version on every decision, and the
        tools, verifiers, validators and invariants its manifest names.

        TRUST: this imports the pack's own Python with this process's privileges — a pack
        is trusted code, like a pip-installed package. Its policies are cited as
        ``<pack-id>/<id>``, so they can never pass for the home's.
        """
        if pack.ref in self.pack_versions:
            return
        # INVARIANT: what can refuse the load is read and checked before anything is put in
        # force — the declarations, the graph policies, the shapes with the rules in force;
        # then the policies (atomic), the one change that can still refuse. Before, a graph
        # policy that did not parse or a verifier id another pack held refused the load
        # after the pack's policies were in force and its ref on every decision
        # (tests/security/test_515)
        digest = pack.digest()  # read first: a file it cannot read refuses the load
        prepared = prepare_pack(pack, home=self.home.root, clock=self.clock)
        rules = load_rules(pack.files(pack.manifest.graph_policies), namespace=pack.id)
        prepared.check_free(tool_taken=self.tools.has, verifier_taken=self.verifiers.has,
                            contract=compile_postconditions)
        shapes = self.integrity.pack_shapes(pack.shape_files()) \
            if self.integrity is not None and pack.shape_files() else None
        # its knowledge too: the ontology parsed (once: the store loads the kept text) and,
        # with the store open, every graph to (re)install built and checked — before, one
        # that did not load refused the pack after the rest was in force (test_522)
        knowledge = prepared.knowledge_sources()
        staged = stage_knowledge(self._graph, knowledge) if self._graph is not None else []
        if pack.policy_files():
            self.add_policy_paths(pack.policy_files(), namespace=pack.id)
        self.lineage.rules.extend(rules)
        self.pack_versions.append(pack.ref)
        self.pack_digests[pack.ref] = digest
        prepared.register(self)
        # issue 14: the pack's records in the run graph, checked by its shapes at commit
        self.projectors.extend(prepared.projectors())
        if self.integrity is not None and (prepared.projections or shapes is not None):
            self.integrity.add_pack(projectors=prepared.projectors(), checked=shapes)
        self.knowledge.extend(knowledge)
        if self._graph is not None:
            write_knowledge(self._graph, staged)

    def graph(self) -> GraphStore | None:
        """The home's graph store, brought up to the journal's head first (unless the
        runtime was opened with ``graph_sync=False``); None when another process holds it.

        The graph follows the journal when it is read, not after every submission: a
        governed call never pays for projecting (the journal stays the truth, and the
        commit-time check validates the run's projection without the store). ``close``
        and ``cradle-kg graph sync`` catch it up too."""
        if self._graph_sync:
            self.sync_graph()
            return self._graph
        return self._open_graph()

    def _open_graph(self) -> GraphStore | None:
        """The store, opened on first use; None when another process holds it."""
        if self._graph is None and not self._graph_unavailable:
            try:
                store = open_graph_store(self.home.root)
            except GraphStoreError:  # busy (another process) or unreadable: catch up later
                self._graph_unavailable = True
                return None
            try:
                # cheap when unchanged: a digest per graph, nothing parsed (graph/knowledge.py)
                install_knowledge(store, self.knowledge)
            except GraphStoreError:  # a remote store that went away: catch up later
                store.close()
                self._graph_unavailable = True
                return None
            except BaseException:  # a pack's file that does not load: said, store let go
                store.close()  # (before: left open and locked for this process, test_275)
                raise
            self._graph = store
        return self._graph

    def sync_graph(self) -> int:
        """Bring the graph up to the journal's head; the journal stays the truth."""
        with self._graph_lock:
            store = self._open_graph()
            return catch_up(store, self.journal, projectors=self.projectors) \
                if store is not None else 0

    def close(self) -> None:
        if self._graph_sync:  # leave the on-disk graph at the journal's head; if it cannot,
            # the journal stays the truth and the next reader catches the graph up
            with contextlib.suppress(CradleError):
                self.sync_graph()
        if self._graph is not None:
            self._graph.close()
            self._graph = None
        self.journal.close()
        self.lease.release()
        self._closing.close()

    @_writes
    def recover(self) -> RecoveryReport:
        """Reconcile every intent without its outcome (see :mod:`.recovery`).

        Tools registered after the runtime was built are not known to the pass that runs
        at start: their intents are reported ``deferred`` until ``recover()`` runs again.
        """
        return Recovery(self.context, root=self.home.root, tools=self.tools,
                        gateway=self.gateway, commit=self.commit,
                        settlement=self.settlement).run()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @_writes
    def add_evidence(self, data: bytes, *, kind: str, collector: str,
                     run_id: str = "evidence", for_action: str | None = None) -> str:
        """Store evidence content-addressed and journal when it was collected; in
        ``run_id`` (that run's alone: ``tests/security/test_199``), for the action whose
        pinned idempotency key is ``for_action`` alone (``test_247``)."""
        check_binding(self.config.input_limits, for_run=None, for_action=for_action)
        if run_id == EVIDENCE_RUN:
            check_named_run(self.config, None)
        ref = self.evidence.put(data)
        self.context.append([NewEvent(run_id=run_id, kind="evidence.collected", subject=ref,
                                      actor=collector, at=self.clock(),
                                      payload={"ref": ref, "kind": kind, "bytes": len(data),
                                               **({FOR_ACTION: for_action}
                                                  if for_action is not None else {}),
                                               COLLECTOR_ROLE: collector_role(self.config,
                                                                              collector)})])
        return ref

    # --- the loop -----------------------------------------------------------------

    def parse_proposal(self, raw: Proposal | dict[str, Any]) -> Proposal:
        """A proposal within this home's input limits, or a one-line :class:`ProposalError`.

        Nothing is journaled before this returns: an oversized, malformed or non-JSON
        proposal (NaN, lone surrogates, runaway nesting) never reaches the journal.
        """
        proposal = check_agent_proposal(parse_proposal(raw, self.config.input_limits))
        check_run_namespace(proposal.effective_run_id, proposal.agent_id)
        self._checked[id(proposal)] = proposal
        return proposal

    @_writes
    def submit(self, raw: Proposal | dict[str, Any], *,
               claim_for: str | None = None, task_for: str | None = None) -> Outcome:
        """Run one proposal through the whole loop and return how it ended.

        A :class:`~cradle_kg.records.Proposal` that :meth:`parse_proposal` of this runtime
        returned (the same object: an entry point that parsed it first, to claim its run
        before anything is journaled) is not checked a second time; any other is.

        ``claim_for``: the authenticated agent an entry point speaks for. Its run must be
        theirs (:func:`check_run_owner`, first: nothing is written otherwise) and, when no
        one's yet, is claimed (:meth:`claim_run`) after gate 1, right before the proposal's
        own events are written — not before a proposal refused past the agent's refusals
        quota, which writes nothing (``tests/security/test_216``).

        ``task_for`` (by default ``claim_for``): the agent whose task the proposal's must be
        when a ``task`` limit counts it (:meth:`check_task`; claimed, when nobody's yet,
        with the run: :mod:`.task_claims`, ``tests/security/test_376``)."""
        task_for = task_for or claim_for
        proposal = raw if isinstance(raw, Proposal) and self._checked.get(id(raw)) is raw \
            else self.parse_proposal(raw)
        # INVARIANT: a tool that cannot be reached now (a proxied upstream that is gone) is
        # refused before anything is journaled — no intent, no failed call, no human task
        # per call of an outage: a retryable ToolUnavailableError (tests/security/test_476)
        if (unavailable := self.unavailable_for(proposal)) is not None:
            raise unavailable
        return self._submit_parsed(proposal, claim_for=claim_for, task_for=task_for)

    def unavailable_for(self, proposal: Proposal) -> ToolUnavailableError | None:
        """Why ``proposal``'s tool cannot be called now (its ``ready`` says so), or None —
        None too, while it cannot, for a repeat of a key the agent chose whose intent has a
        recorded outcome: that call writes nothing new and calls nothing, it is answered
        from the record (``replayed``) as at any other time; refused, a client that asked
        again for an answer the journal held was told to retry later
        (``tests/security/test_490``). A key with an intent and no outcome is refused:
        reconciling it asks the tool (its lookup)."""
        unavailable = self.tools.unavailable(proposal.action.action_type)
        if unavailable is None or not proposal.action.idempotency_key:
            return unavailable
        intent = self.journal.intent_for_key(derive_idempotency_key(proposal, ""))
        if intent is not None and intent.kind == "action.intent" \
                and recorded_outcome(self.journal, intent.subject) is not None:
            return None  # gate 1 decides it, then the replay answers it: nothing runs
        return unavailable

    def _approvers_now(self) -> tuple[Approver, ...]:
        """The approvers the configuration in force says now: the home's file, read again
        when it changed (``tests/security/test_190``), or the one given in process."""
        if self.config_file is not None:
            return self.config_file.approvers()
        return self.config.approvers

    def declared_agents(self) -> frozenset[str]:
        """The agents the home's configuration declares now (the file's, read again when it
        changed; given in process: the given configuration's): who a token may act as."""
        if self.config_file is not None:
            return self.config_file.agents()
        return frozenset(a.id for a in self.config.agents)

    @_writes
    def claim_run(self, run_id: str, agent_id: str) -> None:
        """Make ``run_id`` ``agent_id``'s before anything is journaled in it, or raise
        :class:`~cradle_kg.errors.RunOwnershipError`: what every entry point that speaks for
        an authenticated agent calls first (:func:`check_run_owner`).

        A run nobody proposed in yet is claimed with a ``run.claimed`` event whose key
        (``run-claim:<run id>``) the journal holds once: of two agents racing for a new
        run, one claim is written and the other entry point finds the run taken — on
        SQLite and PostgreSQL alike, across processes. A run's owner is the actor of its
        first proposal or claim (:meth:`~cradle_kg.storage.Journal.run_agent`), or its
        workflow's agent (:func:`run_owner`).

        The claim is written only as the run's first event (``if_new_run``, checked under
        the journal's writer's lock), as a workflow's start is: of a claim and a workflow
        started in the same new run at the same moment, whichever lands first owns it and
        the other is refused (``tests/security/test_44``)."""
        check_run_namespace(run_id, agent_id)
        if check_run_owner(self.journal, run_id, agent_id) is not None:
            return
        claim = NewEvent(run_id=run_id, kind=RUN_CLAIMED, subject=run_id, actor=agent_id,
                         at=self.clock(), payload={"agent_id": agent_id},
                         idem_key=RUN_CLAIM_PREFIX + run_id, if_new_run=True)
        try:
            self.context.append([claim])
        except IdempotencyKeyTaken:
            pass  # claimed first by another entry point: the journal says whose, below
        except RunNotNew:
            # the run has an event: whose it is now, below — or, when it is still nobody's
            # (the host's own events, no proposal, no workflow), claimed without the guard:
            # a workflow starts only in an empty run, so none can start in this one now
            if check_run_owner(self.journal, run_id, agent_id) is None:
                with contextlib.suppress(IdempotencyKeyTaken):
                    self.context.append([replace(claim, if_new_run=False)])
        if check_run_owner(self.journal, run_id, agent_id) is None:
            raise JournalError(f"run `{run_id}`: its claim is not in the journal")

    def check_task(self, proposal: Proposal, agent_id: str) -> bool:
        """Raise :class:`~cradle_kg.errors.TaskOwnershipError` — nothing journaled — when a
        ``task`` limit counts the proposal's task and another agent claimed it; True when
        it counts it and nobody has (the proposal's first events claim it:
        :mod:`.task_claims`)."""
        if not task_limited(self.config, agent_id=agent_id, task_id=proposal.task_id):
            return False
        return check_task_owner(self.journal, proposal.task_id, agent_id) is None

    def _submit(self, raw: Proposal | dict[str, Any]) -> Outcome:
        """:meth:`submit` without the agent's checks (:func:`check_agent_proposal`): the
        runtime's own proposals (a compensation) come in here."""
        return self._submit_parsed(parse_proposal(raw, self.config.input_limits), own=True)

    def _submit_parsed(self, proposal: Proposal, *, own: bool = False,
                       claim_for: str | None = None, task_for: str | None = None
                       ) -> Outcome:
        # a submission that lost the race for its id to another process is evaluated again:
        # it is now the identical proposal (recorded outcome) or a reused id (denied); one
        # whose intent another worker's took past a limit, too: gate 1 now denies it
        why = "its id is contended"
        run_ended: tuple[str, str] | None = None
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                return self._submit_once(proposal, own=own, claim_for=claim_for,
                                         task_for=task_for, run_ended=run_ended)
            except TaskClaimed:  # nothing of it written: decided again, refused by the claim
                why = "its task is contended"
            except ProposalIdClaimed:
                why = "its id is contended"
            except RunEnded as ended:
                # the use of an approval of its workflow run, or a request for one, refused
                # as after the run's end (a cancel: both are written ``if_run_open``),
                # nothing of it written: decided again knowing it — denied
                # (tests/security/test_297, test_303). A
                # walk's own guard (``while_run_open``) is its walker's to answer
                if run_ended is not None or self.context.guards(ended.run_id):
                    raise
                run_ended = after_the_end(ended.run_id, run_end(self.journal, ended.run_id))
                why = "its run ended while it was decided"
            except ApprovalMoved:
                # the approval it was about to run under was revoked by a person since gate
                # 1 read it (refused under the writer's lock, nothing written): decided
                # again, the approval read revoked — a person is asked anew (test_305);
                # or it expired on the journal server's clock meanwhile (test_595)
                why = "its approval was revoked or expired while it was decided"
            except _InForceMoved:  # nothing of it was written: decided again
                why = "the home's policies or configuration kept changing while it was decided"
            except KeyedRequestRaced:  # nothing of it written: decided again, reads the other
                why = "other calls kept asking for the same action while it was decided"
            except LimitReached as reached:
                if reached.cap.scope == REFUSALS_SCOPE:  # nothing of it was written
                    raise self._recorded(refusals_error(reached.cap)) from None
                why = "other workers' calls keep reaching its limits first"
            except QuotaExceededError as refused:  # the refusals' early count, the waiting
                self._recorded(refused)
                raise
        raise JournalError(f"proposal `{proposal.id}`: {why}; submit it again")

    def _submit_once(self, proposal: Proposal, *, own: bool = False,
                     claim_for: str | None = None, task_for: str | None = None,
                     run_ended: tuple[str, str] | None = None) -> Outcome:
        now = self.clock()
        run_id = proposal.effective_run_id
        # INVARIANT: another agent's run is refused before anything is read or written
        unclaimed = claim_for is not None and \
            check_run_owner(self.journal, run_id, claim_for) is None
        self.refresh()
        # INVARIANT: another agent's task under a `task` limit is refused, nothing written
        task_unclaimed = task_for is not None and self.check_task(proposal, task_for)
        # one policy set for this decision: journaled as in force, asked, and named (in a
        # run to claim, once it is claimed: below)
        engine = self.policies
        in_force = self._in_force()
        if not unclaimed:
            self.policy_set.activate(run_id, now, engine)
        gate = Gate1(self._gate_input(now, run_id=run_id, policies=engine,
                                      run_ended=run_ended)).run(proposal)
        gate.policy_version = engine.version
        if gate.resubmission:
            recorded = recorded_answer(self.context, proposal)
            if recorded is not None:
                return recorded
        decision = decide(proposal, gate, now, policy_version=engine.version,
                          pack_versions=tuple(self.pack_versions))
        # INVARIANT: written only under what is in force when written: a policy file or
        # config.json changed while gate 1 ran (a forbid written during an incident) makes
        # the proposal be decided again under it, before any of its events is journaled
        # (before, it ran under the set the forbid had replaced: tests/security/test_211)
        self.refresh()
        if self._in_force() != in_force:
            raise _InForceMoved
        # dumped once: for its decision.made event and for the outcome that carries it
        decided = decision.model_dump(mode="json")
        base = with_trace(decision_events(proposal, gate, decision, now, decided=decided,
                                          pack_digests=self.pack_digests), gate, now)
        dumped: list[Dumped] = [("decision", decision, decided)]
        # the runtime's own proposals (a compensation) are not refused for the agent's
        # refusals: a denied compensation must still end in its escalation (counted, not
        # capped)
        if decision.verdict in REFUSED_VERDICTS and not own:
            base = self._refusals_capped(proposal, base, now)
        if unclaimed and claim_for is not None:
            # INVARIANT: a new run is claimed only for a proposal that will be written: one
            # refused past its agent's refusals quota claims nothing (before, its claim was
            # written and stayed — one event per refused call: tests/security/test_216). The
            # early count here; two writers racing past it leave one claim each at most
            if decision.verdict in REFUSED_VERDICTS and not own:
                self._refusals_room(proposal, now)
            if decision.verdict is Verdict.REQUIRE_APPROVAL:  # nothing waits in a new run yet
                self.approval_flow.check_waiting(proposal)
            self.claim_run(run_id, claim_for)
            self.policy_set.activate(run_id, now, engine)
        if task_unclaimed and task_for is not None:
            # INVARIANT: a task is claimed with the proposal's own first events, all or
            # none: a proposal that writes nothing claims nothing, and of two agents racing
            # for a new task the journal holds one claim (the other: TaskClaimed, decided
            # again and refused by check_task)
            base = [task_claim(proposal.task_id, run_id=run_id, agent_id=task_for, at=now),
                    *base]
        if gate.recorded_intent_seq is not None and decision.verdict in (
                Verdict.ALLOW, Verdict.REQUIRE_APPROVAL):
            return self.execution.replayed(proposal, gate, decision, base)
        if decision.verdict is Verdict.REQUIRE_APPROVAL:
            return self.approval_flow.request(proposal, gate, decision, base, now)
        if decision.verdict is Verdict.REPAIR:
            return repair_or_escalate(self.context, proposal, decision, base, now,
                                      capped=not own)
        if decision.verdict is not Verdict.ALLOW:
            outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                              status=VERDICT_STATUS[decision.verdict], decision=decision,
                              reasons=decision.reasons)
            self.context.append([*base, outcome_event(outcome, proposal.id,
                                                      submission=gate.submission,
                                                      dumped=dumped)])
            return outcome
        return self.execution.execute(proposal, gate, decision, base, now, dumped=dumped)

    def room_for_input(self, proposal: Proposal, text: str, *, author: str, kind: str,
                       claim_for: str) -> None:
        """Raise — nothing written — when recording the host's input ``text`` into the
        proposal's run would claim a new run for a proposal that is then not written.

        The input is written into the run before gate 1 (its lineage reads it), and in a
        run nobody owns yet the agent's claim before it. Before, a proposal then refused
        past its agent's refusals quota (or past ``waiting_per_agent``) left the claim and
        the input behind, one of each per refused call naming a new run, without end
        (``tests/security/test_255``; what ``test_216`` closed for a proposal alone). Now,
        when either quota has no room left (the early counts ``submit`` makes), the
        proposal is decided first as it will be with the input in its run
        (:meth:`_previewed`, nothing written) and refused here when the quota would refuse
        that decision; with room, nothing more is read. Another agent's run is refused
        first (:func:`check_run_owner`), as before."""
        run_id = proposal.effective_run_id
        check_run_namespace(run_id, claim_for)
        if check_run_owner(self.journal, run_id, claim_for) is not None:
            return  # the agent's run already: its input is written into its own run
        now = self.clock()
        try:
            self._refusals_room(proposal, now)
            self.approval_flow.check_waiting(proposal)
            return  # room for whatever gate 1 decides
        except QuotaExceededError:
            pass
        verdict = self._previewed(proposal, text, author=author, kind=kind, now=now)
        try:
            if verdict in REFUSED_VERDICTS:
                self._refusals_room(proposal, now)
            if verdict is Verdict.REQUIRE_APPROVAL:
                self.approval_flow.check_waiting(proposal)
        except QuotaExceededError as refused:
            raise self._recorded(refused) from None

    def _previewed(self, proposal: Proposal, text: str, *, author: str, kind: str,
                   now: datetime) -> Verdict:
        """Gate 1's verdict on ``proposal`` as if the host's input were already journaled in
        its run (lineage traces it from an index of its own,
        :meth:`~cradle_kg.loop.gate1.lineage.LineageGate.previewing`); nothing written."""
        run_id = proposal.effective_run_id
        data = checked_input(self.config.input_limits, run_id, text, author=author, kind=kind)
        ref = sha256_bytes(data)
        pending = built_event(
            seq=PREVIEW_SEQ, id="preview", run_id=run_id, kind="input.recorded", subject=ref,
            actor=author, at=now, payload=input_payload(ref, text, author=author, kind=kind),
            payload_hash="", prev_hash="", hash="")
        self.refresh()
        engine = self.policies
        given = replace(self._gate_input(now, run_id=run_id, policies=engine),
                        lineage=self.lineage.previewing(run_id, [pending]))
        gate = Gate1(given).run(proposal)
        gate.policy_version = engine.version
        return decide(proposal, gate, now, policy_version=engine.version,
                      pack_versions=tuple(self.pack_versions)).verdict

    def _in_force(self) -> tuple[object, ...]:
        """What a decision is made under, by identity: the policy set, its problem, the
        configuration and its problem (the same objects while no file changed)."""
        return (self.policies, self.policy_set.problem, self.config, self.config_problem)

    def _refusals_capped(self, proposal: Proposal, base: list[NewEvent],
                         now: datetime) -> list[NewEvent]:
        """INVARIANT: an agent has at most ``refusals_per_agent_per_hour`` proposals refused
        by gate 1 journaled in any hour (a sliding window). Before, a denied proposal was
        journaled whole — up to ``max_bytes`` — and no limit counted it (the rate and cost
        limits count intents): an agent's token grew the journal with denied proposals as
        fast as the server took them (``tests/security/test_204``). The decision carries a
        :class:`~cradle_kg.storage.UsageCap` on the agent's refusals, counted by the
        journal under its writer's lock with the append itself (two index probes of the
        usage buckets; only a refused proposal pays it): past it nothing is written and
        the proposal is refused (``quota_exceeded``). An allowed call carries none."""
        limit = self.config.input_limits.refusals_per_agent_per_hour
        if limit is None:
            return base
        # the hour on the journal server's clock where there is one (test_608)
        cap = UsageCap(REFUSALS_SCOPE, proposal.agent_id, since=now - _REFUSALS_WINDOW,
                       max_calls=limit, window=_REFUSALS_WINDOW.total_seconds())
        return [replace(e, caps=(*e.caps, cap)) if e.kind == "decision.made" else e
                for e in base]

    def _recorded(self, refused: QuotaExceededError) -> QuotaExceededError:
        """``refused``, its quota's record journaled first — one per quota and identity in
        any hour, whatever the refusals (:mod:`cradle_kg.throttling`, ``test_217``)."""
        record_reached(self.journal, self.context.append, refused, now=self.clock())
        return refused

    def _refusals_room(self, proposal: Proposal, now: datetime) -> None:
        """Raise the refusals quota's error when the agent's refusals of the last hour
        already fill it (two index probes of the usage buckets, outside the writer's lock:
        the journal counts again under it, :meth:`_refusals_capped`)."""
        limit = self.config.input_limits.refusals_per_agent_per_hour
        if limit is None:
            return
        since = now - _REFUSALS_WINDOW
        # as the cap reads it under the lock: on PostgreSQL the hour up to the server's
        # clock (tests/security/test_608)
        calls, _ = self.journal.usage_within(field=REFUSALS_SCOPE, value=proposal.agent_id,
                                             window=_REFUSALS_WINDOW.total_seconds(),
                                             now=now)
        if calls >= limit:
            raise refusals_error(UsageCap(REFUSALS_SCOPE, proposal.agent_id, since=since,
                                          max_calls=limit))

    def _gate_input(self, now: datetime, *, run_id: str, policies: PolicyEngine | None = None,
                    run_ended: tuple[str, str] | None = None) -> GateInput:
        return GateInput(
            config=self.config, tools=self.tools, journal=self.journal,
            policies=policies if policies is not None else self.policies,
            config_problem=self.config_problem, policy_problem=self.policy_set.problem,
            validators=self.validators, pack_versions=tuple(self.pack_versions),
            evidence_exists=self.evidence.exists,
            evidence_collected_at=self._evidence_collected_at,
            approval_available=lambda d, t, who, ref, scope, why: self.approvals.usable(
                d, t, who, run_id=run_id, also_excluded=excluded_for_agent(self.config, who),
                tool_ref=ref, scope=scope, why=why) is not None,
            now=now, lineage=self.lineage,
            refused_here=lambda d: any(
                st.approval.status in (ApprovalStatus.REJECTED, ApprovalStatus.CHANGES_REQUESTED)
                for st in self.approvals.decided_for_digest(d, run_id=run_id)),
            run_ended=run_ended,
        )

    @_writes
    def record_input(self, run_id: str, text: str, *, author: str,
                     kind: str = "request") -> str:
        """Record a trusted input of a run (the user's request), as evidence with its
        author; lineage counts a value it contains as having a trusted origin."""
        return record_input(self.context, self.evidence, run_id, text, author=author,
                            kind=kind, now=self.clock())

    def _evidence_collected_at(self, ref: str, proposer: str | None,
                               run_id: str | None = None,
                               action: str | None = None) -> datetime | None:
        # INVARIANT: one row, however often the blob was uploaded (tests/security/test_70),
        # and collected by someone who is no agent of the home (a person, the host, the
        # runtime's collectors): an agent's upload is its word, not evidence — for its own
        # proposals (tests/security/test_175) and for another agent's (test_180)
        # — judged by what its collector was when it collected it, not by today's
        # config: an agent removed since is still the agent it was (test_196); and, given
        # `run_id`, collected for that run or for any, never for another (test_199); given
        # `action` (the proposal's pinned key, "" for none), for it or any (test_247)
        for_run = (run_id, EVIDENCE_RUN) if run_id is not None else None
        bound = self.config.evidence_requires_run  # an upload naming no run: in none
        if proposer is None:
            last = self.journal.last_for_subject(ref, COLLECTED, for_run=for_run,
                                                 for_action=action, bound_only=bound)
            return last.at if last is not None else None
        # INVARIANT: nor by another agent's host: a host's token speaks for its own agent
        # (test_259 keeps it out of other identities' runs), and its upload naming no run,
        # or a run in no namespace, counted for every agent (tests/security/test_320)
        agents = {a.id for a in self.config.agents} | {proposer}
        passed = agents | {HOST_COLLECTOR_PREFIX + a for a in agents if a != proposer}
        for _ in range(MAX_RETIRED_COLLECTORS + 1):
            last = self.journal.last_for_subject(ref, COLLECTED, not_by=tuple(sorted(passed)),
                                                 for_run=for_run, for_action=action,
                                                 bound_only=bound)
            if last is None:
                return None
            if not self._was_agent(last) and not _other_host(last.actor, proposer):
                return last.at
            passed.add(last.actor)  # a retired agent or its host: passed over from now on
        return None  # fail closed: more retired agents uploaded it than are looked past

    def _was_agent(self, collected: AuditEvent) -> bool:
        """Whether the collector of ``collected`` was an agent of the home when it
        collected the blob: its event says so (:data:`~cradle_kg.evidence.COLLECTOR_ROLE`);
        an event written before events said it is an agent's when its actor ever proposed
        (one probe of ``events_kind_actor``)."""
        role = collected.payload.get(COLLECTOR_ROLE)
        if isinstance(role, str):
            return role == AGENT_ROLE
        return bool(self.journal.recent_sizes("proposal.received", collected.actor,
                                              since=EPOCH, limit=1))

    @_writes
    def run_plan(self, plan: Plan) -> PlanOutcome:
        """Run a plan step by step, each step through both gates."""
        return run_plan(self.context, plan, submit=self.submit)

    # --- the humans ---------------------------------------------------------------

    @_writes
    def decide_approval(self, approval_id: str, *, approver_id: str, token: str,
                        status: ApprovalStatus, once: bool = True, scope: str | None = None,
                        until: datetime | None = None, reason: str | None = None,
                        resume: bool = True) -> tuple[HumanApproval, Outcome | None]:
        """Record a human decision (see :meth:`.approval_flow.ApprovalFlow.decide`)."""
        return self.approval_flow.decide(approval_id, approver_id=approver_id, token=token,
                                         status=status, once=once, scope=scope, until=until,
                                         reason=reason, resume=resume)

    @_writes
    def revoke_approval(self, approval_id: str, *, approver_id: str, token: str,
                        reason: str) -> HumanApproval:
        """Take an approved approval back: before its action ran, or a reusable one's
        further uses after it ran (see :meth:`.approval_flow.ApprovalFlow.revoke`)."""
        return self.approval_flow.revoke(approval_id, approver_id=approver_id, token=token,
                                         reason=reason)

    @_writes
    def view_approval(self, approval_id: str, *, viewer: str) -> HumanApproval:
        return self.approval_flow.view(approval_id, viewer=viewer)

    def tool_ref_now(self, tool_id: str) -> str | None:
        """The ``id@version`` of the tool registered now under ``tool_id`` (``None``: none
        is)."""
        return self.tools.get(tool_id).ref if self.tools.has(tool_id) else None

    def approval_tool(self, approval: HumanApproval, tool_id: str) -> ToolVersions:
        """The tool's version ``approval`` covers (asked under) and the one registered now
        (``tool_id``: its action's tool): two indexed reads (its request, its asking
        decision), whatever the journal holds."""
        return ToolVersions(self.approvals.asked_under(approval), self.tool_ref_now(tool_id))

    def requested_tool(self, approval: HumanApproval) -> ToolVersions:
        """:meth:`approval_tool` for the tool of the action that asked for ``approval``
        (its request read for it): what a list of approvals shows beside each."""
        return self.approval_tool(
            approval, self.approvals.requested_proposal(approval).action.action_type)

    @_writes
    def resume(self, run_id: str) -> list[Outcome]:
        """Re-submit the proposals of a run that wait for an approval that is now given."""
        return self.approval_flow.resume(run_id)

    @_writes
    def resume_approval(self, approval: HumanApproval, run_id: str) -> Outcome | None:
        """Re-submit the proposal that asked for ``approval`` in ``run_id`` when it is
        approved and still usable there (:meth:`resume`, for that one approval): its
        outcome, else None."""
        return self.approval_flow.resume_approval(approval, run_id)

    @_writes
    def resolve_task(self, task_id: str, *, by: str, token: str, note: str) -> HumanTask:
        """Close a human task (an escalation): an authenticated approver says what they did."""
        return resolve_task(self.context, self.approvals, task_id, by=by, token=token,
                            note=note)

    def recorded_outcome(self, action_id: str) -> Outcome | None:
        """The outcome recorded last for an action, if any."""
        return recorded_outcome(self.journal, action_id)



def open_home(root: Path, *, journal: str | Path | None = None, graph_sync: bool = True,
              recover: bool = True, read_only: bool = False) -> Runtime:
    """A runtime on the home at ``root`` (``journal``, ``graph_sync``, ``recover``: as
    :class:`Runtime` takes them), or the error opening it raises — never with the home's
    journal created by a home that does not load: one whose embedded journal does not
    exist yet is opened first on a throwaway journal in a temporary folder (the runtime's
    own loader: its configuration, packs and policies), then on its own. Before, a refused
    first command left an empty journal, the graph store's folder and the workers' leases
    behind (``tests/security/test_282``). Every command that opens a runtime on a home
    comes here: ``submit`` and the CLI's others, ``mcp serve``/``proxy``, ``worker``,
    ``recover``, ``pack run``, ``serve``'s API (``tests/security/test_298``). The first
    command on a new home opens it twice; a home with a journal, or on PostgreSQL, once.

    ``read_only``: the commands that only read (``workflow status``, ``approvals
    list``/``show``, ``inbox``, ``evidence show``, ``budgets status``, ``autonomy status``)
    — opened once, read only (:class:`Runtime`): nothing of the home is made or written
    (``tests/security/test_309`` … ``test_311``)."""
    import tempfile

    if read_only:
        return Runtime(root, journal=journal, read_only=True)
    target = str(journal) if journal is not None else home_journal_target(root)
    if not is_postgres(target) and not Path(target).exists():
        with tempfile.TemporaryDirectory(prefix="cradle-kg-first-open-") as scratch, \
                Runtime(root, journal=Path(scratch) / "journal.sqlite", graph_sync=False,
                        recover=False):
            pass
    return Runtime(root, journal=journal, graph_sync=graph_sync, recover=recover)


__all__ = ["CommitHook", "Runtime", "open_home"]
