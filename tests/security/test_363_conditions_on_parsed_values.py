"""A permission condition reads a value the tool's model parses as the value it is.

Finding: a permission's ``arguments`` conditions read the tool's arguments as the model
holds them (``model_dump()``), and compare typed (``"1"`` is not ``1``). A value the model
parses into a type of its own was compared as that object: a choice (an ``Enum``: the
member ``Env.PRODUCTION``, not ``"production"``), a ``UUID``, a ``date``. It equalled no
string of the condition, so ``eq`` and ``in`` never held (every call denied), and ``ne``
and ``not_in`` *always* held: ``{"env": {"ne": "production"}}`` let a deploy to
production run, ``{"account": {"not_in": ["<frozen uuid>"]}}`` paid the frozen account,
``{"day": {"not_in": ["2026-12-25"]}}`` booked Christmas.

Now a condition reads such a value in its JSON form (a choice its value; a UUID, a date,
a URL the text the tool's JSON has: what a condition is written on, as Cedar reads it since
``test_115``); numbers, strings and booleans as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import conditioned_config, typed_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

FROZEN = "6f1c2a8e-0b7d-4c1e-9a55-3f0e2d9b7c11"
ALLOW_ALL = '@id("all")\npermit(principal, action, resource);\n'


class Env(Enum):
    STAGING = "staging"
    PRODUCTION = "production"


class Deploy(BaseModel):
    env: Env


class Pay(BaseModel):
    account: UUID
    amount: int


class Book(BaseModel):
    day: date


CONDITIONS: dict[str, dict[str, Any]] = {
    "test.deploy": {"arguments": {"env": {"ne": "production"}}},
    "test.pay": {"arguments": {"account": {"not_in": [FROZEN]}}},
    "test.book": {"arguments": {"day": {"not_in": ["2026-12-25"]}}},
    "test.deploy_in": {"arguments": {"env": {"in": ["staging"]}}},
}


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "all.cedar", ALLOW_ALL, (
            ("test.deploy", Deploy), ("test.pay", Pay), ("test.book", Book),
            ("test.deploy_in", Deploy)), config=conditioned_config(CONDITIONS)) as served:
        yield served


def _submit(rt: Runtime, pid: str, tool: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, tool, arguments, agent="agent:tester", target="test:a"))


@pytest.mark.parametrize(("tool", "arguments"), [
    ("test.deploy", {"env": "production"}),
    ("test.pay", {"account": FROZEN, "amount": 5}),
    ("test.book", {"day": "2026-12-25"}),
    ("test.deploy_in", {"env": "production"}),
])
def test_an_excluded_value_is_excluded(ran: tuple[Runtime, list[dict[str, Any]]],
                                       tool: str, arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-no", tool, arguments)
    # before: executed (ne / not_in held for the parsed value whatever it was)
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert out.decision.reason_codes == ("permission_condition_failed",)
    assert calls == []


@pytest.mark.parametrize(("tool", "arguments"), [
    ("test.deploy", {"env": "staging"}),
    ("test.pay", {"account": "0b7d6f1c-2a8e-4c1e-9a55-3f0e2d9b7c11", "amount": 5}),
    ("test.book", {"day": "2026-12-24"}),
    ("test.deploy_in", {"env": "staging"}),  # before: denied (`in` never held)
])
def test_an_allowed_value_runs(ran: tuple[Runtime, list[dict[str, Any]]],
                               tool: str, arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-ok", tool, arguments)
    assert out.status is OutcomeStatus.EXECUTED, (out.status, out.reasons)
    assert len(calls) == 1
