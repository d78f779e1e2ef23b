"""A secret with a backslash, a quote or a control character is masked as messages quote it.

Finding (eighth attack review): the runtime masks a secret argument's value wherever a
text it relays quotes it (``test_136``, ``test_140``) — by the value as written. Messages
quote a value escaped: a schema validator's message is Python's ``repr`` (``api_key:
'Pa\\\\ss-Word-0042x' is too long``), a tool's JSON its ``\\"`` and ``\\t``. A password with a
backslash, a tab or a quote in it — common in generated ones — was relayed in clear: in
the agent's answer, the journaled decision, the graph's reasons. Measured before the fix:
all 3 such keys (a backslash, a tab, a quote) in clear in the refusal, where a plain one is masked.

Now each value is also masked in its escaped spellings (``repr``, JSON, ASCII or not).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.records import OutcomeStatus
from cradle_kg.redaction import MASK, scrub
from tests.lineage.kit import submit
from tests.security.test_140_secret_in_refused_arguments import rotate_key_runtime

pytest.importorskip("mcp")

SCHEMA = {"type": "object", "required": ["service", "api_key"], "properties": {
    "service": {"type": "string"},
    "api_key": {"type": "string", "writeOnly": True, "maxLength": 10}}}
KEYS = ["Pa\\ss-Word-0042x", "Tab\tKey-0042-long", 'Quo"te\'s-Key-0042']


def test_an_escaped_secret_is_masked_in_the_refusal(tmp_path: Path) -> None:
    rt = rotate_key_runtime(tmp_path / "home", SCHEMA)
    try:
        for n, key in enumerate(KEYS):
            out = submit(rt, n, "rotate_key", {"service": "billing", "api_key": key},
                         target="account:billing")
            assert out.status is OutcomeStatus.DENIED
            said = " ".join(out.reasons)
            assert f"'{MASK}' is too long" in said or f'"{MASK}" is too long' in said, said
            assert "0042" not in said, said
    finally:
        rt.close()


def test_scrub_reads_each_escaped_spelling() -> None:
    key = "Pa\\ss\t\u00e9-0042"
    for quoted in (repr(key), '"Pa\\\\ss\\t\\u00e9-0042"', '"Pa\\\\ss\\t\u00e9-0042"'):
        assert scrub(f"refused: {quoted} is wrong", [key]) in (
            f"refused: '{MASK}' is wrong", f'refused: "{MASK}" is wrong'), quoted
    assert scrub("a plain Sekret-0042 here", ["sekret-0042"]) == f"a plain {MASK} here"
