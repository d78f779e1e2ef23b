"""A trace and a trusted input as triples, in the execution vocabulary.

The same triples are projected into the run's graph (``cradle_kg.graph.lineage``) and
given to gate 1's graph policies (:mod:`.rules`) together with the proposed action, so a
rule reads at the gate what a query reads afterwards.

    <action> cradle:hasArgument <argument> .
    <argument> a cradle:ActionArgument ; cradle:argumentName "recipient" ;
        cradle:argumentValue "…" ; cradle:sensitive true ; cradle:trustedOrigin false ;
        cradle:untrustedOnly true ; prov:wasDerivedFrom <source> ; cradle:instructedBy <source> ;
        cradle:disclosesConfidential <source> ;
        cradle:disclosureRequested false ; cradle:pickedFrom <listing source> .
    <source> a cradle:LineageSource ; cradle:trust cradle:Untrusted ;
        cradle:sourceKind "observation" ; cradle:field "transactions.subject" ;
        cradle:quote "…" ; prov:wasAttributedTo <agent> ; cradle:fromObservation <obs> .
    <action> cradle:invokes <tool> ; cradle:choiceNamedIn <source> ; cradle:toldBy <source> ;
        cradle:choiceTrusted false ; cradle:choiceUntrustedOnly true ;
        cradle:repeatsAction <earlier action> ; cradle:repeatChanged "hotel" .
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import quote

from ..graph.ntriples import escape
from ..graph.vocab import CRADLE_NS, PROV_NS, RDF_NS

ID_BASE = "https://w3id.org/cradle/id/"


@lru_cache(maxsize=4096)
def node(kind: str, ident: str) -> str:
    return f"<{ID_BASE}{kind}/{quote(ident, safe='')}>"


def c(term: str) -> str:
    return f"<{CRADLE_NS}{term}>"


def p(term: str) -> str:
    return f"<{PROV_NS}{term}>"


def lit(value: object) -> str:
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<http://www.w3.org/2001/XMLSchema#boolean>'
    return f'"{escape(str(value))}"'


_TYPE = f"<{RDF_NS}type>"
TRUST_TERMS = {"trusted": "Trusted", "untrusted": "Untrusted", "designated": "Designated"}


def _source(out: list[str], origin: dict[str, Any]) -> str:
    key = f"{origin['source']}#{origin['field']}" if origin.get("field") else origin["source"]
    s = node("source", f"{key}@{origin.get('at', 0)}")
    out.append(f"{s} {_TYPE} {c('LineageSource')}")
    out.append(f"{s} {c('trust')} {c(TRUST_TERMS.get(origin['trust'], 'Untrusted'))}")
    out.append(f"{s} {c('sourceKind')} {lit(origin['kind'])}")
    out.append(f"{s} {c('quote')} {lit(origin['quote'])}")
    out.append(f"{s} {p('wasAttributedTo')} {node('agent', origin['author'])}")
    if origin.get("field"):
        out.append(f"{s} {c('field')} {lit(origin['field'])}")
    if origin["kind"] == "observation":
        out.append(f"{s} {c('fromObservation')} {node('observation', origin['source'])}")
    elif origin["source"].startswith("input:"):
        out.append(f"{s} {c('fromInput')} "
                   f"{node('input', origin['source'].removeprefix('input:'))}")
    return s


def trace_triples(trace: dict[str, Any]) -> list[str]:
    """The triples of a trace (``Trace.model_dump(mode="json")``) as ``"s p o"`` strings."""
    out: list[str] = []
    a = node("action", trace["action_id"])
    out.append(f"{a} {c('invokes')} {node('tool', trace['tool'])}")
    out.append(f"{a} {c('choiceTrusted')} {lit(bool(trace['choice_trusted']))}")
    out.append(f"{a} {c('choiceUntrustedOnly')} {lit(bool(trace['choice_untrusted_only']))}")
    if trace.get("choice_delegated"):
        out.append(f"{a} {c('choiceDelegated')} {lit(True)}")
    for origin in trace["choice_origins"]:
        out.append(f"{a} {c('choiceNamedIn')} {_source(out, origin)}")
    for origin in trace.get("told_by", ()):
        out.append(f"{a} {c('toldBy')} {_source(out, origin)}")
    if trace.get("repeats"):
        out.append(f"{a} {c('repeatsAction')} {node('action', trace['repeats'])}")
        for name in trace.get("repeat_changed", ()):
            out.append(f"{a} {c('repeatChanged')} {lit(name)}")
    for arg in trace["arguments"]:
        s = node("argument", f"{trace['action_id']}#{arg['name']}")
        out.append(f"{a} {c('hasArgument')} {s}")
        out.append(f"{s} {_TYPE} {c('ActionArgument')}")
        out.append(f"{s} {c('argumentName')} {lit(arg['name'])}")
        out.append(f"{s} {c('argumentValue')} {lit(arg['value'])}")
        for flag, term in (("sensitive", "sensitive"), ("trusted_origin", "trustedOrigin"),
                           ("untrusted_only", "untrustedOnly"),
                           ("instructed_trusted", "instructedByTrusted"),
                           ("disclosure_requested", "disclosureRequested")):
            out.append(f"{s} {c(term)} {lit(bool(arg.get(flag, False)))}")
        for origin in arg["origins"]:
            out.append(f"{s} {p('wasDerivedFrom')} {_source(out, origin)}")
        for origin in arg["instructed_by"]:
            out.append(f"{s} {c('instructedBy')} {_source(out, origin)}")
        for origin in arg.get("discloses", ()):
            out.append(f"{s} {c('disclosesConfidential')} {_source(out, origin)}")
        for origin in arg.get("picked_from", ()):
            out.append(f"{s} {c('pickedFrom')} {_source(out, origin)}")
    return out


def input_triples(ref: str, payload: dict[str, Any]) -> list[str]:
    """A trusted input of a run: the request, who authored it, its content address."""
    s = node("input", ref)
    return [f"{s} {_TYPE} {c('TrustedInput')}",
            f"{s} {c('trust')} {c('Trusted')}",
            f"{s} {c('sourceKind')} {lit(payload.get('kind', 'request'))}",
            f"{s} {p('wasAttributedTo')} {node('agent', str(payload.get('author', '')))}",
            f"{s} {c('evidenceRef')} {lit(ref)}"]
