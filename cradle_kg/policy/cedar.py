"""Cedar policies, evaluated in process with cedarpy.

A policy set is parsed once into a ``cedarpy.PolicySet`` handle; every decision reuses
it. Cedar's semantics are ours: default deny, forbid overrides permit. On top of them:

* a policy that errors while evaluating makes the whole decision **fail closed**
  (deny, with the error as the reason) — never "allow by accident";
* obligations ride on annotations of the determining policies:
  ``@requires_approval("true")``, ``@approval_scope("…")``, ``@requires_evidence("N")``
  on a permit; ``@on_deny("repair" | "clarify")`` and ``@reason("…")`` on a forbid;
* ``@id("…")`` names a policy in reasons and in the graph. A pack's policies are cited
  as ``<pack-id>/<id>`` (``/`` is reserved for them), and one id naming two policies is
  refused when the set is built — a decision names exactly one rule per id.

The policy-set version is the sha256 of the canonical list of (file name, text[, pack
id]), so a decision names exactly the rules that were in force, and whose they were.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cedarpy

from ..canonical import content_hash
from ..errors import InputError, PolicyError
from ..inputs import read_text_file
from ..records import PolicyResult

#: separates a pack's id from its own policy id (``customs.hs-router/finalize``); reserved
#: for packs, so an id without it can only come from the home's own policies
NAMESPACE_SEPARATOR = "/"
#: parsed entity sets a policy engine keeps (one per acting identity, in practice)
_ENTITY_SETS = 256
#: decisions a policy engine keeps, by the exact request and entities cedar is given, and
#: the longest context and entities text a kept one may have (together): at most ~8 MB
_DECISIONS = 2048
_DECISION_TEXT = 4096

#: what :func:`context_keys` reads a policy text as: a line comment, a string, the word
#: ``context`` — or a block comment, which Cedar does not have (read as "cannot tell")
_CONTEXT_SCAN = re.compile(r'//[^\n]*|"(?:[^"\\]|\\.)*"|/\*|\bcontext\b')
#: the one kind of use of ``context`` that names the attribute it reads: ``.attr``,
#: ``["attr"]``, ``has attr``, ``has "attr"`` (an escape in the name: "cannot tell")
_CONTEXT_USE = re.compile(
    r'\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*"([^"\\]*)"\s*\]'
    r'|has\s+(?:([A-Za-z_][A-Za-z0-9_]*)|"([^"\\]*)"))')


#: how deep brackets may nest in a policy text, and how many operators one statement may
#: chain, before cedar parses it: cedar's parser recurses natively and ended the process
#: (a segmentation fault, no output) past ~1,000 brackets or some thousands of chained ``if``
#: (``tests/security/test_323``); a real policy stays far below both
MAX_POLICY_NESTING = 64
MAX_POLICY_OPERATORS = 1000
#: what :func:`check_shape` reads: a line comment, a string (to its end, or the text's: one
#: attempt each, linear), a bracket, a statement's end, an operator
_SHAPE_SCAN = re.compile(r'//[^\n]*|"(?:[^"\\]|\\.)*"?|[(\[{]|[)\]}]|;|&&|\|\||[=!<>]=|'
                         r"[<>+\-*.!]|\b(?:if|in|has|like|is)\b", re.DOTALL)


def check_shape(text: str, name: str) -> None:
    """Refuse a policy text that nests brackets deeper than :data:`MAX_POLICY_NESTING` or
    chains more than :data:`MAX_POLICY_OPERATORS` operators in one statement — a
    :class:`PolicyError` naming ``name`` and the line — before any cedar parser sees it."""
    depth = operators = 0
    for found in _SHAPE_SCAN.finditer(text):
        token = found.group(0)
        if token.startswith(("//", '"')):
            continue
        if token in "([{":
            depth += 1
            if depth <= MAX_POLICY_NESTING:
                continue
            why = f"brackets nest deeper than {MAX_POLICY_NESTING}"
        elif token in ")]}":
            depth = max(0, depth - 1)
            continue
        elif token == ";":
            operators = 0
            continue
        else:
            operators += 1
            if operators <= MAX_POLICY_OPERATORS:
                continue
            why = f"a statement chains more than {MAX_POLICY_OPERATORS} operators"
        line = text.count("\n", 0, found.start()) + 1
        raise PolicyError(f"{name}:{line}: cannot parse the policy: {why}")


#: what :func:`check_schema_shape` reads: a line comment, a string, a bracket (a type's
#: ``<`` ``>`` too: the schema has no comparison)
_SCHEMA_SCAN = re.compile(r'//[^\n]*|"(?:[^"\\]|\\.)*"?|[(\[{<]|[)\]}>]', re.DOTALL)


def check_schema_shape(text: str, name: str) -> None:
    """Refuse a Cedar schema whose brackets nest deeper than :data:`MAX_POLICY_NESTING`
    — a :class:`PolicyError` naming ``name`` and the line — before cedar's schema parser,
    which recurses natively, sees it (``tests/security/test_327``)."""
    depth = 0
    for found in _SCHEMA_SCAN.finditer(text):
        token = found.group(0)
        if token.startswith(("//", '"')):
            continue
        depth = depth + 1 if token in "([{<" else max(0, depth - 1)
        if depth > MAX_POLICY_NESTING:
            line = text.count("\n", 0, found.start()) + 1
            raise PolicyError(f"{name}:{line}: cannot parse the schema: brackets nest "
                              f"deeper than {MAX_POLICY_NESTING}")


def context_keys(text: str) -> frozenset[str] | None:
    """The attributes of ``context`` a Cedar policy text can read, or None when it cannot
    be told (``context`` used as a whole — compared, put in a set or record — or written
    in a way this reading does not know): then the whole context is given.

    An attribute no policy names cannot change a decision: Cedar reads a record only
    through ``.attr``, ``["attr"]`` and ``has attr``, unless the record is used whole.
    Giving Cedar only the named ones spares it parsing the rest on every request (the
    context's JSON is most of a request's cost: the airline's ~70 µs, 30 with the two
    attributes its policies read)."""
    keys: set[str] = set()
    for found in _CONTEXT_SCAN.finditer(text):
        token = found.group(0)
        if token.startswith(("//", '"')):
            continue
        if token != "context":
            return None  # a block comment: not Cedar's syntax — cannot tell
        use = _CONTEXT_USE.match(text, found.end())
        if use is None:
            return None
        keys.add(next(g for g in use.groups() if g is not None))
    return frozenset(keys)


@dataclass(frozen=True)
class PolicySource:
    """One policy file. ``namespace`` is the id of the pack it came from (None: the home).

    Every policy id of a namespaced source is cited as ``<namespace>/<id>`` — so a pack's
    ``@id("demo-credit-limit")`` is ``its.pack/demo-credit-limit``, never the home's rule.
    """

    name: str
    text: str
    namespace: str | None = None

    def describe(self) -> str:
        return f"`{self.name}`" if self.namespace is None else \
            f"pack `{self.namespace}` (`{self.name}`)"


@dataclass(frozen=True)
class PolicyOutcome:
    allowed: bool
    determining: tuple[PolicyResult, ...]
    errors: tuple[str, ...]
    requires_approval: bool = False
    approval_scope: str | None = None
    requires_evidence: int = 0
    on_deny: str | None = None  # "repair" / "clarify" when a forbid says so
    deny_reasons: tuple[str, ...] = field(default_factory=tuple)


def _parse_json(text: str, name: str) -> dict[str, Any]:
    check_shape(text, name)
    try:
        est: dict[str, Any] = json.loads(cedarpy.policies_to_json_str(text))
    except (ValueError, RuntimeError) as exc:
        raise PolicyError(f"cannot parse policies in `{name}`: {cedar_says(exc)}") from exc
    return est


def _annotations_of(text: str, name: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Map cedar's positional ids (policy0, …) to (effect, annotations) of one file."""
    return _annotations_in(_parse_json(text, name))


