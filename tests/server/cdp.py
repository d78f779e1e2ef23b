"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe``.

No driver library: headless Chromium reads CDP commands from fd 3 and writes replies
and events to fd 4, each message NUL-terminated JSON. That is all a test needs to open
pages, evaluate JavaScript and wait for the page to reach a state.

Never hangs: fds 3 and 4 are made inheritable in the child whatever numbers the pipes
got (``dup2(3, 3)`` is a no-op that left fd 3 close-on-exec, and Chromium then said
"Remote debugging pipe file descriptors are not open"); every read has a deadline, and
a browser that dies or stays silent fails the test with its own last words.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_chromium() -> str | None:
    """Chromium's path; installs Debian's package when missing and running as root."""
    found = find_chromium()
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    for step in (["apt-get", "install", "-y", "-q", "chromium"], ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "chromium"]):
        subprocess.run(step, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=900)
        if step[1] == "install" and find_chromium():
            break
    return find_chromium()


#: how long one CDP command may take before the test fails (never hangs)
CALL_TIMEOUT = 60.0


class BrowserFailed(AssertionError):
    """Chromium died, closed its pipe or did not answer in time (not retried by wait_for)."""


class Browser:
    def __init__(self, binary: str) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="cradle-chromium-"))
        self.log = self.profile.parent / (self.profile.name + ".log")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads commands, fd 4 writes replies
            # first out of the way (a pipe may itself be fd 3 or 4), then onto 3 and 4;
            # os.dup2 makes the copies inheritable, which dup2(3, 3) alone would not
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3, inheritable=True)
            os.dup2(high_w, 4, inheritable=True)
            os.close(high_r)
            os.close(high_w)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
             f"--user-data-dir={self.profile}", "about:blank"],
            # close_fds would close fds 3 and 4 after `wire` ran; Python's own fds are
            # non-inheritable (PEP 446), so nothing else leaks into the browser
            preexec_fn=wire, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=(log := self.log.open("wb")))
        log.close()
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None
        #: events read while waiting for a reply, oldest first (``next_event`` takes them)
        self.events: list[dict[str, Any]] = []

    def _send(self, method: str, params: dict[str, Any] | None = None,
              session: str | None = None) -> int:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        return self._next

    def _failed(self, what: str) -> BrowserFailed:
        code = self.process.poll()
        try:
            said = self.log.read_text(errors="replace").strip().splitlines()[-5:]
        except OSError:
            said = []
        status = "running" if code is None else f"exited with {code}"
        return BrowserFailed(f"chromium {what} ({status}); its last words: "
                             + (" | ".join(said) or "(none)"))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._failed("did not answer within the deadline")
            ready, _, _ = select.select([self._from_chrome], [], [], min(left, 1.0))
            if not ready:
                if self.process.poll() is not None:
                    raise self._failed("died")
                continue
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise self._failed("closed the debugging pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(raw))

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             page: bool = True, timeout: float = CALL_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        try:
            ident = self._send(method, params, self.session if page else None)
        except OSError as exc:
            raise self._failed(f"cannot be sent `{method}`: {exc}") from exc
        while True:
            message = self._read(deadline)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self.events.append(message)
                del self.events[:-1000]  # a test reads the recent ones

    def next_event(self, method: str, *, timeout: float = 30.0) -> dict[str, Any]:
        """The params of the oldest unread event ``method`` (e.g. ``Fetch.requestPaused``),
        waiting for it if none came yet; taken out of :attr:`events`."""
        deadline = time.monotonic() + timeout
        while True:
            for i, message in enumerate(self.events):
                if message["method"] == method:
                    del self.events[i]
                    return dict(message.get("params", {}))
            try:
                message = self._read(deadline)
            except BrowserFailed:
                if self.process.poll() is None and time.monotonic() >= deadline:
                    raise AssertionError(f"the browser sent no `{method}` within {timeout} s"
                                         ) from None
                raise
            if "method" in message:
                self.events.append(message)

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = self.call("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, page=False)
        self.session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.goto(url)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"javascript failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                last = self.js(expression)
                if last:
                    return last
            time.sleep(0.1)
        raise AssertionError(f"the page never satisfied `{expression}` (last: {last!r})")

    def screenshot(self, path: Path) -> Path:
        """A PNG of the page as it is now, written to ``path`` (a test's own tmp dir)."""
        import base64

        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", page=False, timeout=10)
        with contextlib.suppress(Exception):
            self.process.wait(10)
        if self.process.poll() is None:
            self.process.kill()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)
        self.log.unlink(missing_ok=True)


@contextlib.contextmanager
def browser(binary: str) -> Iterator[Browser]:
    b = Browser(binary)
    try:
        yield b
    finally:
        b.close()
