"""Tool registry: contracts, side-effect classes and the checks each class requires.

A tool declares its contract (§4 Tool) — id, version, input and output models, side-effect
class, required scopes, dry-run support — plus its idempotency class and, where it has
them, a compensation tool and a lookup used to reconcile after a crash.

Declaring the wrong class is a security defect (§13), so the registry refuses contracts
that do not carry what their class requires:

=================  ===========================================================
class              what the runtime requires and enforces
=================  ===========================================================
read_only          nothing extra; never needs an idempotency key
reversible         a verifier (gate 2 must read the effect back)
compensable        a verifier and a compensation tool
external_write     a verifier, and idempotency ``keyed`` or ``natural``
                   (the key travels to the remote system) plus a lookup
irreversible       a verifier and a human approval before every execution
                   (integrity rule 2); gate 1 turns any allow into
                   ``require_approval`` until a valid approval exists
=================  ===========================================================

The callable a tool registers is private to the registry: only the gateway receives it
(``_implementation``), so nothing else in the package holds a way to cause the effect.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    PydanticUserError,
    ValidationError,
)
from pydantic.fields import FieldInfo

from .errors import (
    REFUSAL_CODE,
    REFUSAL_MESSAGE_CHARS,
    InputError,
    ToolRefused,
    ToolUnavailableError,
    UnknownNameError,
)
from .records import IdempotencyClass, SideEffectClass, ToolRecord, VerificationCheck
from .redaction import SECRET_KEY, schema_secrets


class ToolCall(BaseModel):
    """What a tool receives: validated arguments and the key that travels with them."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True,
                              defer_build=True)  # built on first use (start-up)

    tool_id: str
    target: str
    arguments: BaseModel
    idempotency_key: str
    environment: str
    dry_run: bool = False
    run_id: str = ""
    actor: str = ""


ToolFunction = Callable[[ToolCall], BaseModel | dict[str, Any]]
#: a lookup answers "did the effect of this key happen?": the recorded output, or None
LookupFunction = Callable[[ToolCall], BaseModel | dict[str, Any] | None]
#: whether a tool can be reached now: None, or the retryable error a call is refused with
#: before anything is journaled (a proxied upstream that is gone)
ReadyFunction = Callable[[], ToolUnavailableError | None]

_REFUSED = re.compile(r"^tool `[^`]*` refused `[^`]*`: (?P<message>.*)$", re.DOTALL)


def refusal_of(exc: BaseException) -> tuple[str, str] | None:
    """The code and the (bounded) message of a tool's typed refusal
    (:class:`~cradle_kg.errors.ToolRefused`), or None: any other exception — and a refusal
    whose code is not a code, or whose code or message cannot be read as text — is an
    unknown outcome.

    INVARIANT: each is read once, here, guarded: this runs in the ``except`` that makes an
    observation of whatever the tool raised, after the tool ran. A subclass that never ran
    ``ToolRefused.__init__`` has no ``message``, and reading it raised out of ``submit``
    (no observation, no outcome); a message set later was journaled past the bound
    (``tests/security/test_574``)."""
    if not isinstance(exc, ToolRefused):
        return None
    try:
        code, message = exc.code, exc.message
    except Exception:
        return None
    if not isinstance(code, str) or not isinstance(message, str):
        return None
    # plain copies of their characters: a subclass of ``str`` answered its own slice (past
    # the bound) and its own ``__format__`` (another text than the code checked) when the
    # runtime bounded and wrote them (``tests/security/test_589``)
    code, message = str.__str__(code), str.__str__(message)
    if REFUSAL_CODE.fullmatch(code) is None:
        return None
    return code, message[:REFUSAL_MESSAGE_CHARS]


def refusal_error(ref: str, code: str, message: str) -> str:
    """The observation's ``error`` of a refusal: the tool, the code, the tool's message
    (as :func:`refusal_of` read them)."""
    return f"tool `{ref}` refused `{code}`: {message}"


def refusal_message(error: str | None) -> str:
    """The tool's own message in a refusal's :func:`refusal_error` text."""
    match = _REFUSED.match(error or "")
    return match["message"] if match else (error or "")


def relayed_refusal(checks: Iterable[VerificationCheck]) -> str:
    """The tool's message of a refusal as the runtime relays it (the outcome's first
    reason, the agent's answer): read from gate 2's ``output_schema`` check, whose detail
    is the observation's error with the call's secret values masked (``test_136``) — not
    from the observation, which keeps the tool's words as raised for strict replay
    (``tests/security/test_573``)."""
    for check in checks:
        if check.name == "output_schema" and check.detail:
            return refusal_message(check.detail)
    return ""


