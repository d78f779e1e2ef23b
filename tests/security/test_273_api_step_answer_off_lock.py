"""An approver's answer to a human step that walks into a slow step holds no other identity.

Finding (after ``test_272``): ``POST /api/steps/{run}/{step}/decide`` answers the step and
walks the run on — its next tool step runs there and then — under the JSON API's one lock.
A workflow of mallory's whose step after a person's review calls a tool that answers late
(here 30 s) held every identity's reads and writes for all of it once the person answered:
the other agent's ``GET /api/runs`` waited until the tool had answered.

Now the answer runs outside the API's lock (the journal writes it only over the events it
was decided on, ``test_32``, as across processes), on the approver's own threads.

``test_271``'s home and slow tool; a workflow of mallory's: a review, then the tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import Server

from .mcp_http import MALLORY, token_for
from .test_271_api_calls_per_identity import FLOW, served_while_held, serving

#: test_271's workflow with a person's review before its slow step
REVIEWED = FLOW.replace("workflow: slow", "workflow: reviewed").replace("steps:\n", """steps:
  - id: review
    kind: human
    question: "Wait for {n}?"
    answers: [go, stop]
    inputs: {n: input.n}
""").replace("    inputs: {n: input.n}\n    input:", """    when: {ref: review.answer, equals: go}
    inputs: {n: input.n}
    input:""")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path, {"workflows/reviewed.yaml": REVIEWED}) as srv:
        yield srv


def test_an_answer_that_walks_into_a_slow_step_leaves_the_others_served(
        served: Server) -> None:
    assert served.home is not None
    started = httpx.post(
        served.url + "/api/workflows/reviewed/runs", json={"input": {"n": 1}}, timeout=60,
        headers={"Authorization": f"Bearer {token_for(served.home, MALLORY)}"})
    assert started.status_code == 200, started.text
    run = started.json()["run_id"]
    answered = served_while_held(served, f"/api/steps/{run}/review/decide",
                                 body={"answer": "go"})
    assert answered.json()["status"] == "completed", answered.text
