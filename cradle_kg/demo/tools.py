"""The demo's tools and verifiers over the local ledger, registered as a plugin.

* ``demo.ledger.credit`` — a keyed external write, with a lookup for reconciliation;
* ``demo.ledger.credit_unreliable`` — the same contract, but its implementation *lies*:
  it reports success and writes nothing (gate 2 must catch it);
* ``demo.ledger.balance`` — read-only;
* ``demo.ledger.close_account`` — irreversible: every execution needs a human approval.

Each effectful tool passes the ``during_call`` crash point after its effect is applied
and before it returns, which is where "the mail left twice" is born.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..crashpoints import crashpoint
from ..records import IdempotencyClass, SideEffectClass, VerificationCheck, VerificationStatus
from ..tools import ToolCall, ToolSpec
from ..verifiers import VerifierReport, VerifyRequest
from .ledger import Ledger

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

V = VerificationStatus


class CreditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    account: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    amount: int = Field(gt=0, le=1_000_000)


class CreditOutput(BaseModel):
    ok: bool
    applied: bool
    account: str
    amount: int


class AccountInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    account: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")


class BalanceOutput(BaseModel):
    account: str
    balance: int


class CloseOutput(BaseModel):
    ok: bool
    account: str


def ledger_for(runtime: Runtime) -> Ledger:
    return Ledger(Path(runtime.home.root) / "demo-ledger" / "ledger.sqlite")


def _now() -> datetime:
    return datetime.now(UTC)


def register(runtime: Runtime) -> None:
    """Plugin entry point: ``cradle_kg.demo.tools:register``."""
    ledger = ledger_for(runtime)

    def credit(call: ToolCall) -> CreditOutput:
        args = call.arguments
        assert isinstance(args, CreditInput)
        applied = ledger.credit(key=call.idempotency_key, account=args.account,
                                amount=args.amount)
        crashpoint("during_call")  # the effect is applied, the tool has not returned
        return CreditOutput(ok=True, applied=applied, account=args.account, amount=args.amount)

    def credit_unreliable(call: ToolCall) -> CreditOutput:
        args = call.arguments
        assert isinstance(args, CreditInput)
        # the bug we want to catch: success reported, nothing written
        crashpoint("during_call")
        return CreditOutput(ok=True, applied=True, account=args.account, amount=args.amount)

    def credit_lookup(call: ToolCall) -> CreditOutput | None:
        entry = ledger.entry(call.idempotency_key)
        if entry is None:
            return None
        return CreditOutput(ok=True, applied=True, account=entry["account"],
                            amount=entry["amount"])

    def balance(call: ToolCall) -> BalanceOutput:
        args = call.arguments
        assert isinstance(args, AccountInput)
        return BalanceOutput(account=args.account, balance=ledger.balance(args.account))

    def close_account(call: ToolCall) -> CloseOutput:
        args = call.arguments
        assert isinstance(args, AccountInput)
        ledger.close_account(key=call.idempotency_key, account=args.account)
        crashpoint("during_call")
        return CloseOutput(ok=True, account=args.account)

    def close_lookup(call: ToolCall) -> CloseOutput | None:
        args = call.arguments
        assert isinstance(args, AccountInput)
        closed = ledger.account_status(args.account) == "closed"
        return CloseOutput(ok=True, account=args.account) if closed else None

    def entry_recorded(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, CreditInput)
        entry = ledger.entry(req.action.idempotency_key)  # independent read of the ledger
        read_at = _now()
        if entry is None:
            return VerifierReport(
                checks=(VerificationCheck(name="resource_exists", status=V.FAILED,
                                          detail="no ledger entry for this key"),
                        VerificationCheck(name="expected_state", status=V.FAILED,
                                          detail="the credit is not in the ledger")),
                read_at=read_at, evidence={"entry": None}, source="ledger.sqlite")
        same = entry["account"] == args.account and entry["amount"] == args.amount
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists", status=V.VERIFIED),
                    VerificationCheck(
                        name="expected_state", status=V.VERIFIED if same else V.FAILED,
                        detail=f"ledger has {entry['amount']} for `{entry['account']}`")),
            read_at=read_at, evidence={"entry": entry}, source="ledger.sqlite")

    def account_closed(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, AccountInput)
        status = ledger.account_status(args.account)
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists",
                                      status=V.VERIFIED if status else V.FAILED),
                    VerificationCheck(name="expected_state",
                                      status=V.VERIFIED if status == "closed" else V.FAILED,
                                      detail=f"account status `{status}`")),
            read_at=_now(), evidence={"account": args.account, "status": status},
            source="ledger.sqlite")

    credit_spec = dict(
        version="1.0.0", input_model=CreditInput, output_model=CreditOutput,
        side_effect_class=SideEffectClass.EXTERNAL_WRITE, idempotency=IdempotencyClass.KEYED,
        required_scopes=("ledger:write",), verifier="demo.ledger.entry-recorded",
        blast_radius=("ledger:*",), cost=1.0, target_from="ledger:{account}",
    )
    runtime.register_verifier("demo.ledger.entry-recorded", entry_recorded)
    runtime.register_verifier("demo.ledger.account-closed", account_closed)
    runtime.register_tool(ToolSpec(id="demo.ledger.credit", description="credit an account",
                                   **credit_spec), credit, lookup=credit_lookup)  # type: ignore[arg-type]
    runtime.register_tool(ToolSpec(id="demo.ledger.credit_unreliable",
                                   description="credit an account (buggy: lies about success)",
                                   **credit_spec), credit_unreliable, lookup=credit_lookup)  # type: ignore[arg-type]
    runtime.register_tool(ToolSpec(
        id="demo.ledger.balance", version="1.0.0", input_model=AccountInput,
        output_model=BalanceOutput, side_effect_class=SideEffectClass.READ_ONLY,
        idempotency=IdempotencyClass.NATURAL, required_scopes=("ledger:read",),
        target_from="ledger:{account}", description="read an account balance"), balance)
    runtime.register_tool(ToolSpec(
        id="demo.ledger.close_account", version="1.0.0", input_model=AccountInput,
        output_model=CloseOutput, side_effect_class=SideEffectClass.IRREVERSIBLE,
        idempotency=IdempotencyClass.NATURAL, required_scopes=("ledger:admin",),
        verifier="demo.ledger.account-closed", blast_radius=("ledger:*",),
        target_from="ledger:{account}", description="close an account for good"),
        close_account, lookup=close_lookup)
