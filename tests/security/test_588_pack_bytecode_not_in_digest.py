"""Finding (twenty-sixth review, the round's late changes): a pack's digest
(``packs/loader.pack_digest``: what each decision records as the code that decided it, and
what strict replay compares, ``test_555``/``test_575``) leaves Python's bytecode out —
``__pycache__`` and every ``*.pyc`` — but the pack was imported with Python's ordinary
loaders, which *run* bytecode: a ``__pycache__/checks.<tag>.pyc`` whose header names the
source's mtime and size (or an unchecked hash-based one) is run instead of ``checks.py``,
and a ``checks.pyc`` with no ``checks.py`` beside it is a module of its own. So the code
that decided was not the code the recorded digest names: a pack whose validator lets a
credit through in ``checks.py`` denied it by its bytecode (``assert 'denied' ==
'executed'``) under a digest equal to the lenient folder's, and a pack's validator held
only as bytecode decided under a digest that hashes none of its code.

Now a pack's modules are compiled from their source files alone (``loader``'s source-only
loader and finder): a bytecode cache is never read (nor written), and a module with no
source is not found — the code that runs is the code the digest hashes.
"""

from __future__ import annotations

import importlib.util
from importlib._bootstrap_external import (  # type: ignore[attr-defined]
    _code_to_hash_pyc,
    _code_to_timestamp_pyc,
)
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.errors import ManifestError
from cradle_kg.packs.loader import pack_digest
from cradle_kg.records import OutcomeStatus, Proposal
from tests.security.homes import credit
from tests.security.pack_versions import LENIENT, OLD, PACK, old_folder, write_pack

pytestmark = pytest.mark.usefixtures("journal_backend")

#: the tampered code: the same validator name, denying every credit
DENYING = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("demo.ledger.credit", name="acme.rules.check")
def check(ctx, proposal, spec):
    return [Finding(code="acme_bytecode", message="the bytecode refuses credits")]
'''


def _bytecode(source_file: Path, *, unchecked: bool) -> bytes:
    """``DENYING`` compiled as a cache of ``source_file`` Python accepts for it."""
    code = compile(DENYING, str(source_file), "exec")
    if unchecked:  # a hash-based pyc Python never checks against its source
        return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(b""), False))
    st = source_file.stat()
    return bytes(_code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))


def _install(home: Path, checks: str = LENIENT) -> Path:
    """``acme.rules`` 1.0.0 in the home's ``packs/``, named by the home, not loaded yet."""
    folder = write_pack(old_folder(home), "1.0.0", checks)
    config = load_config(home / "config.json")
    save_config(home / "config.json",
                config.model_copy(update={"packs": (*config.packs, PACK)}))
    return folder


def _credit(home: Path, pid: str) -> tuple[OutcomeStatus, dict[str, str]]:
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(credit(pid, amount=100)))
        digests = dict(rt.pack_digests)  # what the decision recorded
    return out.status, digests


@pytest.mark.parametrize("unchecked", [False, True], ids=["timestamp", "unchecked-hash"])
def test_a_bytecode_cache_is_not_what_decides(home: Path, unchecked: bool) -> None:
    folder = _install(home)  # checks.py lets credits through
    digest = pack_digest(folder)
    cache = Path(importlib.util.cache_from_source(str(folder / "checks.py")))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(_bytecode(folder / "checks.py", unchecked=unchecked))
    assert pack_digest(folder) == digest  # a cache is not the pack's
    status, digests = _credit(home, f"p-cache-{int(unchecked)}")
    assert digests[OLD] == digest
    # before: 'denied' is 'executed' — the bytecode decided, under the source's digest
    assert status is OutcomeStatus.EXECUTED, status


def test_a_module_held_only_as_bytecode_is_not_imported(home: Path) -> None:
    folder = _install(home)
    source = folder / "checks.py"
    (folder / "checks.pyc").write_bytes(_bytecode(source, unchecked=True))
    source.unlink()
    # before: the pack loaded and its validator — bytecode the digest never hashed — denied
    with pytest.raises(ManifestError) as caught:
        _credit(home, "p-sourceless")
    assert "`checks`" in caught.value.message, caught.value.message


def test_bytecode_beside_the_sources_is_in_the_digest(tmp_path: Path) -> None:
    """A ``*.pyc`` outside ``__pycache__`` is no cache Python writes (it writes them only
    there): a file the pack ships — code its own source may load by another route (a folder
    put on ``sys.path``) — so it is hashed like any other file."""
    one = write_pack(tmp_path / "one", "1.0.0", LENIENT)
    two = write_pack(tmp_path / "two", "1.0.0", LENIENT)
    (one / "helper.pyc").write_bytes(_bytecode(one / "checks.py", unchecked=True))
    (two / "helper.pyc").write_bytes(b"\0" + _bytecode(two / "checks.py", unchecked=True))
    # before: the same digest (every *.pyc was left out)
    assert pack_digest(one) != pack_digest(two)
