"""An approval's expiry is a time a date holds in UTC; one journaled before does not stop
the graph.

Finding: ``POST /api/approvals/{id}/approve`` (and ``approvals approve --until``,
``Runtime.decide_approval``) took ``{"until": "9999-12-31T23:59:59-05:00"}`` — "never
expires", written by an approver west of Greenwich — and journaled it: a valid ISO-8601
time with an offset, in the future. In UTC it is ``10000-01-01T04:59:59``, past the last
time a Python date (and an ``xsd:dateTime`` the stores hold) can be, and projecting the
``approval.decided`` event converts it to UTC: ``OverflowError``. So, from one approval:

* the approved irreversible action ran (the account was closed, the verifier read it
  closed), then the commit-time integrity check — which projects the run — raised: the
  transition was aborted, the run recorded ``failed`` and a human task opened saying "the
  state of the target is unknown", while the approver got a 200;
* every later catch-up of the graph raised at that event, for good (the journal is
  append-only): ``/sparql`` answered 500 "the graph could not catch up with the journal"
  to everyone, and ``graph sync``, ``graph rebuild``, ``validate --all``, ``export``,
  ``approvals list`` and ``inbox`` ended ``error: unexpected OverflowError``.

Now an expiry whose UTC form no date holds is refused like a naive one (``test_38``): a 422
naming ``until``, one ``error:`` line on the command line, nothing journaled, the approval
still waits. A journal that already holds one projects that expiry as its text (as a
number no store holds is), so the graph catches up again, and ``validate --all`` reports
that expiry as no ``xsd:dateTime`` instead of ending.

A real ``cradle-kg serve`` on 127.0.0.1 and an approver's token; the real command line.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.records import ApprovalStatus
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import start_server, stop_server
from .mcp_http import two_agent_home, waiting_close

NEVER_WEST = "9999-12-31T23:59:59-05:00"
HEADERS = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"


def _status(home: Path, approval: str) -> tuple[str, int]:
    with Runtime(home, graph_sync=False) as rt:
        return (str(rt.approvals.get(approval).approval.status),
                sum(1 for _ in rt.journal.events()))


def test_the_api_refuses_an_expiry_past_what_a_date_holds(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    approval, before = waiting_close(home)
    log = tmp_path / "server.log"
    srv = start_server(["--home", str(home)], log, home)
    try:
        url = f"{srv.url}/api/approvals/{approval}/approve"
        late = oneshot.post(url, headers=HEADERS, json={"until": NEVER_WEST}, timeout=60)
        # before: 200, the close ran and was recorded `failed`, and /sparql answered 500
        assert late.status_code == 422, (late.status_code, late.text[:300])
        assert "until" in late.text and "9999-12-31T23:59:59Z" in late.text
        assert _status(home, approval) == ("pending", before)  # nothing journaled

        ok = oneshot.post(url, headers=HEADERS, json={"until": "9999-12-31T18:00:00-05:00"},
                        timeout=60)
        assert ok.status_code == 200, ok.text
        assert ok.json()["outcome"]["status"] == "executed"
        sparql = oneshot.post(f"{srv.url}/sparql", data={"query": COUNT}, timeout=60,
                            headers={"Accept": "application/sparql-results+json"})
        assert sparql.status_code == 200, sparql.text
    finally:
        stop_server(srv)
    assert "Traceback" not in log.read_text(errors="replace")


def test_the_cli_and_python_refuse_it(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    approval, before = waiting_close(home)
    done = run_cli("approvals", "approve", approval, "--as", APPROVER, "--until", NEVER_WEST,
               "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error:") and "`until`" in done.stderr
    assert _status(home, approval) == ("pending", before)
    with Runtime(home, graph_sync=False) as rt, pytest.raises(InputError, match="until"):
        rt.decide_approval(approval, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, once=False,
                           until=datetime.fromisoformat("9999-12-31T23:00:00-23:59"))
    assert _status(home, approval) == ("pending", before)


def test_a_journal_that_holds_one_still_projects(tmp_path: Path) -> None:
    """An older version journaled such an expiry: its graph catches up again."""
    home = two_agent_home(tmp_path / "home")
    approval, _ = waiting_close(home)
    with Runtime(home, graph_sync=False) as rt:  # what the API wrote before the check
        state, _seen = rt.approvals.read(approval)
        rt.journal.append([rt.approvals.decision_event(
            state, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
            status=ApprovalStatus.APPROVED, now=rt.clock(), once=False,
            until=datetime.fromisoformat(NEVER_WEST))])
    for command in (["graph", "sync"], ["approvals", "list"], ["inbox"]):
        done = run_cli(*command, "--home", str(home))
        # before: `error: unexpected OverflowError: date value out of range`, every time
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    # the graph says what the journal holds: an expiry that is no xsd:dateTime (exit 1, a
    # report — before: exit 2, `error: unexpected OverflowError`)
    done = run_cli("validate", "--all", "--home", str(home))
    assert done.returncode == 1 and "expiresAt" in done.stdout, (done.stdout, done.stderr)
    done = run_cli("query", "--home", str(home), "--format", "json", "--sparql",
               "SELECT ?e WHERE { GRAPH ?g { ?a <https://w3id.org/cradle#expiresAt> ?e } }")
    assert done.returncode == 0 and NEVER_WEST in done.stdout, (done.stdout, done.stderr)
