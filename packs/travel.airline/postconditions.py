"""What the airline's database must show after each write: SHACL shapes over the verifier's
observation (``<urn:cradle:observed>``: the reservation or profile read back through the
verifier's own connection) and the action's arguments (``<urn:cradle:arguments>``), checked
at gate 2. Each shape is the write's intended effect stated as data, independently of the
verifier's own comparison."""

from __future__ import annotations

_OB = "https://w3id.org/cradle/observed#"
_SHAPES = "https://w3id.org/cradle/pack/airline/shapes#"


def _shape(name: str, message: str, where: str) -> str:
    return f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<{_SHAPES}{name}> a sh:NodeShape ;
    sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "{message}" ;
        sh:select \"\"\"SELECT $this WHERE {{ {where} }}\"\"\" ] .
"""


#: the reservation read back is the one the call named
_SAME_RESERVATION = (f"<urn:cradle:arguments> <{_OB}reservation_id> ?rid . "
                     f"FILTER NOT EXISTS {{ $this <{_OB}reservation> ?r . "
                     f"?r <{_OB}reservation_id> ?rid }}")

CANCELLED = _shape(
    "Cancelled", "the reservation read back is not the one named, or is not cancelled",
    f"{{ {_SAME_RESERVATION} }} UNION {{ FILTER NOT EXISTS {{ $this <{_OB}reservation> ?r . "
    f"?r <{_OB}status> 'cancelled' }} }}")

FLIGHTS_UPDATED = _shape(
    "FlightsUpdated", "a flight asked for is not in the reservation read back",
    f"{{ {_SAME_RESERVATION} }} UNION {{ <urn:cradle:arguments> <{_OB}flights> ?f . "
    f"?f <{_OB}flight_number> ?n ; <{_OB}date> ?d . FILTER NOT EXISTS {{ "
    f"$this <{_OB}reservation> ?r . ?r <{_OB}flights> ?g . "
    f"?g <{_OB}flight_number> ?n ; <{_OB}date> ?d }} }}")

BAGGAGES_UPDATED = _shape(
    "BaggagesUpdated", "the reservation read back does not carry the bag counts asked for",
    f"{{ {_SAME_RESERVATION} }} UNION {{ <urn:cradle:arguments> <{_OB}total_baggages> ?t ; "
    f"<{_OB}nonfree_baggages> ?n . FILTER NOT EXISTS {{ $this <{_OB}reservation> ?r . "
    f"?r <{_OB}total_baggages> ?t ; <{_OB}nonfree_baggages> ?n }} }}")

PASSENGERS_UPDATED = _shape(
    "PassengersUpdated", "a passenger asked for is not in the reservation read back",
    f"{{ {_SAME_RESERVATION} }} UNION {{ <urn:cradle:arguments> <{_OB}passengers> ?p . "
    f"?p <{_OB}first_name> ?fn ; <{_OB}last_name> ?ln ; <{_OB}dob> ?dob . "
    f"FILTER NOT EXISTS {{ $this <{_OB}reservation> ?r . ?r <{_OB}passengers> ?q . "
    f"?q <{_OB}first_name> ?fn ; <{_OB}last_name> ?ln ; <{_OB}dob> ?dob }} }}")

BOOKED = _shape(
    "Booked", "no reservation of the customer with the cabin asked for was read back",
    f"<urn:cradle:arguments> <{_OB}user_id> ?u ; <{_OB}cabin> ?c . "
    f"FILTER NOT EXISTS {{ $this <{_OB}reservation> ?r . "
    f"?r <{_OB}user_id> ?u ; <{_OB}cabin> ?c }}")

CERTIFICATE_SENT = _shape(
    "CertificateSent", "no certificate of the amount asked for is in the profile read back",
    f"FILTER NOT EXISTS {{ $this <{_OB}certificates> ?id }}")
