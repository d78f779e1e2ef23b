"""A home may require every upload to name its run (``evidence_requires_run``).

Finding (left open by ``test_199``, ``test_247``): an upload naming no run counts in any
run. Which uploads that concerns, from the code: an agent's upload is never evidence
(``test_175``, ``test_180``, ``test_196``: the collector's role is journaled and an
agent's is passed over), so making agents name their run would change nothing that counts;
what counts unbound is a person's or the host's upload — the documented ``evidence add``
flow, which existing homes use, so refusing it by default would break them.

The compatible tightening: ``config.json``'s ``evidence_requires_run`` (false by default:
as before). Set, an upload naming no run is refused at every door (422 ``input_error``,
``evidence add`` exits 2, ``Runtime.add_evidence`` raises ``InputError``; nothing stored
or journaled), and an upload journaled before with no run counts in no run
(``evidence_other_run``, "collected for another run or for none").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from tests.conftest import make_config
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

RUN = "run:task-case"


def _in_run(pid: str, refs: list[str]) -> dict[str, object]:
    call = _call(pid, "test.two_docs", refs)
    call["task_id"] = "task-case"
    return call


def test_a_home_may_require_uploads_to_name_their_run(home: Path) -> None:
    rt = _runtime(home)  # the default: an upload naming no run counts in any run
    try:
        loose = [rt.add_evidence(t, kind="invoice", collector="user:alice")
                 for t in (b"invoice 1", b"receipt 1")]
        assert rt.submit(_in_run("p-before", loose)).status.value == "executed"
    finally:
        rt.close()

    strict = make_config(evidence_requires_run=True)
    rt = _runtime(home, config=strict)
    try:
        out = rt.submit(_in_run("p-after", loose))  # the same two, uploaded with no run
        assert out.decision is not None
        assert list(out.decision.reason_codes) == ["evidence_other_run"], out
        assert sum("for another run or for none" in r for r in out.reasons) == 2, out
        assert _executions(rt) == 1  # before: 2

        before = rt.journal.head()
        with pytest.raises(InputError, match="evidence_requires_run"):
            rt.add_evidence(b"invoice 2", kind="invoice", collector="user:alice")
        assert rt.journal.head() == before

        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        with json_api(rt) as client:
            bad = client.post("/api/evidence", content=b"invoice 3", headers=bob)
            assert bad.status_code == 422, bad.text  # before: 200
            assert bad.json()["detail"]["error"] == "input_error"
            assert rt.journal.head() == before
            bound = [client.post("/api/evidence", content=t, headers=bob,
                                 params={"run": RUN}).json()["ref"]
                     for t in (b"invoice 4", b"receipt 4")]
        assert rt.submit(_in_run("p-bound", bound)).status.value == "executed"
        rt.home.root.joinpath("api-tokens.json").unlink(missing_ok=True)
    finally:
        rt.close()

    (home / "config.json").write_text(strict.model_dump_json())
    (home.parent / "doc").write_bytes(b"a delivery note")
    env = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    res = run_cli("evidence", "add", str(home.parent / "doc"), "--as", APPROVER,
                  "--home", str(home), env=env)
    assert res.returncode == 2 and "evidence_requires_run" in res.stderr, res  # before: 0
    res = run_cli("evidence", "add", str(home.parent / "doc"), "--as", APPROVER, "--run",
                  RUN, "--home", str(home), env=env)
    assert res.returncode == 0, res.stderr
