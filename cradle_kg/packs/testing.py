"""Test fixtures for pack authors: a real home with the pack loaded, a submit helper, and
an assertion on an outcome and its reason codes.

Everything is real — the runtime, its SQLite journal, the pack's own files — in a
temporary home, loaded through the same loader as in production::

    from cradle_kg.packs import testing

    PACK = testing.pack_folder(__file__)
    home = testing.fixture(PACK, config=testing.config(agents=..., permissions=...))

    def test_credit(home: testing.PackHome) -> None:
        out = home.submit("demo.ledger.credit", {"account": "a", "amount": 5},
                          agent="agent:a", target="ledger:a")
        testing.expect(out, "executed")

A pack's tests import from here, from :mod:`cradle_kg.packs.sdk` and from the public API;
``pytest`` is needed only by :func:`fixture`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import RuntimeConfig
from ..loop.runtime import Runtime
from ..records import Outcome
from .registry import PackRegistry


def pack_folder(start: str | Path) -> Path:
    """The pack folder holding ``start`` (a test file): the nearest ``manifest.yaml`` up."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / "manifest.yaml").is_file():
            return folder
    raise FileNotFoundError(f"no manifest.yaml above `{here}`")


def config(**fields: Any) -> RuntimeConfig:
    """A configuration for a test home (identities, permissions, approvers, limits)."""
    return RuntimeConfig(**fields)


class PackHome:
    """A runtime over a real home with one pack loaded."""

    def __init__(self, runtime: Runtime, pack: str) -> None:
        self.runtime = runtime
        self.pack = pack
        self._n = itertools.count(1)

    @property
    def root(self) -> Path:
        return self.runtime.home.root

    def entry(self, name: str) -> Any:
        """A ``module:attribute`` of the pack, imported as the loader imports it."""
        return PackRegistry.discover(self.root).get(self.pack).resolve(name)

    def submit(self, tool: str, arguments: Mapping[str, Any], *, agent: str, target: str,
               environment: str | None = None, task: str | None = None,
               proposal_id: str | None = None, **fields: Any) -> Outcome:
        """Propose one action as ``agent``; ``fields`` go on the proposal (``on_behalf_of``,
        ``evidence_refs`` …)."""
        pid = proposal_id or f"t{next(self._n)}-{tool.rsplit('.', 1)[-1]}"
        action: dict[str, Any] = {"action_type": tool, "target": target,
                                  "arguments": dict(arguments)}
        if environment is not None:
            action["environment"] = environment
        return self.runtime.submit({"id": pid, "task_id": task or "task-" + pid,
                                    "agent_id": agent, "action": action, **fields})


@contextmanager
def pack_home(pack: str | Path, home: Path, *, config: RuntimeConfig | None = None,
              policies: Mapping[str, str] | None = None) -> Iterator[PackHome]:
    """``home`` (created if needed) with ``pack`` — a folder, an id or ``id@version`` —
    loaded; the runtime is closed on the way out. ``policies`` (file name → Cedar text) are
    the home's own, written before the runtime starts — an operator's rules for a pack
    that ships none, or over one that does."""
    (home / "policies").mkdir(parents=True, exist_ok=True)
    for name, text in (policies or {}).items():
        (home / "policies" / name).write_text(text, encoding="utf-8")
    found = PackRegistry.discover(home).get(str(pack))
    with Runtime(home, config=config) as rt:  # None: the home's own config.json, if any
        rt.load_pack(found)
        yield PackHome(rt, found.ref)


def fixture(pack: str | Path, *, config: RuntimeConfig | None = None,
            policies: Mapping[str, str] | None = None,
            scope: str = "function") -> Callable[..., Any]:
    """A pytest fixture yielding a :class:`PackHome` in a fresh temporary home."""
    import pytest

    def make(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackHome]:
        with pack_home(pack, tmp_path_factory.mktemp("pack-home") / "home",
                       config=config, policies=policies) as home:
            yield home
    return pytest.fixture(scope=scope)(make)  # type: ignore[call-overload, no-any-return]


def expect(outcome: Outcome, status: str, *, codes: Sequence[str] | None = None,
           policies: Sequence[str] | None = None) -> None:
    """The outcome has ``status`` and, when given, exactly these reason codes (gate 1's
    findings) and these determining policy ids; a mismatch says what it got, and why."""
    decision = outcome.decision
    got: dict[str, Any] = {"status": str(outcome.status)}
    wanted: dict[str, Any] = {"status": status}
    if codes is not None:
        got["codes"] = list(decision.reason_codes) if decision else []
        wanted["codes"] = list(codes)
    if policies is not None:
        got["policies"] = [p.policy_id for p in decision.policy_results] if decision else []
        wanted["policies"] = list(policies)
    if got != wanted:
        raise AssertionError(f"expected {wanted}, got {got}; reasons: "
                             + "; ".join(outcome.reasons))


__all__ = ["PackHome", "config", "expect", "fixture", "pack_folder", "pack_home"]