def _annotations_in(est: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for pid, body in est.get("staticPolicies", {}).items():
        annotations = {k: str(v) for k, v in (body.get("annotations") or {}).items()}
        out[pid] = (str(body.get("effect", "")), annotations)
    return out


#: what an ``@id`` may say: it is cited in reasons, tables, the graph and queries
POLICY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


#: how much of cedar's own message an error quotes
CEDAR_SAYS = 200


def cedar_says(exc: Exception) -> str:
    """Cedar's message on one line, cut to :data:`CEDAR_SAYS` characters: it quotes the
    token it refuses whole — a 40,000-character name made an ``error:`` line, and the
    reason journaled with each denial while the file was in place, as long
    (``tests/security/test_283``). The file and line are the runtime's own, before it."""
    said = " ".join(str(exc).split())
    return said if len(said) <= CEDAR_SAYS else said[:CEDAR_SAYS - 1] + "…"


def _shown(text: str) -> str:
    """A user's id inside a one-line error: control characters escaped, long ids cut."""
    shown = json.dumps(text[:80])[1:-1]
    return shown + "…" if len(text) > 80 else shown


#: the annotations the runtime reads (``@id`` and ``@reason`` name and explain a rule; the
#: others are obligations), and what each obligation may say
OBLIGATIONS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "requires_approval": ('"true" or "false"', lambda v: v in ("true", "false")),
    "approval_scope": ("a scope's name", lambda v: POLICY_ID.fullmatch(v) is not None),
    "requires_evidence": ("a whole number of documents, at most 10000",
                          lambda v: v.isascii() and v.isdigit() and int(v) <= 10_000),
    "on_deny": ('"repair" or "clarify"', lambda v: v in ("repair", "clarify")),
}
KNOWN_ANNOTATIONS = frozenset({"id", "reason", *OBLIGATIONS})


