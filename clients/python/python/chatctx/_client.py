"""The HTTP clients: one method per operation of the server's OpenAPI document, named by its operationId."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

import httpx
from pydantic import ValidationError

from . import models

from ._wire import (
    _TOOL_ANSWERS,
    DEFAULT_BASE_URL,
    STATUS,
    ChatctxError,
    Id,
    Instant,
    _adapter,
    _Call,
    _fields,
    _plain,
)

__all__ = ["DEFAULT_BASE_URL", "AsyncClient", "ChatctxError", "Client", "Id", "Instant", "_plain"]


class _Operations:
    """The operations, shared by [`Client`] and [`AsyncClient`]: each builds a call and hands it to `_send`,
    which the sync client runs and the async client returns as a coroutine."""

    def _send(self, call: _Call) -> Any:  # pragma: no cover - each client defines it
        raise NotImplementedError

    def _tool(self, name: str, body: dict[str, Any]) -> Any:
        """A tool call; reads (`get_…`, `list_…`, `resolve_…`) may be sent again, state changes may not."""
        answer = _adapter(_TOOL_ANSWERS.get(name, dict[str, Any]))
        read = name.startswith(("get_", "list_", "resolve_"))
        return self._send(_Call("POST", f"/v1/tools/{name}", answer, body, idempotent=read))

    # --- the tools (docs/protocol.md §6) ---

    def get_chat_history_context(
        self,
        *,
        chat_id: Id,
        current_message_id: Optional[Id] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.HistoryContext:
        """The selected history and the whole prompt for answering `current_message_id`."""
        return self._tool("get_chat_history_context", _fields(locals()))

    def resolve_reference_target(
        self,
        *,
        chat_id: Id,
        current_message_id: Id,
        sender_user_id: Id,
        raw_user_text: Optional[str] = None,
        reply_to_message_id: Optional[Id] = None,
        normalized_reference_hints: Optional[Mapping[str, Any]] = None,
        allowed_kinds: Optional[Iterable[str]] = None,
        max_candidates: Optional[int] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.Resolution:
        """What the user's reference ("this", "the poll above") points at: resolved, ambiguous or not_found."""
        return self._tool("resolve_reference_target", _fields(locals()))

    def list_active_context_objects(
        self,
        *,
        chat_id: Id,
        current_message_id: Optional[Id] = None,
        reply_to_message_id: Optional[Id] = None,
        kinds: Optional[Iterable[str]] = None,
        limit: Optional[int] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.ActiveObjects:
        """The conversational objects (photos, links, polls, …) active right now."""
        return self._tool("list_active_context_objects", _fields(locals()))

    def get_chat_history_range(
        self,
        *,
        chat_id: Id,
        topic_id: Optional[Id] = None,
        since: Optional[Instant] = None,
        until: Optional[Instant] = None,
        after_message_id: Optional[Id] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.HistoryPage:
        """Every stored message of a range, a page at a time (follow `next`): what was said since a time or a
        message."""
        return self._tool("get_chat_history_range", _fields(locals()))

    def get_scenario(
        self,
        *,
        chat_id: Id,
        revisions: Optional[bool] = None,
        topic_id: Optional[Id] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.ScenarioState:
        """The conversation's structured state (and its kept revisions with `revisions=True`)."""
        return self._tool("get_scenario", _fields(locals()))

    def update_scenario(
        self,
        *,
        chat_id: Id,
        patch: Mapping[str, Any],
        expected_revision: Optional[int] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.ScenarioState:
        """Applies an RFC 7396 merge patch to the state; `expected_revision` makes it optimistic."""
        return self._tool("update_scenario", _fields(locals()))

    def revert_scenario(
        self,
        *,
        chat_id: Id,
        to_revision: int,
        expected_revision: Optional[int] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.ScenarioState:
        """Makes an earlier revision of the state the current one (as a new revision)."""
        return self._tool("revert_scenario", _fields(locals()))

    def update_summary(
        self,
        *,
        chat_id: Id,
        text: str,
        covers_until_message_id: Id,
        expected_revision: Optional[int] = None,
        source: Optional[str] = None,
        topic_id: Optional[Id] = None,
        now: Optional[Instant] = None,
        channel: Optional[str] = None,
        explain: Optional[bool] = None,
    ) -> models.SummaryWritten:
        """Writes the conversation's summary up to a message; history selection then starts after it."""
        return self._tool("update_summary", _fields(locals()))

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Calls a tool by name with a model's arguments as they came (a tool loop); answers the typed result."""
        return self._tool(name, dict(arguments))

    # --- events in ---

    def ingest(self, events: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]]) -> models.IngestReport:
        """Ingests one event or a list of them (docs/protocol.md §3); each is durable before the answer."""
        body = dict(events) if isinstance(events, Mapping) else [dict(e) for e in events]
        # A resent message is an edit of the same message, never a duplicate: safe to retry.
        return self._send(_Call("POST", "/v1/events", _adapter(models.IngestReport), body, idempotent=True))

    def telegram_update(
        self,
        update: Any,
        bot_username: Optional[str] = None,
        bot_user_id: Optional[Id] = None,
        triggered_agent: Optional[bool] = None,
    ) -> models.IngestReport:
        """Ingests one raw Bot API update: a dict, an aiogram `Update` or a python-telegram-bot `Update`.

        Give the bot's username or id so its own messages become `outbound_agent`."""
        params = _fields(locals(), "update")
        call = _Call(
            "POST", "/v1/telegram/updates", _adapter(models.IngestReport), _plain(update), params, idempotent=True
        )
        return self._send(call)

    def discord_event(self, payload: Any, bot_user_id: Optional[Id] = None) -> models.IngestReport:
        """Ingests one Discord Gateway dispatch as the bot received it (discord.py's `on_socket_raw_receive`
        parsed, discord.js's `raw` event). Give the bot's user id so its own messages become `outbound_agent`."""
        params = _fields(locals(), "payload")
        answer = _adapter(models.IngestReport)
        call = _Call("POST", "/v1/discord/events", answer, _plain(payload), params, idempotent=True)
        return self._send(call)

    def slack_event(self, envelope: Any, bot_user_id: Optional[Id] = None) -> models.IngestReport:
        """Ingests one Slack Events API envelope (`event_callback`) a bot received, e.g. from Bolt's
        `body`. Without `bot_user_id` the envelope's `authorizations` name the bot."""
        params = _fields(locals(), "envelope")
        answer = _adapter(models.IngestReport)
        call = _Call("POST", "/v1/slack/events", answer, _plain(envelope), params, idempotent=True)
        return self._send(call)

    def slack_users(self, answer: Any) -> models.IngestReport:
        """Ingests a Slack Web API `users.list` or `users.info` answer as the bot got it (e.g. from
        `client.users_list()`): each member becomes a person of their team, named so in every chat of it."""
        call = _Call("POST", "/v1/slack/users", _adapter(models.IngestReport), _plain(answer), {}, idempotent=True)
        return self._send(call)

    # --- what is stored ---

    def _chat(self, what: str, chat_id: Id, topic_id: Optional[Id], channel: Optional[str], answer: Any) -> Any:
        params = _fields({"topic_id": topic_id, "channel": channel})
        return self._send(_Call("GET", f"/v1/chats/{_path(chat_id)}/{what}", _adapter(answer), None, params, True))

    def history(
        self,
        chat_id: Id,
        topic_id: Optional[Id] = None,
        channel: Optional[str] = None,
        since: Optional[Instant] = None,
        until: Optional[Instant] = None,
        after_message_id: Optional[Id] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> models.HistoryPage:
        """A page of the stored items of a range, oldest first; pass its `next` as `cursor` for the next page.
        Without `topic_id`, every topic of the chat."""
        params = _fields(locals(), "chat_id")
        call = _Call("GET", f"/v1/chats/{_path(chat_id)}/history", _adapter(models.HistoryPage), None, params, True)
        return self._send(call)

    def objects(self, chat_id: Id, topic_id: Optional[Id] = None, channel: Optional[str] = None) -> list[models.Object]:
        """Every object the chat holds, active or not."""
        return self._chat("objects", chat_id, topic_id, channel, list[models.Object])

    def scenario(
        self, chat_id: Id, topic_id: Optional[Id] = None, channel: Optional[str] = None
    ) -> models.ScenarioState:
        """The conversation state with its kept revisions."""
        return self._chat("scenario", chat_id, topic_id, channel, models.ScenarioState)

    def chats(self, after: Optional[str] = None, limit: Optional[int] = None) -> models.ChatsResponse:
        """A page of the chats this credential may read, one line each; `next` is the `after` of the next page."""
        params = {k: str(v) for k, v in (("after", after), ("limit", limit)) if v is not None}
        return self._send(
            _Call("GET", "/v1/chats", _adapter(models.ChatsResponse), params=params or None, idempotent=True)
        )

    def decisions(
        self, chat_id: Id, topic_id: Optional[Id] = None, channel: Optional[str] = None, limit: Optional[int] = None
    ) -> models.DecisionsResponse:
        """The chat's newest decision records, newest first: how each tool answer was reached."""
        params = _fields({"topic_id": topic_id, "channel": channel, "limit": limit})
        call = _Call("GET", f"/v1/chats/{_path(chat_id)}/decisions", _adapter(models.DecisionsResponse), None, params, True)
        return self._send(call)

    def decision(
        self, chat_id: Id, request_id: str, topic_id: Optional[Id] = None, channel: Optional[str] = None
    ) -> models.Record:
        """One decision record, by the request id its tool call was logged under (`x-request-id`)."""
        params = _fields({"topic_id": topic_id, "channel": channel})
        path = f"/v1/chats/{_path(chat_id)}/decisions/{_path(request_id)}"
        return self._send(_Call("GET", path, _adapter(models.Record), None, params, True))

    def delete_chat(self, chat_id: Id, topic_id: Optional[Id] = None, channel: Optional[str] = None) -> models.Deleted:
        """Forgets a chat (or one topic of it) completely, in memory and in the store."""
        params = _fields({"topic_id": topic_id, "channel": channel})
        call = _Call("DELETE", f"/v1/chats/{_path(chat_id)}", _adapter(models.Deleted), None, params, True)
        return self._send(call)

    # --- scopes ---

    def create_scope(
        self,
        chat_id: Id,
        topic_id: Optional[Id] = None,
        current_message_id: Optional[Id] = None,
        sender_user_id: Optional[Id] = None,
        ttl_seconds: Optional[int] = None,
        channel: Optional[str] = None,
        may_write_summary: Optional[bool] = None,
    ) -> models.Scope:
        """Issues a short-lived token bound to one chat (and topic, message, sender) for a model's tool loop."""
        return self._send(_Call("POST", "/v1/scopes", _adapter(models.Scope), _fields(locals())))

    def revoke_scope(self, token: str) -> models.Revoked:
        """Revokes a scope token before it expires, on every instance."""
        return self._send(_Call("DELETE", f"/v1/scopes/{_path(token)}", _adapter(models.Revoked), idempotent=True))

    # --- the service ---

    def health(self) -> bool:
        """Whether the server is up (`/healthz`); a server that cannot be reached raises `connection_error`."""
        return self._send(_Call("GET", "/healthz", STATUS, idempotent=True))

    def ready(self) -> bool:
        """Whether the server has rebuilt its state and its store answers (`/readyz`)."""
        return self._send(_Call("GET", "/readyz", STATUS, idempotent=True))

    def metrics(self) -> str:
        """The Prometheus exposition (`/metrics`)."""
        return self._send(_Call("GET", "/metrics", None, idempotent=True, text=True))

    def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI 3.1 document."""
        return self._send(_Call("GET", "/openapi.json", None, idempotent=True))


def _path(segment: Id) -> str:
    from urllib.parse import quote

    return quote(str(segment), safe="")


_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_IN_FLIGHT_ERRORS = (httpx.ReadError, httpx.WriteError, httpx.ReadTimeout, httpx.RemoteProtocolError)


_RETRY = object()
"""What `_Base._outcome` answers when the call should be sent again."""


class _Base(_Operations):
    """What both clients share: settings, headers, retry decisions and reading answers."""

    def __init__(self, base_url: str, token: Optional[str], timeout: float, retries: int, backoff: float) -> None:
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._headers = {"accept": "application/json", "user-agent": f"chatctx-python/{_version()}"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"

    @property
    def base_url(self) -> str:
        return self._base_url

    def _with_token(self, token: str) -> Any:
        """A client like this one holding `token` instead."""
        return type(self)(self._base_url, token, timeout=self._timeout, retries=self._retries, backoff=self._backoff)

    def _request(self, call: _Call) -> dict[str, Any]:
        args: dict[str, Any] = {"method": call.method, "url": self._base_url + call.path, "headers": self._headers}
        args["params"] = call.params
        if call.body is not None:
            args["json"] = call.body
        return args

    def _delay(self, attempt: int) -> float:
        return min(self._backoff * (2**attempt), 2.0)

    def _outcome(
        self, call: _Call, attempt: int, response: Optional[httpx.Response] = None, error: Optional[Exception] = None
    ) -> Any:
        """The call's answer, or `_RETRY`, or raises. A request that never reached the server is always safe to
        send again; one that may have (a failure in flight, a 502/503/504) only when the call is idempotent."""
        left = attempt < self._retries
        if error is not None:
            if left and (isinstance(error, _CONNECT_ERRORS) or (call.idempotent and isinstance(error, _IN_FLIGHT_ERRORS))):
                return _RETRY
            raise ChatctxError("connection_error", f"cannot reach chatctx at {self._base_url}: {error!r}") from error
        assert response is not None
        if left and call.idempotent and response.status_code in (502, 503, 504):
            return _RETRY
        return self._read(call, response)

    @staticmethod
    def _read(call: _Call, response: httpx.Response) -> Any:
        if call.parse == STATUS:
            return response.status_code == 200
        if response.status_code >= 400:
            try:
                err = response.json()
                raise ChatctxError(str(err["code"]), str(err["message"]), response.status_code)
            except (ValueError, KeyError, TypeError):
                raise ChatctxError(
                    "bad_response", f"HTTP {response.status_code}: {response.text[:200]}", response.status_code
                ) from None
        if call.text:
            return response.text
        try:
            data = response.json()
        except ValueError:
            raise ChatctxError("bad_response", f"not JSON: {response.text[:200]}", response.status_code) from None
        if call.parse is None:
            return data
        try:
            return call.parse.validate_python(data)
        except ValidationError as e:
            raise ChatctxError("bad_response", f"an answer of another shape: {e}", response.status_code) from e


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chatctx")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "dev"


class Client(_Base):
    """A blocking client for a chatctx server.

    `Client(base_url="http://127.0.0.1:7878", token=None)`; `timeout` is seconds per attempt; `retries` is how
    many times a call is sent again after a connection failure (always) or a failure in flight (reads and
    ingests only). Use it as a context manager or call `close()`.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        token: Optional[str] = None,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.1,
        http: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(base_url, token, timeout, retries, backoff)
        self._http = http or httpx.Client(timeout=timeout)
        self._owned = http is None

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                answer = self._outcome(call, attempt, response=self._http.request(**self._request(call)))
            except httpx.TransportError as e:
                answer = self._outcome(call, attempt, error=e)
            if answer is not _RETRY:
                return answer
            time.sleep(self._delay(attempt))
            attempt += 1

    def scoped(
        self,
        chat_id: Id,
        *,
        topic_id: Optional[Id] = None,
        current_message_id: Optional[Id] = None,
        sender_user_id: Optional[Id] = None,
        ttl_seconds: int = 600,
        channel: Optional[str] = None,
        may_write_summary: bool = False,
    ) -> Client:
        """A client holding a fresh bound scope: hand it to a model's tool loop. Every call it makes is pinned
        to this chat (and topic, message, sender); any other chat is refused (`forbidden_scope`). It reads the
        conversation's summary; it writes it only with `may_write_summary=True`."""
        scope = self.create_scope(
            chat_id, topic_id, current_message_id, sender_user_id, ttl_seconds, channel, may_write_summary
        )
        return self._with_token(scope.token)

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """The asyncio client (httpx): the same methods as [`Client`], each a coroutine.

    Use it as an async context manager or call `await aclose()`.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        token: Optional[str] = None,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.1,
        http: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(base_url, token, timeout, retries, backoff)
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._owned = http is None

    async def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                answer = self._outcome(call, attempt, response=await self._http.request(**self._request(call)))
            except httpx.TransportError as e:
                answer = self._outcome(call, attempt, error=e)
            if answer is not _RETRY:
                return answer
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

    async def scoped(
        self,
        chat_id: Id,
        *,
        topic_id: Optional[Id] = None,
        current_message_id: Optional[Id] = None,
        sender_user_id: Optional[Id] = None,
        ttl_seconds: int = 600,
        channel: Optional[str] = None,
        may_write_summary: bool = False,
    ) -> AsyncClient:
        """An async client holding a fresh bound scope, for a model's tool loop (see `Client.scoped`)."""
        scope = await self.create_scope(
            chat_id, topic_id, current_message_id, sender_user_id, ttl_seconds, channel, may_write_summary
        )
        return self._with_token(scope.token)

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
