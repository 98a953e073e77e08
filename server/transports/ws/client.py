"""A WebSocket client transport for the SDK's `Client`, for talking to our own `/ws`.

The SDK 2.x ships no WebSocket transport on either side; the server side is
`server/transports/ws/server.py`. This is the client half the bench uses to drive `/ws` with the same
`Client` (and so the same load loop) as HTTP: subprotocol `mcp`, one JSON-RPC message per text
frame, credentials in the `Authorization` header.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp import types
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

MAX_MESSAGE_BYTES = 4 * 1024 * 1024


@asynccontextmanager
async def websocket_client(url: str, token: str | None = None) -> AsyncIterator[TransportStreams]:
    """Streams of `SessionMessage`s over one WebSocket connection to `url` (ws://…/ws)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with connect(
        url, subprotocols=[Subprotocol("mcp")], additional_headers=headers, max_size=MAX_MESSAGE_BYTES
    ) as ws:

        async def read() -> None:
            async with incoming_send:
                try:
                    async for frame in ws:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
                        except ValueError as exc:  # the session surfaces it
                            await incoming_send.send(exc)
                            continue
                        await incoming_send.send(SessionMessage(message))
                except ConnectionClosed:
                    pass

        async def write() -> None:
            async with outgoing_receive:
                async for item in outgoing_receive:
                    await ws.send(item.message.model_dump_json(by_alias=True, exclude_unset=True))

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield incoming, outgoing
            finally:
                group.cancel_scope.cancel()
