"""``runs show`` masks a secret however many proposals the run made after it.

Finding (ninth attack review; noted and left by the eighth): ``runs show`` masks the
secret values of the proposals it reads — those on the page, and the run's newest
:data:`~cradle_kg.runs.SECRETS_LOOKBACK` (1,000) proposals of any kind. A run that went on
pushed an early secret-bearing proposal out of that window: a page showing the person's
request (``Please set the password of alice to Hunter2-Sekret-77``, recorded before the
proposal) printed the password in clear, in ``runs show --format json`` and the API's run
view — and an agent makes 1,000 proposals in minutes.

Now the window counts only the proposals that name secret arguments (the database passes
over the others, never decoded, so the view stays bounded by what it shows); a payload
whose *arguments* hold a ``secret_arguments`` key marks nothing, so it cannot push one out.
The window is made small here (3) to keep the run short: the rule is the same at 1,000.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import runs
from tests.security.test_131_secret_arguments_graph import ASKED, _submit, password_set

#: both journals: the window is a query of each (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.mark.parametrize("filler", ["plain", "spoofed"])
def test_an_early_secret_stays_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      filler: str) -> None:
    monkeypatch.setattr(runs, "SECRETS_LOOKBACK", 3)
    rt = password_set(tmp_path / "home")
    try:
        for n in range(1, 6):  # the run goes on: proposals with no secret
            args = {"secret_arguments": ["x"]} if filler == "spoofed" else {}
            _submit(rt, n, "read_email", args)  # (spoofed: an argument, not the mark)
        assert len(rt.journal.run_page("run:s", limit=100,
                                       kinds=("proposal.received",))) == 6
        first = rt.journal.run_page("run:s", limit=2)  # the request, recorded
        assert first[-1].kind == "input.recorded" and ASKED in json.dumps(first[-1].payload)
        shown = json.dumps(runs.shown_timeline(rt.journal, "run:s", first))
    finally:
        rt.close()
    assert ASKED.lower() not in shown.lower(), shown
    assert "**********" in shown
