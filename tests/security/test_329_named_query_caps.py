"""A pack's named query is held to the nesting and operator caps before it runs.

Finding (twentieth attack review, beside ``test_276`` and ``test_328``): the named queries a
pack adds (its manifest's ``queries:``) were read as files of at most 100 KB, and nothing
more: ``pack validate`` did not look inside them. A query nested 20,000 brackets deep
was reviewed ``valid`` (refused only when run), and one of 12,000 ``||`` (96 KB, nested
once) too — and ``cradle-kg query NAME`` on a home that enables the pack, the engine's
parser on the process's own stack, ended in a segmentation fault, no output (the
endpoint's workers, whose stack is large, answer it).

Now a named query, a pack's or a folder's, is held to the endpoint's nesting cap (128)
and to 1,000 operators as the catalog reads it: ``pack validate`` reports the pack
invalid naming the file (exit 1), and ``query`` on such a home is one ``error:`` line
(exit 2). The queries shipped here hold at most 14 operators.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .malformed import door_refuses, home_with_pack, review_refuses

HEAD = "# question: the runs\n"
QUERIES = {
    "or chain": HEAD + "SELECT * WHERE { FILTER(" + "true || " * 12_000 + "true) }\n",
    "nested": HEAD + "SELECT * WHERE { " + "{ " * 20_000 + "}" * 20_000 + " }\n",
}


@pytest.mark.parametrize("form", sorted(QUERIES))
def test_review_and_query_refuse_it(tmp_path: Path, form: str) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    (folder / "open.rq").write_text(QUERIES[form], encoding="utf-8")
    review_refuses(folder, "open.rq")  # before: `valid` (exit 0)
    door_refuses("query", "open", "--home", str(home), needle="`open`")  # before: -11, silent
