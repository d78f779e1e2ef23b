"""Graph policies: SPARQL ASK or SELECT rules over a proposal's lineage, at gate 1.

A rule is a ``.rq`` file whose leading comments carry its annotations, in the style of the
Cedar policies::

    # @id("untrusted-sensitive-argument")
    # @verdict("require_approval")
    # @reason("`{name}` was seen only in untrusted content: «{quote}» ({author})")
    SELECT ?name ?quote ?author WHERE { … }

The query is asked over the triples of the proposal's trace (:mod:`.rdf`: the action, its
arguments, each argument's sources with their trust, author and quote). An ASK that is true,
or a SELECT with rows, matches; the reason is formatted with each row's bindings (one
reason per distinct value of the first variable). ``verdict`` is ``require_approval``
(default) or ``deny``. ``@trigger("…")`` names a flag of the trace the rule cannot match
without (``untrusted_only_sensitive``, ``untrusted_only``, ``instructed``,
``choice_untrusted_only``, ``repeat``, ``confidential``, ``picked_instructed``): when no
rule's trigger holds, no graph is built — the common, clean proposal costs a posting-list
read. A pack lists its rules under
``graph_policies:``; they are cited as ``<pack-id>/<id>``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import CradleError, ManifestError
from ..graph.lineage import Graph
from .trace import Trace

_ANNOTATION = re.compile(r'^#\s*@(\w+)\("((?:[^"\\]|\\.)*)"\)\s*$')
VERDICTS = ("require_approval", "deny")
#: the annotations a rule's leading comments may carry (:func:`parse_rule`)
ANNOTATIONS = ("id", "verdict", "reason", "trigger")


@dataclass(frozen=True)
class GraphRule:
    id: str
    verdict: str
    reason: str
    query: str
    #: a flag of the trace (:data:`TRIGGERS`) without which the rule cannot match: when no
    #: rule's trigger holds, the graph is not built at all (None: always asked)
    trigger: str | None = None


#: what a rule may name as its ``@trigger``, read from the trace without building a graph
TRIGGERS: dict[str, Callable[[Trace], bool]] = {
    "untrusted_only_sensitive": lambda t: any(a.sensitive and a.untrusted_only
                                              for a in t.arguments),
    "untrusted_only": lambda t: any(a.untrusted_only for a in t.arguments),
    "instructed": lambda t: any(a.instructed_by and not a.instructed_trusted
                                for a in t.arguments),
    "choice_untrusted_only": lambda t: t.choice_untrusted_only,
    "repeat": lambda t: bool(t.repeats),
    "confidential": lambda t: any(a.sensitive and a.discloses and not a.disclosure_requested
                                  for a in t.arguments),
    "picked_instructed": lambda t: any(a.picked_from for a in t.arguments)
    and (any(a.instructed_by for a in t.arguments) or bool(t.told_by)),
}


@dataclass(frozen=True)
class RuleMatch:
    rule: str
    verdict: str
    reasons: tuple[str, ...]


def parse_rule(text: str, *, name: str, namespace: str | None = None) -> GraphRule:
    """A rule from its text; ``name`` is used in errors and as the default id."""
    notes = _annotations(text, name)
    rule_id = notes.get("id", Path(name).stem)
    verdict = notes.get("verdict", "require_approval")
    if verdict not in VERDICTS:
        raise ManifestError(f"{name}: `@verdict` is `require_approval` or `deny`, "
                            f"not `{verdict}`")
    if not re.search(r"\b(ASK|SELECT)\b", text, re.IGNORECASE):
        raise ManifestError(f"{name}: a graph policy is a SPARQL ASK or SELECT query")
    trigger = notes.get("trigger")
    if trigger is not None and trigger not in TRIGGERS:
        raise ManifestError(f"{name}: `@trigger` is one of "
                            + ", ".join(f"`{t}`" for t in TRIGGERS) + f", not `{trigger}`")
    return GraphRule(id=f"{namespace}/{rule_id}" if namespace else rule_id, verdict=verdict,
                     reason=notes.get("reason", f"graph policy `{rule_id}` matched"),
                     query=text, trigger=trigger)


def _annotations(text: str, name: str) -> dict[str, str]:
    """The annotations of a rule's leading comments (blank lines between them too), each
    one the runtime reads as written, or :class:`ManifestError`: an annotation it cannot
    read (``# @verdict('deny')``), one written twice, or one spelled like one it reads
    (``@verdit``, ``@Verdict``) — before, each was left out and the rule read its default,
    ``require_approval`` for a ``deny`` its author wrote (``tests/security/test_201``).
    An annotation of the author's own (``@owner``) is left alone."""
    notes: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if not stripped[1:].lstrip().startswith("@"):
            continue  # a comment
        where = f"{name}:{number}"
        found = _ANNOTATION.match(stripped)
        if found is None:
            raise ManifestError(f"{where}: cannot read the annotation `{stripped[:80]}`",
                                hint='an annotation is written `# @name("value")`')
        key, value = found.group(1), found.group(2).replace('\\"', '"')
        if key in notes:
            raise ManifestError(f"{where}: `@{key}` is written twice")
        if key not in ANNOTATIONS:
            near = difflib.get_close_matches(key.lower(), ANNOTATIONS, n=1, cutoff=0.75)
            if near:
                raise ManifestError(f"{where}: `@{key}` is no annotation the runtime reads: "
                                    f"did you mean `@{near[0]}`?",
                                    hint="an annotation spelled otherwise is not read: the "
                                         "rule would take its default")
        notes[key] = value
    return notes


#: the operators (of expressions and paths) a graph policy may hold: the rules and queries
#: shipped here hold at most 14 (``tests/security/test_328``)
MAX_RULE_OPERATORS = 256


def _rule_text(path: Path) -> str:
    """A rule file as a query file is read: a regular file (a FIFO would block for ever)
    of at most the 100 KB of a query, UTF-8, nested no deeper than a query may be (20,000
    brackets killed the process in the engine's parser: ``tests/security/test_276``)."""
    from ..graph.sparql_guard import MAX_QUERY_BYTES, check_size
    from ..inputs import read_text_file

    try:
        text = read_text_file(path, max_bytes=MAX_QUERY_BYTES)
        # INVARIANT: nor chained past MAX_RULE_OPERATORS: 12,000 `||` (96 KB, nested once)
        # ended the process in the parser, a 1,000-step path took 108 s of planning at the
        # review and at every gate check (tests/security/test_328)
        check_size(text, max_operators=MAX_RULE_OPERATORS,
                   split="split it into rules of their own")
    except CradleError as exc:
        raise ManifestError(f"graph policy `{path}`: "
                            f"{exc.message.removeprefix(f'`{path}`: ')}") from None
    return text


def load_rules(paths: Sequence[Path], *, namespace: str | None = None) -> list[GraphRule]:
    rules = [parse_rule(_rule_text(p), name=str(p), namespace=namespace) for p in paths]
    probe = Graph(["<urn:x:a> <urn:x:p> <urn:x:o>"])
    for rule in rules:  # a rule that does not parse is refused at load, not at the gate
        try:
            probe.select(rule.query)
        except (SyntaxError, ValueError, OSError) as exc:
            raise ManifestError(f"graph policy `{rule.id}` does not parse: {exc}") from exc
    return rules


class _Row(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def due(rules: Sequence[GraphRule], trace: Trace) -> list[GraphRule]:
    """The rules worth asking about ``trace`` (those whose trigger holds, or that have none)."""
    return [r for r in rules if r.trigger is None or TRIGGERS[r.trigger](trace)]


def evaluate(rules: Sequence[GraphRule], lines: Sequence[str]) -> list[RuleMatch]:
    """The rules that match the triples ``lines``, each with its reasons."""
    matches: list[RuleMatch] = []
    if not rules:
        return matches
    graph = Graph(lines)
    for rule in rules:
        rows = graph.select(rule.query)
        if not rows:
            continue
        seen: dict[str, str] = {}
        for row in rows:
            first = next(iter(row.values()), "")
            if first not in seen:
                seen[first] = rule.reason.format_map(_Row(row))
        matches.append(RuleMatch(rule=rule.id, verdict=rule.verdict,
                                 reasons=tuple(f"{r} (graph policy `{rule.id}`)"
                                               for r in seen.values())))
    return matches
