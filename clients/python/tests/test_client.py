"""The typed clients against the real server from the installed wheel."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

import chatctx
from chatctx import AsyncClient, ChatctxError, Client, models

_chats = itertools.count(1)


def new_chat() -> int:
    """A supergroup id of this test's own."""
    return -1009000000000 - next(_chats)


def photo_and_question(chat: int) -> list[dict[str, Any]]:
    """The README's exchange: Alice posts a photo, Carol comments, Bob asks the bot about it in a reply."""
    group = {"id": chat, "type": "supergroup", "title": "Design team"}
    return [
        {
            "update_id": 1,
            "message": {
                "message_id": 501,
                "date": 1770970800,
                "chat": group,
                "from": {"id": 42, "is_bot": False, "first_name": "Alice", "username": "alice"},
                "photo": [{"file_id": "AgAD-photo", "file_unique_id": "uniq-1", "width": 800, "height": 600}],
                "caption": "our new logo",
            },
        },
        {
            "update_id": 2,
            "message": {
                "message_id": 502,
                "date": 1770970830,
                "chat": group,
                "from": {"id": 44, "is_bot": False, "first_name": "Carol"},
                "text": "love the colours",
                "reply_to_message": {"message_id": 501, "date": 1770970800, "chat": group},
            },
        },
        {
            "update_id": 3,
            "message": {
                "message_id": 503,
                "date": 1770970860,
                "chat": group,
                "from": {"id": 43, "is_bot": False, "first_name": "Bob", "username": "bob"},
                "text": "@helper_bot what do you think of this?",
                "entities": [{"type": "mention", "offset": 0, "length": 11}],
                "reply_to_message": {"message_id": 501, "date": 1770970800, "chat": group},
            },
        },
    ]


def test_sync_client_answers_typed_models(server: Any) -> None:
    chat = new_chat()
    with Client(server.url) as c:
        assert c.health() and c.ready()
        reports = [c.telegram_update(u, bot_username="helper_bot") for u in photo_and_question(chat)]
        assert all(isinstance(r, models.IngestReport) and r.accepted == 1 for r in reports)
        assert reports[2].decisions[0].triggered_agent is True
        assert reports[1].decisions[0].triggered_agent is False

        # Ids as int or str alike.
        res = c.resolve_reference_target(chat_id=chat, current_message_id=503, sender_user_id="43", now=1770970861)
        assert isinstance(res, models.Resolution)
        assert res.status == "resolved"
        assert res.best_match is not None and res.best_match.object_id == "501:media.image"
        assert res.best_match.file is not None and res.best_match.file.file_id == "AgAD-photo"
        assert res.model_dump()["best_match"]["caption"] == "our new logo"

        ctx = c.get_chat_history_context(chat_id=str(chat), current_message_id=503)
        assert isinstance(ctx, models.HistoryContext)
        speakers = [item.sender.nickname for item in ctx.items]
        assert "Alice" in speakers and "Carol" in speakers, speakers  # the group-bot preset keeps the room
        history = c.history(chat).items
        assert [h.message_id for h in history] == ["501", "502", "503"]
        assert history[0].sent_at.year == 2026
        page = c.history(chat, limit=2)
        assert len(page.items) == 2 and page.next is not None
        rest = c.get_chat_history_range(chat_id=chat, cursor=page.next)
        assert [h.message_id for h in rest.items] == ["503"] and rest.next is None
        assert [h.message_id for h in c.history(chat, after_message_id=501).items] == ["502", "503"]

        objects = c.list_active_context_objects(chat_id=chat, current_message_id=503, now=1770970861)
        assert [o.object_id for o in objects.objects] == ["501:media.image"]
        assert any(o.object_id == "501:media.image" for o in c.objects(chat))


def test_decision_records_explain_each_answer(server: Any) -> None:
    chat = new_chat()
    with Client(server.url) as c:
        for u in photo_and_question(chat):
            c.telegram_update(u, bot_username="helper_bot")
        plain = c.get_chat_history_context(chat_id=chat, current_message_id=503)
        assert plain.explain is None
        ctx = c.get_chat_history_context(chat_id=chat, current_message_id=503, explain=True)
        assert ctx.explain is not None
        verdicts = {v.message_id: v for v in ctx.explain.items}
        assert verdicts["501"].reason == "reply_parent" and verdicts["501"].kept
        assert [v.message_id for v in ctx.explain.items if v.kept] == [i.message_id for i in ctx.items]
        res = c.resolve_reference_target(
            chat_id=chat, current_message_id=503, sender_user_id=43, now=1770970861, explain=True
        )
        assert res.explain is not None and res.explain.candidates[0].object_id == "501:media.image"
        records = c.decisions(chat, limit=5)
        assert [r.tool for r in records.decisions[:2]] == ["resolve_reference_target", "get_chat_history_context"]
        one = c.decision(chat, records.decisions[0].request_id)
        assert one.request_id == records.decisions[0].request_id
        assert any(o.chat_id == str(chat) for o in c.chats().chats)
        with pytest.raises(ChatctxError) as e:
            c.decision(chat, "no-such-request")
        assert e.value.code == "unknown_decision" and e.value.status == 404


