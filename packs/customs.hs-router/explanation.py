"""Stage 5 — explanation: the decision, read-only, → text. Never anything else.

``guarded_explain`` hands the explainer a deep copy of the frozen ``Decision`` and then
checks, before accepting the text:

1. the result is a ``str`` (an explainer returning a decision or a dict is refused);
2. the copy's digest is unchanged (an explainer that mutates what it was shown is refused);
3. the original's digest is unchanged;
4. every HS code written in the text (``dddd.dd``) is the decision's code or one of its
   candidates — the text cannot announce a different classification.

A refusal raises ``ExplainerRefusedError``; the pipeline then falls back to the
deterministic ``TemplateExplainer`` and records the refusal in the outcome's reasons.
Either way the decision is the one the earlier stages produced.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from cradle_kg.packs.sdk import ToolError

from .extraction import ModelClient
from .models import Decision, ModelCall

_CODE_IN_TEXT = re.compile(r"\b\d{4}\.\d{2}\b")


class ExplainerRefusedError(ToolError):
    """An explainer tried to return or change something other than text."""

    code = "explainer_refused"


class Explainer(Protocol):
    @property
    def name(self) -> str: ...

    def explain(self, decision: Decision) -> object: ...


def guarded_explain(explainer: Explainer, decision: Decision) -> str:
    before = decision.digest()
    view = decision.model_copy(deep=True)
    text = explainer.explain(view)
    if not isinstance(text, str):
        raise ExplainerRefusedError(
            f"explainer `{explainer.name}` returned `{type(text).__name__}`, not text: refused"
        )
    if view.digest() != before or decision.digest() != before:
        raise ExplainerRefusedError(
            f"explainer `{explainer.name}` changed the decision it was shown: refused"
        )
    allowed = set(decision.candidate_hs_codes) | ({decision.hs_code} if decision.hs_code else set())
    stray = sorted(set(_CODE_IN_TEXT.findall(text)) - allowed)
    if stray:
        raise ExplainerRefusedError(
            f"explainer `{explainer.name}` names code(s) `{', '.join(stray)}` "
            "that are not in the decision: refused"
        )
    return text


@dataclass
class TemplateExplainer:
    """Deterministic explanation written from the decision's fields only."""

    name: str = "template@1.0.0"

    def explain(self, decision: Decision) -> str:
        lines: list[str] = []
        if decision.status == "classified":
            lines.append(f"Classified under HS {decision.hs_code}.")
        elif decision.status == "needs_clarification":
            lines.append(
                "Not finalised: candidate HS codes "
                + ", ".join(decision.candidate_hs_codes or ("none",))
                + "; missing facts: "
                + ", ".join(decision.missing_facts or ("none",))
                + "."
            )
        else:
            lines.append("Rejected.")
        for rule in decision.rules:
            if rule.result != "false":
                lines.append(
                    f"Rule {rule.rule}: {rule.result}"
                    + (f" (unknown: {', '.join(rule.missing)})" if rule.missing else "")
                    + "."
                )
        if decision.permits_required:
            lines.append("Permits required: " + ", ".join(decision.permits_required) + ".")
        for conflict in decision.conflicts:
            lines.append(f"Conflict on {conflict.predicate}: {conflict.resolution}.")
        if decision.legal_sources:
            lines.append("Sources: " + ", ".join(s.id for s in decision.legal_sources) + ".")
        lines.extend(f"Reason: {reason}." for reason in decision.reasons)
        lines.append(
            "Permitted to finalize: " + ("yes." if decision.permitted_to_finalize else "no.")
        )
        return " ".join(lines)


@dataclass
class LlmExplainer:
    """Explainer plug-in backed by an injected model client; every call is recorded.

    The client receives ``{"model", "system", "input"}`` (input: the decision as JSON) and
    must answer ``{"output": "<text>"}``. Whatever it answers goes through the guard.
    """

    client: ModelClient
    model: str
    recorded: bool = False
    calls: list[ModelCall] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"llm:{self.model}"

    def explain(self, decision: Decision) -> object:
        request: dict[str, Any] = {
            "model": self.model,
            "system": "Explain this customs classification decision to a broker. "
            "Do not change it; do not add codes or permits.",
            "input": json.dumps(decision.model_dump(mode="json"), sort_keys=True),
        }
        response = self.client(request)
        self.calls.append(
            ModelCall(
                stage="explanation",
                component=self.name,
                recorded=self.recorded,
                request=request,
                response=response,
            )
        )
        return response.get("output")
