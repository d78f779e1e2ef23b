"""A PostgreSQL journal URL's password never reaches a message (real CLI subprocesses).

Finding: ``redact`` hid a password only in ``user:password@``. With no user name
(``postgresql://:pw@host/db``), as a ``password=`` parameter (``?password=pw``), or when
libpq itself quoted it (``invalid percent-encoded token: "pw%zz"``), ``journal copy``,
``db migrate`` and ``db status`` printed the password in their one-line error — into
terminals, CI logs and bug reports. Every form is now redacted, and libpq's message is
scrubbed of the password too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg.storage import redact

from ..server.conftest import free_port
from .homes import opened_demo_home, without_journal_url

SECRET = "s3cretPW"


def _urls(port: int) -> list[str]:
    host = f"127.0.0.1:{port}"
    return [f"postgresql://:{SECRET}@{host}/db",
            f"postgresql://{host}/db?password={SECRET}",
            f"postgresql://{host}/db?sslmode=disable&PASSWORD={SECRET}",
            f"postgresql://u:{SECRET}%zz@{host}/db",
            f"postgresql://u:{SECRET}@ex@{host}/db",
            f"postgres://u:{SECRET}@{host}/db"]


@pytest.mark.parametrize("url", _urls(5))
def test_redact_hides_every_form_of_the_password(url: str) -> None:
    assert SECRET not in redact(url)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # `journal copy` reads the home's SQLite file: embedded whatever the suite's backend
    return opened_demo_home(tmp_path_factory, "urls", embedded=True)


@pytest.mark.parametrize("command", [["journal", "copy", "--to"], ["db", "migrate", "--journal"],
                                     ["db", "status", "--journal"]])
def test_the_cli_never_prints_the_password(home: Path, command: list[str]) -> None:
    port = free_port()  # nobody listens there: the connection is refused at once
    for url in _urls(port):
        done = subprocess.run([sys.executable, "-m", "cradle_kg", *command, url, "--home",
                               str(home)], capture_output=True, text=True, timeout=60,
                              env=without_journal_url())
        assert done.returncode == 2, done
        assert done.stderr.startswith("error: cannot connect to the journal"), done.stderr
        assert SECRET not in done.stdout + done.stderr, (url, done.stderr)
