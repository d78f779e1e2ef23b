"""The writes' postcondition shapes fail when the read-back does not show the effect (and
hold when it does), and a verifier reports the resources its read saw changed."""

from __future__ import annotations

import pytest
from pyshacl import validate
from rdflib import BNode, Graph, Literal, URIRef

OB = "https://w3id.org/cradle/observed#"
OBSERVED = URIRef("urn:cradle:observed")
ARGUMENTS = URIRef("urn:cradle:arguments")


def _load(name: str) -> str:
    from pathlib import Path

    namespace: dict[str, object] = {}
    source = Path(__file__).resolve().parents[1] / "postconditions.py"
    exec(compile(source.read_text(), str(source), "exec"), namespace)  # the pack's own text
    return str(namespace[name])


def _add(g: Graph, subject: URIRef | BNode, value: dict[str, object]) -> None:
    for key, item in value.items():
        for v in item if isinstance(item, list) else [item]:
            if isinstance(v, dict):
                child = BNode()
                g.add((subject, URIRef(OB + key), child))
                _add(g, child, v)
            else:
                g.add((subject, URIRef(OB + key), Literal(v)))


def _conforms(shape: str, observed: dict[str, object], arguments: dict[str, object]) -> bool:
    data = Graph()
    _add(data, OBSERVED, observed)
    _add(data, ARGUMENTS, arguments)
    data.add((OBSERVED, URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
              URIRef("https://w3id.org/cradle#VerifierObservation")))
    shapes = Graph().parse(data=shape, format="turtle")
    conforms, _, _ = validate(data, shacl_graph=shapes, advanced=True)
    return bool(conforms)


RES = {"reservation_id": "8B92J5", "user_id": "aarav_lee_3563", "status": "active",
       "cabin": "economy", "total_baggages": 1, "nonfree_baggages": 0,
       "flights": [{"flight_number": "HAT196", "date": "2024-05-20"}],
       "passengers": [{"first_name": "Aarav", "last_name": "Lee", "dob": "1980-01-01"}]}


@pytest.mark.parametrize(("shape", "arguments", "good", "bad"), [
    ("CANCELLED", {"reservation_id": "8B92J5"}, {**RES, "status": "cancelled"}, RES),
    ("BAGGAGES_UPDATED", {"reservation_id": "8B92J5", "total_baggages": 2,
                          "nonfree_baggages": 1},
     {**RES, "total_baggages": 2, "nonfree_baggages": 1}, RES),
    ("PASSENGERS_UPDATED", {"reservation_id": "8B92J5", "passengers": [
        {"first_name": "Mei", "last_name": "Lee", "dob": "1990-02-02"}]},
     {**RES, "passengers": [{"first_name": "Mei", "last_name": "Lee", "dob": "1990-02-02"}]},
     RES),
    ("FLIGHTS_UPDATED", {"reservation_id": "8B92J5", "cabin": "economy", "flights": [
        {"flight_number": "HAT100", "date": "2024-05-21"}]},
     {**RES, "flights": [{"flight_number": "HAT100", "date": "2024-05-21"}]}, RES),
    ("BOOKED", {"user_id": "aarav_lee_3563", "cabin": "business"},
     {**RES, "cabin": "business"}, RES),
])
def test_a_shape_holds_only_on_the_effect(shape: str, arguments: dict[str, object],
                                          good: dict[str, object],
                                          bad: dict[str, object]) -> None:
    text = _load(shape)
    assert _conforms(text, {"reservation": good}, arguments)
    assert not _conforms(text, {"reservation": bad}, arguments)


def test_another_reservation_read_back_fails() -> None:
    other = {**RES, "reservation_id": "ZZZZZZ", "status": "cancelled"}
    assert not _conforms(_load("CANCELLED"), {"reservation": other},
                         {"reservation_id": "8B92J5"})


def test_certificate_needs_one_in_the_profile() -> None:
    text = _load("CERTIFICATE_SENT")
    args = {"user_id": "u", "amount": 150}
    assert _conforms(text, {"certificates": ["certificate_3221322"]}, args)
    assert not _conforms(text, {"certificates": []}, args)
