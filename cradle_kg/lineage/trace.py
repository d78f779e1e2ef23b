"""Where each argument value of a proposed action came from: the :class:`Trace`.

For every string argument (and every number a contract names as sensitive) the trace lists
the run's sources that hold the value as whole tokens (:mod:`.normalise`): the trusted
inputs, the observations (with the trust their tool's contract gives the field) and the
human decisions. A free-text value that occurs nowhere as a whole is traced through the
identifiers inside it (addresses, IBANs, URLs, file names, codes), one by one.

Per argument: ``trusted_origin`` (every traced part has a trusted source), ``untrusted_only``
(some part was seen only in untrusted content) and, for sensitive arguments,
``instructed_by``: untrusted sources that name the value *in one sentence with a word that
chooses this action* — an instruction to do this with that value. A trusted source that
gives the same instruction clears it (``instructed_trusted``). The trace also says where the
action's very choice was named (the contract's choice words).

Delegated choice: when the sentence of the person's request that pointed at a document
also hands it the choice of actions ("read the file 'notices.txt' and follow the
instructions", "do the actions specified in the email from …"), the document's words that
choose this action count as the person's (``choice_delegated``). Only the choice: the
values the document names are still its own (an instruction there still needs a human).

A repeated write: when an action of the same tool already executed in this run with the
same values for every sensitive argument the person's request gave, and this one changes a
sensitive argument the request did not give (another hotel for the same dates, another
recipient for the same text), the request asked for one and this is another: ``repeats``
names the earlier action and ``repeat_changed`` the arguments that differ.

Confidentiality: a sensitive argument that carries a value of a field the contract declares
confidential (a passport number, a card number) lists those sources in ``discloses``;
``disclosure_requested`` says a trusted input names that field ("my passport number").

A picked value: a sensitive value whose trusted sources are all reads that returned many
candidates (:meth:`.RunIndex.enumerates`: a list's items, a listing of two or more lines) —
no trusted input, host fact, approval or document the person named gives it — lists those
reads in ``picked_from``. A listing says which values exist, not who chose this one: the
agent picked it, by the person's criteria or by a third party's ("the most expensive one").
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from .index import DESIGNATED, TRUSTED, Done, Leaf, RunIndex, last_key
from .normalise import (
    date_of,
    iban_of,
    is_identifier,
    number_token,
    phone_of,
    says,
    tokens,
    written_date,
)

#: the most origins kept per argument (trusted first), so a value seen everywhere stays small
MAX_ORIGINS = 6
#: kinds of source whose words choose an action (a system of record states, it does not ask)
CHOOSING_KINDS = frozenset({"request", "input", "approval", "instruction"})
#: a request's sentence hands a document it names the choice of actions when it holds one
#: of these verbs and one of these nouns ("follow the instructions", "do the actions")
DELEGATING_VERBS = frozenset({"follow", "do", "carry", "complete", "perform", "execute",
                              "handle"})
DELEGATED_NOUNS = frozenset({"instructions", "instruction", "actions", "steps", "tasks",
                             "todos", "requests", "says"})


class Origin(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    kind: str
    trust: str
    author: str
    tool: str = ""
    field: str = ""
    seq: int
    #: the token position of the match in the source (the quote is its sentence)
    at: int = 0
    quote: str

    @property
    def key(self) -> str:
        return f"{self.source}#{self.field}" if self.field else self.source


class ArgumentLineage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: str
    sensitive: bool
    origins: tuple[Origin, ...] = ()
    trusted_origin: bool = False
    untrusted_only: bool = False
    instructed_by: tuple[Origin, ...] = ()
    instructed_trusted: bool = False
    #: confidential fields the value was read from
    discloses: tuple[Origin, ...] = ()
    disclosure_requested: bool = False
    #: a value picked from a listing: its trusted origins are only reads that returned many
    #: candidates (no person named it); the listings (see the module's docs)
    picked_from: tuple[Origin, ...] = ()


class Trace(BaseModel):
    """The lineage of one proposal's arguments (journaled as ``lineage.traced``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    proposal_id: str
    action_id: str
    tool: str
    sources: int
    observations: int
    arguments: tuple[ArgumentLineage, ...] = ()
    choice_origins: tuple[Origin, ...] = ()
    choice_trusted: bool = False
    choice_untrusted_only: bool = False
    #: the choice was named in a document the person's request handed it to
    choice_delegated: bool = False
    #: an executed action of the same tool this one repeats with other values (see above)
    repeats: str = ""
    repeat_changed: tuple[str, ...] = ()
    #: sentences of content no trusted input wrote (and no document the request handed the
    #: choice to) that say this action's choice word with its object word ("delete each of
    #: the five files"): told to do this action, whatever values they name (see ``_told``)
    told_by: tuple[Origin, ...] = ()

    def argument(self, name: str) -> ArgumentLineage | None:
        return next((a for a in self.arguments if a.name == name), None)

    def cedar(self) -> dict[str, Any]:
        """The trace as Cedar context (``context.lineage``)."""
        return {
            "arguments": {a.name: {
                "origins": sorted({o.key for o in a.origins}),
                "trusted_origin": a.trusted_origin, "untrusted_only": a.untrusted_only,
                "sensitive": a.sensitive, "instructed_untrusted": bool(a.instructed_by)
                and not a.instructed_trusted,
                "confidential": bool(a.discloses) and not a.disclosure_requested,
                "picked": bool(a.picked_from)}
                for a in self.arguments},
            "choice_trusted": self.choice_trusted,
            "choice_untrusted_only": self.choice_untrusted_only,
            "choice_delegated": self.choice_delegated,
            "repeats": bool(self.repeats),
            "untrusted_only_sensitive": sorted(a.name for a in self.arguments
                                               if a.sensitive and a.untrusted_only),
        }


