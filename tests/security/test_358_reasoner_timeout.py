"""The OWL reasoner runs under a time limit.

Finding: ``pack validate`` (the reasoner on by default when Java is installed) and
``ontology check`` ran HermiT through owlready2, which waits for the Java process with no
timeout. An ontology hard for HermiT's tableau kept either command running for as long as
HermiT took: a CI job validating a contributed pack hung. The pigeonhole principle is
such an ontology: n+1 pigeons, all different, each ``in`` some of n holes (a class of
nominals), ``in`` inverse-functional. It is inconsistent, and HermiT's search for a model
grows exponentially with n (measured here: 1.5 s at n=6, 8.9 s at n=8; n=12 still
running after 120 s). Now HermiT runs under ``--reasoner-timeout``
(``CRADLE_REASONER_TIMEOUT``, default 120 s): past it, the child and its Java are killed
and reaped, ``ontology check`` fails with
``reasoner_timeout`` naming the limit and how to raise it, and ``pack validate`` reports
the pack not valid (its ontology was not checked).

Real ``python -m cradle_kg`` processes and a real HermiT (Java is a requirement of the
suite, as in ``tests/graph/test_owl.py``). Each command runs in a session of its own, so
the test kills what the unfixed code would have left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

#: seconds the test waits for a command that should end after about 2 s
OUTER = 120


def pigeonhole(holes: int) -> str:
    """A Turtle ontology of ``holes + 1`` pigeons in ``holes`` holes (inconsistent)."""
    pigeons = " ".join(f":p{i}" for i in range(holes + 1))
    return "\n".join([
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .",
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
        "@prefix : <https://example.org/php#> .",
        ":in a owl:ObjectProperty, owl:InverseFunctionalProperty .",
        ":Hole a owl:Class ; owl:equivalentClass [ a owl:Class ; owl:oneOf ( "
        + " ".join(f":h{i}" for i in range(holes)) + " ) ] .",
        ":Pigeon a owl:Class ; rdfs:subClassOf [ a owl:Restriction ; "
        "owl:onProperty :in ; owl:someValuesFrom :Hole ] .",
        f"[] a owl:AllDifferent ; owl:distinctMembers ( {pigeons} ) .",
        *[f":p{i} a :Pigeon, owl:NamedIndividual ." for i in range(holes + 1)],
        *[f":h{i} a owl:NamedIndividual ." for i in range(holes)],
    ]) + "\n"


def _java_under(folder: Path) -> list[int]:
    """Live processes whose command line names ``folder`` (HermiT's input is there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(folder).encode() in cmdline and b"HermiT" in cmdline:
            found.append(int(entry.name))
    return found


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m cradle_kg ARGS`` in a session of its own; past ``OUTER`` seconds the
    whole session (the command and its Java) is killed and the test fails."""
    proc = subprocess.Popen([sys.executable, "-m", "cradle_kg", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=OUTER)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"`{' '.join(args)}` still running after {OUTER} s: the "
                             "reasoner has no time limit") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _env(tmp: Path) -> dict[str, str]:
    tmp.mkdir()
    return {**os.environ, "CRADLE_REASONER_TIMEOUT": "2", "TMPDIR": str(tmp)}


def test_ontology_check_stops_hermit_at_the_limit(tmp_path: Path) -> None:
    hard = tmp_path / "pigeons.ttl"
    hard.write_text(pigeonhole(12), encoding="utf-8")
    env = _env(tmp_path / "tmp")
    done = _run(["ontology", "check", "--no-packs", "--with", str(hard),
                 "--home", str(tmp_path / "home")], tmp_path, env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    err = " ".join(done.stderr.split())
    assert "did not finish within 2 s" in err, err
    assert "--reasoner-timeout" in err and "CRADLE_REASONER_TIMEOUT" in err, err
    assert "Traceback" not in done.stderr
    assert _java_under(tmp_path / "tmp") == []  # HermiT was killed, not left running
    assert list((tmp_path / "tmp").iterdir()) == []  # nor its input left behind


def test_pack_validate_reports_the_timeout(tmp_path: Path) -> None:
    folder = tmp_path / "hardpack"
    (folder / "ontology").mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: hard.pack\nname: Hard\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "ontology:\n  - ontology/terms.ttl\n", encoding="utf-8")
    (folder / "ontology" / "terms.ttl").write_text(pigeonhole(12), encoding="utf-8")
    env = _env(tmp_path / "tmp")
    done = _run(["pack", "validate", folder.name, "--format", "json"], tmp_path, env)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False, report
    errors = " ".join(report["errors"])
    assert "reasoner_timeout" in errors and "within 2 s" in errors, report
    assert "--reasoner-timeout" in errors, report
    assert _java_under(tmp_path / "tmp") == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_option_sets_the_limit(tmp_path: Path) -> None:
    """``--reasoner-timeout`` wins over the environment; a consistent ontology within the
    limit is checked as before."""
    hard = tmp_path / "pigeons.ttl"
    hard.write_text(pigeonhole(12), encoding="utf-8")
    env = {**_env(tmp_path / "tmp"), "CRADLE_REASONER_TIMEOUT": "100000"}
    done = _run(["ontology", "check", "--no-packs", "--with", str(hard),
                 "--reasoner-timeout", "1.5", "--home", str(tmp_path / "home")], tmp_path, env)
    assert done.returncode == 2 and "within 1.5 s" in " ".join(done.stderr.split()), done
    easy = _run(["ontology", "check", "--no-packs", "--reasoner-timeout", "600",
                 "--format", "json", "--home", str(tmp_path / "home")], tmp_path, env)
    assert easy.returncode == 0 and json.loads(easy.stdout)["consistent"] is True, easy
