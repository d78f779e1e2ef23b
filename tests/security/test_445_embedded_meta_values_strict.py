"""The embedded store's watermark, layout and journal are read as strictly as a remote one's.

Finding: ``test_80`` made a remote store's meta values strict (one value, a literal, ASCII
digits for a number), but the embedded store still read them with ``int()`` and took the
first of several. A store whose watermark was edited to ``"abc"`` made ``graph verify``,
``graph sync`` (and every command that opens the store) end in ``error: unexpected
ValueError`` — no typed error, no hint; ``"٣"`` (an Arabic-Indic three) was read as
event 3, and of two watermarks, or two journal identities, the first in the store's
order won.

Now: the rule is one function for both stores (``storage.graph.meta_number``,
``meta_text``): such a meta graph is one ``error:`` line naming the value that is not a
number, or the values that are several, with the hint to rebuild (exit 2), before
anything is compared or projected.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.home import Home
from tests.inprocess import run_cli
from tests.security.test_443_graph_verify_meta_graph import CRADLE, META, XSD, home

__all__ = ["home"]  # the fixture: a home and its store, rebuilt

SEQ = ox.NamedNode(CRADLE + "projectedSeq")
VERSION = ox.NamedNode(CRADLE + "projectionVersion")
JOURNAL = ox.NamedNode(CRADLE + "projectedJournal")


def _int(text: str) -> ox.Literal:
    return ox.Literal(text, datatype=ox.NamedNode(XSD + "integer"))


def _set(home: Path, predicate: ox.NamedNode, *values: ox.Literal, keep: bool = False
         ) -> None:
    store = ox.Store(str(Home(home).graph))
    if not keep:
        for quad in list(store.quads_for_pattern(META, predicate, None, META)):
            store.remove(quad)
    for value in values:
        store.add(ox.Quad(META, predicate, value, META))
    store.flush()
    del store


@pytest.mark.parametrize(("predicate", "values", "keep", "said"), [
    (SEQ, (ox.Literal("abc"),), False, "is not a number"),
    (SEQ, (ox.Literal("\u0663"),), False, "is not a number"),
    (VERSION, (ox.Literal("4x"),), False, "is not a number"),
    (SEQ, (_int("7"),), True, "2 values"),
], ids=["watermark-text", "watermark-arabic-digit", "layout-text", "two-watermarks"])
@pytest.mark.parametrize("command", [("graph", "verify"), ("graph", "sync")])
def test_a_malformed_meta_value_is_one_typed_error(
        home: Path, predicate: ox.NamedNode, values: tuple[ox.Literal, ...], keep: bool,
        said: str, command: tuple[str, str]) -> None:
    _set(home, predicate, *values, keep=keep)
    done = run_cli(*command, "--home", str(home))
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "unexpected" not in out, out
    assert done.returncode == 2 and said in out, out
    assert "graph rebuild" in out, out


def test_two_journal_identities_are_one_typed_error(home: Path) -> None:
    """(Read where the store is compared with a journal: ``graph sync`` of a store at the
    journal's head reads no identity.)"""
    _set(home, JOURNAL, ox.Literal("sha256:" + "0" * 64), keep=True)
    done = run_cli("graph", "verify", "--home", str(home))
    out = done.stdout + done.stderr
    assert "unexpected" not in out and done.returncode == 2 and "2 values" in out, out
