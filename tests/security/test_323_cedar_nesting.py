"""A Cedar policy is held to a nesting and a chaining cap before cedar parses it.

Finding (twentieth attack review): what ``test_276`` found for a pack's graph policies
(``.rq``) held for its Cedar policies too. Cedar's parser recurses natively, and a policy
whose brackets nest 1,000 deep (2 KB of text: parentheses, a set, a record), or whose
expression chains 10,000 ``if … then`` or 100,000 ``&&`` / ``+`` / ``.attr``, ended the
process in a segmentation fault with no output. ``pack validate`` — the review of a pack
one does not trust yet — died so on the pack's ``rules.cedar``, as did every command that
opens a home listing the pack (``submit``: nothing decided, nothing said), and ``replay``
rebuilds the policy sets a handed journal records from their texts.

Now every policy text is scanned first (strings and comments skipped, linear time):
brackets nested deeper than 64 or a statement of more than 1,000 operators is a
``PolicyError`` naming the file and line — ``pack validate`` reports the pack invalid
(exit 1), a home that lists it does not open (one ``error:`` line, exit 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .malformed import door_refuses, home_with_pack, review_refuses

FORMS = {
    "parentheses": "(" * 2000 + "true" + ")" * 2000,
    "set": "[" * 2000 + "1" + "]" * 2000 + " == [1]",
    "record": "{a: " * 2000 + "1" + "}" * 2000 + " == {}",
    "if chain": "if true then " * 20_000 + "true" + " else false" * 20_000,
    "and chain": " && ".join(["true"] * 200_000),
    "attribute chain": "context" + ".a" * 200_000 + " == 1",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_review_and_home_refuse_a_deep_policy(tmp_path: Path, form: str) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    (folder / "rules.cedar").write_text(
        '@id("deep")\nforbid (principal, action, resource)\n  when { ' + FORMS[form]
        + " };\n", encoding="utf-8")
    # before: -11 (SIGSEGV), nothing on stdout or stderr — both
    review_refuses(folder, "rules.cedar")
    door_refuses("--home", str(home), needle="rules.cedar", proposal=tmp_path / "credit.json")
