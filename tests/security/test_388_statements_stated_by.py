"""Who said it: a statement the agent wrote in someone else's name is the agent's.

Finding (the twenty-second review, provenance answers): a fact's ``source`` is the
agent's to write, on ``POST /api/proposals``, but for two values: the host's
(``host:…``, ``test_59``) and the principal's the proposal acts for (``on_behalf_of``,
``test_151``). Anything else went through — and ``travel.airline``'s
``customer-statements`` ("who said it: the customer, or someone else") answered *who*
with that ``source`` as written. An agent whose proposal named no principal (or another
one) wrote ``"source": "customer:olivia_gonzalez_2305"`` on
``airline:compensationRequested`` and ``airline:cancellationReason``: the answer said
Olivia had asked for compensation and given a reason — she had said nothing, and the pack
had rightly read both as the agent's hearsay. An auditor could not tell it from her own
word relayed by the host. (``why-cancelled`` held: a cancellation runs only on the
customer's own reason, which the agent cannot write.)

Now the projection says on each fact whether it is the host's word
(``cradle:hostStated true``: a ``host:`` source, or the principal's own — what only the
host may write), and the query gives as ``statedBy`` the source of such a fact only; of
any other, the agent that proposed it (its IRI), with the source it claimed in
``claimedSource``. A real home with the pack (``pack init travel.airline``), the agent's
token on the JSON API, the named queries through ``cradle-kg query``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from tests.packs.test_pack_init import _data, invoke

from .answers import answer
from .homes import json_api
from .mcp_http import token_for

AGENT = "agent:airline-assistant"
AGENT_IRI = "https://w3id.org/cradle/id/agent/agent%3Aairline-assistant"
OLIVIA = "customer:olivia_gonzalez_2305"


def _cancel(pid: str, on_behalf_of: str | None, *facts: tuple[str, str, str]
            ) -> dict[str, Any]:
    return {"id": pid, "task_id": "task-cancel", "agent_id": AGENT, "run_id": f"run:{pid}",
            "on_behalf_of": on_behalf_of,
            "facts": [{"subject": OLIVIA, "predicate": p, "object": o, "source": s}
                      for p, o, s in facts],
            "action": {"action_type": "airline.cancel_reservation",
                       "target": "reservation:Z7GOZK",
                       "arguments": {"reservation_id": "Z7GOZK"}}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("said") / "home"
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CRADLE_JOURNAL_URL", raising=False)
        env.delenv("CRADLE_GRAPH_URL", raising=False)
        code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()),
                           "--home", str(root))
        assert code == 0, out
        token = token_for(root, AGENT)
        with Runtime(root) as rt:
            # the host relays Olivia's own reason (Runtime.submit is the host): executed
            host = rt.submit(_cancel("p-host", OLIVIA,
                                     ("airline:cancellationReason", "health", OLIVIA),
                                     ("airline:confirmed", "yes", OLIVIA)))
            assert host.status.value == "executed", host
            with json_api(rt) as client:
                # the agent, with its own token, in Olivia's name but for no principal
                forged = client.post("/api/proposals", headers={
                    "Authorization": f"Bearer {token}"}, json=_cancel(
                        "p-agent", None, ("airline:compensationRequested", "yes", OLIVIA),
                        ("airline:cancellationReason", "weather", OLIVIA)))
                assert forged.status_code == 200, forged.text
    return root


def test_customer_statements_say_who_said_it(home: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the home was built on its own SQLite journal and store (above): asked of them too,
    # whatever journal the suite runs on (`--journal-backend postgresql`)
    monkeypatch.delenv("CRADLE_JOURNAL_URL", raising=False)
    monkeypatch.delenv("CRADLE_GRAPH_URL", raising=False)
    said = {(r["predicate"], r["value"]): r for r in answer(home, "customer-statements")}
    assert said["airline:cancellationReason", "health"]["statedBy"] == OLIVIA
    for key in (("airline:compensationRequested", "yes"),
                ("airline:cancellationReason", "weather")):
        # before: statedBy Olivia, as her own word
        assert said[key]["statedBy"] == AGENT_IRI, said[key]
        assert said[key]["claimedSource"] == OLIVIA

