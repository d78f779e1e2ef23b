"""Cedar policies, evaluated in process with cedarpy.

A policy set is parsed once into a ``cedarpy.PolicySet`` handle; every decision reuses
it. Cedar's semantics are ours: default deny, forbid overrides permit. On top of them:

* a policy that errors while evaluating makes the whole decision **fail closed**
  (deny, with the error as the reason) — never "allow by accident";
* obligations ride on annotations of the determining policies:
  ``@requires_approval("true")``, ``@approval_scope("…")``, ``@requires_evidence("N")``
  on a permit; ``@on_deny("repair" | "clarify")`` and ``@reason("…")`` on a forbid;
* ``@id("…")`` names a policy in reasons and in the graph.

The policy-set version is the sha256 of the canonical list of (file name, text), so a
decision names exactly the rules that were in force.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cedarpy

from ..canonical import content_hash
from ..errors import PolicyError
from ..records import PolicyResult


@dataclass(frozen=True)
class PolicySource:
    name: str
    text: str


@dataclass(frozen=True)
class PolicyOutcome:
    allowed: bool
    determining: tuple[PolicyResult, ...]
    errors: tuple[str, ...]
    requires_approval: bool = False
    approval_scope: str | None = None
    requires_evidence: int = 0
    on_deny: str | None = None  # "repair" / "clarify" when a forbid says so
    deny_reasons: tuple[str, ...] = field(default_factory=tuple)


def _annotations_of(text: str, name: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Map cedar's positional ids (policy0, …) to (effect, annotations) of one file."""
    try:
        est = json.loads(cedarpy.policies_to_json_str(text))
    except (ValueError, RuntimeError) as exc:
        raise PolicyError(f"cannot parse policies in `{name}`: {exc}") from exc
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for pid, body in est.get("staticPolicies", {}).items():
        annotations = {k: str(v) for k, v in (body.get("annotations") or {}).items()}
        out[pid] = (str(body.get("effect", "")), annotations)
    return out


