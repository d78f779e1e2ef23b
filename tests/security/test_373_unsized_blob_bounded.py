"""A blob with no recorded size is read no further than any such blob can hold.

Finding (left open by ``test_360``): ``evidence show`` and ``GET /api/evidence/{ref}``
re-hash a blob in chunks, and compare its file's size with the size the journal recorded
for it first. A blob no ``evidence.collected`` sizes — a policy text — had no size to
compare, so its file was hashed to its end: replaced by a sparse file of 64 GiB (no disk
used), each view read 64 GiB at the hash's speed (1.56 s a GiB here: about 100 s) before
it said the blob was edited.

Such a blob is a policy text, read from a policy file of at most
``MAX_POLICY_FILE_BYTES`` (16 MiB; more than the 1 MiB upload cap, so the upload cap is
not the bound: a genuine policy text of 2 MiB is shown intact). A file larger than that
is not genuine: refused as edited from its size, before a byte is read (exit 1, 409),
and the hash reads at most one byte past the bound (a file that grows while read).
The kernel's count of bytes this process read (``/proc/self/io``) shows what was read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import JournalError
from cradle_kg.evidence import MAX_EVIDENCE_BYTES, MAX_UNSIZED_BYTES
from cradle_kg.policy.cedar import MAX_POLICY_FILE_BYTES
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from ..inprocess import run_cli
from .homes import blob_file, credit, json_api, opened_demo_home


def _read_so_far() -> int:
    """The bytes this process read through read(2) and the like, as the kernel counts."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    return opened_demo_home(tmp_path_factory, "unsized-evidence", embedded=True)


def _policy_ref(rt: Runtime) -> str:
    """A policy text the runtime stored: journaled with the set in force, no size."""
    rt.submit(credit("p-373", amount=5))
    activated = rt.journal.last_of_kind("policyset.activated")
    assert activated is not None
    ref = activated.payload["sources"][0]["ref"]
    assert isinstance(ref, str)
    return ref


def test_the_bound_is_what_a_policy_text_may_hold() -> None:
    assert max(MAX_POLICY_FILE_BYTES, MAX_EVIDENCE_BYTES) == MAX_UNSIZED_BYTES


def test_a_policy_text_made_sparse_is_refused_unread(home: Path) -> None:
    with Runtime(home) as rt:
        ref = _policy_ref(rt)
        assert rt.evidence.verify(ref) > 0  # intact, no size recorded
    with open(blob_file(home, ref), "r+b") as handle:
        handle.truncate(4 << 30)  # holes: no disk used; hashed whole before, about 6 s
    with Runtime(home) as rt:
        before = _read_so_far()
        with pytest.raises(JournalError) as caught:
            rt.evidence.verify(ref)
        read = _read_so_far() - before
        assert read < 1 << 20, read  # was: 4 GiB read before it said so
        assert "does not match its hash: the blob was edited" in caught.value.message
        assert f"past the {MAX_UNSIZED_BYTES} bytes" in caught.value.message, \
            caught.value.message
        with json_api(rt) as api:
            got = api.get(f"/api/evidence/{ref}",
                          headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"})
        assert got.status_code == 409, got.text
        assert "not read" in json.dumps(got.json()), got.text
    for extra in ((), ("--raw",)):
        done = run_cli("evidence", "show", ref, "--home", str(home), *extra)
        assert done.returncode == 1, done.stderr
        assert "not read" in " ".join(done.stderr.split()), done.stderr
        assert done.stdout == ""


def test_one_byte_past_the_bound_is_refused_and_at_the_bound_hashed(home: Path) -> None:
    with Runtime(home) as rt:
        ref = rt.evidence.put(b"permit(principal, action, resource);\n")
        blob = blob_file(home, ref)
        with open(blob, "r+b") as handle:
            handle.truncate(MAX_UNSIZED_BYTES + 1)
        before = _read_so_far()
        with pytest.raises(JournalError, match="not read"):
            rt.evidence.verify(ref)
        assert _read_so_far() - before < 1 << 20
        with open(blob, "r+b") as handle:
            handle.truncate(MAX_UNSIZED_BYTES)  # within the bound: hashed, and edited
        with pytest.raises(JournalError) as caught:
            rt.evidence.verify(ref)
        assert "not read" not in caught.value.message


def test_a_genuine_policy_text_past_the_upload_cap_is_intact(home: Path) -> None:
    text = b"// a long comment\n" * (2 * MAX_EVIDENCE_BYTES // 18)
    with Runtime(home) as rt:
        ref = rt.evidence.put(text)
        assert rt.evidence.verify(ref) == len(text) > MAX_EVIDENCE_BYTES
    done = run_cli("evidence", "show", ref, "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bytes"] == len(text)
