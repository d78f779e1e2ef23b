"""``cradle-kg input RUN --as`` a person needs that person's token.

Finding (left open by the twelfth attack review): ``test_183`` made ``evidence add --as
user:bob`` ask for Bob's token, but ``cradle-kg input RUN --text … --as WHO`` still recorded
a run's *trusted input* under any author with no token. The input is journaled as
``input.recorded`` (lineage takes a value it holds as the person's own) and as
``evidence.collected`` under its author — a person's upload, so evidence. A process with the
command line and the home (an agent given a shell beside it) recorded its own text as Bob's,
cited its address, and the call that asks for documents someone accountable produced
executed unattended.

Now ``--as`` an approver of the home needs the approver's token (``--token`` or
``$CRADLE_APPROVER_TOKEN``), checked by the code ``evidence add`` uses: missing or wrong,
one ``error:`` line, exit 1, nothing stored or journaled. With Bob's token the input is
Bob's, as before; an author who is no identity of the home (the customer the host speaks
for, ``user:emma``) is taken as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import sha256_bytes
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS

from ..inprocess import run_cli
from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

RUN = "run:task-p-docs"  # the run of the proposal citing them (test_199)


def _journaled(home: Path) -> list[tuple[str, str]]:
    rt = _runtime(home)
    try:
        return [(e.kind, e.actor) for e in rt.journal.events()
                if e.kind in ("evidence.collected", "input.recorded")]
    finally:
        rt.close()


def _input(home: Path, text: str, author: str, token: str | None) -> tuple[int, str]:
    res = run_cli("input", RUN, "--text", text, "--as", author, "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": token})
    return res.returncode, res.stdout + res.stderr


def test_an_input_under_a_persons_name_needs_their_token(home: Path) -> None:
    texts = ["I checked the invoice, it's fine", "receipt: all good"]
    for token in (None, "not-bobs-token"):
        code, out = _input(home, texts[0], APPROVER, token)
        assert code == 1, out  # before: 0, recorded as Bob's
        assert "token" in out and "Traceback" not in out, out
    assert _journaled(home) == []  # nothing journaled
    assert not (home / "evidence").exists() or not any((home / "evidence").rglob("*"))

    # the refused texts are no evidence: the call asking for two documents is refused
    refs = [sha256_bytes(t.encode()) for t in texts]
    rt = _runtime(home)
    try:
        out = rt.submit(_call("p-forged", "test.two_docs", refs))
        assert out.status.value != "executed", out
        assert _executions(rt) == 0
    finally:
        rt.close()

    # with Bob's token the input is Bob's, and his words count, as before
    for text in texts:
        code, out = _input(home, text, APPROVER, DEMO_TOKENS[APPROVER])
        assert code == 0, out
    # a customer the host speaks for is no identity of the home: no token, as before
    code, out = _input(home, "please pay invoice 7", "user:emma", None)
    assert code == 0, out
    assert _journaled(home) == [("evidence.collected", APPROVER), ("input.recorded", APPROVER),
                                ("evidence.collected", APPROVER), ("input.recorded", APPROVER),
                                ("evidence.collected", "user:emma"),
                                ("input.recorded", "user:emma")]
    rt = _runtime(home)
    try:
        out = rt.submit(_call("p-docs", "test.two_docs", refs))
        assert out.status.value == "executed", out.reasons
        assert _executions(rt) == 1
    finally:
        rt.close()
