"""The order the suite's files run in: the long ones first.

``./dev test`` hands whole files to two or more processes (``--dist loadfile``), in queue
order; each process takes the next file when it is free. pytest-xdist orders the queue by
the number of tests in a file, so files of a few long tests (the crash injections, the
README's shell block, the airline replay, the servers and browsers) came last, and one
process was still running one of them minutes after the other had finished. Here the files
that hold a test marked ``slow`` (``@pytest.mark.slow``, or ``pytestmark`` for a module
whose set-up is long) come first, the rest after; within each part, more tests first (as
pytest-xdist did), and a file's own tests keep their order. ``-m "not slow"`` leaves them
out for a quick run; the CI runs every test.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # keep the order made below


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    slow = {name for name, its in files.items()
            if any(it.get_closest_marker("slow") is not None for it in its)}
    order = sorted(files, key=lambda name: (name not in slow, -len(files[name])))
    items[:] = [item for name in order for item in files[name]]
