"""Workflow files: what the loader refuses (with its line), and what a file-run records.

The engine runs a YAML workflow like a Python one: same events, strict replay hash for
hash, the JSON Schemas checked on every step. Model answers here are RECORDED responses
(``tests.workflow.conftest.recorded``), labelled as such — never a live model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError, WorkflowFileError
from cradle_kg.workflow import Engine, strict_replay
from cradle_kg.workflow.definitions import MAX_FILE_BYTES, load_file, parse_definition
from cradle_kg.workflow.runner import decide, status
from cradle_kg.workflow.schemas import MAX_SCHEMA_NODES

from .conftest import recorded

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"
HEAD = "workflow: w\nversion: '1'\nagent: agent:x\n"


def problems(text: str) -> tuple[str, ...]:
    with pytest.raises(WorkflowFileError) as caught:
        parse_definition(text, name="f.yaml", definition="file:f.yaml")
    return caught.value.problems


def test_what_the_loader_refuses_each_with_its_line() -> None:
    assert problems(HEAD + "input: {type: object}\nsteps: []\nworkflow: again\n") == (
        "f.yaml:6: duplicate key `workflow`",)
    assert problems("a: !!python/object:os.system x\n")[0].startswith(
        "f.yaml:1: YAML tag `tag:yaml.org,2002:python/object:os.system` is not accepted")
    assert problems("a: [1, 2\n")[0].startswith("f.yaml:2: not valid YAML")
    assert problems("- 1\n") == ("f.yaml:1: a workflow file is a mapping (`workflow:`, "
                                 "`steps:`, ...)",)
    assert problems(HEAD + "input: {type: string}\nsteps:\n  - {id: a, kind: human, "
                    "question: q, answers: [x]}\n") == (
        "f.yaml:4: `input`: a step's schema must have `type: object`",)
    assert problems(HEAD + "input: {type: object, properties: {a: {type: 7}}}\nsteps:\n"
                    "  - {id: a, kind: human, question: q, answers: [x]}\n")[0].startswith(
        "f.yaml:4: `input`: 7 is not valid")
    wide = "{" + ", ".join(f"p{i}: {{}}" for i in range(MAX_SCHEMA_NODES)) + "}"
    assert f"at most {MAX_SCHEMA_NODES} nodes" in problems(
        HEAD + f"input: {{type: object, properties: {wide}}}\nsteps:\n"
        "  - {id: a, kind: human, question: q, answers: [x]}\n")[0]
    assert problems(HEAD + "input: {type: object}\nsteps:\n  - {id: a, kind: human, "
                    "question: q, output: {type: object, properties: {pick: {}}}}\n") == (
        "f.yaml:6: `answer` is not a field of the step's output",)
    assert problems(HEAD + "input: {type: object}\nsteps:\n  - {id: a, kind: human, "
                    "question: q}\n") == ("f.yaml:6: human step `a` needs `answers` or `output`",)


def test_files_too_large_or_not_utf8(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(WorkflowFileError, match="more than the limit"):
        load_file(big)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"workflow: caf\xe9\n")
    with pytest.raises(WorkflowFileError, match="not UTF-8 at byte 13"):
        load_file(latin)
    with pytest.raises(InputError, match="cannot read"):
        load_file(tmp_path / "none.yaml")


def test_a_file_run_replays_strictly_and_refuses_an_edited_file(wf_home: Path,
                                                                  tmp_path: Path) -> None:
    flow = tmp_path / "triage.yaml"
    shutil.copy(EXAMPLES / "message-triage.yaml", flow)
    message = {"sender": "a", "subject": "Invoice", "body": "pay 30", "account": "acct-1",
               "amount": 30}
    answer = json.dumps({"category": "invoice", "urgency": "low", "justification": "bill"})
    with Runtime(wf_home, graph_sync=False) as rt:
        # the first answer breaks the schema: the engine asks again, once, with the error
        engine = Engine(rt, client=recorded('{"category": "spam"}', answer))
        started = engine.start(load_file(flow), message)
        assert started.status == "waiting_human" and started.step == "route"
        calls = [e for e in rt.journal.events(run_id=started.run_id) if e.kind == "model.called"]
        assert len(calls) == 2 and calls[0].payload["response"]["source"] == "recorded"
        retry = calls[1].payload["request"]["messages"][-1]["content"]
        assert "does not match the JSON schema" in retry and "category" in retry
        done = decide(rt, engine, started.run_id, "route", by=APPROVER,
                      token=DEMO_TOKENS[APPROVER], answer="pay")
        assert done["status"] == "completed" and done["outputs"]["pay"]["applied"] is True
        assert status(engine, started.run_id)["state"] == "completed"
        run = started.run_id
    report = strict_replay(wf_home, [run])
    assert report.runs == [run]

    flow.write_text(flow.read_text().replace("max_tokens: 200", "max_tokens: 201"))
    with Runtime(wf_home, graph_sync=False) as rt, pytest.raises(
            InputError, match="changed since the run started"):
        Engine(rt, client=recorded()).advance(run)