def test_scenario_round_trip_and_errors_carry_the_documented_code(server: Any) -> None:
    chat = new_chat()
    with Client(server.url) as c:
        c.telegram_update(photo_and_question(chat)[0])
        first = c.update_scenario(chat_id=chat, patch={"task": "pick a logo", "votes": {"alice": 1}})
        second = c.update_scenario(chat_id=chat, patch={"votes": {"bob": 1}}, expected_revision=first.revision)
        assert second.state["votes"] == {"alice": 1, "bob": 1}
        with pytest.raises(ChatctxError) as stale:
            c.update_scenario(chat_id=chat, patch={"x": 1}, expected_revision=first.revision)
        assert stale.value.code == "revision_conflict" and stale.value.status == 409
        back = c.revert_scenario(chat_id=chat, to_revision=first.revision)
        assert back.state == first.state
        assert c.get_scenario(chat_id=chat).revision == back.revision
        assert c.scenario(chat).revision == back.revision

        with pytest.raises(ChatctxError) as unknown:
            c.history(new_chat())
        assert unknown.value.code == "unknown_chat" and "chat" in unknown.value.message
        with pytest.raises(ChatctxError) as bad:
            c.ingest({"type": "message", "chat_id": str(chat)})
        assert bad.value.code == "invalid_event" and "field" in bad.value.message

        assert c.delete_chat(chat).deleted is True
        with pytest.raises(ChatctxError, match="unknown_chat"):
            c.history(chat)


def test_a_scoped_client_is_pinned_to_its_chat(server: Any) -> None:
    chat, other = new_chat(), new_chat()
    with Client(server.url) as c:
        for u in photo_and_question(chat):
            c.telegram_update(u, bot_username="helper_bot")
        c.telegram_update(photo_and_question(other)[0])
        with c.scoped(chat, current_message_id=503, sender_user_id=43) as tools:
            # The scope fills in chat, message and sender: a model's arguments need only what it decides.
            res = tools.call_tool("resolve_reference_target", {"raw_user_text": "this"})
            assert isinstance(res, models.Resolution) and res.status == "resolved"
            with pytest.raises(ChatctxError) as refused:
                tools.get_chat_history_context(chat_id=other)
            assert refused.value.code == "forbidden_scope"
            with pytest.raises(ChatctxError) as no_summary:
                tools.update_summary(chat_id=chat, text="x", covers_until_message_id=501)
            assert no_summary.value.code == "forbidden_scope"
        with c.scoped(chat, may_write_summary=True) as writer:
            assert writer.update_summary(chat_id=chat, text="x", covers_until_message_id=501).changed is True


def test_discord_and_slack_payloads_go_in_as_the_bot_received_them(server: Any) -> None:
    channel = str(-new_chat())
    dispatch = {
        "op": 0,
        "t": "MESSAGE_CREATE",
        "d": {
            "id": "10",
            "channel_id": channel,
            "guild_id": "1",
            "type": 0,
            "timestamp": "2026-02-13T08:20:00+00:00",
            "content": "<@42> summarize please",
            "author": {"id": "7", "username": "ann", "global_name": "Ann"},
            "mentions": [{"id": "42", "username": "helper", "bot": True}],
        },
    }
    envelope = {
        "type": "event_callback",
        "team_id": "T1",
        "event": {"type": "message", "channel": "C" + channel, "user": "U1", "text": "hi", "ts": "1770970800.000100"},
    }
    with Client(server.url) as c:
        report = c.discord_event(dispatch, bot_user_id=42)
        assert report.accepted == 1 and report.decisions[0].triggered_agent is True
        assert c.slack_event(envelope).accepted == 1
        assert [i.text for i in c.history(channel, channel="discord").items] == ["[@helper](discord:@helper) summarize please"]
        assert [i.text for i in c.history("C" + channel, channel="slack").items] == ["hi"]
        # A users.list answer as Slack's SDK returns it names the speaker in what was stored before.
        members = [{"id": "U1", "team_id": "T1", "name": "ann", "profile": {"real_name": "Ann Lee", "display_name": ""}}]
        assert c.slack_users({"ok": True, "members": members}).accepted == 1
        [item] = c.history("C" + channel, channel="slack").items
        assert item.sender.display_ref == "[Ann Lee](slack:@U1)"


