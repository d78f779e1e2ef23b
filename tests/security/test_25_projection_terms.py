"""Values an agent (or a tool, a document, an event) puts into the graph's terms.

Findings:

* **a NUL in a fact stopped a remote graph for everyone.** The projection wrote a string
  literal with only ``\\ " LF CR`` escaped. Virtuoso reads an update's text as a C string:
  a raw U+0000 cut it short ("unterminated SPARQL string"), the whole batch was refused,
  the watermark stayed where it was, and every later ``graph sync`` / ``graph follow`` /
  runtime catch-up hit the same batch — no event of any run reached the graph again. Any
  agent could do it with one candidate fact (or an argument value, a quote, a tool's
  text). On the embedded store the same literal made ``export`` differ from the
  projection it is the store of (Oxigraph writes ``\\u0000`` back). The three writers of
  a string literal (the projection, the lineage triples, the packs' ``literal()``) are now
  one (:func:`cradle_kg.graph.ntriples.escape`), escaping as Oxigraph writes.
* **a pack's ``iri()`` let through IRIs no store reads** (``urn:x:%zz``, ``http://[::1``,
  a second ``#``): it checked a character pattern, not the IRI grammar. A projector that
  built an IRI from an event's value (``iri(BASE + code)``) put a term in the batch that
  the N-Quads check then refused — the whole batch, on every catch-up, for ever, where
  the SDK promises ``cradle:projectionFailed`` on that event and the rest going on. The
  IRIs are now checked by the stores' parser, and a term's pattern must match it whole.

What holds (checked while looking, not pinned here): ids with ``>``, spaces, ``}``,
newlines or NUL become percent-encoded IRIs; literals with ``\"\"\"``, backslashes and
``\\u0022`` as text round-trip on Oxigraph and Virtuoso; named queries' parameters are
terms checked by pyoxigraph, substituted (embedded) or written by pyoxigraph into a
``VALUES`` block (remote); ``export`` in every format re-parses to the same quads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import ProjectionError
from cradle_kg.graph.catchup import catch_up
from cradle_kg.graph.packproj import PackProjector, iri, literal
from cradle_kg.graph.project import lit, project_nquads
from cradle_kg.lineage.rdf import lit as lineage_lit
from cradle_kg.records import AuditEvent
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.storage.oxigraph import OxigraphStore
from cradle_kg.storage.virtuoso_scratch import ScratchVirtuoso
from tests.inprocess import run_cli

#: what an agent can put in a fact's value: NUL, a terminal escape, DEL, a noncharacter
HOSTILE = "before\x00\x1b[2J\x7f\ufffe\"\"\"\\u0022 } ;after"
FACT_VALUE = "https://w3id.org/cradle#factValue"


def _proposal(pid: str, value: str) -> dict[str, Any]:
    return {"id": pid, "task_id": f"task-{pid}", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": 5}},
            "facts": [{"subject": "acct-1", "predicate": "note", "object": value,
                       "source": "agent"}]}


def _fact_values(store: Any) -> set[str]:
    rows = store.query(f"SELECT ?v WHERE {{ ?f <{FACT_VALUE}> ?v }}")
    return {str(row[0].value) for row in rows}


@pytest.mark.parametrize("writer", [lit, lineage_lit, literal],
                         ids=["projection", "lineage", "pack-literal"])
def test_every_writer_of_a_string_writes_it_as_the_store_does(
        writer: Callable[[str], str]) -> None:
    for code in [*range(0x80), 0x85, 0x2028, 0xFFFE, 0xFFFF, 0x1F600]:
        value = f"a{chr(code)}b"
        assert writer(value) == str(ox.Literal(value)), hex(code)


def test_a_control_character_in_a_fact_exports_as_it_was_projected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)  # the home's on-disk store
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        rt.submit(_proposal("p-ctl", HOSTILE))
    out = tmp_path / "export.nq"
    done = run_cli("export", "--home", str(home), "--format", "nquads", "--output", str(out))
    assert done.returncode == 0, done.stderr
    with open_home_journal(home) as journal:
        assert out.read_text(encoding="utf-8") == project_nquads(journal.events())


def test_a_nul_in_an_agents_fact_does_not_stop_the_remote_graph(
        fresh_virtuoso: ScratchVirtuoso, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRAPH_URL_ENV, fresh_virtuoso.setting())
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        rt.submit(_proposal("p-nul", HOSTILE))
        rt.sync_graph()  # was: GraphResponseError (HTTP 500, SQ074), the watermark at 0
        rt.submit(_proposal("p-after", "an honest note"))
        rt.sync_graph()
        head = rt.journal.head()[0]
    store = open_graph_store(home)
    try:
        assert store.projected_seq() == head  # every event of every run is in
        assert _fact_values(store) == {HOSTILE, "an honest note"}  # the value, exactly
    finally:
        store.close()


# --- a pack's IRIs ----------------------------------------------------------------------

@pytest.mark.parametrize("text", ["urn:x:%zz", "urn:x:%", "http://[::1", "http://a:b:c/",
                                  "urn:a#b#c", "urn:a\ufffe"])
def test_a_pack_iri_no_store_reads_is_refused(text: str) -> None:
    with pytest.raises(ProjectionError):
        iri(text)


def _from_the_facts(ev: AuditEvent) -> Iterator[tuple[str, str, str]]:
    """A projector as a pack author writes it: an IRI made from an event's value."""
    for fact in ev.payload["proposal"].get("facts", ()):
        yield (iri("urn:example:note:" + str(fact["object"])),
               iri("https://example.org/vocab#seenIn"), literal(ev.run_id))


def test_a_pack_term_from_a_hostile_value_fails_that_event_not_the_graph(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        rt.submit(_proposal("p-bad-iri", "%zz"))
        rt.submit(_proposal("p-fine", "fine"))
    projector = PackProjector(pack="example.notes", name="notes",
                              kinds=frozenset({"proposal.received"}), body=_from_the_facts)
    store = OxigraphStore(tmp_path / "graph")
    try:
        with open_home_journal(home) as journal:
            # was: GraphStoreError "the projection is not N-Quads", on every catch-up
            catch_up(store, journal, projectors=[projector])
            assert store.projected_seq() == journal.head()[0]
        failed = store.query("SELECT ?e ?why WHERE { ?e "
                             "<https://w3id.org/cradle#projectionFailed> ?why }")
        assert ["%zz" in str(row[1].value) for row in failed] == [True]
        assert store.ask("ASK { GRAPH ?g { <urn:example:note:fine> ?p ?o } }")  # the rest went on
    finally:
        store.close()
