"""The run's observed values, indexed as they are journaled (derived, in memory).

Every event that brings content into a run — a trusted input (``input.recorded``), a tool's
observation (``action.observed``), a human decision with a note (``approval.decided``; not
a rejection's, which quotes what it refuses), a
fact the host asserted on a proposal (``proposal.received``, source ``host:…``) —
adds its text leaves to the run's :class:`RunIndex`: each leaf's tokens (see
:mod:`.normalise`), the sentence each token is in, and a posting list from token to leaf.
Tracing a value is then a posting-list lookup and a contiguity check on the few leaves that
hold its first token — never a reload of the run.

The index is derived state: it is built from the journal on first use of a run and caught
up from its watermark on every trace (one indexed read of the events appended since), so
writes by another process are seen in journal order.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import field as _field
from typing import Any

from ..records import AuditEvent
from ..redaction import secret_names
from .normalise import (
    as_shown,
    backwards,
    dates,
    decoded,
    glued,
    ibans,
    is_identifier,
    letter_spaced,
    number_token,
    phones,
    read_out,
    spaced,
    spelled,
    split_sentences,
    stripped,
    tokens,
    untagged,
)
from .rdf import secret_units

TRUSTED = "trusted"
UNTRUSTED = "untrusted"
#: untrusted content the person's own request pointed at (a file, page or message they
#: named): a value found there has an origin the person chose, but its words are still
#: not theirs — it never counts as a trusted instruction or choice
DESIGNATED = "designated"
TRUST_LEVELS = (TRUSTED, UNTRUSTED)
#: the first ``seq`` of the events an index previews before they are journaled
#: (:meth:`LineageIndex.previewing`): past every journal's
PREVIEW_SEQ = 1 << 62
#: the events that bring content into a run
CONTENT_KINDS = frozenset({"input.recorded", "action.observed", "approval.decided",
                           "lineage.traced", "proposal.received", "verification.recorded"})
#: facts a proposal carries that the host (not the model) asserted: trusted, with their author
HOST_FACT_PREFIX = "host:"
#: the field an observation's error text is indexed under (no output key: `#` is no token)
ERROR_FIELD = "#error"
#: the field a failed verification's check details are indexed under (with the check's name)
VERIFICATION_FIELD = "#verification"
#: a leaf keeps this much of its text, for quotes
_KEEP = 4000
#: between a leaf's own tokens and the values read from them — dates, addresses spelled
#: out in words (no match spans it)
DATES_MARK = "\x00dates"


@dataclass(frozen=True)
class ToolTrust:
    """What lineage needs of a tool's contract: who authored its output, per field."""

    output_trust: str = UNTRUSTED
    field_trust: tuple[tuple[str, str], ...] = ()
    #: output keys whose values are confidential (the person's identity documents, payment
    #: credentials): lineage says when one flows into a sensitive argument
    confidential: tuple[str, ...] = ()

    def trust_of(self, path: tuple[str, ...]) -> str:
        """The deepest key of ``path`` the contract names decides; else the output's trust."""
        named = dict(self.field_trust)
        for key in reversed(path):
            if key in named:
                return named[key]
        return self.output_trust

    def confidential_at(self, path: tuple[str, ...]) -> bool:
        return bool(self.confidential) and any(key in self.confidential for key in path)


#: the trust a tool's output carries, by tool id (unknown tool: untrusted)
TrustOf = Callable[[str], ToolTrust]
#: the values (token lists) executed actions of any run carried on untrusted content only,
#: recorded before a seq, whose first token is one of those asked about
#: (:meth:`cradle_kg.storage.Journal.written_untrusted`)
WrittenBefore = Callable[[Sequence[str], int], list[list[str]]]


