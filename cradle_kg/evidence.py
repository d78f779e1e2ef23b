"""Content-addressed evidence: every blob is stored under its own sha256.

Blobs are immutable and deduplicated; a reference is ``sha256:<hex>`` and reading it
back re-hashes the bytes, so an edited file is caught rather than trusted.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

from .canonical import HASH_PREFIX, canonical_json, sha256_bytes
from .errors import InputError, JournalError
from .records import AuditEvent
from .storage import NewEvent


class EvidenceStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, ref: str) -> Path:
        if not ref.startswith(HASH_PREFIX) or len(ref) != len(HASH_PREFIX) + 64:
            raise InputError(f"not an evidence reference: `{ref}`")
        digest = ref[len(HASH_PREFIX):]
        if any(c not in "0123456789abcdef" for c in digest):
            raise InputError(f"not an evidence reference: `{ref}`")
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        ref = sha256_bytes(data)
        path = self._path(ref)
        if path.exists():
            return ref
        path.parent.mkdir(parents=True, exist_ok=True)
        # INVARIANT: a blob appears under its name only complete (write, fsync, rename).
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise JournalError(f"cannot store evidence `{ref}`: {exc}") from exc
        return ref

    def put_json(self, value: object) -> str:
        return self.put(canonical_json(value).encode("utf-8"))

    def exists(self, ref: str) -> bool:
        try:
            return self._path(ref).is_file()
        except InputError:
            return False

    def get(self, ref: str) -> bytes:
        path = self._path(ref)
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise InputError(f"no evidence `{ref}` in `{self.root}`") from exc
        if sha256_bytes(data) != ref:
            raise JournalError(f"evidence `{ref}` does not match its hash: the blob was edited")
        return data


#: the largest evidence blob accepted from a person (the CLI and the API)
MAX_EVIDENCE_BYTES = 1024 * 1024
EVIDENCE_RUN = "evidence"


def added_event(ref: str, *, size: int, kind: str, source: str | None, by: str,
                at: datetime) -> NewEvent:
    """The journal's record that ``by`` added a blob at ``at`` (projected with who and when)."""
    return NewEvent(run_id=EVIDENCE_RUN, kind="evidence.collected", subject=ref, actor=by, at=at,
                    payload={"ref": ref, "kind": kind, "bytes": size,
                             **({"source": source} if source else {})})


def evidence_record(events: list[AuditEvent], ref: str) -> dict[str, object]:
    """Who added a blob, when, and as what (every time it was added)."""
    added = [e for e in events if e.kind == "evidence.collected"]
    return {"ref": ref, "added": [{"by": e.actor, "at": e.at.isoformat(),
                                   "kind": e.payload.get("kind"),
                                   "source": e.payload.get("source"),
                                   "bytes": e.payload.get("bytes")} for e in added]}
