"""Replay the benchmark's reference write actions through the pack, each on a fresh home.

    python packs/travel.airline/replay.py --data ../shared/data/tau-airline \\
        --tasks PATH/tau_bench/envs/airline/tasks_test.py [--only 0,3] [--format json]

The shared data (``../shared/data/tau-airline``) holds the policy and the database, **not
the benchmark's tasks**: their reference actions are in ``tasks_test.py`` of
``sierra-research/tau-bench`` (MIT), which ``--tasks`` names (read with :mod:`ast`, never
imported). For every task, the database starts as the data directory; before each write
the current database is written out in the benchmark's format and loaded into a fresh
home (``pack init``), exactly as the judge replays a call on "the database as it was just
before that call" with no journal history; the call is proposed with the customer facts
its conversation supports (``FACTS``: the customer confirmed; the reason or complaint the
task's instruction gives). Whatever the verdict, the reference action is then applied to
the database, so the next call sees what the benchmark's trajectory saw.

``BREAKS_POLICY`` lists the reference writes that break the written policy, each with the
sentence they break; every other reference write must execute. Exit 0 when both hold.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cradle_kg.packs import testing  # noqa: E402
from cradle_kg.packs.sdk import PackContext  # noqa: E402

PACK = testing.pack_folder(__file__)
WRITES = ("book_reservation", "cancel_reservation", "update_reservation_flights",
          "update_reservation_baggages", "update_reservation_passengers", "send_certificate")

#: what the conversation of each task supports, beyond the customer's yes: the reason they
#: give for cancelling and what they complain of (from the task's instruction)
FACTS: dict[int, dict[str, str]] = {
    1: {"airline:cancellationReason": "health"},          # "as you feel unwell"
    8: {"airline:cancellationReason": "change_of_plan"},  # cancel and book another
    9: {"airline:cancellationReason": "change_of_plan"},
    10: {"airline:cancellationReason": "change_of_plan"},
    16: {"airline:compensationRequested": "delayed_flight"},
    26: {"airline:cancellationReason": "other"},
    27: {"airline:cancellationReason": "other"},
    28: {"airline:cancellationReason": "other"},          # give the seat to someone else
    30: {"airline:cancellationReason": "other"},          # duplicate bookings
    31: {"airline:cancellationReason": "other"},
    33: {"airline:cancellationReason": "other"},
    34: {"airline:cancellationReason": "other"},
    45: {"airline:compensationRequested": "delayed_flight"},
    46: {"airline:compensationRequested": "delayed_flight"},
}

#: (task, index of the action in the task) → the sentence of wiki.md the reference breaks
BREAKS_POLICY: dict[tuple[int, int], str] = {
    (10, 0): "Otherwise, basic economy or economy flights can be cancelled only if travel "
             "insurance is bought and the condition is met (H9ZU1C: economy, no insurance, "
             "booked 2024-05-01, no flight cancelled)",
    (19, 1): "Other reservations can be modified without changing the origin, destination, "
             "and trip type (VA5SGQ: DTW-LGA round trip changed to DTW-JFK)",
    (19, 2): "If the booking user is a regular member, ... 1 free checked bag for each economy "
             "passenger (VA5SGQ: the one bag added is free, charged as non-free)",
    (23, 4): "If the booking user is a gold member, ... 3 free checked bag for each economy "
             "passenger (HXDUBJ: the two bags added are free, charged as non-free)",
    (26, 0): "The agent can only cancel the whole trip that is not flown (NQNU5R: both "
             "segments landed on 2024-05-13 and 2024-05-14)",
    (27, 0): "The agent can only cancel the whole trip that is not flown (NQNU5R, as above)",
    (34, 5): "Otherwise, basic economy or economy flights can be cancelled only if travel "
             "insurance is bought and the condition is met (XEHM4B: no insurance, booked "
             "2024-05-01, no flight cancelled)",
}


def read_tasks(path: Path) -> list[dict[str, Any]]:
    """The tasks of a τ-bench tasks file — ``Task(...)`` literals (``tasks_test.py``) or the
    older list of dicts (``tasks = [...]``, ``tasks.py``): user and actions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tasks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Task":
            kw = {k.arg: k.value for k in node.keywords}
            actions = []
            for act in kw["actions"].elts:  # type: ignore[attr-defined]
                args = {k.arg: ast.literal_eval(k.value) for k in act.keywords}
                actions.append({"name": args["name"], "kwargs": args.get("kwargs", {})})
            tasks.append({"user_id": ast.literal_eval(kw["user_id"]), "actions": actions})
    if tasks:
        return tasks
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "tasks"
                                                for t in stmt.targets):
            return [{"user_id": t["user_id"],
                     "actions": [{"name": a["name"], "kwargs": a.get("arguments", {})}
                                 for a in t["actions"]]}
                    for t in ast.literal_eval(stmt.value)]
    return []


