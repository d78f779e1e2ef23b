"""``GET /api/evidence/{ref}`` tells an agent who added a blob only of its own uploads.

Finding (twenty-first review, listed as found and left in the twentieth): the record of a
blob — who uploaded it, when, as what, for which run and which action — was answered to
any valid token that knew its hash, an agent's too. A blob's address is its content's
hash: an agent that holds a document (an invoice it was sent, a text it cites) learned
that another agent, or another agent's host application, uploaded it, when, and for
which of its runs and actions.

Now a person's token reads every upload of a blob, as before; an agent's token (or its
host's) reads the uploads it or its host made and those for a run it reads (its own, one
of its namespace): the others are left out of the record, and a blob with none of those
is 404 with the words of a blob that is not there — not 403, which would say it is.

A real ``cradle-kg serve`` on 127.0.0.1, two agents (each with a token), one agent's host
application, a person.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, MALLORY, token_for, two_agent_home

OWN_RUN = f"run:{AGENT}/case-1"


def _get(url: str, token: str, ref: str) -> httpx.Response:
    return oneshot.get(f"{url}/api/evidence/{ref}", timeout=60,
                       headers={"Authorization": f"Bearer {token}"})


def _put(url: str, token: str, body: bytes, **params: str) -> str:
    done = oneshot.post(f"{url}/api/evidence", content=body, params=params, timeout=60,
                        headers={"Authorization": f"Bearer {token}"})
    assert done.status_code == 200, done.text
    return str(done.json()["ref"])


def _by(answer: httpx.Response) -> list[Any]:
    assert answer.status_code == 200, answer.text
    return [(a["by"], a["for_run"]) for a in answer.json()["added"]]


def test_an_agent_reads_who_added_a_blob_only_of_its_own_uploads(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home):  # its journal made
        pass
    agent, other, bob = token_for(home, AGENT), token_for(home, MALLORY), DEMO_TOKENS[APPROVER]
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    try:
        invoice = _put(srv.url, agent, b"invoice 4471: 300 EUR", run=OWN_RUN, action="k-1")
        statement = _put(srv.url, bob, b"statement: 4471 paid once", run=OWN_RUN)
        unknown = "sha256:" + "0" * 64

        # the person reads every record; the agent, its own and its run's
        for ref, said in ((invoice, [(AGENT, OWN_RUN)]), (statement, [(APPROVER, OWN_RUN)])):
            assert _by(_get(srv.url, bob, ref)) == said
            assert _by(_get(srv.url, agent, ref)) == said

        # another agent: as for a blob that is not there (before: 200, who, when, which run)
        gone = _get(srv.url, other, unknown)
        assert gone.status_code == 404, gone.text

        def hidden(ref: str) -> None:
            answer = _get(srv.url, other, ref)
            assert answer.status_code == 404, answer.text
            assert answer.json()["detail"]["error"] == gone.json()["detail"]["error"]
            assert answer.json()["detail"]["message"] == gone.json()["detail"]["message"] \
                .replace(unknown, ref)
            assert AGENT not in answer.text and OWN_RUN not in answer.text

        hidden(invoice)
        hidden(statement)

        # the agent's host application (its token replaces the agent's): its own upload
        # and its agent's
        host = token_for(home, AGENT, host=True)
        ticket = _put(srv.url, host, b"ticket 88: refund asked")
        assert _by(_get(srv.url, host, ticket)) == [(f"host:{AGENT}", None)]
        assert _by(_get(srv.url, host, invoice)) == [(AGENT, OWN_RUN)]
        assert _by(_get(srv.url, bob, ticket)) == [(f"host:{AGENT}", None)]
        hidden(ticket)

        # the same bytes uploaded by the other agent: it reads its own upload alone
        assert _put(srv.url, other, b"invoice 4471: 300 EUR") == invoice
        assert _by(_get(srv.url, other, invoice)) == [(MALLORY, None)]
        assert _by(_get(srv.url, host, invoice)) == [(AGENT, OWN_RUN)]
        assert _by(_get(srv.url, bob, invoice)) == [(AGENT, OWN_RUN), (MALLORY, None)]
    finally:
        stop_server(srv)
