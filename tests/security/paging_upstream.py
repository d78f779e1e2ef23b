"""An upstream MCP server that lists its tools a page at a time (official SDK, low-level
``Server``, stdio): ``python paging_upstream.py MODE``. Each page holds one tool, with a
``nextCursor`` to the next. MODE ``plain``: ``save_note``, ``archive``, ``send_note``;
``twice``: ``save_note`` on page one, then another definition of it on page two;
``endless``: a next page, always; ``many``: 20 pages of 1,000 tools each; ``fat``: 20
pages of one tool each, described in 2 MiB.
"""

from __future__ import annotations

import sys


def main() -> None:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    mode = sys.argv[1]
    server: Server[object, object] = Server("paging")

    def tool(name: str, size: int = 40, said: str | None = None) -> types.Tool:
        return types.Tool(name=name, description=said, inputSchema={
            "type": "object", "required": ["id"],
            "properties": {"id": {"type": "string", "maxLength": size}}})

    pages = {"plain": [tool("save_note"), tool("archive"), tool("send_note")],
             "twice": [tool("save_note"), tool("save_note", 4000)]}.get(mode)

    async def tools(req: types.ListToolsRequest) -> types.ServerResult:
        at = int(req.params.cursor) if req.params and req.params.cursor else 0
        if mode in ("many", "fat"):
            more = str(at + 1) if at + 1 < 20 else None
            listed = ([tool(f"t{at}_{i}") for i in range(1000)] if mode == "many"
                      else [tool(f"t{at}", said="x" * (2 << 20))])
            return types.ServerResult(types.ListToolsResult(tools=listed, nextCursor=more))
        if pages is None:  # endless
            return types.ServerResult(types.ListToolsResult(tools=[tool(f"t{at}")],
                                                            nextCursor=str(at + 1)))
        more = str(at + 1) if at + 1 < len(pages) else None
        return types.ServerResult(types.ListToolsResult(tools=[pages[at]], nextCursor=more))

    server.request_handlers[types.ListToolsRequest] = tools

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
