"""Two writers uploading at once no longer pass the evidence quotas by one each.

Finding (left open since ``test_46``; the README said it: "uploads racing from several
processes on one journal … may pass it by one each"): an identity's evidence uploads of the
last hour (``input_limits.evidence_uploads_per_hour``, ``evidence_bytes_per_hour``) were
counted from the journal before the append, outside its writer's lock. Two processes on
one journal (two ``serve`` workers, a ``serve`` and ``cradle-kg evidence add``) each
counted the agent's uploads, each found room for one more, and each stored and journaled
its blob: at a limit of one upload (or of 1,500 bytes, two blobs of 1,000), two were
journaled — the limit passed by one per writer.

Now the count is made again by the journal itself, in the append's serialised transaction
(``storage.UploadCap`` on the ``evidence.collected`` event, as ``WaitingCap`` holds
``waiting_per_agent``), on SQLite and PostgreSQL: the second upload is refused (429
``quota_exceeded`` naming the key), nothing of it journaled (its blob, named by no
event, is no evidence).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import sha256_bytes
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.evidence import COLLECTED
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.mark.parametrize(("key", "limit"), [("evidence_uploads_per_hour", 1),
                                            ("evidence_bytes_per_hour", 1500)])
def test_two_writers_uploading_at_once_keep_the_quota(
        ledger_home: Path, monkeypatch: pytest.MonkeyPatch, key: str, limit: int) -> None:
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={key: limit})}))
    import cradle_kg.evidence as evidence

    with Runtime(ledger_home, graph_sync=False) as first, \
            Runtime(ledger_home, graph_sync=False) as second, \
            json_api(first) as one, json_api(second) as other:
        headers = {"Authorization": "Bearer "
                   + issue_agent_token(first.home, first.config, AGENT)}
        mine, theirs = os.urandom(1000), os.urandom(1000)
        counted = evidence.quota_refusal
        answers: list[Any] = []
        asked: list[bool] = []

        def race(*args: Any, **kwargs: Any) -> Any:
            found = counted(*args, **kwargs)  # the first writer found room for one …
            if not asked:  # … and the other uploads in between, on the other writer
                asked.append(True)
                answers.append(other.post("/api/evidence", headers=headers, content=theirs))
            return found

        monkeypatch.setattr(evidence, "quota_refusal", race)
        out = one.post("/api/evidence", headers=headers, content=mine)
        monkeypatch.setattr(evidence, "quota_refusal", counted)

        assert answers[0].status_code == 200, answers[0].text
        assert out.status_code == 429, out.text  # before: 200, a second upload journaled
        assert out.json()["detail"]["error"] == "quota_exceeded", out.text
        assert f"input_limits.{key}" in out.json()["detail"]["hint"], out.text
        uploads = [e.subject for e in first.journal.events()
                   if e.kind == COLLECTED and e.actor == AGENT]
        assert uploads == [sha256_bytes(theirs)]  # before: both
        # its blob stays, named by no event: no evidence (removing it could remove the
        # same bytes another writer stored in that instant)
        assert first.evidence.exists(sha256_bytes(theirs))


def test_a_refused_upload_keeps_a_blob_stored_before(ledger_home: Path) -> None:
    """A refused upload removes no blob: the same bytes uploaded earlier (by anyone)
    stay."""
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(
            update={"evidence_uploads_per_hour": 1})}))
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        headers = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        body = os.urandom(500)
        assert client.post("/api/evidence", headers=headers, content=body).status_code == 200
        again = client.post("/api/evidence", headers=headers, content=body)
        assert again.status_code == 429, again.text
        assert rt.evidence.exists(sha256_bytes(body))