@dataclass
class Leaf:
    """One text value of one source: an input, or a field of an observation."""

    source: str
    kind: str
    trust: str
    author: str
    tool: str
    field: str
    seq: int
    text: str
    tokens: list[str]
    #: the sentence each token is in
    sentence: list[int]
    #: the original text of each sentence (for quotes)
    texts: list[str]
    #: the (start, end) of each sentence's own tokens (the dates read from a sentence are
    #: appended after :data:`DATES_MARK` and carry its number in :attr:`sentence`)
    bounds: list[tuple[int, int]] = _field(default_factory=list)
    #: a designated leaf: the sentences of the person's request that pointed at it, as
    #: (index of the request's leaf in the run, sentence number)
    designated_by: tuple[tuple[int, int], ...] = ()
    #: the contract declares this field confidential
    confidential: bool = False
    #: the non-empty lines of the text (a listing of candidates has two or more)
    lines: int = 1

    def find(self, seq: list[str]) -> list[int]:
        """The positions where ``seq`` occurs as whole, contiguous tokens."""
        if len(seq) > _SHORT_SEQ:
            return occurrences(self.tokens, seq)
        n, toks, first = len(seq), self.tokens, seq[0]
        found: list[int] = []
        at = -1
        while True:
            try:
                at = toks.index(first, at + 1)
            except ValueError:
                return found
            if n == 1 or toks[at:at + n] == seq:
                found.append(at)

    def words(self, position: int) -> list[str]:
        """The tokens of the sentence that holds the token at ``position``."""
        if not self.bounds:
            return self.tokens
        lo, hi = self.bounds[self.sentence[position]]
        return self.tokens[lo:hi]

    def sentence_words(self, n: int) -> list[str]:
        """The tokens of sentence ``n``."""
        if not self.bounds:
            return self.tokens
        lo, hi = self.bounds[n] if n < len(self.bounds) else (0, 0)
        return self.tokens[lo:hi]

    def quote(self, position: int) -> str:
        """The sentence of the original text that holds the token at ``position``."""
        wanted = self.sentence[position] if position < len(self.sentence) else 0
        text = self.texts[wanted] if wanted < len(self.texts) else self.text
        text = re.sub(r"\s+", " ", text[:400]).strip()
        return text if len(text) <= 200 else text[:197] + "..."


#: a value of more tokens than this is searched for in linear time (:func:`occurrences`):
#: comparing it at every place its first token occurs was quadratic — an argument of 15,000
#: tokens against an observation of 30,000 (``a a a … b``) held gate 1 a second per leaf
_SHORT_SEQ = 16
#: a leaf of more tokens than this has its positions read once per trace (:meth:`RunIndex.find`)
_SHORT_LEAF = 64
#: the shortest part of an identifier :meth:`RunIndex.within` looks for (a sort code is
#: six digits), and the most identifiers holding it it reads
_WITHIN_MIN = 6
_WITHIN_HOLDERS = 16


def occurrences(tokens: list[str], seq: list[str]) -> list[int]:
    """The positions where ``seq`` occurs in ``tokens`` (Knuth-Morris-Pratt: linear in
    both, however the two repeat themselves)."""
    fail = [0] * len(seq)
    k = 0
    for i in range(1, len(seq)):
        while k and seq[i] != seq[k]:
            k = fail[k - 1]
        if seq[i] == seq[k]:
            k += 1
        fail[i] = k
    found: list[int] = []
    k = 0
    for i, token in enumerate(tokens):
        while k and token != seq[k]:
            k = fail[k - 1]
        if token == seq[k]:
            k += 1
            if k == len(seq):
                found.append(i - k + 1)
                k = fail[k - 1]
    return found


@dataclass(frozen=True)
class Done:
    """An executed action's sensitive arguments: their values, and those that had the
    person's request among their origins."""

    action_id: str
    values: tuple[tuple[str, str], ...]
    from_request: frozenset[str]
    #: the values (token sequences) of its arguments whose lineage was only untrusted
    #: content: what the agent wrote on a third party's word (:func:`written_untrusted`)
    written: tuple[tuple[str, ...], ...] = ()


