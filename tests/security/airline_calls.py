"""A ``travel.airline`` home loaded from the benchmark's data (``pack init``), and one call
of the benchmark's API through ``Runtime.submit`` as the pack's examples make it: the
customer named in ``on_behalf_of``, their statements as ``[predicate, value]`` facts whose
source is that customer. The journal is whatever backend the suite runs on."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from cradle_kg import Runtime
from tests.packs.test_pack_init import _data, invoke

AGENT = "agent:airline-assistant"
YES = [["airline:confirmed", "yes"]]


@contextmanager
def airline_runtime(tmp_path: Path) -> Iterator[Runtime]:
    home = tmp_path / "home"
    code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()),
                       "--home", str(home))
    assert code == 0, out
    with Runtime(home, graph_sync=False) as rt:
        yield rt


def submit(rt: Runtime, tool: str, uid: str, arguments: dict[str, Any],
           facts: list[list[str]] | None = None, *,
           run_id: str | None = None) -> tuple[str, list[str]]:
    """(status, reason codes) of ``airline.<tool>`` called for ``customer:<uid>`` (in
    ``run_id``, else a run of its own)."""
    who = f"customer:{uid}"
    target = (f"reservation:{arguments['reservation_id']}" if "reservation_id" in arguments
              else f"customer:{arguments['user_id']}")
    pid = f"p-{uuid.uuid4().hex[:12]}"
    out = rt.submit({
        "id": pid, "task_id": f"task-{pid}", "agent_id": AGENT, "on_behalf_of": who,
        "facts": [{"subject": who, "predicate": p, "object": v, "source": who}
                  for p, v in (YES if facts is None else facts)],
        "action": {"action_type": f"airline.{tool}", "target": target,
                   "arguments": arguments},
        **({"run_id": run_id} if run_id else {})})
    return str(out.status), list(out.decision.reason_codes) if out.decision else []


def reservation(rt: Runtime, rid: str) -> str:
    """The reservation's document as the airline's database holds it."""
    path = rt.home.root / "travel-airline" / "airline.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("SELECT doc FROM reservations WHERE reservation_id = ?",
                                (rid,)).fetchone()[0])


def segments(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"flight_number": n, "date": d} for n, d in pairs]
