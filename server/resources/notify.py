"""Telling a user's connected clients that their items changed, and no one else's.

A write (`notes_create`, `notes_update`) or the folder watcher publishes an `ItemChange` (the
user, the source, the uris added, updated and removed) to `Notifier.publish`. Then:

- items added or removed: `notifications/resources/list_changed` (and, for prompts,
  `notifications/prompts/list_changed`: the prompt library changed);
- items updated or removed: `notifications/resources/updated` for each uri, to the connections
  that subscribed to it (`resources/subscribe`); an updated prompt also changes the library.

Both protocol eras are served. A handshake-era connection (2025-11-25 and before: stdio, stateful
HTTP with `Mcp-Session-Id`, WebSocket) is remembered with its user when it sends a request, and is
told on its own channel; it subscribes with `resources/subscribe`. A 2026-07-28 client opens a
`subscriptions/listen` stream: the server's `UserBus` remembers whose stream it is and delivers a
user's events to that user's streams only (the SDK's stream filters what each asked for).

Nothing here logs a uri or any text: only counts.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.lowlevel
from loguru import logger
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

Listener = Callable[[ServerEvent], None]


class ChangeLike(Protocol):
    """What a change says (`ItemChange`, and the watcher's `server/watch/events.Change`)."""

    @property
    def user_id(self) -> str: ...

    @property
    def added(self) -> tuple[str, ...]: ...

    @property
    def updated(self) -> tuple[str, ...]: ...

    @property
    def removed(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ItemChange:
    user_id: str
    source: str
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass
class Watch:
    """A handshake-era connection: whose it is, and the uris it subscribed to."""

    user_id: str
    uris: set[str] = field(default_factory=set)


class UserBus:
    """The `subscriptions/listen` bus, per user: a stream belongs to the user who opened it.

    The SDK's `ListenHandler` subscribes while serving the listen request, so `current_user`
    (the request being served) names its owner; `publish_to` reaches that user's streams only.
    A bare `publish` (the SDK's `ctx.notify_*`) goes to the current caller's streams."""

    def __init__(self, current_user: Callable[[], str | None]) -> None:
        self._current_user = current_user
        self._listeners: dict[object, tuple[str | None, Listener]] = {}

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        self._listeners[token] = (self._current_user(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        user = self._current_user()
        if user is not None:
            await self.publish_to(user, event)

    async def publish_to(self, user: str, event: ServerEvent) -> None:
        for owner, listener in list(self._listeners.values()):
            if owner != user:
                continue
            try:
                listener(event)
            except Exception as exc:  # one stream's failure must not stop the others
                logger.warning("a listen stream failed to take an event: {}", type(exc).__name__)
        await anyio.lowlevel.checkpoint()

    def streams(self, user: str) -> int:
        return sum(1 for owner, _ in self._listeners.values() if owner == user)


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The connection a request came on, when it can be told things later (handshake era).

    The SDK keeps it on the request's session (`ServerSession._connection`, whose public
    `send_*` methods use it); a 2026-07-28 request has none of its own to keep."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection) or not connection.has_standalone_channel:
        return None
    return connection


class Notifier:
    def __init__(self, current_user: Callable[[], str | None]) -> None:
        self.bus = UserBus(current_user)
        self._current_user = current_user
        self._watches: weakref.WeakKeyDictionary[Connection, Watch] = weakref.WeakKeyDictionary()

    def _watch(self, ctx: ServerRequestContext[Any, Any]) -> Watch | None:
        connection = connection_of(ctx)
        user = self._current_user()
        if connection is None or user is None:
            return None
        watch = self._watches.get(connection)
        if watch is None or watch.user_id != user:
            watch = self._watches[connection] = Watch(user)
        return watch

    async def track(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware (inside `serve_calls`, which knows the user): remember each
        handshake-era connection and its user, so a change of that user's items reaches it."""
        self._watch(ctx)
        return await call_next(ctx)

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        watch = self._watch(ctx)
        if watch is not None:
            watch.uris.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        watch = self._watch(ctx)
        if watch is not None:
            watch.uris.discard(str(params.uri))
        return EmptyResult()

    async def publish(self, change: ChangeLike) -> None:
        """Tell `change.user_id`'s connections and listen streams what changed."""
        user = change.user_id
        listed = bool(change.added or change.removed)
        touched = (*change.updated, *change.removed)
        prompts = any(u.startswith("prompts://") for u in (*change.added, *touched))
        mine = [(c, w) for c, w in list(self._watches.items()) if w.user_id == user]
        for connection, watch in mine:
            if listed:
                await connection.send_resource_list_changed()
            if prompts:
                await connection.send_prompt_list_changed()
            for uri in touched:
                if uri in watch.uris:
                    await connection.send_resource_updated(uri)
        events: list[ServerEvent] = [ResourcesListChanged()] if listed else []
        events += [PromptsListChanged()] if prompts else []
        events += [ResourceUpdated(uri=uri) for uri in touched]
        for event in events:
            await self.bus.publish_to(user, event)
        logger.debug(
            "told user {} of {} change(s): {} connection(s), {} stream(s)",
            user,
            len((*change.added, *touched)),
            len(mine),
            self.bus.streams(user),
        )

    def register(self, lowlevel: Server[Any]) -> None:
        """Serve resources/subscribe and unsubscribe, and advertise what is sent (`listChanged`
        for resources and prompts, `subscribe`) in the handshake's capabilities."""
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe)
        advertise(lowlevel)


def advertise(lowlevel: Server[Any]) -> None:
    """Make the handshake's capabilities say `listChanged` for resources and prompts.

    Every transport (ours, and the SDK's streamable HTTP manager) asks the server for
    `create_initialization_options()` without notification options; this fills them in."""
    plain = lowlevel.create_initialization_options
    told = NotificationOptions(prompts_changed=True, resources_changed=True)

    def with_changes(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return plain(notification_options or told, experimental_capabilities, extensions)

    setattr(lowlevel, "create_initialization_options", with_changes)  # noqa: B010
