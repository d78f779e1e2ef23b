"""A proxied write's verifying read: a field the answer lacks matches no value.

Finding: **the identity and ``expect`` checks of a proxied write's verifying read
(``verify.identity``, ``tests/security/test_475``) compared each field as text,
``str(answer.get(field))``**: a field the answer does not hold (or holds as ``null``) read
as the text ``"None"``, so a write whose argument was the string ``"None"`` (a note id, a
text) was "verified" by an answer that names no record at all, or that lacks the written
field — ``executed`` and, as the tool's lookup, reported done to crash recovery. The same
text comparison took ``true`` for the string ``"True"`` and an object for its Python
``repr``.

Now: a field matches its template's value only when the answer holds it as a string equal
to it, or as a number (not a boolean) whose text is it (an id ``1`` answered for the
argument ``"1"``, as before); a missing field, ``null``, a boolean, an object or a list
match nothing — ``verification_failed``, the lookup finds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.records import OutcomeStatus
from tests.security.test_475_proxy_verify_other_record import (
    written_and_looked_up,
)


def no_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    """The read names the note and says nothing of its text."""
    return {"id": asked}


def null_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"id": asked, "text": None}


def bool_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"id": asked, "text": True}


@pytest.mark.parametrize(("read_answers", "written"), [
    (no_text, "None"), (null_text, "None"), (bool_text, "True")],
    ids=["missing", "null", "boolean"])
def test_a_field_the_answer_lacks_matches_nothing(
        home: Path, read_answers: Any, written: str) -> None:
    outcome, looked_up, _ = written_and_looked_up(home, read_answers, text=written)
    assert outcome.status is OutcomeStatus.VERIFICATION_FAILED, (outcome.status,
                                                                 outcome.reasons)
    assert looked_up is None


def test_the_written_text_read_back_still_verifies(home: Path) -> None:
    def right(asked: str, notes: dict[str, str]) -> dict[str, Any]:
        return {"id": asked, "text": notes.get(asked)}

    outcome, looked_up, _ = written_and_looked_up(home, right, text="None")
    assert outcome.status is OutcomeStatus.EXECUTED, outcome.reasons
    assert looked_up is not None
