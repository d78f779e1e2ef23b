"""Attack review (a journal handed to an auditor): a payload nested past Python's limit.

``audit verify`` re-makes the digest of every decision about a tool with secret
arguments, so it decodes those payloads in Python. The file's author can chain a
``decision.made`` whose payload is valid JSON nested 1,500 deep — SQLite's JSON functions
(the derived tables are recomputed with them) read up to 2,000 levels; Python's decoder
stops at its recursion limit. ``Journal.verify()`` (and ``verify_journal``) then raised
``RecursionError`` instead of giving a verdict; the CLI turned it into an ``error:`` line
(exit 2), ``journal copy`` too. Now such a payload is a broken journal, its seq named:
nothing the runtime writes nests that deep (its inputs are bounded far below). A
decision whose payload is a JSON array naming ``"secret_arguments"`` crashed it the
same way (``AttributeError``); it names no secret and is passed over.
"""

from __future__ import annotations

import pytest

from cradle_kg.storage import verify_journal
from tests.inprocess import run_cli
from tests.security.handed import append_forged, handed_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's payload text")

_DEPTH = 1500


@pytest.mark.parametrize(("payload", "said"), [
    ('{"deep":' + "[" * _DEPTH + "]" * _DEPTH + ',"secret_arguments":["iban"]}',
     "is nested deeper"),
    ('["secret_arguments"]', None),
], ids=["nested", "array"])
def test_a_decision_verify_cannot_decode_is_broken_or_passed_over(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        payload: str, said: str | None) -> None:
    """A decision whose payload is a JSON array (``AttributeError`` before) is no
    decision about secrets: passed over, as any decision that names none."""
    home = handed_home(tmp_path_factory, "t294")
    journal = home / "journal.sqlite"
    seq = append_forged(journal, kind="decision.made", payload=payload)
    for semantics in (False, True):
        report = verify_journal(journal, semantics=semantics)
        if said is None:
            assert report.intact or report.invariant is not None, report
            continue
        assert not report.intact
        assert f"at seq {seq} {said}" in (report.reason or ""), report
    monkeypatch.delenv("CRADLE_JOURNAL_URL", raising=False)
    res = run_cli("audit", "verify", "--home", str(home))
    assert "error:" not in res.stdout + res.stderr
    if said is not None:
        assert res.returncode == 1, (res.stdout, res.stderr)
        assert f"at seq {seq} {said}" in res.stdout