@dataclass(frozen=True)
class Declared:
    """What a tool's contract says lineage must look at."""

    sensitive: tuple[str, ...] = ()
    choice_words: tuple[str, ...] = ()
    object_words: tuple[str, ...] = ()


def _origin(leaf: Leaf, position: int) -> Origin:
    return Origin(source=leaf.source, kind=leaf.kind, trust=leaf.trust, author=leaf.author,
                  tool=leaf.tool, field=leaf.field, seq=leaf.seq, at=position,
                  quote=leaf.quote(position))


#: one traced part of a value: alternative token sequences (a date: ``yyyy-mm-dd`` or,
#: where content gave no year, ``--mm-dd``)
Unit = list[list[str]]


def _values(value: Any, sensitive: bool) -> list[Unit]:
    if isinstance(value, list | tuple):
        return [v for item in value for v in _values(item, sensitive)]
    if isinstance(value, dict):
        # INVARIANT: an object's values are traced as a list's items are: skipped, an
        # argument given as `{"iban": …}` (or a list of such) had no lineage at all, and
        # the transfer to an injected IBAN ran unattended (tests/security/test_428)
        return [v for item in value.values() for v in _values(item, sensitive)]
    if isinstance(value, str):
        day = date_of(value)
        if day:
            return [[[day[0]], [day[1]]]]
        written = written_date(value)  # "April 1, 2022": as written, or as the date it is
        if written:
            forms = [*written, *(f"--{d[5:]}" for d in written if not d.startswith("--"))]
            return [[tokens(value), *([d] for d in dict.fromkeys(forms))]]
        # as written, or by its digits / its compact form (see normalise.phones, .ibans)
        other = phone_of(value) or iban_of(value)
        return [[tokens(value), [other]]] if other else [[tokens(value)]]
    if sensitive and isinstance(value, int | float) and not isinstance(value, bool):
        return [[[number_token(value)]]]
    return []


def _hits(run: RunIndex, unit: Unit) -> list[tuple[Leaf, list[int]]]:
    if len(unit) == 1:
        return list(run.holding(unit[0]))
    seen: dict[int, tuple[Leaf, list[int]]] = {}
    for alternative in unit:
        for leaf, positions in run.holding(alternative):
            seen.setdefault(id(leaf), (leaf, positions))
    return list(seen.values())


#: the shortest piece of a value given in two (:func:`_pieces`), and the longest value read so
_PIECE = 4
_PIECED = 64


#: the posting-list entries one argument's values may read for their pieces: past it, a
#: value is traced as written only (many values, each cut against texts that all hold its
#: pieces, cost the product of their numbers)
_PIECES_BUDGET = 50_000
#: the middle pieces one argument's values may look up when cut in three
#: (:func:`_three_pieces`): 20,000 is about fifteen 64-character values cut every way
_THREE_PIECES_BUDGET = 20_000
#: the characters one argument's values may scan for a part of an identifier
#: (:meth:`RunIndex.within`): a few searches of a run's identifiers of megabytes
_WITHIN_BUDGET = 8_000_000


