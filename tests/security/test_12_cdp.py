"""Item 12: the web-page tests drive Chromium wherever it runs, or fail clearly — never hang.

The trap: when the debugging pipe's read end is itself fd 3, ``dup2(3, 3)`` is a no-op
that leaves it close-on-exec, Chromium starts without it and the client waited forever.
A fresh interpreter with fds 3-6 free gets exactly those numbers from ``os.pipe()``; the
client there must open a page and evaluate JavaScript, and a dead browser must fail fast.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..server.cdp import BrowserFailed

ROOT = Path(__file__).resolve().parents[2]


def test_the_client_drives_a_page_when_the_pipe_is_fd_3(chromium: str) -> None:
    script = textwrap.dedent(f"""
        import os, sys
        for fd in (3, 4, 5, 6):
            try:
                os.close(fd)
            except OSError:
                pass
        sys.path.insert(0, {str(ROOT)!r})
        from tests.server.cdp import browser
        with browser({chromium!r}) as b:
            b.open("about:blank")
            print("value", b.js("6 * 7"))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "value 42" in done.stdout


def test_a_browser_that_is_not_chromium_fails_with_a_message(tmp_path: Path) -> None:
    from ..server.cdp import Browser

    fake = tmp_path / "not-chromium"
    fake.write_text("#!/bin/sh\necho 'Remote debugging pipe file descriptors are not open' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    b = Browser(str(fake))
    try:
        with pytest.raises(BrowserFailed, match="not open"):
            b.call("Target.getTargets", page=False, timeout=20)
    finally:
        b.close()