def check_obligations(where: str, notes: dict[str, str]) -> None:
    """Refuse an obligation the runtime would not read as written: a value it does not
    know (``@requires_approval("yes")`` asked nobody; ``@requires_evidence("two")`` asked
    for one document), or an annotation spelled like an obligation but not one
    (``@requires_aproval``, ``@Requires_Approval``: read as no obligation at all). Before,
    either was an allow the operator never wrote (``tests/security/test_189``); another
    annotation of the operator's own (``@owner``, ``@description``) is left alone."""
    for name, value in notes.items():
        if name in OBLIGATIONS:
            said, valid = OBLIGATIONS[name]
            if not valid(value):
                raise PolicyError(f"{where}: `@{name}(\"{_shown(value)}\")`: the runtime "
                                  f"reads {said}", hint="an obligation it cannot read is "
                                  "refused, never read as none")
        elif name not in KNOWN_ANNOTATIONS:
            near = difflib.get_close_matches(name.lower(), sorted(OBLIGATIONS), n=1,
                                             cutoff=0.75)
            if near:
                raise PolicyError(f"{where}: `@{_shown(name)}` is no annotation the runtime "
                                  f"reads: did you mean `@{near[0]}`?",
                                  hint="an obligation spelled otherwise is not one: the "
                                       "policy would permit without it")


def _positional(pid: str) -> int:
    return int(pid.removeprefix("policy")) if re.fullmatch(r"policy\d+", pid) else -1


def _cited_ids(sources: tuple[PolicySource, ...], merged: dict[str, tuple[str, dict[str, str]]]
               ) -> dict[str, tuple[str, PolicySource]]:
    """Cedar's positional id in the merged set -> (the id decisions cite, its source).

    Cedar numbers the policies of the concatenated text in order, so file ``k``'s
    ``policyN`` is the merged set's ``policy(offset_k + N)``. A policy without ``@id`` is
    named by its position among the policies of its own origin (the home, or one pack),
    so loading a pack never renames the home's unnamed policies. Two policies cited
    under one id are refused: a decision must name exactly one rule.
    """
    out: dict[str, tuple[str, PolicySource]] = {}
    seen: dict[str, PolicySource] = {}
    offset = 0
    per_origin: dict[str | None, int] = {}
    for source in sources:
        est = _parse_json(source.text, source.name)
        if est.get("templates"):
            raise PolicyError(f"`{source.name}`: policy templates are not supported")
        local = sorted(_annotations_in(est).items(),
                       key=lambda item: _positional(item[0]))
        base = per_origin.get(source.namespace, 0)
        for index, (_, (effect, notes)) in enumerate(local):
            merged_pid = f"policy{offset + index}"
            if merged.get(merged_pid, ("", {}))[0] != effect:
                raise PolicyError(f"`{source.name}`: cannot line the policies up with the "
                                  "policy set (cedar numbered them differently)")
            own = notes.get("id", f"policy{base + index}")
            check_obligations(f"`{source.name}`: policy `{_shown(own)}`", notes)
            if source.namespace is None and NAMESPACE_SEPARATOR in own:
                raise PolicyError(f"`{source.name}`: policy id `{_shown(own)}`: "
                                  f"`{NAMESPACE_SEPARATOR}` is reserved for the ids of pack "
                                  "policies (`<pack-id>/<id>`)")
            if not POLICY_ID.fullmatch(own):
                raise PolicyError(f"`{source.name}`: policy id `{_shown(own)}`: use letters, "
                                  "digits, `.`, `_`, `:` and `-` (at most 128)")
            cited = own if source.namespace is None else \
                f"{source.namespace}{NAMESPACE_SEPARATOR}{own}"
            if cited in seen:
                raise PolicyError(f"duplicate policy id `{cited}`: in {seen[cited].describe()} "
                                  f"and in {source.describe()}")
            seen[cited] = source
            out[merged_pid] = (cited, source)
        offset += len(local)
        per_origin[source.namespace] = base + len(local)
    if offset != len(merged):
        raise PolicyError("cannot line the policies up with the policy set (cedar counted "
                          f"{len(merged)} policies, the files {offset})")
    return out


