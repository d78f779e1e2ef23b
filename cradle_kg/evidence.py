"""Content-addressed evidence: every blob is stored under its own sha256.

Blobs are immutable and deduplicated; a reference is ``sha256:<hex>`` and reading it
back re-hashes the bytes, so an edited file is caught rather than trusted.

A person's or an agent's upload (``POST /api/evidence``, ``cradle-kg evidence add``) is
held to the identity's quotas over the last hour (:func:`upload`), counted from the
journal — every process on the journal sees the same count.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from .canonical import HASH_PREFIX, canonical_json, iso, sha256_bytes
from .errors import InputError, JournalError, QuotaExceededError
from .inputs import InputLimits, check_human_input, open_regular, read_file
from .records import AuditEvent
from .storage import NewEvent, UploadCap, UploadsReached
from .throttling import record_reached

if TYPE_CHECKING:
    from .config import RuntimeConfig
    from .loop.context import LoopContext
    from .storage import Journal


class EvidenceStore:
    def __init__(self, root: Path, *, read_only: bool = False) -> None:
        self.root = root
        #: a read only runtime's: :meth:`put` refuses before a byte is stored
        self.read_only = read_only

    def _path(self, ref: str) -> Path:
        if not ref.startswith(HASH_PREFIX) or len(ref) != len(HASH_PREFIX) + 64:
            raise InputError(f"not an evidence reference: `{ref}`")
        digest = ref[len(HASH_PREFIX):]
        if any(c not in "0123456789abcdef" for c in digest):
            raise InputError(f"not an evidence reference: `{ref}`")
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        if self.read_only:
            raise JournalError(f"the evidence store `{self.root}` is open read only: "
                               "nothing is stored")
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

    def get(self, ref: str, *, max_bytes: int = sys.maxsize) -> bytes:
        """The blob's bytes, checked against its address. Read by the runtime's one strict
        reader: a folder, a FIFO or a device in a blob's place (a home edited by someone
        who may write it) is one :class:`InputError` naming the file, never a read that
        blocks or an unexpected error (``tests/security/test_314``). ``max_bytes``: what
        the caller reads at most — past it, :class:`~.errors.InputTooLargeError` before a
        byte is read (a blob of a handed home may be a sparse file of any size, and its
        hash is checked only once read: ``tests/security/test_348``)."""
        path = self._path(ref)
        if not os.path.lexists(path):
            raise self.missing(ref)
        # no size cap of its own: whatever was stored is read (its hash is checked below)
        data = read_file(path, max_bytes=max_bytes)
        if sha256_bytes(data) != ref:
            raise self._edited(ref)
        return data

    def verify(self, ref: str, *, size: int | None = None) -> int:
        """The blob's size, once its bytes were re-hashed a chunk at a time (constant
        memory) and found to match its address; :class:`~.errors.JournalError` when not
        ("edited"). ``size``: the size the journal recorded for it — a file of another
        size is edited, said before a byte is read. For the readers that need only the
        hash and the size (``evidence show``, ``GET /api/evidence/{ref}``), where a blob of
        a handed home, a sparse file of 64 GiB, was read whole (``tests/security/
        test_360``)."""
        path = self._path(ref)
        if not os.path.lexists(path):
            raise self.missing(ref)
        fd, info = open_regular(path)
        # INVARIANT: never read past what a genuine blob of this kind holds: its recorded
        # size, else MAX_UNSIZED_BYTES (a sparse file stood for 64 GiB: test_373)
        most = MAX_UNSIZED_BYTES if size is None else size
        try:
            if size is not None and info.st_size != size:
                raise self._edited(ref, f"{info.st_size} bytes, recorded as {size}")
            if info.st_size > most:
                raise self._unsized(ref, f"{info.st_size} bytes")
            with open(fd, "rb", closefd=False) as handle:
                digest, seen = _digest(handle, most=most + 1)
        except OSError as exc:
            raise InputError(f"`{path}`: cannot read: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        if seen > most:  # it grew while read
            raise self._unsized(ref, f"more than {most} bytes") if size is None else \
                self._edited(ref, f"more than {size} bytes, recorded as {size}")
        if HASH_PREFIX + digest != ref:
            raise self._edited(ref)
        return seen

    @classmethod
    def _unsized(cls, ref: str, size: str) -> JournalError:
        return cls._edited(ref, f"{size} with no size recorded, past the "
                                f"{MAX_UNSIZED_BYTES} bytes a policy text holds at most: "
                                "not read")

    @staticmethod
    def _edited(ref: str, why: str = "") -> JournalError:
        return JournalError(f"evidence `{ref}` does not match its hash: the blob was edited"
                            + (f" ({why})" if why else ""))

    def missing(self, ref: str) -> InputError:
        """What is said of a blob that is not there (and of one a reader is not shown)."""
        return InputError(f"no evidence `{ref}` in `{self.root}`")

    def edited(self, *, progress: Callable[[int], None] | None = None
               ) -> tuple[str, Path] | None:
        """The first blob whose bytes do not hash to its name — ``(ref, file)`` — or None.

        Every file of the store is re-hashed, read in chunks (constant memory); a file
        being written (``.tmp-…``) is skipped. ``progress`` gets the count of blobs read.
        INVARIANT: ``audit verify`` runs this — an edited policy text or recorded request
        was caught only where it was read (``tests/security/test_122``)."""
        done = 0
        folders = sorted(p for p in self.root.iterdir() if p.is_dir()) \
            if self.root.is_dir() else []
        for folder in folders:
            for path in sorted(folder.iterdir()):
                if path.name.startswith(".tmp-"):
                    continue
                ref = HASH_PREFIX + folder.name + path.name
                if not _hashes_to(path, ref):
                    return ref, path
                done += 1
                if progress is not None:
                    progress(done)
        return None


def _hashes_to(path: Path, ref: str) -> bool:
    """Whether the file at ``path`` is a regular file whose sha256 is ``ref``."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            digest, _ = _digest(handle)
    except OSError:
        return False
    return HASH_PREFIX + digest == ref


