"""The same calls through every route a real agent reaches the pack by: ``Runtime.submit``
(what ``replay.py``, the examples and the other tests use), the MCP gateway (``cradle-kg mcp
serve``'s server, driven by the MCP SDK's own client over its in-memory transport) and the
LangGraph adapter (``GovernedToolNode`` in a graph, and the tools of ``governed_tools``
invoked as LangChain invokes a tool). A route that answers a call
differently is a bug of that route: the verdict, the reason codes, the missing facts and
the benchmark's answer must be the same.

The calls are the benchmark's reference actions — every action of every task of τ-bench's
``tasks_test.py`` (the pack's ``tests/reference_actions.json``: MIT, see its
``PROVENANCE.md``), reads included
— in order, each task on the database as the data directory has it, with the customer's
statements its conversation supports (``replay.FACTS``: the yes, the reason, the
complaint). On MCP and LangGraph those statements and the customer the agent acts for are
the host application's documented keys (``_meta`` / the run's ``configurable``:
``cradle-kg/on_behalf_of``, ``cradle-kg/facts``), never the model's arguments. A reference
write the runtime refuses is then applied to the database outside any governance, as the
judge's replay does, so the next call sees what the benchmark's trajectory saw.

Before: through MCP, 0/49 policy-respecting writes executed (every customer statement the
host relayed was hearsay: `airline_fact_missing`; 51 of the 158 answers differed), and a
call whose id was missing or not a string was `target_mismatch` instead of the benchmark's
`Error: …`; the LangGraph adapter had no way to name the customer at all (every write
`forbidden_by_policy`: 56 differed); and a tool of ``governed_tools`` lost every argument
its contract does not declare as a field — all of the airline's, which keep the arguments
as sent — so all 158 answers differed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import testing

pytest.importorskip("mcp")
pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from mcp.shared.memory import create_connected_server_and_client_session

from cradle_kg.integrations.langgraph import GovernedToolNode, governed_tools, tool_name
from cradle_kg.integrations.mcp_server import build_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

PACK = Path(__file__).resolve().parents[2] / "packs" / "travel.airline"
AGENT = "agent:airline-assistant"
REFERENCE = json.loads((PACK / "tests" / "reference_actions.json").read_text(
    encoding="utf-8"))["tasks"]

#: one call: (tool, arguments as the agent sent them, customer, their statements)
Call = tuple[str, dict[str, Any], str, dict[str, str]]
#: a route: the calls of one conversation in, each one's answer out (applied in order;
#: ``after`` runs after each call with its answer, before the next)
Route = Callable[[testing.PackHome, list[Call], str,
                  Callable[[Call, dict[str, Any]], None]], list[dict[str, Any]]]


def _answer(status: str, body: dict[str, Any]) -> dict[str, Any]:
    """What a model reads, in one shape for every route."""
    if status == "executed":
        return {"status": status, "codes": [], "missing_facts": [],
                "output": body.get("output"), "reasons": []}
    return {"status": status, "codes": body.get("reason_codes", []),
            "missing_facts": body.get("missing_facts", []),
            "output": (body.get("output") or {}).get("output"),
            "reasons": body.get("reasons", [])}


def _meta(who: str, said: dict[str, str]) -> dict[str, Any]:
    return {"cradle-kg/on_behalf_of": who,
            "cradle-kg/facts": [{"subject": who, "predicate": p, "object": v}
                                for p, v in said.items()]}


_ENTRIES: dict[tuple[int, str], Any] = {}


def _entries(h: testing.PackHome, *names: str) -> list[Any]:
    """``h.entry`` of each name, once per home (an entry discovers the packs)."""
    return [_ENTRIES.setdefault((id(h), n), h.entry(n)) if (id(h), n) not in _ENTRIES
            else _ENTRIES[(id(h), n)] for n in names]


def in_process(h: testing.PackHome, calls: list[Call], conv: str,
               after: Callable[[Call, dict[str, Any]], None]) -> list[dict[str, Any]]:
    proposal, summary = _entries(h, "examples_runner:proposal", "examples_runner:summary")
    out = []
    for i, call in enumerate(calls):
        tool, args, who, said = call
        got = summary(h.runtime.submit(proposal(
            {"tool": tool, "arguments": args, "on_behalf_of": who,
             "facts": [[p, v] for p, v in said.items()]}, pid=f"{conv}-{i}")))
        answer = {k: got[k] for k in ("status", "codes", "missing_facts", "output",
                                      "reasons")}
        after(call, answer)
        out.append(answer)
    return out


def over_mcp(h: testing.PackHome, calls: list[Call], conv: str,
             after: Callable[[Call, dict[str, Any]], None]) -> list[dict[str, Any]]:
    async def session() -> list[dict[str, Any]]:
        out = []
        server = build_server(h.runtime, lambda: AGENT)
        async with create_connected_server_and_client_session(server) as s:
            for call in calls:
                tool, args, who, said = call
                r = await s.call_tool(f"airline.{tool}", args, meta=_meta(who, said))
                assert r.meta is not None and r.structuredContent is not None, r
                answer = _answer(str(r.meta["cradle-kg/status"]), r.structuredContent)
                after(call, answer)
                out.append(answer)
        return out
    return asyncio.run(session())


def over_langgraph(h: testing.PackHome, calls: list[Call], conv: str,
                   after: Callable[[Call, dict[str, Any]], None]) -> list[dict[str, Any]]:
    node = GovernedToolNode(h.runtime, AGENT)
    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    g.add_edge("tools", END)
    graph = g.compile()
    out = []
    for i, call in enumerate(calls):
        tool, args, who, said = call
        asked = AIMessage(content="", tool_calls=[{"name": tool_name(f"airline.{tool}"),
                                                   "args": args, "id": f"call-{i}"}])
        state = graph.invoke({"messages": [asked]}, {"configurable": {
            "thread_id": conv, **_meta(who, said)}})
        message = state["messages"][-1]
        body = message.artifact or {}
        status = "executed" if message.status == "success" else str(body.get("status"))
        answer = _answer(status, body)
        after(call, answer)
        out.append(answer)
    return out


def _from_text(text: str) -> dict[str, Any]:
    """A refused call as a tool of ``governed_tools`` answers it: the text of the result
    (``calls.render``), which is all a ``ToolException`` carries."""
    status = text.split(":", 1)[0]
    codes = re.findall(r"\[codes: ([^\]]*)\]", text)
    missing = re.search(r" - missing facts: (.*)$", text)
    answer = re.search(r"api_accepted: failed \((Error: .*)\)\. compensation: ", text)
    return {"status": status, "codes": codes[-1].split(", ") if codes else [],
            "missing_facts": missing.group(1).split(", ") if missing else [],
            "output": answer.group(1) if answer else None, "text": text}


def with_governed_tools(h: testing.PackHome, calls: list[Call], conv: str,
                        after: Callable[[Call, dict[str, Any]], None]
                        ) -> list[dict[str, Any]]:
    """The tools of ``governed_tools``, each invoked as LangChain invokes a tool (its
    arguments through the tool's schema), the host's keys in the config."""
    tools = {t.name: t for t in governed_tools(h.runtime, AGENT)}
    out = []
    for call in calls:
        tool, args, who, said = call
        got = tools[tool_name(f"airline.{tool}")].invoke(args, {"configurable": _meta(who,
                                                                                     said)})
        answer = (_answer("executed", got) if isinstance(got, dict)
                  else _from_text(str(got)))
        after(call, answer)
        out.append(answer)
    return out


ROUTES: dict[str, Route] = {"in-process": in_process, "mcp": over_mcp,
                            "langgraph": over_langgraph, "governed_tools": with_governed_tools}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The airline database ``pack init`` loads from the benchmark's data (the pack's
    ``tests/conftest.py`` does the same), copied into each home."""
    root = tmp_path_factory.mktemp("airline-template") / "home"
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CRADLE_JOURNAL_URL", raising=False)
        env.delenv("CRADLE_GRAPH_URL", raising=False)
        with testing.pack_home(PACK, root) as h:
            data = h.entry("db:default_data")()
            assert (data / "reservations.json").is_file(), f"the benchmark data is not at {data}"
            path = Path(h.entry("db:db_path")(root))
            h.entry("db:AirlineDB")(path).load(data, h.entry("db:DEFAULT_NOW"))
            return path


@pytest.fixture
def airline(template: Path, tmp_path: Path) -> Iterator[testing.PackHome]:
    with fresh(template, tmp_path / "home") as h:
        yield h


@contextmanager
def fresh(template: Path, root: Path) -> Iterator[testing.PackHome]:
    target = root / "travel-airline" / "airline.sqlite"
    target.parent.mkdir(parents=True)
    shutil.copyfile(template, target)
    with testing.pack_home(PACK, root) as bare:
        identities = bare.entry("setup:identities")()
    with testing.pack_home(PACK, root, config=identities) as h:
        yield h


def restore(template: Path, target: Path) -> None:
    """The database as ``pack init`` loaded it from the data directory (``template``,
    ``conftest.py``), copied page by page into the home's (its ``applied`` log included)."""
    with closing(sqlite3.connect(template)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def replay_on(route: Route, template: Path, root: Path) -> list[dict[str, Any]]:
    """Every reference action of every task through ``route``, one conversation a task."""
    rows: list[dict[str, Any]] = []
    with fresh(template, root) as h:
        writes, facts = h.entry("replay:WRITES"), h.entry("replay:FACTS")
        breaks = h.entry("replay:BREAKS_POLICY")
        apply_ungoverned = h.entry("replay:apply_ungoverned")
        target = Path(h.entry("db:db_path")(h.root))

        def after(call: Call, answer: dict[str, Any]) -> None:
            if call[0] in writes and answer["status"] != "executed":
                apply_ungoverned(h, {"name": call[0], "kwargs": call[1]})

        for t, task in enumerate(REFERENCE):
            restore(template, target)  # each task starts on the data directory
            who = f"customer:{task['user_id']}"
            calls = [(a["name"], a["kwargs"], who, {"airline:confirmed": "yes",
                                                    **facts.get(t, {})})
                     for a in task["actions"]]
            for a, answer in enumerate(route(h, calls, f"t{t}", after)):
                rows.append({"task": t, "action": a, "tool": calls[a][0],
                             "write": calls[a][0] in writes, "breaks": (t, a) in breaks,
                             **answer})
    return rows


@pytest.fixture(scope="module")
def replays(template: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, list[dict[str, Any]]]:
    return {name: replay_on(route, template, tmp_path_factory.mktemp(name) / "home")
            for name, route in ROUTES.items()}


def test_the_reference_replay_in_process_is_49_of_49_and_7_of_7(
        replays: dict[str, list[dict[str, Any]]]) -> None:
    """The baseline: ``replay.py``'s figures, on one home a route (rules decide from the
    database just before the call, so the judge's fresh homes are not needed)."""
    rows = [r for r in replays["in-process"] if r["write"]]
    good = [r for r in rows if not r["breaks"]]
    bad = [r for r in rows if r["breaks"]]
    assert (len(good), len(bad)) == (49, 7)
    assert [r for r in good if r["status"] != "executed"] == []
    assert [r for r in bad if r["status"] == "executed"] == []
    reads = [r for r in replays["in-process"] if not r["write"]]
    assert len(reads) == 102 and all(r["status"] == "executed" for r in reads)


def _own_ids(text: str) -> str:
    """``text`` without the ids the runtime derives from the proposal's (a human task's):
    each route's proposal ids are its own."""
    return re.sub(r"`task:[0-9a-f]+`", "`task:…`", text)


def same(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    """The same answer; a refusal ``governed_tools`` gives as text has the same status,
    codes, missing facts and benchmark answer, and says every reason."""
    reasons = [_own_ids(r) for r in expected["reasons"]]
    if "text" not in got:
        return {**expected, "reasons": reasons} == {**got, "reasons": [
            _own_ids(r) for r in got["reasons"]]}
    return ({k: v for k, v in got.items() if k != "text"}
            == {k: v for k, v in expected.items() if k != "reasons"}
            and all(r in _own_ids(got["text"]) for r in reasons))


@pytest.mark.parametrize("route", ["mcp", "langgraph", "governed_tools"])
def test_every_reference_call_answers_the_same_on_every_route(
        replays: dict[str, list[dict[str, Any]]], route: str) -> None:
    expected, got = replays["in-process"], replays[route]
    assert len(got) == len(expected) == 158
    differ = [(e, g) for e, g in zip(expected, got, strict=True) if not same(e, g)]
    writes = [g for g in got if g["write"]]
    figures = (f"{route}: policy-respecting writes executed "
               f"{sum(g['status'] == 'executed' for g in writes if not g['breaks'])}/49, "
               f"policy-breaking refused "
               f"{sum(g['status'] != 'executed' for g in writes if g['breaks'])}/7, "
               f"{len(differ)} of {len(got)} answers differ")
    assert differ == [], figures + "\n" + json.dumps(differ[:3], indent=1)[:4000]


#: calls whose id argument is missing or malformed (``test_api_errors.py``): the tool's
#: pattern is a wildcard or a glob-escaped id, and the benchmark answers each with its
#: own error (or, for an id with a `*`, that no such reservation exists)
MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("get_reservation_details", {}, "Error: GetReservationDetails.invoke() missing 1 "
     "required positional argument: 'reservation_id'"),
    ("get_reservation_details", {"reservation_id": 5}, "Error: user not found"),
    ("get_reservation_details", {"reservation_id": ["Z7GOZK"]},
     "Error: unhashable type: 'list'"),
    ("get_reservation_details", {"reservation_id": "Z7GO*K"}, "Error: user not found"),
    ("get_user_details", {"user_id": None}, "Error: user not found"),
    ("cancel_reservation", {}, "Error: CancelReservation.invoke() missing 1 required "
     "positional argument: 'reservation_id'"),
    ("cancel_reservation", {"reservation_id": 7}, "Error: reservation not found"),
    ("send_certificate", {"user_id": 7, "amount": 50}, "Error: user not found"),
    ("update_reservation_baggages", {"total_baggages": 1, "nonfree_baggages": 0,
                                     "payment_id": "credit_card_4421486"},
     "Error: UpdateReservationBaggages.invoke() missing 1 required positional argument: "
     "'reservation_id'"),
]


@pytest.mark.parametrize(("tool", "args", "error"), MALFORMED,
                         ids=[f"{t}-{json.dumps(a)[:40]}" for t, a, _ in MALFORMED])
def test_a_malformed_id_is_the_apis_error_on_every_route(
        airline: testing.PackHome, tool: str, args: dict[str, Any], error: str) -> None:
    """Before, MCP and LangGraph derived no target from an id that is missing or not a
    string (or holds a glob character) and denied the call as `target_mismatch`, where
    ``Runtime.submit`` answered the benchmark's own error: both now derive the target with
    the one ``ToolSpec.derive_target``."""
    who = "customer:olivia_gonzalez_2305"
    said = {"airline:confirmed": "yes", "airline:cancellationReason": "health"}
    # a conversation of its own per test: a journal shared by the module's tests (the
    # PostgreSQL backend's) must not see one proposal id twice in one run
    conv = uuid.uuid4().hex[:8]
    answers = {name: route(airline, [(tool, args, who, said)], f"m-{name}-{conv}",
                           lambda call, answer: None)[0]
               for name, route in ROUTES.items()}
    assert answers["in-process"]["output"] == error, answers
    for route in ("mcp", "langgraph", "governed_tools"):
        assert same(answers["in-process"], answers[route]), (route, answers)
    assert answers["in-process"]["codes"] == []


def test_governed_tools_take_the_hosts_keys_from_the_config(airline: testing.PackHome) -> None:
    """A tool of ``governed_tools`` invoked with the host's keys in its config: the customer
    and their statement reach the proposal; an unknown ``cradle-kg/`` key is refused, as
    on MCP; the model's arguments never carry them."""
    from langchain_core.tools import BaseTool

    tools: dict[str, BaseTool] = {t.name: t for t in governed_tools(airline.runtime, AGENT)}
    cancel = tools[tool_name("airline.cancel_reservation")]
    who = "customer:olivia_gonzalez_2305"
    bogus = cancel.invoke({"reservation_id": "Z7GOZK"}, {"configurable": {
        **_meta(who, {"airline:cancellationReason": "health"}), "cradle-kg/bogus": 1}})
    assert str(bogus).startswith("refused: `_meta`: `cradle-kg/bogus`"), bogus
    nobody = cancel.invoke({"reservation_id": "Z7GOZK"})
    assert "forbidden_by_policy" in str(nobody), nobody
    done = cancel.invoke({"reservation_id": "Z7GOZK"}, {"configurable": _meta(
        who, {"airline:cancellationReason": "health", "airline:confirmed": "yes"})})
    assert json.loads(done["output"])["status"] == "cancelled", done


OLIVIA = "olivia_gonzalez_2305"
#: call shapes real agents send — ids with stray whitespace or another case, numbers as
#: floats or strings, an argument left out or one the tool does not take — with what the
#: benchmark's own function answers on the same data (run through ``Env.step``'s ``try``
#: on ``tau_bench/envs/airline/tools``); None: its answer is a reservation's JSON, which
#: the route must give as the in-process one does
SHAPES: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    ("get_reservation_details", {"reservation_id": " Z7GOZK"}, OLIVIA, "executed",
     "Error: user not found"),
    ("get_reservation_details", {"reservation_id": "z7gozk"}, OLIVIA, "executed",
     "Error: user not found"),
    ("get_user_details", {"user_id": OLIVIA + " "}, OLIVIA, "executed",
     "Error: user not found"),
    ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20 "},
     OLIVIA, "executed", "[]"),
    ("search_direct_flight", {"origin": "jfk", "destination": "SEA", "date": "2024-05-20"},
     OLIVIA, "executed", "[]"),
    ("search_direct_flight", {"origin": "JFK", "destination": "SEA"}, OLIVIA, "executed",
     "Error: SearchDirectFlight.invoke() missing 1 required positional argument: 'date'"),
    ("calculate", {"expression": " 121*2 "}, OLIVIA, "executed", "242.0"),
    ("cancel_reservation", {"reservation_id": " Z7GOZK"}, OLIVIA, "verification_failed",
     "Error: reservation not found"),
    ("cancel_reservation", {"reservation_id": "Z7GOZK", "reason": "health"}, OLIVIA,
     "verification_failed",
     "Error: CancelReservation.invoke() got an unexpected keyword argument 'reason'"),
    ("send_certificate", {"user_id": OLIVIA + " ", "amount": 50}, OLIVIA,
     "verification_failed", "Error: user not found"),
    ("send_certificate", {"user_id": "ethan_martin_2396", "amount": 150.0},
     "ethan_martin_2396", "executed",
     "Certificate certificate_3221322 added to user ethan_martin_2396 with amount 150.0."),
    ("update_reservation_baggages", {"reservation_id": "Z7GOZK", "total_baggages": 1,
                                     "nonfree_baggages": 0}, OLIVIA, "verification_failed",
     "Error: UpdateReservationBaggages.invoke() missing 1 required positional argument: "
     "'payment_id'"),
    ("update_reservation_baggages", {"reservation_id": "Z7GOZK", "total_baggages": 1.0,
                                     "nonfree_baggages": 1.0,
                                     "payment_id": "credit_card_9969263"}, OLIVIA, "executed",
     None),
]


