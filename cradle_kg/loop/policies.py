"""The policy set in force, and its activation in the journal.

The home's own policies and each pack's (cited ``<pack-id>/<id>``) make one Cedar policy
set. Before gate 1 reads it, the set in force is journaled whenever it changed
(``policyset.activated``, texts kept as evidence), so "which policy version was in force
at time T" has one answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ..evidence import EvidenceStore
from ..policy import PolicyEngine, read_sources
from ..records import RUNTIME_ACTOR
from ..storage import NewEvent
from .context import LoopContext

#: a policy file or folder in force, with its pack id (None: the home's own)
PolicyPath = tuple[Path, str | None]


def _engine(paths: Sequence[PolicyPath]) -> PolicyEngine:
    return PolicyEngine(source for path, namespace in paths if path.exists()
                        for source in read_sources([path], namespace=namespace))


class PolicySet:
    def __init__(self, ctx: LoopContext, *, evidence: EvidenceStore, paths: Sequence[Path],
                 pack_versions: Sequence[str]) -> None:
        self.ctx = ctx
        self.evidence = evidence
        #: the packs loaded (their refs), journaled with every activation
        self.pack_versions = pack_versions
        self.paths: list[PolicyPath] = [(p, None) for p in paths]
        self.engine = _engine(self.paths)
        self._activation_seen: tuple[str, int] | None = None

    def add(self, paths: Sequence[Path], *, namespace: str | None = None) -> None:
        """Put more policies in force: the home's own (``namespace`` None) or a pack's.

        Atomic: when the new set is refused (a parse error, a duplicate id), the set in
        force stays as it was.
        """
        wanted = [*self.paths, *((p, namespace) for p in paths)]
        self.engine = _engine(wanted)
        self.paths = wanted

    def activate(self, run_id: str, now: datetime) -> None:
        """Journal the policy set in force (texts kept as evidence) whenever it changes.

        Compared with the journal's latest activation, not with this process's memory: when
        another process switched to other policies and back, the switch back is recorded too.
        """
        journal = self.ctx.journal
        version = self.engine.version
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
                   for s in self.engine.sources]
        self.ctx.append([NewEvent(run_id=run_id, kind="policyset.activated",
                                  subject=subject, actor=RUNTIME_ACTOR, at=now,
                                  payload={"version": version, "sources": sources,
                                           "policy_ids": self.engine.policy_ids(),
                                           "packs": list(self.pack_versions)})])
        self._activation_seen = (version, journal.watermark())