def test_a_summary_opens_the_history_and_stale_writes_are_refused(server: Any) -> None:
    chat = new_chat()
    with Client(server.url) as c:
        for u in photo_and_question(chat):
            c.telegram_update(u, bot_username="helper_bot")
        written = c.update_summary(chat_id=chat, text="Alice shared the new logo.", covers_until_message_id=501)
        assert isinstance(written, models.SummaryWritten) and written.changed
        assert (written.summary.revision, written.summary.message_count, written.summary.source) == (1, 1, "bot")
        ctx = c.get_chat_history_context(chat_id=chat, current_message_id=503)
        assert ctx.summary is not None and ctx.summary.text == "Alice shared the new logo."
        assert ctx.prompt[0].content.startswith("Earlier in this conversation (a summary of 1 message, up to message 501")
        with pytest.raises(ChatctxError) as stale:
            c.update_summary(chat_id=chat, text="y", covers_until_message_id=502, expected_revision=0)
        assert stale.value.code == "revision_conflict" and stale.value.status == 409


async def test_async_client_matches_the_sync_one(server: Any) -> None:
    chat = new_chat()
    async with AsyncClient(server.url) as c:
        assert await c.health() is True and await c.ready() is True
        assert "chatctx" in await c.metrics()
        assert (await c.openapi())["openapi"] == "3.1.0"
        for u in photo_and_question(chat):
            await c.telegram_update(u, bot_user_id=999, bot_username="helper_bot")
        ctx = await c.get_chat_history_context(chat_id=chat, current_message_id=503, now=1770970861)
        res = await c.resolve_reference_target(chat_id=chat, current_message_id=503, sender_user_id=43, now=1770970861)
    with Client(server.url) as s:
        same = s.get_chat_history_context(chat_id=chat, current_message_id=503, now=1770970861)
    assert ctx.model_dump() == same.model_dump()  # deterministic, whichever client asks
    messages = chatctx.openai_messages(ctx, system="You are Helper.", notes=[chatctx.describe_resolution(res) or ""])
    assert messages[0] == {"role": "system", "content": "You are Helper."}
    assert messages[-1]["role"] == "user" and "what do you think of this?" in messages[-1]["content"]
    assert messages[-2]["role"] == "system" and "501:media.image" in messages[-2]["content"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in messages)


def test_connection_failures_are_retried_then_raised_as_connection_error() -> None:
    attempts: list[str] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.path)
        if len(attempts) < 3:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"deleted": True})

    with Client("http://chatctx.test", http=httpx.Client(transport=httpx.MockTransport(flaky)), backoff=0) as c:
        assert c.delete_chat(1).deleted is True
    assert len(attempts) == 3

    # A failure after the request may have arrived is retried only when the call is idempotent.
    sent: list[str] = []

    def drops(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        raise httpx.ReadError("reset", request=request)

    with Client("http://chatctx.test", http=httpx.Client(transport=httpx.MockTransport(drops)), backoff=0) as c:
        with pytest.raises(ChatctxError) as e:
            c.update_scenario(chat_id=1, patch={"a": 1})
        assert e.value.code == "connection_error"
        assert len(sent) == 1
        with pytest.raises(ChatctxError):
            c.get_scenario(chat_id=1)
        assert len(sent) == 1 + 3

    with Client(f"http://127.0.0.1:{_closed_port()}", retries=1, backoff=0) as c:
        with pytest.raises(ChatctxError) as down:
            c.health()
        assert down.value.code == "connection_error" and "cannot reach chatctx" in down.value.message


def test_an_answer_that_is_not_chatctx_json_is_a_bad_response() -> None:
    def proxy(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>Bad Gateway</html>")

    with Client("http://chatctx.test", http=httpx.Client(transport=httpx.MockTransport(proxy)), backoff=0) as c:
        with pytest.raises(ChatctxError) as e:
            c.update_scenario(chat_id=1, patch={})
        assert e.value.code == "bad_response" and e.value.status == 502

    def elsewhere(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"something": "else"})

    with Client("http://chatctx.test", http=httpx.Client(transport=httpx.MockTransport(elsewhere))) as c:
        with pytest.raises(ChatctxError) as e:
            c.get_scenario(chat_id=1)
        assert e.value.code == "bad_response" and "revision" in e.value.message


def _closed_port() -> int:
    from conftest import free_port

    return free_port()


def test_arguments_reach_the_server_as_it_reads_them(server: Any) -> None:
    from datetime import datetime, timedelta, timezone

    chat = new_chat()
    with Client(server.url) as c:
        reports = [c.telegram_update(u, bot_username="helper_bot", triggered_agent=False) for u in photo_and_question(chat)]
        # The mention would trigger the bot; the query flag, sent as `false`, overrides it.
        assert reports[2].decisions[0].triggered_agent is False
        at = datetime.fromtimestamp(1770970861, tz=timezone(timedelta(hours=2)))
        listed = c.list_active_context_objects(chat_id=chat, kinds=("media.image",), now=at)
        assert [o.object_id for o in listed.objects] == ["501:media.image"]
        with pytest.raises(ValueError, match="timezone-aware"):
            c.get_chat_history_context(chat_id=chat, now=datetime(2026, 2, 13))
