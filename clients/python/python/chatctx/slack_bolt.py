"""Slack Bolt for Python integration: `chatctx.slack_bolt.setup(app, client)`.

`app` is an `AsyncApp` with a `chatctx.AsyncClient`, or a synchronous `App` with a `chatctx.Client`. Two hooks, set
up in one line:

- a global middleware that forwards every event's `body` (an Events API envelope) to chatctx before the
  listeners run, with the bot's user id from Bolt's context; the ingest report is in `context["chatctx_report"]`
  (None when chatctx could not be reached);
- a wrapper of the client the listeners use (`say`, `client.chat_postMessage`, `client.chat_update`), so the
  bot's own messages are recorded from what Slack answers. Bolt drops the bot's own `message` events before any
  middleware runs (`ignoring_self_events_enabled`, on by default), so without this chatctx would never see the
  bot's replies.

chatctx failing (down, slow, refusing) is logged and never breaks the app; each call waits at most `timeout`.
With the synchronous `App`, a call runs on one of a few worker threads so the wait is bounded even when chatctx
accepts the connection and never answers; when all of them are still waiting, an event is not forwarded (logged)
rather than queued, so a stuck chatctx cannot pile up threads or memory in the app.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Awaitable, Callable, Optional, Union

from ._client import AsyncClient, Client

__all__ = ["setup"]

log = logging.getLogger("chatctx")

# Web API methods whose answer is a message the bot posted (or changed).
POSTS = frozenset({"chat.postMessage", "chat.meMessage", "chat.scheduleMessage"})
UPDATES = frozenset({"chat.update"})


def _envelope(method: str, answer: Any, team_id: Optional[str]) -> Optional[dict[str, Any]]:
    """The Events API envelope of the message a Web API call posted or changed, when it did."""
    data = getattr(answer, "data", answer)
    if not isinstance(data, dict) or not data.get("ok") or not isinstance(data.get("message"), dict):
        return None
    channel = data.get("channel")
    if method in POSTS and channel:
        event = {"type": "message", "channel": channel, **data["message"]}
    elif method in UPDATES and channel:
        changed = {**data["message"], "ts": data.get("ts") or data["message"].get("ts")}
        event = {"type": "message", "subtype": "message_changed", "channel": channel, "message": changed}
    else:
        return None
    envelope: dict[str, Any] = {"type": "event_callback", "event": event}
    if team_id:
        envelope["team_id"] = team_id
    return envelope


def _wrap(web: Any, wrapper: Callable[[Any], Any]) -> None:
    """Puts `wrapper(api_call)` in place of a Web API client's `api_call`, once per client: what it posts or changes
    is then recorded as the bot's message."""
    if web is None or getattr(web, "_chatctx_recording", False):
        return
    web.api_call = wrapper(web.api_call)
    web._chatctx_recording = True


# Worker threads a synchronous `App` forwards through: calls waiting on chatctx at once, at most.
SYNC_WORKERS = 4


def setup(app: Any, client: Union[AsyncClient, Client], *, timeout: float = 2.0) -> None:
    """Forwards `app`'s events and the bot's own messages to chatctx through `client`: an `AsyncApp` with an
    `AsyncClient`, or a synchronous `App` with a `Client`."""
    asynchronous = inspect.iscoroutinefunction(getattr(app, "async_dispatch", None))
    if asynchronous and isinstance(client, AsyncClient):
        _setup_async(app, client, timeout)
    elif not asynchronous and isinstance(client, Client):
        _setup_sync(app, client, timeout)
    elif asynchronous:
        raise TypeError("an AsyncApp forwards through a chatctx.AsyncClient")
    else:
        raise TypeError("a synchronous App forwards through a chatctx.Client (an AsyncApp through an AsyncClient)")


def _setup_async(app: Any, client: AsyncClient, timeout: float) -> None:
    async def send(envelope: Any, bot_user_id: Optional[str]) -> Any:
        try:
            return await asyncio.wait_for(client.slack_event(envelope, bot_user_id=bot_user_id), timeout)
        except Exception as e:  # noqa: BLE001 - fail open: the app goes on without context
            log.warning("chatctx: could not forward a Slack event: %s", e)
            return None

    def record(call: Callable[..., Awaitable[Any]], team_id: Optional[str], bot_user_id: Optional[str]) -> Any:
        async def api_call(api_method: str, *args: Any, **kwargs: Any) -> Any:
            answer = await call(api_method, *args, **kwargs)
            envelope = _envelope(api_method, answer, team_id)
            if envelope is not None:
                await send(envelope, bot_user_id)
            return answer

        return api_call

    async def forward(body: dict[str, Any], context: Any, next: Callable[[], Awaitable[None]]) -> None:  # noqa: A002
        bot_user_id = context.get("bot_user_id")
        _wrap(context.get("client"), lambda call: record(call, context.get("team_id"), bot_user_id))
        report = None
        if body.get("type") == "event_callback":
            report = await send(body, bot_user_id)
        context["chatctx_report"] = report
        await next()

    app.use(forward)


def _setup_sync(app: Any, client: Client, timeout: float) -> None:
    workers = ThreadPoolExecutor(max_workers=SYNC_WORKERS, thread_name_prefix="chatctx")
    free = threading.BoundedSemaphore(SYNC_WORKERS)

    def call(envelope: Any, bot_user_id: Optional[str]) -> Any:
        try:
            return client.slack_event(envelope, bot_user_id=bot_user_id)
        finally:
            free.release()

    def send(envelope: Any, bot_user_id: Optional[str]) -> Any:
        if not free.acquire(blocking=False):
            log.warning("chatctx: a Slack event was not forwarded: %d calls are still waiting on chatctx", SYNC_WORKERS)
            return None
        future = workers.submit(call, envelope, bot_user_id)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            log.warning("chatctx: could not forward a Slack event: no answer within %ss", timeout)
        except Exception as e:  # noqa: BLE001 - fail open: the app goes on without context
            log.warning("chatctx: could not forward a Slack event: %s", e)
        return None

    def record(call: Callable[..., Any], team_id: Optional[str], bot_user_id: Optional[str]) -> Any:
        def api_call(api_method: str, *args: Any, **kwargs: Any) -> Any:
            answer = call(api_method, *args, **kwargs)
            envelope = _envelope(api_method, answer, team_id)
            if envelope is not None:
                send(envelope, bot_user_id)
            return answer

        return api_call

    def forward(body: dict[str, Any], context: Any, next: Callable[[], Any]) -> Any:  # noqa: A002
        bot_user_id = context.get("bot_user_id")
        _wrap(context.get("client"), lambda call: record(call, context.get("team_id"), bot_user_id))
        context["chatctx_report"] = send(body, bot_user_id) if body.get("type") == "event_callback" else None
        return next()

    app.use(forward)
