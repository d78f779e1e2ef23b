"""A graph policy is held to an operator cap as well as a nesting cap.

Finding (twentieth attack review, beside ``test_276``): a pack's graph policy (``.rq``)
is held to the queries' size (100 KB) and nesting (128) caps before it is parsed, but
not to how long an expression or a path chains. ``ASK { FILTER(true || true || …) }``
with 12,000 ``||`` is 96 KB, nested one level: the engine's parser, on the process's own
stack, ended ``pack validate`` — the review of a pack one does not trust yet — and every
command that opens a home listing the pack (``submit``: nothing decided, nothing said) in
a segmentation fault. A sequence path of 1,000 steps (13 KB) took 108 s of CPU at the
review, and one ``submit`` on a home listing the pack 239 s (the home parses the rule as
it opens, gate 1 runs it); 400 steps were reviewed `valid`.

Now a graph policy holds at most 256 operators (``|| && ! = < > + - * / | ^``, strings,
IRIs and comments skipped; the rules and queries here hold at most 14): past it, a
``ManifestError`` naming the file — ``pack validate`` says invalid (exit 1), a home that
lists the pack does not open (one ``error:`` line, exit 2), nothing journaled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .malformed import door_refuses, home_with_pack, review_refuses

HEAD = '# @id("freeze-writes")\n# @verdict("deny")\n'
RULES = {
    "or chain": HEAD + "ASK { FILTER(" + "true || " * 12_000 + "true) }\n",
    "long path": HEAD + "ASK { ?a " + "/".join(["<urn:x:p>"] * 400) + " ?b }\n",
}


@pytest.mark.parametrize("form", sorted(RULES))
def test_review_and_home_refuse_a_long_chain(tmp_path: Path, form: str) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    (folder / "freeze.rq").write_text(RULES[form], encoding="utf-8")
    # before: -11 (SIGSEGV) with no output; or `valid` after 7 s of planning
    review_refuses(folder, "freeze.rq", "operators")
    door_refuses("--home", str(home), needle="freeze.rq", proposal=tmp_path / "credit.json")
