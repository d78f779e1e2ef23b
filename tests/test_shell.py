"""Everything from the shell: workflows, human steps, the inbox, evidence, autonomy, budgets.

Through the real command line, in process (typer's runner over the whole ``cradle-kg``
app; the process boundary is tested by ``test_readme_shell.py``): exit codes 0/1/2 and the
``--format json`` contracts. Model answers come from a local HTTP server that replays
RECORDED responses (``tests/workflow/recorded_server.py``) — labelled as such, not a model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cradle_kg.cli import build_app
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER, prepare_home

from .workflow.recorded_server import RecordedChatServer, completion

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workflows"
APP = build_app()


def cli(*args: str, token: str | None = None, env: dict[str, str] | None = None
        ) -> Any:
    extra = {"CRADLE_APPROVER_TOKEN": token} if token else {}
    return CliRunner().invoke(APP, list(args), env={"CRADLE_MODEL_BASE_URL": "", **extra,
                                                    **(env or {})})


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    prepare_home(root)
    (root / "workflows").mkdir()
    for name in ("credit-review.yaml", "message-triage.yaml"):
        shutil.copy(EXAMPLES / name, root / "workflows" / name)
    return root


def js(result: Any) -> Any:
    assert result.stdout.strip(), result.output
    return json.loads(result.stdout)


def test_validate_reports_file_and_line(tmp_path: Path) -> None:
    ok = cli("workflow", "validate", str(EXAMPLES / "credit-review.yaml"), "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert js(ok)["valid"] and [s["id"] for s in js(ok)["workflow"]["steps"]] == ["review", "pay"]

    bad = tmp_path / "bad.yaml"
    bad.write_text("workflow: w\nversion: '1'\nagent: agent:x\ninput: {type: object}\n"
                   "steps:\n  - id: ask\n    kind: human\n    question: 'Pay {amont}?'\n"
                   "    answers: [pay, hold]\n    inputs: {amount: later.amount}\n"
                   "  - id: later\n    kind: tool\n    tool: demo.ledger.credit\n"
                   "    tools: [demo.ledger.balance]\n    target: 'ledger:x'\n")
    out = cli("workflow", "validate", str(bad))
    assert out.exit_code == 1
    assert out.stdout.splitlines() == [
        f"{bad}:8: `{{amont}}` in `question` is not a field of the step's input",
        f"{bad}:10: step `ask` reads `later.amount`, which is not the input or an earlier step",
        f"{bad}:13: tool `demo.ledger.credit` is not in the step's whitelist "
        "['demo.ledger.balance']"], out.stdout
    doc = js(cli("workflow", "validate", str(bad), "--format", "json"))
    assert doc["valid"] is False and all(p.startswith(f"{bad}:") for p in doc["problems"])

    shape = tmp_path / "shape.yaml"
    shape.write_text("workflow: w\nversion: '1'\nagent: agent:x\ninput: {type: object}\n"
                     "steps:\n  - id: ask\n    kind: human\n    question: 'Pay?'\n"
                     "    answers: [yes, no]\n  - id: go\n    kind: teleport\n"
                     "surprise: 1\n")
    lines = cli("workflow", "validate", str(shape)).stdout.splitlines()
    assert f"{shape}:9: `steps.0.answers.0`: input should be a valid string" in lines  # YAML 1.1
    assert f"{shape}:11: `steps.1.kind`: must be one of `model`, `tool`, `human`" in lines
    assert f"{shape}:12: `surprise`: extra inputs are not permitted" in lines

    missing = cli("workflow", "validate", str(tmp_path / "nowhere.yaml"))
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_anchors_and_aliases_are_refused(tmp_path: Path) -> None:
    laughs = tmp_path / "laughs.yaml"
    laughs.write_text("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                      + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                                for p, c in zip("abcdefgh", "bcdefghi", strict=True)))
    out = cli("workflow", "validate", str(laughs))
    assert out.exit_code == 1 and f"{laughs}:1: YAML anchors and aliases are not accepted" \
        in out.stdout


def test_list_shows_every_file_broken_ones_with_their_problems(home: Path) -> None:
    (home / "workflows" / "broken.yaml").write_text("workflow: Broken\n")
    listed = js(cli("workflow", "list", "--home", str(home), "--format", "json"))
    by_id = {w["id"]: w for w in listed}
    assert by_id["credit-review"]["valid"] and by_id["message-triage"]["valid"]
    assert not by_id["broken"]["valid"] and by_id["broken"]["problems"][0].startswith(
        str(home / "workflows" / "broken.yaml") + ":1:")


@pytest.mark.slow
def test_a_run_waits_for_a_person_who_decides_it_from_the_shell(home: Path) -> None:
    h = ["--home", str(home)]
    started = cli("workflow", "run", "credit-review", "--input",
                  '{"account": "acct-1", "amount": 120, "reason": "refund"}', *h,
                  "--format", "json")
    assert started.exit_code == 0, started.output
    run = js(started)["run_id"]
    assert js(started)["status"] == "waiting_human" and js(started)["step"] == "review"

    st = js(cli("workflow", "status", run, *h, "--format", "json"))
    assert st["state"] == "waiting_for_person"
    review = st["steps"][0]
    assert review["state"] == "waiting_for_person" and review["answers"] == ["pay", "hold"]
    assert review["asked"] == "Credit 120 to acct-1? The agent says: refund"
    assert st["steps"][1]["state"] == "pending"

    items = js(cli("inbox", *h, "--format", "json"))
    assert [(i["kind"], i["id"]) for i in items] == [("step", f"{run}/review")]
    assert items[0]["question"] == review["asked"] and items[0]["answers"] == ["pay", "hold"]
    assert js(cli("inbox", "--kind", "approval", *h, "--format", "json")) == []
    assert cli("inbox", "--kind", "nope", *h).exit_code == 2

    no_token = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay", *h)
    assert no_token.exit_code == 2 and "token" in no_token.stderr
    wrong = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay", *h,
                token=DEMO_TOKENS[REQUESTER])
    assert wrong.exit_code == 1 and "does not authenticate" in wrong.stderr
    odd = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "maybe", *h,
              token=DEMO_TOKENS[APPROVER])
    assert odd.exit_code == 2 and "not an allowed answer" in odd.stderr
    assert cli("step", "decide", run, "pay", "--as", APPROVER, "--answer", "pay", *h,
               token=DEMO_TOKENS[APPROVER]).exit_code == 2  # a tool step is no human step

    done = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay",
               "--note", "checked the invoice", *h, token=DEMO_TOKENS[APPROVER],
               env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert f"run {run} (credit-review): completed" in done.stdout
    st = js(cli("workflow", "status", run, *h, "--format", "json"))
    assert st["state"] == "completed" and [s["state"] for s in st["steps"]] == [
        "completed", "completed"]
    assert st["steps"][1]["output"]["applied"] is True
    again = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay", *h,
                token=DEMO_TOKENS[APPROVER])
    assert again.exit_code == 2 and "does not wait" in again.stderr
    assert js(cli("inbox", *h, "--format", "json")) == []

    listed = js(cli("runs", "list", "--status", "completed", *h, "--format", "json"))
    assert [r["run_id"] for r in listed] == [run] and listed[0]["workflow"] == "credit-review"
    assert js(cli("runs", "list", "--status", "waiting_for_person", *h, "--format",
                  "json")) == []
    assert cli("runs", "list", "--status", "done", *h).exit_code == 2
    counts = cli("runs", "list", *h, env={"COLUMNS": "200"})
    assert "completed: 1" in counts.stdout and "waiting_for_person: 0" in counts.stdout


def test_hold_skips_the_tool_step_and_bad_input_is_refused(home: Path) -> None:
    h = ["--home", str(home)]
    run = js(cli("workflow", "run", "credit-review", "--input",
                 '{"account": "acct-1", "amount": 5, "reason": "x"}', *h, "--format",
                 "json"))["run_id"]
    held = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "hold", *h,
               "--format", "json", token=DEMO_TOKENS[APPROVER])
    assert held.exit_code == 0 and js(held)["status"] == "completed"
    assert js(held)["outputs"] == {"review": {"answer": "hold"}}
    st = js(cli("workflow", "status", run, *h, "--format", "json"))
    assert [s["state"] for s in st["steps"]] == ["completed", "skipped"]

    not_json = cli("workflow", "run", "credit-review", "--input", "{nope", *h)
    assert not_json.exit_code == 2 and "not valid JSON" in not_json.stderr
    wrong = cli("workflow", "run", "credit-review", "--input", '{"account": "a", "amount": 0,'
                ' "reason": "x"}', *h)
    assert wrong.exit_code == 2 and "amount" in wrong.stderr
    assert cli("workflow", "run", "no-such-flow", "--input", "{}", *h).exit_code == 2
    assert cli("workflow", "status", "wf:nothing", *h).exit_code == 2


def test_a_run_whose_file_changed_is_not_resumed(home: Path) -> None:
    h = ["--home", str(home)]
    run = js(cli("workflow", "run", "credit-review", "--input",
                 '{"account": "acct-1", "amount": 5, "reason": "x"}', *h, "--format",
                 "json"))["run_id"]
    path = home / "workflows" / "credit-review.yaml"
    path.write_text(path.read_text().replace("answers: [pay, hold]", "answers: [pay, hold, later]"))
    out = cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay", *h,
              token=DEMO_TOKENS[APPROVER])
    assert out.exit_code == 2 and "changed since the run started" in out.stderr
    assert cli("workflow", "resume", run, *h).exit_code == 2


def test_a_model_step_fails_closed_without_a_model_and_runs_with_one(home: Path) -> None:
    h = ["--home", str(home)]
    message = json.dumps({"sender": "a@example.org", "subject": "Invoice 7", "body": "Pay 30",
                          "account": "acct-1", "amount": 30})
    closed = cli("workflow", "run", "message-triage", "--input", message, *h, "--format",
                 "json")
    assert closed.exit_code == 1
    assert js(closed)["code"] == "model_unavailable" and js(closed)["status"] == "failed"
    assert js(cli("runs", "list", "--status", "completed_with_failures", *h, "--format",
                  "json"))[0]["run_id"] == js(closed)["run_id"]

    # RECORDED responses replayed over HTTP — not a model
    answer = json.dumps({"category": "invoice", "urgency": "low", "justification": "an invoice"})
    server = RecordedChatServer([completion(answer)])
    with server.running() as url:
        out = cli("workflow", "run", "message-triage", "--input", message, *h, "--format",
                  "json", "--base-url", url)
    assert out.exit_code == 0, out.output
    assert js(out)["status"] == "waiting_human" and js(out)["step"] == "route"
    sent = server.requests[0]
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["category"] == {
        "enum": ["quote", "invoice", "support"]}
    system = sent["messages"][0]["content"]
    assert 'from a@example.org titled "Invoice 7"' in system and "acct-1" not in system
    item = js(cli("inbox", "--kind", "step", *h, "--format", "json"))[0]
    assert item["question"] == "A invoice (low) asking for 30: pay or review?"


def test_evidence_add_show_and_an_edited_blob(home: Path, tmp_path: Path) -> None:
    h = ["--home", str(home)]
    doc = tmp_path / "invoice.txt"
    doc.write_text("invoice 7: 30 EUR")
    added = cli("evidence", "add", str(doc), "--kind", "invoice", "--source", "mail",
                "--as", APPROVER, *h, token=DEMO_TOKENS[APPROVER])
    assert added.exit_code == 0, added.output
    ref = added.stdout.strip()
    assert ref.startswith("sha256:") and len(ref) == 71
    shown = js(cli("evidence", "show", ref, *h, "--format", "json"))
    assert shown["intact"] and shown["bytes"] == 17
    assert shown["added"][0]["by"] == APPROVER and shown["added"][0]["kind"] == "invoice"
    assert shown["added"][0]["source"] == "mail" and shown["added"][0]["at"]
    assert cli("evidence", "show", ref, "--raw", *h).stdout == "invoice 7: 30 EUR"

    assert cli("evidence", "add", str(doc), "--as", "user:nobody", *h).exit_code == 2
    assert cli("evidence", "add", str(tmp_path / "none"), "--as", APPROVER, *h).exit_code == 2
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (1024 * 1024 + 1))
    too_big = cli("evidence", "add", str(big), "--as", APPROVER, *h)
    assert too_big.exit_code == 2 and "limit" in too_big.stderr
    assert cli("evidence", "show", "sha256:" + "0" * 64, *h).exit_code == 2
    assert cli("evidence", "show", "not-a-hash", *h).exit_code == 2

    blob = home / "evidence" / ref[7:9] / ref[9:]
    blob.chmod(0o644)
    blob.write_text("invoice 7: 3000 EUR")
    edited = cli("evidence", "show", ref, *h)
    assert edited.exit_code == 1 and "does not match its hash" in edited.stderr


def test_autonomy_and_budgets_at_a_glance(home: Path) -> None:
    h = ["--home", str(home)]
    steps = js(cli("autonomy", "status", *h, "--format", "json"))
    assert [(s["workflow"], s["step"]) for s in steps] == [("credit-review", "review"),
                                                          ("message-triage", "route")]
    assert steps[0]["stage"] == "observation" and steps[0]["decisions"] == 0
    assert {"min_sample", "reproduction_rate", "shadow"} <= set(steps[0])
    assert cli("autonomy", "status", "credit-review", *h).exit_code == 2  # a step is missing

    assert js(cli("budgets", "status", *h, "--format", "json")) == []
    assert cli("budgets", "set", "--level", "workflow", "--subject", "message-triage",
               "--limit", "1", "--as", APPROVER, *h, token=DEMO_TOKENS[APPROVER]).exit_code == 0
    assert cli("budgets", "set", "--level", "tenant", "--limit", "10", "--as", APPROVER,
               *h, token=DEMO_TOKENS[APPROVER]).exit_code == 0
    message = json.dumps({"sender": "a", "subject": "s", "body": "b", "account": "acct-1",
                          "amount": 1})
    answer = json.dumps({"category": "quote", "urgency": "low", "justification": "a quote"})
    with RecordedChatServer([completion(answer)]).running() as url:  # RECORDED, not a model
        assert cli("workflow", "run", "message-triage", "--input", message, *h,
                   "--base-url", url).exit_code == 0
    rows = {(r["level"], r["budget_subject"]): r
            for r in js(cli("budgets", "status", *h, "--format", "json"))}
    assert rows[("workflow", "message-triage")]["state"] == "exhausted"
    assert rows[("workflow", "message-triage")]["spent"] == 1.0
    assert rows[("tenant", "*")]["state"] == "ok" and rows[("tenant", "*")]["subject"] == "default"
    assert rows[("tenant", "*")]["used"] == "10%"


CLOSE_FLOW = """workflow: close-account
version: "1"
agent: agent:ledger-assistant
input:
  type: object
  properties: {account: {type: string, pattern: "^[a-z0-9-]+$"}}
  required: [account]
