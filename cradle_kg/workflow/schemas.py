"""JSON Schema (Draft 2020-12) contracts for workflows written as files.

A step declared in YAML carries its input and output as JSON Schemas, not as Python
classes. :func:`schema_model` turns one into a pydantic model the engine uses like any
other step contract: ``model_validate`` runs the standard ``jsonschema`` validator (the
reference implementation of the draft, so a schema means what the specification says),
``model_json_schema`` returns the schema itself (what a model server is constrained by),
and ``model_dump`` gives the value back exactly as validated — no field is added, none
is coerced.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jsonschema  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from ..errors import InputError
from ..json_schema import errors as schema_errors
from ..json_schema import validator

#: the largest schema a file may declare (keeps a validator's work bounded)
MAX_SCHEMA_NODES = 2_000


class SchemaModel(BaseModel):
    """A value checked by a JSON Schema; every field is kept as given."""

    model_config = ConfigDict(extra="allow", frozen=True)

    json_schema: ClassVar[dict[str, Any]] = {}
    validator: ClassVar[Draft202012Validator]

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        try:
            errors = schema_errors(cls.validator, data)[:3]
        except ValueError as exc:
            raise PydanticCustomError("json_schema", "{said}", {"said": str(exc)}) from None
        if errors:
            said = "; ".join(f"`{'.'.join(str(p) for p in e.absolute_path) or '(root)'}`: "
                             f"{e.message}" for e in errors)
            raise PydanticCustomError("json_schema", "{said}", {"said": said})
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(cls.json_schema)

    @classmethod
    def properties(cls) -> tuple[str, ...]:
        props = cls.json_schema.get("properties", {})
        return tuple(props) if isinstance(props, dict) else ()


def schema_problem(schema: Any) -> tuple[list[str | int], str] | None:
    """Where a schema breaks the 2020-12 metaschema (path inside it, message), or None."""
    if not isinstance(schema, dict):
        return [], "a schema must be a mapping"
    if _nodes(schema) > MAX_SCHEMA_NODES:
        return [], f"a schema may have at most {MAX_SCHEMA_NODES} nodes"
    if schema.get("type") != "object":
        return [], "a step's schema must have `type: object`"
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return list(exc.absolute_path), exc.message
    try:  # its patterns run on a linear-time engine, its work is bounded
        validator(schema)
    except InputError as exc:
        return [], exc.message
    return None


def _nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


def schema_model(name: str, schema: dict[str, Any]) -> type[SchemaModel]:
    """A model class checked by ``schema`` (which :func:`schema_problem` accepted)."""
    attrs: dict[str, Any] = {"json_schema": schema, "validator": validator(schema),
                             "__module__": __name__}
    return type(name, (SchemaModel,), attrs)


def fields_of(model: type[BaseModel]) -> tuple[str, ...]:
    """The top-level fields of a step contract (pydantic fields or schema properties)."""
    if issubclass(model, SchemaModel):
        return model.properties()
    return tuple(model.model_fields)