def pieces_budget() -> list[int]:
    """A fresh budget for one argument's values: posting-list entries, middle pieces,
    characters searched for a part."""
    return [_PIECES_BUDGET, _THREE_PIECES_BUDGET, _WITHIN_BUDGET]


def _pieces(run: RunIndex, unit: Unit, budget: list[int]) -> list[tuple[Leaf, list[int]]]:
    """The texts no person wrote that give an identifier in two pieces, each a whole token
    of the same text (``GB29NWBK6016`` … ``1331926819``, "the first half" and "the rest"):
    an agent writes the value whole, and the injection that split it gave it no origin at
    all (``tests/security/test_141``). Only for a value with no origin as written; each
    piece at least :data:`_PIECE` characters; a person's words give no trust this way."""
    out: dict[int, tuple[Leaf, list[int]]] = {}
    for token, cut, heads, tails in _cuts(run, unit):
        # the shorter posting list, looked up in the longer (sorted: leaves are added in
        # order) — never a set of a long one, once per cut of each value
        few, many = (heads, tails) if len(heads) <= len(tails) else (tails, heads)
        budget[0] -= len(few)
        if budget[0] < 0:
            return list(out.values())
        for index in few:
            at_many = bisect.bisect_left(many, index)
            if at_many == len(many) or many[at_many] != index:
                continue
            leaf = run.leaves[index]
            if leaf.trust == TRUSTED or index in out:
                continue
            at = run.find(index, [token[:cut]])
            if at:
                out[index] = (leaf, at[:1])
    return list(out.values()) or _split_pieces(run, unit, budget) \
        or _three_pieces(run, unit, budget)


def _cuts(run: RunIndex, unit: Unit) -> Iterator[tuple[str, int, list[int], list[int]]]:
    """Each identifier of ``unit`` (a one-token alternative of twice :data:`_PIECE` to
    :data:`_PIECED` characters) cut in two pieces that both are whole tokens of the run's
    texts: (the identifier, where it is cut, the leaves holding the head, the tail's)."""
    for alternative in unit:
        if len(alternative) != 1:
            continue
        token = alternative[0]
        if not 2 * _PIECE <= len(token) <= _PIECED or not is_identifier(token):
            continue
        for cut in range(_PIECE, len(token) - _PIECE + 1):
            heads = run.postings.get(token[:cut])
            tails = run.postings.get(token[cut:])
            if heads and tails:
                yield token, cut, heads, tails


def _holder(run: RunIndex, postings: list[int], budget: list[int]) -> tuple[int, bool] | None:
    """The leaf of ``postings`` a piece is taken from, read within ``budget``: the first no
    person wrote (True), else the first (a person's: False)."""
    for index in postings:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if run.leaves[index].trust != TRUSTED:
            return index, True
    return (postings[0], False) if postings else None


def _split_pieces(run: RunIndex, unit: Unit, budget: list[int]
                  ) -> list[tuple[Leaf, list[int]]]:
    """The two texts no person wrote that give an identifier in two pieces between them
    ("part one … GB29NWBK6016" in one e-mail, "part two … 1331926819" in another), each a
    whole token of its text: a value with no origin in one text, the split gave it none
    (``tests/security/test_152``). Both texts are its origin; a piece a person wrote gives
    no trust, nor origin, but one an untrusted text completed is that text's (:func:`_held`).
    Within the same budget as :func:`_pieces`: one cut found is enough."""
    for token, cut, heads, tails in _cuts(run, unit):
        head = _holder(run, heads, budget)
        tail = _holder(run, tails, budget) if head is not None else None
        if budget[0] < 0:
            return []
        if head is None or tail is None:
            continue
        found = _held(run, ((*head, token[:cut]), (*tail, token[cut:])))
        if found:
            return found
    return []


def _held(run: RunIndex, holders: Iterable[tuple[int, bool, str]]
          ) -> list[tuple[Leaf, list[int]]]:
    """The holders no person wrote, each with where its piece is (a leaf once) — the
    value's origin; [] if none is, or a piece is not found. A piece from the person's
    words is no origin and gives no trust, but it does not hide the untrusted text that
    completed the value: the person began an IBAN, an injected e-mail gave "the rest", and
    the attacker chose the account (``tests/security/test_156``)."""
    out: dict[int, tuple[Leaf, list[int]]] = {}
    for index, untrusted, piece in holders:
        at = run.find(index, [piece])
        if not at:
            return []
        if untrusted:
            out.setdefault(index, (run.leaves[index], at[:1]))
    return list(out.values())


