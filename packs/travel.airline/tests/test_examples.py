"""Every example of the pack (one allowed and one refused per rule, the expected verdict in
each) through the governed loop, each on a fresh copy of the benchmark's database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import testing

PACK = testing.pack_folder(__file__)
Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

EXAMPLES = sorted((PACK / "examples").glob("*.json"))


def test_every_rule_has_an_allowed_and_a_refused_example() -> None:
    by_rule: dict[str, set[bool]] = {}
    for file in EXAMPLES:
        ex = json.loads(file.read_text(encoding="utf-8"))
        for rule in [ex["rule"], *ex.get("also_shows", [])]:
            by_rule.setdefault(rule, set()).add(ex["expect"]["status"] == "executed")
    # the API's own refusals are observations, not rules: they have no allowed twin
    lonely = {r: v for r, v in by_rule.items() if r != "API" and v != {True, False}}
    assert not lonely, lonely
    assert len(EXAMPLES) >= 30


@pytest.mark.parametrize("file", EXAMPLES, ids=[f.stem for f in EXAMPLES])
def test_example(airline: Airline, file: Path) -> None:
    ex = json.loads(file.read_text(encoding="utf-8"))
    airline.run(ex["call"], **ex["expect"])
