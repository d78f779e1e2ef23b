"""A pack edited in place under the same version is not the code that decided the run.

Finding: ``acme.rules`` 1.0.0 decided a run; then its ``checks.py`` was edited in place —
the version unchanged — so that its validator denies every credit. ``replay --strict`` of
the run said it reproduced it exactly: strict replay serves a validator's recorded answer
and never asked the code, and nothing in the journal said which files version 1.0.0 had
when it decided. The report vouched for a run under code that is no longer the code that
ran.
Now: each decision records the digest of its packs' files (``pack_digests``), and strict
replay refuses a run whose installed pack's files differ, naming the pack, the version,
the digest recorded and the digest installed (exit 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.workflow.replay import strict_replay
from tests.security.pack_versions import OLD, STRICT, old_folder, record_under_old

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_pack_edited_under_its_version_is_refused(home: Path) -> None:
    run = record_under_old(home)
    assert strict_replay(home, [run]).runs == [run]  # untouched: reproduced
    (old_folder(home) / "checks.py").write_text(STRICT, encoding="utf-8")
    # before: DID NOT RAISE (the recorded answer served, the edited code never asked)
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    message = caught.value.message
    assert f"`{OLD}`" in message and "differ" in message, message
    assert message.count("sha256:") == 2, message  # recorded and installed