class PolicyEngine:
    """A parsed, versioned Cedar policy set."""

    def __init__(self, sources: Iterable[PolicySource]) -> None:
        # the home's files first, then each pack's; within one origin by file name
        self.sources = tuple(sorted(sources, key=lambda s: (
            s.namespace is not None, s.namespace or "", Path(s.name).name, s.text)))
        for source in self.sources:
            if source.namespace is not None and (
                    not source.namespace or NAMESPACE_SEPARATOR in source.namespace):
                raise PolicyError(f"`{source.name}`: `{source.namespace}` is not a pack id")
        # the version depends on what the policies say (and whose they are), not on where
        # the home is: file names without their folders, texts, and the pack they came from
        self.version = content_hash([
            [Path(s.name).name, s.text] if s.namespace is None
            else [Path(s.name).name, s.text, s.namespace] for s in self.sources])
        for source in self.sources:  # INVARIANT: no cedar parser sees a text this refuses
            check_shape(source.text, source.name)
        text = "\n".join(s.text for s in self.sources)
        check_shape(text, "policy set")  # brackets a file left open, nested by the next
        try:
            self._set = cedarpy.PolicySet.from_str(text)
        except ValueError as exc:
            for source in self.sources:  # name the file and line that does not parse
                line = parse_error_line(source.text)
                if line is not None:
                    raise PolicyError(f"{source.name}:{line}: cannot parse the policy: "
                                      f"{cedar_says(exc)}") from exc
            names = ", ".join(f"`{s.name}`" for s in self.sources) or "(none)"
            raise PolicyError(f"cannot parse the policy set {names}: {cedar_says(exc)}"
                              ) from exc
        # cedar numbers policies policy0.. across the concatenated text; rebuild that
        # numbering from one parse of the whole set so annotations line up
        merged = _annotations_of(text, "policy set")
        cited = _cited_ids(self.sources, merged)
        # INVARIANT: a decision cites a pack's policy only under the pack's namespace; the
        # recorded annotations say the same id, so nothing on the record can read otherwise
        self._meta = {pid: (effect, {**ann, "id": cited[pid][0]} if "id" in ann else ann)
                      for pid, (effect, ann) in merged.items()}
        self._ids = {pid: cid for pid, (cid, _) in cited.items()}
        #: parsed entity sets by their JSON text (:meth:`_entity_set`)
        self._entities: dict[str, cedarpy.Entities] = {}
        #: this set's outcomes by the exact request and entities text cedar evaluated
        #: (:meth:`evaluate`)
        self._decisions: dict[tuple[str, str, str, str, str, str, str, str],
                              PolicyOutcome] = {}
        #: the context attributes these policies can read (None: every one is given) —
        #: of this set's own texts, so a new policy set reads its own (:func:`context_keys`)
        self.context_keys = context_keys(text)

    @classmethod
    def from_paths(cls, paths: Iterable[Path], *, namespace: str | None = None) -> PolicyEngine:
        return cls(read_sources(paths, namespace=namespace))

    def __len__(self) -> int:
        return len(self._meta)

    def policy_ids(self) -> list[str]:
        return sorted(self._ids.values())

    def evaluate(
        self,
        *,
        principal: tuple[str, str],
        action: tuple[str, str],
        resource: tuple[str, str],
        context: Mapping[str, Any],
        entities: list[dict[str, Any]] | None = None,
    ) -> PolicyOutcome:
        keys = self.context_keys
        try:
            # cedar is given the context as the JSON text it would make of the dict itself
            # (``json.dumps``): the same text is the same request
            context_text = json.dumps(dict(context) if keys is None else {
                k: v for k, v in context.items() if k in keys})
            entities_text = json.dumps(entities or [])
        except Exception as exc:  # not JSON: cedar could not be given it — fail closed
            return PolicyOutcome(False, (), (
                f"cedar could not evaluate the request: {cedar_says(exc)}",))
        # INVARIANT: a decision is a function of the policy set (this engine's, parsed once
        # and never changed: new policies are a new engine), the request and the entities
        # — Cedar has no clock, no randomness and no I/O. So an outcome is kept under the
        # exact texts cedar was given and reused for the identical request: the same
        # decision, errors included; a request cedar refused (an exception), or one whose
        # context and entities are longer than _DECISION_TEXT, is not kept
        memo = (principal[0], principal[1], action[0], action[1], resource[0], resource[1],
                context_text, entities_text)
        kept = self._decisions.get(memo)
        if kept is not None:
            return kept
        request = {
            "principal": {"type": principal[0], "id": principal[1]},
            "action": {"type": action[0], "id": action[1]},
            "resource": {"type": resource[0], "id": resource[1]},
            # only what a policy can read (:func:`context_keys`): the same decision
            "context": context_text,
        }
        try:
            result = cedarpy.is_authorized(request, self._set,
                                           self._entity_set(entities_text))
        except Exception as exc:  # cedar refused the request itself: fail closed
            return PolicyOutcome(False, (), (
                f"cedar could not evaluate the request: {cedar_says(exc)}",))
        outcome = self._outcome(result)
        if len(context_text) + len(entities_text) <= _DECISION_TEXT:
            if len(self._decisions) >= _DECISIONS:
                self._decisions.clear()
            self._decisions[memo] = outcome
        return outcome

    def _outcome(self, result: cedarpy.AuthzResult) -> PolicyOutcome:
        errors = tuple(str(e) for e in result.diagnostics.errors)
        # INVARIANT: cedar hands the determining policies back as an unordered set; sorted,
        # the same request gives the same decision record (strict replay compares hashes)
        determining = tuple(self._result(pid) for pid in sorted(result.diagnostics.reasons))
        if errors:
            # INVARIANT: an erroring policy never lets a request through.
            return PolicyOutcome(False, determining, errors)
        if not result.allowed:
            return self._denied(determining)
        return self._allowed(determining)

    def _entity_set(self, text: str) -> cedarpy.Entities:
        """The parsed handle of the entities whose JSON text is ``text``: the same few
        identities come back on every call, and cedar parses a JSON entity list anew on
        each (a different list is a different key: never another list's handle)."""
        handle = self._entities.get(text)
        if handle is None:
            handle = cedarpy.Entities.from_json_str(text)
            if len(self._entities) >= _ENTITY_SETS:
                self._entities.clear()
            self._entities[text] = handle
        return handle

    def _result(self, pid: str) -> PolicyResult:
        effect, annotations = self._meta.get(pid, ("", {}))
        return PolicyResult(
            policy_id=self._ids.get(pid, pid), effect=effect, annotations=annotations
        )

    @staticmethod
    def _denied(determining: tuple[PolicyResult, ...]) -> PolicyOutcome:
        if not determining:
            return PolicyOutcome(False, (), (), deny_reasons=("no policy permits this action",))
        reasons = tuple(
            p.annotations.get("reason", f"forbidden by policy `{p.policy_id}`")
            for p in determining
        )
        modes = {p.annotations.get("on_deny") for p in determining}
        # forbid overrides everything: the mildest outcome is used only if every forbid agrees
        on_deny = modes.pop() if len(modes) == 1 else None
        return PolicyOutcome(
            False, determining, (), on_deny=on_deny if on_deny in ("repair", "clarify") else None,
            deny_reasons=reasons,
        )

    @staticmethod
    def _allowed(determining: tuple[PolicyResult, ...]) -> PolicyOutcome:
        asking = [p for p in determining if p.annotations.get("requires_approval") == "true"]
        # INVARIANT: the approval is asked within the scope the policies that ask for it
        # all name, else within none (an approver holding `*`): before, the first
        # determining policy naming a scope chose the desk, and an action two policies
        # sent to a person was decided by the laxer one (tests/security/test_188). When no
        # policy asks (an irreversible tool does), the scope the permits naming one agree on
        scopes = ({p.annotations.get("approval_scope") or None for p in asking} if asking
                  else {p.annotations["approval_scope"] or None for p in determining
                        if "approval_scope" in p.annotations})
        scope = scopes.pop() if len(scopes) == 1 else None
        evidence = 0
        for p in determining:
            raw = p.annotations.get("requires_evidence")
            if raw is not None:
                evidence = max(evidence, int(raw) if raw.isdigit() else 1)
        return PolicyOutcome(True, determining, (), bool(asking), scope, evidence)


