"""``--anchor``: a sequence number Python will not read is an input error, not a traceback.

Finding (twenty-fifth review, the late changes: ``replay --strict --anchor``, ``test_525``,
and ``audit verify --anchor``): ``Anchor.parse`` took the text before the first ``:`` as a
sequence number when ``str.isdigit()`` said so, then ``int()`` read it. ``isdigit`` is true
of characters ``int`` refuses (``²``, ``①``: digits that are no decimal digit) and of any
number of digits, where ``int`` reads at most 4,300: ``²:sha256:…`` or a 5,000-digit seq
raised ``ValueError`` out of the command (a traceback, exit 1), where ``nope`` was exit 2
with the anchor's form.

Now the sequence number is ASCII decimal digits, at most 19 (a journal's seq is a 64-bit
integer): anything else is the same ``InputError`` as any malformed anchor (exit 2, the
form it must have). ``1:sha256:…`` reads as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import InputError
from cradle_kg.storage import Anchor
from tests.inprocess import run_cli

HASH = "sha256:" + "a" * 64


@pytest.mark.parametrize("seq", ["²", "①", "\uff19", "9" * 5000, "9" * 20])
def test_a_seq_that_is_no_decimal_number_is_an_input_error(tmp_path: Path, seq: str) -> None:
    with pytest.raises(InputError):  # before: ValueError (or a seq of full-width digits)
        Anchor.parse(f"{seq}:{HASH}")
    for argv in (("replay", "--strict"), ("audit", "verify")):
        done = run_cli(*argv, "--anchor", f"{seq}:{HASH}", "--home", str(tmp_path / "h"))
        out = done.stdout + done.stderr
        assert done.returncode == 2 and "Traceback" not in out and "ValueError" not in out, out


def test_a_decimal_seq_reads_as_before() -> None:
    assert Anchor.parse(f"12:{HASH}") == Anchor(hash=HASH, seq=12)
    assert Anchor.parse(HASH) == Anchor(hash=HASH)
