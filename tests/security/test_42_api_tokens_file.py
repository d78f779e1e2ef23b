"""The agents' API tokens file (``<home>/api-tokens.json``: each agent's token hash).

Findings:

* **two tokens issued at once lost one.** ``api-token issue`` read the file, added its
  agent and wrote the whole file back through one fixed temporary name, with nothing
  held between the read and the write: issuing tokens for two agents at the same moment
  (two operators, a provisioning script running in parallel) kept one of them — the other
  agent's new token was refused with 401 although the command had printed it (and a
  revocation could be undone the same way). The read and the write are now one critical
  section under a lock file, and each writer has a temporary file of its own.
* **the file was briefly world-readable.** The temporary file was written with the
  process's umask (0644 here) and only then set to 0600: the hashes were readable by every
  local user for that moment. It is now created 0600 before anything is written.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
from pathlib import Path
from typing import Any

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.home import Home
from cradle_kg.records import Agent
from cradle_kg.server.auth import authenticate, issue_agent_token, token_file

from ..racers import race

AGENTS = 6


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    prepare_home(home)
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"agents": (
        *config.agents, *(Agent(id=f"agent:racer-{i}", role="assistant")
                          for i in range(AGENTS)))}))
    return home


def _issue(home: str, agent: str, start: Any, answers: Any) -> None:
    config = load_config(Path(home) / "config.json")
    start.wait()
    answers.put((agent, issue_agent_token(Home(Path(home)), config, agent)))


def test_tokens_issued_at_once_all_authenticate(tmp_path: Path) -> None:
    home = _home(tmp_path)
    config = load_config(home / "config.json")
    ctx = mp.get_context("fork")
    for _ in range(5):
        start, answers = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_issue, args=(str(home), f"agent:racer-{i}", start, answers))
                 for i in range(AGENTS)]
        issued = race(procs, answers, meanwhile=start.set)
        lost = [agent for agent, token in issued
                if (caller := authenticate(Home(home), config, token)) is None
                or caller.identity != agent]
        assert lost == [], f"tokens printed but refused: {lost}"


def test_the_tokens_file_is_never_written_readable_by_others(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Every file opened for writing in the home while a token is issued is 0600 the moment
    it exists (seen by spies on ``os.open`` and ``io.open``, whatever the umask)."""
    import io

    home = _home(tmp_path)
    config = load_config(home / "config.json")
    seen: list[tuple[str, int]] = []
    real_os_open, real_io_open = os.open, io.open

    def note(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.startswith(str(home)):
            seen.append((path, stat.S_IMODE(os.fstat(fd).st_mode)))

    def os_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        fd = real_os_open(path, flags, mode, **kw)
        if flags & (os.O_WRONLY | os.O_RDWR):
            note(fd)
        return fd

    def io_open(file: Any, mode: str = "r", *args: Any, **kw: Any) -> Any:
        f = real_io_open(file, mode, *args, **kw)
        if isinstance(file, str | Path) and any(c in mode for c in "wax+"):
            note(f.fileno())
        return f

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    old = os.umask(0o022)
    try:
        issue_agent_token(Home(home), config, "agent:racer-0")
    finally:
        os.umask(old)
    written = [(path, mode) for path, mode in seen if "api-tokens" in Path(path).name]
    assert written, seen
    assert all(mode == 0o600 for _, mode in written), written
    assert stat.S_IMODE(token_file(Home(home)).stat().st_mode) == 0o600
