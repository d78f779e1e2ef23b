"""The contracts of the governed tools: their input and output models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Env = Literal["staging", "production"]


class _In(BaseModel):
    # built by pydantic on first use, not when the pack is imported (`tools list`)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True)


_SHA = r"^[0-9a-f]{40}$"


class EnvInput(_In):
    env: Env


class ProbeOutput(_Out):
    model_config = ConfigDict(extra="allow")
    env: str
    outage: bool
    healthy: bool
    status_code: int | None
    commit: str | None
    checked_at: str
    reason: str | None = None
    checks: list[dict[str, Any]] = []


class TestsInput(_In):
    commit: str = Field(pattern=_SHA)


class TestsOutput(_Out):
    kind: Literal["observation"]
    commit: str
    outcome: Literal["passed", "failed", "error"]
    returncode: int | None
    output: str
    duration_ms: float


class FixInput(_In):
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    commit: str = Field(pattern=_SHA)


class FixOutput(_Out):
    incident_id: str
    fix_id: str
    acquired: bool


class DeployInput(_In):
    env: Env
    commit: str = Field(pattern=_SHA)
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    #: the recorded staging `incident_resolved` verification this production deploy cites
    staging_verification: str | None = None


class RollbackInput(_In):
    """What a compensation passes (the failed deploy's arguments) or an agent asks."""

    env: Env
    commit: str | None = Field(default=None, pattern=_SHA)  # the commit being rolled back
    incident_id: str | None = None
    fix_id: str | None = None
    staging_verification: str | None = None


class DeployOutput(_Out):
    env: str
    commit: str
    previous_commit: str | None = None
    idempotency_key: str | None = None
    replayed: bool = False
    dry_run: bool = False
    pid: int | None = None
    port: int | None = None
    released_fix: bool = False


class EvidenceRef(_Out):
    model_config = ConfigDict(extra="allow")  # an observation may say what it saw
    kind: Literal["test_observation", "verification"]
    ref: str


class ResolveInput(_In):
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    evidence: list[EvidenceRef] = []


class ResolveOutput(_Out):
    incident_id: str
    status: str


