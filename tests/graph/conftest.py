"""Shared fixtures of the graph tests: the rule fixtures and the two SHACL engines."""

from __future__ import annotations

import pytest

from cradle_kg.graph.shacl import PyShaclEngine, RustShaclEngine, Shapes, load_shapes


@pytest.fixture(scope="session")
def shapes() -> Shapes:
    return load_shapes()


@pytest.fixture(scope="session")
def rust(shapes: Shapes) -> RustShaclEngine:
    return RustShaclEngine(shapes)


@pytest.fixture(scope="session")
def pyshacl_engine(shapes: Shapes) -> PyShaclEngine:
    return PyShaclEngine(shapes)
