"""Stage 1 — extraction: free OCR text → candidate facts, each with the matched span.

An extractor only reports what the text states. Every candidate carries the source
``extractor:<name>@<version>`` and the exact span of text it came from; nothing not stated
becomes a candidate. Units are left as written — normalisation converts them.

``KeywordExtractor`` is the deterministic default. ``LlmExtractor`` calls an injected model
client (``request dict -> response dict``), records every request and response, and keeps a
model's candidate only when its quoted evidence occurs verbatim in the description.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from .models import SPECS, CandidateFact, Evidence, ModelCall, Value
from .normalisation import convert

ModelClient = Callable[[dict[str, Any]], dict[str, Any]]
#: a thousands group may be written with a space (the SI way: ``1 200``, also a no-break or
#: narrow no-break space) or an apostrophe (the Swiss way: ``1'200``); such a number is read
#: whole, and no number is read starting inside one (``1 200 km`` is not 200 km,
#: tests/security/test_492)
_GROUP_MARK = "[ \u00a0\u202f'\u2019]"
_NUM = (
    rf"(?<!\d{_GROUP_MARK})"
    rf"(\d{{1,3}}(?:{_GROUP_MARK}\d{{3}})++(?![\d.,])|\d+(?:[.,]\d+)?)"
)
_MARK_GROUPED = re.compile(rf"\d{{1,3}}(?:{_GROUP_MARK}\d{{3}})+")


class Extractor(Protocol):
    name: str
    version: str

    def extract(self, text: str) -> list[CandidateFact]: ...


#: one to three digits, a dot, exactly three digits: a decimal (``1.500`` = 1.5) or a
#: thousands group written the continental way (``1.500`` = 1500) — the text does not say
_DOTTED_GROUP = re.compile(r"[1-9]\d{0,2}\.\d{3}")


def parse_number(raw: str) -> float:
    """``0,9`` → 0.9; ``1,500`` (three digits after the comma) → 1500; ``1 500`` → 1500.

    ``1.500`` raises ``ValueError``: it is 1.5 or 1500 and a guess could put goods a
    thousand times under a threshold (a range of "1.000 km" is not 1 km) — the extractor
    reads no value from it and the attribute stays unknown (a clarification)."""
    if _MARK_GROUPED.fullmatch(raw):
        return float(re.sub(_GROUP_MARK, "", raw))
    if _DOTTED_GROUP.fullmatch(raw):
        raise ValueError(f"`{raw}` is ambiguous: a decimal or a dotted thousands group")
    if "," in raw:
        head, tail = raw.split(",", 1)
        raw = head + tail if len(tail) == 3 else f"{head}.{tail}"
    return float(raw)


@dataclass(frozen=True)
class Pattern:
    predicate: str
    source: str
    value: Value | None = None  # fixed value; None = read number group 1 and unit group 2

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use, not when the pack is imported (``tools list`` imports it:
        compiling every pattern cost ~10 ms there)."""
        return re.compile(self.source, re.IGNORECASE)


def _p(predicate: str, regex: str, value: Value | None = None) -> Pattern:
    return Pattern(predicate, regex, value)


_UAV_WORDS = (
    r"unmanned aerial vehicles?|unmanned aircraft|unmanned helicopters?|UAVs?|UAS|RPAS|"
    r"drones?|quadcopters?|multicopters?|hexacopters?|octocopters?"
)
_CRAFT_WORDS = (
    rf"{_UAV_WORDS}|helicopters?|aeroplanes?|airplanes?|aircraft|gliders?|balloons?|dirigibles?"
)
# Linear work on any text an agent writes (tests/security/test_431): a run of whitespace is
# matched one way only (possessive `*+`/`++`; what follows it never starts with a space),
# and the craft a part phrase is for is looked for within PART_REACH characters of its
# "for"/"of", not to the end of the sentence from every part word.
PART_REACH = 120
_MORE_CRAFT = rf"(?:[\s-]++(?:{_CRAFT_WORDS})\b)*"
_FOR_CRAFT = (
    rf"\s++(?:for|of)\s++[^.;\n]{{0,{PART_REACH}}}?(?:{_CRAFT_WORDS})\b{_MORE_CRAFT}"
)
_BEYOND = r"beyond[- ]visual[- ]line[- ]of[- ]sight"
_MAX = r"(?:max(?:imum|\.)?\s*+)?"
_SEP = r"\s*+(?:(?:of|:|=|is|up to)\s*+)?"
_UNIT_MASS = r"(kg|g|t)\b"
_UNIT_LEN = r"(km|m|mi|nmi)\b"
_UNIT_DUR = r"(min(?:utes?)?|h(?:ours?|rs?)?|s(?:ec(?:onds?)?)?)\b"
_UNIT_VOL = r"(ml|l|litres?|liters?)\b"
_UNIT_SPEED = r"(km/h|kmh|m/s|knots|kn)(?![\w/])"

