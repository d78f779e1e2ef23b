"""The action's digest binds a secret argument through a keyed hash: a guess confirms nothing.

Finding (seventh attack review, part three, found and not fixed in ``test_131`` …
``test_134``): an action's ``input_hash`` — its approval's ``action_digest``, the graph's
``cradle:inputHash`` and ``cradle:actionDigest``, the inbox's ``digest`` — was an unsalted
sha256 over the canonical tool, target, arguments, environment and dry-run flag, the value
of an argument the tool declares secret included. Whoever reads the graph (``/sparql`` has
no token by default) and knows the other arguments confirmed a guessed password offline
(measured: 100,002 guesses against a home's exported graph in 0.3 s of Python). Withholding
the digests would not have closed it: the action's id (``act:<32 hex>``, in every view,
IRI and journal subject) is derived from that digest unless the agent chose a key.

Now each secret argument's value is replaced, before hashing, by ``{"hmac-sha256": hex}``
under the journal's digest key (32 random bytes in ``journal_keys``, beside the chain):
the same for every process and host on one journal (exactly-once holds), different in
another home, copied by ``journal copy``, adopted by strict replay's scratch journal, and
never in an event, the graph, a view or an export. A tool with no secret hashes as before.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.loop.gate1.keys import derive_idempotency_key, input_hash_of
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus, Proposal
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal
from cradle_kg.storage.pg_scratch import ScratchPostgres
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.lineage.kit import pack_home
from tests.racers import ForkedPython, run_python

AGENT = "agent:admin"
APPROVER = "user:bob"
TOKEN = "bob-token-135"
ASKED = "Tr0ub4dor&3-x"
GUESSES = 20_000

MANIFEST = """id: test.digest
name: Tools with a secret argument
version: 1.0.0
core_ontology: ">=0.1.0"
description: Password tools whose new password is a SecretStr, and a tool with none.
tools:
  - tools:set_password
  - tools:note
verifiers:
  - tools:verified
"""

TOOLS = '''import os

from pydantic import BaseModel, ConfigDict, SecretStr

from cradle_kg.packs.sdk import (IdempotencyClass, PackContext, SideEffectClass, ToolCall,
                                 VerifierReport, VerifyRequest, read_back, report, tool,
                                 verifier)


class SetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    new_password: SecretStr


class NoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    text: str


class Done(BaseModel):
    done: bool


def _ran(name: str) -> None:
    log = os.environ.get("CRADLE_TEST_RAN")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(name + "\\n")


@verifier("test.digest.verified")
def verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return report(read_back(True, True), read_at=ctx.clock(), evidence={"read": "ok"},
                  source="test")


@tool("set_password", version="1", input_model=SetIn, output_model=Done,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="test.digest.verified", target_from="account:{user}", output_trust="trusted")
def set_password(ctx: PackContext, call: ToolCall) -> Done:
    _ran("set_password")
    return Done(done=bool(call.arguments.new_password.get_secret_value()))


@tool("note", version="1", input_model=NoteIn, output_model=Done,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="test.digest.verified", target_from="account:{user}", output_trust="trusted")
def note(ctx: PackContext, call: ToolCall) -> Done:
    _ran("note")
    return Done(done=True)
'''


def _home(root: Path) -> Path:
    return pack_home(root / "home", "digestpack", manifest=MANIFEST, tools=TOOLS, config={
        "agents": [{"id": AGENT, "environments": ["local", "production"]}],
        "permissions": [{"subject": AGENT}],
        "approvers": [{"id": APPROVER, "token_hash": token_hash(TOKEN)}],
        "packs": ["test.digest"]})


def _proposal(pid: str, tool: str, password: str, *, step: int = 0, user: str = "alice",
              run: str = "run:k", environment: str = "local") -> dict[str, Any]:
    """``environment="production"``: the change waits for a person (an approval)."""
    return {"id": pid, "task_id": "t", "agent_id": AGENT, "run_id": run, "step": step,
            "action": {"action_type": tool, "target": f"account:{user}",
                       "environment": environment,
                       "arguments": {"user": user, "new_password": password}}}


@pytest.fixture
def ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file each tool call of this test writes a line to (subprocesses too)."""
    log = tmp_path / "ran.txt"
    monkeypatch.setenv("CRADLE_TEST_RAN", str(log))
    return log


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.is_file() else []


