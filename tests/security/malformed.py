"""A deterministic, seeded mutation fuzzer for the files an operator or a pack author hands
the runtime (``test_fuzz_files``, ``test_275`` … ``test_280``).

:func:`mutants` turns one well-formed file into a fixed list of malformed ones — byte
flips, truncations, NUL bytes, wrong encodings, deep nesting, huge numbers, duplicate keys,
values of the wrong type — the same list for the same seed, every run. :func:`snapshot`
is what a test compares before and after: every file of a home, by content.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: the values a type swap puts in place of another
_SWAPS: tuple[Any, ...] = (None, True, 0, -1, 10**40, 1.5e308, "", "x" * 300, [], {}, [[[]]],
                          {"k": {"k": None}}, "\x00", "\ud800", "../../etc/passwd")


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\xff"
    at = rng.randrange(len(data))
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]


def _structured(data: bytes, kind: str) -> Any:
    """The document ``data`` holds (JSON, or YAML read by the safe loader), or None."""
    import yaml

    try:
        if kind == "json":
            return json.loads(data)
        if kind == "yaml":
            return yaml.safe_load(data)
    except (ValueError, yaml.YAMLError):
        return None
    return None


def _paths(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*here, index))


def _swapped(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_swapped(v, rest, new) if k == head else v) for k, v in doc.items()}
    return [(_swapped(v, rest, new) if i == head else v) for i, v in enumerate(doc)]


def _dump(doc: Any, kind: str) -> bytes:
    if kind == "json":
        return json.dumps(doc).encode("utf-8", "surrogatepass")
    import yaml

    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")


def _type_swaps(data: bytes, kind: str, rng: random.Random, count: int) -> list[bytes]:
    doc = _structured(data, kind)
    if doc is None:
        return []
    paths = list(_paths(doc))
    out = []
    for _ in range(count):
        out.append(_dump(_swapped(doc, rng.choice(paths), rng.choice(_SWAPS)), kind))
    return out


def _duplicate_key(data: bytes, kind: str) -> list[bytes]:
    text = data.decode("utf-8", "replace")
    if kind == "json" and text.lstrip().startswith("{"):
        body = text.strip()
        return [(body[:-1].rstrip() + ', "' + _first_key(data) + '": null}').encode()]
    if kind == "yaml":
        first = next((line for line in text.splitlines()
                      if line and not line.startswith(("#", " ", "-"))), None)
        if first is not None:
            return [(text.rstrip("\n") + "\n" + first + "\n").encode()]
    return []


def _first_key(data: bytes) -> str:
    doc = _structured(data, "json")
    return next(iter(doc), "k") if isinstance(doc, dict) and doc else "k"


def _nesting(kind: str) -> list[bytes]:
    if kind == "json":
        return [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000]
    if kind == "yaml":
        return [b"[" * 100_000, b"a:\n" + b"".join(b" " * i + b"- \n" for i in range(1, 400))]
    if kind == "turtle":
        return [b"@prefix : <urn:x#> .\n:a :b " + b"[ :c " * 20_000 + b"1" + b" ]" * 20_000
                + b" .\n", b"@prefix : <urn:x#> .\n:a :b " + b"( " * 20_000 + b")" * 20_000
                + b" .\n"]
    if kind == "sparql":
        return [b"SELECT * WHERE { " + b"{ " * 20_000 + b"}" * 20_000 + b" }"]
    return [b"(" * 50_000 + b")" * 50_000]


def _huge(kind: str) -> list[bytes]:
    digits = b"9" * 50_000
    if kind == "json":
        return [b'{"a": ' + digits + b"}", b'{"a": 1e999999}', b'{"a": NaN}']
    if kind == "yaml":
        return [b"a: " + digits + b"\n", b"a: 1e999999\n", b"a: .nan\n"]
    if kind == "turtle":
        return [b"@prefix : <urn:x#> .\n:a :b " + digits + b" .\n",
                b"@prefix : <urn:x#> .\n:a :b 1e999999 .\n"]
    return [digits]


def mutants(data: bytes, *, kind: str, seed: int, flips: int = 4,
            swaps: int = 6) -> list[tuple[str, bytes]]:
    """Malformed variants of ``data`` (a ``kind`` of file: ``json``, ``yaml``, ``turtle``,
    ``sparql``, ``cedar``), each with a short name; the same for the same seed."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = [
        ("empty", b""),
        ("half", data[: len(data) // 2]),
        ("one-byte-short", data[:-1]),
        ("nul-inside", data[: len(data) // 3] + b"\x00" + data[len(data) // 3:]),
        ("latin-1", data + "\nÿé".encode("latin-1")),
        ("utf-16", data.decode("utf-8", "replace").encode("utf-16")),
        ("surrogate-bytes", data + b"\xed\xa0\x80"),
        ("bom", b"\xef\xbb\xbf" + data),
        ("controls", data + b"\x1b[2J\x07"),
    ]
    out += [(f"flip-{i}", _flip(data, rng)) for i in range(flips)]
    cut = [rng.randrange(1, max(2, len(data))) for _ in range(2)]
    out += [(f"cut-{c}", data[:c]) for c in cut]
    out += [(f"swap-{i}", m) for i, m in enumerate(_type_swaps(data, kind, rng, swaps))]
    out += [("duplicate-key", m) for m in _duplicate_key(data, kind)]
    out += [(f"deep-{i}", m) for i, m in enumerate(_nesting(kind))]
    out += [(f"huge-{i}", m) for i, m in enumerate(_huge(kind))]
    return out


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by its relative path (the journal included):
    what a refused file must leave as it was."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


#: a small pack of every kind of file a pack author hands the runtime
PACK_MANIFEST = """id: acme.small
name: Small pack
version: 1.0.0
core_ontology: ">=0.1.0"
namespace: "https://example.org/acme#"
ontology: ontology.ttl
shapes:
  - shapes.ttl
policies:
  - rules.cedar
graph_policies:
  - freeze.rq
queries:
  open: open.rq
"""
PACK_FILES: dict[str, tuple[str, str]] = {
    "manifest.yaml": (PACK_MANIFEST, "yaml"),
    "ontology.ttl": ("""@prefix : <https://example.org/acme#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:Thing a owl:Class ; rdfs:label "thing"@en ; rdfs:comment "a \\"thing\\"" .
:size a owl:DatatypeProperty ; rdfs:domain :Thing .
""", "turtle"),
    "shapes.ttl": ("""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix : <https://example.org/acme#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:ThingShape a sh:NodeShape ; sh:targetClass :Thing ;
  sh:property [ sh:path :size ; sh:datatype xsd:integer ; sh:maxCount 1 ] .
""", "turtle"),
    "rules.cedar": ("""@id("no-big-credit")
@reason("credits over 10000 are refused")
forbid (principal, action == Action::"demo.ledger.credit", resource)
when { context.arguments.amount > 10000 };
""", "cedar"),
    "freeze.rq": ("""# @id("freeze-writes")
# @verdict("deny")
# @reason("writes are frozen")
ASK { ?action <urn:never> ?o }
""", "sparql"),
    "open.rq": ("""# question: the runs
PREFIX cradle: <https://w3id.org/cradle#>
SELECT ?s WHERE { ?s a cradle:Run } LIMIT 10
""", "sparql"),
}


def home_with_pack(root: Path) -> tuple[Path, Path]:
    """The demo home at ``root`` with :data:`PACK_FILES` as its pack ``acme.small``
    (listed in its ``packs``); the home and the pack's folder."""
    from cradle_kg.config import load_config, save_config
    from cradle_kg.demo.scenario import prepare_home

    prepare_home(root)
    folder = root / "packs" / "acme.small"
    folder.mkdir(parents=True)
    for name, (text, _) in PACK_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    config = load_config(root / "config.json")
    save_config(root / "config.json",
                config.model_copy(update={"packs": (*config.packs, "acme.small")}))
    return root, folder


def review_refuses(folder: Path, file_name: str, word: str = "") -> None:
    """``pack validate FOLDER`` reports the pack invalid (exit 1, its JSON report), an
    error naming ``file_name`` (and ``word``)."""
    from .inputcli import cli

    done = cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json",
               timeout=120)
    assert done.returncode == 1, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    report = json.loads(done.stdout)
    assert not report["ok"] and any(file_name in e and word in e
                                    for e in report["errors"]), report


def door_refuses(*args: str, needle: str, proposal: Path | None = None) -> None:
    """The CLI command ``args`` (``submit`` of a fresh credit written at ``proposal``,
    when given) is refused in one ``error:`` line naming ``needle``, exit 2, no traceback."""
    from .homes import credit, without_journal_url
    from .inputcli import cli

    if proposal is not None:
        proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
        args = ("submit", str(proposal), *args)
    done = cli(*args, env=without_journal_url(), timeout=120)
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    assert done.stderr.startswith("error: ") and needle in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