@pytest.mark.parametrize(("tool", "args", "who", "status", "answer"), SHAPES,
                         ids=[f"{t}-{json.dumps(a)[:48]}" for t, a, *_ in SHAPES])
def test_a_real_agents_call_shape_is_the_benchmarks_answer_on_every_route(
        template: Path, tmp_path: Path, tool: str, args: dict[str, Any], who: str,
        status: str, answer: str | None) -> None:
    """What the API does with it, the governed call answers, on every route: a read or a
    write the API refuses is its own answer word for word; a write it accepts executes when
    the policy allows it (a count as a float is the count: the schema's integer)."""
    said = {"airline:confirmed": "yes", "airline:cancellationReason": "health",
            "airline:compensationRequested": "delayed_flight"}
    answers = {}
    with fresh(template, tmp_path / "home") as h:
        target = Path(h.entry("db:db_path")(h.root))
        for name, route in ROUTES.items():
            restore(template, target)
            answers[name] = route(h, [(tool, args, f"customer:{who}", said)],
                                  f"s-{name}-{tmp_path.name}",
                                  lambda call, answer: None)[0]
    first = answers["in-process"]
    assert (first["status"], first["codes"]) == (status, []), first
    if answer is not None:
        assert first["output"] == answer
    for route in ("mcp", "langgraph", "governed_tools"):
        assert same(first, answers[route]), (route, answers)
