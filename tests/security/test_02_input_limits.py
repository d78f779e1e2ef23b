"""Item 2: size and shape limits wherever a proposal (or other agent JSON) enters.

Oversized ids, strings, counts, nesting, integers and bodies are refused at parse time —
CLI exit 2, HTTP 413 (total bytes) or 422 (shape) — and nothing is journaled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from cradle_kg import Runtime
from cradle_kg.config import RuntimeConfig, load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import InputError, ProposalError
from cradle_kg.inputs import DEFAULT_LIMITS, InputLimits
from cradle_kg.records import Proposal
from tests import oneshot

from .inputcli import assert_refused, cli, credit, events, fresh_home, received

MB = 1024 * 1024


def _fact(i: int) -> dict[str, Any]:
    return {"subject": f"s{i}", "predicate": "p", "object": i, "source": "agent"}


#: (name, proposal, words the one error line must contain)
OVERSIZED: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("10MB task_id", credit("big-task", task_id="t" * (10 * MB)), ("bytes",)),
    ("10MB idempotency key",
     credit("big-key", action={"idempotency_key": "k" * (10 * MB)}), ("bytes",)),
    ("300-char task_id", credit("long-task", task_id="t" * 300), ("task_id", "256")),
    ("300-char id", credit("i" * 300), ("`id`", "256")),
    ("300-char key", credit("long-key", action={"idempotency_key": "k" * 300}),
     ("idempotency_key", "256")),
    ("300-char agent", credit("long-agent", agent_id="a" * 300), ("agent_id",)),
    ("100KiB argument string",
     credit("long-arg", action={"arguments": {"account": "x" * (100 * 1024), "amount": 1}}),
     ("65536",)),
    ("200,000 facts", credit("many-facts", facts=[_fact(i) for i in range(200_000)]),
     ("bytes",)),
    ("1,001 facts", credit("facts-1001", facts=[_fact(i) for i in range(1001)]),
     ("facts", "1000")),
    ("257 evidence refs", credit("refs", evidence_refs=[f"e{i}" for i in range(257)]),
     ("evidence_refs", "256")),
    ("17 alternatives",
     credit("alts", alternatives=[credit("x")["action"] for _ in range(17)]),
     ("alternatives", "16")),
    ("40-deep arguments",
     credit("deep", action={"arguments": {"account": "a", "amount": 1,
                                           "n": json.loads("[" * 40 + "]" * 40)}}),
     ("deep",)),
    ("19-digit integer",
     credit("bigint", action={"arguments": {"account": "a", "amount": 10**19}}),
     ("digits",)),
    ("300-char argument key",
     credit("longkey", action={"arguments": {"k" * 300: 1, "account": "a", "amount": 1}}),
     ("256",)),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = fresh_home(tmp_path_factory.mktemp("limits") / "home")
    with Runtime(path) as rt:  # one event first, so "nothing journaled" is a real check
        assert rt.submit(credit("warm-up")).ok
    return path


@pytest.mark.parametrize(("name", "proposal", "needles"), OVERSIZED,
                         ids=[c[0] for c in OVERSIZED])
def test_cli_refuses_oversized_proposals(home: Path, tmp_path: Path, name: str,
                                         proposal: dict[str, Any],
                                         needles: tuple[str, ...]) -> None:
    before = events(home)
    file = tmp_path / "p.json"
    file.write_text(json.dumps(proposal), encoding="utf-8")
    done = cli("submit", str(file), "--home", str(home))
    assert_refused(done, *needles)
    assert events(home) == before


def test_limits_come_from_the_homes_configuration(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    config = load_config(path / "config.json")
    save_config(path / "config.json", config.model_copy(update={
        "input_limits": InputLimits(max_facts=2, max_id_length=30)}))
    three = credit("f3", facts=[_fact(i) for i in range(3)])
    assert_refused(cli("submit", "-", "--home", str(path), stdin=json.dumps(three)),
                   "facts", "2")
    long_id = credit("i" * 31)
    assert_refused(cli("submit", "-", "--home", str(path), stdin=json.dumps(long_id)),
                   "`id`", "30")
    assert received(path) == 0


def test_configured_limits_cannot_exceed_the_ceilings() -> None:
    with pytest.raises(ValidationError):
        InputLimits(max_depth=10_000)
    with pytest.raises(ValidationError):
        InputLimits(max_integer_digits=5000)
    with pytest.raises(ValidationError):
        RuntimeConfig.model_validate({"input_limits": {"max_bytes": 0}})


@pytest.mark.parametrize(("name", "proposal", "needles"), OVERSIZED,
                         ids=[c[0] for c in OVERSIZED])
def test_sdk_refuses_oversized_proposals(home: Path, name: str, proposal: dict[str, Any],
                                         needles: tuple[str, ...]) -> None:
    with Runtime(home) as rt:
        before = rt.journal.verify().events
        with pytest.raises(ProposalError):
            rt.submit(proposal)
        assert rt.journal.verify().events == before


def test_records_refuse_oversized_values_themselves() -> None:
    good = credit("rec")
    Proposal.model_validate(good)
    with pytest.raises(ValidationError):
        Proposal.model_validate({**good, "task_id": "t" * 100_000})
    with pytest.raises(ValidationError):
        Proposal.model_validate({**good, "alternatives": [good["action"]] * 1001})
    deep: Any = 1
    for _ in range(500):
        deep = [deep]
    with pytest.raises(ValidationError):
        Proposal.model_validate(credit("d", action={"arguments": {"x": deep}}))


def test_a_proposal_instance_is_checked_against_the_configured_limits(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    config = load_config(path / "config.json").model_copy(update={
        "input_limits": InputLimits(max_evidence_refs=1)})
    with Runtime(path, config=config) as rt:
        with pytest.raises(ProposalError, match="evidence_refs"):
            rt.submit(Proposal.model_validate(credit("inst", evidence_refs=["a", "b"])))
        assert rt.journal.verify().events == 0


def test_the_defaults_are_the_documented_ones() -> None:
    assert InputLimits() == DEFAULT_LIMITS
    assert (DEFAULT_LIMITS.max_bytes, DEFAULT_LIMITS.max_depth, DEFAULT_LIMITS.max_id_length,
            DEFAULT_LIMITS.max_string_length, DEFAULT_LIMITS.max_facts,
            DEFAULT_LIMITS.max_evidence_refs, DEFAULT_LIMITS.max_alternatives,
            DEFAULT_LIMITS.max_integer_digits) == (MB, 32, 256, 65536, 1000, 256, 16, 18)


def test_approval_decisions_are_bounded_too(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    with Runtime(path) as rt:
        waiting = rt.submit({"id": "c", "task_id": "t", "agent_id": AGENT,
                             "action": {"action_type": "demo.ledger.close_account",
                                        "target": "ledger:z", "arguments": {"account": "z"}}})
        assert waiting.approval is not None
        before = rt.journal.verify().events
        with pytest.raises(InputError):
            rt.decide_approval(waiting.approval.id, approver_id="u" * (10 * MB), token="x",
                               status=waiting.approval.status.__class__("rejected"),
                               reason="no")
        assert rt.journal.verify().events == before


# --- the JSON API ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    from tests.server.conftest import start_server, stop_server

    path = fresh_home(tmp_path_factory.mktemp("api") / "home")
    with Runtime(path) as rt:
        assert rt.submit(credit("api-warm-up")).ok
    issued = subprocess.run([sys.executable, "-m", "cradle_kg", "api-token", "issue", AGENT,
                             "--home", str(path)], capture_output=True, text=True, check=True)
    srv = start_server(["--home", str(path)], tmp_path_factory.mktemp("log") / "s.log", path)
    yield srv.url, issued.stdout.strip(), path
    stop_server(srv)


def _post(url: str, token: str, body: bytes) -> httpx.Response:
    return oneshot.post(url + "/api/proposals", content=body, timeout=60,
                      headers={"Authorization": f"Bearer {token}",
                               "Content-Type": "application/json"})


def test_api_answers_413_for_too_many_bytes(api: tuple[str, str, Path]) -> None:
    url, token, path = api
    done = _post(url, token, json.dumps(credit("api-big", task_id="t" * (2 * MB))).encode())
    assert done.status_code == 413, done.text
    assert received(path) == 1


@pytest.mark.parametrize("body", [
    json.dumps(credit("api-long", task_id="t" * 300)),
    json.dumps(credit("api-facts", facts=[_fact(i) for i in range(1001)])),
    json.dumps(credit("api-deep", action={"arguments": {"x": json.loads("[" * 40 + "]" * 40)}})),
    "[" * 30_000 + "]" * 30_000,
    '{"id": "dup", "id": "dup2"}',
    json.dumps(credit("api-nan"))[:-1] + ', "confidence": NaN}',
    json.dumps(credit("api-step", step="1")),
    json.dumps(credit("api-dry", action={"dry_run": "false"})),
    json.dumps(credit("api-int"))[:-1] + ', "step": ' + "9" * 5000 + "}",
    '{"id": "\\ud800"}',
])
def test_api_answers_422_for_bad_shapes(api: tuple[str, str, Path], body: str) -> None:
    url, token, path = api
    done = _post(url, token, body.encode("utf-8"))
    assert done.status_code == 422, done.text
    detail = done.json()["detail"]
    assert "\n" not in detail["message"]
    assert received(path) == 1