@dataclass
class RunIndex:
    """The leaves of one run and a posting list from token to the leaves that hold it."""

    leaves: list[Leaf] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=dict)
    watermark: int = 0
    observations: int = 0
    #: actions whose arguments name a value of the person's own request, with the request's
    #: sentences that named it (index of the request's leaf, sentence number)
    designating: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    #: the index of each leaf by (source, field)
    by_key: dict[tuple[str, str], int] = field(default_factory=dict)
    #: how many leaves each (source, field) has (a list's items share one)
    fanout: dict[tuple[str, str], int] = field(default_factory=dict)
    #: traced actions not yet executed, and the executed ones by tool (in order)
    pending: dict[str, tuple[str, Done]] = field(default_factory=dict)
    done: dict[str, list[Done]] = field(default_factory=dict)
    #: the argument values (as token sequences) of the action each approval asked about:
    #: what a person's change request refuses (:func:`mask_refused`)
    asked: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    #: while a trace runs: where each token is in the long leaves it searched, by leaf
    #: index (:meth:`find`; emptied by :meth:`forget_positions` when the trace ends)
    positions: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    #: the values executed writes of the run carried on a third party's word only
    #: (:attr:`Done.written`): a trusted read that returns one is not its origin's word
    #: (by first token)
    written: dict[str, dict[tuple[str, ...], None]] = field(default_factory=dict)
    #: the values of the secret arguments proposed in the run (token sequences): what no
    #: quote of a later trace shows (:func:`cradle_kg.lineage.rdf.quote_hider`)
    secrets: list[list[str]] = field(default_factory=list)

    #: the distinct identifiers of the leaves no person wrote (:meth:`within`), in order
    untrusted_ids: dict[str, None] = field(default_factory=dict)
    #: :attr:`untrusted_ids` joined for a substring search, with where each one starts and
    #: how many it holds (rebuilt when more were added: :meth:`within`)
    _joined: tuple[int, str, list[int], list[str]] = (0, "", [], [])

    def add(self, leaf: Leaf) -> None:
        index = len(self.leaves)
        self.leaves.append(leaf)
        self.by_key.setdefault((leaf.source, leaf.field), index)
        key = (leaf.source, leaf.field)
        self.fanout[key] = self.fanout.get(key, 0) + 1
        for token in dict.fromkeys(leaf.tokens):
            self.postings.setdefault(token, []).append(index)
            if leaf.trust != TRUSTED and len(token) > _WITHIN_MIN and is_identifier(token):
                self.untrusted_ids.setdefault(token, None)

    def within(self, value: str, budget: list[int]) -> list[tuple[Leaf, list[int]]]:
        """The texts no person wrote that hold ``value`` (an identifier of at least
        :data:`_WITHIN_MIN` characters) *inside* one of their identifiers — a part of it:
        an address's ``mark.black`` or ``evil.com``, an IBAN's bank and account number. A
        tool that takes a value in parts (``user`` and ``domain``, ``sort_code`` and
        ``account_number``) has the agent cut the value it was given, and each part had no
        origin (``tests/security/test_572``). One substring search over the run's distinct
        such identifiers (its characters charged to ``budget[2]``; none once it is spent),
        and nothing when a text a person or trusted system wrote holds one of those
        identifiers too (the whole is theirs, so is its part): an origin, never trust."""
        if len(value) < _WITHIN_MIN or not is_identifier(value):
            return []
        count, joined, starts, ids = self._joined
        if count != len(self.untrusted_ids):
            ids = list(self.untrusted_ids)
            starts, at = [], 0
            for token in ids:
                starts.append(at)
                at += len(token) + 1
            # INVARIANT: published whole — another thread's trace reads it at once
            self._joined = count, joined, starts, ids = (len(ids), "\n".join(ids), starts, ids)
        budget[2] -= len(joined)
        if budget[2] < 0:
            return []
        holders: dict[str, None] = {}
        at = joined.find(value)
        while at >= 0 and len(holders) < _WITHIN_HOLDERS:
            token = ids[bisect.bisect_right(starts, at) - 1]
            holders.setdefault(token, None)
            at = joined.find(value, at + 1)
        out: dict[int, tuple[Leaf, list[int]]] = {}
        for token in holders:
            for index in self.postings.get(token, ()):
                leaf = self.leaves[index]
                if leaf.trust == TRUSTED:
                    return []
                if index not in out and (found := self.find(index, [token])):
                    out[index] = (leaf, found[:1])
        return list(out.values())

    def withdraw(self, source: str) -> None:
        """Take the leaves of ``source`` out of the postings: from now on no value and no
        instruction is traced to them — a revoked approval's notes, which vouched for the
        values they quote (``tests/security/test_313``). Each posting list touched is
        replaced, not edited: a trace reading the old one in another thread reads it
        whole."""
        for index, leaf in enumerate(self.leaves):
            if leaf.source != source:
                continue
            for token in dict.fromkeys(leaf.tokens):
                kept = [i for i in self.postings.get(token, ()) if i != index]
                if kept:
                    self.postings[token] = kept
                else:
                    self.postings.pop(token, None)
            self.positions.pop(index, None)

    def enumerates(self, leaf: Leaf) -> bool:
        """Whether ``leaf`` is one of many candidates a read returned: an item of a list
        (its field has other items in the same observation) or a listing of two or more
        lines. Such a read says which values exist, not which one to use."""
        return leaf.kind == "observation" and (
            leaf.lines >= 2 or self.fanout.get((leaf.source, leaf.field), 0) >= 2)

    def containing(self, token: str) -> Iterator[Leaf]:
        """The leaves that hold ``token`` (no positions: a posting-list read)."""
        return (self.leaves[i] for i in self.postings.get(token, ()))

    def holding(self, seq: list[str]) -> Iterator[tuple[Leaf, list[int]]]:
        """The leaves where ``seq`` occurs, with the positions."""
        if not seq:
            return
        lists = [self.postings.get(t) for t in dict.fromkeys(seq)]
        if any(x is None for x in lists):
            return
        shortest = min((x for x in lists if x is not None), key=len)
        for i in shortest:
            found = self.find(i, seq)
            if found:
                yield self.leaves[i], found

    def find(self, index: int, seq: list[str]) -> list[int]:
        """Where ``seq`` occurs in leaf ``index`` (as :meth:`Leaf.find`). A long leaf's
        token positions are read once per trace: :meth:`Leaf.find` scans the whole leaf
        for each value, and a trace asks one leaf about every value of an argument — a
        list of 7,000 addresses against a read of 200,000 words held gate 1 for 17 s
        (``tests/security/test_114``)."""
        leaf = self.leaves[index]
        if len(leaf.tokens) <= _SHORT_LEAF or len(seq) > _SHORT_SEQ:
            return leaf.find(seq)
        where = self.positions.get(index)
        if where is None:
            built: dict[str, list[int]] = {}
            for at, token in enumerate(leaf.tokens):
                built.setdefault(token, []).append(at)
            # INVARIANT: published whole — another thread's trace reads it at once
            where = self.positions[index] = built
        starts, n, toks = where.get(seq[0], []), len(seq), leaf.tokens
        return list(starts) if n == 1 else [at for at in starts if toks[at:at + n] == seq]

    def forget_positions(self) -> None:
        """Drop the positions :meth:`find` read (a trace's, not kept with the run)."""
        self.positions = {}


