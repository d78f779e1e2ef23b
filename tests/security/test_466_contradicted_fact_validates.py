"""A fact the verifier contradicted is a well-formed fact for ``validate``.

Finding (the twenty-fourth review, the graph): gate 2 writes a candidate fact its verifier
contradicts as ``cradle:verificationStatus cradle:Rejected`` (the ontology's status for it),
but the structural ``cradle:FactShape`` allowed only ``Verified`` ``Failed``
``Inconclusive`` ``Unverified``. Any agent could state a fact the verifier reads
otherwise (its call fails verification, as it should), and from then on ``validate --all``
said the honest store does not conform (exit 1), for good: an alarm an agent rings at
will drowns the ones that matter.

Now ``cradle:Rejected`` is one of a fact's statuses: the store of that run conforms, and a
fact with a status outside the list still does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.graph.bulk import validate_store, validate_whole
from cradle_kg.graph.shacl import RustShaclEngine, load_shapes
from cradle_kg.records import FactCheck, OutcomeStatus
from tests.conftest import make_config
from tests.test_gate2_world import FACTS, _go, _ok, _tool

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_contradicted_fact_leaves_the_store_conforming(home: Path) -> None:
    with Runtime(home, config=make_config()) as rt:
        _tool(rt, "test.contra", _ok(facts=(FactCheck(fact=1, status="contradicted",
                                                       detail="size is 4"),)))
        out = _go(rt, "p-contra", "test.contra", facts=FACTS)
        assert out.status is not OutcomeStatus.EXECUTED  # the verifier read otherwise
        store = rt.graph()
        shapes = load_shapes()
        for report in (validate_store(store, shapes), validate_whole(store, shapes)):
            # before: "a fact has at most one status among `Verified` `Failed` ..."
            assert report.conforms, report.to_text()


def test_a_fact_status_outside_the_list_is_still_reported() -> None:
    fact = "<https://example.org/f>"
    data = (f"{fact} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
            "<https://w3id.org/cradle#Fact> .\n"
            f"{fact} <https://w3id.org/cradle#verificationStatus> "
            "<https://w3id.org/cradle#Approved> .\n")
    report = RustShaclEngine(load_shapes()).validate(data, format="nt")
    assert not report.conforms
    assert {v.shape for v in report.violations} == {"https://w3id.org/cradle#FactShape"}
