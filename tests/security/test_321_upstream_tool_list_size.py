"""The upstream's tool list is bounded as a whole, not only page by page.

Finding (twentieth attack review): ``test_139`` made ``mcp proxy`` read every page of the
upstream's ``tools/list`` — up to 100 pages, each an answer within the line cap
(``4 * max_output_bytes + max_bytes``, 65 MiB by default) — and kept every tool of every
page. A hostile upstream listing 10 MB pages of small tools took the proxy to 354 MB of
memory and 6 s of CPU for one page, 955 MB and 28 s for four (measured); a hundred pages
at the cap hold far more than a machine has. It lists at start, and again on the call
after each ``notifications/tools/list_changed`` it sends.

Now the listing as a whole is bounded: at most ``MAX_UPSTREAM_TOOLS`` tools (4,096) and
``MAX_TOOL_LIST_BYTES`` (16 MiB) of tool definitions (their JSON), checked after each page
— a listing past either is refused in one line, at start and when it lists again, as an
endless one is.
"""

from __future__ import annotations

import pytest

from cradle_kg.errors import InputError

from .test_139_upstream_tool_pages import _listed

pytest.importorskip("mcp")


@pytest.mark.parametrize("mode,said", [("many", "more than 4096 tools"),
                                       ("fat", "more than 16777216 bytes")])
def test_a_tool_list_past_its_bound_is_refused(mode: str, said: str) -> None:
    with pytest.raises(BaseException) as refused:  # before: 20,000 tools, or 40 MiB, kept
        _listed(mode)
    found = refused.value
    while isinstance(found, BaseExceptionGroup):  # raised inside the session's task group
        found = found.exceptions[0]
    assert isinstance(found, InputError) and said in found.message, found

