"""A served home shows a secret argument as its mask: ``/sparql``, the named queries, the
inbox, an approval's action, the run view — and the CLI's inbox and ``approvals show``.

Finding (seventh attack review, part three): what `test_131` found in the graph reached
everyone who reads a served home — ``/sparql`` needs no token by default — and the
approval an injected password asked for showed the password itself to approvers, and to
the asking agent, wherever its action is shown: ``GET /api/inbox``,
``GET /api/approvals/{id}``, the run view's inbox (``GET /api/runs/{run}/view``),
``cradle-kg inbox`` and ``cradle-kg approvals show``. Measured before the fix on this
home: the password 5 times in ``/sparql``'s answer (2 argument values, 3 quotes), 3 in the
named query ``run-lineage``, once in each of the inbox, the approval's view and the run
view.

Now each of them shows ``**********`` under the argument's name: a person deciding sees
that a password is set, and for whom, not which (the journal keeps it, and the tool runs
with it once approved).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import OutcomeStatus
from tests import oneshot
from tests.inprocess import run_cli
from tests.security.test_131_secret_arguments_graph import (
    ASKED,
    INJECTED,
    _submit,
    password_set,
)
from tests.server.conftest import Server, start_server, stop_server

MASK = "**********"
APPROVER_HEADERS = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def _leaks(text: str) -> list[str]:
    return [s for s in (ASKED, INJECTED) if s.lower() in text.lower()]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, str]]:
    home = tmp_path_factory.mktemp("secrets") / "home"
    rt = password_set(home)
    try:
        assert _submit(rt, 2, "read_email", {}).status is OutcomeStatus.EXECUTED
        waiting = _submit(rt, 3, "set_password", {"user": "bob", "new_password": INJECTED})
        assert waiting.status is OutcomeStatus.AWAITING_APPROVAL
        approval_id = waiting.approval.id
    finally:
        rt.close()
    srv = start_server(["--home", str(home)], tmp_path_factory.mktemp("log") / "serve.log",
                       home)
    try:
        yield srv, home, approval_id
    finally:
        stop_server(srv)


def test_the_endpoint_and_the_named_queries_show_the_mask(served: Any) -> None:
    srv, _, _ = served
    everything = "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    answer = oneshot.post(srv.sparql, data={"query": everything},
                        headers={"Accept": "application/sparql-results+json"}, timeout=30)
    assert answer.status_code == 200
    assert _leaks(answer.text) == []
    assert answer.text.count(MASK) >= 4  # the two arguments, and the quotes
    lineage = oneshot.get(srv.url + "/queries/run-lineage", params={"run": "run:s"},
                        headers={"Accept": "application/sparql-results+json"}, timeout=30)
    assert lineage.status_code == 200 and "new_password" in lineage.text
    assert _leaks(lineage.text) == []


def test_an_approval_shows_its_action_with_the_secret_masked(served: Any) -> None:
    srv, _, approval_id = served
    for path in ("/api/inbox", f"/api/approvals/{approval_id}", "/api/runs/run:s/view",
                 "/api/runs", "/api/runs/run:s", "/api/approvals"):
        answer = oneshot.get(srv.url + path, headers=APPROVER_HEADERS, timeout=30)
        assert answer.status_code == 200, path
        assert _leaks(answer.text) == [], path
    shown = oneshot.get(srv.url + f"/api/approvals/{approval_id}", headers=APPROVER_HEADERS,
                      timeout=30).json()
    assert shown["action"]["arguments"] == {"user": "bob", "new_password": MASK}


def _cli(home: Path, *args: str) -> str:
    done = run_cli(*args, "--home", str(home))  # what it prints: the command, in process
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_inbox_and_approval_show_the_mask(served: Any) -> None:
    _, home, approval_id = served
    inbox = json.loads(_cli(home, "inbox", "--format", "json"))
    assert _leaks(json.dumps(inbox)) == [] and MASK in json.dumps(inbox)
    shown = json.loads(_cli(home, "approvals", "show", approval_id))
    assert shown["action"]["arguments"]["new_password"] == MASK
    assert _leaks(_cli(home, "inbox")) == []