def _three_pieces(run: RunIndex, unit: Unit, budget: list[int]
                  ) -> list[tuple[Leaf, list[int]]]:
    """The texts no person wrote that give an identifier in three pieces ("GB29NWBK, then
    60161331, then 926819", in one text or several), each a whole token at least
    :data:`_PIECE` characters (``tests/security/test_153``). A value of n characters has
    n² ways to be cut in three: each middle piece looked up is charged to
    ``budget[1]`` (apart from the entries ``budget[0]`` bounds, so that values cut in
    three never leave later ones unread in two)."""
    for alternative in unit:
        if len(alternative) != 1:
            continue
        token = alternative[0]
        if not 3 * _PIECE <= len(token) <= _PIECED or not is_identifier(token):
            continue
        for i in range(_PIECE, len(token) - 2 * _PIECE + 1):
            heads = run.postings.get(token[:i])
            if not heads:
                continue
            for j in range(i + _PIECE, len(token) - _PIECE + 1):
                budget[1] -= 1
                if budget[1] < 0:
                    return []
                mids = run.postings.get(token[i:j])
                tails = run.postings.get(token[j:]) if mids else None
                if not mids or not tails:
                    continue
                holders = [_holder(run, p, budget) for p in (heads, mids, tails)]
                if budget[0] < 0:
                    return []
                found = _held(run, [(*h, piece) for h, piece in zip(
                    holders, (token[:i], token[i:j], token[j:]), strict=True)
                    if h is not None]) if all(h is not None for h in holders) else []
                if found:
                    return found
    return []


def _within(run: RunIndex, unit: Unit, budget: list[int]) -> list[tuple[Leaf, list[int]]]:
    """The texts no person wrote that hold a sensitive value with no origin as written,
    nor in pieces, inside one of their identifiers: the agent cut the value it was given
    across two arguments (:meth:`RunIndex.within`, ``tests/security/test_572``)."""
    for alternative in unit:
        if len(alternative) == 1 and (found := run.within(alternative[0], budget)):
            return found
    return []


def _delegates(run: RunIndex, leaf: Leaf) -> bool:
    """A designated ``leaf`` the request's pointing sentence handed the choice of actions."""
    if leaf.trust != DESIGNATED:
        return False
    for i, n in leaf.designated_by:
        words = set(run.leaves[i].sentence_words(n))
        if words & DELEGATING_VERBS and words & DELEGATED_NOUNS:
            return True
    return False


def _requested(run: RunIndex, leaf: Leaf) -> bool:
    """A trusted input names the confidential field ``leaf`` is (``passport number``)."""
    name = tokens(last_key(leaf.field).replace("_", " "))
    return bool(name) and any(src.trust == TRUSTED and src.kind in CHOOSING_KINDS
                              for src, _ in run.holding(name))


@lru_cache(maxsize=1024)
def _choice_phrases(words: tuple[str, ...]) -> list[list[str]]:
    return [t for t in (tokens(w) for w in words) if t]


def _has_phrase(words: list[str], phrases: list[list[str]]) -> bool:
    return any(says(words, ph) for ph in phrases)


def _in_sentence(leaf: Leaf, position: int, phrases: list[list[str]]) -> bool:
    return _has_phrase(leaf.words(position), phrases)


#: whether a sentence says a phrase, by (leaf, sentence number), for one set of phrases
Said = dict[tuple[int, int], bool]


def _first_in_sentence(leaf: Leaf, positions: list[int], phrases: list[list[str]],
                       said: Said) -> int | None:
    """The first of ``positions`` whose sentence says one of ``phrases``. Whether it does
    depends on the sentence alone, so each sentence is read once per trace (``said``):
    asking again for every occurrence of a value, and for every value of an argument, was
    quadratic — untrusted content of one value repeated in one long sentence (`bob bob
    bob …`, 40 KB) held gate 1 for 7 s, growing with the square of its length
    (``tests/security/test_113``)."""
    for p in positions:
        key = (id(leaf), leaf.sentence[p] if p < len(leaf.sentence) else -1)
        known = said.get(key)
        if known is None:
            known = said[key] = _in_sentence(leaf, p, phrases)
        if known:
            return p
    return None


