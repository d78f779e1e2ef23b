"""The policy set in force, and its activation in the journal.

The home's own policies and each pack's (cited ``<pack-id>/<id>``) make one Cedar policy
set. Before gate 1 reads it, the set in force is journaled whenever it changed
(``policyset.activated``, texts kept as evidence), so "which policy version was in force
at time T" has one answer.

A long-lived process (``serve``, ``mcp serve``, ``cradle-kg worker``) reads the files again
when they changed (:meth:`PolicySet.refresh`: a ``stat`` of each policy file and of each
folder and subfolder per call, nothing parsed while none changed): a forbid added during
an incident decides the next call, under the new version, journaled as a start journals
it. A set that no longer loads denies every call that reads it, saying why, until it
loads again (fail closed).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ..errors import CradleError
from ..evidence import EvidenceStore
from ..policy import PolicyEngine, read_sources
from ..policy.cedar import MAX_FOLDER_ENTRIES
from ..records import RUNTIME_ACTOR
from ..storage import NewEvent
from .context import LoopContext

#: a policy file or folder in force, with its pack id (None: the home's own)
PolicyPath = tuple[Path, str | None]


#: what :func:`_stamp` says of one path: (inode, size, mtime, ctime), or None when absent
FileKey = tuple[int, int, int, int] | None


def _engine(paths: Sequence[PolicyPath]) -> PolicyEngine:
    return PolicyEngine(source for path, namespace in paths if path.exists()
                        for source in read_sources([path], namespace=namespace))


def _key(path: str | Path) -> FileKey:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _watched(paths: Sequence[PolicyPath]) -> tuple[str, ...]:
    """What tells that the set's files changed: each configured file or folder (a folder's
    times change when a file in it is added, removed or replaced by a rename), each
    ``*.cedar`` file in a folder (its times change when it is written in place) and every
    subfolder under a folder, through links, each once. A file in a subfolder is never
    read (the set refuses a folder holding one), so only its presence counts: its
    folder's times say it. Before, subfolders were not watched, and a policy file added
    to one went unnoticed until a restart (``tests/security/test_218``)."""
    out: list[str] = []
    for path, _ in paths:
        out.append(str(path))
        if path.is_dir():
            out.extend(str(f) for f in sorted(path.glob("*.cedar")))
            out.extend(str(d) for d in _subfolders(path))
    return tuple(out)


def _subfolders(folder: Path) -> list[Path]:
    """Every folder under ``folder`` (through links, each once), at most
    :data:`~cradle_kg.policy.cedar.MAX_FOLDER_ENTRIES` entries looked at — past them, or
    in a folder that cannot be listed, the set does not load (it walks the same folders)
    and what was found so far is watched: the next change of those is read."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    todo, looked = [folder], 0
    while todo and looked <= MAX_FOLDER_ENTRIES:
        here = todo.pop()
        try:
            info = os.stat(here)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            entries = sorted(here.iterdir())
        except OSError:
            continue
        looked += len(entries)
        for entry in entries:
            if entry.is_dir():
                found.append(entry)
                todo.append(entry)
    return sorted(found)


def _stamp(watched: Sequence[str]) -> tuple[FileKey, ...]:
    return tuple(_key(p) for p in watched)


