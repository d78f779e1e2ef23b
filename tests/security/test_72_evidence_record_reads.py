"""Showing a blob does not read, nor answer, every upload of it ever made.

Finding: ``GET /api/evidence/{ref}`` (any token: an agent's too) and ``cradle-kg evidence
show`` answered "who added this blob, when" with *every* upload of it: all the events
about the ref were read and decoded, and one entry per upload was answered. A blob is
content-addressed, so uploading the same bytes again journals another
``evidence.collected`` under the same ref, and an agent's token uploads — 1,000 times an
hour per identity by default, every identity's uploads of that blob counting. So each
view of the blob grew by a row decoded and an entry answered per upload ever made, under
the API's lock, without end (the sibling of ``test_70``, which closed the same read in
gate 1). Measured here: 40 uploads, 40 rows decoded and 40 entries answered; 120, 120.

Now a record shows the first upload and the newest 20 (``more: true`` when there were
more): at most 22 rows decoded (``Journal.subject_events``, one range of
``events_subject`` from each end), whatever the uploads. Counted as the event rows the
journal decodes (not time: the machine is shared), on both journals, through the CLI's
``evidence show`` (the route calls the same function).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime

from ..inprocess import run_cli
from .inputcli import fresh_home

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _show(home: Path, ref: str, decoded: Callable[[], int]) -> tuple[dict[str, Any], int]:
    synced = run_cli("graph", "sync", "--home", str(home))  # the graph's catch-up aside
    assert synced.returncode == 0, synced.stderr
    before = decoded()
    done = run_cli("evidence", "show", ref, "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), decoded() - before


def test_a_blob_uploaded_many_times_shows_the_first_and_the_newest(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        ref = rt.add_evidence(b"the invoice", kind="original", collector="user:alice")
        for i in range(39):
            rt.add_evidence(b"the invoice", kind=f"again-{i}", collector="agent:x")
    few, few_rows = _show(home, ref, decoded)
    with Runtime(home, graph_sync=False) as rt:
        for i in range(39, 119):
            rt.add_evidence(b"the invoice", kind=f"again-{i}", collector="agent:x")
    many, many_rows = _show(home, ref, decoded)
    # before: 40 entries and 40 rows, then 120 and 120
    assert len(many["added"]) == len(few["added"]) == 21, (few, many)
    assert many_rows <= few_rows <= 22, (few_rows, many_rows)
    assert many["more"] is True and many["intact"] is True
    assert many["added"][0]["by"] == "user:alice" and many["added"][0]["kind"] == "original"
    assert [a["kind"] for a in many["added"][1:]] == [f"again-{i}" for i in range(99, 119)]


def test_a_blob_added_a_few_times_shows_them_all(tmp_path: Path,
                                                 decoded: Callable[[], int]) -> None:
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        ref = rt.add_evidence(b"a page", kind="first", collector="user:alice")
        rt.add_evidence(b"a page", kind="second", collector="agent:x")
    shown, _ = _show(home, ref, decoded)
    assert [a["kind"] for a in shown["added"]] == ["first", "second"]
    assert shown["more"] is False
