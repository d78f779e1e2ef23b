"""An approval's expiry whose UTC form is before the year 1 is refused in the right words.

Finding (twentieth review, left then): an expiry (``until``) whose offset carries it past
either end of the calendar in UTC has no date there, and is refused before anything is
journaled (``test_65``). ``9999-12-31T23:59:59-05:00`` is past the last time a date holds;
``0001-01-01T00:00:00+05:00`` is 19:00 the day before the first — and was refused as
"later than `9999-12-31T23:59:59Z`, the last time a date holds", by ``approvals approve
--until`` (exit 2) and by ``POST /api/approvals/{id}/approve`` (422): a refusal that says
the opposite of what is wrong.

Now it says the expiry is earlier than ``0001-01-01T00:00:00Z``, the first time a date
holds: the same typed error (``input_error``, exit 2 / 422), nothing journaled; an expiry
past the last date is refused as before.

Beside it: an approval whose expiry passed is listed ``expired`` by ``approvals list``, but
``approvals show``, ``GET /api/approvals/{id}`` and ``GET /api/approvals`` said
``approved``. Each now says ``expired``, the status as of now (the record is unchanged).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from tests.inprocess import run_cli

from ..server.conftest import close_proposal
from .homes import json_api, opened_demo_home

EARLIER = "is earlier than `0001-01-01T00:00:00Z`, the first time a date holds"
LATER = "is later than `9999-12-31T23:59:59Z`, the last time a date holds"
#: each expiry with no date in UTC, and the words its refusal says
BEYOND = [("0001-01-01T00:00:00+05:00", EARLIER), ("0001-01-01T04:59:59+05:00", EARLIER),
          ("0001-01-01T00:00:00+23:59", EARLIER), ("9999-12-31T23:59:59-05:00", LATER)]


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = opened_demo_home(tmp_path_factory, "t342")
    with Runtime(home) as rt:
        out = rt.submit(close_proposal("acct-7"))
    assert out.approval is not None
    return home, out.approval.id


def _head(home: Path) -> tuple[int, str]:
    with Runtime(home) as rt:
        return rt.journal.head()


@pytest.mark.parametrize(("until", "words"), BEYOND)
def test_the_cli_says_which_end_of_the_calendar(waiting: tuple[Path, str], until: str,
                                                 words: str) -> None:
    home, approval = waiting
    before = _head(home)
    res = run_cli("approvals", "approve", approval, "--as", APPROVER, "--until", until,
                  "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    said = res.stdout + res.stderr
    assert res.returncode == 2, said
    # before: `0001-01-01T00:00:00+05:00` "is later than `9999-12-31T23:59:59Z`"
    assert f"`until`: `{until}` {words}" in said, said
    assert "Traceback" not in said
    assert _head(home) == before  # nothing journaled


@pytest.mark.parametrize(("until", "words"), BEYOND)
def test_the_api_says_which_end_of_the_calendar(waiting: tuple[Path, str], until: str,
                                                 words: str) -> None:
    home, approval = waiting
    with Runtime(home) as rt, json_api(rt) as client:
        before = rt.journal.head()
        r = client.post(f"/api/approvals/{approval}/approve", json={"until": until},
                        headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"})
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert detail["error"] == "input_error", detail
        assert detail["message"] == f"`until`: `{until}` {words}", detail
        assert rt.journal.head() == before


def test_the_approval_is_still_decided_as_before(waiting: tuple[Path, str]) -> None:
    home, approval = waiting
    res = run_cli("approvals", "approve", approval, "--as", APPROVER, "--until",
                  "2999-01-01T00:00:00+05:00", "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert res.returncode == 0, res.stdout + res.stderr


def test_an_approval_past_its_expiry_is_shown_expired(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = opened_demo_home(tmp_path_factory, "t342b")
    # decided now, until a second from now, which then passes: a runtime's clock moved
    # back no longer decides an expiry already past on a PostgreSQL journal's server
    # (test_595), and this host's clock is the server's here
    with Runtime(home) as rt:
        asked = rt.submit(close_proposal("acct-7")).approval
        assert asked is not None
        until = datetime.now(UTC) + timedelta(seconds=1)
        rt.decide_approval(asked.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, once=False, until=until)
    while datetime.now(UTC) <= until:
        time.sleep(0.1)
    shown = run_cli("approvals", "show", asked.id, "--home", str(home))
    assert shown.returncode == 0, shown.stderr
    # before: "approved", while `approvals list` said "expired"
    assert json.loads(shown.stdout)["approval"]["status"] == "expired", shown.stdout
    listed = run_cli("approvals", "list", "--format", "json", "--home", str(home))
    assert [a["status"] for a in json.loads(listed.stdout)] == ["expired"]
    with Runtime(home) as rt, json_api(rt) as client:
        auth = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        one = client.get(f"/api/approvals/{asked.id}", headers=auth).json()
        page = client.get("/api/approvals", headers=auth).json()
    assert one["approval"]["status"] == "expired", one
    assert [a["status"] for a in page] == ["expired"], page
