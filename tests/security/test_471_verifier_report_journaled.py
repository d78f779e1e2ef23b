"""A verifier's report that no journal can hold verifies nothing; it never crashes a call.

Finding (the twenty-fourth review, values that reach the record from a read of the world):
gate 2 kept a verifier's report as it came and journaled it with the verification. A
report holding a lone surrogate — a file name read from disk (Python gives its undecodable
bytes as ``\\udcXX``), JSON ``"\\udcff"`` an API answered the verifier's read — in the
resources it observed changed or in the evidence it read, made ``submit`` raise
``UnicodeEncodeError`` after the tool had run: the journal kept the intent and the
observation, no verification and no outcome; a ``NaN`` the read gave failed the same way.
What ``tests/security/test_98`` closed for an upstream's answers held for a verifier's read.

Now the report is checked with the strict loader's rules (no lone surrogate, no ``NaN``,
bounded nesting) as the verifier returns it: one it refuses is a verifier that verified
nothing — the ``verifier`` check ``inconclusive`` naming why, the effect not committed, a
verification and an outcome journaled — as a verifier that raises is. A verifier (or an
invariant) that raises with such a text in its message — "cannot read café.txt", the name
not UTF-8 on disk — crashed the call the same way: its message is journaled with the
surrogate written as its escape (``\\udce9``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus, VerificationStatus
from tests.conftest import make_config
from tests.test_gate2_world import _go, _ok, _tool

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.mark.parametrize(("name", "report"), [
    ("changed", {"changed": ("test:a\udcff",)}),
    ("evidence", {"stored": "a\udcff"}),
    ("key", {"stored": {"caf\udce9": 1}}),
    ("nan", {"stored": float("nan")}),
])
def test_an_unjournalable_read_is_inconclusive(home: Path, name: str,
                                              report: dict[str, Any]) -> None:
    with Runtime(home, config=make_config()) as rt:
        changed = report.get("changed")
        verify = _ok(changed=changed) if changed else _ok()
        if changed is None:
            def verify(req: Any, inner: Any = verify) -> Any:  # type: ignore[no-redef]
                got = inner(req)
                got.evidence.update(report)
                return got
        _tool(rt, "test.read", verify)
        # before: UnicodeEncodeError (ValueError for NaN) raised out of submit
        out = _go(rt, "p-" + name, "test.read")
        assert out.status is not OutcomeStatus.EXECUTED
        assert out.verification is not None
        assert out.verification.status is not VerificationStatus.VERIFIED
        check = next(c for c in out.verification.checks if c.name == "verifier")
        assert check.status is VerificationStatus.INCONCLUSIVE
        assert "refuses" in check.detail, check.detail
        kinds = [e.kind for e in rt.journal.events()]
        assert "verification.recorded" in kinds and kinds[-1] == "run.outcome", kinds


def test_a_verifier_raising_over_a_file_name_is_inconclusive(home: Path) -> None:
    def verify(req: Any) -> Any:
        raise ValueError("cannot read caf\udce9.txt")  # a name not UTF-8 on disk

    with Runtime(home, config=make_config()) as rt:
        _tool(rt, "test.raise", verify)
        out = _go(rt, "p-raise", "test.raise")  # before: UnicodeEncodeError
        assert out.verification is not None
        check = next(c for c in out.verification.checks if c.name == "verifier")
        assert check.status is VerificationStatus.INCONCLUSIVE
        assert "cannot read caf\\udce9.txt" in check.detail, check.detail
        assert out.status is not OutcomeStatus.EXECUTED
