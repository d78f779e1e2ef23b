"""A pack's Cedar schema is held to a nesting cap before cedar parses it.

Finding (twentieth attack review, beside ``test_323``): ``pack validate`` type-checks a
pack's policies against the Cedar schema its manifest names (``cedar_schema:``), and
cedar's schema parser recurses natively too: a schema whose record types nest 10,000
deep (60 KB: ``entity User = { a: { a: … Long } … };``), or whose ``Set<…>`` do, ended the
review of a pack one does not trust yet in a segmentation fault, no output.

Now the schema's brackets — ``{``, ``[``, ``(`` and a type's ``<`` — are counted first
(strings and comments skipped): past 64 deep, ``pack validate`` reports the pack
invalid, naming the schema file (exit 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .inputcli import cli
from .malformed import home_with_pack

SCHEMAS = {
    "records": "entity User = " + "{ a: " * 10_000 + "Long" + " }" * 10_000 + ";\n",
    "sets": "entity User = { a: " + "Set<" * 10_000 + "Long" + ">" * 10_000 + " };\n",
}


@pytest.mark.parametrize("form", sorted(SCHEMAS))
def test_the_review_refuses_a_deep_schema(tmp_path: Path, form: str) -> None:
    _, folder = home_with_pack(tmp_path / "home")
    (folder / "schema.cedarschema").write_text(SCHEMAS[form], encoding="utf-8")
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8")
                        + "cedar_schema: schema.cedarschema\n", encoding="utf-8")
    done = cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json",
               timeout=120)
    # before: -11 (SIGSEGV), nothing on stdout or stderr
    assert done.returncode == 1, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    report = json.loads(done.stdout)
    assert not report["ok"], report
    assert any("schema.cedarschema" in e and "deeper than 64" in e
               for e in report["errors"]), report
