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

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from ..graph.ntriples import escape
from ..graph.vocab import CRADLE_NS, PROV_NS, RDF_NS
from ..redaction import MASK
from .normalise import says, tokens

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


Hide = Callable[[str], str]


def _shown(text: str) -> str:
    return text


def secret_units(trace: dict[str, Any], secret: Iterable[str]) -> list[list[str]]:
    """The values of a trace's ``secret`` arguments, as lineage tokenised them."""
    hidden, units = set(secret), []
    for arg in trace.get("arguments", ()):
        if arg.get("name") not in hidden:
            continue
        value = str(arg.get("value", ""))
        cut = value.endswith("...")  # a long value, shortened: its last token may be cut
        unit = tokens(value.removesuffix("...") if cut else value)
        unit = unit[:-1] if cut and len(unit) > 1 else unit
        if unit:
            units.append(unit)
    return units


def quote_hider(units: Sequence[list[str]]) -> Hide:
    """How a quote is shown when ``units`` are secret values (token sequences): each one,
    however the source spelt its separators and case, as the mask, and a quote that still
    holds one in another spelling masked whole. Lineage traced the value; the graph and
    the reasons say where from, never what it was (``tests/security/test_131``)."""
    if not units:
        return _shown
    patterns = [re.compile(r"(?<!\w)" + r"[\W_]*".join(re.escape(t) for t in u)
                           + r"(?!\w)", re.IGNORECASE) for u in units]

    def hide(text: str) -> str:
        for pattern in patterns:
            text = pattern.sub(MASK, text)
        words = tokens(text)
        return MASK if any(says(words, u) for u in units) else text
    return hide


_ORIGIN_LISTS = ("choice_origins", "told_by")
_ARGUMENT_ORIGIN_LISTS = ("origins", "instructed_by", "discloses", "picked_from")


def hide_quotes(trace: dict[str, Any], hide: Hide) -> dict[str, Any]:
    """A trace (its JSON form) with every quote as ``hide`` shows it."""
    def origins(found: Any) -> list[Any]:
        return [{**o, "quote": hide(str(o.get("quote", "")))} for o in found or ()]
    return {**trace, **{k: origins(trace.get(k)) for k in _ORIGIN_LISTS if k in trace},
            "arguments": [{**a, **{k: origins(a.get(k)) for k in _ARGUMENT_ORIGIN_LISTS
                                   if k in a}} for a in trace.get("arguments", ())]}


def _source(out: list[str], origin: dict[str, Any], hide: Hide = _shown) -> str:
    key = f"{origin['source']}#{origin['field']}" if origin.get("field") else origin["source"]
    s = node("source", f"{key}@{origin.get('at', 0)}")
    out.append(f"{s} {_TYPE} {c('LineageSource')}")
    out.append(f"{s} {c('trust')} {c(TRUST_TERMS.get(origin['trust'], 'Untrusted'))}")
    out.append(f"{s} {c('sourceKind')} {lit(origin['kind'])}")
    out.append(f"{s} {c('quote')} {lit(hide(str(origin['quote'])))}")
    out.append(f"{s} {p('wasAttributedTo')} {node('agent', origin['author'])}")
    if origin.get("field"):
        out.append(f"{s} {c('field')} {lit(origin['field'])}")
    if origin["kind"] == "observation":
        out.append(f"{s} {c('fromObservation')} {node('observation', origin['source'])}")
    elif origin["source"].startswith("input:"):
        out.append(f"{s} {c('fromInput')} "
                   f"{node('input', origin['source'].removeprefix('input:'))}")
    return s


def trace_triples(trace: dict[str, Any], *, secret: Iterable[str] = ()) -> list[str]:
    """The triples of a trace (``Trace.model_dump(mode="json")``) as ``"s p o"`` strings;
    the ``secret`` arguments' values masked, in their own triple and in every quote."""
    out: list[str] = []
    hidden = frozenset(secret)
    hide = quote_hider(secret_units(trace, hidden)) if hidden else _shown
    a = node("action", trace["action_id"])
    out.append(f"{a} {c('invokes')} {node('tool', trace['tool'])}")
    out.append(f"{a} {c('choiceTrusted')} {lit(bool(trace['choice_trusted']))}")
    out.append(f"{a} {c('choiceUntrustedOnly')} {lit(bool(trace['choice_untrusted_only']))}")
    if trace.get("choice_delegated"):
        out.append(f"{a} {c('choiceDelegated')} {lit(True)}")
    for origin in trace["choice_origins"]:
        out.append(f"{a} {c('choiceNamedIn')} {_source(out, origin, hide)}")
    for origin in trace.get("told_by", ()):
        out.append(f"{a} {c('toldBy')} {_source(out, origin, hide)}")
    if trace.get("repeats"):
        out.append(f"{a} {c('repeatsAction')} {node('action', trace['repeats'])}")
        for name in trace.get("repeat_changed", ()):
            out.append(f"{a} {c('repeatChanged')} {lit(name)}")
    for arg in trace["arguments"]:
        s = node("argument", f"{trace['action_id']}#{arg['name']}")
        out.append(f"{a} {c('hasArgument')} {s}")
        out.append(f"{s} {_TYPE} {c('ActionArgument')}")
        out.append(f"{s} {c('argumentName')} {lit(arg['name'])}")
        out.append(f"{s} {c('argumentValue')} "
                   f"{lit(MASK if arg['name'] in hidden else arg['value'])}")
        for flag, term in (("sensitive", "sensitive"), ("trusted_origin", "trustedOrigin"),
                           ("untrusted_only", "untrustedOnly"),
                           ("instructed_trusted", "instructedByTrusted"),
                           ("disclosure_requested", "disclosureRequested")):
            out.append(f"{s} {c(term)} {lit(bool(arg.get(flag, False)))}")
        for origin in arg["origins"]:
            out.append(f"{s} {p('wasDerivedFrom')} {_source(out, origin, hide)}")
        for origin in arg["instructed_by"]:
            out.append(f"{s} {c('instructedBy')} {_source(out, origin, hide)}")
        for origin in arg.get("discloses", ()):
            out.append(f"{s} {c('disclosesConfidential')} {_source(out, origin, hide)}")
        for origin in arg.get("picked_from", ()):
            out.append(f"{s} {c('pickedFrom')} {_source(out, origin, hide)}")
    return out


def input_triples(ref: str, payload: dict[str, Any]) -> list[str]:
    """A trusted input of a run: the request, who authored it, its content address."""
    s = node("input", ref)
    return [f"{s} {_TYPE} {c('TrustedInput')}",
            f"{s} {c('trust')} {c('Trusted')}",
            f"{s} {c('sourceKind')} {lit(payload.get('kind', 'request'))}",
            f"{s} {p('wasAttributedTo')} {node('agent', str(payload.get('author', '')))}",
            f"{s} {c('evidenceRef')} {lit(ref)}"]
