"""A home whose own pack ``acme.rules`` is upgraded under recorded runs
(``tests/security/test_553`` … ``test_556``): real packs built in the home's ``packs/``.

1.0.0's validator lets a credit through; 1.1.0 adds a validator (a name of its own) that
denies every credit. The home names the pack by its id, so once 1.1.0 is installed it is
the version the home loads."""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.records import OutcomeStatus, Proposal
from tests.security.homes import credit

PACK = "acme.rules"
OLD, NEW = f"{PACK}@1.0.0", f"{PACK}@1.1.0"

LENIENT = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("demo.ledger.credit", name="acme.rules.check")
def check(ctx, proposal, spec):
    return []
'''
STRICT = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("demo.ledger.credit", name="acme.rules.check")
def check(ctx, proposal, spec):
    return []

@validator("demo.ledger.credit", name="acme.rules.no_credit")
def no_credit(ctx, proposal, spec):
    return [Finding(code="acme_no_credit", message="acme.rules 1.1.0 refuses credits")]
'''


def write_pack(folder: Path, version: str, checks: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(
        f"id: {PACK}\nname: rules\nversion: {version}\ncore_ontology: '>=0.1.0'\n"
        "validators: ['checks:check'"
        + (", 'checks:no_credit'" if "no_credit" in checks else "") + "]\n",
        encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "checks.py").write_text(checks, encoding="utf-8")
    return folder


def old_folder(home: Path) -> Path:
    return home / "packs" / "rules-1.0.0"


def record_under_old(home: Path) -> str:
    """``acme.rules`` 1.0.0 installed and named by the home; one credit executed under it;
    its run id."""
    write_pack(old_folder(home), "1.0.0", LENIENT)
    config = load_config(home / "config.json")
    save_config(home / "config.json",
                config.model_copy(update={"packs": (*config.packs, PACK)}))
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(credit("p-old", amount=100)))
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert out.decision is not None and OLD in out.decision.pack_versions
    return out.run_id


def upgrade(home: Path) -> str:
    """1.1.0 installed beside 1.0.0 (the home's ``acme.rules`` is now 1.1.0); a credit
    under it is denied by its new validator; that run's id."""
    write_pack(home / "packs" / "rules-1.1.0", "1.1.0", STRICT)
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(credit("p-new", amount=100)))
    assert out.decision is not None and NEW in out.decision.pack_versions
    assert out.status is OutcomeStatus.DENIED, out.status
    assert "acme_no_credit" in out.decision.reason_codes, out.decision.reason_codes
    return out.run_id
