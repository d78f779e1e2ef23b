"""The MCP SDK server session's two streams over stdio, with no relay between them and
the pipes (``mcp serve`` and ``mcp proxy`` on stdio; issue 12).

The SDK's ``stdio_server`` hands the session two anyio memory streams and runs two relay
tasks: one reads stdin's lines and sends each message into the first stream, the other
receives each message the session sends on the second and writes it to stdout. Every
message so crossed one more task and one more memory stream (each a pass of the event
loop) on its way in and on its way out. Here the session reads and writes the pipes
itself: :class:`LineReceiveStream` parses each line, in the session's task, as the SDK's
reader parses it (a JSON-RPC message, or the exception that refused it, handed to the
session), and :class:`LineSendStream` writes each message, in the task that sends it, as
the SDK's writer writes it (one line, ``by_alias``, ``exclude_none``). The bytes on the
wire are the same; the session, the server and their handlers are the SDK's own.

Imported only when the ``mcp`` extra is installed (anyio comes with it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage


class LineReceiveStream(ObjectReceiveStream["SessionMessage | Exception"]):
    """The session's incoming messages: ``lines`` (text lines, each read and checked by
    ``mcp_server``'s stdin reader) parsed one by one when the session asks for the next.
    A line that is no JSON-RPC message is the exception that says so, as the SDK's own
    reader hands it on; stdin that ends — or that can no longer be read or answered (the
    client left) — ends the stream."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def receive(self) -> SessionMessage | Exception:
        from mcp import types
        from mcp.shared.message import SessionMessage

        try:
            line = await anext(self._lines)
        except (StopAsyncIteration, OSError):
            raise anyio.EndOfStream from None
        try:
            return SessionMessage(types.JSONRPCMessage.model_validate_json(line))
        except Exception as exc:  # as the SDK's reader: the session answers it
            return exc

    async def aclose(self) -> None:
        closing: Callable[[], Awaitable[Any]] | None = getattr(self._lines, "aclose", None)
        if closing is not None:
            with contextlib.suppress(RuntimeError, OSError):  # running, or stdin gone
                await closing()


class LineSendStream(ObjectSendStream["SessionMessage"]):
    """The session's outgoing messages, each written by ``write`` as one whole line
    (``write`` returns once the pipe took it). A client that left is a broken stream to
    the SDK, which drops the answer as it drops one to a closed transport."""

    def __init__(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        self._write = write

    async def send(self, item: SessionMessage) -> None:
        data = item.message.model_dump_json(by_alias=True, exclude_none=True)
        try:
            await self._write(data.encode("utf-8") + b"\n")
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        """Nothing: stdout is ``mcp_server.pipe_stdio``'s to close."""
