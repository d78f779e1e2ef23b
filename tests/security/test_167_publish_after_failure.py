"""A generation that failed to be published is published at the next ask.

Finding (tenth attack review, part two): the supervisor of ``cradle-kg serve`` answers a
worker's ask for the newest generation by catching its private store up with the journal
and publishing a checkpoint of it (``PrivateStore.latest``). It decided whether to publish
by comparing the journal's head with the seq its *store* holds: when the catch-up went
through and the checkpoint then failed (the work folder's disk full for a moment, a
folder it could not create), the store held the new events and the published generation
did not, and every later ask found the store "up to date" and answered the old generation
— with the old seq, so each query asked again and was answered **200 without the
events**, for as long as the home stayed quiet (``test_160`` makes the worker ask again;
this is what the asking was answered).

Now a generation is published whenever the store holds events the current generation does
not, whichever step failed before.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.server.dataset import PrivateStore
from tests.security.homes import opened_demo_home
from tests.security.test_160_endpoint_fresh_after_error import _decide


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "publish-after-failure", embedded=True)


def test_the_generation_a_failed_publication_owed_is_published_next(
        home: Path, private: PrivateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    decision = _decide(home, "owed")
    real = PrivateStore._publish
    failures = [OSError(28, "No space left on device")]

    def publish(self: PrivateStore) -> Path:
        if failures:
            raise failures.pop()
        return real(self)

    monkeypatch.setattr(PrivateStore, "_publish", publish)
    with pytest.raises(OSError):
        private.latest()  # caught up, then the checkpoint failed
    generation = private.latest()  # the disk has room again
    head = private.journal.head()[0] if private.journal is not None else 0
    assert private.published() == (generation, head), "the old generation was answered"
    found = ox.Store.read_only(str(generation)).query(f"ASK {{ {decision} ?p ?o }}",
                                                       use_default_graph_as_union=True)
    assert bool(found), "the generation answered does not hold the decision"
