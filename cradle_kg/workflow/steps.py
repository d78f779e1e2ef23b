"""Workflows and step contracts.

A :class:`Workflow` is a sequence of steps. Every step declares

* ``inputs`` — the only values that reach it, each a reference ``input.<field>`` or
  ``<step>.<field>`` (no implicit reads: nothing else enters a model's context);
* ``input_model`` and ``output_model`` — pydantic schemas checked at run time;
* optionally ``when=(ref, value)`` — the step runs only when the reference equals value.

Three kinds: :class:`ModelStep` (schema-forced model call), :class:`ToolStep` (a proposal
through both gates and the gateway) and :class:`HumanStep` (a validation point that holds
no worker while it waits, and that progressive autonomy may take over).

Tools are whitelisted per step: the effective list is what the agent may do (its
permissions and scopes) ∩ what the step allows; it is computed before the call and
journaled with the step.
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from .budgets import cost_problem
from .errors import WorkflowError
from .schemas import fields_of

if TYPE_CHECKING:
    from ..loop.runtime import Runtime


@dataclass(frozen=True, kw_only=True)
class Step:
    id: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    #: field of the step input -> reference (``input.x`` or ``<step>.x``)
    inputs: Mapping[str, str] = field(default_factory=dict)
    when: tuple[str, Any] | None = None

    #: "model", "tool" or "human" — set by each kind of step
    kind: ClassVar[str] = ""


@dataclass(frozen=True, kw_only=True)
class ModelStep(Step):
    prompt: str
    prompt_version: str
    model: str
    #: tools the step allows the model to know about (∩ the agent's)
    tools: tuple[str, ...] = ()
    max_tokens: int = 512
    #: the declared cost of one call, charged against the budgets
    cost: float = 1.0
    #: the prompt is a template: ``{field}`` is replaced by that field of the step input
    template: bool = False

    kind: ClassVar[str] = "model"


@dataclass(frozen=True, kw_only=True)
class ToolStep(Step):
    #: the tool id (or leave empty and name a reference in ``tool_from``)
    tool: str = ""
    #: a reference to an earlier output that names the tool (e.g. a model's choice)
    tool_from: str | None = None
    #: globs of the tools this step allows (default: exactly ``tool``; a step whose tool
    #: ``tool_from`` names must give them)
    tools: tuple[str, ...] = ()
    #: the target, formatted with the validated step input (``ledger:{account}``)
    target: str

    kind: ClassVar[str] = "tool"


@dataclass(frozen=True, kw_only=True)
class HumanStep(Step):
    #: the field of the output a human decides (what autonomy learns to predict)
    decision_field: str
    #: the input fields a learned rule may read
    rule_fields: tuple[str, ...] = ()
    #: what the person is asked (``{field}`` is a field of the step input) and the answers
    #: they may give (empty: whatever the output contract accepts)
    question: str = ""
    answers: tuple[str, ...] = ()
    #: the scope the step is asked within: only an approver holding it (or ``*``) answers
    #: it, as an approval asked within a scope (none: any approver, as such an approval)
    scope: str | None = None

    kind: ClassVar[str] = "human"

    def scope_refusal(self, scopes: Sequence[str]) -> str | None:
        """Why an approver holding ``scopes`` may not answer this step, or None: a step
        asked within a scope is answered by who holds it or ``*``, one asked within none by
        who holds ``*``, as an approval (``tests/security/test_170``, ``test_181``)."""
        if "*" in scopes:
            return None
        if self.scope is None:
            return ("it is asked within no scope, and they answer only within "
                    + ", ".join(f"`{x}`" for x in scopes))
        return None if self.scope in scopes else f"it is asked within scope `{self.scope}`"


@dataclass(frozen=True, kw_only=True)
class Workflow:
    id: str
    version: str
    input_model: type[BaseModel]
    steps: tuple[Step, ...]
    agent: str
    tenant: str = "default"
    #: ``module:function`` returning this workflow — how a replay finds it again
    definition: str

    def __post_init__(self) -> None:
        seen: set[str] = {"input"}
        for step in self.steps:
            if step.id in seen:
                raise WorkflowError(f"workflow `{self.id}`: step id `{step.id}` is used twice")
            refs = [*step.inputs.values(), *([step.when[0]] if step.when else [])]
            if isinstance(step, ToolStep) and step.tool_from:
                refs.append(step.tool_from)
                # INVARIANT: a tool an earlier output names (a model's choice) is chosen
                # inside the step's own whitelist: without one, the whitelist was the
                # named tool itself, whichever it was (tests/security/test_410)
                if not step.tools:
                    raise WorkflowError(f"workflow `{self.id}`: tool step `{step.id}` takes "
                                        f"its tool from `{step.tool_from}` and needs its "
                                        "whitelist `tools`")
            for ref in refs:
                if ref.split(".", 1)[0] not in seen:
                    raise WorkflowError(f"workflow `{self.id}`: step `{step.id}` reads `{ref}` "
                                        "which is not the input or an earlier step")
            # INVARIANT: a call's cost is one a budget bucket can sum: finite, 0 or more,
            # bounded (a file's `cost: 1.0e+308` took the sums past the largest float:
            # `inf` on SQLite, every such append refused on PostgreSQL; NaN never
            # reached a limit: tests/security/test_407)
            problem = cost_problem(step.cost) if isinstance(step, ModelStep) else None
            if problem is not None:
                raise WorkflowError(f"workflow `{self.id}`: model step `{step.id}`: {problem}")
            if isinstance(step, HumanStep):
                fields = fields_of(step.input_model)
                unknown = [f for f in step.rule_fields if f not in fields]
                if unknown or step.decision_field not in fields_of(step.output_model):
                    raise WorkflowError(f"workflow `{self.id}`: human step `{step.id}` declares "
                                        f"unknown fields {unknown or [step.decision_field]}")
            seen.add(step.id)

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise InputError(f"workflow `{self.id}` has no step `{step_id}`")


def resolve(ref: str, context: Mapping[str, Mapping[str, Any]]) -> Any:
    head, _, rest = ref.partition(".")
    if head not in context:
        raise KeyError(ref)
    value: Any = context[head]
    for part in rest.split(".") if rest else ():
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(ref)
        value = value[part]
    return value


def step_input(step: Step, context: Mapping[str, Mapping[str, Any]]) -> BaseModel:
    """Build the step's input from its declared references only, and validate it."""
    raw: dict[str, Any] = {}
    for name, ref in step.inputs.items():
        try:
            raw[name] = resolve(ref, context)
        except KeyError:
            raise WorkflowError(f"step `{step.id}`: `{ref}` has no value") from None
    try:
        return step.input_model.model_validate(raw)
    except ValidationError as exc:
        raise WorkflowError(f"step `{step.id}`: input does not match its schema: "
                            f"{brief(exc)}") from exc


