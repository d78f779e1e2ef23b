"""The README's links to its own sections land on a heading (its contents list included)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def anchors(text: str) -> set[str]:
    """Each heading's anchor as GitHub makes it: lower case, punctuation dropped (letters,
    digits, ``_`` and ``-`` kept), spaces as ``-``; a repeated one gets ``-1``, ``-2``."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^#{1,6} (.*)$", line)
        if match is None:
            continue
        anchor = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        out.add(f"{anchor}-{n}" if n else anchor)
    return out


def test_every_link_to_a_section_lands_on_one() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(#([^)\s]+)\)", text)
    assert len(links) > 20
    missing = sorted({link for link in links if link not in anchors(text)})
    assert missing == []


def test_the_contents_list_every_top_level_section() -> None:
    text = README.read_text(encoding="utf-8")
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    sections = [h for h in re.findall(r"^## (.*)$", text, re.M) if h != "Contents"]
    listed = re.findall(r"^- \[([^\]]+)\]", contents, re.M)
    assert listed == sections
