"""What the lineage tests share: a runtime with the `security.lineage` pack loaded and a
permit-all policy (each test registers its own tools), a verifier that reads back
success, and the helpers that submit a step of run `run:t` and read its lineage trace."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from cradle_kg.config import RuntimeConfig
from cradle_kg.loop.runtime import Runtime
from cradle_kg.packs.loader import load_pack
from cradle_kg.records import Agent, Permission, VerificationCheck, VerificationStatus
from cradle_kg.verifiers import VerifierReport, VerifyRequest

PACK = Path(__file__).resolve().parents[2] / "packs" / "security.lineage"
AGENT = "agent:assistant"


class Free(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: Any = None


class NoArgs(BaseModel):
    pass


def permit_all(home: Path) -> None:
    """A Cedar policy in ``home`` that permits everything."""
    (home / "policies").mkdir(parents=True, exist_ok=True)
    (home / "policies" / "all.cedar").write_text(
        '@id("all")\npermit(principal, action, resource);\n')


def pack_home(home: Path, folder: str, *, manifest: str, tools: str,
              config: dict[str, Any]) -> Path:
    """``home`` permitting everything by policy, with a pack written from its
    ``manifest`` and ``tools.py`` texts in ``packs/<folder>``, and ``config``."""
    permit_all(home)
    pack = home / "packs" / folder
    pack.mkdir(parents=True)
    (pack / "manifest.yaml").write_text(manifest)
    (pack / "tools.py").write_text(tools)
    (pack / "__init__.py").write_text("")
    (home / "config.json").write_text(json.dumps(config))
    return home


def lineage_runtime(home: Path, *, config: RuntimeConfig | None = None) -> Runtime:
    """A runtime on ``home`` that permits everything by policy, with the lineage pack."""
    permit_all(home)
    rt = Runtime(home, config=config or RuntimeConfig(
        agents=(Agent(id=AGENT),), permissions=(Permission(subject=AGENT),)),
        graph_sync=False, load_plugins=False)
    rt.load_pack(load_pack(PACK))
    return rt


def register_mail_reader(rt: Runtime, answer: Callable[[], Any],
                         output_model: type[BaseModel] = Free) -> None:
    """The untrusted ``read_email`` tool in ``rt`` (a read, natural key), answering
    ``answer()``: what an injection arrives by in these tests."""
    from cradle_kg.records import IdempotencyClass, SideEffectClass
    from cradle_kg.tools import ToolSpec

    rt.register_tool(ToolSpec(id="read_email", version="1", input_model=NoArgs,
                              output_model=output_model,
                              side_effect_class=SideEffectClass.READ_ONLY,
                              idempotency=IdempotencyClass.NATURAL, output_trust="untrusted"),
                     lambda call: answer())


def verified(evidence: Callable[[], dict[str, Any]]) -> Callable[[VerifyRequest],
                                                                VerifierReport]:
    """A verifier whose both checks verify, with ``evidence()`` as its evidence."""
    def verify(req: VerifyRequest) -> VerifierReport:
        return VerifierReport(checks=(
            VerificationCheck(name="resource_exists", status=VerificationStatus.VERIFIED),
            VerificationCheck(name="expected_state", status=VerificationStatus.VERIFIED)),
            read_at=datetime.now(UTC), evidence=evidence())
    return verify


def submit(rt: Runtime, n: int, tool: str, args: dict[str, Any], *, target: str) -> Any:
    """Step ``n`` of run `run:t`: ``tool`` with ``args`` on ``target``."""
    return rt.submit({"id": f"p{n}", "task_id": "t", "agent_id": AGENT, "run_id": "run:t",
                      "step": n, "action": {"action_type": tool, "target": target,
                                            "arguments": args}})


def trace(rt: Runtime, tool: str) -> dict[str, Any]:
    """The last lineage trace journaled for a proposal of ``tool`` in run `run:t`."""
    traced = [e for e in rt.journal.events(run_id="run:t") if e.kind == "lineage.traced"
              and e.payload["trace"]["tool"] == tool]
    return traced[-1].payload["trace"]


def act_after_email(home: Path, *, email: str, request: str, spec: Any, args: dict[str, Any],
                    target: str, argument: str
                    ) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """The person's ``request`` recorded, an untrusted e-mail saying ``email`` read, then the
    tool of ``spec`` (its verifier named ``ok``) proposed with ``args`` on ``target``: its
    outcome, the lineage of its ``argument``, and the calls the tool received."""
    from cradle_kg.records import OutcomeStatus

    rt = lineage_runtime(home)
    done: list[dict[str, Any]] = []
    try:
        register_mail_reader(rt, lambda: Free(result={"body": email}))
        rt.register_tool(spec, lambda call: done.append(call.arguments.model_dump())
                         or Free(result="ok"))
        rt.register_verifier("ok", verified(lambda: {"calls": len(done)}))
        rt.record_input("run:t", request, author="user:emma")
        assert submit(rt, 0, "read_email", {}, target="mail").status is OutcomeStatus.EXECUTED
        out = submit(rt, 1, spec.id, args, target=target)
        arg = next(a for a in trace(rt, spec.id)["arguments"] if a["name"] == argument)
        return out, arg, done
    finally:
        rt.close()