def _digest(handle: BinaryIO, *, most: int | None = None) -> tuple[str, int]:
    """The sha256 (hex) of what ``handle`` holds and its size, read 1 MiB at a time;
    ``most``: read no more bytes than that (the size then says whether there were more)."""
    digest = hashlib.sha256()
    seen = 0
    while chunk := handle.read(1 << 20 if most is None else min(1 << 20, most - seen)):
        digest.update(chunk)
        seen += len(chunk)
    return digest.hexdigest(), seen


#: the largest evidence blob accepted from a person (the CLI and the API)
MAX_EVIDENCE_BYTES = 1024 * 1024
#: the most bytes a genuine blob no ``evidence.collected`` sizes holds: such a blob is a
#: policy text, read from a policy file of at most ``policy.cedar.MAX_POLICY_FILE_BYTES``
#: (16 MiB; not imported: cedarpy is a heavy import) — not the upload cap, which a policy
#: text may pass. Pinned equal to the larger of the two by ``tests/security/test_373``.
MAX_UNSIZED_BYTES = 16 << 20
EVIDENCE_RUN = "evidence"
#: the journal's record of a blob added (an upload, a trusted input, a collected document)
COLLECTED = "evidence.collected"
#: the sliding window of the upload quotas (``input_limits.evidence_*_per_hour``)
UPLOAD_WINDOW = timedelta(hours=1)


#: the collector a host application's token uploads as (``host:<agent>``): the host's word,
#: not its agent's — evidence, where an agent's upload is not (``tests/security/test_180``)
HOST_COLLECTOR_PREFIX = "host:"
#: the key of an ``evidence.collected`` payload saying what its collector was when it
#: collected the blob (:func:`collector_role`); absent from events written before it
COLLECTOR_ROLE = "collector"
#: the role of an agent of the home: its upload is its word, no evidence
AGENT_ROLE = "agent"


def collector_role(config: RuntimeConfig, by: str) -> str:
    """What ``by`` is in ``config`` as it collects a blob, journaled with the blob
    (:data:`COLLECTOR_ROLE`): ``agent`` (an agent of the home, an approver too or not),
    ``approver``, ``host`` (a host application's token) or ``other`` (a customer the host
    speaks for, the runtime's own collectors). The evidence check judges an upload by this,
    not by the configuration of the day it is cited: an agent removed from ``config.json``
    later is still the agent it was (``tests/security/test_196``)."""
    if config.agent(by) is not None:
        return AGENT_ROLE
    if config.approver(by) is not None:
        return "approver"
    return "host" if by.startswith(HOST_COLLECTOR_PREFIX) else "other"


