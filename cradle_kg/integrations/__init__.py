"""Faces for agents that already exist: MCP clients, MCP servers, LangGraph graphs.

* :mod:`.calls` — one governed tool call (arguments in, a proposal through both gates, a
  readable result out); shared by every integration and importing no framework;
* :mod:`.mcp_server` — ``cradle-kg mcp serve``: the home's tools over MCP (``[mcp]``);
* :mod:`.mcp_proxy` — ``cradle-kg mcp proxy``: an existing MCP server's tools, governed;
* :mod:`.langgraph` — ``GovernedToolNode`` and ``governed_tools`` (``[langgraph]``).

The core never imports these frameworks: each integration imports its extra lazily and
says, in one line, which extra to install when it is missing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingExtraError


def require(module: str, *, extra: str) -> ModuleType:
    """Import ``module`` or raise a one-line error naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"`{module}` is not installed: the `{extra}` integration needs it",
            hint=f"pip install 'cradle-kg[{extra}]'") from None
