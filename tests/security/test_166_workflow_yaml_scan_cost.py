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
about a seventh of the CPU. The bound here is generous (the machines are shared); the
measured cost is in the README.
"""

from __future__ import annotations

import re
import time

import pytest

from cradle_kg.errors import WorkflowFileError
from cradle_kg.workflow.definitions import MAX_FILE_BYTES, parse_definition

HEAD = "workflow: w\nversion: '1'\nagent: a\nx: ["


def _flow_list() -> str:
    body = HEAD + "1," * (MAX_FILE_BYTES // 2)
    return body[:MAX_FILE_BYTES - 3] + "1]\n"


def test_a_full_body_of_plain_yaml_is_read_in_well_under_a_second_of_cpu() -> None:
    text = _flow_list()
    assert len(text.encode()) <= MAX_FILE_BYTES
    spent = []
    for _ in range(2):  # the lower of two: the machine is shared
        started = time.process_time()
        with pytest.raises(WorkflowFileError) as refused:
            parse_definition(text, name="request body", definition="file:<r>")
        spent.append(time.process_time() - started)
    assert any(":4: `x`: extra inputs are not permitted" in p
               for p in refused.value.problems), refused.value.problems
    assert min(spent) < 2.0, f"{min(spent):.2f} s of CPU for {len(text):,} bytes of YAML"


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
