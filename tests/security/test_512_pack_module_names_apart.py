"""Two packs whose names read alike each run their own code.

Finding: a pack folder was imported as the module ``cradle_pack_<id>__<version>`` with every
`.` and `-` folded into `_`, and the loader took a module already in ``sys.modules`` under
that name as the pack's own. Two packs ``acme.ab-c`` and ``acme.ab.c`` (two vendors; or
versions ``1.0.0-rc.1`` and ``1.0.0-rc-1`` of one pack, or one ``id@version`` in two
homes a process opens) got one name: the second pack loaded registered the *first* one's
validator under its own manifest, silently — its own validator, which denies credits,
never ran, and the credit executed. Now: the module name also carries a digest of the id,
the version and the folder; each pack imports and registers its own code.
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.records import OutcomeStatus

CHECKS = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("{pattern}", name="{name}")
def check(ctx, proposal, spec):
    return [Finding(code="{code}", message="{name} says no")]
'''


def _pack(folder: Path, pack_id: str, version: str, pattern: str, code: str) -> None:
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        f"id: {pack_id}\nname: {pack_id}\nversion: {version}\ncore_ontology: '>=0.1.0'\n"
        "validators: ['checks:check']\n", encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "checks.py").write_text(
        CHECKS.format(pattern=pattern, name=f"{pack_id}.check", code=code), encoding="utf-8")


def _credit(pid: str) -> dict[str, object]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-f",
                       "arguments": {"account": "acct-f", "amount": 3}}}


def _submit_with(root: Path, *refs: str) -> tuple[OutcomeStatus, list[str]]:
    registry = PackRegistry.discover(root)
    with Runtime(root) as rt:
        for ref in refs:
            rt.load_pack(registry.get(ref))
        # a proposal of this home's own: on PostgreSQL the two homes share one journal
        out = rt.submit(_credit("p-" + root.name))
    return out.status, list(out.decision.reason_codes) if out.decision else []


def test_two_ids_alike_each_their_own_validator(tmp_path: Path) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    # the first matches no tool; the second denies the demo's credits
    _pack(root / "packs" / "a", "acme.ab-c", "1.0.0", "nothing.*", "from_dash")
    _pack(root / "packs" / "b", "acme.ab.c", "1.0.0", "demo.ledger.credit", "from_dot")
    status, codes = _submit_with(root, "acme.ab-c", "acme.ab.c")
    # before: EXECUTED — `acme.ab.c` registered `acme.ab-c`'s validator (on `nothing.*`)
    assert status is OutcomeStatus.DENIED, (status, codes)
    assert codes == ["from_dot"]


def test_two_versions_alike_each_their_own_code(tmp_path: Path) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    _pack(root / "packs" / "rc-dot", "acme.ledger-rules", "1.0.0-rc.1", "nothing.*", "rc_dot")
    _pack(root / "packs" / "rc-dash", "acme.ledger-rules", "1.0.0-rc-1",
          "demo.ledger.credit", "rc_dash")
    registry = PackRegistry.discover(root)
    dot = registry.get("acme.ledger-rules@1.0.0-rc.1")
    dash = registry.get("acme.ledger-rules@1.0.0-rc-1")
    # before: one module for both, the one imported first
    assert dot.module() is not dash.module()
    assert dash.resolve("checks:check").tool_pattern == "demo.ledger.credit"
    assert dot.resolve("checks:check").tool_pattern == "nothing.*"


def test_one_ref_in_two_homes_each_home_its_own_code(tmp_path: Path) -> None:
    """One process (an embedding, a test run) opening two homes whose `packs/` hold two
    different builds of `acme.rules@1.0.0`: each home runs the one it holds."""
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        prepare_home(root)
    _pack(first / "packs" / "rules", "acme.rules", "1.0.0", "nothing.*", "first")
    _pack(second / "packs" / "rules", "acme.rules", "1.0.0", "demo.ledger.credit", "second")
    status, _ = _submit_with(first, "acme.rules")
    assert status is OutcomeStatus.EXECUTED
    status, codes = _submit_with(second, "acme.rules")
    # before: EXECUTED — the second home ran the first home's build of the pack
    assert (status, codes) == (OutcomeStatus.DENIED, ["second"])