class PolicyEngine:
    """A parsed, versioned Cedar policy set."""

    def __init__(self, sources: Iterable[PolicySource]) -> None:
        self.sources = tuple(sorted(sources, key=lambda s: (Path(s.name).name, s.text)))
        # the version depends on what the policies say, not on where the home is: file
        # names without their folders, and texts
        self.version = content_hash([[Path(s.name).name, s.text] for s in self.sources])
        text = "\n".join(s.text for s in self.sources)
        try:
            self._set = cedarpy.PolicySet.from_str(text)
        except ValueError as exc:
            for source in self.sources:  # name the file and line that does not parse
                line = parse_error_line(source.text)
                if line is not None:
                    raise PolicyError(f"{source.name}:{line}: cannot parse the policy: "
                                      f"{exc}") from exc
            names = ", ".join(f"`{s.name}`" for s in self.sources) or "(none)"
            raise PolicyError(f"cannot parse the policy set {names}: {exc}") from exc
        # cedar numbers policies policy0.. across the concatenated text; rebuild that
        # numbering from one parse of the whole set so annotations line up
        self._meta = _annotations_of(text, "policy set")
        self._ids = {pid: ann.get("id", pid) for pid, (_, ann) in self._meta.items()}

    @classmethod
    def from_paths(cls, paths: Iterable[Path]) -> PolicyEngine:
        sources: list[PolicySource] = []
        for path in paths:
            files = sorted(path.glob("*.cedar")) if path.is_dir() else [path]
            for file in files:
                try:
                    sources.append(PolicySource(str(file), file.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError) as exc:
                    raise PolicyError(f"cannot read the policy file `{file}`: {exc}") from exc
        return cls(sources)

    def __len__(self) -> int:
        return len(self._meta)

    def policy_ids(self) -> list[str]:
        return sorted(self._ids.values())

    def evaluate(
        self,
        *,
        principal: tuple[str, str],
        action: tuple[str, str],
        resource: tuple[str, str],
        context: Mapping[str, Any],
        entities: list[dict[str, Any]] | None = None,
    ) -> PolicyOutcome:
        request = {
            "principal": {"type": principal[0], "id": principal[1]},
            "action": {"type": action[0], "id": action[1]},
            "resource": {"type": resource[0], "id": resource[1]},
            "context": dict(context),
        }
        try:
            result = cedarpy.is_authorized(request, self._set, entities or [])
        except Exception as exc:  # cedar refused the request itself: fail closed
            return PolicyOutcome(False, (), (f"cedar could not evaluate the request: {exc}",))
        errors = tuple(str(e) for e in result.diagnostics.errors)
        # INVARIANT: cedar hands the determining policies back as an unordered set; sorted,
        # the same request gives the same decision record (strict replay compares hashes)
        determining = tuple(self._result(pid) for pid in sorted(result.diagnostics.reasons))
        if errors:
            # INVARIANT: an erroring policy never lets a request through.
            return PolicyOutcome(False, determining, errors)
        if not result.allowed:
            return self._denied(determining)
        return self._allowed(determining)

    def _result(self, pid: str) -> PolicyResult:
        effect, annotations = self._meta.get(pid, ("", {}))
        return PolicyResult(
            policy_id=self._ids.get(pid, pid), effect=effect, annotations=annotations
        )

    @staticmethod
    def _denied(determining: tuple[PolicyResult, ...]) -> PolicyOutcome:
        if not determining:
            return PolicyOutcome(False, (), (), deny_reasons=("no policy permits this action",))
        reasons = tuple(
            p.annotations.get("reason", f"forbidden by policy `{p.policy_id}`")
            for p in determining
        )
        modes = {p.annotations.get("on_deny") for p in determining}
        # forbid overrides everything: the mildest outcome is used only if every forbid agrees
        on_deny = modes.pop() if len(modes) == 1 else None
        return PolicyOutcome(
            False, determining, (), on_deny=on_deny if on_deny in ("repair", "clarify") else None,
            deny_reasons=reasons,
        )

    @staticmethod
    def _allowed(determining: tuple[PolicyResult, ...]) -> PolicyOutcome:
        approval = any(p.annotations.get("requires_approval") == "true" for p in determining)
        scope = next(
            (p.annotations["approval_scope"] for p in determining
             if "approval_scope" in p.annotations),
            None,
        )
        evidence = 0
        for p in determining:
            raw = p.annotations.get("requires_evidence")
            if raw is not None:
                evidence = max(evidence, int(raw) if raw.isdigit() else 1)
        return PolicyOutcome(True, determining, (), approval, scope, evidence)


def parse_error_line(text: str) -> int | None:
    """The first line of the first statement that does not parse, or None if all parse."""
    try:
        cedarpy.PolicySet.from_str(text)
        return None
    except ValueError:
        pass
    ends = [i for i, ch in enumerate(text) if ch == ";"]
    start = 0
    for end in [*ends, len(text)]:
        chunk = text[start:end + 1]
        if chunk.strip() and not chunk.strip().startswith("//"):
            try:
                cedarpy.PolicySet.from_str(chunk)
            except ValueError:
                offset = start + len(chunk) - len(chunk.lstrip())
                return text.count("\n", 0, offset) + 1
        start = end + 1
    return 1


def validate_against_schema(text: str, schema: str, *, name: str) -> list[str]:
    """Validate Cedar policies against a Cedar schema; messages name the file and policy."""
    try:
        result = cedarpy.validate_policies(text, schema)
    except Exception as exc:
        return [f"{name}: cannot validate: {exc}"]
    ids = {pid: ann.get("id", pid) for pid, (_, ann) in _annotations_of(text, name).items()}
    return [f"{name}: policy `{ids.get(e.policy_id, e.policy_id)}`: {e.error}"
            for e in result.errors]
