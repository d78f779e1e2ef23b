"""``strict_yaml.load`` (libyaml, checked on its nodes) reads what ``StrictLoader`` reads
and refuses what it refuses, with the same words and line — at a tenth of the cost."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cradle_kg import strict_yaml
from cradle_kg.strict_yaml import StrictLoader, YamlRefused

PACKS = Path(__file__).resolve().parents[1] / "packs"
CASES = [
    "a: 1\na: 2\n", "x:\n  b: 1\n  b: 2\n", "[" * 40 + "]" * 40, "{" * 33 + "}" * 33,
    "- {k: 1, k: 2}\n", "base: &b {k: 1}\nother:\n  <<: *b\n  k: 2\n", "", "- 1\n- 2\n",
    "a: [1, {b: 2, c: [3, {d: 4, d: 5}]}]\n", "? [1, 2]\n: x\n? [1, 2]\n: y\n",
    "a: &x [1, 2]\nb: *x\nc: *x\n", "a: 1\n---\nb: 2\n", "a: [\n",
    "<<: [{a: 1}, {a: 2}]\n", "x:\n  <<: [{a: 1}, {b: 2}]\n  a: 3\n",
    *(p.read_text(encoding="utf-8") for p in sorted(PACKS.glob("*/manifest.yaml"))),
]


def _read(load: object, text: str) -> tuple[str, object]:
    try:
        return "ok", load(text)  # type: ignore[operator]
    except YamlRefused as exc:
        return "refused", (exc.message, exc.line)
    except yaml.YAMLError as exc:
        return "invalid", type(exc).__name__


@pytest.mark.parametrize("text", CASES, ids=range(len(CASES)))
def test_the_fast_strict_load_agrees_with_the_strict_loader(text: str) -> None:
    assert _read(strict_yaml.load, text) == _read(
        lambda t: yaml.load(t, Loader=StrictLoader), text)
