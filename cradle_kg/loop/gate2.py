"""Gate 2 — the post-execution gate: nine checks on what really happened (§6).

output schema · resource exists · expected state · domain invariants · no forbidden side
effect · freshness of the verifying read · evidence completeness · postconditions ·
compensation available

The verifier reads the target through an independent path; the tool's own claim is
never evidence. **A failed verification is a failure even when the tool said OK**, and
``inconclusive`` never commits.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel

from ..errors import InputError
from ..inputs import CEILINGS, check_value, journal_text
from ..records import (
    Action,
    CandidateFact,
    ExecutionObservation,
    FactCheck,
    VerificationCheck,
    VerificationStatus,
)
from ..redaction import scrub, secret_values
from ..tools import ToolSpec
from ..verifiers import VerifierRegistry, VerifierReport, VerifyRequest, combine
from . import gate2_world as world

V = VerificationStatus
#: a domain invariant: (action, claimed output) -> list of broken invariants (messages)
DomainInvariant = Callable[[Action, BaseModel | None], Sequence[str]]


@dataclass(frozen=True)
class InvariantBinding:
    tool_pattern: str
    invariant: DomainInvariant
    name: str


@dataclass(frozen=True)
class Gate2Result:
    status: VerificationStatus
    checks: tuple[VerificationCheck, ...]
    report: VerifierReport | None
    verifier_id: str
    compensation: str | None
    #: the verifier's findings on the proposal's candidate facts that stand
    fact_checks: tuple[FactCheck, ...] = ()


#: what a verifier's read is held to: the strict loader's rules (no lone surrogate, no
#: ``NaN``, bounded nesting) at the widths a record holds — the read of a system is as
#: large as that system's answer (``cradle_kg.integrations.proxy.ANSWER_LIMITS``' widths)
REPORT_LIMITS = CEILINGS.model_copy(update={"max_bytes": 1 << 31,
                                             "max_string_length": 1 << 31})


def _journalable(report: VerifierReport) -> None:
    """Raise :class:`InputError` when ``report`` holds a value no journal can hold.

    INVARIANT: a verifier's read is the world's word (a file name read from disk, an API's
    JSON ``"\\udcff"``): journaled as it came, a lone surrogate in it made ``submit`` raise
    ``UnicodeEncodeError`` after the tool ran — the intent and the observation journaled, no
    verification, no outcome; a ``NaN`` the same (``tests/security/test_471``). Refused
    here, it is a verifier that verified nothing."""
    try:
        check_value({"evidence": report.evidence, "changed": list(report.changed or ()),
                     "source": report.source,
                     "checks": [[c.name, c.detail] for c in report.checks],
                     "facts": [f.detail for f in report.facts]},
                    limits=REPORT_LIMITS, where="report", encoded=True)
    except InputError as exc:
        raise InputError(f"its report holds what the journal refuses: {exc.message}") from None


def _said(exc: BaseException) -> str:
    """An exception's text as a journal holds it: a lone surrogate (a file name read from
    disk) written as its escape — journaled raw, it raised ``UnicodeEncodeError`` out of
    ``submit`` after the tool ran (``tests/security/test_471``)."""
    return journal_text(str(exc))


def _broken(answer: object) -> list[str]:
    """What a domain invariant returned, as gate 2 journals it: its messages (each a
    ``str``; a lone surrogate in one written as its escape), or :class:`TypeError`.

    INVARIANT: an invariant's answer is held here, where the invariant is asked, not where
    the check is journaled: a ``None`` or a number among the messages raised ``TypeError``
    out of ``"; ".join``, and a message with a lone surrogate ``UnicodeEncodeError`` out of
    the journal — both out of ``submit`` *after* the tool ran (intent and observation
    journaled, no verification, no outcome); a bare ``""`` read as no message, the
    invariant holding (``tests/security/test_513``)."""
    if isinstance(answer, str | bytes | Mapping) or not isinstance(answer, Iterable):
        raise TypeError(f"returned `{type(answer).__name__}`, not a list of messages")
    said = list(answer)
    for message in said:
        if not isinstance(message, str):
            raise TypeError(f"returned a `{type(message).__name__}` among its messages, "
                            "not a str")
    return [journal_text(m) for m in said]


def _check(name: str, status: VerificationStatus, detail: str = "") -> VerificationCheck:
    return VerificationCheck(name=name, status=status, detail=detail)


class Gate2:
    def __init__(self, *, verifiers: VerifierRegistry, invariants: Sequence[InvariantBinding],
                 max_read_age: timedelta,
                 compensation: world.CompensationCheck | None = None) -> None:
        self.verifiers = verifiers
        self.invariants = invariants
        self.max_read_age = max_read_age
        #: whether the acting identity can run a compensation tool (registered, permitted)
        self.compensation = compensation

    def run(self, *, spec: ToolSpec, action: Action, arguments: BaseModel,
            observation: ExecutionObservation, output: BaseModel | None,
            output_error: str | None, started_at: datetime, now: datetime,
            facts: Sequence[CandidateFact] = ()) -> Gate2Result:
        checks: list[VerificationCheck] = []
        if output_error is not None:
            checks.append(_check("output_schema", V.FAILED, output_error))
        else:
            checks.append(_check("output_schema", V.VERIFIED, f"matches `{spec.ref}` output"))
        report, verifier_id = self._read_back(spec, action, arguments, output, started_at,
                                              checks, tuple(facts))
        checks += self._from_report(report, spec, arguments)
        checks.append(self._invariants(action, output))
        checks.append(world.blast_radius(spec, arguments, observation, report))
        checks.append(self._freshness(report, started_at, now))
        checks.append(self._evidence(spec, report))
        fact_check, fact_checks = world.facts(facts, report)
        if fact_check is not None:
            checks.append(fact_check)
        # INVARIANT: compensation availability is a check like the others: it counts
        checks.append(world.compensation(spec, action, self.compensation))
        status = combine(c.status for c in checks)
        values = secret_values(action.arguments, spec.secrets) if spec.secrets else ()
        if values:  # a verifier's detail, an exception's text, quote what they were given
            checks = [c.model_copy(update={"detail": scrub(c.detail, values)})
                      if c.detail else c for c in checks]
        return Gate2Result(status, tuple(checks), report, verifier_id, spec.compensation_tool,
                           fact_checks)

    def _read_back(self, spec: ToolSpec, action: Action, arguments: BaseModel,
                   output: BaseModel | None, started_at: datetime,
                   checks: list[VerificationCheck], facts: tuple[CandidateFact, ...] = ()
                   ) -> tuple[VerifierReport | None, str]:
        if not spec.verifier:
            # read-only tools change nothing; their result is an observation, not a fact
            return None, ""
        try:
            fn = self.verifiers.get(spec.verifier)
            report = fn(VerifyRequest(action=action, arguments=arguments,
                                      claimed_output=output, executed_at=started_at,
                                      facts=facts))
            if not isinstance(report, VerifierReport):
                raise TypeError(f"returned `{type(report).__name__}`, not a VerifierReport")
            _journalable(report)
            return report, spec.verifier
        except Exception as exc:  # INVARIANT: a verifier that raises verifies nothing
            checks.append(_check("verifier", V.INCONCLUSIVE,
                                 f"verifier `{spec.verifier}` raised: {type(exc).__name__}: "
                                 f"{_said(exc)}"))
            return None, spec.verifier

    @staticmethod
    def _from_report(report: VerifierReport | None, spec: ToolSpec,
                     arguments: BaseModel) -> list[VerificationCheck]:
        if report is None:
            status, detail = ((V.INCONCLUSIVE, "no independent read")
                              if spec.verifier else (V.VERIFIED, "read-only: nothing to read back"))
            out = [_check(n, status, detail) for n in ("resource_exists", "expected_state")]
            if spec.postconditions:  # declared, nothing observed to check them on
                return [*out, world.postconditions(spec, arguments, None, ())]
            return [*out, _check("postconditions", status,
                                 detail if spec.verifier else "read-only: not_declared")]
        by_name = {c.name: c for c in report.checks}
        out = []
        for name in ("resource_exists", "expected_state"):
            got = by_name.pop(name, None)
            out.append(got or _check(name, V.INCONCLUSIVE, "the verifier did not check it"))
        # the contract's shapes on the observation, and any other check the verifier made
        out.append(world.postconditions(spec, arguments, report, list(by_name.values())))
        return out

    def _invariants(self, action: Action, output: BaseModel | None) -> VerificationCheck:
        broken: list[str] = []
        for binding in self.invariants:
            if fnmatch.fnmatchcase(action.action_type, binding.tool_pattern):
                try:
                    broken.extend(_broken(binding.invariant(action, output)))
                except Exception as exc:
                    broken.append(f"invariant `{binding.name}` raised: {_said(exc)}")
        if broken:
            return _check("domain_invariants", V.FAILED, "; ".join(broken))
        return _check("domain_invariants", V.VERIFIED)

    def _freshness(self, report: VerifierReport | None, started_at: datetime,
                   now: datetime) -> VerificationCheck:
        if report is None:
            return _check("freshness", V.VERIFIED, "no read needed")
        if report.read_at < started_at:
            return _check("freshness", V.INCONCLUSIVE, "the verifying read predates the action")
        if now - report.read_at > self.max_read_age:
            return _check("freshness", V.INCONCLUSIVE, "the verifying read is too old")
        return _check("freshness", V.VERIFIED)

    @staticmethod
    def _evidence(spec: ToolSpec, report: VerifierReport | None) -> VerificationCheck:
        if report is None:
            return _check("evidence_completeness", V.VERIFIED, "read-only: nothing to prove")
        if not report.evidence:
            return _check("evidence_completeness", V.INCONCLUSIVE,
                          "the verifier kept no evidence of what it read")
        return _check("evidence_completeness", V.VERIFIED)
