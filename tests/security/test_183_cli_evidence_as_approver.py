"""``evidence add --as`` a person needs that person's token.

Finding (twelfth attack review): since ``test_175`` and ``test_180`` who collected a blob
decides whether it is evidence — a person's upload is, an agent's is not. Over the JSON API
the collector is the token's identity; but ``cradle-kg evidence add FILE --as WHO`` took any
identity of the home at its word, a person's too, with no token: a process with the
command line and the home (an agent given a shell beside its home, as a coding agent is, or
a job sharing the operator's account) journaled its own text as collected by ``user:bob``
and cited it — the call that asks for documents someone accountable produced executed
unattended. Every other command that acts as a person asks for their token (``approvals
approve``, ``tasks resolve``, ``workflow decide``).

Now ``--as`` an approver needs the approver's token (``--token`` or
``$CRADLE_APPROVER_TOKEN``), checked as an approval's: without it, or with a wrong one, one
``error:`` line, exit 1, nothing stored or journaled. ``--as`` an agent needs none, as
before (its uploads are no evidence); with Bob's token the upload is Bob's and counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import sha256_bytes
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS

from ..inprocess import run_cli
from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")


def _collected(home: Path) -> list[str]:
    rt = _runtime(home)
    try:
        return [e.actor for e in rt.journal.events() if e.kind == "evidence.collected"]
    finally:
        rt.close()


def test_adding_evidence_as_a_person_needs_their_token(home: Path, tmp_path: Path) -> None:
    docs = []
    for n, text in enumerate((b"I checked the invoice, it's fine", b"receipt: all good")):
        (tmp_path / f"doc{n}").write_bytes(text)
        docs.append(tmp_path / f"doc{n}")
    for token in (None, "not-bobs-token"):
        added = run_cli("evidence", "add", str(docs[0]), "--as", APPROVER, "--home",
                        str(home), env={"CRADLE_APPROVER_TOKEN": token})
        assert added.returncode == 1, (added.stdout, added.stderr)  # before: 0
        assert "token" in added.stderr and "Traceback" not in added.stderr, added.stderr
    assert _collected(home) == []  # nothing journaled
    assert not any((home / "evidence").rglob("*")) if (home / "evidence").exists() else True

    # as an agent: no token needed, and no evidence
    added = run_cli("evidence", "add", str(docs[0]), "--as", AGENT, "--home",
                    str(home), env={"CRADLE_APPROVER_TOKEN": None})
    assert added.returncode == 0, added.stderr
    # with Bob's token the upload is Bob's, and evidence
    for doc in docs:
        added = run_cli("evidence", "add", str(doc), "--as", APPROVER, "--home", str(home),
                        env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
        assert added.returncode == 0, added.stderr
    assert _collected(home) == [AGENT, APPROVER, APPROVER]
    rt = _runtime(home)
    try:
        refs = [sha256_bytes(d.read_bytes()) for d in docs]
        out = rt.submit(_call("p-docs", "test.two_docs", refs))
        assert out.status.value == "executed", out.reasons
        assert _executions(rt) == 1
    finally:
        rt.close()
