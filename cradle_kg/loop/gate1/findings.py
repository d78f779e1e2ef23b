"""What a domain validator says to gate 1 (check 5, domain preconditions).

A pack binds a validator to a tool pattern; gate 1 asks it about each matching proposal
and journals its answer with the decision, so strict replay can serve it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...inputs import CEILINGS, check_value
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

#: what a finding may say: it denies, asks for a repair or for facts — never allows
FINDING_VERDICTS = (Verdict.DENY, Verdict.REPAIR, Verdict.CLARIFY)


def answered(answer: object, name: str) -> list[Finding]:
    """What the validator ``name`` returned, as gate 1 acts on it and journals it: a list of
    :class:`Finding` s whose texts are ``str`` s, whose verdict is one a finding may say,
    within the journal's rules (no lone surrogate, no ``NaN`` in ``data``, the ceilings);
    else :class:`TypeError` or :class:`~cradle_kg.errors.InputError`, raised inside the check,
    which denies.

    INVARIANT: before, the answer was taken as it came and refused only on the way to the
    journal, outside the check: a ``message=None`` or a number for ``code`` raised
    pydantic's ``ValidationError`` out of ``submit``, and a lone surrogate in any text (a
    file name the validator read) or a ``NaN`` in ``data`` raised ``UnicodeEncodeError`` /
    ``ValueError`` — a traceback, not a decision (``tests/security/test_513``)."""
    if isinstance(answer, str | bytes | Mapping) or not isinstance(answer, Iterable):
        raise TypeError(f"validator `{name}` returned `{type(answer).__name__}`, not a list "
                        "of findings")
    found = list(answer)
    for f in found:
        if not isinstance(f, Finding):
            raise TypeError(f"validator `{name}` returned a `{type(f).__name__}`, not a "
                            "Finding")
        if not isinstance(f.code, str) or not isinstance(f.message, str):
            raise TypeError(f"validator `{name}` returned a finding whose code or message is "
                            "not a str")
        if f.verdict not in FINDING_VERDICTS:
            raise TypeError(f"validator `{name}` returned a finding whose verdict is not one "
                            "of " + ", ".join(f"`{v}`" for v in FINDING_VERDICTS))
        if isinstance(f.missing_facts, str) or not all(
                isinstance(m, str) for m in f.missing_facts):
            raise TypeError(f"validator `{name}` returned a finding whose missing facts are "
                            "not a list of str")
    check_value([f.to_json() for f in found], limits=CEILINGS,
                where=f"validator {name}", encoded=True)
    return found


@dataclass(frozen=True)
class ValidatorBinding:
    tool_pattern: str
    validator: DomainValidator
    name: str
    pack: str | None = None
