"""``cradle-kg pack test``: an example whose ``expect`` is empty checks nothing.

Finding (twenty-fifth review, the late changes: ``test_520``): an example "that says
neither" ``expect`` nor the runner's ``as_expected`` has nothing to check and fails the
pack. ``"expect": {}`` said it in form only: a partial answer naming no key matches every
object the runner answers — a pack whose only example expected ``{}`` reported
``examples matched: 1 of 1``, exit 0, whatever its runner answered.

Now an empty ``expect`` is nothing to check, as a missing one is: the example is not as
expected (exit 1, "nothing to check"). An object inside an ``expect`` that names a key
(``{"detail": {}}``: the answer has ``detail``, an object) still checks that.
"""

from __future__ import annotations

from pathlib import Path

from .test_520_pack_test_checks_examples import PASSING, _pack, _pack_test


def test_an_empty_expect_checks_nothing(tmp_path: Path) -> None:
    pack = _pack(tmp_path, tests=PASSING, examples={
        "anything": {"status": "whatever the runner says", "expect": {}},
    })
    done = _pack_test(pack)
    out = done.stdout + done.stderr
    # before: 'examples matched: 1 of 1', exit 0
    assert done.returncode == 1, out
    assert "1 of 1 examples not as expected" in out and "nothing to check" in out, out


def test_a_key_with_an_empty_object_still_checks_the_key(tmp_path: Path) -> None:
    pack = _pack(tmp_path / "a", tests=PASSING, examples={
        "has": {"status": "ok", "expect": {"detail": {}}},
    })
    done = _pack_test(pack)
    assert done.returncode == 0, done.stdout + done.stderr
    pack = _pack(tmp_path / "b", tests=PASSING, examples={
        "lacks": {"status": "ok", "expect": {"nowhere": {}}},
    })
    done = _pack_test(pack)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "nowhere: missing from the answer" in out, out