# Ranges that are not the craft's (tests/security/test_494): the range of a radio link or a
# sensor is read as no attribute — its words are taken first, so ``range <n> km`` inside
# is not read as the flight range (9A112.a), which then stays unknown and is asked for.
NOT_ATTRIBUTE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"\b(?:(?:data|radio|video|control|transmission|telemetry|signal|FPV|communications?"
        r"|detection|remote[- ]control)[- ]?(?:link\s++)?|link\s++)range"
        rf"{_SEP}(?:{_NUM}\s*+{_UNIT_LEN})?",
        re.IGNORECASE,
    ),
)

# Part phrases come first: the words they consume ("propellers for drones") are not
# read again as the product itself.
PART_PATTERNS: tuple[Pattern, ...] = (
    _p(
        "product_type",
        rf"\b(?:spare\s+)?(?:propellers?|rotor blades?|rotors?){_FOR_CRAFT}",
        "propeller_or_rotor",
    ),
    _p(
        "product_type",
        rf"\b(?:undercarriages?|landing gears?){_FOR_CRAFT}",
        "undercarriage",
    ),
    _p(
        "product_type",
        rf"\b(?:spare\s+)?parts?{_FOR_CRAFT}",
        "aircraft_part",
    ),
)
PRODUCT_PATTERNS: tuple[Pattern, ...] = (
    _p("product_type", rf"\b(?:{_UAV_WORDS})\b", "unmanned_aerial_vehicle"),
    _p("product_type", r"(?<!unmanned )\bhelicopters?\b", "helicopter"),
    _p("product_type", r"(?<!unmanned )\b(?:aeroplanes?|airplanes?)\b", "aeroplane"),
    _p("product_type", r"\b(?:hang[- ])?gliders?\b|\bsailplanes?\b", "glider"),
    _p(
        "product_type",
        r"\b(?:hot[- ]air|gas)\s+balloons?\b|\bdirigibles?\b",
        "balloon_or_dirigible",
    ),
)
_LIMITS = r"(?:restrictions?|limitations?|limits?|constraints?)"
_VLOS = r"(?:VLOS|visual\s++line\s++of\s++sight)"
# A statement that lifts a limit on flight out of sight first ("no BVLOS restrictions",
# "not limited to VLOS", "beyond VLOS": out of sight, tests/security/test_434, test_493),
# then the negative statements, so "not BVLOS" is not also read as "BVLOS". "VLOS" reads
# `false` only where the text states flight within sight (the list item "VLOS", "VLOS
# only", "within VLOS", "restricted to VLOS"): any other mention ("VLOS not required")
# reads nothing — the attribute stays unknown and is asked for, never read as within sight.
ATTRIBUTE_PATTERNS: tuple[Pattern, ...] = (
    _p(
        "beyond_visual_line_of_sight",
        rf"\b(?:no|without)\s++(?:BVLOS|{_BEYOND}|{_VLOS})\s++(?:flight\s++|operations?\s++)?"
        rf"{_LIMITS}\b"
        rf"|\bnot\s++(?:limited|restricted|confined)\s++to\s++(?:within\s++)?(?:the\s++)?"
        rf"{_VLOS}\b"
        rf"|\bnot\s++{_VLOS}[- ](?:limited|restricted|confined|bound)\b"
        rf"|\bbeyond\s++(?:the\s++)?VLOS\b",
        True,
    ),
    _p(
        "beyond_visual_line_of_sight",
        rf"\b(?:not|no|without)\s+(?:BVLOS|{_BEYOND})\b",
        False,
    ),
    _p(
        "beyond_visual_line_of_sight",
        rf"(?<!\bnot )\b(?:within|in)\s++(?:the\s++)?{_VLOS}\b"
        rf"|\b(?:limited|restricted|confined)\s++to\s++(?:within\s++)?(?:the\s++)?{_VLOS}\b"
        r"|\bVLOS[- ](?:(?:flight|operations?)\s++)?only\b"
        r"|(?:\A|(?<=[,;:(\n])|(?<=[,;:(\n] ))VLOS(?=\s*+(?:[,;.)\n]|\Z))",
        False,
    ),
    _p(
        "beyond_visual_line_of_sight",
        rf"\bBVLOS\b|\b{_BEYOND}\b|\bout of (?:the )?direct (?:natural )?vision\b",
        True,
    ),
    _p("autonomous_flight", r"\b(?:no|without)\s+autonomous\s+(?:flight|navigation|mode)\b", False),
    _p(
        "autonomous_flight",
        r"\bautonomous\s+(?:flight|navigation|mode)\b|\bwaypoint navigation\b"
        r"|\bpre-?programmed flight\b",
        True,
    ),
    _p("remote_controlled_only", r"\bremote[- ]controlled\s+(?:flight\s+)?only\b", True),
    _p(
        "passenger_carriage",
        r"\bnot\s+(?:designed\s+)?for\s+(?:the\s+)?carriage\s+of\s+passengers\b"
        r"|\bno\s+passengers\b",
        False,
    ),
    _p(
        "passenger_carriage",
        r"\bcarriage\s+of\s+passengers\b|\bpassenger[- ]carrying\b"
        r"|\bpassenger\s+drones?\b|\bair\s+taxi\b",
        True,
    ),
    _p(
        "aerosol_capacity",
        r"\b(?:no|without)\s+(?:aerosol|spray(?:ing)?)\s+"
        r"(?:dispensing\s+)?(?:system|mechanism|tank)\b",
        0.0,
    ),
    _p(
        "maximum_takeoff_weight",
        rf"\b(?:MTOW|{_MAX}take[- ]?off\s*(?:weight|mass)){_SEP}{_NUM}\s*{_UNIT_MASS}",
    ),
    _p("unladen_weight", rf"\b(?:unladen|empty)\s+weight{_SEP}{_NUM}\s*{_UNIT_MASS}"),
    _p(
        "maximum_range",
        rf"\b{_MAX}(?:range|flight\s++(?:range|distance)){_SEP}{_NUM}\s*{_UNIT_LEN}",
    ),
    _p("maximum_range", rf"\b{_NUM}\s*{_UNIT_LEN}\s+(?:flight\s++)?range\b"),
    _p(
        "endurance",
        rf"\b{_MAX}(?:flight time|endurance|flight duration){_SEP}{_NUM}\s*{_UNIT_DUR}",
    ),
    _p(
        "aerosol_capacity",
        rf"\b(?:spray(?:ing)?|aerosol|pesticide)\s+(?:dispensing\s+)?(?:tank|system|capacity)"
        rf"(?:\s*+capacity)?{_SEP}{_NUM}\s*{_UNIT_VOL}",
    ),
    _p(
        "gust_tolerance",
        rf"\b(?:wind|gust)s?\s+(?:resistance|tolerance){_SEP}{_NUM}\s*{_UNIT_SPEED}",
    ),
)


