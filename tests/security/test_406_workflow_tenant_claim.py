"""A workflow's model calls are charged to its agent's configured tenant, never to the
tenant its file names.

Finding (twenty-third review: workflows and budgets): identity comes from configuration —
a proposal naming a tenant other than its agent's configured one is denied
(``tenant_mismatch``), and rate limits use the configured tenant — but a workflow's model
calls were charged to the ``tenant:`` its file wrote (``Workflow.tenant``), whatever its
agent's tenant. A file handed to the operator with ``tenant: acme`` for
``agent:ledger-assistant`` (configured in ``default``) ran three model calls past a
``default`` tenant budget of one call, each charged to ``acme`` — another client's budget
spent, its own never reached; a file that leaves ``tenant`` out charged ``default`` for an
agent of any tenant.

Now: a start whose workflow names a tenant other than its agent's configured one (an agent
not configured: ``default``, as its intents are counted) is refused, ``tenant_mismatch``,
nothing journaled — the tenant the run records, and its calls are charged to, is its agent's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import InputError
from cradle_kg.workflow import Budget, BudgetBook, Engine, ModelResponse, RecordedClient
from cradle_kg.workflow.definitions import load_file

pytestmark = pytest.mark.usefixtures("journal_backend")


def _flow(tmp_path: Path, tenant: str | None) -> Path:
    flow = tmp_path / "w.yaml"
    flow.write_text(f"""workflow: w
version: "1"
agent: {AGENT}
{f"tenant: {tenant}" if tenant else ""}
input: {{type: object, properties: {{x: {{type: string}}}}, required: [x]}}
steps:
  - id: ask
    kind: model
    model: m1
    prompt: say something
    cost: 1
    inputs: {{x: input.x}}
    output: {{type: object, properties: {{a: {{type: string}}}}, required: [a]}}
""", encoding="utf-8")
    return flow


def _client() -> RecordedClient:
    return RecordedClient([ModelResponse(model="m1", content='{"a": "b"}',
                                         source="recorded")], label="test")


def _home(tmp_path: Path, tenant: str = "default") -> Path:
    home = tmp_path / "home"
    prepare_home(home)
    config = load_config(home / "config.json")
    agents = tuple(a.model_copy(update={"tenant": tenant}) if a.id == AGENT else a
                   for a in config.agents)
    save_config(home / "config.json", config.model_copy(update={"agents": agents}))
    return home


def _budget(rt: Runtime, tenant: str) -> None:
    book = BudgetBook(rt.journal)
    rt.context.append([book.set_event(Budget(level="tenant", subject=tenant, limit=1),
                                      by="user:ops", now=rt.clock())])


@pytest.mark.parametrize("agent_tenant,file_tenant", [("default", "acme"), ("acme", None)])
def test_a_file_naming_another_tenant_is_refused(tmp_path: Path, agent_tenant: str,
                                                  file_tenant: str | None) -> None:
    home = _home(tmp_path, agent_tenant)
    workflow = load_file(_flow(tmp_path, file_tenant))
    with Runtime(home, graph_sync=False) as rt:
        _budget(rt, agent_tenant)
        before = rt.journal.head()
        done: list[str] = []
        for i in range(3):
            try:
                done.append(Engine(rt, client=_client()).start(workflow, {"x": str(i)}).status)
            except InputError as exc:
                assert exc.code == "tenant_mismatch", exc.message
                assert agent_tenant in exc.message
        # before: three runs completed, each call charged to the file's tenant
        assert done == [], f"ran past the {agent_tenant!r} budget of one call: {done}"
        assert rt.journal.head() == before, "a refused start journaled something"
        assert BudgetBook(rt.journal).spent("tenant", agent_tenant) == 0.0


def test_the_agents_own_tenant_is_charged(tmp_path: Path) -> None:
    home = _home(tmp_path, "acme")
    workflow = load_file(_flow(tmp_path, "acme"))
    with Runtime(home, graph_sync=False) as rt:
        _budget(rt, "acme")
        first = Engine(rt, client=_client()).start(workflow, {"x": "1"})
        second = Engine(rt, client=_client()).start(workflow, {"x": "2"})
        assert first.status == "completed"
        assert (second.status, second.code) == ("failed", "budget_exceeded_tenant")
        assert BudgetBook(rt.journal).spent("tenant", "acme") == 1.0
