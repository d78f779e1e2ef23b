"""Verifier registry: independent reads that decide whether an effect really happened.

A verifier never looks at the call that wrote: it receives what was *intended* (the
action and its validated arguments) and what the tool *claimed* (its output, for
reference only), and it reads the target system through its own path. It answers
with named checks; gate 2 maps them onto its nine checks.

Conventional check names: ``resource_exists``, ``expected_state``, ``postconditions``;
any other name counts as a postcondition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from .errors import UnknownNameError
from .records import Action, CandidateFact, FactCheck, VerificationCheck, VerificationStatus


@dataclass(frozen=True)
class VerifyRequest:
    action: Action
    arguments: BaseModel
    #: what the tool said it did — a claim, never a proof
    claimed_output: BaseModel | None
    executed_at: datetime
    #: the proposal's candidate facts: a verifier may confirm or contradict each one
    #: (:attr:`VerifierReport.facts`), which is the only way a fact becomes Verified
    facts: tuple[CandidateFact, ...] = ()


@dataclass(frozen=True)
class VerifierReport:
    checks: tuple[VerificationCheck, ...]
    #: when the independent read happened (gate 2 checks its freshness)
    read_at: datetime
    #: what the verifier read, kept as evidence (stored content-addressed)
    evidence: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    #: what the read says of the proposal's candidate facts (by index)
    facts: tuple[FactCheck, ...] = ()
    #: the resources the verifier observed changed (a read-back, a diff of the resource
    #: set); gate 2 checks them against the contract's blast radius. None: not observed
    changed: tuple[str, ...] | None = None

    @property
    def status(self) -> VerificationStatus:
        return combine(c.status for c in self.checks)


def combine(statuses: Any) -> VerificationStatus:
    """Failed beats inconclusive beats verified; no check at all is inconclusive."""
    seen = list(statuses)
    if not seen:
        return VerificationStatus.INCONCLUSIVE
    if VerificationStatus.FAILED in seen:
        return VerificationStatus.FAILED
    if VerificationStatus.INCONCLUSIVE in seen:
        return VerificationStatus.INCONCLUSIVE
    return VerificationStatus.VERIFIED


VerifierFunction = Callable[[VerifyRequest], VerifierReport]


@dataclass
class VerifierRegistry:
    _verifiers: dict[str, VerifierFunction] = field(default_factory=dict)

    def register(self, verifier_id: str, fn: VerifierFunction) -> None:
        if verifier_id in self._verifiers:
            raise ValueError(f"verifier `{verifier_id}` is already registered")
        self._verifiers[verifier_id] = fn

    def get(self, verifier_id: str) -> VerifierFunction:
        try:
            return self._verifiers[verifier_id]
        except KeyError:
            raise UnknownNameError(f"unknown verifier `{verifier_id}`") from None

    def has(self, verifier_id: str) -> bool:
        return verifier_id in self._verifiers

    def ids(self) -> list[str]:
        return sorted(self._verifiers)
