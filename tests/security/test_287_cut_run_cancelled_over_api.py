"""A run cut before its human step (its process died) held its agent's quota until a person
walked it on, and could not be ended over the JSON API.

Finding (left open by ``test_251``): a run whose process died in a step before its human
one counts from its start (``starting_runs``) until it reaches its human step or ends;
the only way to release it was ``resume``, which walks it on — runs the rest of its steps,
tool calls included, and puts its review in the inbox — or, when its workflow file was
edited since, nothing at all (``test_169``: it cannot be walked). At
``waiting_per_agent: 1`` the agent's starts stayed refused.

Now an approver's token ends it: ``POST /api/workflows/runs/{run}/cancel`` with a
``reason``. Its ``starting_runs`` row goes in the same append (a run's end deletes it, as
ever), the agent starts again, and the cut run is never walked on (409 ``run_cancelled``).
An agent's token is refused (403) and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests.security.gated_flow import TESTER, start
from tests.security.homes import json_api
from tests.security.test_251_run_stuck_before_its_human_step import (
    _starts,
    _walked,
    cut_run,
)

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def test_a_run_cut_before_its_human_step_is_cancelled_over_the_api(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, token = cut_run(tmp_path, monkeypatch)
    agent = {"Authorization": f"Bearer {token}"}
    with _walked(home) as rt, json_api(rt) as client:
        (cut,) = _starts(rt)
        assert rt.journal.waiting(TESTER) == 1  # its start, on its way to a person
        assert start(client, token, "second").status_code == 429
        head = rt.journal.head()

        url = f"/api/workflows/runs/{cut}/cancel"
        mine = client.post(url, headers=agent, json={"reason": "mine"})
        assert mine.status_code == 403, mine.text  # an agent's token: not a person's
        assert client.post(url, headers=BOB, json={}).status_code == 422  # no reason
        assert rt.journal.head() == head

        done = client.post(url, headers=BOB, json={"reason": "the batch was withdrawn"})
        assert done.status_code == 200, done.text  # before: 404, no such route
        assert done.json()["status"] == "cancelled" and done.json()["by"] == APPROVER
        assert rt.journal.waiting(TESTER) == 0
        second = start(client, token, "second")
        assert second.status_code == 200 and second.json()["status"] == "waiting_human"

        head = rt.journal.head()
        walked = client.post(f"/api/workflows/runs/{cut}/resume", headers=BOB)
        assert walked.status_code == 409, walked.text
        assert walked.json()["detail"]["error"] == "run_cancelled"
        again = client.post(url, headers=BOB, json={"reason": "again"})
        assert again.status_code == 409 and again.json()["detail"]["error"] == "run_cancelled"
        assert rt.journal.head() == head  # nothing written by either
        status = client.get(f"/api/workflows/runs/{cut}", headers=BOB).json()
        assert status["ended"]["code"] == "cancelled", status
        assert status["why"] == [f"workflow cancelled by `{APPROVER}`: the batch was withdrawn"]
        assert rt.journal.verify().intact
