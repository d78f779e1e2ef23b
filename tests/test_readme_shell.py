"""The README's "A workflow from the shell, end to end" block, run as written.

Real processes (bash and the installed ``cradle-kg`` script), from the repository root, in
a scratch home: the process boundary is the point — exit codes, environment variables,
``$CRADLE_HOME``, ``$CRADLE_APPROVER_TOKEN``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### A workflow from the shell, end to end", 1)[1]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, "the section has no ```bash block"
    return found.group(1)


@pytest.mark.slow
def test_the_readme_block_runs_end_to_end(tmp_path: Path) -> None:
    script = tmp_path / "readme.sh"
    script.write_text("set -euo pipefail\n" + readme_block().replace(
        '"$(mktemp -d)/home"', f'"{tmp_path}/home"'))
    bin_dir = str(Path(sys.executable).parent)
    assert shutil.which("cradle-kg", path=bin_dir), "the cradle-kg script is not installed"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CRADLE_HOME", "CRADLE_APPROVER_TOKEN", "CRADLE_MODEL_BASE_URL")}
    env |= {"PATH": bin_dir + os.pathsep + env.get("PATH", ""), "COLUMNS": "200"}
    done = subprocess.run(["bash", str(script)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "workflow `credit-review` version 1, 2 step(s): review (human), pay (tool)" in out
    assert "run refund-7 (credit-review): waiting_human at step review" in out
    assert "Credit 120 to acct-1? The agent says: refund of a double charge" in out
    assert re.search(r"^sha256:[0-9a-f]{64}$", out, re.M)
    assert "run refund-7 (credit-review): completed" in out
    assert "run refund-7 (credit-review v1): completed" in out
    assert re.search(r"completed: [1-9]", out) and "refund-7" in out
    assert "credit-review" in out.split("human steps", 1)[1]
