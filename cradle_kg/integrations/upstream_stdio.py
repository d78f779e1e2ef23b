"""The proxy's stdio upstream: the SDK's ``stdio_client``, with every line read capped.

The SDK's client reads the upstream's stdout by ``buffer + chunk`` with no limit: an
upstream that writes one line without an end grows the proxy's memory without bound (and
its CPU quadratically, a copy of the whole buffer a read). :func:`stdio_upstream` starts
the upstream as the SDK does — the same :class:`~mcp.client.stdio.StdioServerParameters`
(command, arguments, the SDK's default environment under ``env``, ``cwd``, encoding),
stderr passed through, a new process group, and on exit stdin closed, then the process
tree terminated if it has not left — writes each message as one line to its stdin, and
reads its stdout through :func:`.mcp_server.capped_lines`, the reader of ``mcp serve``'s
stdin.

A line past ``cap`` bytes is dropped as it arrives. Its id cannot be read (and an
upstream can put it anywhere in the line), so the moment a line passes the cap every
request still waiting for an answer is answered with a JSON-RPC error: those calls fail
(the gateway journals a failed call, gate 2 reads the state back), the framing is kept
(the next line is read as usual), and the session goes on for the next call. A line that
is not a JSON-RPC message — bad JSON, bytes not in the encoding — is an exception on the
read stream, as the SDK's reader sends it (where the SDK's reader raised out of its task
on bytes not in the encoding, and so ended the proxy). A line the strict loader refuses (a
key given twice, ``NaN``, a lone surrogate: :func:`line_refusal`) that answers a waiting
request fails that call at once; any other is such an exception.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TextIO

from .mcp_server import capped_lines

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

#: bytes read from the upstream's stdout at a time
CHUNK = 1 << 16
#: the JSON-RPC code of the error that answers a request whose answer was too long
INVALID_REQUEST = -32600
#: how the error that stands for an upstream's answer begins
ANSWER = "the upstream's answer: "


def upstream_cap(max_bytes: int, max_output_bytes: int) -> int:
    """The longest line read from an upstream: an answer carries its output twice (the
    structured content and its text), the text's JSON escaping can double that again, and
    the envelope is a message's size. Past it the output would break
    ``max_output_bytes`` anyway (the call fails either way)."""
    return 4 * max_output_bytes + max_bytes


#: how deep an upstream's line may nest: a record's ceiling, and the JSON-RPC envelope
_ENVELOPE_LEVELS = 4


def line_refusal(line: bytes) -> tuple[str | int | None, str] | None:
    """Why the strict loader refuses an upstream's line, and the id it answers (None when
    it cannot be read), or None when the line passes: a key given twice, ``NaN``, a lone
    surrogate, a number past 1,000 digits, nesting past a record's ceiling.

    The SDK's parser read a line's key given twice last-wins (``"structuredContent":
    {"ok": false, "ok": true}`` answered ok) and took ``NaN``; a lone surrogate made it
    send an exception, and the call waited out its 60 s (``tests/security/test_99``)."""
    import json

    from ..errors import InputError
    from ..inputs import CEILINGS, load_json

    limits = CEILINGS.model_copy(update={
        "max_bytes": 1 << 62, "max_string_length": 1 << 62,
        "max_depth": CEILINGS.max_depth + _ENVELOPE_LEVELS})
    try:
        load_json(line, limits=limits, source="the upstream's line")
    except InputError as exc:
        rid: str | int | None = None
        with contextlib.suppress(ValueError, RecursionError):
            found = json.loads(line)
            if isinstance(found, dict) and isinstance(found.get("id"), str | int) \
                    and not isinstance(found.get("id"), bool):
                rid = found["id"]
        return rid, exc.message
    return None


def too_long(cap: int) -> str:
    """The error of a call whose answer passed ``cap`` bytes (stdio and HTTP alike)."""
    return f"{ANSWER}more than the limit of {cap} bytes (dropped)"


@contextlib.asynccontextmanager
async def stdio_upstream(params: StdioServerParameters, cap: int, errlog: TextIO = sys.stderr
                         ) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage
                                                                            | Exception],
                                                  MemoryObjectSendStream[SessionMessage]]]:
    """``(read_stream, write_stream)`` for ``ClientSession``, as ``stdio_client`` yields."""
    import anyio
    from mcp import types
    from mcp.client import stdio
    from mcp.os.posix.utilities import terminate_posix_process_tree
    from mcp.shared.message import SessionMessage

    read_writer: MemoryObjectSendStream[SessionMessage | Exception]
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_stream: MemoryObjectSendStream[SessionMessage]
    write_reader: MemoryObjectReceiveStream[SessionMessage]
    read_writer, read_stream = anyio.create_memory_object_stream(0)
    write_stream, write_reader = anyio.create_memory_object_stream(0)
    streams = (read_stream, write_stream, read_writer, write_reader)
    env = stdio.get_default_environment()
    if params.env is not None:
        env.update(params.env)
    try:
        # as the SDK starts one on POSIX: its own session, so that its tree can be ended
        process: Any = await anyio.open_process(
            [params.command, *params.args], env=env, stderr=errlog, cwd=params.cwd,
            start_new_session=True)
    except OSError:
        for stream in streams:
            await stream.aclose()
        raise

    waiting: set[str | int] = set()  # ids of the requests sent and not yet answered

    async def fail_waiting() -> None:
        message = too_long(cap)
        logger.warning("%s", message)
        for rid in sorted(waiting, key=str):
            await read_writer.send(SessionMessage(types.JSONRPCMessage(types.JSONRPCError(
                jsonrpc="2.0", id=rid,
                error=types.ErrorData(code=INVALID_REQUEST, message=message)))))
        waiting.clear()

    async def read() -> bytes:
        try:
            chunk: bytes = await process.stdout.receive(CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""
        return chunk

    async def stdout_reader() -> None:
        try:
            async with read_writer:
                async for line in capped_lines(read, cap, fail_waiting):
                    if line is None:  # its callers were answered when it passed the cap
                        continue
                    if len(line) - line.endswith(b"\n") > cap:
                        await fail_waiting()
                        continue
                    refused = line_refusal(line)
                    if refused is not None and refused[0] in waiting:
                        # the answer to a waiting call: that call fails at once
                        rid, why = refused
                        assert rid is not None
                        logger.warning("the upstream's answer to %s was refused: %s", rid, why)
                        waiting.discard(rid)
                        await read_writer.send(SessionMessage(types.JSONRPCMessage(
                            types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
                                code=INVALID_REQUEST, message=f"{ANSWER}refused: {why}")))))
                        continue
                    if refused is not None:  # not an answer to a waiting call: as bad JSON
                        logger.warning("the upstream wrote a line that is refused: %s",
                                       refused[1][:300])
                        await read_writer.send(ValueError(refused[1]))
                        continue
                    try:
                        message = types.JSONRPCMessage.model_validate_json(
                            line.decode(params.encoding, params.encoding_error_handler))
                    except Exception as exc:  # not a message: the SDK's reader sends it on
                        logger.warning("the upstream wrote a line that is not a JSON-RPC "
                                       "message: %s", str(exc)[:300])
                        await read_writer.send(exc)
                        continue
                    if isinstance(message.root, types.JSONRPCResponse | types.JSONRPCError):
                        waiting.discard(message.root.id)
                    await read_writer.send(SessionMessage(message))
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async def stdin_writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    root = session_message.message.root
                    if isinstance(root, types.JSONRPCRequest):
                        waiting.add(root.id)
                    elif isinstance(root, types.JSONRPCNotification) and \
                            root.method == "notifications/cancelled":
                        waiting.discard((root.params or {}).get("requestId", ""))
                    text = session_message.message.model_dump_json(by_alias=True,
                                                                   exclude_none=True)
                    await process.stdin.send((text + "\n").encode(
                        params.encoding, params.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg, process:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # as the SDK's: stdin closed, a while to leave, then the process tree ended
            with contextlib.suppress(Exception):
                await process.stdin.aclose()
            try:
                with anyio.fail_after(stdio.PROCESS_TERMINATION_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                await terminate_posix_process_tree(process)
            except ProcessLookupError:
                pass
            for stream in streams:
                await stream.aclose()