def should_run(step: Step, context: Mapping[str, Mapping[str, Any]]) -> bool:
    if step.when is None:
        return True
    try:
        return bool(resolve(step.when[0], context) == step.when[1])
    except KeyError:
        return False


def brief(exc: ValidationError) -> str:
    """A validation error in one line: the first few locations and messages."""
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        parts.append(f"`{loc}`: {err['msg'].lower()}")
    return "; ".join(parts)


def agent_tools(runtime: Runtime, agent_id: str) -> list[str]:
    """The registered tools this agent may call: a permission matches and scopes suffice."""
    agent = runtime.config.agent(agent_id)
    if agent is None:
        return []
    allowed = []
    for spec in runtime.tools.specs():
        permitted = any(p.subject == agent_id and fnmatch.fnmatchcase(spec.id, p.action_type)
                        for p in runtime.config.permissions)
        if permitted and set(spec.required_scopes) <= set(agent.permitted_scopes):
            allowed.append(spec.id)
    return allowed


def effective_tools(runtime: Runtime, agent_id: str, allowed: Sequence[str]) -> list[str]:
    """Agent's tools ∩ the step's globs, sorted — computed before every call."""
    return sorted(t for t in agent_tools(runtime, agent_id)
                  if any(fnmatch.fnmatchcase(t, pattern) for pattern in allowed))