def _cli(home: Path, *args: str) -> str:
    """``cradle-kg ARGS --home HOME`` run in this process (what it prints is the point, not
    the process: the processes sharing one key are raced below)."""
    done = run_cli(*args, "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _key_forms(key: bytes) -> list[str]:
    return [key.hex(), key.hex().upper(), base64.b64encode(key).decode(),
            base64.urlsafe_b64encode(key).decode().rstrip("="), key.decode("latin-1")]


def _guesses() -> Iterator[str]:
    """An attacker's list: common shapes of a password, the real one among them."""
    for n in range(GUESSES):
        if f"Tr0ub4dor&{n}-x" != ASKED:
            yield f"Tr0ub4dor&{n}-x"
    yield ASKED


def _attack(text: str, template: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The offline attack on an exported graph: the guesses whose unkeyed digest is a
    digest it shows, and those whose action id (derived from that digest) is an id it
    shows."""
    digests = set(re.findall(r"sha256:[0-9a-f]{64}", text))
    ids = set(re.findall(r"act(?::|%3A)([0-9a-f]{32})", text))
    assert digests and ids, "the graph shows the action's digest and id"
    by_digest, by_id = [], []
    for guess in _guesses():
        p = Proposal.model_validate({**template, "action": {
            **template["action"], "arguments": {**template["action"]["arguments"],
                                                "new_password": guess}}})
        digest = input_hash_of(p)
        if digest in digests:
            by_digest.append(guess)
        if derive_idempotency_key(p, digest)[5:] in ids:
            by_id.append(guess)
    return by_digest, by_id


@pytest.mark.slow
@pytest.mark.usefixtures("journal_backend")
def test_a_guess_confirms_nothing_against_the_exported_graph(tmp_path: Path,
                                                            ran: Path) -> None:
    home = _home(tmp_path)
    executed = _proposal("p0", "set_password", ASKED)
    asked = _proposal("p1", "set_password", ASKED, step=1, environment="production")
    with Runtime(home) as rt:
        assert rt.submit(executed).status is OutcomeStatus.EXECUTED
        waiting = rt.submit(asked)
        assert waiting.status is OutcomeStatus.AWAITING_APPROVAL
        payloads = "\n".join(json.dumps(e.payload) for e in rt.journal.events())
    exported = _cli(home, "export", "--format", "nquads")
    assert "actionDigest" in exported and "inputHash" in exported
    # the attack of the finding, on what anyone reading the graph has: nothing is confirmed
    # (before the fix: `[ASKED]`, from the digests and from the action ids alike)
    assert _attack(exported, executed) == ([], [])
    assert _attack(exported, asked) == ([], [])
    with open_home_journal(home) as journal:
        key = journal.stored_digest_key()
    assert key is not None and len(key) == 32
    # (the digest still binds the value: keyed, it is the journaled one)
    p = Proposal.model_validate(executed)
    keyed = input_hash_of(p, secrets=("new_password",), key=key)
    assert keyed in exported and input_hash_of(p) not in exported
    # the key itself is in no event, no export, no view
    shown = "\n".join([exported, payloads, _cli(home, "runs", "show", "run:k", "--format",
                                                 "json"), _cli(home, "inbox")])
    assert waiting.approval is not None and waiting.approval.action_digest in shown
    for form in _key_forms(key):
        assert form not in shown
    assert _calls(ran) == ["set_password"]


RACE = """
import hashlib, sys, time
from pathlib import Path
from cradle_kg.storage import open_home_journal
start = float(sys.argv[2])
with open_home_journal(Path(sys.argv[1])) as j:
    while time.time() < start:
        time.sleep(0.001)
    key = j.digest_key()
print(hashlib.sha256(key).hexdigest())
"""

SUBMIT = """
import json, sys
from pathlib import Path
from cradle_kg.loop.runtime import Runtime
with Runtime(Path(sys.argv[1]), graph_sync=False) as rt:
    out = rt.submit(json.loads(sys.argv[2]))
print(json.dumps({"status": str(out.status), "action": out.action.id,
                  "digest": out.action.input_hash}))
"""


@pytest.mark.slow
@pytest.mark.usefixtures("journal_backend")
def test_processes_on_one_journal_share_one_key_and_refuse_a_duplicate(
        tmp_path: Path, ran: Path) -> None:
    home = _home(tmp_path)
    with open_home_journal(home):  # the journal exists, without a key yet
        pass
    start = str(time.time() + 2.0)
    # processes of their own, forked from the fork server (no interpreter start each)
    racers = [ForkedPython(RACE, [str(home), start], env=os.environ, cwd=os.getcwd())
              for _ in range(4)]
    seen = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        seen.append(out.strip())
    with open_home_journal(home) as journal:
        key = journal.stored_digest_key()
    assert key is not None and set(seen) == {hashlib.sha256(key).hexdigest()}
    # one process executes the call; another, proposing the same action in the same step
    # of the run (another proposal id), derives the same digest and key: answered from the
    # record, the tool is not called again
    first = run_python(SUBMIT, [str(home), json.dumps(_proposal("p0", "set_password", ASKED))],
                       env=os.environ, cwd=os.getcwd(), timeout=180)
    assert first.returncode == 0, first.stderr
    there = json.loads(first.stdout.strip().splitlines()[-1])
    assert there["status"] == "executed"
    with Runtime(home, graph_sync=False) as rt:
        again = rt.submit(_proposal("p0-again", "set_password", ASKED))
        intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
    assert again.replayed and again.action is not None
    assert (again.action.id, again.action.input_hash) == (there["action"], there["digest"])
    assert len(intents) == 1 and _calls(ran) == ["set_password"]


def test_another_home_gives_another_digest_and_id(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # two embedded journals
    made = []
    for name in ("a", "b"):
        with Runtime(_home(tmp_path / name), graph_sync=False) as rt:
            out = rt.submit(_proposal("p0", "set_password", ASKED))
            assert out.status is OutcomeStatus.EXECUTED and out.action is not None
            made.append((out.action.id, out.action.input_hash))
    assert made[0][0] != made[1][0] and made[0][1] != made[1][1]


def test_a_tool_without_a_secret_hashes_as_before(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    raw = {"id": "p0", "task_id": "t", "agent_id": AGENT, "run_id": "run:k", "step": 0,
           "action": {"action_type": "note", "target": "account:alice",
                      "arguments": {"user": "alice", "text": "hello"}}}
    with Runtime(_home(tmp_path), graph_sync=False) as rt:
        out = rt.submit(raw)
        assert out.status is OutcomeStatus.EXECUTED and out.action is not None
        assert rt.journal.stored_digest_key() is None  # no secret: no key was needed
    p = Proposal.model_validate(raw)
    assert out.action.input_hash == input_hash_of(p)
    assert out.action.id == "act:" + derive_idempotency_key(p, input_hash_of(p))[5:]


@pytest.mark.usefixtures("journal_backend")
def test_strict_replay_and_audit_verify_hold(tmp_path: Path, ran: Path) -> None:
    home = _home(tmp_path)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(_proposal("p0", "set_password", ASKED)).status \
            is OutcomeStatus.EXECUTED
        again = rt.submit(_proposal("p0-again", "set_password", ASKED))
        assert again.replayed
        waiting = rt.submit(_proposal("p1", "set_password", ASKED, step=1,
                                      environment="production"))
        assert waiting.approval is not None
        _, resumed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                        token=TOKEN, status=ApprovalStatus.APPROVED)
        assert resumed is not None and resumed.status is OutcomeStatus.EXECUTED
    report = strict_replay(home, ["run:k"])
    assert report.runs == ["run:k"]
    _cli(home, "audit", "verify")
    assert _calls(ran) == ["set_password", "set_password"]


def test_journal_copy_carries_the_key(tmp_path: Path, postgres: ScratchPostgres, ran: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from cradle_kg.errors import JournalError
    from cradle_kg.storage import open_journal
    from cradle_kg.storage.pg_admin import copy_sqlite

    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = _home(tmp_path)
    with Runtime(home, graph_sync=False) as rt:
        waiting = rt.submit(_proposal("p1", "set_password", ASKED, environment="production"))
        assert waiting.approval is not None
        key = rt.journal.stored_digest_key()
    assert key is not None
    # a target that made a key of its own (a worker opened it while empty) is refused
    taken = postgres.journal_schema()
    with open_journal(taken) as other:
        other.digest_key()
    with pytest.raises(JournalError, match="digest key of its own") as refused:
        copy_sqlite(home / "journal.sqlite", taken)
    assert not any(form in str(refused.value) for form in _key_forms(key))
    with open_journal(taken) as other:
        assert other.head()[0] == 0 and other.stored_digest_key() != key
    # an empty one takes the key with the events: the approval, given on the copy,
    # resumes the action, whose digest is computed there as it was here
    url = postgres.journal_schema()
    copy_sqlite(home / "journal.sqlite", url)
    monkeypatch.setenv(JOURNAL_URL_ENV, url)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.journal.stored_digest_key() == key
        _, resumed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                        token=TOKEN, status=ApprovalStatus.APPROVED)
        assert resumed is not None and resumed.status is OutcomeStatus.EXECUTED, resumed
        assert resumed.action is not None
        assert resumed.action.input_hash == waiting.approval.action_digest
    assert _calls(ran) == ["set_password"]


def _unkeyed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gate 1 as it was before this fix: the secret hashed in clear (a journal written by
    an older cradle-kg)."""
    from cradle_kg.loop.gate1 import checks

    monkeypatch.setattr(checks, "input_hash_of", lambda p, **_: input_hash_of(p))


@pytest.mark.usefixtures("journal_backend")
def test_an_intent_journaled_before_the_fix_still_answers_a_duplicate(
        tmp_path: Path, ran: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    with monkeypatch.context() as old:
        _unkeyed(old)
        with Runtime(home, graph_sync=False) as rt:
            first = rt.submit(_proposal("p0", "set_password", ASKED))
    assert first.status is OutcomeStatus.EXECUTED and first.action is not None
    assert first.action.input_hash == input_hash_of(Proposal.model_validate(
        _proposal("p0", "set_password", ASKED)))  # unkeyed, as an older cradle-kg wrote it
    with Runtime(home, graph_sync=False) as rt:
        again = rt.submit(_proposal("p0-again", "set_password", ASKED))
        decided = rt.journal.last_of_kind("decision.made")
    # found under the key derived from its unkeyed digest: the recorded outcome, no call
    assert again.replayed and again.action is not None
    assert again.action.id == first.action.id
    assert decided is not None and "before secret arguments were keyed" in json.dumps(
        decided.payload)
    assert _calls(ran) == ["set_password"]
    # the chain is whole; a strict replay, which keys the secret, says why it differs
    _cli(home, "audit", "verify")
    with pytest.raises(ReplayDivergenceError, match="digested a secret argument unkeyed"):
        strict_replay(home, ["run:k"])


@pytest.mark.usefixtures("journal_backend")
def test_an_approval_given_for_an_unkeyed_digest_is_not_used(
        tmp_path: Path, ran: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    with monkeypatch.context() as old:
        _unkeyed(old)
        with Runtime(home, graph_sync=False) as rt:
            waiting = rt.submit(_proposal("p1", "set_password", ASKED,
                                          environment="production"))
    assert waiting.approval is not None
    with Runtime(home, graph_sync=False) as rt:
        _, resumed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                        token=TOKEN, status=ApprovalStatus.APPROVED)
    # fail closed, and saying why: the person approves the action again
    assert resumed is not None and resumed.status is OutcomeStatus.AWAITING_APPROVAL
    assert resumed.approval is not None
    assert resumed.approval.action_digest != waiting.approval.action_digest
    assert any("before its secret arguments were keyed" in r for r in resumed.reasons), \
        resumed.reasons
    assert _calls(ran) == []


#: a person is asked unless the proposal cites evidence (which the digest does not bind)
ASK_WITHOUT_EVIDENCE = """@id("ask")
@requires_approval("true")
permit(principal, action, resource) when { context.evidence_count == 0 };
@id("cited")
permit(principal, action, resource) when { context.evidence_count > 0 };
"""


@pytest.mark.usefixtures("journal_backend")
def test_a_refusal_of_an_unkeyed_digest_still_holds(
        tmp_path: Path, ran: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    (home / "policies" / "all.cedar").write_text(ASK_WITHOUT_EVIDENCE)
    with monkeypatch.context() as old:
        _unkeyed(old)
        with Runtime(home, graph_sync=False) as rt:
            waiting = rt.submit(_proposal("p1", "set_password", ASKED))
            assert waiting.approval is not None
            rt.decide_approval(waiting.approval.id, approver_id=APPROVER, token=TOKEN,
                               status=ApprovalStatus.REJECTED, reason="not this one")
    with Runtime(home, graph_sync=False) as rt:
        cited = rt.record_input("run:k", "the helpdesk ticket", author="user:emma")
        again = rt.submit({**_proposal("p2", "set_password", ASKED, step=1),
                           "evidence_refs": [cited]})
    # the same action, refused by a person in this run under its unkeyed digest: it waits
    assert again.status is OutcomeStatus.AWAITING_APPROVAL, again.reasons
    assert _calls(ran) == []


@pytest.mark.usefixtures("journal_backend")
@pytest.mark.parametrize("change", ["UPDATE journal_keys SET key = {random}",
                                    "DELETE FROM journal_keys"])
def test_audit_verify_finds_a_replaced_or_lost_key(tmp_path: Path, ran: Path,
                                                   change: str) -> None:
    """The key is beside the chain, so the chain cannot tell it changed: the digests of the
    secret actions do (a key lost in a restore would make the next duplicate run again)."""
    from cradle_kg.storage import home_journal_target, is_postgres, verify_target

    home = _home(tmp_path)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(_proposal("p0", "set_password", ASKED)).status \
            is OutcomeStatus.EXECUTED
    target = home_journal_target(home)
    assert verify_target(target).intact
    if is_postgres(target):
        import psycopg

        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute(change.format(random="gen_random_uuid()::text::bytea"))
    else:
        import sqlite3

        conn = sqlite3.connect(target, isolation_level=None)
        conn.execute(change.format(random="randomblob(32)"))
        conn.close()
    report = verify_target(target)
    assert not report.intact and "digest key" in str(report.reason), report
