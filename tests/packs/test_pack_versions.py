"""Two versions of a pack side by side: each decision names the version that made it, and
a past decision stays explainable under the policies then in force."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from cradle_kg.evidence import EvidenceStore
from cradle_kg.home import Home
from cradle_kg.storage.opening import open_home_journal
from tests.graph_backends import read_home_graph

from .conftest import cli, copy_pack, manifest_version, pack_dir

PACK = "customs.hs-router"
NEXT = "1.1.0"


def _install_next_version(home: Path) -> Path:
    """A copy under ``<home>/packs`` at 1.1.0 whose no-permit finalization needs approval."""
    copy = copy_pack(PACK, home / "packs" / f"{PACK}-{NEXT}")
    manifest = copy / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8")
    old = f"version: {manifest_version(PACK)}\n"
    assert old in text
    manifest.write_text(text.replace(old, f"version: {NEXT}\n"), encoding="utf-8")
    policy = copy / "policies" / "customs.cedar"
    text = policy.read_text(encoding="utf-8")
    marker = '@id("finalize-without-permit")\n'
    assert marker in text
    policy.write_text(text.replace(marker, marker + '@requires_approval("true")\n'),
                      encoding="utf-8")
    return copy


def _example(tmp: Path, task: str) -> Path:
    (src,) = (pack_dir(PACK) / "examples").glob("03_*.json")
    raw = json.loads(src.read_text(encoding="utf-8"))
    path = tmp / f"{task}.json"
    path.write_text(json.dumps({"input": {**raw["input"], "task": task}}), encoding="utf-8")
    return path


def _run(ref: str, example: Path, home: Path) -> dict[str, Any]:
    done = cli("pack", "run", ref, str(example), "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@pytest.mark.slow
def test_two_versions_side_by_side(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _install_next_version(home)
    listed = json.loads(cli("pack", "list", "--home", str(home), "--format", "json").stdout)
    versions = sorted(p["version"] for p in listed if p["id"] == PACK)
    current = manifest_version(PACK)
    assert versions == sorted([current, NEXT])

    old = _run(f"{PACK}@{current}", _example(tmp_path, "under-old"), home)
    new = _run(PACK, _example(tmp_path, "under-new"), home)  # the newest: 1.1.0
    old_fin, new_fin = old["governed"]["finalize"], new["governed"]["finalize"]
    assert old_fin["pack_versions"] == [f"{PACK}@{current}"]
    assert new_fin["pack_versions"] == [f"{PACK}@{NEXT}"]
    # the changed policy changes the answer, and only under the new version
    assert (old_fin["outcome"], new_fin["outcome"]) == ("executed", "awaiting_approval")
    assert old_fin["policy_version"] != new_fin["policy_version"]

    # the graph names each decision's version
    store = read_home_graph(home)
    rows = store.query(
        "PREFIX cradle: <https://w3id.org/cradle#> SELECT ?d ?v WHERE { "
        "?d a cradle:Decision ; cradle:packVersion ?v }")
    by_decision = {unquote(r[0].value.rsplit("/", 1)[-1]): r[1].value for r in rows}
    assert by_decision[old_fin["decision_id"]] == f"{PACK}@{current}"
    assert by_decision[new_fin["decision_id"]] == f"{PACK}@{NEXT}"

    # a past decision stays explainable: its policy set, texts and pack are in the journal
    with open_home_journal(Path(home)) as journal:
        sets = {e.payload["version"]: e.payload
                for e in journal.events_of_kind("policyset.activated")}
        refs = {}
        for version in (old_fin["policy_version"], new_fin["policy_version"]):
            (source,) = [s for s in sets[version]["sources"]
                         if s["name"].endswith("customs.cedar")]
            refs[version] = source["ref"]
        assert sets[old_fin["policy_version"]]["packs"] == [f"{PACK}@{current}"]
        assert sets[new_fin["policy_version"]]["packs"] == [f"{PACK}@{NEXT}"]
    evidence = EvidenceStore(Home(home).evidence)
    old_text = evidence.get(refs[old_fin["policy_version"]]).decode("utf-8")
    new_text = evidence.get(refs[new_fin["policy_version"]]).decode("utf-8")
    rule = '@id("finalize-without-permit")\n'
    assert rule + '@requires_approval("true")' in new_text
    assert rule in old_text and rule + '@requires_approval' not in old_text
    assert old_fin["policy_ids"] == ["customs.hs-router/finalize-without-permit"]
