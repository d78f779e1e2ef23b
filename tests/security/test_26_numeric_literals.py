"""Numbers an agent (or a tool, a pack) puts into the graph's literals.

Findings:

* **a float fact of ``1e40`` stopped a remote graph for everyone.** The projection wrote a
  float as Python's ``repr`` typed ``xsd:decimal``. ``1e40`` is a finite JSON number the
  input loader accepted; Virtuoso refused the batch holding ``"1e+40"^^xsd:decimal``
  ("Can't convert CAST to numeric"), the watermark stayed where it was, and every later
  ``graph sync`` / ``graph follow`` / runtime catch-up hit the same batch — no event of any
  run reached the graph again. ``1e-300`` went in as 0. ``1e-07`` and ``1e+16`` are no
  ``xsd:decimal`` lexical forms at all: Oxigraph kept them as literals no numeric FILTER
  reads, and its ``export`` differed from the projection (as it did for ``5.0``, which it
  writes back as ``5``).
* **integers past 64 bits**: Virtuoso stores 2^63 as -2^63 and refuses 2^64 with the
  batch; the input limit of 18 digits kept agents below that, but a configuration could
  raise it to 1,000, and a pack's ``literal(int)`` took any integer (a tool's output).

Now a float is written as the exact plain expansion of its shortest ``repr``, in the
form Oxigraph writes back (:func:`cradle_kg.graph.ntriples.decimal`); the inputs refuse a
float with more than 18 digits before or after the point once written out
(``max_float_digits``) and no configuration may let an integer past 18 digits; a pack's
``literal()`` refuses both (the event is marked ``cradle:projectionFailed``); a float an
older version journaled that no store holds is projected as its text, so the batch goes in.

Measured while fixing (not pinned here): Virtuoso's DECIMAL has 40 digits and a scale of
15 — a 16th digit after the point is rounded (``1e-16`` reads back as 0,
``0.30000000000000004`` as 0.3); no bound avoids that without refusing ordinary floats.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import InputError, ProjectionError
from cradle_kg.graph.catchup import catch_up
from cradle_kg.graph.ntriples import decimal
from cradle_kg.graph.packproj import PackProjector, iri, literal
from cradle_kg.graph.project import lit, project_nquads
from cradle_kg.inputs import DEFAULT_LIMITS, InputLimits, check_value, load_json
from cradle_kg.records import AuditEvent
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.journal import NewEvent
from cradle_kg.storage.opening import open_home_journal
from tests.inprocess import run_cli

XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"
FACT_VALUE = "https://w3id.org/cradle#factValue"
#: floats no store holds as that number: refused at input, by a pack's literal()
HOSTILE = [1e40, -1e40, 1e-300, 1e18, 1.5e-18, 1.7976931348623157e308, 5e-324]
#: floats that were no xsd:decimal (1e+16, 1e-07), or that Oxigraph writes back in another
#: form (5.0, -0.0), and the edges of what is accepted: 18 digits before, 18 after
EDGES = [1e16, -1e16, 1e-07, 1.5e-07, 5.0, -0.0, 2.5, 0.30000000000000004,
         9.999999999999999e17, 1e-18, -1.5e-17, 123456789.125]
REMOTES = ["fresh_virtuoso", "fresh_oxigraph"]


def _proposal(pid: str, value: Any, *, amount: Any = 5) -> dict[str, Any]:
    return {"id": pid, "task_id": f"task-{pid}", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": amount}},
            "facts": [{"subject": "acct-1", "predicate": "balance", "object": value,
                       "source": "agent"}]}


def _stored(literal_text: str) -> str:
    """What an Oxigraph store writes back for ``literal_text`` (one N-Triples literal)."""
    store = ox.Store()
    data = f"<urn:s> <urn:p> {literal_text} .\n".encode()
    store.load(data, format=ox.RdfFormat.N_TRIPLES)
    (quad,) = list(store)
    return str(quad.object)


def _sweep() -> list[float]:
    """Floats of every magnitude up to 10^±40, with as many digits as a float has."""
    rng = random.Random(26)
    out = [*HOSTILE, *EDGES]
    for _ in range(1500):
        x = rng.uniform(1, 10) * 10.0 ** rng.randint(-40, 40)
        out += [x, -x, float(f"{x:.3g}")]
    return out


# --- the writer -----------------------------------------------------------------------

def test_a_float_is_written_as_the_store_writes_it_back() -> None:
    """Projection and pack SDK alike: a valid xsd:decimal, the exact value of the float's
    shortest repr, byte for byte what Oxigraph writes back, and a number its FILTERs
    read. What no store holds is refused by the SDK and by the input limits alike."""
    for x in _sweep():
        text = decimal(x)
        if text is None:
            with pytest.raises(ProjectionError):
                literal(x)
            with pytest.raises(InputError):
                check_value(x, where="x")
            continue
        check_value(x, where="x")  # the input limits take what the writer writes
        term = f'"{text}"^^<{XSD_DECIMAL}>'
        assert lit(x) == literal(x) == term, repr(x)
        assert _stored(term) == term, repr(x)  # was: "1e+16" kept, "5.0" written back "5"
        assert Decimal(text) == Decimal(repr(x)) and float(text) == x, repr(x)
    store = ox.Store()
    store.load(f"<urn:s> <urn:p> {lit(1e-07)} .".encode(), format=ox.RdfFormat.N_TRIPLES)
    assert store.query("ASK { ?s ?p ?o FILTER(?o > 0) }")  # a number (was: not one)


def test_an_integer_a_store_does_not_hold_is_refused() -> None:
    for n in (2 ** 63 - 1, -(2 ** 63)):
        assert _stored(literal(n)) == literal(n)
    for n in (2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 40):
        with pytest.raises(ProjectionError):
            literal(n)  # was: written, and Virtuoso wrapped or refused the batch
    with pytest.raises(ValueError, match="max_integer_digits"):
        InputLimits(max_integer_digits=19)  # was: up to 1,000 digits
    with pytest.raises(ValueError, match="max_float_digits"):
        InputLimits(max_float_digits=19)


# --- the input limits -------------------------------------------------------------------

@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_float_no_store_holds_is_refused_at_input(value: float, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        head = rt.journal.head()
        with pytest.raises(InputError, match=r"\.facts\[0\]\.object`: number .* digits"):
            rt.submit(_proposal("p-fact", value))
        with pytest.raises(InputError, match=r"arguments\.amount`: number .* digits"):
            rt.submit(_proposal("p-arg", 1.5, amount=value))
        assert rt.journal.head() == head  # nothing journaled
    text = json.dumps(_proposal("p-json", value))
    with pytest.raises(InputError, match=r"`proposal\.facts\[0\]\.object`: number"):
        load_json(text, limits=DEFAULT_LIMITS, source="proposal")


def test_edge_floats_export_as_they_were_projected(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)  # the home's on-disk store
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        for i, value in enumerate(EDGES):
            rt.submit(_proposal(f"p-{i}", value))
    out = tmp_path / "export.nq"
    done = run_cli("export", "--home", str(home), "--format", "nquads", "--output", str(out))
    assert done.returncode == 0, done.stderr
    with open_home_journal(home) as journal:
        assert out.read_text(encoding="utf-8") == project_nquads(journal.events())
    store = open_graph_store(home)
    try:  # each a number, equal to the float (1e-07 and 1e+16 were none)
        for value in EDGES:
            assert _holds(store, value)
    finally:
        store.close()


def _holds(store: Any, value: float) -> bool:
    """A fact's value in ``store`` is a number equal to ``value``."""
    return bool(store.ask(f"ASK {{ GRAPH ?g {{ ?f <{FACT_VALUE}> ?v "
                          f"FILTER(?v = {decimal(value)}) }} }}"))