def render(template: str, data: Mapping[str, Any]) -> str:
    """A prompt or question with ``{field}`` replaced by the step input's field (text as
    it is, anything else as canonical JSON); the fields were checked when it was loaded."""
    from ..canonical import canonical_json

    return fill(template, {k: v if isinstance(v, str) else canonical_json(v)
                           for k, v in data.items()})


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` filled with ``values``; what ``str.format`` raises (a format spec the
    value does not fit, a field it lacks) is a :class:`WorkflowError` — a step's failure,
    never a traceback out of the engine (a tool step's target: ``tests/security/test_408``)."""
    try:
        return template.format_map(values)
    except (KeyError, ValueError, IndexError, AttributeError, TypeError) as exc:
        raise WorkflowError(f"cannot fill the template: {exc}") from exc


def asked(step: HumanStep, data: Mapping[str, Any]) -> str:
    """A human step's question filled with its input (as written, if it cannot be)."""
    try:
        return render(step.question, data)
    except WorkflowError:
        return step.question


#: the package whose own modules a recorded definition may name before this process loaded
#: them: none of them runs code when imported but its ``__main__`` (refused)
_OWN_PACKAGE = "cradle_kg"
#: the operator's list of the modules of its Python workflows a reader may import (comma
#: separated): a process that reads such runs without defining them (``serve``, the CLI)
WORKFLOW_MODULES_ENV = "CRADLE_WORKFLOW_MODULES"


def _named_by_operator(module_name: str) -> bool:
    listed = os.environ.get(WORKFLOW_MODULES_ENV, "")
    return module_name in {m.strip() for m in listed.split(",") if m.strip()}


def workflow_factory(definition: str) -> Callable[[], object]:
    """The factory a recorded ``module:function`` names — or a one-line
    :class:`InputError`, nothing imported or called.

    INVARIANT: a journal does not choose the code its reader runs. The record is the
    journal's, and a journal may be handed over by the party being audited: naming
    ``os:abort``, ``this:x`` or any function on the path, it made ``workflow status`` and
    ``replay`` import that module and call that function (``tests/security/test_322``).
    So the module is one this process loaded already (the host that defined the
    workflow, a pack the home enables), one of cradle-kg's own, or one the operator names
    in ``$CRADLE_WORKFLOW_MODULES`` (never a ``__main__``), and the attribute a
    workflow factory: a function of that module, taking no argument, annotated to return
    a :class:`Workflow`."""
    module_name, _, attr = definition.partition(":")
    said = f"workflow definition `{definition}`"
    module = sys.modules.get(module_name)
    if module is None:
        own = module_name == _OWN_PACKAGE or module_name.startswith(_OWN_PACKAGE + ".")
        if module_name.rpartition(".")[2] == "__main__" or not (
                own or _named_by_operator(module_name)):
            raise InputError(f"{said}: module `{module_name}` is not loaded in this "
                             "process, and a journal does not choose the code its reader "
                             "imports", hint="read the run where the workflow's module is "
                             "loaded (the host that defined it, a pack the home enables), "
                             f"or name the module in ${WORKFLOW_MODULES_ENV}")
        try:
            module = importlib.import_module(module_name)
        except (ImportError, ValueError) as exc:
            raise InputError(f"{said}: {exc}") from None
    factory: object = getattr(module, attr, None) if attr.isidentifier() else None
    if not _is_factory(factory, module_name) or not callable(factory):
        raise InputError(f"{said}: `{attr}` is no workflow factory of `{module_name}` (a "
                         "function of the module taking no argument, annotated to return "
                         "a `Workflow`)")
    return factory


def _is_factory(found: object, module_name: str) -> bool:
    if not inspect.isfunction(found) or found.__module__ != module_name:
        return False
    returns = found.__annotations__.get("return")
    if returns is not Workflow and not (isinstance(returns, str)
                                        and returns.rpartition(".")[2] == "Workflow"):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(found).parameters.values())


def load_workflow(definition: str, *, version: str | None = None) -> Workflow:
    """Rebuild a workflow from its recorded ``module:function`` (:func:`workflow_factory`);
    check its version.

    (:func:`.definitions.load_recorded_workflow` also reads ``file:PATH#HASH``.)"""
    workflow = workflow_factory(definition)()
    if not isinstance(workflow, Workflow):
        raise InputError(f"`{definition}` did not return a workflow")
    if version is not None and workflow.version != version:
        raise InputError(f"workflow `{workflow.id}` is at version `{workflow.version}`, "
                         f"the run was recorded with `{version}`")
    return workflow
