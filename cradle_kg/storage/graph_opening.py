"""Which graph store a home uses, and opening it (:mod:`.graph_config` says how it is set)."""

from __future__ import annotations

from pathlib import Path

from .graph import GraphStore
from .graph_config import GraphEndpoints, graph_setting, resolve


def home_graph_setting(root: Path) -> GraphEndpoints | None:
    """The remote store of the home at ``root`` (environment, then ``config.json``), or
    None for the embedded store."""
    from ..config import load_config
    from ..home import Home

    home = Home(root)
    configured = load_config(home.config).graph if home.config.is_file() else None
    return graph_setting(configured)


def is_remote(root: Path) -> bool:
    return home_graph_setting(root) is not None


def open_graph_store(root: Path, *, remote: GraphEndpoints | None = None) -> GraphStore:
    """The graph store of the home at ``root``: the remote store its setting names, else
    the embedded on-disk store (locked: a busy one raises ``GraphBusyError``)."""
    setting = remote if remote is not None else home_graph_setting(root)
    if setting is not None:
        from .sparql_http import SparqlHttpStore

        return SparqlHttpStore(resolve(setting))
    from ..home import Home
    from .oxigraph import OxigraphStore

    return OxigraphStore(Home(root).graph)


__all__ = ["home_graph_setting", "is_remote", "open_graph_store"]
