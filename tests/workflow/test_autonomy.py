"""Progressive autonomy, driven by a simulated human who follows a hidden rule with noise."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.workflow import AutonomyBook, AutonomyError, Engine, RecordedClient, Stage
from cradle_kg.workflow.rules import Rule
from tests.workflow.conftest import ADMIN, ADMIN_TOKEN
from tests.workflow.flows import routing

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

WF, STEP = "routing", "route"


def hidden_rule(case: dict[str, object]) -> str:
    amount = case["amount"]
    assert isinstance(amount, int)
    return "review" if case["category"] == "invoice" and amount > 500 else "pay"


class Human:
    """Decides by the hidden rule, and gets it wrong with probability ``noise``."""

    def __init__(self, seed: int, noise: float) -> None:
        self.rng = random.Random(seed)
        self.noise = noise

    def case(self) -> dict[str, object]:
        return {"category": self.rng.choice(["quote", "invoice"]),
                "amount": self.rng.randint(10, 2000)}

    def decide(self, case: dict[str, object]) -> str:
        right = hidden_rule(case)
        if self.rng.random() < self.noise:
            return "pay" if right == "review" else "review"
        return right


def _book(rt: Runtime) -> AutonomyBook:
    return AutonomyBook(rt.journal, rt.approvals, append=rt.context.append, clock=rt.clock)


def _decide(rt: Runtime, human: Human, n: int, *, noise: float | None = None) -> None:
    engine = Engine(rt, client=RecordedClient([], label="no model in this workflow"))
    if noise is not None:
        human.noise = noise
    for _ in range(n):
        case = human.case()
        status = engine.start(routing(), case)
        assert status.status == "waiting_human"
        engine.decide(status.run_id, STEP, {"route": human.decide(case)}, by="user:carol")


def test_four_stages(wf_rt: Runtime, tmp_path: Path) -> None:
    human, book = Human(seed=7, noise=0.05), _book(wf_rt)
    _decide(wf_rt, human, 29)
    assert book.propose(WF, STEP, by="user:ops") is None
    assert not wf_rt.journal.events_of_kind("autonomy.proposed")
    assert book.state(WF, STEP).stage is Stage.OBSERVATION

    _decide(wf_rt, human, 21)
    proposal = book.propose(WF, STEP, by="user:ops")
    assert proposal is not None and proposal["sample_size"] == 50
    rule = Rule.model_validate(proposal["rule"])
    text = proposal["readable"]
    assert "if category == 'invoice':" in text and "if amount <= " in text
    history = book.history(WF, STEP)
    misses = [ev.id for ev, (inputs, label) in history if rule.decide(inputs) != label]
    assert [m["event"] for m in proposal["mismatches"]] == misses
    assert proposal["reproduction_rate"] == pytest.approx(1 - len(misses) / len(history))
    assert proposal["reproduction_rate"] >= 0.9

    book.shadow(WF, STEP, by="user:ops")
    _decide(wf_rt, human, 5, noise=0.0)
    with pytest.raises(AutonomyError, match="5 fresh decisions"):
        book.promote(WF, STEP, admin=ADMIN, token=ADMIN_TOKEN)
    _decide(wf_rt, human, 20, noise=0.0)
    requests = [e.payload for e in wf_rt.journal.events_of_kind("human.requested")][-20:]
    assert all(r["stage"] == "shadow" and r["suggestion"] in ("pay", "review")
               for r in requests)
    fresh = [(inputs, label) for ev, (inputs, label) in book.history(WF, STEP)
             if ev.seq > book.state(WF, STEP).shadow_since]
    agreed = sum(rule.decide(i) == label for i, label in fresh)
    assert book.agreement(book.state(WF, STEP)) == (len(fresh), agreed)
    assert agreed / len(fresh) >= 0.95

    with pytest.raises(ApprovalError):
        book.promote(WF, STEP, admin=ADMIN, token="wrong")
    with pytest.raises(AutonomyError, match="not an autonomy admin"):
        book.promote(WF, STEP, admin="user:bob", token="demo-token-bob")
    promoted = book.promote(WF, STEP, admin=ADMIN, token=ADMIN_TOKEN)
    assert promoted["admin"] == ADMIN and promoted["policy"]["min_agreement"] == 0.95

    engine = Engine(wf_rt, client=RecordedClient([], label="none"))
    inside = {"category": "invoice", "amount": 1500}
    auto = engine.start(routing(), inside)
    assert auto.status == "completed" and auto.outputs[STEP]["route"] == rule.decide(inside)
    assert [e.kind for e in wf_rt.journal.events(run_id=auto.run_id)].count("human.automated") == 1

    for outside, field in (({"category": "support", "amount": 100}, "category"),
                           ({"category": "quote", "amount": 10**7}, "amount")):
        st = engine.start(routing(), outside)
        assert st.status == "waiting_human"
        reasons = next(e.payload["reasons"] for e in wf_rt.journal.events(run_id=st.run_id)
                       if e.kind == "human.requested")
        assert any(f"`{field}`" in r and "outside the coverage" in r for r in reasons)

    book.halt(WF, STEP, by="user:ops", reason="audit in progress")
    halted = engine.start(routing(), inside)
    assert halted.status == "waiting_human"
    assert book.state(WF, STEP).stage is Stage.HALTED
    _stages_are_visible_in_the_graph(wf_rt, decided=29 + 21 + 5 + 20, automated=1)


def _stages_are_visible_in_the_graph(rt: Runtime, *, decided: int, automated: int) -> None:
    from rdflib import Dataset

    from cradle_kg.graph.project import project_nquads

    graph = Dataset()
    graph.parse(data=project_nquads(rt.journal.events()), format="nquads")
    rows = graph.query("""
        PREFIX cradle: <https://w3id.org/cradle#>
        PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
        SELECT ?stage ?seq WHERE { GRAPH ?g {
            ?audit cradle:records ?event ; cradle:seq ?seq .
            ?event cradle:autonomyStage ?stage ; cradle:subjectRef ?step .
            ?step a cradle:WorkflowStep . } } ORDER BY ?seq""")
    stages = [str(r[0]) for r in rows]  # type: ignore[index]
    changes = [s for s in stages if s not in ("human", "automated")]
    assert changes == ["proposal", "shadow", "promoted", "halted"]
    assert stages.count("human") == decided
    assert stages.count("automated") == automated


def test_a_human_who_disagrees_in_shadow_blocks_promotion(wf_rt: Runtime) -> None:
    human, book = Human(seed=3, noise=0.02), _book(wf_rt)
    _decide(wf_rt, human, 30)
    assert book.propose(WF, STEP, by="user:ops") is not None
    book.shadow(WF, STEP, by="user:ops")
    _decide(wf_rt, human, 20, noise=0.5)
    fresh, agreed = book.agreement(book.state(WF, STEP))
    assert fresh == 20 and agreed / fresh < 0.95
    with pytest.raises(AutonomyError, match="agreement"):
        book.promote(WF, STEP, admin=ADMIN, token=ADMIN_TOKEN)
    assert book.state(WF, STEP).stage is Stage.SHADOW


@pytest.mark.slow
def test_autonomy_cli(wf_home: Path) -> None:
    from typer.testing import CliRunner

    from cradle_kg.cli import app

    runner = CliRunner()
    home = ["--home", str(wf_home)]
    bob = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    none = runner.invoke(app, ["autonomy", "propose", WF, STEP, "--as", APPROVER, *home],
                         env=bob)
    assert none.exit_code == 1 and "nothing proposed" in none.output
    rt = Runtime(wf_home, graph_sync=False)
    _decide(rt, Human(seed=11, noise=0.0), 30)
    rt.close()
    shown = runner.invoke(app, ["autonomy", "propose", WF, STEP, "--as", APPROVER, *home],
                          env=bob)
    assert shown.exit_code == 0 and "route = " in shown.output
    assert runner.invoke(app, ["autonomy", "shadow", WF, STEP, "--as", APPROVER, *home],
                         env=bob).exit_code == 0
    refused = runner.invoke(app, ["autonomy", "promote", WF, STEP, "--as", ADMIN, *home],
                            env={"CRADLE_APPROVER_TOKEN": ADMIN_TOKEN})
    assert refused.exit_code == 1
    status = runner.invoke(app, ["autonomy", "status", WF, STEP, *home, "--format", "json"])
    assert '"stage": "shadow"' in status.output
    halt = runner.invoke(app, ["autonomy", "halt", WF, STEP, "--as", APPROVER, "--reason", "r",
                               *home], env=bob)
    assert halt.exit_code == 0
