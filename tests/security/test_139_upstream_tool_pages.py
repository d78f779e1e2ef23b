"""The proxy reads every page of the upstream's tool list.

Finding (eighth attack review): ``cradle-kg mcp proxy`` (and ``mcp pins``) listed the
upstream's tools with one ``tools/list`` and ignored its ``nextCursor``: a tool on a later
page could not be declared (the proxy refused to start: "the contracts name `send_note`,
which the upstream does not offer"), and ``mcp pins`` never printed it for review. When
the upstream listed again after ``notifications/tools/list_changed``, only its first page
was compared with the pins — a name a later page listed a second time, with another
definition, went unseen.

Now the tools are read page after page (at most 100 pages, each within the upstream's
timeout), and an upstream that lists a name twice, or pages without end, is refused in one
line — at start, and when it lists again (the call is refused, the upstream not called).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from cradle_kg.errors import InputError

pytest.importorskip("mcp")

UPSTREAM = [sys.executable, str(Path(__file__).with_name("paging_upstream.py"))]


def _listed(mode: str) -> list[str]:
    from cradle_kg.integrations.proxy import connect

    names: list[str] = []

    async def main() -> None:
        async with connect([*UPSTREAM, mode], None) as (_, tools):
            names.extend(t.name for t in tools)

    anyio.run(main)
    return names


def test_every_page_of_the_upstreams_tools_is_read() -> None:
    assert _listed("plain") == ["save_note", "archive", "send_note"]


@pytest.mark.parametrize("mode,said", [("twice", "lists `save_note` twice"),
                                       ("endless", "in more than 100 pages")])
def test_a_name_listed_twice_or_endless_pages_are_refused(mode: str, said: str) -> None:
    with pytest.raises(BaseException) as refused:
        _listed(mode)
    found = refused.value
    while isinstance(found, BaseExceptionGroup):  # raised inside the session's task group
        found = found.exceptions[0]
    assert isinstance(found, InputError) and said in found.message, found
