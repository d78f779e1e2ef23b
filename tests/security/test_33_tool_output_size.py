"""A tool's answer is bounded before it reaches the journal.

Finding: what a tool answered was journaled whole in ``action.observed`` — whatever its
size. A proposal is capped at ``max_bytes`` (1 MiB), but one call to an upstream MCP tool
(``cradle-kg mcp proxy``) that answers 24 MB grew the journal by 48 MB (measured: the
database and its WAL; and every copy, backup and ``journal copy`` of it after); an
upstream, or any tool reading attacker-sized content, filled the disk a call at a
time. An output is now held to ``input_limits.max_output_bytes`` (16 MiB by default, its
canonical JSON): past it the observation keeps the output's sha256 and size but not the
output, the output breaks its contract — gate 2 still reads the state back, the call
``failed``, a human task — and the journal grows by about 100 KB (measured), as for any
call.

What holds (checked here): an answer within the limit is journaled whole and executes.
"""

from __future__ import annotations

import os
from pathlib import Path

from cradle_kg.config import load_config, save_config
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.opening import home_journal_target, verify_target
from tests.security.test_28_hostile_upstream import OK_SCHEMA, _call, _proxy

LIMIT = 2 * 1024 * 1024


def _journal_bytes(home: Path) -> int:
    target = Path(home_journal_target(home))
    return sum(os.path.getsize(p) for p in target.parent.glob(target.name + "*"))


def _limit(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"max_output_bytes": LIMIT})}))


def test_an_answer_past_the_limit_is_not_journaled(home: Path) -> None:
    big = {"ok": True, "text": "x" * (12 * LIMIT)}  # 24 MB
    small = {"ok": True, "text": "y" * (LIMIT // 2)}
    _limit(home)
    before = _journal_bytes(home)
    rt, results, called = _proxy(home, {"big": big, "small": small},
                                 {"big": OK_SCHEMA, "small": OK_SCHEMA},
                                 [_call("p-big", "big"), _call("p-small", "small")])
    try:
        out, fine = results
        assert not isinstance(out, BaseException), out
        assert called[:2] == ["big", "read"]  # the call happened; gate 2 read the state
        assert out.status is OutcomeStatus.FAILED
        assert any("max_output_bytes" in r for r in out.reasons), out.reasons
        observed = next(e for e in rt.journal.events(run_id=out.run_id)
                        if e.kind == "action.observed")
        assert observed.payload["observation"]["output"] == {}
        assert len(str(observed.payload)) < 4096
        assert not isinstance(fine, BaseException), fine
        assert fine.status is OutcomeStatus.EXECUTED, fine.reasons
    finally:
        rt.close()
    grown = _journal_bytes(home) - before
    assert grown < 6 * LIMIT, f"the journal grew by {grown} bytes"
    assert verify_target(home_journal_target(home)).intact
