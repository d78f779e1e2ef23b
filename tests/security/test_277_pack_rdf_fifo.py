"""A FIFO named as a pack's shapes or ontology file is refused, never read for ever.

Finding (malformed files at every door): a pack's shapes and its ontology were read once
through the strict reader (a regular file, bounded) — and once before it, for a digest,
with ``Path.read_bytes``: the shapes' cache key (:func:`cradle_kg.graph.shacl.load_shapes`)
and the knowledge graph's digest (:mod:`cradle_kg.graph.knowledge`). A FIFO named
``shapes.ttl`` in a pack hung every command that opens a home listing the pack
(``submit`` included) before the strict reader could refuse it; one named
``ontology.ttl`` hung the first open of the graph store.

Both digests now read the file as the parse does: the shapes are a :class:`ShapesError`
naming the file (the home does not open: one ``error:`` line, exit 2), the ontology an
:class:`RdfParseError` naming it when the graph is opened (since ``test_522``: when the
pack loads, so the home does not open either).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import RdfParseError
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from .homes import credit, without_journal_url
from .inputcli import cli
from .malformed import home_with_pack


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def test_shapes_fifo_is_one_error_line(tmp_path: Path) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    _fifo(folder / "shapes.ttl")
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    done = cli("submit", str(proposal), "--home", str(home), env=without_journal_url(),
               timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "shapes.ttl" in done.stderr, done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_ontology_fifo_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # the home's own SQLite file
    home, folder = home_with_pack(tmp_path / "home")
    _fifo(folder / "ontology.ttl")
    # since test_522 refused when the pack loads (the home does not open), not at rt.graph()
    with pytest.raises(RdfParseError) as caught, Runtime(home) as rt:
        rt.graph()
    assert "ontology.ttl" in caught.value.message
    assert "not a regular file" in caught.value.message
