"""The demo ledger's tools through the governed loop, with the SDK's test fixtures: a
real home with the pack loaded, the demo's own policies as the home's."""

from __future__ import annotations

from pathlib import Path

from cradle_kg.packs import testing
from cradle_kg.packs.sdk import Agent, Permission

PACK = testing.pack_folder(__file__)
AGENT = "agent:ledger-test"
POLICY = """
@id("ledger-agents")
permit(principal, action, resource) when { context.tool like "demo.ledger.*" };
@id("credit-limit")
forbid(principal, action == Action::"demo.ledger.credit", resource)
when { context.arguments has amount && context.arguments.amount > 1000 };
"""

home = testing.fixture(PACK, policies={"ledger.cedar": POLICY}, config=testing.config(
    agents=(Agent(id=AGENT, permitted_scopes=("ledger:read", "ledger:write", "ledger:admin"),
                  environments=("local",)),),
    permissions=(Permission(subject=AGENT, action_type="demo.ledger.*",
                            resource_selector="ledger:*"),)))


def test_a_credit_is_written_once_and_read_back(home: testing.PackHome) -> None:
    out = home.submit("demo.ledger.credit", {"account": "a", "amount": 7}, agent=AGENT,
                      target="ledger:a", proposal_id="p-credit")
    testing.expect(out, "executed", policies=["ledger-agents"])
    assert out.verification is not None and str(out.verification.status) == "verified"
    again = home.submit("demo.ledger.credit", {"account": "a", "amount": 7}, agent=AGENT,
                        target="ledger:a", proposal_id="p-credit")
    testing.expect(again, "executed")
    ledger = home.entry("ledger:Ledger")(Path(home.root) / "demo-ledger" / "ledger.sqlite")
    assert list(ledger.entries_per_key().values()) == [1]
    balance = home.submit("demo.ledger.balance", {"account": "a"}, agent=AGENT,
                          target="ledger:a")
    testing.expect(balance, "executed")
    assert balance.observation is not None and balance.observation.output["balance"] == 7


def test_the_lying_tool_fails_gate_2(home: testing.PackHome) -> None:
    out = home.submit("demo.ledger.credit_unreliable", {"account": "b", "amount": 3},
                      agent=AGENT, target="ledger:b")
    testing.expect(out, "verification_failed")
    assert any("no ledger entry for this key" in r for r in out.reasons), out.reasons


def test_a_credit_above_the_limit_is_denied_and_a_wrong_target_refused(
        home: testing.PackHome) -> None:
    testing.expect(home.submit("demo.ledger.credit", {"account": "c", "amount": 5000},
                               agent=AGENT, target="ledger:c"),
                   "denied", policies=["credit-limit"])
    elsewhere = home.submit("demo.ledger.credit", {"account": "c", "amount": 5}, agent=AGENT,
                            target="ledger:someone-else")
    assert str(elsewhere.status) == "denied"


def test_closing_an_account_waits_for_a_human(home: testing.PackHome) -> None:
    out = home.submit("demo.ledger.close_account", {"account": "d"}, agent=AGENT,
                      target="ledger:d")
    testing.expect(out, "awaiting_approval")


def test_a_balance_reads_one_accounts_entries_through_an_index(home: testing.PackHome) -> None:
    """The balance (the read every demo and bench makes) costs the account's entries, not
    every entry the ledger ever wrote: SQLite's plan searches an index."""
    out = home.submit("demo.ledger.credit", {"account": "a", "amount": 1}, agent=AGENT,
                      target="ledger:a", proposal_id="p-index")
    testing.expect(out, "executed")
    ledger = home.entry("ledger:Ledger")(Path(home.root) / "demo-ledger" / "ledger.sqlite")
    plan = ledger.store.rows("EXPLAIN QUERY PLAN SELECT COALESCE(SUM(amount), 0) FROM entries "
                             "WHERE account = ?", ("a",))
    details = " ".join(str(row[-1]) for row in plan)
    assert "USING COVERING INDEX entries_account" in details, details
