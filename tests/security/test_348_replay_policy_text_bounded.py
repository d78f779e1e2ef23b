"""``replay`` reads a recorded policy text within the bound a policy file is read with.

Finding: ``replay`` rebuilds each policy set a run was decided under from the texts its
``policyset.activated`` records in the evidence store, and ``EvidenceStore.get`` read a
blob *whole* before checking it against its hash (``read_file(…, max_bytes=sys.maxsize)``).
The README's safe practice for a journal one is handed is to copy only ``journal.sqlite``
and ``evidence/`` into a home of one's own and replay there; the handed ``evidence/`` held,
under the name of a policy text, a sparse file — 64 GiB of holes, a few bytes in a tar
archive (``tar -S``) or after ``cp`` — and ``replay --strict`` allocated it all: ``error:
unexpected MemoryError`` under a 3 GiB address-space limit, the machine's memory (and
the OOM killer's choice of victim) without one. The hash is checked only after the read, so
the author need not even match it.

Now the text is read as a policy file is (``MAX_POLICY_FILE_BYTES``, 16 MiB, checked on
the open file before a byte is read), nothing allocated: the run is not reproduced (exit
1, as any divergence), its one ``error:`` line naming the blob and the limit. A real home
(``handed.py``), a real ``replay --strict`` process.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg.home import Home
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from .handed import handed_home

#: the child's address space: room for the runtime, none for the blob
LIMIT = 3 << 30


def _policy_blob(home: Path) -> Path:
    conn = sqlite3.connect(f"file:{home / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        (payload,) = conn.execute("SELECT payload FROM events WHERE kind = "
                                  "'policyset.activated' ORDER BY seq LIMIT 1").fetchone()
    finally:
        conn.close()
    digest = json.loads(payload)["sources"][0]["ref"].removeprefix("sha256:")
    return Home(home).evidence / digest[:2] / digest[2:]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _replay(home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != JOURNAL_URL_ENV}
    return subprocess.run([sys.executable, "-m", "cradle_kg", "replay", "--strict", "--home",
                           str(home)], capture_output=True, text=True, timeout=600, env=env,
                          preexec_fn=_limited)


def test_a_sparse_policy_text_is_refused_unread(tmp_path_factory: pytest.TempPathFactory
                                                ) -> None:
    home = handed_home(tmp_path_factory, "sparse-policy")
    assert _replay(home).returncode == 0  # the home replays as it was recorded
    blob = _policy_blob(home)
    with blob.open("r+b") as handle:
        handle.truncate(64 << 30)  # holes: no disk used
    done = _replay(home)
    assert done.returncode == 1, (done.stdout, done.stderr)  # not reproduced
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: strict replay of"), done.stderr
    assert "is more than the limit of 16777216 bytes" in done.stderr, done.stderr
    assert blob.name in done.stderr, done.stderr
