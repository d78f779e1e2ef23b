"""Cedar decides on a URL, an id, a date as the tool will run with it, not as it was spelled.

Finding (sixth attack review; the rest of ``test_102``): gate 1 refuses an argument whose
scalar, as Cedar reads it, is not the one the tool's model makes of it — but only where the
model's value is itself a string, a boolean or a number. A value the model *parses* into
another type (a URL, a UUID, a date, a time) was not compared: Cedar read the agent's
spelling, the tool ran the parsed value. Each of these forbids, written on the value the
way the tool holds it, did not apply, and the tool ran the very call the forbid names:

* ``forbid … when { context.arguments.url like "https://evil.example/*" }`` — the agent
  wrote ``HTTPS://EVIL.EXAMPLE/x`` (pydantic's ``HttpUrl`` lower-cases the scheme and
  host): the tool fetched ``https://evil.example/x``;
* ``forbid … when { context.arguments.account == "9f1c…" }`` (a frozen account, a
  ``UUID``) — written in capitals, in braces or as ``urn:uuid:…``: paid;
* ``forbid … when { context.arguments.day == "2024-12-25" }`` (a ``date``) — written
  ``2024-12-25T00:00:00`` or as the timestamp ``1735084800``: booked.

Now such a value is compared in its JSON form (what the model serialises it as, the form a
policy is written on): every other spelling is refused before any policy is asked
(``invalid_arguments``, "write it as its type"), the canonical one meets the forbid.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, HttpUrl

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus

from .test_102_cedar_sees_tool_values import _denied_why as _denied
from .test_102_cedar_sees_tool_values import _submit, typed_tools

FROZEN = "9f1c2d3e-4b5a-4c6d-8e7f-0123456789ab"

POLICY = f"""
@id("no-evil-fetch")
forbid(principal, action == Action::"test.fetch", resource)
  when {{ context.arguments has url && context.arguments.url like "https://evil.example/*" }};

@id("frozen-account")
forbid(principal, action == Action::"test.pay_uuid", resource)
  when {{ context.arguments has account && context.arguments.account == "{FROZEN}" }};

@id("closed-on-christmas")
forbid(principal, action == Action::"test.book_day", resource)
  when {{ context.arguments has day && context.arguments.day == "2024-12-25" }};
"""


class Fetch(BaseModel):
    url: HttpUrl


class PayUuid(BaseModel):
    account: uuid.UUID
    amount: int


class BookDay(BaseModel):
    day: date


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "typed.cedar", POLICY,
                     (("test.fetch", Fetch), ("test.pay_uuid", PayUuid),
                      ("test.book_day", BookDay))) as served:
        yield served


CASES = [
    ("test.fetch", "url", ["https://evil.example/x", "HTTPS://EVIL.EXAMPLE/x",
                           "https://EVIL.example/x", "HTTPS://evil.example/x"]),
    ("test.pay_uuid", "account", [FROZEN, FROZEN.upper(), "{" + FROZEN + "}",
                                  "urn:uuid:" + FROZEN, FROZEN.replace("-", "")]),
    ("test.book_day", "day", ["2024-12-25", "2024-12-25T00:00:00", 1735084800]),
]


@pytest.mark.parametrize(("tool", "key", "value"),
                         [(t, k, v) for t, k, vs in CASES for v in vs])
def test_a_forbid_on_a_parsed_value_holds_however_it_is_written(
        ran: tuple[Runtime, list[dict[str, Any]]], tool: str, key: str, value: Any) -> None:
    rt, calls = ran
    arguments: dict[str, Any] = {key: value}
    if tool == "test.pay_uuid":
        arguments["amount"] = 5
    out = _submit(rt, "p-1", tool, arguments)
    # before: every spelling but the first ran the call the forbid names
    codes = _denied(out)
    assert calls == []
    canonical = next(vs[0] for t, _, vs in CASES if t == tool)
    if value == canonical:  # the policy's own refusal
        assert codes == ("forbidden_by_policy",), codes
    else:  # not the value the tool runs with: refused before any policy is asked
        assert codes == ("invalid_arguments",), codes
        assert "write it as its type" in out.reasons[0]


def test_values_written_in_their_form_run(ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    for pid, tool, arguments in (
            ("p-1", "test.fetch", {"url": "https://good.example/x"}),
            ("p-2", "test.pay_uuid", {"account": str(uuid.UUID(int=7)), "amount": 5}),
            ("p-3", "test.book_day", {"day": "2024-12-24"})):
        out = _submit(rt, pid, tool, arguments)
        assert out.status is OutcomeStatus.EXECUTED, (pid, out.reasons)
    assert [next(iter(c.values())) for c in calls] == ["test.fetch", "test.pay_uuid",
                                                      "test.book_day"]
