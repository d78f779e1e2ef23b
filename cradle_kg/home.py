"""Where a runtime keeps its data (the embedded default, under ``--home``).

==================  ==============================================================
``journal.sqlite``  the journal — the truth (SQLite, WAL, hash-chained)
``evidence/``       content-addressed evidence blobs (sha256)
``graph/``          the RDF projection (pyoxigraph on-disk store)
``config.json``     identities, permissions, approvers, limits, packs
``policies/``       the home's own Cedar policies (``*.cedar``)
==================  ==============================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = ".cradle"


def resolve_home(home: str | Path | None) -> Path:
    """``--home``, else ``$CRADLE_HOME``, else ``./.cradle`` — made absolute, so that tools
    which start processes in other folders (a pack's services) see the same home."""
    if home is not None:
        return Path(home).absolute()
    return Path(os.environ.get("CRADLE_HOME", DEFAULT_HOME)).absolute()


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def journal(self) -> Path:
        return self.root / "journal.sqlite"

    @property
    def evidence(self) -> Path:
        return self.root / "evidence"

    @property
    def graph(self) -> Path:
        return self.root / "graph"

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def policies(self) -> Path:
        return self.root / "policies"
