"""A secret given as an object is masked in the reasons too, not only in the views.

Finding (eighth attack review): an argument declared secret as a whole
(``secret_arguments: [credentials]``, an object ``{user, password}``) is shown as
``**********`` in every view (its key kept), but the reasons the runtime relays were
scrubbed of a secret's *string and number* values only: a domain validator refusing the
call ("password `Winter-Haus-2291` of svc-backup is reused") had its reason, the agent's
answer and the journaled decision, hold the password in clear.

Now a secret's texts are its values at any depth (an object's values, a list's items;
inside an object, those of at least 4 characters).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass, Verdict
from cradle_kg.redaction import MASK, secret_values
from cradle_kg.tools import ToolSpec
from tests.lineage.kit import Free, lineage_runtime, submit, verified

PASSWORD = "Winter-Haus-2291"


class Mount(BaseModel):
    share: str
    credentials: dict[str, Any]


def _reused(proposal: Any, spec: ToolSpec) -> list[Finding]:
    given = proposal.action.arguments["credentials"]
    return [Finding(code="reused_password", verdict=Verdict.REPAIR,
                    message=f"password `{given['password']}` of {given['user']} is reused")]


def test_a_secret_objects_values_are_masked_in_a_reason(tmp_path: Path) -> None:
    rt = lineage_runtime(tmp_path / "home")
    try:
        rt.register_tool(ToolSpec(
            id="mount", version="1", input_model=Mount, output_model=Free,
            side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
            target_from="share:*", verifier="ok", secret_arguments=("credentials",)),
            lambda call: Free(result="ok"))
        rt.register_verifier("ok", verified(lambda: {}))
        rt.register_validator("mount", _reused, name="password_reuse")
        out = submit(rt, 0, "mount", {"share": "backups", "credentials": {
            "user": "svc-backup", "password": PASSWORD, "port": 22}}, target="share:backups")
        decided = next(e for e in rt.journal.events(run_id="run:t")
                       if e.kind == "decision.made")
    finally:
        rt.close()
    assert out.status is OutcomeStatus.REPAIR
    said = " ".join(out.reasons)
    assert said.startswith(f"password `{MASK}` of {MASK} is reused"), said
    assert PASSWORD not in str(decided.payload["decision"])
    assert PASSWORD not in str(decided.payload["validator_findings"])


def test_short_values_inside_a_secret_object_are_not_masked_everywhere() -> None:
    found = secret_values({"c": {"user": "bob", "password": PASSWORD, "port": 22,
                                 "hosts": ["db-primary"]}, "n": 7}, ["c", "n"])
    assert set(found) == {PASSWORD, "db-primary", "7"}  # a top-level value, as before
