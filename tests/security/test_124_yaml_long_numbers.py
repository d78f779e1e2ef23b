"""A YAML scalar read as a number is refused past 4,300 characters, before it is built.

Finding (seventh attack review; noted by the sixth): YAML 1.1 reads ``59:59:59:…`` as a
base-60 integer, and PyYAML builds it digit group by digit group on a growing integer —
time that grows with the square of its length, holding the GIL. ``POST
/api/workflows/validate`` takes a 256 KiB body from any token (an agent's too), and one
scalar of that size (``version: 59:59:…``) held the server's process for 1.5 s (measured
by the sixth review; 10 s on this loaded machine) — every request of every client waited,
and an agent could send it again and again; ``workflow validate``, ``pack validate`` (a
pack under review) and the proxy's contracts did the same. It was not even refused:
the number was built and the file judged on its other keys.

Now the strict loaders refuse a scalar resolved as an integer or a float longer than
4,300 characters (Python's own limit for an integer's digits) before building it, with
its line: ``valid: false`` over HTTP, a ``ContractsError``, ``INVALID``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import strict_yaml
from cradle_kg.errors import ContractsError, WorkflowFileError
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.workflow.definitions import parse_definition

from .test_116_yaml_unbuildable_scalars import _workflow

#: 1,500 base-60 groups: 4,499 characters (a few ms to build; the cap is what is tested)
BASE_60 = ":".join(["59"] * 1500)


def test_the_loader_refuses_a_long_base_60_integer() -> None:
    with pytest.raises(strict_yaml.YamlRefused, match="a number of 4,499 characters") as no:
        strict_yaml.load(f"a: 1\nv: {BASE_60}\n")  # before: an integer of 8,900 bits
    assert no.value.line == 2


def test_a_workflow_sent_for_review_is_refused_with_its_line() -> None:
    with pytest.raises(WorkflowFileError) as refused:
        parse_definition(_workflow(BASE_60), name="request body", definition="file:<r>")
    assert any(":2: " in p and "a number of 4,499 characters" in p
               for p in refused.value.problems), refused.value.problems


def test_proxy_contracts_refuse_it(tmp_path: Path) -> None:
    path = tmp_path / "contracts.yaml"
    path.write_text(f"tools:\n  notes_add:\n    side_effect: {BASE_60}\n", encoding="utf-8")
    with pytest.raises(ContractsError, match="a number of") as refused:
        load_contracts(path)
    assert refused.value.line == 3


def test_ordinary_numbers_are_read() -> None:
    assert strict_yaml.load("a: 1:30\nb: 3.5\nc: 1:2:3.5\nd: " + "9" * 4300 + "\n") == {
        "a": 90, "b": 3.5, "c": 3723.5, "d": int("9" * 4300)}
