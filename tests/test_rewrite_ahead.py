"""``tests/rewrite_ahead.py`` (``./dev test``'s step before the test processes) writes what
pytest itself reads back, for every module the suite collects."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests import rewrite_ahead


def test_a_module_rewritten_ahead_is_read_back_as_pytest_rewrites_it(tmp_path: Path) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text("def test_sum():\n    total = 1 + 1\n    assert total == 3, total\n")
    pyc = tmp_path / "__pycache__" / ("test_sample" + rewrite.PYC_TAIL)
    assert rewrite._read_pyc(module, pyc) is None
    assert rewrite_ahead._rewrite(module)
    read = rewrite._read_pyc(module, pyc)
    assert read is not None  # pytest accepts the file: its hash, its format, its path
    assert read == rewrite._rewrite_test(module, None)[1]  # type: ignore[arg-type]
    assert read != compile(module.read_bytes(), str(module), "exec")  # its asserts rewritten
    assert not rewrite_ahead._rewrite(module)  # current: not written again
    module.write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    assert rewrite._read_pyc(module, pyc) is None  # stale once the source changed
    assert rewrite_ahead._rewrite(module)
    assert marshal.loads(pyc.read_bytes()[16:]) == rewrite._rewrite_test(module, None)[1]  # type: ignore[arg-type]


def test_every_collected_module_is_rewritten_ahead(request: pytest.FixtureRequest) -> None:
    ahead = set(rewrite_ahead.modules())
    collected = {Path(str(item.path)).resolve() for item in request.session.items}
    assert collected and collected <= ahead, sorted(map(str, collected - ahead))[:10]