# --- a remote store -------------------------------------------------------------------

def _older_journal(home: Path, pid: str, values: list[Any]) -> None:
    """A proposal an older version journaled: its facts hold numbers today's input limits
    refuse (written with the journal's own append, as that version did)."""
    with open_home_journal(home) as journal:
        first = journal.events_of_kind("proposal.received")[0]
        proposal = dict(first.payload["proposal"], id=pid, task_id=f"task-{pid}",
                        run_id=f"run:task-{pid}",
                        facts=[{"subject": "acct-1", "predicate": f"n{i}", "object": v,
                                "source": "agent"} for i, v in enumerate(values)])
        journal.append([NewEvent(run_id=f"run:task-{pid}", kind="proposal.received",
                                 subject=f"proposal:{pid}", actor=AGENT, at=first.at,
                                 payload={**first.payload, "proposal": proposal})])


@pytest.mark.slow
@pytest.mark.parametrize("remote", REMOTES)
def test_a_hostile_float_does_not_stop_the_remote_graph(
        remote: str, request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = request.getfixturevalue(remote)
    monkeypatch.setenv(GRAPH_URL_ENV, server.setting())
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        rt.submit(_proposal("p-first", 1.5))
        _older_journal(home, "p-old", [1e40, 1e-300, 2.5])  # journaled before the limit
        rt.sync_graph()  # was: GraphResponseError (HTTP 400 SR127), the watermark stuck
        with pytest.raises(InputError):  # was: journaled, and the same again
            rt.submit(_proposal("p-big", 1e40))
        rt.submit(_proposal("p-after", 1e16))
        rt.submit(_proposal("p-small", 1e-07))
        rt.sync_graph()
        head = rt.journal.head()[0]
    store = open_graph_store(home)
    try:
        assert store.projected_seq() == head  # every event of every run is in
        for value in (1.5, 2.5, 1e16, 1e-07):  # a number, equal to the float, on the engine
            assert _holds(store, value)
        for text in ("1e+40", "1e-300"):  # what no store holds: kept as its text
            assert store.ask(f'ASK {{ GRAPH ?g {{ ?f <{FACT_VALUE}> "{text}" }} }}')
    finally:
        store.close()


# --- a pack's numbers -----------------------------------------------------------------

def _numbers(ev: AuditEvent) -> Iterator[tuple[str, str, str]]:
    """A projector as a pack author writes it: a literal of an event's value."""
    for fact in ev.payload["proposal"].get("facts", ()):
        yield (iri(f"urn:example:reading:{ev.seq}"), iri("https://example.org/vocab#value"),
               literal(fact["object"]))


def _hand_written(ev: AuditEvent) -> Iterator[tuple[str, str, str]]:
    """…or one that writes the term itself."""
    for fact in ev.payload["proposal"].get("facts", ()):
        yield (iri(f"urn:example:raw:{ev.seq}"), iri("https://example.org/vocab#value"),
               f'"{fact["object"]}"^^<{XSD_DECIMAL}>')


@pytest.mark.parametrize("remote", REMOTES)
def test_a_pack_number_no_store_holds_fails_that_event_not_the_graph(
        remote: str, request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = request.getfixturevalue(remote)
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home) as rt:
        rt.submit(_proposal("p-fine", 2.5))
    _older_journal(home, "p-float", [1e40])
    _older_journal(home, "p-int", [2 ** 64])  # a tool's output, say
    projectors = [PackProjector(pack="example.readings", name=name,
                                kinds=frozenset({"proposal.received"}), body=body)
                  for name, body in (("numbers", _numbers), ("raw", _hand_written))]
    monkeypatch.setenv(GRAPH_URL_ENV, server.setting())
    store = open_graph_store(home)
    try:
        with open_home_journal(home) as journal:
            # was: the batch refused on Virtuoso (on every catch-up), the literal kept on
            # Oxigraph as no number
            catch_up(store, journal, projectors=projectors)
            assert store.projected_seq() == journal.head()[0]
        failed = store.query("SELECT ?e ?why WHERE { GRAPH ?g { ?e "
                             "<https://w3id.org/cradle#projectionFailed> ?why } }")
        reasons = sorted(str(row[1].value) for row in failed)
        assert len(reasons) == 4, reasons  # both projectors, both events
        assert sum("1e+40" in r or "1e40" in r for r in reasons) == 2, reasons
        assert sum("18446744073709551616" in r for r in reasons) == 2, reasons
        assert store.ask("ASK { GRAPH ?g { ?r <https://example.org/vocab#value> 2.5 } }")
    finally:
        store.close()
