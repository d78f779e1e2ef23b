"""A YAML scalar PyYAML resolves to a date, a time or an integer it cannot build is a
refusal naming its line, not a crash.

Finding (sixth attack review): YAML 1.1 reads ``2024-02-31`` as a date, ``2024-01-01
25:00:00`` as a time and a run of digits as an integer; PyYAML's constructor then raises
``ValueError`` for a date or time that does not exist and for an integer past Python's
4,300 digits — an exception none of the three YAML readers caught (they catch PyYAML's
own errors and the strict loader's refusals):

* ``POST /api/workflows/validate`` (any token, an agent's too) with ``version:
  2024-02-31`` was an HTTP 500 and a traceback in the server's log (``test_93`` fixed the
  same for deep nesting);
* ``workflow validate FILE`` ended in ``error: unexpected ValueError`` (exit 2), and
  ``workflow list`` / ``GET /api/workflows`` raised it for such a file in the home;
* ``pack validate`` — the review of a pack one does not trust yet — ended in ``error:
  unexpected ValueError`` for a manifest holding one, instead of saying ``INVALID``;
* ``mcp proxy --contracts`` raised it out of ``load_contracts``.

Now the strict loaders build each value under a guard (``strict_yaml``): such a scalar is
refused with its line — the file is not valid, one problem line (``workflow validate`` exit
1, a 200 with ``valid: false`` over HTTP, ``INVALID`` from ``pack validate``, a
``ContractsError`` naming the line).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import ContractsError
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.packs.registry import BUILTIN_PACKS
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import Server
from .inputcli import fresh_home
from .test_93_workflow_yaml_depth import served as served  # the same server

#: scalars YAML 1.1 resolves to a value PyYAML cannot build
UNBUILDABLE = ["2024-02-31", "0000-01-01", "2024-01-01 25:00:00", "9" * 5000]
IDS = ["feb-31", "year-0", "hour-25", "5000-digits"]


def _workflow(value: str) -> str:
    return f"workflow: w\nversion: {value}\nagent: {AGENT}\nsteps: []\n"


@pytest.mark.parametrize("value", UNBUILDABLE, ids=IDS)
def test_validate_over_http_answers_not_valid(served: tuple[Server, str], value: str) -> None:
    srv, token = served
    answer = oneshot.post(f"{srv.url}/api/workflows/validate",
                        content=_workflow(value).encode(),
                        headers={"Authorization": f"Bearer {token}"}, timeout=60)
    # before: 500 Internal Server Error, a ValueError traceback in the server's log
    assert answer.status_code == 200, (answer.status_code, answer.text[:200])
    found = answer.json()
    assert found["valid"] is False
    assert any(":2: " in p and "cannot be read" in p for p in found["problems"]), found
    assert "Traceback" not in srv.log.read_text(errors="replace")


def test_workflow_validate_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(_workflow("2024-02-31"))
    done = run_cli("workflow", "validate", str(path))
    # before: `error: unexpected ValueError: day is out of range for month`, exit 2
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "unexpected" not in done.stderr
    assert f"{path}:2: " in done.stdout and "2024-02-31" in done.stdout


def test_a_file_in_the_home_is_listed_as_not_valid(tmp_path: Path) -> None:
    from cradle_kg.workflow import runner

    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "w.yaml").write_text(_workflow("0000-01-01"))
    [listed] = runner.list_definitions(tmp_path)  # before: ValueError raised
    assert listed["valid"] is False
    assert "cannot be read" in listed["problems"][0]


def test_pack_validate_says_invalid(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    pack = home / "packs" / "ledger"
    shutil.copytree(BUILTIN_PACKS / "demo.ledger", pack)
    manifest = pack / "manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "released: 2024-02-31\n",
                        encoding="utf-8")
    done = run_cli("pack", "validate", str(pack), "--no-reasoner", "--format", "json")
    # before: `error: unexpected ValueError: day is out of range for month`, exit 2
    assert done.returncode == 1, done.stdout + done.stderr
    errors = " ".join(json.loads(done.stdout)["errors"])
    assert "manifest.yaml:" in errors and "cannot be read" in errors, errors


@pytest.mark.parametrize("value", UNBUILDABLE, ids=IDS)
def test_proxy_contracts_name_the_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "contracts.yaml"
    path.write_text(f"tools:\n  notes_add:\n    side_effect: {value}\n", encoding="utf-8")
    with pytest.raises(ContractsError, match="cannot be read") as refused:
        load_contracts(path)  # before: ValueError
    assert refused.value.line == 3