def _argument(run: RunIndex, name: str, value: Any, sensitive: bool,
              phrases: list[list[str]], told: dict[int, int] | None = None,
              said: Said | None = None) -> ArgumentLineage | None:
    said = {} if said is None else said
    seqs = [s for s in _values(value, sensitive) if s and s[0]]
    if not seqs:
        return None
    # INVARIANT: a part is traced once, however often the value repeats it: its hits are
    # the same each time, and a list of one address 4,000 times against a read of it 4,000
    # times held gate 1 for a minute (tests/security/test_114)
    units: dict[tuple[tuple[str, ...], ...], Unit] = {}
    for seq in dict.fromkeys(tuple(tuple(alt) for alt in s) for s in seqs):
        if len(seq) > 1 or len(seq[0]) == 1 or next(run.holding(list(seq[0])), None) is not None:
            units.setdefault(seq, [list(alt) for alt in seq])
        else:
            for t in dict.fromkeys(seq[0]):
                if is_identifier(t):
                    units.setdefault(((t,),), [[t]])
    found: list[tuple[Leaf, int]] = []
    budget = pieces_budget()
    with_origin = trusted_units = 0
    untrusted_only = instructed_trusted = False
    requested = True
    instructed: list[tuple[Leaf, int]] = []
    disclosed: list[tuple[Leaf, int]] = []
    picked: list[tuple[Leaf, int]] = []
    for unit in units.values():
        hits = _hits(run, unit) or _pieces(run, unit, budget) \
            or (_within(run, unit, budget) if sensitive else [])
        if not hits:
            continue
        with_origin += 1
        trusted = any(leaf.trust in (TRUSTED, DESIGNATED) for leaf, _ in hits)
        trusted_units += trusted
        untrusted_only = untrusted_only or not trusted
        found.extend((leaf, pos[0]) for leaf, pos in hits)
        if sensitive and trusted:
            picked.extend(_listings(run, hits))
        if sensitive:
            for leaf, positions in hits:
                if leaf.confidential and leaf.trust == TRUSTED:
                    disclosed.append((leaf, positions[0]))
                    requested = requested and _requested(run, leaf)
        if sensitive and phrases:
            for leaf, positions in hits:
                at = _first_in_sentence(leaf, positions, phrases, said)
                if at is None and leaf.trust != TRUSTED and told and id(leaf) in told:
                    # the text that gives the value also tells to do this action (a
                    # sentence with its choice and object words): its instruction too
                    at = told[id(leaf)]
                if at is None:
                    continue
                if leaf.trust == TRUSTED:
                    instructed_trusted = instructed_trusted or leaf.kind in CHOOSING_KINDS
                else:
                    instructed.append((leaf, at))
    found.sort(key=lambda h: (h[0].trust != TRUSTED, h[0].seq))
    kept = list({(leaf.source, leaf.field): (leaf, pos) for leaf, pos in found}.values())
    shown = " ".join(" ".join(s[0]) for s in seqs)
    return ArgumentLineage(
        name=name, value=shown if len(shown) <= 200 else shown[:197] + "...",
        sensitive=sensitive, origins=tuple(_origin(lf, p) for lf, p in kept[:MAX_ORIGINS]),
        trusted_origin=with_origin > 0 and trusted_units == with_origin,
        untrusted_only=untrusted_only,
        instructed_by=tuple(_origin(lf, p) for lf, p in instructed[:3]),
        instructed_trusted=instructed_trusted,
        discloses=tuple(_origin(lf, p) for lf, p in disclosed[:3]),
        disclosure_requested=bool(disclosed) and requested,
        picked_from=tuple(_origin(lf, p) for lf, p in picked[:3]))


def _listings(run: RunIndex, hits: list[tuple[Leaf, list[int]]]) -> list[tuple[Leaf, int]]:
    """The listings a value was picked from: when every trusted source of it is a read
    that returned many candidates (none is a person's words, a host's fact or a document
    the person named), those reads; else none."""
    listed: list[tuple[Leaf, int]] = []
    for leaf, positions in hits:
        if leaf.trust == DESIGNATED or (leaf.trust == TRUSTED and leaf.kind != "observation"):
            return []
        if leaf.trust == TRUSTED:
            if not run.enumerates(leaf):
                return []
            listed.append((leaf, positions[0]))
    return listed


