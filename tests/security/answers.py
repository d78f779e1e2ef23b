"""A home's named query answered as an auditor asks it: ``cradle-kg query NAME --param
... --format json --home H`` (the home's catalog, its packs' queries included, on its
real graph store caught up to the journal), each row as ``{variable: value}``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cradle_kg.cli import app


def answer(home: Path, name: str, **params: str) -> list[dict[str, str]]:
    args = ["query", name, "--format", "json", "--home", str(home)]
    for key, value in params.items():
        args += ["--param", f"{key}={value}"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    return [{k: v["value"] for k, v in row.items()} for row in doc["results"]["bindings"]]
