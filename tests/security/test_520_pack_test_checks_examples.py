"""``cradle-kg pack test`` checks what it says it checks.

Finding: ``pack test`` says it runs "the pack's own tests and its examples"; it ran only
``tests/`` — a pack whose example answered against what the example expects passed — and
a pack with no ``tests/`` folder at all reported ``tests passed``, exit 0: a check that
could not fail.
Now: every example the manifest lists runs through the pack's ``example_runner``, each in
a fresh home of its own (a copy of one the pack was loaded into once), and is held to what
it declares (``expect``: a partial answer, or the runner's own ``as_expected``); the
command prints how many tests passed and failed and how many examples matched, exits 1
when one did not (naming it), when a runner raises or an example declares nothing to
check, and says "nothing was checked" (exit 1) for a pack with neither tests nor examples.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.inprocess import run_cli

RUNNER = '''
def run_example(runtime, example):
    if example.get("raise"):
        raise RuntimeError("the runner broke")
    return {"status": example["status"], "packs": list(runtime.pack_versions),
            "detail": {"n": 1, "extra": True}}
'''

PASSING = "def test_ok() -> None:\n    assert True\n"


def _pack(root: Path, *, examples: dict[str, dict[str, object]] | None = None,
          tests: str | None = None) -> Path:
    pack = root / "acme.checked"
    pack.mkdir(parents=True)
    manifest = ["id: acme.checked", "name: Checked", "version: 1.0.0",
                'core_ontology: ">=0.1.0"']
    if examples is not None:
        (pack / "__init__.py").write_text("", encoding="utf-8")
        (pack / "runner.py").write_text(RUNNER, encoding="utf-8")
        (pack / "examples").mkdir()
        for name, example in examples.items():
            (pack / "examples" / f"{name}.json").write_text(json.dumps(example),
                                                            encoding="utf-8")
        manifest += ["example_runner: runner:run_example", "examples: examples"]
    (pack / "manifest.yaml").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    if tests is not None:
        (pack / "tests").mkdir()
        if tests:
            (pack / "tests" / "test_it.py").write_text(tests, encoding="utf-8")
    return pack


def _pack_test(pack: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("pack", "test", str(pack), env={"COLUMNS": "300"})


def test_a_pack_with_nothing_to_check_does_not_pass(tmp_path: Path) -> None:
    done = _pack_test(_pack(tmp_path))
    out = done.stdout + done.stderr
    assert "passed" not in out, out
    assert done.returncode == 1, out
    assert "nothing was checked" in out, out


def test_an_empty_tests_folder_does_not_pass(tmp_path: Path) -> None:
    done = _pack_test(_pack(tmp_path, tests=""))
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "tests passed" not in out, out


def test_an_example_not_as_expected_fails_the_pack(tmp_path: Path) -> None:
    pack = _pack(tmp_path, tests=PASSING, examples={
        "good": {"status": "ok", "expect": {"status": "ok", "detail": {"n": 1}}},
        "wrong": {"status": "ok", "expect": {"status": "denied"}},
    })
    done = _pack_test(pack)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "tests passed" in out and "1 passed" in out, out
    assert "1 of 2 examples not as expected" in out and "wrong" in out, out
    assert "good" not in out.split("not as expected", 1)[1], out


def test_examples_that_match_pass_and_are_counted(tmp_path: Path) -> None:
    pack = _pack(tmp_path, examples={
        "a": {"status": "ok", "expect": {"status": "ok"}},
        "b": {"input": {"status": "no"}, "expect": {"status": "no",
                                                    "packs": ["acme.checked@1.0.0"]}},
    })
    done = _pack_test(pack)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "no tests" in out and "examples matched: 2 of 2" in out, out


def test_a_runner_that_raises_or_an_example_without_expectation_fails(tmp_path: Path) -> None:
    pack = _pack(tmp_path, tests=PASSING, examples={
        "broken": {"status": "ok", "raise": True, "expect": {"status": "ok"}},
        "unchecked": {"status": "ok"},
    })
    done = _pack_test(pack)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "2 of 2 examples not as expected" in out, out
    assert "the runner broke" in out and "nothing to check" in out, out