#: a list marker at the start of a line (``1.``, ``2)``, ``10.``): the number of an item
#: of the person's request, not a value they gave (its digits)
_LIST_MARKER = re.compile(r"(?m)^([ \t]*)(\d{1,3})(?=[.)](?:\s|$))")


def unnumbered(text: str) -> str:
    """``text`` with the numbers of its line-start list markers written as ``#`` (the same
    length and punctuation, so sentences and quotes stay where they were; ``#`` is no
    token). The request "1. Summarise my inbox. 2. …" gave ``2`` a trusted origin: an
    injected "your review has the ID 2" then had the person's word for cancelling event 2
    (``tests/security/test_104``)."""
    return _LIST_MARKER.sub(lambda m: m.group(1) + "#" * len(m.group(2)), text)


def _leaf(source: str, kind: str, trust: str, author: str, tool: str, path: tuple[str, ...],
          seq: int, text: str) -> Leaf:
    toks: list[str] = []
    sentence: list[int] = []
    bounds: list[tuple[int, int]] = []
    named: list[tuple[int, str]] = []
    parts = split_sentences(text)
    for n, part in enumerate(parts):
        ts = tokens(part)
        bounds.append((len(toks), len(toks) + len(ts)))
        named.extend((n, d) for _, d in dates(ts))
        named.extend((n, a) for a in spelled(ts, any_local=trust != TRUSTED))
        named.extend((n, v) for v in read_out(ts))
        if trust != TRUSTED:  # an HTML mail's value split by its tags: an origin, no trust
            named.extend((n, a) for a in untagged(part, ts))
            named.extend((n, a) for a in as_shown(ts))  # a look-alike: an origin, no trust
            named.extend((n, a) for a in stripped(ts))  # a +tag, a port dropped: no trust
            # encoded (base64, hex, %xx) or written backwards: an origin, no trust
            named.extend((n, a) for a in decoded(part, ts))
            named.extend((n, a) for a in backwards(ts))
        named.extend((n, p) for p in phones(part))
        named.extend((n, i) for i in ibans(part))
        named.extend((n, g) for g in glued(ts))
        toks.extend(ts)
        sentence.extend([n] * len(ts))
    # an address with spaced dots: its dots cut "sentences", so it is read from the text
    named.extend((min(n, len(parts) - 1), a) for n, a in spaced(text) if parts)
    # so does one written a character at a time (its spaced dots cut "sentences" too)
    named.extend((min(n, len(parts) - 1), a) for n, a in letter_spaced(text) if parts)
    if named:
        toks.append(DATES_MARK)
        sentence.append(named[0][0])
        for n, d in named:
            toks.append(d)
            sentence.append(n)
    return Leaf(source=source, kind=kind, trust=trust, author=author, tool=tool,
                field=field_key(path), seq=seq, text=text[:_KEEP], tokens=toks,
                sentence=sentence, texts=[t[:400] for t in parts], bounds=bounds,
                lines=sum(1 for line in text.splitlines() if line.strip()))


