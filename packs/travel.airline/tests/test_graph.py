"""The named queries, answered from the run graph of a real home: a refused cancellation,
then the one the customer's reason allows, its refund read back from the database and
projected by the pack's hook, and the customer's statements with who made them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

OLIVIA = "customer:olivia_gonzalez_2305"


def query(home: Path, name: str, *params: str) -> list[dict[str, str]]:
    args = [sys.executable, "-m", "cradle_kg", "query", name, "--home", str(home),
            "--format", "json"]
    for p in params:
        args += ["--param", p]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return [{k: v["value"] for k, v in b.items()} for b in out["results"]["bindings"]]


def _cancel(reason: str, source: str = OLIVIA) -> dict[str, Any]:
    return {"tool": "cancel_reservation", "arguments": {"reservation_id": "Z7GOZK"},
            "on_behalf_of": OLIVIA, "facts": [{"subject": OLIVIA, "source": source,
                                               "predicate": "airline:cancellationReason",
                                               "object": reason},
                                              {"subject": OLIVIA, "source": OLIVIA,
                                               "predicate": "airline:confirmed",
                                               "object": "yes"}]}


@pytest.mark.slow
def test_why_cancelled_and_on_whose_word(airline: Airline) -> None:
    airline.run(_cancel("health", source="agent:airline-assistant"),
                status="needs_clarification")
    airline.run(_cancel("change_of_plan"), status="denied")
    airline.run(_cancel("health"), status="executed")
    home = airline.home.root
    airline.home.runtime.close()
    target = "reservation=reservation:Z7GOZK"
    [why] = query(home, "why-cancelled", target)
    assert why["reason"] == "health" and why["statedBy"] == OLIVIA
    assert why["verdict"].endswith("#Allow") and why["verification"].endswith("#Verified")
    assert why["policies"] == "travel.airline/airline-assistant-writes"
    assert why["refunds"] == "gift_card_2200803 -169"
    history = query(home, "reservation-history", target)
    assert [h["verdict"].rsplit("#", 1)[1] for h in history] == ["Clarify", "Deny", "Allow"]
    assert history[-1].get("committedAt") and not history[0].get("committedAt")
    refused = query(home, "refused-by-policy")
    assert {r["verdict"].rsplit("#", 1)[1] for r in refused} == {"Clarify", "Deny"}
    assert any("not cancellable" in r["reasons"] for r in refused)
    said = [s for s in query(home, "customer-statements")
            if s["predicate"] == "airline:cancellationReason"]
    # a statement the agent wrote is the agent's (its IRI), whatever source it named
    agent = "https://w3id.org/cradle/id/agent/agent%3Aairline-assistant"
    assert [(s["value"], s["statedBy"]) for s in said] == [
        ("health", agent), ("change_of_plan", OLIVIA), ("health", OLIVIA)]
    assert said[0]["claimedSource"] == "agent:airline-assistant"
    [refund] = query(home, "reservation-payments", target)
    assert (refund["kind"], refund["paymentId"], refund["amount"]) == (
        "refund", "gift_card_2200803", "-169")


def test_statements_the_database_settles_become_verified(airline: Airline) -> None:
    """"The airline cancelled my flight" is read back against the flights and becomes a
    Verified fact with the verifier's evidence; a health reason stays the customer's word."""
    isabella = "customer:isabella_davis_2143"
    airline.run({"tool": "cancel_reservation", "arguments": {"reservation_id": "521ARH"},
                 "on_behalf_of": isabella,
                 "facts": [["airline:confirmed", "yes"],
                           ["airline:cancellationReason", "airline_cancelled"]]},
                status="executed")
    airline.run(_cancel("health"), status="executed")
    home = airline.home.root
    airline.home.runtime.close()
    verified = query(home, "verified-facts")
    assert [(v["subject"].rsplit("/", 1)[-1], v["value"]) for v in verified
            if v["status"].endswith("#Verified")] == [(isabella, "airline_cancelled")]
    assert all(v["evidence"] for v in verified)
    said = query(home, "customer-statements")
    assert ("health", OLIVIA) in [(s["value"], s["statedBy"]) for s in said]
