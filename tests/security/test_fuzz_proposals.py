"""Property-based fuzzing of everything an agent can hand the runtime as a proposal.

Random, malformed, oversized and deeply nested proposals go through ``Runtime.submit``
(in process) and through ``cradle-kg submit`` and other commands (real processes, under a
memory ceiling). Whatever the input: no traceback and no *unexpected* exception, an exit
code in {0, 1, 2} (an error is one line), and the journal verifies afterwards.
"""

from __future__ import annotations

import json
import math
import os
import resource
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cradle_kg import Runtime
from cradle_kg.errors import CradleError
from cradle_kg.records import Outcome
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from .inputcli import cli, credit, fresh_home

_scalars = (st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40)
            | st.sampled_from(["\ud800", "\x1b[2J", "[conceal]x", "false", "1", "a" * 300]))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@st.composite
def _deep(draw: st.DrawFn) -> Any:
    value: Any = draw(_scalars)
    for _ in range(draw(st.integers(min_value=20, max_value=1500))):
        value = [value] if draw(st.booleans()) else {"k": value}
    return value


_FIELDS = ["id", "task_id", "agent_id", "action", "facts", "evidence_refs", "confidence",
           "alternatives", "run_id", "step", "attempt", "on_behalf_of", "tenant", "surprise"]


@st.composite
def proposals(draw: st.DrawFn) -> dict[str, Any]:
    """A valid credit with a few of its fields (or its arguments) replaced by junk."""
    proposal = credit(f"fz-{draw(st.integers(0, 10**6))}")
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from(_FIELDS))
        proposal[field] = draw(_json | _deep())
    if draw(st.booleans()):
        proposal["action"] = {**credit("x")["action"], "arguments": {
            "account": "acct-f", "amount": draw(_scalars), "extra": draw(_json | _deep())}}
    return proposal


def _text(proposal: dict[str, Any], mutation: int) -> str:
    text = json.dumps(proposal)  # NaN/Infinity and lone surrogates pass through as JSON text
    if mutation == 1:
        return text[: len(text) // 2]
    if mutation == 2:
        return text[:-1] + ', "id": "dup"}'
    if mutation == 3:
        return "[" * 40_000 + text + "]" * 40_000
    return text


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose journal already holds a call: a journal with no event at all is not
    one `verify` calls intact (its genesis is missing), and a fuzzed first example that
    is refused journals nothing."""
    path = fresh_home(tmp_path_factory.mktemp("fuzz") / "home")
    with Runtime(path, graph_sync=False) as rt:
        assert rt.submit(credit("fz-warm-up")).ok
    return path


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(proposal=proposals())
def test_runtime_submit_never_raises_anything_but_a_typed_error(home: Path,
                                                                proposal: dict[str, Any]
                                                                ) -> None:
    with Runtime(home, graph_sync=False) as rt:
        try:
            outcome = rt.submit(proposal)
        except CradleError as exc:
            assert "\n" not in exc.message
        else:
            assert isinstance(outcome, Outcome)
            recorded = rt.journal.events_for_subject(proposal["id"])
            assert all(math.isfinite(v) for v in _floats(recorded[0].payload))
        assert rt.journal.verify().intact


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


@settings(max_examples=16, deadline=None, suppress_health_check=list(HealthCheck))
@given(proposal=proposals(), mutation=st.integers(0, 4),
       command=st.sampled_from(["submit", "submit", "submit", "runs show", "approvals show",
                                "pack run"]),
       word=st.text(min_size=1, max_size=300).filter(lambda t: "\x00" not in t
                                                     and not t.startswith("-")))
def test_the_cli_answers_every_input_in_one_line(home: Path, tmp_path_factory:
                                                 pytest.TempPathFactory,
                                                 proposal: dict[str, Any], mutation: int,
                                                 command: str, word: str) -> None:
    text = _text(proposal, mutation)
    if command == "submit":
        done = cli("submit", "-", "--home", str(home), stdin=text)
    elif command == "pack run":
        file = tmp_path_factory.mktemp("ex") / "example.json"
        file.write_bytes(text.encode("utf-8", "surrogatepass"))
        done = cli("pack", "run", "customs.hs-router", str(file), "--home", str(home))
    elif command == "runs show":
        done = cli("runs", "show", word.encode("utf-8", "replace").decode("utf-8"),
                   "--home", str(home))
    else:
        done = cli("approvals", "show", word.encode("utf-8", "replace").decode("utf-8"),
                   "--as", word[:40].encode("utf-8", "replace").decode("utf-8"),
                   "--home", str(home))
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "error: unexpected " not in done.stderr, done.stderr[-2000:]
    if done.returncode == 2:
        lines = [ln for ln in done.stderr.splitlines() if ln and not ln.startswith("  hint:")]
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]


def test_after_the_fuzzing_the_journal_verifies_and_memory_stayed_bounded(home: Path) -> None:
    done = cli("audit", "verify", "--home", str(home), "--format", "json")
    if (home / "journal.sqlite").exists() or os.environ.get(JOURNAL_URL_ENV):
        assert done.returncode == 0 and json.loads(done.stdout)["intact"], done.stdout
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak_kib < 1024 * 1024, f"a child process peaked at {peak_kib} KiB"


@pytest.mark.parametrize("value", [10**19, "\ud800", float("nan"),
                                   json.loads("[" * 40 + "]" * 40)])
def test_a_key_holding_a_line_break_stays_on_one_line_in_the_refusal(
        home: Path, value: Any) -> None:
    """Found by the fuzzer: a refusal names where the bad value sits, and a hostile key
    there (a line break, a control character) is written as an escape."""
    body = credit("fz-key", action={"arguments": {"account": "acct-f", "amount": 1,
                                                  "extra": {"a\nb\u2028\x1b": value}}})
    with Runtime(home, graph_sync=False) as rt:
        before = rt.journal.head()
        with pytest.raises(CradleError) as refused:
            rt.submit(body)
        assert rt.journal.head() == before
    message = refused.value.message
    assert not any(ch in message for ch in "\n\u2028\x1b\ud800"), message
    assert "a\\nb\\u2028\\x1b" in message, message