def field_key(path: tuple[str, ...]) -> str:
    """A field's path of keys as one string: each key's ``%`` and ``.`` escaped (``%25``,
    ``%2E``) before the keys are joined with ``.``, so the ``.`` between keys is the only one
    left. Joined as they were, an answer's key ``a.b`` and its nested ``a`` → ``b`` were one
    field: one lineage source node in the graph with both trusts, one leaf in
    :attr:`RunIndex.by_key`, two items of a listing (``tests/security/test_402``). A key
    without ``.`` or ``%`` is as before."""
    return ".".join(k if "." not in k and "%" not in k
                    else k.replace("%", "%25").replace(".", "%2E") for k in path)


def last_key(field: str) -> str:
    """The last key of a field (:func:`field_key`), unescaped."""
    return field.rsplit(".", 1)[-1].replace("%2E", ".").replace("%25", "%")


def _walk(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item, path)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield path, number_token(value)
    elif isinstance(value, str) and value:
        yield path, value


def leaves_of(ev: AuditEvent, trust_of: TrustOf) -> Iterable[Leaf]:
    """The text leaves an event brings into its run (none for other kinds)."""
    pl = ev.payload
    if ev.kind == "input.recorded":
        text = str(pl.get("text", ""))
        yield _leaf(f"input:{pl.get('ref', ev.seq)}", str(pl.get("kind", "request")),
                    TRUSTED, str(pl.get("author", ev.actor)), "", (), ev.seq,
                    unnumbered(text))
    elif ev.kind == "action.observed":
        obs = pl.get("observation") or {}
        tool = str(obs.get("tool_id", ""))
        trust = trust_of(tool)
        output = obs.get("output") or {}
        source = str(obs.get("id", ev.subject))
        # INVARIANT: everything of the answer the agent is shown is indexed — its reported
        # `side_effects` too (their `detail` is free text), and the error the call failed
        # with (the tool's or upstream's message, in the reasons the agent reads): skipped,
        # an IBAN an upstream wrote there had no origin at all, and no rule held the
        # transfer to it (tests/security/test_118)
        for path, text in _walk(output, ()):
            leaf = _leaf(source, "observation", trust.trust_of(path), f"tool:{tool}", tool,
                         path, ev.seq, text)
            leaf.confidential = trust.confidential_at(path)
            yield leaf
        error = obs.get("error")
        if isinstance(error, str) and error:
            # untrusted whatever the contract says of the output: a failure's message may
            # quote any part of the answer (a schema error quotes the untrusted fields too)
            yield _leaf(source, "observation", UNTRUSTED, f"tool:{tool}", tool, (ERROR_FIELD,),
                        ev.seq, error)
    elif ev.kind == "verification.recorded":
        yield from _verifier_read(ev)
    elif ev.kind == "proposal.received":
        for fact in (pl.get("proposal") or {}).get("facts") or ():
            source = str(fact.get("source", ""))
            if source.startswith(HOST_FACT_PREFIX) and isinstance(fact.get("object"), str):
                yield _leaf(f"fact:{ev.seq}:{fact.get('predicate', '')}", "fact", TRUSTED,
                            source, "", ("object",), ev.seq, str(fact["object"]))
    elif ev.kind == "approval.decided" and pl.get("status") not in ("rejected", "revoked",
                                                                   "expired"):
        # INVARIANT: a rejection's reason explains a refusal — it quotes what it refuses
        # ("do not send the rent to X"), it gives no value and no instruction; as a trusted
        # source it made the refused value the person's (tests/security/test_101); so does
        # a revoke's (why an approval is taken back, test_304); the runtime's closing of a
        # superseded approval (`expired`, test_516) is no person's word at all
        note = pl.get("reason") or (pl.get("approval") or {}).get("reason")
        if isinstance(note, str) and note:
            yield _leaf(f"approval:{pl.get('approval_id', ev.subject)}", "approval", TRUSTED,
                        ev.actor, "", ("reason",), ev.seq, note)