def replay(data: Path, tasks: list[dict[str, Any]], only: set[int] | None = None, *,
           facts: dict[int, dict[str, str]] | None = None,
           breaks: dict[tuple[int, int], str] | None = None) -> Iterator[dict[str, Any]]:
    """Each reference write of ``tasks`` on a fresh home holding the database as it was
    just before it; ``facts`` / ``breaks`` default to this module's tables."""
    facts = FACTS if facts is None else facts
    breaks = BREAKS_POLICY if breaks is None else breaks
    with tempfile.TemporaryDirectory(prefix="airline-replay-") as tmp_name:
        tmp = Path(tmp_name)
        n = 0
        for t_index, task in enumerate(tasks):
            if only is not None and t_index not in only:
                continue
            state = tmp / f"state-{t_index}"
            current = data
            for a_index, action in enumerate(task["actions"]):
                if action["name"] not in WRITES:
                    continue
                n += 1
                who = f"customer:{task['user_id']}"
                said = {"airline:confirmed": "yes", **facts.get(t_index, {})}
                with fresh_home(tmp / f"home-{n}", current) as home:
                    row = run_one(home, action, who, said, f"t{t_index}-a{a_index}")
                    if row["status"] != "executed":
                        apply_ungoverned(home, action)
                    dump(home, state)
                row.update(task=t_index, action=a_index,
                           breaks=breaks.get((t_index, a_index)))
                yield row
                current = state


@contextmanager
def fresh_home(root: Path, data: Path) -> Iterator[testing.PackHome]:
    """A new home with the pack loaded and its database loaded from ``data`` — what
    ``pack init`` does: the pack's ``init`` hook, and the identities it returns."""
    with testing.pack_home(PACK, root) as bare:
        identities = bare.entry("setup:identities")()
    with testing.pack_home(PACK, root, config=identities) as home:
        ctx = PackContext(pack_id="travel.airline", version="1.0.0", folder=PACK, home=root,
                          clock=lambda: datetime.now(UTC))
        home.entry("setup:init")(ctx, data, None)
        yield home


def run_one(home: testing.PackHome, action: dict[str, Any], who: str, facts: dict[str, str],
            pid: str) -> dict[str, Any]:
    proposal = home.entry("examples_runner:proposal")
    summary = home.entry("examples_runner:summary")
    call = {"tool": action["name"], "arguments": action["kwargs"], "on_behalf_of": who,
            "facts": [[p, v] for p, v in facts.items()]}
    got: dict[str, Any] = summary(home.runtime.submit(proposal(call, pid=pid)))
    got["tool"] = action["name"]
    return got


def _db(home: testing.PackHome) -> Any:
    return home.entry("db:AirlineDB")(home.entry("db:db_path")(home.root))


def apply_ungoverned(home: testing.PackHome, action: dict[str, Any]) -> None:
    """The reference trajectory did it: apply it to the database, outside any governance."""
    writes, view = home.entry("api:WRITES"), home.entry("api:View")
    with _db(home).writing() as conn:
        v = view(conn, home.entry("tools:created_at")(conn))
        if not writes[action["name"]](v, **action["kwargs"]).startswith("Error:"):
            v.flush()


def dump(home: testing.PackHome, folder: Path) -> None:
    """The database written out in the benchmark's format."""
    store = _db(home).store
    folder.mkdir(parents=True, exist_ok=True)
    for table, key in (("users", "user_id"), ("flights", "flight_number"),
                       ("reservations", "reservation_id")):
        rows = store.rows(f"SELECT {key}, doc FROM {table} ORDER BY rowid")  # fixed names
        (folder / f"{table}.json").write_text(json.dumps({k: json.loads(d) for k, d in rows}),
                                              encoding="utf-8")


def default_data() -> Path:
    with tempfile.TemporaryDirectory() as tmp, testing.pack_home(PACK, Path(tmp) / "h") as h:
        found: Path = h.entry("db:default_data")()
        return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--tasks", type=Path, default=None)
    parser.add_argument("--only", default=None, help="task indexes, comma-separated")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    ns = parser.parse_args(argv)
    ns.data = ns.data or default_data()
    tasks_file = ns.tasks or next((p for p in (ns.data / "tasks_test.py", ns.data / "tasks.py")
                                   if p.is_file()), None)
    if tasks_file is None:
        print(f"error: `{ns.data}` holds no benchmark tasks (its README lists the policy and "
              "the database only); pass --tasks PATH to tau_bench/envs/airline/tasks_test.py "
              "of sierra-research/tau-bench", file=sys.stderr)
        return 2
    only = {int(x) for x in ns.only.split(",")} if ns.only else None
    rows = list(replay(ns.data, read_tasks(tasks_file), only))
    good = [r for r in rows if not r["breaks"]]
    bad = [r for r in rows if r["breaks"]]
    blocked = [r for r in good if r["status"] != "executed"]
    passed = [r for r in bad if r["status"] == "executed"]
    if ns.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            mark = "ok " if (r["status"] == "executed") != bool(r["breaks"]) else "BAD"
            print(f"{mark} task {r['task']:>2} action {r['action']:>2} {r['tool']:<30} "
                  f"{r['status']:<20} {'; '.join(r['reasons'])[:200]}")
            if r["breaks"]:
                print(f"      breaks: {r['breaks']}")
    print(f"policy-respecting reference writes executed: {len(good) - len(blocked)}/{len(good)}"
          f"; policy-breaking refused: {len(bad) - len(passed)}/{len(bad)}", file=sys.stderr)
    return 0 if not blocked and not passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
