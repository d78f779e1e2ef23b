"""Workflows written as YAML files, validated on load with ``FILE:LINE: message`` errors.

A file declares the workflow (id, version, agent, input schema) and its steps in order::

    workflow: pay-after-review
    version: "1"
    agent: agent:ops-assistant
    input: {type: object, properties: {...}, required: [...]}
    steps:
      - id: review
        kind: human
        question: "Credit {amount} to {account}?"
        answers: [pay, hold]
        inputs: {account: input.account, amount: input.amount}
      - id: pay
        kind: tool
        tool: demo.ledger.credit
        tools: [demo.ledger.credit]        # the step's whitelist (∩ the agent's tools)
        target: "ledger:{account}"
        when: {ref: review.answer, equals: pay}
        inputs: {account: input.account, amount: input.amount}

Input and output contracts are JSON Schemas (Draft 2020-12, :mod:`.schemas`). The loader
refuses YAML anchors and aliases (a billion-laughs document expands from a few lines),
duplicate keys, files over :data:`MAX_FILE_BYTES`, unknown keys, references to a later
step, template fields the step does not receive, and a tool outside the step's whitelist.
Every problem is reported with the line it is on.

A run records the file as ``file:PATH#sha256:...``: resuming it after the file was
edited is refused rather than run against a different definition.
"""

from __future__ import annotations

import fnmatch
import string
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..canonical import sha256_bytes
from ..errors import InputError, InputTooLargeError, WorkflowFileError
from ..inputs import read_file
from ..strict_yaml import C_LOADER, MAX_DEPTH, GuardedLoader, YamlRefused
from .budgets import MAX_CALL_COST
from .schemas import schema_model, schema_problem
from .steps import HumanStep, ModelStep, Step, ToolStep, Workflow, load_workflow

#: the largest workflow file read
MAX_FILE_BYTES = 256 * 1024
_ID = r"^[a-z][a-z0-9_-]{0,62}$"
#: a human step's scope, as an approver's ``scopes`` name it (``*`` is no scope)
_SCOPE = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$"
Path_ = tuple[str | int, ...]


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class When(_File):
    ref: str = Field(pattern=r"^[a-z][a-z0-9_-]*(\.[A-Za-z0-9_-]+)+$")
    equals: str | int | float | bool | None


class _StepFile(_File):
    id: str = Field(pattern=_ID)
    inputs: dict[str, str] = Field(default_factory=dict)
    input: dict[str, Any] | None = None
    when: When | None = None
    description: str = ""


class ModelStepFile(_StepFile):
    kind: Literal["model"]
    model: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    output: dict[str, Any]
    tools: list[str] = Field(default_factory=list)
    max_tokens: int = Field(512, ge=1, le=32_768)
    cost: float = Field(1.0, ge=0, le=MAX_CALL_COST)


class ToolStepFile(_StepFile):
    kind: Literal["tool"]
    tool: str = Field(min_length=1)
    tools: list[str] = Field(default_factory=list)
    target: str = Field(min_length=1)
    output: dict[str, Any] | None = None


class HumanStepFile(_StepFile):
    kind: Literal["human"]
    question: str = Field(min_length=1)
    #: the scope the step is asked within: only an approver holding it (or ``*``) answers
    scope: str | None = Field(None, pattern=_SCOPE)
    answers: list[str] = Field(default_factory=list)
    output: dict[str, Any] | None = None
    decision_field: str = "answer"
    rule_fields: list[str] = Field(default_factory=list)


StepFile = Annotated[ModelStepFile | ToolStepFile | HumanStepFile, Field(discriminator="kind")]


class WorkflowFile(_File):
    workflow: str = Field(pattern=_ID)
    version: str = Field(min_length=1, max_length=64)
    agent: str = Field(min_length=1)
    tenant: str = "default"
    description: str = ""
    input: dict[str, Any]
    steps: list[StepFile] = Field(min_length=1, max_length=100)


# --- YAML with line numbers -------------------------------------------------------------

#: the loaders of the two passes: libyaml's where PyYAML was built with it (the wheels are)
_EVENTS: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_COMPOSER: Any = C_LOADER if C_LOADER is not None else GuardedLoader