def _verifier_read(ev: AuditEvent) -> Iterator[Leaf]:
    """The details of the checks a verification did not pass: the outcome's reasons the
    agent is shown quote them, and they quote the verifier's read of the system acted on
    (an upstream's answer behind ``mcp proxy``, a verifier's exception) — untrusted.

    INVARIANT: skipped, an IBAN an upstream put in its answer to the read had no origin at
    all, and the transfer to it executed unattended (tests/security/test_121)"""
    verification = ev.payload.get("verification") or {}
    tool = str((verification.get("provenance") or {}).get("tool_ref", "")).rpartition("@")[0]
    for check in verification.get("checks") or ():
        if not isinstance(check, dict) or check.get("status") == "verified":
            continue
        detail = check.get("detail")
        if isinstance(detail, str) and detail:
            yield _leaf(str(verification.get("id", ev.subject)), "observation", UNTRUSTED,
                        f"tool:{tool}", tool, (VERIFICATION_FIELD, str(check.get("name"))),
                        ev.seq, detail)


#: the longest value (in tokens) :func:`written_untrusted` keeps whole
_WRITTEN_MAX = 64
#: the length of a value a trace shortened (``trace.ArgumentLineage.value``: 197 + "...")
_SHOWN = 200


def written_untrusted(arguments: Iterable[Any]) -> tuple[tuple[str, ...], ...]:
    """The values of a trace's arguments (its journaled ``arguments``) whose lineage was only
    untrusted content (``untrusted_only``): each value's tokens (up to
    :data:`_WRITTEN_MAX`), and each identifier among them (a free text's IBAN, address,
    URL) — what an executed write put in its store on a third party's word."""
    out: dict[tuple[str, ...], None] = {}
    for a in arguments:
        if not isinstance(a, dict) or not a.get("untrusted_only"):
            continue
        value = str(a.get("value", ""))
        toks = tokens(value)
        if len(value) == _SHOWN and value.endswith("..."):
            toks = toks[:-1]  # cut where the trace shortened it: its last token is partial
        elif toks and len(toks) <= _WRITTEN_MAX:
            out.setdefault(tuple(toks), None)
        for t in toks:
            if is_identifier(t):
                out.setdefault((t,), None)
    return tuple(out)


def _holds_any(leaf: Leaf, values: dict[str, dict[tuple[str, ...], None]]) -> bool:
    """Whether ``leaf`` holds one of ``values`` (by first token) as whole, contiguous
    tokens: each value starting with one of its tokens is looked for, no other. A plain
    word (one token, no identifier: a channel's name, ``general``) counts only as the
    leaf's whole text — the store's field is what the agent wrote —, not wherever the word
    occurs in the system's own records."""
    own = leaf.tokens[:leaf.bounds[-1][1]] if leaf.bounds else leaf.tokens
    for token in dict.fromkeys(leaf.tokens):
        for value in values.get(token, ()):
            if len(value) == 1 and not is_identifier(value[0]):
                if own == [value[0]]:
                    return True
            elif leaf.find(list(value)):
                return True
    return False


#: what stands in a change request's note for a value of the action it sent back: no token
REFUSED_MARK = "\x00refused"


def mask_refused(leaf: Leaf, refused: tuple[tuple[str, ...], ...]) -> None:
    """A change request's note without the values of the action it sends back: the note
    gives the values to use instead (the person's word), and quotes the refused ones as
    naturally ("do not pay GB29…: pay the usual account instead") — read as the person's,
    the refused IBAN had a trusted origin and the sentence was a trusted instruction to pay
    it (``tests/security/test_105``). Each occurrence of a refused value's tokens becomes
    :data:`REFUSED_MARK` (positions, sentences and quotes unchanged)."""
    for value in refused:
        seq = list(value)
        for at in leaf.find(seq):
            leaf.tokens[at:at + len(seq)] = [REFUSED_MARK] * len(seq)


#: words with which a request points at something to read — a file, a message, a page
DOCUMENT_WORDS = frozenset({
    "file", "files", "document", "documents", "doc", "docs", "drive", "folder", "email",
    "emails", "e-mail", "e-mails", "mail", "mails", "inbox", "message", "messages", "dm",
    "dms", "thread", "chat", "channel", "channels", "posted", "article", "webpage",
    "website", "websites", "page", "pages", "site", "blog", "link", "url", "notice",
    "notices", "list", "todo", "todos", "minutes", "attachment", "attachments", "calendar",
    "event", "events", "history", "review", "reviews"})