# Two values of one attribute in one phrase (tests/security/test_529): "flight time 45 min
# loaded, 75 min empty", "range 200 km (320 km with extended battery)", "45 min / 1.5 h",
# "45 min with payload, or 80 min without". After a number the attribute's pattern read,
# another of the same kind of unit is read as the same attribute when only a few
# qualifying words, a separator (`,` `/` `(` `or`) and "up to"/"max."/"about" stand
# between — a word naming another quantity ("charging time 90 min", "radio range 60 km")
# does not qualify, nor does one a word names after it ("7 kg payload", "90 min charging")
# or another unit's ("320 km/h"), so that number is not this attribute's.
_NOT_THIS = (
    r"(?![/\w])(?!\s*+(?:payload|cargo|loads?|batter(?:y|ies)|charg\w*|recharg\w*|altitude"
    r"|ceiling|height|speed|wind|gusts?|radio|video|link|transmission|camera|sensor)\b)"
)
_UNIT_OF: dict[str, str] = {
    "maximum_takeoff_weight": _UNIT_MASS,
    "unladen_weight": _UNIT_MASS,
    "maximum_range": _UNIT_LEN,
    "endurance": _UNIT_DUR,
    "aerosol_capacity": _UNIT_VOL,
    "gust_tolerance": _UNIT_SPEED,
}
_QUALIFIER = r"(?:\s++(?!(?:or|and)\b)[\w'-]++){0,5}?"
_ALTERNATIVE: dict[str, re.Pattern[str]] = {
    predicate: re.compile(
        rf"{_QUALIFIER}\s*+(?:,\s*+(?:(?:or|and)\s++)?|/\s*+|\(\s*+|(?:or|and)\s++)"
        rf"(?:(?:up\s++to|max(?:imum|\.)?|approx(?:imately|\.)?|about|ca\.|~)\s*+)?"
        rf"{_NUM}\s*+{unit}{_NOT_THIS}",
        re.IGNORECASE,
    )
    for predicate, unit in _UNIT_OF.items()
}
#: The attributes EU Regulation 2021/821 Annex I compares with a threshold it must reach:
#: "a maximum 'endurance'" (9A012.a), "capable of a range of 300 km" (9A112.a), an aerosol
#: system "with a capacity greater than 20 litres" (9A112.b), "designed to … have stable
#: controlled flight in wind gusts equal to or exceeding 46,3 km/h" (9A012.a.1.b). A phrase
#: stating two values states what the craft does in two configurations (loaded and empty,
#: with and without its extended battery); the Annex measures the most it is capable of, and
#: only the largest can trigger the control: that one is read. A weight decides the HS band
#: (8806.21 … 29, 91 … 99), where neither value is the safe one: each is a candidate, and
#: disagreeing they leave the attribute unresolved — the line asks for it.
LARGEST_IS_THE_ATTRIBUTE = frozenset(
    {"endurance", "maximum_range", "aerosol_capacity", "gust_tolerance"}
)


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Whether ``span`` overlaps one of ``taken`` — disjoint spans kept sorted, so only the
    last one starting before ``span`` ends can (a look-up in log time: a description of
    ten thousand matches is not a hundred million comparisons, tests/security/test_431)."""
    i = bisect.bisect_left(taken, (span[1],))
    return i > 0 and taken[i - 1][1] > span[0]


@dataclass
class KeywordExtractor:
    """Deterministic regex/keyword extractor (the default)."""

    name: str = "keyword"
    version: str = "1.0.0"

    @property
    def source(self) -> str:
        return f"extractor:{self.name}@{self.version}"

    def extract(self, text: str) -> list[CandidateFact]:
        out: list[CandidateFact] = []
        taken: list[tuple[int, int]] = []
        for regex in NOT_ATTRIBUTE_PATTERNS:
            for match in regex.finditer(text):
                if not _overlaps(match.span(), taken):
                    bisect.insort(taken, match.span())
        for group in (PART_PATTERNS, PRODUCT_PATTERNS, ATTRIBUTE_PATTERNS):
            for pattern in group:
                for match in pattern.regex.finditer(text):
                    span = match.span()
                    if _overlaps(span, taken):
                        continue
                    values = self._alternatives(pattern, match, text, taken)
                    span = (match.start(), values[-1][2] if values else match.end())
                    bisect.insort(taken, span)
                    try:
                        if values:
                            out.extend(self._numbers(pattern, text, span, values))
                            continue
                        candidate = self._candidate(pattern, match)
                    except ValueError:  # an ambiguous number (`parse_number`): not read
                        continue
                    out.append(candidate)
                    if pattern.predicate == "product_type" and pattern.value in (
                        "propeller_or_rotor",
                        "undercarriage",
                        "aircraft_part",
                    ):
                        out.extend(self._part_of(match))
        return sorted(out, key=lambda c: (c.evidence.start or 0, c.predicate))

    def _candidate(self, pattern: Pattern, match: re.Match[str]) -> CandidateFact:
        evidence = Evidence.make(self.source, match.group(0), match.start(), match.end())
        if pattern.value is not None:
            unit = "l" if pattern.predicate == "aerosol_capacity" else None
            return CandidateFact(
                predicate=pattern.predicate,
                value=pattern.value,
                unit=unit,
                source=self.source,
                evidence=evidence,
            )
        return CandidateFact(
            predicate=pattern.predicate,
            value=parse_number(match.group(1)),
            unit=match.group(2),
            source=self.source,
            evidence=evidence,
        )

    @staticmethod
    def _alternatives(pattern: Pattern, match: re.Match[str], text: str,
                      taken: list[tuple[int, int]]) -> list[tuple[str, str, int]]:
        """Every value ``match`` states for its attribute — its own, then each further one
        of the phrase (:data:`_ALTERNATIVE`) — as ``(number, unit, end)``; empty when it
        states one (or is no number)."""
        alternative = _ALTERNATIVE.get(pattern.predicate)
        if alternative is None or pattern.value is not None:
            return []
        values = [(match.group(1), match.group(2), match.end())]
        while (more := alternative.match(text, values[-1][2])) is not None and not _overlaps(
                more.span(), taken):
            values.append((more.group(1), more.group(2), more.end()))
        return values if len(values) > 1 else []

    def _numbers(self, pattern: Pattern, text: str, span: tuple[int, int],
                 values: list[tuple[str, str, int]]) -> list[CandidateFact]:
        """The candidates of a phrase stating several values of one attribute, each quoting
        the whole phrase: the largest alone for a threshold of the Annex
        (:data:`LARGEST_IS_THE_ATTRIBUTE`), else each value. ``ValueError`` when a number
        is ambiguous (``parse_number``): nothing is read from the phrase."""
        evidence = Evidence.make(self.source, text[span[0]:span[1]], span[0], span[1])
        cands = [CandidateFact(predicate=pattern.predicate, value=parse_number(number),
                               unit=unit, source=self.source, evidence=evidence)
                 for number, unit, _end in values]
        if pattern.predicate not in LARGEST_IS_THE_ATTRIBUTE:
            return cands
        try:
            return [max(cands, key=lambda c: convert(c)[0])]  # type: ignore[arg-type,return-value]
        except ValueError:  # a value that does not convert: each one, for normalisation to say
            return cands

    def _part_of(self, match: re.Match[str]) -> list[CandidateFact]:
        """The craft a part is for, read from inside the part phrase itself."""
        phrase = match.group(0)
        for pattern in PRODUCT_PATTERNS:
            inner = pattern.regex.search(phrase)
            if inner is not None and isinstance(pattern.value, str):
                start = match.start() + inner.start()
                evidence = Evidence.make(
                    self.source, inner.group(0), start, start + len(inner.group(0))
                )
                return [
                    CandidateFact(
                        predicate="part_of",
                        value=pattern.value,
                        unit=None,
                        source=self.source,
                        evidence=evidence,
                    )
                ]
        return []


@dataclass
class LlmExtractor:
    """Extractor plug-in backed by an injected model client; every call is recorded.

    The client receives ``{"model", "system", "input", "response_format"}`` and must answer
    ``{"output": "<JSON text>"}`` where the JSON is ``{"facts": [{"predicate", "value",
    "unit", "evidence"}]}``. A candidate is kept only if its predicate is a known attribute
    and its ``evidence`` is a verbatim substring of the description; the others are listed
    in ``dropped`` with the reason — a model's unsupported claim never becomes a fact.
    """

    client: ModelClient
    model: str
    name: str = "llm"
    version: str = "1.0.0"
    recorded: bool = False
    calls: list[ModelCall] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def source(self) -> str:
        return f"extractor:{self.name}:{self.model}@{self.version}"

    def request_for(self, text: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "system": (
                "Extract only attributes the text states. For each, quote the exact span "
                "as `evidence`. Allowed predicates: " + ", ".join(sorted(SPECS)) + "."
            ),
            "input": text,
            "response_format": "json",
        }

    def extract(self, text: str) -> list[CandidateFact]:
        request = self.request_for(text)
        response = self.client(request)
        self.calls.append(
            ModelCall(
                stage="extraction",
                component=self.source,
                recorded=self.recorded,
                request=request,
                response=response,
            )
        )
        try:
            items = json.loads(str(response["output"]))["facts"]
        except (KeyError, TypeError, ValueError) as exc:
            self.dropped.append({"item": response, "reason": f"unreadable response: {exc}"})
            return []
        return [c for c in (self._candidate(text, item) for item in items) if c is not None]

    def _candidate(self, text: str, item: Mapping[str, Any]) -> CandidateFact | None:
        predicate, quote = item.get("predicate"), item.get("evidence")
        if predicate not in SPECS:
            self.dropped.append({"item": dict(item), "reason": "unknown predicate"})
            return None
        if not isinstance(quote, str) or not quote or quote not in text:
            self.dropped.append({"item": dict(item), "reason": "evidence not found in text"})
            return None
        value = item.get("value")
        if not isinstance(value, bool | int | float | str):
            self.dropped.append({"item": dict(item), "reason": "value is not a scalar"})
            return None
        start = text.index(quote)
        unit = item.get("unit")
        return CandidateFact(
            predicate=str(predicate),
            value=float(value) if isinstance(value, int) and not isinstance(value, bool) else value,
            unit=str(unit) if unit is not None else None,
            source=self.source,
            evidence=Evidence.make(self.source, quote, start, start + len(quote)),
        )
