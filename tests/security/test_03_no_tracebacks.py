"""Item 3: no input gives a traceback — one line ``error: ...``, exit 2, nothing written.

Also: the journal records exactly what was submitted or refuses it (no NaN turned into
``null``), duplicate keys are refused, strings are not coerced to booleans or integers,
and an unexpected exception anywhere in a command is one line with exit 2.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.errors import ProposalError

from .inputcli import assert_refused, cli, credit, fresh_home, received

GOOD = json.dumps(credit("good"))


def _with(field: str, raw_value: str) -> str:
    """GOOD with one more top-level member, written as raw JSON text."""
    return GOOD[:-1] + f', "{field}": {raw_value}' + "}"


def _args(raw_value: str) -> str:
    return json.dumps(credit("args", action={"arguments": {"account": "a", "amount": 1,
                                                            "x": "@@"}})).replace(
        '"@@"', raw_value)


#: (name, stdin text, a word the error line must contain)
HOSTILE: list[tuple[str, str, str]] = [
    ("30,000-deep JSON", "[" * 30_000 + "]" * 30_000, "deep"),
    ("30,000-deep object", '{"a":' * 30_000 + "1" + "}" * 30_000, "deep"),
    ("900-deep arguments", _args("[" * 900 + "]" * 900), "deep"),
    ("900-deep fact", _with("facts", '[{"subject": "s", "predicate": "p", "source": "a", '
                                     '"object": ' + "[" * 900 + "]" * 900 + "}]"), "deep"),
    ("5,000-digit integer", _args("9" * 5000), "digits"),
    ("5,000-digit step", _with("step", "1" + "0" * 5000), "digits"),
    ("NaN confidence", _with("facts", '[{"subject": "s", "predicate": "p", "source": "a", '
                                      '"object": 1, "confidence": NaN}]'), "NaN"),
    ("Infinity confidence", _with("confidence", "Infinity"), "Infinity"),
    ("-Infinity argument", _args("-Infinity"), "Infinity"),
    ("1e999 argument", _args("1e999"), "1e999"),
    ("NaN amount", json.dumps(credit("nan")).replace('"amount": 3', '"amount": NaN'), "NaN"),
    ("lone surrogate id", GOOD.replace('"good"', '"\\ud800"', 1), "surrogate"),
    ("lone surrogate in arguments", _args('"x\\udfff"'), "surrogate"),
    ("lone surrogate key", _args('{"\\ud800": 1}'), "surrogate"),
    ("duplicate key", _with("id", '"other"'), "duplicate"),
    ("nested duplicate key", _args('{"k": 1, "k": 2}'), "duplicate"),
    ("dry_run as string", json.dumps(credit("dry", action={"dry_run": "false"})), "dry_run"),
    ("step as string", json.dumps(credit("step", step="1")), "step"),
    ("attempt as float", json.dumps(credit("att", attempt=1.0)), "attempt"),
    ("confidence as string", json.dumps(credit("conf", confidence="0.5")), "confidence"),
    ("a JSON string", '"hello"', "object"),
    ("truncated", GOOD[:40], "JSON"),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_home(tmp_path_factory.mktemp("tb") / "home")


@pytest.mark.parametrize(("name", "text", "needle"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_json_is_one_line_and_exit_2(home: Path, name: str, text: str,
                                             needle: str) -> None:
    done = cli("submit", "-", "--home", str(home), stdin=text)
    assert_refused(done, needle)
    assert received(home) == 0


def test_invalid_utf8_is_one_line(home: Path) -> None:
    done = cli("submit", "-", "--home", str(home), stdin=b'{"id": "\xff\xfe"}')
    assert_refused(done, "UTF-8")


PACK_CASES = ("30,000-deep JSON", "5,000-digit integer", "NaN amount", "lone surrogate key",
              "duplicate key")


@pytest.mark.parametrize(("name", "text", "needle"),
                         [c for c in HOSTILE if c[0] in PACK_CASES], ids=list(PACK_CASES))
def test_pack_run_examples_go_through_the_same_loader(home: Path, tmp_path: Path, name: str,
                                                      text: str, needle: str) -> None:
    file = tmp_path / "example.json"
    file.write_bytes(text.encode("utf-8"))
    done = cli("pack", "run", "customs.hs-router", str(file), "--home", str(home))
    assert_refused(done, needle)


def test_sdk_nan_amount_is_refused_not_journaled_as_null(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    with Runtime(path) as rt:
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(ProposalError):
                rt.submit(credit("nan", action={"arguments": {"account": "a", "amount": bad}}))
            with pytest.raises(ProposalError):
                rt.submit(credit("nanc", facts=[{"subject": "s", "predicate": "p",
                                                  "object": bad, "source": "a"}]))
        assert rt.journal.verify().events == 0


def test_sdk_refuses_lone_surrogates_and_deep_python_values(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    deep: Any = 1
    for _ in range(5000):
        deep = {"k": deep}
    with Runtime(path) as rt:
        for bad in (credit("\ud800"), credit("d", action={"arguments": {"x": deep}}),
                    credit("i", action={"arguments": {"amount": 10**5000 if False else
                                                      int("9" * 4000)}})):
            with pytest.raises(ProposalError):
                rt.submit(bad)
        assert rt.journal.verify().events == 0


def test_a_pack_that_raises_on_import_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    pack = path / "packs" / "boom.pack"
    pack.mkdir(parents=True)
    (pack / "manifest.yaml").write_text("id: boom.pack\nname: boom\nversion: 1.0.0\n"
                                        "core_ontology: '>=0.1.0'\ntools:\n  - tools:t\n")
    (pack / "__init__.py").write_text("")
    (pack / "tools.py").write_text("raise RuntimeError('boom\\nsecond line ' + 'x' * 200)\n")
    config = load_config(path / "config.json")
    save_config(path / "config.json",
                config.model_copy(update={"packs": (*config.packs, "boom.pack")}))
    done = cli("tools", "list", "--home", str(path))
    assert_refused(done, "boom")


def test_an_old_config_naming_plugins_is_refused_in_one_line(tmp_path: Path) -> None:
    path = fresh_home(tmp_path / "home")
    raw = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**raw, "plugins": ["x.y:register"]}))
    done = cli("tools", "list", "--home", str(path))
    assert_refused(done, "`plugins` is no longer read")


def test_error_lines_are_not_wrapped_when_piped(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")  # with a journal: `runs show` answers its own error
    with Runtime(home) as rt:
        assert rt.submit(credit("p-first")).status == "executed"
    long_name = "x" * 150
    done = cli("runs", "show", long_name, "--home", str(home), columns=None)
    assert_refused(done, long_name)