steps:
  - id: close
    kind: tool
    tool: demo.ledger.close_account
    target: "ledger:{account}"
    inputs: {account: input.account}
"""


def test_a_tool_step_waiting_for_an_approval_walks_on_once_approved(home: Path) -> None:
    h = ["--home", str(home)]
    (home / "workflows" / "close-account.yaml").write_text(CLOSE_FLOW)
    started = js(cli("workflow", "run", "close-account", "--input", '{"account": "acct-9"}',
                     "--run", "close-9", *h, "--format", "json"))
    assert started["status"] == "waiting_approval" and started["run_id"] == "close-9"
    st = js(cli("workflow", "status", "close-9", *h, "--format", "json"))
    assert st["state"] == "waiting_for_person" and st["steps"][0]["state"] == "running"
    assert "awaiting_approval" in st["why"][0]
    item = js(cli("inbox", "--run", "close-9", *h, "--format", "json"))[0]
    assert item["kind"] == "approval" and item["policies"] == ["demo-close-needs-approval"]
    assert item["action"]["target"] == "ledger:acct-9" and item["digest"].startswith("sha256:")
    approved = cli("approvals", "approve", item["id"], "--as", APPROVER, *h,
                   token=DEMO_TOKENS[APPROVER], env={"COLUMNS": "200"})
    assert approved.exit_code == 0, approved.output
    assert "workflow run close-9: completed" in approved.stdout
    st = js(cli("workflow", "status", "close-9", *h, "--format", "json"))
    assert st["state"] == "completed" and st["steps"][0]["state"] == "completed"
    assert cli("workflow", "run", "close-account", "--input", '{"account": "acct-8"}',
               "--run", "close-9", *h).exit_code == 2  # the id is taken
    assert cli("workflow", "run", "close-account", "--input", '{"account": "acct-8"}',
               "--run", "a/b", *h).exit_code == 2
