"""A model server's answer is read within a bound, as a tool's and a graph store's are.

Finding (twentieth attack review): a workflow's model step calls the OpenAI-compatible
server of ``--base-url`` — a service the home does not own, whose output the README lists
as untrusted — and ``OpenAICompatibleClient`` read its answer whole, decoding whatever
compression it chose, then journaled it whole in ``model.called`` (the envelope and the
content: twice its size), up to two attempts a step. A server answering 20 MiB of
content grew the journal by ~40 MiB a call; the same answer gzip-compressed is 20 KB on
the wire. Tools' answers are bounded by ``max_output_bytes`` (``test_33``) and a remote
graph store's by a decoded-size cap (``test_83``); a model's was not.

Now the client asks for an uncompressed answer and reads at most 16 MiB of it (and all
of it within the client's timeout of its headers): past that, or in an encoding it did
not ask for, the call is a ``ModelError`` — the step fails ``model_unavailable`` (its
reservation stays charged, as for any failed call), nothing of the answer journaled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import (
    ChatMessage,
    Engine,
    ModelError,
    ModelRequest,
    OpenAICompatibleClient,
)
from cradle_kg.workflow.examples import invoice_triage

from ..workflow.recorded_server import RecordedChatServer, completion

BIG = "x" * (20 << 20)
REQUEST = ModelRequest(model="m", messages=(ChatMessage(role="user", content="hi"),),
                       schema_name="T", response_schema={})
MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay 5.", "account": "acct-1",
           "amount": 5}


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_an_answer_past_the_bound_is_a_model_error(gzipped: bool) -> None:
    with RecordedChatServer([completion(BIG)], gzipped=gzipped).running() as url:
        client = OpenAICompatibleClient(url)
        try:
            with pytest.raises(ModelError) as refused:  # before: 20 MiB of content read
                client.complete(REQUEST)
        finally:
            client.close()
    assert "16777216 bytes" in refused.value.message or "encoding" in refused.value.message


def test_a_model_step_journals_no_oversized_answer(home: Path) -> None:
    with Runtime(home, graph_sync=False) as rt, \
            RecordedChatServer([completion(BIG), completion(BIG)]).running() as url:
        client = OpenAICompatibleClient(url)
        try:
            status = Engine(rt, client=client).start(invoice_triage(), MESSAGE)
        finally:
            client.close()
        sizes = [len(str(e.payload)) for e in rt.journal.events(run_id=status.run_id)]
    assert status.status == "failed", status  # model_unavailable
    assert max(sizes) < 1 << 20, max(sizes)  # before: two model.called of ~40 MiB each
