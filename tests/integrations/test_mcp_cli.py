"""The ``cradle-kg mcp`` command's refusals, and the missing-extra error: one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import MissingExtraError
from cradle_kg.integrations import require

from .conftest import cli


def test_stdio_needs_a_configured_agent(home: Path) -> None:
    missing = cli("mcp", "serve", "--home", str(home))
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: `--agent` is required on stdio")
    unknown = cli("mcp", "serve", "--home", str(home), "--agent", "agent:nobody")
    assert unknown.returncode == 2
    assert "`agent:nobody` is not an agent declared" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_http_takes_no_agent_option(home: Path) -> None:
    out = cli("mcp", "serve", "--home", str(home), "--transport", "streamable-http",
              "--agent", "agent:ledger-assistant")
    assert out.returncode == 2 and "bearer token says who calls" in out.stderr


def test_a_missing_extra_names_the_extra_to_install() -> None:
    with pytest.raises(MissingExtraError) as caught:
        require("cradle_kg_no_such_module", extra="mcp")
    assert caught.value.message == ("`cradle_kg_no_such_module` is not installed: the `mcp` "
                                    "integration needs it")
    assert caught.value.hint == "pip install 'cradle-kg[mcp]'"
