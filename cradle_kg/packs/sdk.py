"""Everything a pack may use from cradle-kg, in one module (``__all__`` is pinned by a test).

A pack imports from here, from :mod:`cradle_kg.packs.testing` in its tests, and from
the public API (``cradle_kg.__all__``) — nothing else of ``cradle_kg``; a test walks
``packs/`` and fails otherwise. What is here, by what a pack writes:

* **tools** — :func:`tool` declares a function with its contract (:class:`ToolSpec`'s
  fields: input and output models, :class:`SideEffectClass`, :class:`IdempotencyClass`,
  verifier, ``target_from`` …); it receives the :class:`PackContext` and a :class:`ToolCall`;
* **verifiers** (gate 2) — :func:`verifier`; a :class:`VerifyRequest` in, a
  :class:`VerifierReport` out, built with :func:`check`, :func:`read_back` and :func:`report`;
* **validators** (gate 1) — :func:`validator`, returning :class:`Finding` s (a deny, or a
  :attr:`Verdict.CLARIFY` with the missing facts; a fact whose ``source`` begins with
  :data:`HOST_FACT_PREFIX` is the host application's word, ``cradle-kg/facts`` of an MCP or
  LangGraph session); **invariants** (gate 2) — :func:`invariant`;
* **its own local system** — :class:`PackStore`, a SQLite file with a read-only read path;
  :func:`exclusive_file`, an ``flock`` that makes its own builders take turns;
  :func:`tls_context`, the process's one TLS context for the HTTP clients it makes
  (``verify=tls_context()``: httpx would load the CA bundle again for each client; sealed:
  a pack needing other trust makes a context of its own);
* **example identities and runners** — :class:`RuntimeConfig`, :class:`Agent`,
  :class:`Permission`, :class:`Approver`, :func:`token_hash`, and the outcome records;
* **errors** it raises, so the command line reports them as one line; a tool that refuses
  a call before it writes anything raises :class:`ToolRefused` (``code``, ``message``):
  the call ends ``failed`` with the code, final for its key, no human task;
* **data files** it reads (an ``init`` hook's ``--data``) — :func:`load_json_file`, the
  runtime's strict JSON loader for a file: no duplicate key, no ``NaN``, bounded size.

* **projection hooks** — :func:`projection`: a journal event (:class:`AuditEvent`) in,
  :data:`Triple` s out, built with :func:`iri`, :func:`literal` and :func:`core_node`; pure
  and deterministic; the triples go into the run's graph and are checked by the pack's
  shapes at commit (manifest ``projections:``);
* **knowledge** — :func:`knowledge`: reference data as a versioned named graph, generated
  at load time from the pack's data files (manifest ``knowledge:``).

The manifest names each declaration (``module:attribute``); loading the pack registers
them (:mod:`cradle_kg.packs.registration`).
"""

from __future__ import annotations

from ..canonical import content_hash, token_hash
from ..config import Approver, RuntimeConfig
from ..crashpoints import crashpoint
from ..errors import (
    ApprovalError,
    CradleError,
    IdempotencyConflictError,
    InputError,
    JournalError,
    PolicyError,
    ReplayDivergenceError,
    ToolError,
    ToolRefused,
    UnknownNameError,
)
from ..graph.packproj import Triple, core_node, iri, literal
from ..inputs import load_json_file
from ..lineage.index import HOST_FACT_PREFIX
from ..loop.gate1.findings import Finding
from ..records import (
    Action,
    Agent,
    ApprovalStatus,
    AuditEvent,
    CheckStatus,
    FactCheck,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Permission,
    Proposal,
    SideEffectClass,
    Verdict,
    VerificationCheck,
    VerificationStatus,
)
from ..storage.file_lease import exclusive_file
from ..tls import tls_context
from ..tools import ToolCall, ToolSpec
from ..verifiers import VerifierReport, VerifyRequest
from .declarations import (
    Invariant,
    Knowledge,
    PackContext,
    Projection,
    Tool,
    Validator,
    Verifier,
    invariant,
    knowledge,
    projection,
    tool,
    validator,
    verifier,
)
from .reports import check, read_back, report
from .store import PackStore

__all__ = [
    "HOST_FACT_PREFIX",
    "Action",
    "Agent",
    "ApprovalError",
    "ApprovalStatus",
    "Approver",
    "AuditEvent",
    "CheckStatus",
    "CradleError",
    "FactCheck",
    "Finding",
    "IdempotencyClass",
    "IdempotencyConflictError",
    "InputError",
    "Invariant",
    "JournalError",
    "Knowledge",
    "Outcome",
    "OutcomeStatus",
    "PackContext",
    "PackStore",
    "Permission",
    "PolicyError",
    "Projection",
    "Proposal",
    "ReplayDivergenceError",
    "RuntimeConfig",
    "SideEffectClass",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRefused",
    "ToolSpec",
    "Triple",
    "UnknownNameError",
    "Validator",
    "Verdict",
    "VerificationCheck",
    "VerificationStatus",
    "Verifier",
    "VerifierReport",
    "VerifyRequest",
    "check",
    "content_hash",
    "core_node",
    "crashpoint",
    "exclusive_file",
    "invariant",
    "iri",
    "knowledge",
    "literal",
    "load_json_file",
    "projection",
    "read_back",
    "report",
    "tls_context",
    "token_hash",
    "tool",
    "validator",
    "verifier",
]