#: the order of severity, used to compare classes
SEVERITY = {
    SideEffectClass.READ_ONLY: 0,
    SideEffectClass.REVERSIBLE: 1,
    SideEffectClass.COMPENSABLE: 2,
    SideEffectClass.EXTERNAL_WRITE: 3,
    SideEffectClass.IRREVERSIBLE: 4,
}


@dataclass(frozen=True)
class ToolSpec:
    """A tool's contract. The implementation is held by the registry, not here."""

    id: str
    version: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    side_effect_class: SideEffectClass
    idempotency: IdempotencyClass
    required_scopes: tuple[str, ...] = ()
    supports_dry_run: bool = False
    compensation_tool: str | None = None
    verifier: str | None = None
    description: str = ""
    #: resources (globs) the tool may touch; a reported side effect outside them fails gate 2
    blast_radius: tuple[str, ...] = ("*",)
    cost: float = 0.0
    max_argument_bytes: int = 64 * 1024
    requires_evidence: int = 0
    #: how the target is derived from the arguments, so a policy written on the target
    #: covers what the tool touches: a template such as ``"ledger:{account}"`` (``{field}``
    #: is the argument's value, matched literally; ``*`` matches anything) or a callable
    #: from the parsed arguments to such a pattern. Required unless the tool is read-only.
    target_from: str | Callable[[BaseModel], str] | None = None
    # --- issue 14: what gate 2 reads the world against (cradle_kg/loop/gate2_world.py) -----
    #: SHACL shapes (Turtle text) the verifier's observation, projected as RDF, must
    #: satisfy after the action; ``blast_radius`` may use ``{argument}`` placeholders
    postconditions: tuple[str, ...] = ()
    # --- lineage (issue 15): who authored the output, which arguments' origins matter ---
    #: ``trusted`` (our own system of record) or ``untrusted`` (content a third party wrote)
    output_trust: str = "untrusted"
    #: trust per output field: ``(key, trust)`` pairs, a key at any depth (the deepest wins)
    field_trust: tuple[tuple[str, str], ...] = ()
    #: arguments whose origin decides (recipients, accounts, addresses, URLs, passwords)
    sensitive_arguments: tuple[str, ...] = ()
    #: words that choose this action when a request names them (``send``, ``transfer``)
    choice_words: tuple[str, ...] = ()
    #: what this action acts on, as its docs name it (``file``, ``email``, ``event``): a
    #: sentence a third party wrote that says a choice word together with one of these
    #: tells to do this action even when it names no value ("delete each of the files")
    object_words: tuple[str, ...] = ()
    #: output keys whose values are confidential (identity documents, payment credentials):
    #: lineage flags such a value in a sensitive argument the request did not ask to share
    confidential_fields: tuple[str, ...] = ()
    #: arguments that are credentials, besides those the input model types ``SecretStr`` /
    #: ``SecretBytes`` or marks ``writeOnly`` / ``format: password`` (:attr:`secrets`):
    #: the journal keeps them, every view and the graph show them masked
    secret_arguments: tuple[str, ...] = ()

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret arguments: declared, and those the input model's schema marks, each
        under every name the model reads its field by (:func:`names_read_as`: a key
        declared ``api_key`` and written ``apiKey``, its alias, was shown in clear in the
        graph, ``tests/security/test_366``)."""
        return names_read_as(self.input_model, tuple(sorted(
            {*self.secret_arguments, *_model_secrets(self.input_model)})))

    @property
    def sensitive_names(self) -> tuple[str, ...]:
        """The sensitive arguments under every name the input model reads each by
        (:func:`names_read_as`): an agent writes a field under its alias or its own name,
        and either one is the sensitive argument (``tests/security/test_365``)."""
        return names_read_as(self.input_model, self.sensitive_arguments)

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"

    def record(self, *, has_lookup: bool) -> ToolRecord:
        return ToolRecord(
            id=self.id,
            version=self.version,
            input_schema=self.input_model.model_json_schema(),
            output_schema=self.output_model.model_json_schema(),
            side_effect_class=self.side_effect_class,
            required_scopes=self.required_scopes,
            supports_dry_run=self.supports_dry_run,
            idempotency=self.idempotency,
            compensation_tool=self.compensation_tool,
            has_lookup=has_lookup,
            verifier=self.verifier,
            description=self.description,
        )

    def parse_arguments(self, arguments: dict[str, Any]) -> BaseModel:
        try:
            return self.input_model.model_validate(arguments)
        except ValidationError as exc:
            raise InputError(
                f"arguments of `{self.id}` do not match its input schema: {_pydantic_brief(exc)}"
            ) from exc

    def parse_output(self, output: BaseModel | dict[str, Any]) -> BaseModel:
        raw = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
        return self.output_model.model_validate(raw)

    def target_pattern(self, arguments: BaseModel) -> str | None:
        """The glob the target must match, given the arguments (None: not declared)."""
        if self.target_from is None:
            return None
        if callable(self.target_from):
            return self.target_from(arguments)
        values = arguments.model_dump(mode="json")
        return self.target_from.format_map(_Literal(values))

    def derive_target(self, arguments: Mapping[str, Any]) -> str:
        """The target the arguments (as the agent sent them) name, by ``target_from``: what
        an entry point that takes no target from its caller (MCP, LangGraph) proposes, and
        what a caller building its own proposal may use, so both routes name the same
        target for the same arguments. A tool without ``target_from`` (read-only) acts on
        ``tool:<id>``.

        The pattern for these arguments with its escapes undone (``ledger:a[*]b`` →
        ``ledger:a*b``); when the tool's pattern is itself a wildcard — the arguments name no
        one resource, e.g. an id that is missing or not a string, and the tool accepts any
        target of that kind (the tool's own answer decides the call) — its literal part
        before the first wildcard (``reservation:*`` → ``reservation:``), which the pattern
        matches. When no target can be derived (arguments the contract refuses, a template
        argument missing or not a string or an integer), ``tool:<id>``: gate 1 denies it
        with the reason, as it denies any target for such arguments."""
        fallback = f"tool:{self.id}"
        if self.target_from is None:
            return fallback
        try:
            pattern = self.target_pattern(self.parse_arguments(dict(arguments)))
        except (InputError, KeyError, ValueError, TypeError):
            return fallback
        if pattern is None:
            return fallback
        target = glob_instance(pattern)
        return target if fnmatch.fnmatchcase(target, pattern) else fallback

    def target_problem(self, target: str, arguments: BaseModel) -> str | None:
        """Why ``target`` is not the one the arguments name, or None when it is."""
        try:
            pattern = self.target_pattern(arguments)
        except (KeyError, ValueError, TypeError) as exc:
            return f"the target of `{self.id}` cannot be derived from its arguments: {exc}"
        if pattern is None:
            if self.side_effect_class is SideEffectClass.READ_ONLY:
                return None
            return f"tool `{self.id}` declares no target derivation (`target_from`)"
        if not fnmatch.fnmatchcase(target, pattern):
            return (f"`action.target`: `{target}` is not the target the arguments of "
                    f"`{self.id}` name (`{pattern}`)")
        return None

    def covers(self, resource: str) -> bool:
        return any(fnmatch.fnmatchcase(resource, pattern) for pattern in self.blast_radius)


def fill_template(pattern: str, arguments: BaseModel) -> str:
    """``pattern`` with each ``{argument}`` replaced by its value, escaped so it matches
    only itself (as in ``target_from``); raises KeyError/ValueError when it cannot."""
    return pattern.format_map(_Literal(arguments.model_dump(mode="json")))


def glob_instance(pattern: str) -> str:
    """The plainest name ``pattern`` (an ``fnmatch`` glob) stands for: its text with each
    one-character escape (``[*]``) undone, up to its first wildcard (``*``, ``?``, or a
    class that is not an escape) — the whole name when it has none."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[" and pattern[i + 2:i + 3] == "]" and pattern[i + 1:i + 2] not in ("", "!"):
            out.append(pattern[i + 1])
            i += 3
            continue
        if ch in "*?[":
            break
        out.append(ch)
        i += 1
    return "".join(out)


class _Literal(dict[str, Any]):
    """Argument values for a target template, escaped so they match only themselves."""

    def __getitem__(self, key: str) -> str:
        value = super().__getitem__(key)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(f"argument `{key}` is not a string or an integer")
        return "".join(f"[{ch}]" if ch in "*?[]" else ch for ch in str(value))


def secret_marks(spec: ToolSpec | None) -> dict[str, list[str]]:
    """What an event carrying this tool's arguments adds to its payload: the names of the
    secret ones (nothing when there are none, so other tools' events are unchanged)."""
    secret = spec.secrets if spec is not None else ()
    return {SECRET_KEY: list(secret)} if secret else {}


@lru_cache(maxsize=1024)
def names_read_as(model: type[BaseModel], names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` and every other name ``model`` reads the same field by: the field's own
    name, its alias, each of its validation aliases (the first key of an ``AliasPath``)."""
    wanted = set(names)
    out = set(wanted)
    for name, info in model.model_fields.items():
        spelled = {name, *_aliases(info)}
        if spelled & wanted:
            out |= spelled
    return tuple(sorted(out))


@lru_cache(maxsize=1024)
def fields_by_alias(model: type[BaseModel]) -> Mapping[str, str]:
    """Each name ``model`` reads a field by that is not the field's own name (its alias,
    its validation aliases), mapped to the field's name: what a permission condition
    written on such a name is told (a condition reads the arguments by field name)."""
    return MappingProxyType({
        alias: name for name, info in model.model_fields.items()
        for alias in _aliases(info) if alias != name and alias not in model.model_fields})


def run_arguments(parsed: BaseModel) -> dict[str, Any]:
    """The arguments as the tool runs with them, by field name: each field's value as the
    tool reads it (its attribute), a container's as the model dumps it by field name (a
    path reads into it), and what the model keeps beyond its fields. Not the model's dump
    alone, which its author shapes: ``serialize_by_alias`` names a field by its alias, a
    field ``exclude=True`` is left out, a serializer changes a value — and gate 1 read the
    dump: a forbid on the field did not meet the call (``tests/security/test_383``)."""
    out = parsed.model_dump(by_alias=False)
    for name in type(parsed).model_fields:
        value = getattr(parsed, name)
        if not isinstance(value, BaseModel | Mapping | list | tuple | set | frozenset):
            out[name] = value
        elif name not in out:  # left out of the dump: its content as the tool holds it
            out[name] = value.model_dump(by_alias=False) if isinstance(value, BaseModel) \
                else value
    return out


def filled_in(model: type[BaseModel]) -> Mapping[str, Any]:
    """The values a tool fills in itself for arguments left out that its model does not
    hold: an upstream MCP tool's schema defaults (its model keeps the arguments as sent,
    and the upstream fills them in: ``proxy.input_model``, ``tests/security/test_382``)."""
    found = getattr(model, "upstream_defaults", None)
    return found if isinstance(found, Mapping) else {}


def written_twice(model: type[BaseModel], arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of ``arguments`` that ``model`` reads as one field, when there are two or
    more (the first such field's): the model takes one of them, and a policy or lineage
    could read the other (``tests/security/test_365``)."""
    for name, info in model.model_fields.items():
        given = sorted(n for n in {name, *_aliases(info)} if n in arguments)
        if len(given) > 1:
            return tuple(given)
    return ()


def _aliases(info: FieldInfo) -> set[str]:
    found = {info.alias} if isinstance(info.alias, str) else set()
    given = info.validation_alias
    for alias in (given.choices if isinstance(given, AliasChoices) else [given]):
        if isinstance(alias, str):
            found.add(alias)
        elif isinstance(alias, AliasPath) and alias.path and isinstance(alias.path[0], str):
            found.add(alias.path[0])
    return found


@lru_cache(maxsize=1024)
def _model_secrets(model: type[BaseModel]) -> tuple[str, ...]:
    try:
        return schema_secrets(model.model_json_schema())
    except (PydanticUserError, TypeError, ValueError):  # no JSON Schema: none declared there
        return ()


def _pydantic_brief(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        parts.append(f"`{loc}`: {err['msg'].lower()}")
    return "; ".join(parts)


#: the largest cost one call may declare — a tool's (``ToolSpec.cost``), a workflow's model
#: call's: the usage buckets sum them, and a sum past the largest float read ``inf`` on
#: SQLite and failed every later append on PostgreSQL (``tests/security/test_407``, ``test_509``)
MAX_CALL_COST = 1e9


def cost_problem(cost: object) -> str | None:
    """Why ``cost`` is no cost a call may declare, or None: a number (not a boolean),
    finite, from 0 to :data:`MAX_CALL_COST` (``tests/security/test_407``, ``test_509``)."""
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return f"a cost is a number, not `{cost!r}`"
    if not math.isfinite(cost) or not 0 <= cost <= MAX_CALL_COST:
        return f"a cost is a finite number from 0 to {MAX_CALL_COST:g}, not `{cost!r}`"
    return None


def contract_problems(spec: ToolSpec, *, has_lookup: bool,
                      require_postconditions: bool = False) -> list[str]:
    """What the declared side-effect class requires and the contract does not carry.

    ``require_postconditions`` (a pack's tools): an ``external_write`` or ``irreversible``
    tool declares at least one postcondition shape (issue 14)."""
    problems: list[str] = []
    cls = spec.side_effect_class
    if (problem := cost_problem(spec.cost)) is not None:
        problems.append(f"`cost`: {problem}")  # what a cost limit counts (test_509)
    if require_postconditions and cls in (SideEffectClass.EXTERNAL_WRITE,
                                          SideEffectClass.IRREVERSIBLE) and not (
            spec.postconditions):
        problems.append(f"class `{cls}` needs at least one postcondition shape "
                        "(`postconditions`): what the world looks like after it")
    if cls is not SideEffectClass.READ_ONLY and not spec.verifier:
        problems.append(f"class `{cls}` needs a verifier that reads the effect back")
    if cls is not SideEffectClass.READ_ONLY and spec.target_from is None:
        problems.append(f"class `{cls}` needs `target_from`: how its target is derived from "
                        "its arguments")
    if cls is SideEffectClass.COMPENSABLE and not spec.compensation_tool:
        problems.append("class `compensable` needs a compensation tool")
    if cls is SideEffectClass.EXTERNAL_WRITE:
        if spec.idempotency is IdempotencyClass.NONE:
            problems.append("class `external_write` needs idempotency `keyed` or `natural`")
        if not has_lookup:
            problems.append("class `external_write` needs a lookup to reconcile after a crash")
    trusts = [spec.output_trust, *(t for _, t in spec.field_trust)]
    if any(t not in ("trusted", "untrusted") for t in trusts):
        problems.append("output trust is `trusted` or `untrusted`")
    if spec.idempotency is IdempotencyClass.KEYED and not has_lookup and cls in (
        SideEffectClass.EXTERNAL_WRITE,
    ):
        problems.append("idempotency `keyed` needs a lookup")
    return problems


@dataclass
class ToolRegistry:
    _specs: dict[str, ToolSpec] = field(default_factory=dict)
    _impls: dict[str, ToolFunction] = field(default_factory=dict)
    _lookups: dict[str, LookupFunction] = field(default_factory=dict)
    _ready: dict[str, ReadyFunction] = field(default_factory=dict)

    def register(self, spec: ToolSpec, fn: ToolFunction, *,
                 lookup: LookupFunction | None = None,
                 ready: ReadyFunction | None = None) -> None:
        problems = contract_problems(spec, has_lookup=lookup is not None)
        if problems:
            raise InputError(
                f"tool `{spec.ref}` has an incomplete contract: " + "; ".join(problems))
        if spec.id in self._specs:
            raise InputError(f"tool `{spec.id}` is already registered")
        self._specs[spec.id] = spec
        self._impls[spec.id] = fn
        if lookup is not None:
            self._lookups[spec.id] = lookup
        if ready is not None:
            self._ready[spec.id] = ready

    def unavailable(self, tool_id: str) -> ToolUnavailableError | None:
        """Why ``tool_id`` cannot be called now (its ``ready`` says so), or None: asked
        before a proposal writes anything (``tests/security/test_476``)."""
        ready = self._ready.get(tool_id)
        return ready() if ready is not None else None

    def get(self, tool_id: str) -> ToolSpec:
        try:
            return self._specs[tool_id]
        except KeyError:
            raise UnknownNameError(f"unknown tool `{tool_id}`") from None

    def has(self, tool_id: str) -> bool:
        return tool_id in self._specs

    def has_lookup(self, tool_id: str) -> bool:
        return tool_id in self._lookups

    def specs(self) -> list[ToolSpec]:
        return [self._specs[k] for k in sorted(self._specs)]

    def records(self) -> list[ToolRecord]:
        return [s.record(has_lookup=s.id in self._lookups) for s in self.specs()]

    # INVARIANT: only the gateway calls these two (tests/test_architecture.py holds it to that)
    def implementation(self, tool_id: str) -> ToolFunction:
        return self._impls[tool_id]

    def lookup_for(self, tool_id: str) -> LookupFunction | None:
        return self._lookups.get(tool_id)
