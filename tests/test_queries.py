"""Every named query, on a known home: the demo, plus three small additions it lacks.

The demo (``run_demo``) gives an allowed credit, a denied one, a lying tool caught, an
idempotent replay and an approved irreversible close. It has no fact with evidence and
no unused approval, so the fixture adds: a credit citing collected evidence and stating
a fact, an approval given with an expiry but never used, and a request left pending.

Expected rows are derived from what the demo and the additions *did* — their outcomes
and the journal (the truth) — never copied from a query's output.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cradle_kg import Runtime
from cradle_kg.cli import app
from cradle_kg.cli.query import open_store
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, DemoStep
from cradle_kg.errors import InputError, QueryError, QueryRefusedError, UnknownNameError
from cradle_kg.graph.project import node, run_graph
from cradle_kg.graph.queries import (
    QUERIES_DIR,
    Page,
    QueryCatalog,
    bind,
    check_query,
    execute,
    paged,
    read_page,
)
from cradle_kg.records import ApprovalStatus, AuditEvent, Outcome
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.storage.oxigraph import OxigraphStore
from tests import demo_template

C = "https://w3id.org/cradle#"
REQUIRED = ("why-allowed", "approvals", "task-effects", "evidence-chain",
            "unverified-actions", "decisions-by-policy-version", "identity-activity",
            "denied-proposals", "policy-in-force", "stale-approvals")


@dataclass
class Known:
    home: Path
    steps: list[DemoStep]
    events: list[AuditEvent]
    cited: Outcome  # the credit citing evidence and stating a fact
    evidence_ref: str
    unused: Outcome  # waiting on an approval given but never used
    unused_expiry: datetime
    pending: Outcome  # waiting on a request nobody decided

    def outcome(self, name: str) -> Outcome:
        return next(s.outcome for s in self.steps if s.name == name)


def _proposal(pid: str, tool: str, account: str, task: str, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"account": account}
    if tool.endswith("credit"):
        args["amount"] = 10
    return {"id": pid, "task_id": task, "agent_id": AGENT,
            "action": {"action_type": tool, "target": "ledger:" + account,
                       "arguments": args}, **extra}


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Known]:
    home = tmp_path_factory.mktemp("known") / "home"
    # the ledger demo (a copy of the run's); the pilot packs test themselves
    steps = demo_template.demo_home(home, tmp_path_factory)
    with Runtime(home) as rt:
        ref = rt.add_evidence(b'{"kyc": "passed"}', kind="kyc-report", collector="kyc-service")
        cited = rt.submit(_proposal(
            "p-cited", "demo.ledger.credit", "acct-3", "task-cited", evidence_refs=[ref],
            facts=[{"subject": "acct-3", "predicate": "kycStatus", "object": "passed",
                    "source": "kyc-service"}]))
        unused = rt.submit(_proposal("p-close-8", "demo.ledger.close_account", "acct-8",
                                     "task-close-8"))
        assert unused.approval is not None
        expiry = rt.clock() + timedelta(hours=1)
        rt.decide_approval(unused.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           once=False, until=expiry, resume=False)
        pending = rt.submit(_proposal("p-close-7", "demo.ledger.close_account", "acct-7",
                                      "task-close-7"))
        rt.sync_graph()
        events = list(rt.journal.events())
    yield Known(home, steps, events, cited, ref, unused, expiry, pending)


def rows(known: Known, name: str, **params: str) -> list[dict[str, str | None]]:
    q = QueryCatalog.load().get(name)
    store = open_store(known.home)  # the home's store (embedded or remote), per query
    try:
        result = execute(store, q.text, bound=bind(q, params))
        names = [v.value for v in result.variables]
        return [{n: (row[n].value if row[n] is not None else None) for n in names}
                for row in result]
    finally:
        store.close()


def words(value: str | None) -> set[str]:
    return set((value or "").split())


def iri(kind: str, ident: str) -> str:
    return node(kind, ident)[1:-1]


def graph_iri(run_id: str) -> str:
    return run_graph(run_id)[1:-1]


# --- the catalog -------------------------------------------------------------------------


def test_every_required_question_has_a_documented_query() -> None:
    catalog = QueryCatalog.load()
    for name in REQUIRED:
        q = catalog.get(name)
        assert q.question.endswith((".", "?")) and len(q.question) > 20, name
        assert q.example.startswith(f"cradle-kg query {name}"), name
        for p in q.params:  # a declared parameter must be projected, or it cannot bind
            assert f"?{p.name}" in q.text.split("WHERE")[0], (name, p.name)


def test_packs_add_named_queries_by_mapping(tmp_path: Path) -> None:
    pack = Path(__file__).resolve().parents[1] / "packs" / "customs.hs-router" / "queries"
    extra = {"missing-facts": pack / "missing-facts.rq"}
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "mine.rq").write_text("# question: Mine?\nSELECT * WHERE { ?s ?p ?o }\n")
    catalog = QueryCatalog.load([folder], packs={"customs.hs-router": extra})
    assert catalog.get("missing-facts").origin == "customs.hs-router"
    assert "needs_clarification" in catalog.get("missing-facts").question
    assert catalog.get("mine").question == "Mine?"
    assert set(REQUIRED) <= set(catalog.names())


def test_bad_parameter_lines_and_values_are_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.rq").write_text("# param x: colour required\nSELECT ?x WHERE {}\n")
    with pytest.raises(QueryError, match="bad parameter line"):
        QueryCatalog.load([tmp_path])
    catalog = QueryCatalog.load()
    with pytest.raises(UnknownNameError):
        catalog.get("no-such-query")
    with pytest.raises(QueryError, match="needs parameter `action`"):
        bind(catalog.get("why-allowed"), {})
    with pytest.raises(QueryError, match="has no parameter `nope`"):
        bind(catalog.get("why-allowed"), {"action": "a", "nope": "b"})
    with pytest.raises(QueryError, match="not a valid datetime"):
        bind(catalog.get("stale-approvals"), {"at": "tomorrow"})
    with pytest.raises(QueryError, match="not a valid iri"):
        bind(None, {"x": "<not an iri>"})


@pytest.mark.parametrize("text", [
    "INSERT DATA { <a:b> <a:c> <a:d> }",
    "PREFIX x: <http://x/> DELETE WHERE { ?s x:p ?o }",
    "# comment\nLOAD <http://example.org/data>",
])
def test_update_is_refused(text: str) -> None:
    with pytest.raises(QueryRefusedError, match="Update is refused"):
        check_query(text)


def test_service_endpoints_are_found_on_the_parsed_query_and_refused_unless_allowed() -> None:
    for q in ("PREFIX ex: <http://ex.org/> SELECT * WHERE { SERVICE SILENT ex:sparql {} }",
              "SELECT * WHERE { SERVICE ?where {} }",
              "SELECT * WHERE { #\rSERVICE <http://b.org/q> { ?s ?p ?o } }"):
        with pytest.raises(QueryError):
            check_query(q)
    with pytest.raises(QueryRefusedError, match="refused"):
        check_query("SELECT * WHERE { SERVICE <http://b.org/q> { ?s ?p ?o } }")
    check_query("SELECT * WHERE { SERVICE <http://b.org/q> { ?s ?p ?o } }",
                allowed_services=["http://b.org/q"])
    check_query("PREFIX b: <http://b.org/> SELECT * WHERE { SERVICE b:q { ?s ?p ?o } }",
                allowed_services=["http://b.org/q"])
    check_query("SELECT * WHERE { ?s ?p 'SERVICE <http://c/>' } # SERVICE")


# --- every query on the known home -------------------------------------------------------


@pytest.mark.usefixtures("graph_backend")
def test_why_allowed_the_approved_close(known: Known) -> None:
    done = known.outcome("approved by user:bob (CLI)")
    waited = known.outcome("irreversible close")
    assert done.action is not None and done.decision is not None
    assert waited.approval is not None
    got = rows(known, "why-allowed", action=done.action.id)
    assert len(got) == 1
    row = got[0]
    assert row["decision"] == iri("decision", done.decision.id)
    assert row["verdict"] == C + "Allow"
    assert row["grantedTo"] == iri("agent", AGENT)
    assert row["policyVersion"] == done.decision.policy_version
    assert words(row["policies"]) == {p.policy_id for p in done.decision.policy_results}
    assert words(row["approvals"]) == {iri("approval", waited.approval.id)}
    assert words(row["approvers"]) == {iri("agent", APPROVER)}
    assert words(row["evidence"]) == set()


@pytest.mark.usefixtures("graph_backend")
def test_why_allowed_names_the_evidence_and_nothing_for_a_denied_action(known: Known) -> None:
    assert known.cited.action is not None
    row = rows(known, "why-allowed", action=known.cited.action.id)[0]
    assert words(row["evidence"]) == {iri("evidence", known.evidence_ref)}
    assert words(row["approvals"]) == set()
    denied_action = next(e.payload["action_id"] for e in known.events
                         if e.kind == "decision.made"
                         and e.payload["proposal_id"] == "p-credit-5000")
    assert rows(known, "why-allowed", action=denied_action) == []


@pytest.mark.usefixtures("graph_backend")
def test_parameter_values_are_values_not_query_text(known: Known) -> None:
    hostile = 'act:x"} UNION { ?action ?p ?o } #'
    assert rows(known, "why-allowed", action=hostile) == []
    got = rows(known, "decisions-by-policy-version", policyVersion='x" } } { ?a ?b ?c')
    assert got == []


@pytest.mark.usefixtures("graph_backend")
def test_approvals_who_approved_what(known: Known) -> None:
    done = known.outcome("approved by user:bob (CLI)")
    waited = known.outcome("irreversible close")
    assert waited.approval and done.action and done.decision and known.unused.approval
    got = {r["approval"]: r for r in rows(known, "approvals")}
    demo_approval = got[iri("approval", waited.approval.id)]
    assert demo_approval["approver"] == iri("agent", APPROVER)
    assert demo_approval["status"] == C + "Approved"
    assert demo_approval["scope"] == waited.approval.scope == "account_closure"
    assert demo_approval["expiresAt"] is None
    assert demo_approval["action"] == iri("action", done.action.id)
    assert demo_approval["authorized"] == iri("decision", done.decision.id)
    later = got[iri("approval", known.unused.approval.id)]
    assert later["expiresAt"] is not None and later["authorized"] is None
    decided = {iri("approval", e.payload["approval_id"]) for e in known.events
               if e.kind == "approval.decided"}
    assert set(got) == decided
    by_bob = {iri("approval", e.payload["approval_id"]) for e in known.events
              if e.kind == "approval.decided" and e.payload["approver_id"] == APPROVER}
    assert {r["approval"] for r in rows(known, "approvals", approver=APPROVER)} == by_bob
    assert rows(known, "approvals", approver="user:alice") == []


@pytest.mark.usefixtures("graph_backend")
def test_task_effects_in_order_and_a_replay_counts_once(known: Known) -> None:
    first = known.outcome("allowed credit")
    again = known.outcome("same proposal again")
    assert first.action and again.replayed and again.action
    got = rows(known, "task-effects", task="task-credit")
    assert [r["action"] for r in got] == [iri("action", first.action.id)]
    assert got[0]["result"] == "committed"
    assert got[0]["verificationStatus"] == C + "Verified"
    assert got[0]["executedBy"] == iri("agent", AGENT)
    assert got[0]["tool"] == iri("tool", "demo.ledger.credit")
    lie = known.outcome("tool lies about success")
    assert [r["result"] for r in rows(known, "task-effects", task="task-lie")] == ["aborted"]
    assert lie.status.value == "verification_failed"
    assert rows(known, "task-effects", task="task-big-credit") == []


@pytest.mark.usefixtures("graph_backend")
def test_evidence_chain_behind_a_fact(known: Known) -> None:
    fact = "run:task-cited/p-cited/0"
    got = rows(known, "evidence-chain", fact=fact)
    assert len(got) == 1
    row = got[0]
    assert (row["subject"], row["predicate"], row["value"]) == ("acct-3", "kycStatus", "passed")
    assert row["status"] == C + "Unverified" and row["source"] == "kyc-service"
    assert row["proposal"] == node("proposal", "run:task-cited/p-cited")[1:-1]
    assert row["evidence"] == iri("evidence", known.evidence_ref)
    assert row["collectedBy"] == iri("agent", "kyc-service")
    assert known.cited.decision is not None
    assert row["decision"] == iri("decision", known.cited.decision.id)
    assert row["verdict"] == C + "Allow"


@pytest.mark.usefixtures("graph_backend")
def test_unverified_actions_and_aborted_transitions(known: Known) -> None:
    lie = known.outcome("tool lies about success")
    assert lie.action and lie.transition and lie.transition.aborted_at
    got = rows(known, "unverified-actions")
    status = {e.payload["verification"]["execution_id"]: e.payload["verification"]["status"]
              for e in known.events if e.kind == "verification.recorded"}
    aborted = {e.payload["action_id"] for e in known.events if e.kind == "transition.aborted"}
    executed = {e.payload["observation"]["execution_id"] for e in known.events
                if e.kind == "action.observed" and e.payload.get("executed_at")}
    expected = {a for a in executed if status.get(a) != "verified" or a in aborted}
    assert {r["action"] for r in got} == {iri("action", a) for a in expected}
    assert lie.action.id in expected
    got = [r for r in got if r["action"] == iri("action", lie.action.id)]
    assert got[0]["verificationStatus"] == C + "Failed"
    assert got[0]["reason"] == lie.transition.reason
    assert got[0]["run"] == graph_iri("run:task-lie")
    assert rows(known, "unverified-actions", run="run:task-credit") == []


@pytest.mark.usefixtures("graph_backend")
def test_decisions_under_a_policy_version(known: Known) -> None:
    version = known.outcome("allowed credit").decision.policy_version  # type: ignore[union-attr]
    decided = {iri("decision", e.payload["decision"]["id"]) for e in known.events
               if e.kind == "decision.made"
               and e.payload["decision"]["policy_version"] == version}
    got = rows(known, "decisions-by-policy-version", policyVersion=version)
    assert {r["decision"] for r in got} == decided
    assert len(decided) > 5  # the demo and the additions decided under one version
    assert rows(known, "decisions-by-policy-version", policyVersion="sha256:other") == []


@pytest.mark.usefixtures("graph_backend")
def test_what_an_identity_did(known: Known) -> None:
    for who in (APPROVER, AGENT):
        expected = [e.seq for e in known.events if e.actor == who]
        got = rows(known, "identity-activity", identity=who)
        assert [int(r["seq"] or 0) for r in got] == expected
    kinds = [r["kind"] for r in rows(known, "identity-activity", identity=APPROVER)]
    assert kinds.count("approval.decided") >= 2  # the demo's close and the one added here


@pytest.mark.usefixtures("graph_backend")
def test_denied_proposals_and_their_reasons(known: Known) -> None:
    denied = known.outcome("credit above the limit")
    assert denied.decision is not None
    denied_runs = {(e.run_id, e.payload["proposal_id"]) for e in known.events
                   if e.kind == "decision.made" and e.payload["decision"]["verdict"] == "deny"}
    everything = rows(known, "denied-proposals")
    assert {r["proposal"] for r in everything} == {
        node("proposal", f"{run}/{pid}")[1:-1] for run, pid in denied_runs}
    got = rows(known, "denied-proposals", agent=AGENT)
    assert [r["proposal"] for r in got] == [node("proposal",
                                                 "run:task-big-credit/p-credit-5000")[1:-1]]
    assert [r["reason"] for r in got] == list(denied.decision.reasons)
    assert words(got[0]["policies"]) == {p.policy_id for p in denied.decision.policy_results}
    assert got[0]["agent"] == iri("agent", AGENT)
    assert rows(known, "denied-proposals", agent=APPROVER) == []


def test_policy_in_force_at_decision_time(known: Known, graph_backend: str) -> None:
    decision = known.outcome("allowed credit").decision
    assert decision is not None
    activation = next(e for e in known.events if e.kind == "policyset.activated")
    got = rows(known, "policy-in-force", decision=decision.id)
    assert len(got) == 1
    row = got[0]
    assert row["recordedVersion"] == row["inForceVersion"] == decision.policy_version
    assert activation.payload["version"] == decision.policy_version
    # Virtuoso answers a computed boolean as xsd:integer 1 / 0 (README: Virtuoso)
    assert row["matches"] == ("1" if graph_backend == "virtuoso" else "true")
    assert datetime.fromisoformat((row["activatedAt"] or "").replace("Z", "+00:00")) \
        == activation.at.astimezone(UTC)


@pytest.mark.usefixtures("graph_backend")
def test_stale_approvals_expired_unused_pending(known: Known) -> None:
    assert known.unused.approval and known.pending.approval
    unused = iri("approval", known.unused.approval.id)
    pending = iri("approval", known.pending.approval.id)
    used = {iri("approval", e.payload["approval_id"]) for e in known.events
            if e.kind == "action.intent" and e.payload.get("approval_id")}
    now = {r["approval"]: r["state"] for r in rows(known, "stale-approvals")}
    assert (now[unused], now[pending]) == ("unused", "pending")
    assert not used & set(now)  # an approval that authorized an execution is not stale
    later = (known.unused_expiry + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    after = {r["approval"]: r["state"] for r in rows(known, "stale-approvals", at=later)}
    assert (after[unused], after[pending]) == ("expired", "pending")


@pytest.mark.usefixtures("graph_backend")
def test_runs_timeline_and_graph(known: Known) -> None:
    listed = {r["run"]: r for r in rows(known, "runs")}
    assert set(listed) == {graph_iri(r) for r in {e.run_id for e in known.events}}
    for run_id in {e.run_id for e in known.events}:
        own = [e for e in known.events if e.run_id == run_id]
        proposals = {(e.payload["proposal"]["id"], e.payload.get("submission"),
                      e.payload["proposal"].get("attempt", 0))
                     for e in own if e.kind == "proposal.received"}
        row = listed[graph_iri(run_id)]
        assert (int(row["events"] or 0), int(row["proposals"] or 0)) \
            == (len(own), len(proposals)), run_id
    close_seqs = [e.seq for e in known.events if e.run_id == "run:task-close"]
    timeline = rows(known, "run-timeline", run="run:task-close")
    assert [int(r["seq"] or 0) for r in timeline] == close_seqs
    done = known.outcome("approved by user:bob (CLI)")
    waited = known.outcome("irreversible close")
    assert done.action and done.decision and waited.approval and done.transition
    graph = rows(known, "run-graph", run="run:task-close")
    edges = {(r["s"], r["p"], r["o"]) for r in graph if r["p"]}
    assert (iri("approval", waited.approval.id), C + "authorizes",
            iri("decision", done.decision.id)) in edges
    assert (iri("action", done.action.id), C + "authorizedBy",
            iri("decision", done.decision.id)) in edges
    status = {(r["s"], r["status"]) for r in graph if r["status"]}
    assert (iri("transition", done.transition.id), "Committed") in status
    assert (iri("approval", waited.approval.id), "Approved") in status


# --- the command line --------------------------------------------------------------------


@pytest.mark.usefixtures("graph_backend")
def test_cli_list_named_json_csv_and_turtle(known: Known) -> None:
    runner = CliRunner()
    home = ["--home", str(known.home)]
    listed = runner.invoke(app, ["query", "--list", "--format", "json", *home])
    assert listed.exit_code == 0, listed.output
    assert "why-allowed" in listed.output and "question" in listed.output
    origins = {q["name"]: q["origin"] for q in json.loads(listed.output)}
    assert origins["missing-facts"] == "customs.hs-router"  # from the pack's manifest
    assert origins["why-allowed"] == "builtin"
    lie = known.outcome("tool lies about success")
    assert lie.action is not None
    out = runner.invoke(app, ["query", "why-allowed", "--param", f"action={lie.action.id}",
                              "--format", "json", *home])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["head"]["vars"][0] == "action"
    assert doc["results"]["bindings"][0]["verdict"]["value"] == C + "Allow"
    csv = runner.invoke(app, ["query", "denied-proposals", "--format", "csv", *home])
    assert csv.output.splitlines()[0].startswith("agent,proposal,run,decision")
    ttl = runner.invoke(app, ["query", "--sparql", "CONSTRUCT { ?d a <urn:x:D> } WHERE "
                              "{ ?d a <https://w3id.org/cradle#Decision> }", *home])
    assert ttl.exit_code == 0 and "<urn:x:D>" in ttl.output
    table = runner.invoke(app, ["query", "task-effects", "-p", "task=task-lie", *home])
    assert table.exit_code == 0 and "task-effects (1 rows)" in table.output


@pytest.mark.usefixtures("graph_backend")
def test_cli_file_params_ask_and_refusals(known: Known, tmp_path: Path) -> None:
    runner = CliRunner()
    home = ["--home", str(known.home)]
    rq = tmp_path / "q.rq"
    rq.write_text("SELECT ?reason WHERE { ?d <https://w3id.org/cradle#reason> ?reason }")
    denied = known.outcome("credit above the limit")
    assert denied.decision is not None
    reason = denied.decision.reasons[0]
    hit = runner.invoke(app, ["query", "--file", str(rq), "-p", f"reason={reason}",
                              "--format", "tsv", *home])
    assert hit.exit_code == 0 and len(hit.output.splitlines()) == 2
    miss = runner.invoke(app, ["query", "--file", str(rq), "-p", 'reason=a"} {',
                               "--format", "tsv", *home])
    assert miss.exit_code == 0 and len(miss.output.splitlines()) == 1
    no = runner.invoke(app, ["query", "--sparql", "ASK { ?s <urn:x:none> ?o }", *home])
    assert no.exit_code == 1 and "false" in no.output
    svc = runner.invoke(app, ["query", "--sparql",
                              "SELECT * WHERE { SERVICE <http://example.org/> { ?s ?p ?o } }",
                              *home])
    assert svc.exit_code == 2 and "refused" in svc.output
    bad = runner.invoke(app, ["query", "--sparql", "SELECT * WHERE { ?s ?p }", *home])
    assert bad.exit_code == 2 and "does not parse" in bad.output
    both = runner.invoke(app, ["query", "why-allowed", "--sparql", "ASK {}", *home])
    assert both.exit_code == 2


def test_queries_dir_is_the_repository_folder() -> None:
    assert (QUERIES_DIR / "why-allowed.rq").is_file()


@pytest.mark.embedded_graph_only("holds the embedded store's lock")
def test_a_busy_store_falls_back_to_the_journal(known: Known) -> None:
    gc.collect()  # tracebacks of earlier CLI errors keep a store alive until collected
    held = OxigraphStore(known.home / "graph")  # held: the command projects the journal
    try:
        out = CliRunner().invoke(app, ["query", "runs", "--format", "csv", "--home",
                                       str(known.home)])
    finally:
        held.close()
    assert "busy" in out.output
    assert out.exit_code == 0, out.output
    with open_home_journal(known.home) as journal:
        expected = set(journal.run_ids())
    listed = [ln for ln in out.output.splitlines() if ln.startswith("https://")]
    assert {ln.split(",")[0] for ln in listed} == {graph_iri(r) for r in expected}


def test_the_guard_skips_the_parse_only_when_the_text_cannot_matter() -> None:
    from cradle_kg.graph.sparql_guard import PLAIN_SHAPE, known_shape

    plain = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"
    assert known_shape(plain, None) is PLAIN_SHAPE
    # an update keyword inside a name is no keyword (an action IRI's hex digits)
    hexed = "SELECT ?s WHERE { <urn:act%3A0addf7> ?p ?s ; <urn:dropbox> ?o }"
    assert known_shape(hexed, None) is PLAIN_SHAPE
    for update in ("PREFIX a: <urn:a>DROP ALL", "SELECT * {} ;add default to default"):
        with pytest.raises(QueryError):  # parsed, and refused (an update, or no query)
            check_query(update)
    for telling in ("SELECT ?s WHERE { SeRvIcE <http://127.0.0.1:1/> { ?s ?p ?o } }",
                    "SELECT ?s FROM <urn:g> WHERE { ?s ?p ?o }",
                    "SELECT ?s WHERE { \\u0053ERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }"):
        assert known_shape(telling, None) is not PLAIN_SHAPE
    with pytest.raises(QueryRefusedError):
        check_query("CLEAR ALL")
    with pytest.raises(QueryError):  # neither a query nor an update: refused all the same
        check_query("SELECT * WHERE { ?x ?y ?z } ; DROP ALL")
    # a query the guard did not parse still reports a syntax error as a typed error
    with pytest.raises(QueryError):
        execute(ox_store(), "SELECT ?s WHERE { ?s ?p }")


def ox_store() -> Any:
    return OxigraphStore.in_memory()


# --- pages ------------------------------------------------------------------------------


def test_a_page_is_read_strictly_and_only_with_a_size() -> None:
    assert read_page({}) is None
    assert read_page({"limit": "25"}) == Page(25, 0)
    assert read_page({"limit": "25", "offset": "50", "run": "x"}) == Page(25, 50)
    for values, said in [({"offset": "5"}, "needs `limit`"), ({"limit": "0"}, "from 1"),
                         ({"limit": "-1"}, "whole number"), ({"limit": "1e3"}, "whole number"),
                         ({"limit": " 5"}, "whole number"), ({"limit": "٣"}, "whole number"),
                         ({"limit": "9" * 40}, "whole number"),
                         ({"limit": "5", "offset": "x"}, "whole number")]:
        with pytest.raises(InputError, match=said):
            read_page(values)


def test_a_page_follows_the_query_and_is_refused_where_it_would_be_a_guess(
        tmp_path: Path) -> None:
    text = "# question: Which values?\nSELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s # by subject"
    assert paged(text, None) == text
    assert paged(text, Page(10, 20)).endswith("\nLIMIT 10 OFFSET 20\n")
    # prose in whole-line comments is no modifier; the query's own are
    prose = "# the first values, limit none\nSELECT * {}"
    assert paged(prose, Page(1)).endswith("LIMIT 1 OFFSET 0\n")
    for own in ("SELECT * {} LIMIT 1", "SELECT * { { SELECT * {} offset 2 } }",
                "SELECT ?x {} VALUES ?x { 1 }"):
        with pytest.raises(QueryError, match="cannot be paged"):
            paged(own, Page(5))
    with pytest.raises(QueryError, match="cannot be paged: it has its own `LIMIT`"):
        paged(QueryCatalog.load().get("policy-in-force").text, Page(5))
    # no named query may take a page's name for a parameter of its own
    (tmp_path / "mine.rq").write_text("# param limit: integer optional\nSELECT ?limit {}\n")
    with pytest.raises(QueryError, match="may not be named `limit`"):
        QueryCatalog.load([tmp_path])


@pytest.mark.usefixtures("graph_backend")
def test_pages_of_a_named_query_add_up_to_its_whole_answer(known: Known) -> None:
    """`runs` (ORDER BY): every page in turn, on the home's store (embedded or remote),
    gives the whole answer in the same order, once — and the CLI says where the next
    page starts."""
    q = QueryCatalog.load().get("runs")
    store = open_store(known.home)
    try:
        def answer(page: Page | None) -> list[str]:
            return [row["run"].value for row in execute(store, paged(q.text, page))]

        whole = answer(None)
        assert len(whole) >= 5
        pages = [answer(Page(2, offset)) for offset in range(0, len(whole) + 2, 2)]
    finally:
        store.close()
    assert [r for page in pages for r in page] == whole
    assert all(len(p) == 2 for p in pages[:len(whole) // 2]) and pages[-1] == []
    runner = CliRunner()
    home = ["--home", str(known.home)]
    out = runner.invoke(app, ["query", "runs", "--limit", "2", "--offset", "2", *home])
    assert out.exit_code == 0, out.output
    assert "runs (2 rows, from 3)" in out.output
    assert "the next one is `--limit 2 --offset 4`" in out.output
    last = runner.invoke(app, ["query", "runs", "--limit", "2", "--offset",
                               str(len(whole) - 1), *home])
    assert last.exit_code == 0 and "the next one" not in last.output
    alone = runner.invoke(app, ["query", "runs", "--offset", "2", *home])
    assert alone.exit_code == 2 and "`--offset` needs `--limit`" in alone.output