#: the key of an upload's payload naming the run it is evidence for (absent: for any)
FOR_RUN = "for_run"
#: the key naming the action it is evidence for, by the key its agent pins on it
#: (``action.idempotency_key``; absent: for any action: ``tests/security/test_247``)
FOR_ACTION = "for_action"


def added_event(ref: str, *, size: int, kind: str, source: str | None, by: str,
                role: str, at: datetime, for_run: str | None = None,
                for_action: str | None = None) -> NewEvent:
    """The journal's record that ``by`` (``role``: :func:`collector_role`) added a blob at
    ``at`` (projected with who and when); ``for_run``: the run it is evidence for, alone
    (``tests/security/test_199``); ``for_action``: the action, alone (``test_247``)."""
    return NewEvent(run_id=EVIDENCE_RUN, kind=COLLECTED, subject=ref, actor=by, at=at,
                    payload={"ref": ref, "kind": kind, "bytes": size,
                             **({"source": source} if source else {}),
                             **({FOR_RUN: for_run} if for_run is not None else {}),
                             **({FOR_ACTION: for_action} if for_action is not None else {}),
                             COLLECTOR_ROLE: role})


#: the uploads of one blob a record shows: the first, and the newest this many
ADDED_SHOWN = 20
#: the uploads of one blob read from each end for a reader shown only some of them
#: (an agent: its own, its host's, its runs'), the others passed over
ADDED_SCANNED = 200


def evidence_record(journal: Journal, ref: str, *,
                    reader: Callable[[AuditEvent], bool] | None = None) -> dict[str, object]:
    """Who added a blob, when, and as what: the first time it was added and the newest
    :data:`ADDED_SHOWN` times, oldest first (``more``: it was added more often than
    that, and the first is shown before the newest; those in between are left out).
    ``reader``: the uploads shown (an agent's token: ``server.api_human``), the others
    left out — looked for among the :data:`ADDED_SCANNED` newest and oldest.

    The same bytes uploaded again journal another event under the same ref, and anyone
    with a token uploads: a record of every upload grew each view without end
    (``tests/security/test_72``). At most ``ADDED_SHOWN + 2`` rows are decoded (with a
    ``reader``, ``2 * ADDED_SCANNED``)."""
    keep = reader or _every
    newest_n, first_n = (ADDED_SHOWN + 1, 1) if reader is None else (ADDED_SCANNED,) * 2
    newest = [e for e in journal.subject_events(ref, COLLECTED, limit=newest_n) if keep(e)]
    first = [e for e in journal.subject_events(ref, COLLECTED, limit=first_n, newest=False)
             if keep(e)][:1]
    shown = list(reversed(newest[:ADDED_SHOWN]))
    more = len(newest) > ADDED_SHOWN
    if first and all(e.seq != first[0].seq for e in shown):
        shown.insert(0, first[0])
    return {"ref": ref, "added": [_added(e) for e in shown], "more": more}