def read_sources(paths: Iterable[Path], *, namespace: str | None = None
                 ) -> list[PolicySource]:
    """The ``*.cedar`` files of folders, and files, as sources of one origin.

    A folder's policies are its ``*.cedar`` files, not those of its subfolders: a folder
    holding a policy file the loader would not read (in a subfolder, or named ``*.CEDAR``)
    is refused, never read without it — a forbid left out is an allow by accident.
    """
    sources: list[PolicySource] = []
    for path in paths:
        files = _policy_files(path) if path.is_dir() else [path]
        for file in files:
            try:  # a regular file only: a FIFO would block for ever
                text = read_text_file(file, max_bytes=MAX_POLICY_FILE_BYTES)
            except InputError as exc:  # "`<file>`: why"
                raise PolicyError(f"cannot read the policy file {exc.message}") from None
            sources.append(PolicySource(str(file), text, namespace))
    return sources


#: the largest policy file read (a policy set is kilobytes of text)
MAX_POLICY_FILE_BYTES = 16 << 20

#: the most entries :func:`_policy_files` looks at under one policies folder: a folder that
#: holds more (a link to ``/``, a checkout) is refused, not walked for minutes at each open
MAX_FOLDER_ENTRIES = 10_000


def _policy_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.cedar"))
    seen: set[tuple[int, int]] = set()
    todo = [folder]
    looked = 0
    try:
        while todo:  # every subfolder, through symbolic links, each once
            here = todo.pop()
            info = os.stat(here)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            for entry in sorted(here.iterdir()):
                looked += 1
                if looked > MAX_FOLDER_ENTRIES:
                    raise PolicyError(
                        f"the policies folder `{folder}` holds more than {MAX_FOLDER_ENTRIES:,} "
                        f"entries (with its subfolders, `{here}` among them): it is not read",
                        hint="a policies folder holds its `*.cedar` files; move the rest, or "
                             "the link to it, out of the folder")
                if entry.is_dir():
                    todo.append(entry)
                elif entry.name.lower().endswith(".cedar") and entry not in files:
                    raise PolicyError(
                        f"`{entry}`: a policy file the policies folder `{folder}` does not "
                        "read (only its own `*.cedar` files are policies)",
                        hint="move it up into the folder and name it `*.cedar`, or move it "
                             "out of the folder")
    except OSError as exc:  # a subfolder it may not list: what it holds is unknown
        raise PolicyError(f"cannot read the policies folder `{folder}`: {exc}") from exc
    return files


