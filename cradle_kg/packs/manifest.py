"""The pack manifest: ``manifest.yaml``, schema-validated.

Paths are relative to the pack folder; ``module:attribute`` entries are relative to the
pack's Python package (the folder, imported under a synthetic name). Errors name the
manifest file and the line of the offending key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import strict_yaml
from ..errors import InputError, InputTooLargeError, ManifestError
from ..inputs import read_text_file
from ..strict_yaml import YamlRefused

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$")
PACK_ID = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$")
ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    version: str
    core_ontology: str = Field(description="the core ontology versions it works with, e.g. >=0.1.0")
    description: str = ""
    namespace: str | None = None
    entities: list[str] = []
    ontology: list[str] = []
    shapes: list[str] = []
    policies: list[str] = []
    #: SPARQL ASK/SELECT rules over a proposal's lineage, asked at gate 1 (``.rq`` files)
    graph_policies: list[str] = []
    cedar_schema: str | None = None
    #: ``module:attribute`` of each declaration (``cradle_kg.packs.sdk``) the loader registers
    validators: list[str] = []
    tools: list[str] = []
    verifiers: list[str] = []
    invariants: list[str] = []
    #: ``module:attribute`` of each ``@projection`` hook: the pack's records in the run graph
    projections: list[str] = []
    #: ``module:attribute`` of each ``@knowledge`` graph (reference data, built at load time)
    knowledge: list[str] = []
    #: "module:function" called with (runtime, input dict) -> outcome dict, for `pack run`
    example_runner: str | None = None
    #: "module:function" called by `cradle-kg pack init` with (context, data dir or None,
    #: clock or None) -> a RuntimeConfig of the identities and permissions the home needs
    init: str | None = None
    queries: dict[str, str] = {}
    examples: list[str] = []
    data: dict[str, str] = {}
    hooks: dict[str, str] = {}

    _lists = field_validator("ontology", "shapes", "policies", "examples", mode="before")(
        _as_list)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not PACK_ID.match(value):
            raise ValueError("a pack id is dotted lowercase words, like `customs.hs-router`")
        return value

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not SEMVER.match(value):
            raise ValueError(f"`{value}` is not a semantic version (MAJOR.MINOR.PATCH)")
        return value

    @field_validator("core_ontology")
    @classmethod
    def _spec(cls, value: str) -> str:
        if not re.match(r"^(>=|==|<|<=|>|~=)?\s*\d+\.\d+\.\d+$", value.strip()):
            raise ValueError(f"`{value}` is not a version requirement like `>=0.1.0`")
        return value

    @field_validator("validators", "tools", "verifiers", "invariants", "projections",
                     "knowledge")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        for item in value:
            if not ENTRY.match(item):
                raise ValueError(f"`{item}` is not a `module:attribute` entry")
        return value

    @field_validator("init")
    @classmethod
    def _init(cls, value: str | None) -> str | None:
        if value is not None and not ENTRY.match(value):
            raise ValueError(f"`{value}` is not a `module:attribute` entry")
        return value

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"


def line_of(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return None


#: a manifest is a page of keys; anything larger is refused before YAML sees it
MAX_MANIFEST_BYTES = 256 * 1024


#: libyaml's safe loader when PyYAML was built with it (it is, in the wheels): the same
#: events and errors (with their marks) as the pure-Python one, ~10x faster — the scan for
#: aliases, before the document is built by the strict loader
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_aliases(text: str, path: Path) -> None:
    """YAML aliases (``*a``) let a few bytes expand into a huge document; a manifest needs
    none, so one is refused before the document is built."""
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1 if event.start_mark else 1
            raise ManifestError(f"{path}:{line}: YAML aliases are not allowed in a manifest")


def read_manifest(folder: Path) -> Manifest:
    path = folder / "manifest.yaml"
    if not path.is_file():
        raise ManifestError(f"`{folder}`: no manifest.yaml in this folder")
    try:
        text = read_text_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except InputTooLargeError:
        raise ManifestError(f"{path}: larger than {MAX_MANIFEST_BYTES} bytes") from None
    except InputError as exc:
        raise ManifestError(exc.message) from None
    try:
        _refuse_aliases(text, path)
        # INVARIANT: the strict loader — a key given twice (a second `policies:` dropping
        # the pack's forbid policies) is refused, never resolved last-wins
        # and no merge key: with aliases refused it can only inline mappings, and two
        # giving one key gave it two values (tests/security/test_521)
        raw = strict_yaml.load(text, merges=False)  # a safe loader: plain data only
    except YamlRefused as exc:
        raise ManifestError(f"{path}:{exc.line}: {exc.message}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        # one line: a reader error (a NUL byte, a control character) is several lines of
        # PyYAML's text (tests/security/test_278)
        why = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ManifestError(f"{path}{line}: not valid YAML: {why}") from exc
    if not isinstance(raw, dict):
        raise ManifestError(f"{path}:1: a manifest is a mapping of keys")
    if "runtime" in raw:
        raise ManifestError(f"{path}:{line_of(text, 'runtime:') or 1}: `runtime` (a "
                            "registration hook) is no longer read: name each tool, verifier, "
                            "validator and invariant in its list")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        number = line_of(text, f"{key}:") if key else None
        where = f"{path}:{number}" if number else str(path)
        loc = ".".join(str(x) for x in first["loc"])
        raise ManifestError(f"{where}: `{loc}`: {first['msg'].lower()}") from exc


def version_tuple(version: str) -> tuple[int, int, int]:
    match = SEMVER.match(version)
    if not match:
        raise ManifestError(f"`{version}` is not a semantic version")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


#: a pre-release identifier: a number (compared as one, below any word) or a word
_PreKey = tuple[tuple[int, int, str], ...]


def version_key(version: str) -> tuple[int, int, int, int, _PreKey]:
    """``version``'s place in semantic-version precedence (semver.org, item 11): the three
    numbers, then a release above its pre-releases, whose dot-separated identifiers compare
    in turn — a number as a number and below any word, a word as ASCII text, and fewer
    identifiers below more when the others are equal.

    INVARIANT: which version an id alone names (:meth:`.registry.PackRegistry.get`) is
    decided by this, never by the three numbers alone: those tie a release with its
    candidates, and the first folder read won (``tests/security/test_514``)."""
    match = SEMVER.match(version)
    if not match:
        raise ManifestError(f"`{version}` is not a semantic version")
    numbers = int(match.group(1)), int(match.group(2)), int(match.group(3))
    pre = version.partition("-")[2]
    if not pre:
        return (*numbers, 1, ())
    return (*numbers, 0, tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                               for part in pre.split(".")))


def satisfies(version: str, requirement: str) -> bool:
    match = re.match(r"^(>=|==|<|<=|>|~=)?\s*(\d+\.\d+\.\d+)$", requirement.strip())
    if not match:
        return False
    op, wanted = match.group(1) or "==", version_tuple(match.group(2))
    have = version_tuple(version)
    if op == "~=":
        return have >= wanted and have[0] == wanted[0]
    return {">=": have >= wanted, "==": have == wanted, "<": have < wanted,
            "<=": have <= wanted, ">": have > wanted}[op]