def recorded_size(record: dict[str, object]) -> int | None:
    """The size the journal recorded for the blob of ``record`` (:func:`evidence_record`),
    or None (a blob no ``evidence.collected`` names: a policy text, a recorded request)."""
    added = record.get("added")
    for entry in added if isinstance(added, list) else []:
        size = entry.get("bytes") if isinstance(entry, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            return size
    return None


def _every(event: AuditEvent) -> bool:
    return True


def _added(event: AuditEvent) -> dict[str, object]:
    return {"by": event.actor, "at": event.at.isoformat(), "kind": event.payload.get("kind"),
            "source": event.payload.get("source"), "bytes": event.payload.get("bytes"),
            "for_run": evidence_for(event), "for_action": evidence_action(event)}


def evidence_for(event: AuditEvent) -> str | None:
    """The run an ``evidence.collected`` is evidence for, alone: the run it was written in
    (a run's recorded input, a collector's document of that run), or the run an upload
    named (:data:`FOR_RUN`); None: an upload for any run (``tests/security/test_199``)."""
    if event.run_id != EVIDENCE_RUN:
        return event.run_id
    named = event.payload.get(FOR_RUN)
    return named if isinstance(named, str) else None


def evidence_action(event: AuditEvent) -> str | None:
    """The action (its pinned idempotency key) an ``evidence.collected`` is evidence for,
    alone; None: for any action (``tests/security/test_247``)."""
    named = event.payload.get(FOR_ACTION)
    return named if isinstance(named, str) else None


def check_binding(limits: InputLimits, *, for_run: str | None,
                  for_action: str | None) -> None:
    """The run and the action an upload names: ids, not empty (:class:`InputError`)."""
    for where, value, hint in (("run", for_run, "the run the upload is evidence for"),
                               ("action", for_action, "the idempotency key the agent pins "
                                "on the action the upload is evidence for")):
        if value is None:
            continue
        check_human_input(limits, ids={where: value})
        if not value.strip():
            raise InputError(f"`{where}`: empty", hint=hint)


def check_named_run(config: RuntimeConfig, for_run: str | None) -> None:
    """An upload naming no run, refused where the home requires one
    (``evidence_requires_run``: ``tests/security/test_248``)."""
    if for_run is None and config.evidence_requires_run:
        raise InputError("`run`: this home requires an upload to name the run it is "
                         "evidence for (`evidence_requires_run`)",
                         hint="name the run: `?run=RUN`, `evidence add --run RUN`")


# --- the upload quotas -----------------------------------------------------------------


def upload(ctx: LoopContext, store: EvidenceStore, data: bytes, *, kind: str,
           source: str | None, by: str, for_run: str | None = None,
           for_action: str | None = None) -> str:
    """Store ``by``'s upload and journal it, within ``by``'s quotas of the last hour
    (:func:`quota_refusal`); past one, :class:`QuotaExceededError` and nothing is written —
    no blob, no event.

    The count is one range of the journal's ``events_kind_actor`` index: at most
    ``evidence_uploads_per_hour`` rows, read before the append (to refuse early, before
    the blob is stored) and again by the journal under its writer's lock with the append
    (the event's :class:`~cradle_kg.storage.UploadCap`): uploads racing from several
    processes on one journal no longer pass it by one each (``tests/security/test_205``).
    Refused there, the blob this upload stored stays in the store, named by no event (no
    evidence: what counts is an ``evidence.collected``): removing it could remove the same
    bytes another writer stored in that instant and is about to journal. At most one such
    blob a writer racing past the early count."""
    now = ctx.clock()
    limits = ctx.config.input_limits
    check_labels(limits, kind=kind, source=source)
    check_binding(limits, for_run=for_run, for_action=for_action)  # ids, as a proposal's
    check_named_run(ctx.config, for_run)
    # the hour on the journal server's clock where there is one (tests/security/test_607)
    hour = UPLOAD_WINDOW.total_seconds()
    recent = ctx.journal.recent_sizes(COLLECTED, by, since=window_start(now),
                                      limit=limits.evidence_uploads_per_hour, window=hour)
    refused = quota_refusal(recent, limits, by=by, size=len(data), now=now)
    if refused is not None:
        raise _recorded(ctx, refused, by=by, now=now)
    ref = store.put(data)
    event = added_event(ref, size=len(data), kind=kind, source=source, by=by,
                        role=collector_role(ctx.config, by), at=now, for_run=for_run,
                        for_action=for_action)
    cap = UploadCap(by, COLLECTED, window_start(now), limits.evidence_uploads_per_hour,
                    limits.evidence_bytes_per_hour, len(data), window=hour)
    try:
        ctx.append([replace(event, uploads=cap)])
    except UploadsReached as reached:  # another writer's upload got there first
        refused = quota_refusal(reached.recent, limits, by=by, size=len(data), now=now)
        raise _recorded(ctx, refused if refused is not None else _refused(
            f"`{by}`: the evidence quotas of the last hour are used up",
            key="evidence_uploads_per_hour", free=None, now=now), by=by, now=now) from None
    return ref


def _recorded(ctx: LoopContext, refused: QuotaExceededError, *, by: str,
              now: datetime) -> QuotaExceededError:
    """``refused`` (``by``'s), its quota's record journaled first: one per quota and
    identity in any hour (:mod:`cradle_kg.throttling`, ``tests/security/test_217``)."""
    refused.identity = by
    refused.limit = getattr(ctx.config.input_limits, refused.quota or "", None)
    record_reached(ctx.journal, ctx.append, refused, now=now)
    return refused


#: the kind the runtime writes for a person's recorded input (``input:<kind>``,
#: :func:`cradle_kg.lineage.inputs.record_input`): no upload may take it
INPUT_KIND_PREFIX = "input:"


def check_labels(limits: InputLimits, *, kind: str, source: str | None) -> None:
    """An upload's ``kind`` and ``source`` as labels an auditor can take at their word, or
    :class:`InputError`: text within the limits, no NUL (``kind`` an id), and a kind
    outside the runtime's own ``input:`` labels — ``evidence show`` and
    ``GET /api/evidence/{ref}`` showed an agent's blob uploaded as ``input:request``
    under the label of a person's recorded request (``tests/security/test_103``)."""
    check_human_input(limits, ids={"kind": kind}, texts={"source": source})
    if source is not None and "\x00" in source:
        raise InputError("`source`: holds a NUL character (U+0000)")
    if not kind.strip():
        raise InputError("`kind`: empty")
    if unicodedata.normalize("NFKC", kind).strip().casefold().startswith(INPUT_KIND_PREFIX):
        raise InputError(f"`kind`: `{kind[:64]}` is the runtime's label of a person's "
                         "recorded input (`input:…`); an upload names a kind of its own",
                         hint="e.g. `document`, `invoice`, `statement`")


def window_start(now: datetime) -> datetime:
    """The first moment a blob added at it still counts at ``now``: a blob counts for one
    hour after its ``at``, no longer (the journal's times have microseconds), so the
    refusal's "frees up at" is the first moment it fits."""
    return now - UPLOAD_WINDOW + timedelta(microseconds=1)


def quota_refusal(recent: Sequence[tuple[datetime, int]], limits: InputLimits, *, by: str,
                  size: int, now: datetime) -> QuotaExceededError | None:
    """Why one more blob of ``size`` bytes from ``by`` at ``now`` is refused, or None.

    ``recent``: (``at``, bytes) of the blobs journaled under ``by`` in the window, newest
    first — every one of them, or the newest ``evidence_uploads_per_hour`` (enough: that
    many is already the limit). The refusal says when the window frees enough."""
    most_uploads, most_bytes = limits.evidence_uploads_per_hour, limits.evidence_bytes_per_hour
    if most_uploads is not None and len(recent) >= most_uploads:
        if not most_uploads:
            return _refused("evidence uploads are off in this home",
                            key="evidence_uploads_per_hour", free=None, now=now)
        return _refused(f"`{by}` added {len(recent)} evidence blobs in the last hour: the "
                        f"limit is {most_uploads}", key="evidence_uploads_per_hour",
                        free=recent[most_uploads - 1][0] + UPLOAD_WINDOW, now=now)
    if most_bytes is None:
        return None
    total = sum(bytes_ for _, bytes_ in recent) + size
    if total <= most_bytes:
        return None
    if size > most_bytes:
        return _refused(f"`{by}`: {size} bytes of evidence is more than the limit of "
                        f"{most_bytes} bytes an hour", key="evidence_bytes_per_hour",
                        free=None, now=now)
    message = (f"`{by}`: {size} more bytes of evidence would make {total} bytes in the "
               f"last hour, past the limit of {most_bytes}")
    free = now
    for at, bytes_ in reversed(recent):  # the oldest leave the window first, until it fits
        total, free = total - bytes_, at + UPLOAD_WINDOW
        if total <= most_bytes:
            break
    return _refused(message, key="evidence_bytes_per_hour", free=free, now=now)


def _refused(message: str, *, key: str, free: datetime | None,
             now: datetime) -> QuotaExceededError:
    where = f"`input_limits.{key}` in the home's config.json"
    if free is None:
        return QuotaExceededError(message, hint=f"{where} allows no more", quota=key)
    wait = max(1, math.ceil((free - now).total_seconds()))
    return QuotaExceededError(message, retry_after=wait, quota=key, hint=(
        f"the window frees up at {iso(free)[:19]}Z (in {wait} s); the limit is {where}"))
