"""Verifier reports for packs: named checks, and the read-back pair every write verifier has.

A verifier that reads a written thing back answers two conventional checks (see
:mod:`cradle_kg.verifiers`): ``resource_exists`` (the thing is there) and
``expected_state`` (it is what the action intended). :func:`read_back` builds that pair;
a thing that is not there fails both, with the reason given once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ..records import FactCheck, VerificationCheck, VerificationStatus
from ..verifiers import VerifierReport

Status = bool | str | VerificationStatus


def check(name: str, status: Status, detail: str = "") -> VerificationCheck:
    """A named check; ``status`` True/False, or ``verified`` / ``failed`` / ``inconclusive``."""
    if isinstance(status, bool):
        status = VerificationStatus.VERIFIED if status else VerificationStatus.FAILED
    return VerificationCheck(name=name, status=VerificationStatus(status), detail=detail)


def read_back(exists: bool, matches: bool, *, exists_detail: str = "",
              state_detail: str = "") -> tuple[VerificationCheck, VerificationCheck]:
    """``resource_exists`` and ``expected_state``; nothing that does not exist can match."""
    return (check("resource_exists", exists, exists_detail),
            check("expected_state", exists and matches, state_detail))


def report(checks: Iterable[VerificationCheck], *, read_at: datetime, source: str,
           evidence: Mapping[str, Any] | None = None,
           changed: Iterable[str] | None = None,
           facts: Iterable[FactCheck] = ()) -> VerifierReport:
    """The verifier's answer: its checks, when it read, what it read and from where —
    and, when it can say, which resources it observed changed (gate 2 checks them against
    the blast radius) and what its read says of the proposal's candidate facts."""
    return VerifierReport(checks=tuple(checks), read_at=read_at,
                          evidence=dict(evidence or {}), source=source,
                          changed=tuple(changed) if changed is not None else None,
                          facts=tuple(facts))
