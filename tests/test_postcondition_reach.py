"""Gate 2 gives a contract's postcondition shapes only the triples of the observation whose
predicate they can see (:func:`cradle_kg.loop.gate2_world.seen_by`, read by
:mod:`cradle_kg.graph.shape_reach`): the report is the one the whole observation gets —
on the airline's six shapes and many observations that hold and break them — and shapes
that can see any predicate get every triple."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from cradle_kg import VerifierReport
from cradle_kg.loop.gate2_world import _engine, observation_rdf, seen_by

OB = "https://w3id.org/cradle/observed#"
SHAPE_NAMES = ("CANCELLED", "FLIGHTS_UPDATED", "BAGGAGES_UPDATED", "PASSENGERS_UPDATED",
               "BOOKED", "CERTIFICATE_SENT")


def _airline_shapes() -> dict[str, str]:
    namespace: dict[str, object] = {}
    source = Path(__file__).resolve().parents[1] / "packs/travel.airline/postconditions.py"
    exec(compile(source.read_text(), str(source), "exec"), namespace)  # the pack's own text
    return {name: str(namespace[name]) for name in SHAPE_NAMES}


class Args(BaseModel):
    model_config = ConfigDict(extra="allow")


RESERVATION: dict[str, Any] = {
    "reservation_id": "8B92J5", "user_id": "aarav_lee_3563", "origin": "MSP",
    "destination": "EWR", "flight_type": "one_way", "cabin": "economy",
    "flights": [{"origin": "MSP", "destination": "EWR", "flight_number": "HAT196",
                 "date": "2024-05-20", "price": 163}],
    "passengers": [{"first_name": "Aarav", "last_name": "Lee", "dob": "1980-01-01"}],
    "payment_history": [{"payment_id": "credit_card_7195750", "amount": 193}],
    "created_at": "2024-05-05T18:27:32", "total_baggages": 1, "nonfree_baggages": 0,
    "insurance": "yes", "status": None}


def _cases(seed: int) -> list[tuple[dict[str, Any], dict[str, Any], tuple[str, ...] | None]]:
    """(evidence, arguments, changed): the reservation read back as asked, and with one or
    two of its values moved (names, ids, dates, counts, status), against arguments that
    ask for what was read or for something else."""
    rnd = random.Random(seed)
    out: list[tuple[dict[str, Any], dict[str, Any], tuple[str, ...] | None]] = []
    for _ in range(60):
        res = copy.deepcopy(RESERVATION)
        args: dict[str, Any] = {
            "reservation_id": res["reservation_id"], "user_id": res["user_id"],
            "cabin": res["cabin"], "passengers": copy.deepcopy(res["passengers"]),
            "flights": [{"flight_number": f["flight_number"], "date": f["date"]}
                        for f in res["flights"]],
            "total_baggages": res["total_baggages"],
            "nonfree_baggages": res["nonfree_baggages"], "amount": 100}
        for _ in range(rnd.randint(0, 2)):
            move = rnd.randrange(9)
            if move == 0:
                res["passengers"][0]["first_name"] = rnd.choice(["Aarav", "Ana", "é"])
            elif move == 1:
                args["reservation_id"] = rnd.choice(["8B92J5", "ZZZZZZ"])
            elif move == 2:
                res["status"] = rnd.choice([None, "cancelled"])
            elif move == 3:
                res["flights"][0]["date"] = rnd.choice(["2024-05-20", "2024-05-21"])
            elif move == 4:
                args["total_baggages"] = rnd.randint(0, 3)
            elif move == 5:
                res["cabin"] = rnd.choice(["economy", "business"])
            elif move == 6:
                res["passengers"].append({"first_name": "X", "last_name": "Y",
                                          "dob": "1990-01-01"})
            elif move == 7:
                args["passengers"][0]["dob"] = rnd.choice(["1980-01-01", "1981-01-01"])
            else:
                res["nonfree_baggages"] = rnd.randint(0, 2)
        evidence: dict[str, Any] = {
            "reservation": res,
            "changes": [{"kind": "reservation", "reservation_id": res["reservation_id"],
                         "user_id": res["user_id"], "payment_id": None, "amount": None}]}
        if rnd.random() < 0.5:
            evidence["certificates"] = rnd.choice([[], ["certificate_3221322"]])
        out.append((evidence, args, rnd.choice([None, ("reservation:8B92J5",)])))
    return out


def _report(evidence: dict[str, Any], changed: tuple[str, ...] | None) -> VerifierReport:
    return VerifierReport(checks=(), read_at=datetime.now(UTC), source="test",
                          evidence=evidence, changed=changed)


def _verdict(shapes: tuple[str, ...], text: str) -> tuple[bool, list[tuple[str, str]]]:
    result = _engine(shapes).validate(text, format="nt", report=False)
    return result.conforms, sorted((v.message or "", v.shape) for v in result.violations)


@pytest.mark.parametrize("name", SHAPE_NAMES)
def test_the_airline_shapes_see_few_triples_and_report_the_same(name: str) -> None:
    shapes = (_airline_shapes()[name],)
    keep = seen_by(shapes)
    assert keep is not None  # the filter is on for each of them
    verdicts = set()
    for evidence, arguments, changed in _cases(SHAPE_NAMES.index(name)):
        report, args = _report(evidence, changed), Args(**arguments)
        whole = observation_rdf(report, args)
        seen = observation_rdf(report, args, keep)
        assert seen.count("\n") < whole.count("\n")
        assert set(seen.splitlines()) <= set(whole.splitlines())
        verdict = _verdict(shapes, whole)
        assert _verdict(shapes, seen) == verdict, (name, evidence, arguments)
        verdicts.add(verdict[0])
    if name != "CERTIFICATE_SENT":  # its shape asks only for a certificate in the read
        assert verdicts == {True, False}  # the cases reach both outcomes


def test_shapes_that_can_see_any_predicate_are_given_every_triple() -> None:
    shapes = ("""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://example.org/t#Any> a sh:NodeShape ; sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "nothing read" ;
        sh:select \"\"\"SELECT $this WHERE { FILTER NOT EXISTS { $this ?p ?o .
            FILTER (?p != <http://www.w3.org/1999/02/22-rdf-syntax-ns#type>) } }\"\"\" ] .
""",)
    assert seen_by(shapes) is None
    evidence, arguments, changed = _cases(7)[0]
    report, args = _report(evidence, changed), Args(**arguments)
    assert observation_rdf(report, args, seen_by(shapes)) == observation_rdf(report, args)
    assert _verdict(shapes, observation_rdf(report, args))[0]


def test_a_closed_shape_is_given_every_triple() -> None:
    shapes = (f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://example.org/t#Closed> a sh:NodeShape ; sh:targetNode <urn:cradle:observed> ;
    sh:closed true ; sh:ignoredProperties ( <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> ) ;
    sh:property [ sh:path <{OB}reservation> ] .
""",)
    assert seen_by(shapes) is None
    evidence, arguments, changed = _cases(8)[0]
    report, args = _report(evidence, changed), Args(**arguments)
    text = observation_rdf(report, args, seen_by(shapes))
    assert text == observation_rdf(report, args)
    assert not _verdict(shapes, text)[0]  # `changes` is not allowed on the closed node