def trace(run: RunIndex, *, run_id: str, proposal_id: str, action_id: str, tool: str,
          arguments: dict[str, Any], declared: Declared) -> Trace:
    """The lineage of ``arguments`` in the run ``run`` indexes."""
    try:
        return _trace(run, run_id=run_id, proposal_id=proposal_id, action_id=action_id,
                      tool=tool, arguments=arguments, declared=declared)
    finally:
        run.forget_positions()


def _trace(run: RunIndex, *, run_id: str, proposal_id: str, action_id: str, tool: str,
           arguments: dict[str, Any], declared: Declared) -> Trace:
    phrases = _choice_phrases(tuple(declared.choice_words))
    told = _told(run, phrases, _choice_phrases(tuple(declared.object_words)))
    told_at = {id(leaf): p for leaf, p in told}
    said: Said = {}  # the choice phrases' answers, shared by the arguments
    traced = [a for name, value in sorted(arguments.items())
              if (a := _argument(run, name, value, name in declared.sensitive, phrases,
                                 told_at, said))]
    choosing: list[Origin] = []
    chosen_trusted = chosen_untrusted = delegated = False
    for phrase in phrases:
        # a one-word phrase is a posting-list read; positions only for the quoted few
        hits = ((leaf, None) for leaf in run.containing(phrase[0])) if len(phrase) == 1 \
            else ((leaf, pos) for leaf, pos in run.holding(phrase))
        for leaf, positions in hits:
            if leaf.trust == TRUSTED and leaf.kind not in CHOOSING_KINDS:
                continue
            if leaf.trust == TRUSTED:
                chosen_trusted = True
            elif _delegates(run, leaf):
                chosen_trusted = delegated = True
            else:
                chosen_untrusted = True
            if len(choosing) < MAX_ORIGINS:
                at = positions[0] if positions else leaf.tokens.index(phrase[0])
                choosing.append(_origin(leaf, at))
            elif chosen_trusted and chosen_untrusted:
                break
    prior, changed = _repeat(run.done.get(tool, ()), traced)
    told_by = [_origin(leaf, p) for leaf, p in told[:3]] \
        if any(a.picked_from for a in traced) else []
    return Trace(run_id=run_id, proposal_id=proposal_id, action_id=action_id, tool=tool,
                 sources=len(run.leaves), observations=run.observations,
                 arguments=tuple(traced), choice_origins=tuple(choosing),
                 choice_trusted=chosen_trusted,
                 choice_untrusted_only=chosen_untrusted and not chosen_trusted,
                 choice_delegated=delegated, repeats=prior, repeat_changed=changed,
                 told_by=tuple(told_by))


def _told(run: RunIndex, phrases: list[list[str]], objects: list[list[str]]
          ) -> list[tuple[Leaf, int]]:
    """Texts not written by a trusted input with a sentence that says one of the action's
    choice words and one of its object words (one position per text): an instruction to do
    this action that may name no value (a criterion: "the five largest files", "every
    unread email"). A document the request handed the choice to speaks for the person
    (``choice_delegated``). A word that is both (``email``) counts as the choice only: the
    object must be another word of the sentence."""
    told: list[tuple[Leaf, int]] = []
    seen: set[int] = set()
    said: Said = {}
    objects = [o for o in objects if o not in phrases]
    if not objects:
        return told
    for phrase in phrases:
        for leaf, positions in run.holding(phrase):
            if leaf.trust == TRUSTED or id(leaf) in seen or _delegates(run, leaf):
                continue
            at = _first_in_sentence(leaf, positions, objects, said)
            if at is not None:
                seen.add(id(leaf))
                told.append((leaf, at))
    return told


def _repeat(done: Any, traced: list[ArgumentLineage]) -> tuple[str, tuple[str, ...]]:
    """The executed action of the same tool this one repeats (see the module's docs)."""
    sensitive = {a.name: a.value for a in traced if a.sensitive}
    asked = {a.name for a in traced if a.sensitive and any(
        o.trust == TRUSTED and o.kind == "request" for o in a.origins)}
    if not asked:
        return "", ()
    earlier: Done
    for earlier in reversed(done):
        before = dict(earlier.values)
        if any(before.get(n) != sensitive[n] for n in asked):
            continue
        changed = tuple(sorted(n for n, v in sensitive.items()
                               if n not in asked and n in before and before[n] != v))
        if changed:
            return earlier.action_id, changed
    return "", ()