def parse_error_line(text: str) -> int | None:
    """The first line of the first statement that does not parse, or None if all parse."""
    try:
        cedarpy.PolicySet.from_str(text)
        return None
    except ValueError:
        pass
    ends = [i for i, ch in enumerate(text) if ch == ";"]
    start = 0
    for end in [*ends, len(text)]:
        chunk = text[start:end + 1]
        if chunk.strip() and not chunk.strip().startswith("//"):
            try:
                cedarpy.PolicySet.from_str(chunk)
            except ValueError:
                offset = start + len(chunk) - len(chunk.lstrip())
                return text.count("\n", 0, offset) + 1
        start = end + 1
    return 1


def validate_against_schema(text: str, schema: str, *, name: str,
                            schema_name: str = "cedar schema") -> list[str]:
    """Validate Cedar policies against a Cedar schema; messages name the file and policy."""
    try:
        check_shape(text, name)
        check_schema_shape(schema, schema_name)
    except PolicyError as exc:
        return [exc.message]
    try:
        result = cedarpy.validate_policies(text, schema)
    except Exception as exc:
        return [f"{name}: cannot validate: {cedar_says(exc)}"]
    ids = {pid: ann.get("id", pid) for pid, (_, ann) in _annotations_of(text, name).items()}
    return [f"{name}: policy `{ids.get(e.policy_id, e.policy_id)}`: {e.error}"
            for e in result.errors]
