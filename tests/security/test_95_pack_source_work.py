"""``pack validate`` parses a hostile pack's Python within a bound, each module once.

Finding (the fourth attack review): ``pack validate`` is the review step for a pack one
does not trust yet, and checks each ``module:attribute`` entry of the manifest by parsing
the module with :mod:`ast` (never importing it). Only the file's size was bounded (4 MiB),
and each entry parsed its module again. ``ast.parse`` holds ~700 bytes per token of dense
code: a 4 MiB module of ``a = (b, b, …)`` took the command to 2.9 GB of memory and 10 s of
CPU (``a=1`` lines: 2.5 GB, 14 s), and a manifest may name it in thousands of entries (256
KiB of ``- m:x`` lines) — 10 s each, the memory taken again each time. On Python 3.11 an
f-string is one token whose replacement fields are parsed in time that grows with their
square: 20,000 ``{a}`` took 0.6 s, 40,000 1.6 s, a 4 MiB one was stopped after ten
minutes.

Now the module's tokens are counted first by the streaming tokenizer (constant memory,
each f-string's ``{`` counted too): past 200,000 tokens a module (a real library's 900 KB
module is ~90,000), or an f-string past 1,000 fields, is not parsed, and the entry is an
error naming the file; all of one pack's modules together are parsed within 1,000,000
tokens; and each module is parsed once, whatever the entries naming it
(``cradle_kg.packs.static.Sources``). Counted as the calls to ``ast.parse`` and the tokens
they are given, not timed: the machine is shared.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import static
from cradle_kg.packs.validate import validate_pack

MANIFEST = """id: hostile.pack
name: A pack one does not trust yet
version: 1.0.0
core_ontology: ">=0.1.0"
description: checked before it is enabled
validators:
"""


def _pack(root: Path, modules: dict[str, str], entries: list[str]) -> Path:
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    (root / "manifest.yaml").write_text(MANIFEST + "".join(f"  - {e}\n" for e in entries))
    return root


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size in bytes of every source ``pack validate`` hands ``ast.parse``."""
    sizes: list[int] = []
    real = ast.parse

    def counted(source: Any, *args: Any, **kw: Any) -> Any:
        sizes.append(len(source))
        return real(source, *args, **kw)

    monkeypatch.setattr(static.ast, "parse", counted)
    return sizes


def test_a_dense_module_is_refused_before_it_is_parsed(tmp_path: Path,
                                                      parsed: list[int]) -> None:
    # 210,000 tokens in 210 KB: ~150 MB for ast.parse, 2.9 GB at the 4 MiB the size allowed
    dense = "check = (" + "b," * 105_000 + ")\n"
    report = validate_pack(_pack(tmp_path / "pack", {"dense": dense}, ["dense:check"]),
                           reasoner=False)
    assert parsed == [], parsed  # before: parsed whole
    assert not report.ok
    assert any("dense.py` is not checked: more than 200000 tokens" in e
               for e in report.errors), report.errors


def test_a_huge_f_string_is_refused_before_it_is_parsed(tmp_path: Path,
                                                       parsed: list[int]) -> None:
    fields = 'check = f"' + "{a}" * 5_000 + '"\n'
    report = validate_pack(_pack(tmp_path / "pack", {"fmt": fields}, ["fmt:check"]),
                           reasoner=False)
    assert parsed == [], parsed
    assert any("an f-string of 5000 `{` (line 1)" in e for e in report.errors), report.errors


def test_a_module_named_by_many_entries_is_parsed_once(tmp_path: Path,
                                                       parsed: list[int]) -> None:
    module = "".join(f"def check_{i}(ctx, p):\n    return None\n" for i in range(200))
    entries = [f"rules:check_{i}" for i in range(200)]
    report = validate_pack(_pack(tmp_path / "pack", {"rules": module}, entries),
                           reasoner=False)
    assert report.ok, report.errors
    assert len(parsed) == 1, len(parsed)  # before: 200 parses of the module


def test_the_pack_as_a_whole_is_parsed_within_a_budget(tmp_path: Path, parsed: list[int],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static, "MAX_PACK_TOKENS", 35_000)
    modules = {f"m{i}": "x = (" + "b," * 5_000 + ")\n" for i in range(10)}  # ~10,000 each
    report = validate_pack(_pack(tmp_path / "pack", modules,
                                 [f"m{i}:x" for i in range(10)]), reasoner=False)
    assert len(parsed) == 3, len(parsed)  # before: 10, however many modules it named
    refused = [e for e in report.errors if "parses for one pack" in e]
    assert len(refused) == 7, report.errors


def test_an_ordinary_pack_is_still_checked(tmp_path: Path, parsed: list[int]) -> None:
    module = "import os\n\ndef ok(ctx, p):\n    return f'{p}: {os.sep}'\n"
    report = validate_pack(_pack(tmp_path / "pack", {"rules": module},
                                 ["rules:ok", "rules:missing"]), reasoner=False)
    assert report.errors == [f"{tmp_path / 'pack' / 'manifest.yaml'}:8: `rules:missing`: "
                             "module `rules` has no `missing`"], report.errors
    assert len(parsed) == 1