#: words that name nothing: a search run with only these points at no document
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "my", "me", "i", "you", "your", "we", "our", "us", "it", "its", "this",
    "that", "these", "those", "to", "of", "in", "on", "at", "for", "from", "by", "with",
    "about", "and", "or", "but", "not", "no", "is", "are", "was", "be", "do", "please",
    "all", "any", "some", "what", "which", "who", "how", "when", "where", "there", "then",
    "if", "so", "as", "up", "out", "into", "over", "can", "could", "would", "will", "just"})


def points_at(leaf: Leaf, position: int, value: list[str],
              speaks: dict[tuple[int, int], bool] | None = None) -> bool:
    """Whether the request ``leaf`` pointed at what a read returned, through the argument
    of the read (its tokens ``value``) found at ``position``: the request names it (a file
    name, an address, a URL, an id), or the request's sentence there speaks of something
    to read ("check my emails about the rent increase") and the argument is more than
    function words. A read whose argument merely shares a word with a request that points
    at nothing — a search for `the` or `landlord` beside "send the rent to my landlord" —
    designated whatever it returned, and an attacker's e-mail among the results gave the
    IBAN it named the person's origin: paid unattended (``tests/security/test_117``).
    ``speaks``: whether a sentence speaks of something to read, by (leaf, sentence), for
    the caller to share between the origins of one event (a sentence is read once)."""
    if is_identifier(leaf.tokens[position]):
        return True
    if all(t in FUNCTION_WORDS for t in value):
        return False
    key = (id(leaf), leaf.sentence[position] if position < len(leaf.sentence) else -1)
    memo = {} if speaks is None else speaks
    said = memo.get(key)
    if said is None:
        said = memo[key] = not DOCUMENT_WORDS.isdisjoint(leaf.words(position))
    return said


