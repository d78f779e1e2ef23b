"""A blob is re-hashed a chunk at a time where only its hash and size are shown.

Finding: ``cradle-kg evidence show`` and ``GET /api/evidence/{ref}`` say whether a blob is
intact and how many bytes it holds, and both read the blob whole before hashing it
(``EvidenceStore.get`` with no bound). ``test_348`` bounded ``replay``'s read; these two
were left. A home handed over, or an ``evidence/`` edited by anyone who may write it, held
under a blob's name a sparse file — 64 GiB of holes, no disk used — and each view
allocated it all: ``error: unexpected MemoryError`` under a 3 GiB address-space limit
(the machine's memory, and the OOM killer's choice of victim, without one).

Now both re-hash the file in chunks of 1 MiB (constant memory). A blob the journal
recorded a size for (every ``evidence.collected`` does) and whose file is of another size
is edited, said before a byte is read: exit 1 / 409. A blob with no recorded size (a
policy text) is hashed in chunks and found edited the same way. ``--raw`` reads the bytes
only once they were found intact, and no more than were hashed.

A real demo home, real ``python -m cradle_kg`` processes, the JSON API in a child process;
each child under an address-space limit of 3 GiB.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from .homes import blob_file, opened_demo_home

#: the child's address space: room for the runtime, none for the blob
LIMIT = 3 << 30
ROOT = Path(__file__).resolve().parents[2]

API_CHILD = r"""
import json, sys
from pathlib import Path
from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests.security.homes import json_api
with Runtime(Path(sys.argv[1])) as rt, json_api(rt) as api:
    got = api.get("/api/evidence/" + sys.argv[2],
                  headers={"Authorization": "Bearer " + DEMO_TOKENS[APPROVER]})
    print(json.dumps({"status": got.status_code, "body": got.json()}))
"""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != JOURNAL_URL_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _show(home: Path, ref: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cradle_kg", "evidence", "show", ref,
                           "--home", str(home), *extra], capture_output=True, timeout=600,
                          env=_env(), preexec_fn=_limited, check=False)


def _api(home: Path, ref: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", API_CHILD, str(home), ref],
                          capture_output=True, text=True, timeout=600, env=_env(),
                          cwd=ROOT, preexec_fn=_limited, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout)
    return found


def _sparse(blob: Path, size: int) -> None:
    with blob.open("r+b") as handle:
        handle.truncate(size)  # holes: no disk used


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    # the home's SQLite journal whatever backend the suite runs on: the children read it
    # (their environment has no journal URL), so the test's own uploads go there too
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    return opened_demo_home(tmp_path_factory, "sparse-evidence", embedded=True)


def test_an_uploaded_blob_made_sparse_is_edited_unread(home: Path) -> None:
    with Runtime(home) as rt:
        ref = rt.add_evidence(b"a signed delivery note\n", kind="document", collector="ops")
    done = _show(home, ref, "--raw")
    assert done.returncode == 0 and done.stdout == b"a signed delivery note\n", done.stderr
    _sparse(blob_file(home, ref), 64 << 30)
    for extra in ((), ("--raw",), ("--format", "json")):
        done = _show(home, ref, *extra)
        err = done.stderr.decode()
        assert done.returncode == 1, (extra, err)  # was: error: unexpected MemoryError
        assert "unexpected" not in err and "Traceback" not in err, err
        assert "does not match its hash: the blob was edited" in " ".join(err.split()), err
        assert done.stdout == b""
    answer = _api(home, ref)
    assert answer["status"] == 409, answer  # was: the child's MemoryError
    assert "recorded as 23" in json.dumps(answer["body"]), answer


def test_a_blob_with_no_recorded_size_is_hashed_in_chunks(home: Path) -> None:
    """A blob no ``evidence.collected`` names (a policy text, a recorded request is
    stored so): no size to compare, so its file is hashed, a chunk at a time — and since
    ``test_373`` read no further than the 16 MiB a policy text holds."""
    with Runtime(home) as rt:
        ref = rt.evidence.put(b"permit(principal, action, resource);\n")
    assert _show(home, ref).returncode == 0
    _sparse(blob_file(home, ref), 4 << 30)  # past the child's address space, hashed in ~6 s
    done = _show(home, ref)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "unexpected" not in err and "the blob was edited" in err, err
    answer = _api(home, ref)
    assert answer["status"] == 409, answer