class PolicySet:
    def __init__(self, ctx: LoopContext, *, evidence: EvidenceStore, paths: Sequence[Path],
                 pack_versions: Sequence[str]) -> None:
        self.ctx = ctx
        self.evidence = evidence
        #: the packs loaded (their refs), journaled with every activation
        self.pack_versions = pack_versions
        self.paths: list[PolicyPath] = [(p, None) for p in paths]
        #: the files and folders watched, and what they were when :attr:`engine` (or
        #: :attr:`problem`) was read from them (read first: an edit while they load is
        #: read again at the first refresh)
        self._watched = _watched(self.paths)
        self._stamp = _stamp(self._watched)
        self.engine = _engine(self.paths)
        #: the configured paths that were there when the set first held them: one gone
        #: since is a set that does not load, not a set without it (test_212)
        self._present = {p for p, _ in self.paths if p.exists()}
        self._activation_seen: tuple[str, int] | None = None
        #: why the files, changed since, do not load (None: they do): every call is denied
        self.problem: str | None = None
        self._lock = threading.Lock()
        #: whether the files are read again when they change (an engine set in process,
        #: :attr:`Runtime.policies <cradle_kg.loop.runtime.Runtime.policies>`, is kept)
        self.follows_files = True

    def add(self, paths: Sequence[Path], *, namespace: str | None = None) -> None:
        """Put more policies in force: the home's own (``namespace`` None) or a pack's.

        Atomic: when the new set is refused (a parse error, a duplicate id), the set in
        force stays as it was.
        """
        wanted = [*self.paths, *((p, namespace) for p in paths)]
        with self._lock:
            watched = _watched(wanted)
            stamp = _stamp(watched)
            self.engine = _engine(wanted)
            self.paths, self._watched, self._stamp, self.problem = wanted, watched, stamp, None
            self._present |= {p for p in paths if p.exists()}

    def refresh(self) -> None:
        """Read the policy files again when any changed since they were read (one ``stat``
        of each, nothing else, while none did). A set that does not load now leaves
        :attr:`problem` saying why — every call is denied until it loads — and the last
        set that loaded as :attr:`engine` (what an activation or a version names)."""
        if not self.follows_files or _stamp(self._watched) == self._stamp:
            return
        with self._lock:
            if _stamp(self._watched) == self._stamp:
                return  # another thread read them meanwhile
            # watched as they are now: the next change is read, this one is not read again
            self._watched = watched = _watched(self.paths)
            self._stamp = _stamp(watched)
            # INVARIANT: a configured policy file or folder that was in force and is gone
            # (a link left dangling, a volume unmounted, a folder swapped in two steps)
            # denies every call until it is back: read without it, its forbids were
            # dropped by nobody's decision (tests/security/test_212)
            gone = next((p for p, _ in self.paths if p in self._present and not p.exists()),
                        None)
            if gone is not None:
                self.problem = (f"the policy path `{gone}` was in force and is gone (a link "
                                "left dangling, a volume unmounted?): restore it, or restart "
                                "to run without it")
                return
            try:
                self.engine, self.problem = _engine(self.paths), None
            except CradleError as exc:  # a PolicyError, a file that cannot be read
                self.problem = exc.message

    def activate(self, run_id: str, now: datetime, engine: PolicyEngine | None = None) -> None:
        """Journal the policy set in force (``engine``, else :attr:`engine`; texts kept as
        evidence) whenever it changes — at start and after a reload alike.

        Compared with the journal's latest activation, not with this process's memory: when
        another process switched to other policies and back, the switch back is recorded too.
        """
        journal = self.ctx.journal
        engine = engine if engine is not None else self.engine
        version = engine.version
        subject = "policyset:" + version
        seen = (version, journal.watermark())
        if self._activation_seen == seen:  # nobody else wrote since we checked
            return
        latest = journal.last_of_kind("policyset.activated")
        if latest is not None and latest.subject == subject:
            # what was read is the latest activation as of ``seen``: one written since by
            # another process moves the watermark, and the next call reads again (a
            # second watermark here cost a statement a call on PostgreSQL with others
            # writing: there it reads the head)
            self._activation_seen = seen
            return
        sources = [{"name": s.name, "ref": self.evidence.put(s.text.encode("utf-8")),
                    **({"namespace": s.namespace} if s.namespace is not None else {})}
                   for s in engine.sources]
        self.ctx.append([NewEvent(run_id=run_id, kind="policyset.activated",
                                  subject=subject, actor=RUNTIME_ACTOR, at=now,
                                  payload={"version": version, "sources": sources,
                                           "policy_ids": engine.policy_ids(),
                                           "packs": list(self.pack_versions)})])
        self._activation_seen = (version, journal.watermark())
