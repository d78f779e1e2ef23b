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
          identity: {id: "{id}"}       # the fields of the read's answer that name the
                                       # record it is about (by default: `arguments`,
                                       # each echoed back under its name)
        description: "Append a note."  # what the agent is shown (the operator's words)
        pin: "sha256:…"                # the upstream definition the operator reviewed
                                       # (`cradle-kg mcp pins` prints it)

The file is checked on load; the first problem is one line, ``file:line: message``. A key
given twice in one mapping (a second ``side_effect:`` that quietly overrides the first, a
tool declared twice) is refused, never resolved last-wins; so are a file that is not UTF-8,
one larger than :data:`MAX_CONTRACTS_BYTES` and nesting deeper than
:data:`cradle_kg.strict_yaml.MAX_DEPTH` (the one strict YAML loader).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ContractsError, InputError, InputTooLargeError
from ..inputs import read_file
from ..records import IdempotencyClass, SideEffectClass
from ..strict_yaml import StrictLoader, YamlRefused

#: an MCP tool name as the specification has it (SEP-986): what the proxy serves, and names
_NAME = r"^[A-Za-z0-9_.-]{1,128}$"
#: a pin: the ``sha256:<hex>`` of an upstream tool's definition (:func:`.upstream_pins.pin_of`)
PIN = r"^sha256:[0-9a-f]{64}$"
#: the largest contracts file read (a contract is a few lines per tool)
MAX_CONTRACTS_BYTES = 1024 * 1024


def is_tool_name(name: str) -> bool:
    """Whether ``name`` is a tool name the proxy may serve (and a contract may name)."""
    return re.fullmatch(_NAME[1:-1], name) is not None


class VerifyContract(BaseModel):
    """How the effect of a call is read back through the upstream."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(pattern=_NAME)
    #: the read's arguments: ``{field}`` is the call's argument of that name
    arguments: dict[str, str] = Field(default_factory=dict)
    #: the read's answer must hold these (string comparison after templating)
    expect: dict[str, str] = Field(default_factory=dict)
    #: the fields of the read's answer that identify the record it answers about, as
    #: templates over the call's arguments; None: the read's ``arguments``, each echoed
    #: back under its own name. An answer that does not name the call's record proves
    #: nothing (``tests/security/test_475``)
    identity: dict[str, str] | None = None

    def identity_fields(self) -> dict[str, str]:
        """What the read's answer must hold to be about the call's record."""
        return dict(self.arguments) if self.identity is None else dict(self.identity)


class ToolContract(BaseModel):
    """What the operator declares an upstream tool does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    side_effect: SideEffectClass
    idempotency: IdempotencyClass = IdempotencyClass.NONE
    key_argument: str | None = Field(default=None, pattern=_NAME)
    target: str | None = None
    requires_evidence: int = Field(default=0, ge=0, le=16)
    verify: VerifyContract | None = None
    #: what the agent is shown of the tool: the operator's words (else the upstream's own,
    #: only when ``pin`` vouches for them; else a neutral line)
    description: str = ""
    #: the definition of the upstream tool the operator reviewed (``cradle-kg mcp pins``):
    #: the proxy refuses to start when the upstream's differs, and shows the upstream's
    #: description and input schema only under a pin
    pin: str | None = Field(default=None, pattern=PIN)
    #: arguments that are credentials (besides those the upstream's ``inputSchema`` marks
    #: ``writeOnly`` or ``format: password``): masked in the graph and every view
    secret_arguments: tuple[Annotated[str, Field(pattern=_NAME)], ...] = Field(
        default=(), max_length=256)

    @model_validator(mode="after")
    def _complete(self) -> ToolContract:
        verify = self.verify
        _check_templates([self.target or "", *(verify.arguments.values() if verify else ()),
                          *(verify.expect.values() if verify else ()),
                          *(verify.identity_fields().values() if verify else ())])
        if self.side_effect is not SideEffectClass.READ_ONLY:
            if not self.target:
                raise ValueError(f"a `{self.side_effect}` tool needs a `target` template")
            if self.verify is None:
                raise ValueError(f"a `{self.side_effect}` tool needs `verify` (an upstream "
                                 "read tool that confirms its effect)")
            _check_identity(self.target, self.verify)
        return self


def placeholders(templates: Iterable[str]) -> set[str]:
    """The argument names ``templates`` use (checked by :func:`_check_templates` first)."""
    return {name for template in templates
            for _, name, _, _ in string.Formatter().parse(template) if name}


def _check_identity(target: str, verify: VerifyContract) -> None:
    """The verifying read can prove it is about the call's target: its ``identity`` (by
    default its ``arguments``) names every argument the target is made of. Else an answer
    about another record — another id, another bank's account of the same number — could
    verify the write (``tests/security/test_475``)."""
    named = placeholders(verify.identity_fields().values())
    missing = sorted(placeholders([target]) - named)
    if missing:
        which = "its `identity`" if verify.identity is not None else \
            "its `identity` (by default the read's `arguments`)"
        raise ValueError(
            f"`verify` cannot tell that its read answers about the call's target "
            f"`{target[:80]}`: {which} names no `{{{missing[0]}}}`; name the field(s) of "
            f"the read's answer that identify the record, e.g. `identity: "
            f"{{{missing[0]}: \"{{{missing[0]}}}\"}}`")


def _check_templates(templates: Iterable[str]) -> None:
    """A template names arguments, nothing else: ``{id}``, never ``{id.__class__}``,
    ``{id[0]}``, ``{id!r}``, ``{id:>999999999}`` (a gigabyte per call) or ``{}``."""
    for template in templates:
        try:
            parts = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"template `{template[:80]}`: {exc}") from None
        for _, name, spec, conversion in parts:
            if name is None:
                continue
            if not name or any(c in name for c in ".[]") or spec or conversion:
                raise ValueError(f"template `{template[:80]}`: a placeholder is an argument "
                                 "name in braces (`{name}`), without attribute, index, "
                                 "conversion or format")


class Contracts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tools: dict[str, ToolContract] = Field(default_factory=dict)

    @field_validator("tools")
    @classmethod
    def _names(cls, v: dict[str, ToolContract]) -> dict[str, ToolContract]:
        for name in v:
            if not is_tool_name(name):
                raise ValueError(f"`{name[:80]}` is not an MCP tool name "
                                 "(ASCII letters, digits, `_`, `.` and `-`; 1 to 128)")
        return v


def load_contracts(path: Path) -> Contracts:
    """The contracts in ``path``, or :class:`ContractsError` naming the line at fault."""
    where = str(path)
    try:  # a regular file only: a FIFO would block the proxy's start for ever
        raw = read_file(path, max_bytes=MAX_CONTRACTS_BYTES)
    except InputTooLargeError:
        raise ContractsError(f"the contracts file is larger than {MAX_CONTRACTS_BYTES} bytes",
                             file=where) from None
    except InputError as exc:
        reason = exc.message.removeprefix(f"`{path}`: ").removeprefix("cannot read: ")
        raise ContractsError(f"cannot read the contracts file: {reason}", file=where) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractsError(f"not UTF-8 (byte {exc.start})", file=where,
                             line=raw[:exc.start].count(b"\n") + 1) from None
    try:
        loader = StrictLoader(text)  # composed once: the nodes name the lines, then built
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except YamlRefused as exc:
        raise ContractsError(exc.message, file=where, line=exc.line) from None
    except RecursionError:  # belt and braces: strict_yaml's MAX_DEPTH stops the composer first
        raise ContractsError("nested too deep", file=where) from None
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