class LineageIndex:
    """The :class:`RunIndex` of the runs in use, kept up to date from the journal and its
    appends; the least recently used beyond ``max_runs`` are dropped (and rebuilt from the
    journal if they are used again)."""

    def __init__(self, events_since: Callable[[str, int], Iterable[AuditEvent]],
                 trust_of: TrustOf, *, max_runs: int = 256,
                 written_before: WrittenBefore | None = None) -> None:
        self._events_since = events_since
        self._trust_of = trust_of
        self._written_before = written_before
        self._runs: OrderedDict[str, RunIndex] = OrderedDict()
        self._max_runs = max_runs
        self._lock = threading.Lock()

    def previewing(self, run_id: str, pending: Sequence[AuditEvent]) -> LineageIndex:
        """An index of ``run_id`` as it will be once ``pending`` (events not journaled yet,
        their ``seq`` at or past :data:`PREVIEW_SEQ`) follow its journaled events: built
        afresh, its own — what a decision is previewed with before anything of it is
        written (a host's input into a new run: ``tests/security/test_255``)."""
        def events(wanted: str, since: int) -> Iterable[AuditEvent]:
            if wanted != run_id or since >= PREVIEW_SEQ:
                return []
            return [*self._events_since(run_id, since), *pending]
        return LineageIndex(events, self._trust_of, max_runs=1,
                            written_before=self._written_before)

    def run(self, run_id: str) -> RunIndex:
        """The run's index, caught up with the journal."""
        with self._lock:
            run = self._runs.setdefault(run_id, RunIndex())
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
            # in journal order from the watermark: writes of another process are seen too
            for ev in self._events_since(run_id, run.watermark):
                self._apply(run, ev)
                # INVARIANT: past an event only once it is indexed — moved first, an event
                # whose text raised was skipped for good, and a value only it gave had no
                # origin at the next proposal (tests/security/test_155)
                run.watermark = max(run.watermark, ev.seq)
            return run

    def _written(self, run: RunIndex, ev: AuditEvent, found: list[Leaf]
                 ) -> dict[str, dict[tuple[str, ...], None]]:
        """The values executed writes carried on a third party's word that a trusted
        answer among ``found`` may hold: the run's own (:attr:`RunIndex.written`) and those
        the journal recorded before ``ev`` in any run (``lineage_written``, asked about
        the answer's tokens only: one indexed query, however long the journal)."""
        trusted = [leaf for leaf in found
                   if leaf.trust == TRUSTED and leaf.kind == "observation"]
        if not trusted or self._written_before is None:
            return run.written
        firsts = list(dict.fromkeys(t for leaf in trusted for t in leaf.tokens))
        earlier = self._written_before(firsts, ev.seq)
        if not earlier:
            return run.written
        written = {first: dict(values) for first, values in run.written.items()}
        for value in earlier:
            written.setdefault(value[0], {})[tuple(value)] = None
        return written

    def _apply(self, run: RunIndex, ev: AuditEvent) -> None:
        if ev.kind == "approval.requested":
            approval, proposal = ev.payload.get("approval"), ev.payload.get("proposal")
            if isinstance(approval, dict) and isinstance(proposal, dict):
                action = proposal.get("action") or {}
                values = (tokens(text) for _, text in _walk(action.get("arguments") or {}, ()))
                run.asked[str(approval.get("id"))] = tuple(
                    dict.fromkeys(tuple(v) for v in values if v))
            return
        if ev.kind not in CONTENT_KINDS:
            return
        if ev.kind == "lineage.traced":
            trace = ev.payload.get("trace") or {}
            named: dict[tuple[int, int], None] = {}
            speaks: dict[tuple[int, int], bool] = {}
            for a in trace.get("arguments", ()):
                value = tokens(str(a.get("value", "")))
                for o in a.get("origins", ()):
                    if o.get("trust") != TRUSTED or o.get("kind") != "request":
                        continue
                    at = run.by_key.get((str(o.get("source")), str(o.get("field", ""))))
                    if at is None:
                        continue
                    leaf = run.leaves[at]
                    pos = int(o.get("at", 0))
                    if pos >= len(leaf.sentence) or not points_at(leaf, pos, value, speaks):
                        continue
                    named[(at, leaf.sentence[pos])] = None
            if named:
                run.designating[str(trace.get("action_id"))] = tuple(named)
            run.secrets.extend(u for u in secret_units(trace, secret_names(ev.payload))
                               if u not in run.secrets)
            sensitive = [a for a in trace.get("arguments", ()) if a.get("sensitive")]
            action_id = str(trace.get("action_id"))
            run.pending[action_id] = (str(trace.get("tool")), Done(
                action_id=action_id,
                values=tuple((str(a["name"]), str(a["value"])) for a in sensitive),
                from_request=frozenset(
                    str(a["name"]) for a in sensitive if any(
                        o.get("trust") == TRUSTED and o.get("kind") == "request"
                        for o in a.get("origins", ()))),
                written=written_untrusted(trace.get("arguments", ()))))
            return
        if ev.kind == "approval.decided" and ev.payload.get("status") == "revoked":
            # INVARIANT: a revoke takes back the approval's word too — its approving
            # note vouched for the values it quotes ("GB29… is the landlord's new
            # account"); kept trusted, the transfer the person had just taken back,
            # proposed again, ran unattended on it (tests/security/test_313)
            run.withdraw(f"approval:{ev.payload.get('approval_id', ev.subject)}")
            return
        # read whole before the run changes: an event that raises leaves nothing half done
        found = list(leaves_of(ev, self._trust_of))
        designated: tuple[tuple[int, int], ...] = ()
        if ev.kind == "action.observed":
            run.observations += 1
            obs = ev.payload.get("observation") or {}
            execution = str(obs.get("execution_id"))
            designated = run.designating.get(execution, ())
            if execution in run.pending:
                tool, done = run.pending.pop(execution)
                run.done.setdefault(tool, []).append(done)
                for kept in done.written:
                    run.written.setdefault(kept[0], {})[kept] = None
        written = self._written(run, ev, found)
        for leaf in found:
            if leaf.trust == TRUSTED and leaf.kind == "observation" and written:
                # INVARIANT: a trusted read is its system's word, not for what the agent
                # itself put there on a third party's word: a mail's IBAN saved as the
                # profile's street and read back was a trusted origin of the transfer to it,
                # which ran unattended (tests/security/test_424) — in this run or in any
                # earlier one: read back by a later run, the IBAN was the profile's word
                # again, and the transfer ran unattended (tests/security/test_496)
                leaf.trust = UNTRUSTED if _holds_any(leaf, written) else leaf.trust
            if ev.kind == "approval.decided" and ev.payload.get("status") == "changes_requested":
                mask_refused(leaf, run.asked.get(str(ev.payload.get("approval_id")), ()))
            if designated and leaf.trust == UNTRUSTED:
                leaf.trust = DESIGNATED
                leaf.designated_by = designated
            run.add(leaf)
