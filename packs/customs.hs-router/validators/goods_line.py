"""Structural validation of a goods line, before any stage runs (closed world)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..models import GoodsLine
from ..normalisation import convert, document_candidates


def validate_goods_line(payload: Mapping[str, Any]) -> list[str]:
    """Problems with ``payload`` (empty list when it is a well-formed goods line)."""
    try:
        line = GoodsLine.model_validate(payload)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}" for e in exc.errors()
        ]
    problems: list[str] = []
    for index, candidate in enumerate(document_candidates(line.facts)):
        try:
            convert(candidate)
        except ValueError as exc:
            problems.append(f"facts.{index}: {exc}")
    return problems
