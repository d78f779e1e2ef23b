"""The demo's tools and verifiers over the local ledger (``ledger.py``).

* ``demo.ledger.credit`` — a keyed external write, with a lookup for reconciliation;
* ``demo.ledger.credit_unreliable`` — the same contract, but its implementation *lies*:
  it reports success and writes nothing (gate 2 must catch it);
* ``demo.ledger.balance`` — read-only;
* ``demo.ledger.close_account`` — irreversible: every execution needs a human approval.

Each effectful tool passes the ``during_call`` crash point after its effect is applied
and before it returns, which is where "the mail left twice" is born.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.packs.sdk import (
    IdempotencyClass,
    PackContext,
    SideEffectClass,
    ToolCall,
    VerifierReport,
    VerifyRequest,
    crashpoint,
    read_back,
    report,
    tool,
    verifier,
)

from .ledger import Ledger

SOURCE = "ledger.sqlite"

# postconditions as SHACL over the verifier's observation (cradle_kg/loop/gate2_world.py):
# <urn:cradle:observed> is what the verifier read, <urn:cradle:arguments> what was asked
_OB = "https://w3id.org/cradle/observed#"
CREDIT_RECORDED = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://w3id.org/cradle/pack/demo-ledger#CreditRecorded> a sh:NodeShape ;
    sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "the entry read back does not credit the amount asked to the account" ;
        sh:select \"\"\"SELECT $this WHERE {{
            <urn:cradle:arguments> <{_OB}amount> ?amount ; <{_OB}account> ?account .
            FILTER NOT EXISTS {{ $this <{_OB}entry> ?e .
                                 ?e <{_OB}amount> ?amount ; <{_OB}account> ?account }} }}\"\"\" ] .
"""
ACCOUNT_CLOSED = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://w3id.org/cradle/pack/demo-ledger#AccountClosed> a sh:NodeShape ;
    sh:targetNode <urn:cradle:observed> ;
    sh:property [ sh:path <{_OB}status> ; sh:hasValue "closed" ; sh:minCount 1 ;
                  sh:message "the account read back is not closed" ] .
"""


# the contracts are built by pydantic on first use, not when the pack is imported
class CreditInput(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    account: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    amount: int = Field(gt=0, le=1_000_000)


class CreditOutput(BaseModel):
    model_config = ConfigDict(defer_build=True)
    ok: bool
    applied: bool
    account: str
    amount: int


class AccountInput(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    account: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")


class BalanceOutput(BaseModel):
    model_config = ConfigDict(defer_build=True)
    account: str
    balance: int


class CloseOutput(BaseModel):
    model_config = ConfigDict(defer_build=True)
    ok: bool
    account: str


def ledger_for(ctx: PackContext) -> Ledger:
    """The home's ledger (``<home>/demo-ledger/ledger.sqlite``), stamped by the runtime's clock."""
    return Ledger(ctx.home / "demo-ledger" / "ledger.sqlite", clock=ctx.clock)


def _args(call: ToolCall | VerifyRequest, model: type[BaseModel]) -> Any:
    args = call.arguments
    assert isinstance(args, model)
    return args


# --- verifiers: independent reads of the ledger --------------------------------------------

@verifier("demo.ledger.entry-recorded")
def entry_recorded(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    args: CreditInput = _args(req, CreditInput)
    entry = ledger_for(ctx).entry(req.action.idempotency_key)
    read_at = ctx.clock()
    if entry is None:
        return report(read_back(False, False, exists_detail="no ledger entry for this key",
                                state_detail="the credit is not in the ledger"),
                      read_at=read_at, evidence={"entry": None}, source=SOURCE, changed=[])
    same = entry["account"] == args.account and entry["amount"] == args.amount
    return report(read_back(True, same, state_detail=f"ledger has {entry['amount']} for "
                                                     f"`{entry['account']}`"),
                  read_at=read_at, evidence={"entry": entry}, source=SOURCE,
                  changed=[f"ledger:{entry['account']}"])


@verifier("demo.ledger.account-closed")
def account_closed(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    args: AccountInput = _args(req, AccountInput)
    status = ledger_for(ctx).account_status(args.account)
    return report(read_back(status is not None, status == "closed",
                            state_detail=f"account status `{status}`"),
                  read_at=ctx.clock(), evidence={"account": args.account, "status": status},
                  source=SOURCE, changed=[f"ledger:{args.account}"] if status == "closed" else [])


# --- tools ----------------------------------------------------------------------------------

def credit_lookup(ctx: PackContext, call: ToolCall) -> CreditOutput | None:
    entry = ledger_for(ctx).entry(call.idempotency_key)
    if entry is None:
        return None
    return CreditOutput(ok=True, applied=True, account=entry["account"], amount=entry["amount"])


CREDIT: dict[str, Any] = dict(
    input_model=CreditInput, output_model=CreditOutput,
    side_effect_class=SideEffectClass.EXTERNAL_WRITE, idempotency=IdempotencyClass.KEYED,
    required_scopes=("ledger:write",), verifier="demo.ledger.entry-recorded",
    blast_radius=("ledger:{account}",), cost=1.0, target_from="ledger:{account}",
    lookup=credit_lookup, postconditions=(CREDIT_RECORDED,))


@tool("demo.ledger.credit", description="credit an account", **CREDIT)
def credit(ctx: PackContext, call: ToolCall) -> CreditOutput:
    args: CreditInput = _args(call, CreditInput)
    applied = ledger_for(ctx).credit(key=call.idempotency_key, account=args.account,
                                     amount=args.amount)
    crashpoint("during_call")  # the effect is applied, the tool has not returned
    return CreditOutput(ok=True, applied=applied, account=args.account, amount=args.amount)


@tool("demo.ledger.credit_unreliable",
      description="credit an account (buggy: lies about success)", **CREDIT)
def credit_unreliable(ctx: PackContext, call: ToolCall) -> CreditOutput:
    args: CreditInput = _args(call, CreditInput)
    # the bug we want to catch: success reported, nothing written
    crashpoint("during_call")
    return CreditOutput(ok=True, applied=True, account=args.account, amount=args.amount)


@tool("demo.ledger.balance", input_model=AccountInput, output_model=BalanceOutput,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      required_scopes=("ledger:read",), target_from="ledger:{account}",
      description="read an account balance")
def balance(ctx: PackContext, call: ToolCall) -> BalanceOutput:
    args: AccountInput = _args(call, AccountInput)
    return BalanceOutput(account=args.account, balance=ledger_for(ctx).balance(args.account))


def close_lookup(ctx: PackContext, call: ToolCall) -> CloseOutput | None:
    args: AccountInput = _args(call, AccountInput)
    closed = ledger_for(ctx).account_status(args.account) == "closed"
    return CloseOutput(ok=True, account=args.account) if closed else None


@tool("demo.ledger.close_account", input_model=AccountInput, output_model=CloseOutput,
      side_effect_class=SideEffectClass.IRREVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      required_scopes=("ledger:admin",), verifier="demo.ledger.account-closed",
      blast_radius=("ledger:{account}",), target_from="ledger:{account}",
      postconditions=(ACCOUNT_CLOSED,),
      description="close an account for good", lookup=close_lookup)
def close_account(ctx: PackContext, call: ToolCall) -> CloseOutput:
    args: AccountInput = _args(call, AccountInput)
    ledger_for(ctx).close_account(key=call.idempotency_key, account=args.account)
    crashpoint("during_call")
    return CloseOutput(ok=True, account=args.account)