def _parse(text: str, name: str) -> tuple[Any, dict[Path_, int]]:
    """The document and the line of every key and item; anchors, aliases, tags and nesting
    deeper than :data:`~cradle_kg.strict_yaml.MAX_DEPTH` refused.

    The depth is counted on the event stream, which is read lazily and without recursion,
    before anything is composed (recursively) from it: a file nested 2,000 deep ended the
    composer in ``RecursionError`` — an HTTP 500 from ``POST /api/workflows/validate``, which
    any token may send — and 100,000 flow brackets (200 KB) cost the scanner 209 s of CPU
    before that (it revisits every open bracket at each token: ``tests/security/test_93``).
    The first bracket past the limit stops the read."""
    depth = 0
    try:
        # INVARIANT: libyaml's scanner and parser when PyYAML has them, in both passes:
        # the pure-Python ones took 4.7 s of CPU, holding the GIL, for 256 KiB of plain
        # `[1,1,…]` sent by any token (tests/security/test_166)
        for event in yaml.parse(text, Loader=_EVENTS):
            line = event.start_mark.line + 1 if event.start_mark else None
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise WorkflowFileError(f"nested too deep (more than {MAX_DEPTH} "
                                            "levels)", file=name, line=line)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise WorkflowFileError("YAML anchors and aliases are not accepted",
                                        file=name, line=line)
            tag = getattr(event, "tag", None)
            implicit = getattr(event, "implicit", True)
            written = not any(implicit) if isinstance(implicit, tuple) else not implicit
            if tag and written and tag != "!":
                raise WorkflowFileError(f"YAML tag `{tag}` is not accepted",
                                        file=name, line=line)
        loader = _COMPOSER(text)  # a value it cannot build: refused with its line
        try:
            node = loader.get_single_node()
            if node is None:
                raise WorkflowFileError("the file is empty", file=name, line=1)
            lines: dict[Path_, int] = {}
            _lines(node, (), lines, name)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except YamlRefused as exc:
        raise WorkflowFileError(exc.message, file=name, line=exc.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # libyaml's scanner, reading flow brackets ahead, stops at its own depth limit
        # before the events reach this one: the same refusal, said the same way
        problem = f"nested too deep (more than {MAX_DEPTH} levels)" \
            if "maximum nesting depth" in str(exc.problem) else \
            f"not valid YAML: {exc.problem or exc.context}"
        raise WorkflowFileError(problem, file=name,
                                line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise WorkflowFileError(f"not valid YAML: {exc}", file=name) from None
    return data, lines


def _lines(node: yaml.Node, path: Path_, out: dict[Path_, int], name: str) -> None:
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                # anchors refused, a merge could only inline mappings: two giving one key
                # gave it two values, one kept silently (tests/security/test_521)
                raise WorkflowFileError("a merge key (`<<`) is not accepted: write each key "
                                        "once", file=name, line=key.start_mark.line + 1)
            k = str(key.value)
            if k in seen:
                raise WorkflowFileError(f"duplicate key `{k}`", file=name,
                                        line=key.start_mark.line + 1)
            seen.add(k)
            out[(*path, k)] = key.start_mark.line + 1
            _lines(value, (*path, k), out, name)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, (*path, i), out, name)


def _line(lines: dict[Path_, int], path: Path_) -> int:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


# --- loading ----------------------------------------------------------------------------

def read_definition(path: Path) -> tuple[str, bytes]:
    """The text and bytes of a workflow file: a regular file (a FIFO would block for ever)
    of at most :data:`MAX_FILE_BYTES`, in UTF-8."""
    try:
        data = read_file(path, max_bytes=MAX_FILE_BYTES)
    except InputTooLargeError:
        raise WorkflowFileError(f"more than the limit of {MAX_FILE_BYTES} bytes",
                                file=str(path)) from None
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as exc:
        raise WorkflowFileError(f"not UTF-8 at byte {exc.start}", file=str(path)) from None


#: workflow files parsed in this process, by name and definition (resolved path and hash
#: of the bytes): a parse is a pure function of those, so the same bytes are parsed once
_PARSED: OrderedDict[tuple[str, str], Workflow | WorkflowFileError] = OrderedDict()
_PARSED_LOCK = threading.Lock()
#: how many parsed files a process keeps (the least recently read go first)
PARSED_KEPT = 64


def load_file(path: Path) -> Workflow:
    """Load and check a workflow file; every problem raises with its file and line.

    INVARIANT: the file is read and hashed at every call (an edit is seen at once), but the
    same bytes under the same name are parsed once a process: any token's
    ``GET /api/workflows`` parsed every file of the home under the API's lock, and each read
    of a run parsed its workflow again (``tests/security/test_182``)."""
    text, data = read_definition(path)
    definition = f"file:{path.resolve()}#{sha256_bytes(data)}"
    key = (str(path), definition)
    with _PARSED_LOCK:
        held = _PARSED.get(key)
        if held is not None:
            _PARSED.move_to_end(key)
    if held is None:
        try:
            held = parse_definition(text, name=str(path), definition=definition)
        except WorkflowFileError as exc:
            held = exc
        with _PARSED_LOCK:
            _PARSED[key] = held
            while len(_PARSED) > PARSED_KEPT:
                _PARSED.popitem(last=False)
    if isinstance(held, WorkflowFileError):
        raise _again(held)
    return held


def _again(exc: WorkflowFileError) -> WorkflowFileError:
    """A copy of a kept refusal to raise (a raised exception collects its traceback: the
    kept one is never raised itself, from any thread)."""
    fresh = WorkflowFileError.__new__(WorkflowFileError)
    fresh.args = exc.args
    fresh.__dict__.update(exc.__dict__)
    return fresh


def load_recorded_workflow(definition: str, *, version: str | None = None) -> Workflow:
    """The workflow a run recorded: ``module:function`` or ``file:PATH#HASH`` (refused if
    the file changed), at the recorded version."""
    if not definition.startswith("file:"):
        return load_workflow(definition, version=version)
    workflow = load_recorded(definition)
    if version is not None and workflow.version != version:
        raise InputError(f"workflow `{workflow.id}` is at version `{workflow.version}`, "
                         f"the run was recorded with `{version}`")
    return workflow


def load_recorded(definition: str) -> Workflow:
    """The workflow a run recorded (``file:PATH#HASH``), refused if the file changed."""
    where, _, digest = definition[len("file:"):].rpartition("#")
    workflow = load_file(Path(where))
    if workflow.definition.rpartition("#")[2] != digest:
        raise InputError(f"the workflow file `{where}` changed since the run started",
                         hint="restore it, or start a new run (bump `version` when editing)")
    return workflow


def parse_definition(text: str, *, name: str, definition: str) -> Workflow:
    raw, lines = _parse(text, name)
    if not isinstance(raw, dict):
        raise WorkflowFileError("a workflow file is a mapping (`workflow:`, `steps:`, ...)",
                                file=name, line=1)
    try:
        spec = WorkflowFile.model_validate(raw)
    except ValidationError as exc:
        problems = [_problem(err, lines, name) for err in exc.errors(include_url=False)]
        raise _many(problems, name) from None
    problems = _check(spec, lines, name)
    if problems:
        raise _many(problems, name)
    return _build(spec, definition)


def _many(problems: list[tuple[int, str]], name: str) -> WorkflowFileError:
    problems.sort()
    texts = tuple(f"{name}:{line}: {msg}" for line, msg in problems)
    line, msg = problems[0]
    return WorkflowFileError(msg + (f" (and {len(texts) - 1} more)" if len(texts) > 1 else ""),
                             file=name, line=line, problems=texts)


def _problem(err: Any, lines: dict[Path_, int], name: str) -> tuple[int, str]:
    loc = [p for i, p in enumerate(err["loc"])
           if not (i == 2 and err["loc"][0] == "steps" and p in ("model", "tool", "human"))]
    where = ".".join(str(p) for p in loc) or "(file)"
    msg = str(err["msg"]).lower()
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("kind")
        where = ".".join(str(p) for p in loc)
        msg = "must be one of `model`, `tool`, `human`"
    return _line(lines, tuple(loc)), f"`{where}`: {msg}"


def _template_problems(key: str, template: str, fields: set[str]) -> list[str]:
    """What is wrong with a template: a field the step's input lacks, a field nested in a
    format spec (``{x:>{width}}``: a width taken from the input built a string that long,
    ``tests/security/test_408``), or text ``str.format`` cannot read."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"`{{<{exc}>}}` in `{key}` is not a field of the step's input"]
    out = []
    for _, f, spec, _ in parsed:
        if f is None:
            continue
        if spec and "{" in spec:
            out.append(f"`{{{f}:{spec}}}` in `{key}`: a field inside a format spec is not "
                       "accepted")
        elif f not in fields:
            out.append(f"`{{{f}}}` in `{key}` is not a field of the step's input")
    return out


def _check(spec: WorkflowFile, lines: dict[Path_, int], name: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []

    def add(path: Path_, msg: str) -> None:
        out.append((_line(lines, path), msg))

    problem = schema_problem(spec.input)
    if problem:
        add(("input", *problem[0]), f"`input`: {problem[1]}")
    seen = {"input"}
    for i, step in enumerate(spec.steps):
        at: Path_ = ("steps", i)
        if step.id in seen:
            add((*at, "id"), f"step id `{step.id}` is used twice")
        refs = [(("inputs", k), v) for k, v in step.inputs.items()]
        if step.when:
            refs.append((("when", "ref"), step.when.ref))
        for where, ref in refs:
            if ref.split(".", 1)[0] not in seen:
                add((*at, *where), f"step `{step.id}` reads `{ref}`, which is not the input "
                                   "or an earlier step")
        for key in ("input", "output"):
            schema = getattr(step, key)
            problem = schema_problem(schema) if schema is not None else None
            if problem:
                add((*at, key, *problem[0]), f"`steps.{i}.{key}`: {problem[1]}")
        fields = set(step.inputs) if step.input is None else set(
            step.input.get("properties", {}) if isinstance(step.input.get("properties"), dict)
            else ())
        templates: list[tuple[str, str]] = []
        if isinstance(step, ModelStepFile):
            templates.append(("prompt", step.prompt))
        if isinstance(step, HumanStepFile):
            templates.append(("question", step.question))
            outs = set(step.output.get("properties", {})) if step.output else {step.decision_field}
            if not step.answers and step.output is None:
                add((*at, "answers"), f"human step `{step.id}` needs `answers` or `output`")
            if step.decision_field not in outs:
                add((*at, "decision_field"), f"`{step.decision_field}` is not a field of the "
                                             "step's output")
            for f in step.rule_fields:
                if f not in fields:
                    add((*at, "rule_fields"), f"rule field `{f}` is not a field of the input")
        if isinstance(step, ToolStepFile):
            templates.append(("target", step.target))
            if step.tools and not any(fnmatch.fnmatchcase(step.tool, g) for g in step.tools):
                add((*at, "tool"), f"tool `{step.tool}` is not in the step's whitelist "
                                   f"{step.tools}")
        for key, text in templates:
            for said in _template_problems(key, text, fields):
                add((*at, key), said)
        seen.add(step.id)
    return out


def _default_input(step: _StepFile) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {} for k in step.inputs},
            "required": sorted(step.inputs), "additionalProperties": False}


def _build(spec: WorkflowFile, definition: str) -> Workflow:
    def model(step: str, key: str, schema: dict[str, Any]) -> Any:
        return schema_model(f"{spec.workflow}.{step}.{key}", schema)

    steps: list[Step] = []
    for s in spec.steps:
        common: dict[str, Any] = {
            "id": s.id, "inputs": dict(s.inputs),
            "input_model": model(s.id, "input", s.input or _default_input(s)),
            "when": (s.when.ref, s.when.equals) if s.when else None}
        if isinstance(s, ModelStepFile):
            steps.append(ModelStep(
                **common, output_model=model(s.id, "output", s.output), prompt=s.prompt,
                prompt_version="prompt:" + sha256_bytes(s.prompt.encode())[7:19],
                model=s.model, tools=tuple(s.tools), max_tokens=s.max_tokens, cost=s.cost,
                template=True))
        elif isinstance(s, ToolStepFile):
            steps.append(ToolStep(
                **common, output_model=model(s.id, "output", s.output or {"type": "object"}),
                tool=s.tool, tools=tuple(s.tools), target=s.target))
        else:
            output = s.output or {
                "type": "object", "required": [s.decision_field], "additionalProperties": False,
                "properties": {s.decision_field: {"enum": list(s.answers)}}}
            steps.append(HumanStep(
                **common, output_model=model(s.id, "output", output),
                decision_field=s.decision_field, rule_fields=tuple(s.rule_fields),
                question=s.question, answers=tuple(s.answers), scope=s.scope))
    return Workflow(id=spec.workflow, version=spec.version, agent=spec.agent,
                    tenant=spec.tenant, input_model=model("workflow", "input", spec.input),
                    steps=tuple(steps), definition=definition)
