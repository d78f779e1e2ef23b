"""Thin, typed wrappers over the git command line (the only VCS the pack speaks)."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

from cradle_kg.packs.sdk import InputError, ToolError

_SHA = re.compile(r"^[0-9a-f]{40}$")

#: a fixed identity and clock, so fixture histories are reproducible
GIT_ENV = {
    "GIT_AUTHOR_NAME": "UptimeHarbor Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@uptimeharbor.invalid",
    "GIT_COMMITTER_NAME": "UptimeHarbor Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@uptimeharbor.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None, text: bool = True) -> str:
    """Run ``git -C repo args`` and return stdout; raises ``ToolError`` on failure."""
    out = git_bytes(repo, *args, env=env)
    return out.decode("utf-8").strip() if text else out.decode("utf-8")


def git_bytes(repo: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    full_env = {**os.environ, **GIT_ENV, "HOME": str(repo), **(env or {})}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        env=full_env,
        timeout=30,
        check=False,
    )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise ToolError(f"git {args[0]} failed: {err}")
    return proc.stdout


def is_full_sha(value: str) -> bool:
    return bool(_SHA.match(value))


def resolve_commit(repo: Path, rev: str) -> str:
    """The full sha of ``rev`` in ``repo``; raises ``InputError`` when it is not a commit."""
    if not rev or rev.startswith("-"):
        raise InputError(f"not a commit: `{rev}`")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except ToolError as exc:
        raise InputError(f"unknown commit `{rev}` in `{repo}`") from exc


def export_tree(repo: Path, commit: str, dest: Path) -> None:
    """Extract the tree of ``commit`` into ``dest`` with ``git archive`` (export-subst on)."""
    import tarfile  # here: importing the pack (`tools list`) does not need it

    data = git_bytes(repo, "archive", "--format=tar", commit)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        tar.extractall(dest, filter="data")
