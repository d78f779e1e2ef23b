"""The operator's contracts for the tools of an upstream MCP server (``mcp proxy --contracts``).

An upstream MCP server says nothing the runtime can trust about what its tools do, so the
operator declares it, per tool, in a small YAML file::

    tools:
      append:                          # the upstream tool's name
        side_effect: reversible        # read_only · reversible · compensable · ...
        idempotency: keyed             # none · natural · keyed
        key_argument: key              # the upstream argument that carries the key
                                       # (absent: the key travels in `_meta`)
        target: "note:{id}"            # the target, from the call's arguments
        requires_evidence: 0
        verify:                        # the upstream read that confirms the effect
          tool: read
          arguments: {id: "{id}"}      # templates over the call's arguments
          expect: {text: "{text}"}     # field of the read's answer -> expected value

The file is checked on load; the first problem is one line, ``file:line: message``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ContractsError
from ..records import IdempotencyClass, SideEffectClass

_NAME = r"^[A-Za-z0-9_.-]{1,128}$"


class VerifyContract(BaseModel):
    """How the effect of a call is read back through the upstream."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(pattern=_NAME)
    #: the read's arguments: ``{field}`` is the call's argument of that name
    arguments: dict[str, str] = Field(default_factory=dict)
    #: the read's answer must hold these (string comparison after templating)
    expect: dict[str, str] = Field(default_factory=dict)


class ToolContract(BaseModel):
    """What the operator declares an upstream tool does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    side_effect: SideEffectClass
    idempotency: IdempotencyClass = IdempotencyClass.NONE
    key_argument: str | None = Field(default=None, pattern=_NAME)
    target: str | None = None
    requires_evidence: int = Field(default=0, ge=0, le=16)
    verify: VerifyContract | None = None
    description: str = ""

    @model_validator(mode="after")
    def _complete(self) -> ToolContract:
        if self.side_effect is not SideEffectClass.READ_ONLY:
            if not self.target:
                raise ValueError(f"a `{self.side_effect}` tool needs a `target` template")
            if self.verify is None:
                raise ValueError(f"a `{self.side_effect}` tool needs `verify` (an upstream "
                                 "read tool that confirms its effect)")
        return self


class Contracts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: dict[str, ToolContract] = Field(default_factory=dict)


def load_contracts(path: Path) -> Contracts:
    """The contracts in ``path``, or :class:`ContractsError` naming the line at fault."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractsError(f"cannot read the contracts file: {exc.strerror or exc}",
                             file=where) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ContractsError(f"not valid YAML: {problem}", file=where,
                             line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(data, dict):
        raise ContractsError("expected a mapping with a `tools:` key", file=where, line=1)
    try:
        return Contracts.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = tuple(first["loc"])
        msg = str(first["msg"]).lower().removeprefix("value error, ")
        dotted = ".".join(str(x) for x in loc)
        raise ContractsError(f"`{dotted}`: {msg}" if dotted else msg, file=where,
                             line=_line_of(node, loc)) from None


def _line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest YAML node on the path ``loc`` (1-based)."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if not isinstance(node, yaml.MappingNode):
            break
        for k, v in node.value:
            if k.value == str(key):
                line, node = k.start_mark.line + 1, v
                break
        else:
            break
    return line
