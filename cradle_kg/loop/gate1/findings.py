"""What a domain validator says to gate 1 (check 5, domain preconditions).

A pack binds a validator to a tool pattern; gate 1 asks it about each matching proposal
and journals its answer with the decision, so strict replay can serve it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...records import Proposal, Verdict
from ...tools import ToolSpec


@dataclass(frozen=True)
class Finding:
    """What a domain validator reports: a closed-world precondition that does not hold."""

    code: str
    message: str
    verdict: Verdict = Verdict.DENY
    missing_facts: tuple[str, ...] = ()
    #: structured detail journaled with the finding (JSON scalars and lists), for a pack's
    #: projection hook — e.g. the candidate codes of a clarification; never decides anything
    data: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message,
                               "verdict": str(self.verdict),
                               "missing_facts": list(self.missing_facts)}
        if self.data:  # absent when empty: journals written before it read the same
            out["data"] = dict(self.data)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Finding:
        data = raw.get("data") or {}
        return cls(code=str(raw["code"]), message=str(raw["message"]),
                   verdict=Verdict(raw["verdict"]),
                   missing_facts=tuple(str(m) for m in raw.get("missing_facts", ())),
                   data=tuple(sorted(data.items())) if isinstance(data, dict) else ())


DomainValidator = Callable[[Proposal, ToolSpec], Sequence[Finding]]


@dataclass(frozen=True)
class ValidatorBinding:
    tool_pattern: str
    validator: DomainValidator
    name: str
    pack: str | None = None
