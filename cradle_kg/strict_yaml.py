"""Untrusted YAML: the one strict loader, for every YAML file an operator hands the runtime.

PyYAML's ``SafeLoader`` keeps the last of two values given to one key: a second
``side_effect:`` quietly overrides the first, a second ``policies: []`` drops a pack's
policy list. :class:`StrictLoader` refuses a key given twice in one mapping (a merge key,
``<<: *base`` then an override, is the one intended repetition), and nesting deeper than
:data:`MAX_DEPTH`, with the line at fault (:class:`YamlRefused`). It reads an MCP proxy's
contracts (:mod:`cradle_kg.integrations.contracts`) and a pack's manifest
(:mod:`cradle_kg.packs.manifest`); workflow files check their keys while recording each
one's line (:mod:`cradle_kg.workflow.definitions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import yaml

#: the deepest nesting of YAML collections read (a contract needs four levels)
MAX_DEPTH = 32


#: the longest scalar read as a number (Python refuses a longer integer anyway). Refused
#: before it is built: YAML 1.1's base-60 integer (``59:59:…``) is built by PyYAML in time
#: that grows with its square, holding the GIL — one 256 KiB scalar sent to ``POST
#: /api/workflows/validate`` by any token stalled the whole server for seconds
#: (``tests/security/test_124``)
MAX_NUMBER_CHARS = 4300
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})


class YamlRefused(Exception):
    """A problem found while composing the YAML, with its 1-based line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


def _guarded(construct: Callable[[Any, bool], Any], node: Any, deep: bool) -> Any:
    """``construct(node, deep)``, a value PyYAML resolves but cannot build refused with its
    line: YAML 1.1 reads ``2024-02-31`` as a date, ``2024-01-01 25:00:00`` as a time, a run
    of digits as an integer, and the constructor raises ``ValueError`` for a date or time
    that does not exist and an integer past Python's 4,300 digits — out of every reader of
    a file sent for review (``POST /api/workflows/validate`` a 500, ``pack validate``
    ``unexpected ValueError``: ``tests/security/test_116``)."""
    if isinstance(node, yaml.ScalarNode) and node.tag in _NUMBER_TAGS \
            and len(node.value) > MAX_NUMBER_CHARS:
        raise YamlRefused(f"`{node.value[:37]}...` cannot be read: a number of "
                          f"{len(node.value):,} characters (at most {MAX_NUMBER_CHARS:,})",
                          node.start_mark.line + 1)
    try:
        value = construct(node, deep)
    except (ValueError, OverflowError) as exc:  # a scalar's own constructor
        shown = str(node.value) if isinstance(node, yaml.ScalarNode) else node.tag
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise YamlRefused(f"`{shown}` cannot be read: {exc}", node.start_mark.line + 1) \
            from None
    # INVARIANT: no NaN or infinity, as the strict JSON loader: a schema's bound of `.nan`
    # passes the schema's own check and then holds nothing (tests/security/test_165)
    if isinstance(value, float) and not math.isfinite(value):
        raise YamlRefused(f"`{str(node.value)[:40]}` is not a finite number (NaN and "
                          "infinities are refused, as in JSON)", node.start_mark.line + 1)
    return value


class GuardedLoader(yaml.SafeLoader):
    """``SafeLoader`` whose values are built under :func:`_guarded`."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        return _guarded(super().construct_object, node, deep)


class StrictLoader(GuardedLoader):
    """``SafeLoader`` that refuses a key given twice in one mapping and deep nesting (and
    values it cannot build, :class:`GuardedLoader`)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlRefused(f"nested too deep (more than {MAX_DEPTH} levels)",
                                  mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    #: merge keys (``<<``) read; a key two merged mappings give is refused either way
    merges = True

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            _refuse_twice(node, merges=self.merges)
        return super().construct_mapping(node, deep=deep)


class _NoMergeLoader(StrictLoader):
    """:class:`StrictLoader` that refuses merge keys."""

    merges = False


_MERGE = "tag:yaml.org,2002:merge"


def _refuse_twice(node: Any, *, merges: bool = True) -> None:
    """A :class:`YamlRefused` at the second of two keys given in one mapping node, or given
    by two of the mappings one merge key (``<<``) merges; with ``merges`` false, at any
    merge key."""
    seen: set[Any] = set()
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            if not merges:
                raise YamlRefused("a merge key (`<<`) is not allowed here: write each key "
                                  "once", key_node.start_mark.line + 1)
            # `<<: *base` then an explicit key is an override, by design; two merged
            # mappings giving one key are not: one of the two values would silently win
            _refuse_merged_twice(value_node)
            continue
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else id(key_node)
        if key in seen:
            raise YamlRefused(f"`{str(key)[:80]}` is given twice in one mapping (a second "
                              "value would silently replace the first)",
                              key_node.start_mark.line + 1)
        seen.add(key)


def _refuse_merged_twice(value: Any) -> None:
    parts = value.value if isinstance(value, yaml.SequenceNode) else [value]
    seen: set[Any] = set()
    for part in parts:
        if not isinstance(part, yaml.MappingNode):
            continue  # not a mapping: PyYAML refuses the merge itself
        for key_node, _ in part.value:
            if key_node.tag == _MERGE:
                continue  # that mapping's own merge: checked with the mapping
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else id(key_node)
            if key in seen:
                raise YamlRefused(f"`{str(key)[:80]}` is given twice through one merge key "
                                  "(`<<`): one value would silently replace the other",
                                  key_node.start_mark.line + 1)
            seen.add(key)


#: libyaml's safe loader when PyYAML was built with it (it is, in the wheels)
_CSAFE: Any = getattr(yaml, "CSafeLoader", None)


if _CSAFE is not None:
    class _GuardedCLoader(_CSAFE):  # type: ignore[misc]
        """libyaml's safe loader whose values are built under :func:`_guarded`."""

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            return _guarded(super().construct_object, node, deep)

_CLOADER: Any = _GuardedCLoader if _CSAFE is not None else None
#: the same, for a reader that composes the nodes itself (a workflow file keeps each
#: key's line); ``None`` without libyaml
C_LOADER: Any = _CLOADER


def load(text: str, *, merges: bool = True) -> Any:
    """``text`` as :class:`StrictLoader` reads it — a key given twice or nesting past
    :data:`MAX_DEPTH` is a :class:`YamlRefused` — ~10x faster where libyaml is there: the
    depth is counted on libyaml's event stream (no recursion on an unchecked document), the
    composed nodes are checked for keys given twice (each node once: aliases share theirs),
    then the document is built by libyaml's safe loader. ``merges`` false: a merge key
    (``<<``) is refused too (a pack's manifest)."""
    if _CLOADER is None:
        return yaml.load(text, Loader=StrictLoader if merges else _NoMergeLoader)
    depth = 0
    for event in yaml.parse(text, Loader=_CLOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise YamlRefused(f"nested too deep (more than {MAX_DEPTH} levels)",
                                  mark.line + 1 if mark is not None else 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loader = _CLOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_keys(node, merges=merges)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_keys(root: Any, *, merges: bool = True) -> None:
    seen_nodes: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            _refuse_twice(node, merges=merges)
            for key_node, value_node in node.value:
                todo += (key_node, value_node)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
