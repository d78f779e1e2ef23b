"""A workflow sent for review is read by libyaml: 256 KiB of YAML costs a fraction of a second.

Finding (tenth attack review, part two): ``POST /api/workflows/validate`` takes a 256 KiB
body from any token (an agent's too) and reads it twice with PyYAML's pure-Python
scanner and parser (once for the depth, anchors and tags, once to compose it with every
key's line), holding the GIL. No trick is needed: ``x: [1,1,1,…]`` filling the 256 KiB
cost 4.7 s of CPU (a block list 2.6 s, a flow mapping 1.9 s) before the file was refused
for its keys — three times the base-60 scalar ``test_124`` capped — and the server's
process (the JSON API, the page, every approver's decision) crawled meanwhile; a few such
requests at once held it. ``workflow validate`` and ``workflow list`` (``GET
/api/workflows``) read the home's files the same way.

Now both passes use libyaml's scanner and parser when PyYAML has it (it has, in the
wheels), as the other strict YAML readers already did: the same events, nodes and lines,
about a seventh of the CPU. The test counts the pure-Python scanner's calls (none) rather
than timing the read; the measured cost is in the README.
"""

from __future__ import annotations

import re

import pytest

from cradle_kg.errors import WorkflowFileError
from cradle_kg.workflow.definitions import MAX_FILE_BYTES, parse_definition

HEAD = "workflow: w\nversion: '1'\nagent: a\nx: ["


def _flow_list() -> str:
    body = HEAD + "1," * (MAX_FILE_BYTES // 2)
    return body[:MAX_FILE_BYTES - 3] + "1]\n"


def test_a_full_body_of_plain_yaml_is_read_by_libyaml_in_both_passes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What made it cost seconds is PyYAML's pure-Python scanner: it is never called, in
    either pass (the C scanner and parser read the whole body). Counted rather than
    timed: a CPU bound failed under load on this shared machine (3.3 s for what takes
    0.3 s alone) — the README gives the measured cost."""
    import yaml.scanner

    calls = []
    python_scanner = yaml.scanner.Scanner.check_token

    def counted(self: object, *choices: object) -> bool:
        calls.append(1)
        return python_scanner(self, *choices)  # type: ignore[arg-type]

    monkeypatch.setattr(yaml.scanner.Scanner, "check_token", counted)
    text = _flow_list()
    assert len(text.encode()) <= MAX_FILE_BYTES
    with pytest.raises(WorkflowFileError) as refused:
        parse_definition(text, name="request body", definition="file:<r>")
    assert any(":4: `x`: extra inputs are not permitted" in p
               for p in refused.value.problems), refused.value.problems
    assert calls == [], f"the pure-Python scanner read {len(calls):,} tokens"


def test_the_lines_and_refusals_are_those_of_before() -> None:
    with pytest.raises(WorkflowFileError, match="anchors and aliases") as refused:
        parse_definition("workflow: w\nversion: '1'\na: &x 1\nb: *x\n", name="r",
                         definition="file:<r>")
    assert refused.value.line == 3
    with pytest.raises(WorkflowFileError, match=re.escape("tag `tag:yaml.org,2002:str`")) as tagged:
        parse_definition("workflow: w\n\nversion: !!str 1\n", name="r", definition="file:<r>")
    assert tagged.value.line == 3
    with pytest.raises(WorkflowFileError, match="duplicate key `version`") as twice:
        parse_definition("workflow: w\nversion: '1'\nversion: '2'\n", name="r",
                         definition="file:<r>")
    assert twice.value.line == 3
    with pytest.raises(WorkflowFileError, match="not valid YAML") as broken:
        parse_definition("workflow: w\nversion: [1\n", name="r", definition="file:<r>")
    assert broken.value.line is not None
