"""A demo home whose journal has been opened once: what the CLI attack modules run against."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import Runtime
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.home import Home
from cradle_kg.server.api import make_router
from cradle_kg.storage.opening import JOURNAL_URL_ENV


def opened_demo_home(factory: pytest.TempPathFactory, name: str, *,
                     embedded: bool = False) -> Path:
    """``embedded``: its journal is the home's SQLite file whatever backend the suite runs
    on (``--journal-backend postgresql``): for a command that reads that file itself."""
    root = factory.mktemp(name) / "home"
    with pytest.MonkeyPatch.context() as env:
        if embedded:
            env.delenv(JOURNAL_URL_ENV, raising=False)
        prepare_home(root)
        with Runtime(root):
            pass
    return root


def blob_file(home: Path, ref: str) -> Path:
    """The file of the evidence blob ``ref`` (``sha256:…``) in ``home``'s store."""
    digest = ref.removeprefix("sha256:")
    return Home(home).evidence / digest[:2] / digest[2:]


def replace_file(path: Path, text: str) -> None:
    """Write ``path`` as an operator's editor does: a new file renamed over the old one
    (its inode changes: a reader watching the file sees the edit at once)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def without_journal_url() -> dict[str, str]:
    """This process's environment without a journal URL (a subprocess on the home's file)."""
    return {k: v for k, v in os.environ.items() if k != JOURNAL_URL_ENV}


def add_approver(home: Path, approver_id: str, token: str) -> None:
    """One more approver in the home's configuration (its token's hash)."""
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers, Approver(id=approver_id, token_hash=token_hash(token)))}))


@contextmanager
def json_api(rt: Runtime) -> Iterator[TestClient]:
    """The JSON API over ``rt``, in process (FastAPI's test client)."""
    app = FastAPI()
    app.state.runtime = rt
    app.include_router(make_router(rt))
    with TestClient(app) as client:
        yield client


#: the forbid an operator writes during an incident: the demo ledger's credits frozen
FREEZE = """@id("incident-freeze")
@reason("incident 42: credits are frozen")
forbid(principal, action == Action::"demo.ledger.credit", resource);
"""


def credit(pid: str, *, agent: str = AGENT, amount: int = 100, task: str | None = None,
           run: str | None = None) -> dict[str, object]:
    """A proposal (as JSON) to credit the demo ledger's ``acct-1``: its own task unless
    ``task`` is given, in ``run`` when given."""
    return {"id": pid, "task_id": task or "task-" + pid, "agent_id": agent,
            **({"run_id": run} if run is not None else {}),
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": amount}}}


def embedded_demo_home(factory: pytest.TempPathFactory, name: str, *,
                       pilots: bool = False) -> Path:
    """The demo's runs (with its pilot packs if ``pilots``) on the home's own SQLite
    journal and embedded graph store, whatever backends the suite runs on; its runtime
    leaves the store at the journal's head."""
    import shutil

    from tests.demo_template import demo_template

    root = factory.mktemp(name) / "home"
    # a copy of the run's (tests/demo_template.py): built once, not by each module
    template, _ = demo_template(factory, pilots=pilots)
    shutil.copytree(template, root, symlinks=True)
    return root


def embedded_copy(home: Path, into: Path, env: pytest.MonkeyPatch) -> Path:
    """A copy of ``home`` in ``into``, this test's environment pointing at no journal URL
    and no remote graph store (the copy's own files are read)."""
    import shutil

    from cradle_kg.storage.graph_config import GRAPH_URL_ENV

    env.delenv(GRAPH_URL_ENV, raising=False)
    env.delenv(JOURNAL_URL_ENV, raising=False)
    shutil.copytree(home, into / "home")
    return into / "home"
