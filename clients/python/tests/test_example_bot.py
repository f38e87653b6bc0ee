"""examples/aiogram_bot.py end to end: a fake Bot API, the wheel's `chatctx serve --preset group-bot`, and a
chat-completions stub. Asserts what the model was sent and that the bot's answer is in chatctx's history."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

from conftest import REPO
from fakes import BOT, FakeBotApi, FakeModel

import chatctx

FORUM = {"id": -1001234500001, "type": "supergroup", "title": "Design team", "is_forum": True}
ALICE = {"id": 42, "is_bot": False, "first_name": "Alice", "username": "alice"}
BOB = {"id": 43, "is_bot": False, "first_name": "Bob", "username": "bob"}
CAROL = {"id": 44, "is_bot": False, "first_name": "Carol"}
DAVE = {"id": 45, "is_bot": False, "first_name": "Dave"}


def in_topic(message_id: int, sender: dict[str, Any], at: int, topic: int = 7, **fields: Any) -> dict[str, Any]:
    return {
        "message": {
            "message_id": message_id,
            "date": at,
            "chat": FORUM,
            "from": sender,
            "message_thread_id": topic,
            "is_topic_message": True,
            **fields,
        }
    }


async def wait_for(predicate: Any, what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := await predicate()) is not None:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_the_example_bot_answers_with_the_rooms_context_and_is_recorded(server: Any) -> None:
    api, model = FakeBotApi(), FakeModel(reply="Clean shapes; the teal works.")
    await api.start()
    await model.start()
    env = {
        **os.environ,
        "BOT_TOKEN": api.token,
        "TELEGRAM_API_URL": api.url,
        "CHATCTX_URL": server.url,
        "LLM_BASE_URL": model.url,
        "LLM_MODEL": "stub",
        "PYTHONUNBUFFERED": "1",
    }
    bot = subprocess.Popen(
        [sys.executable, str(REPO / "examples" / "aiogram_bot.py")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        now = int(time.time()) - 60
        photo = [{"file_id": "AgAD-logo", "file_unique_id": "logo-1", "width": 800, "height": 600}]
        parent = {"message_id": 501, "date": now, "chat": FORUM, "from": ALICE, "photo": photo, "caption": "our new logo"}
        api.push(in_topic(501, ALICE, now, photo=photo, caption="our new logo"))
        api.push(in_topic(502, CAROL, now + 10, text="love the colours, the teal especially", reply_to_message=parent))
        api.push(in_topic(503, DAVE, now + 15, topic=9, text="the invoice is overdue"))
        question = "@helper_bot what do you think of this?"
        entities = [{"type": "mention", "offset": 0, "length": 11}]
        api.push(in_topic(504, BOB, now + 20, text=question, entities=entities, reply_to_message=parent))

        try:
            await asyncio.wait_for(api.sent_event.wait(), 30)
        except asyncio.TimeoutError:
            bot.terminate()
            raise AssertionError(f"the bot never answered; its output: {bot.communicate()[0].decode()[-3000:]}")
        sent = api.sent[0][1]
        assert sent["text"] == "Clean shapes; the teal works."
        assert sent["reply_to_message"]["message_id"] == 504  # a reply to Bob's question, in the topic
        assert sent.get("message_thread_id") == 7

        # What the model was sent: the bot's instructions, the room's speakers, the reply parent, the resolved
        # photo, and the question last; nothing from the other topic.
        assert len(model.requests) == 1
        messages = model.requests[0]["messages"]
        assert messages[0]["role"] == "system" and messages[0]["content"].startswith("You are Helper")
        everything = json.dumps(messages, ensure_ascii=False)
        for speaker in ("Alice", "Carol", "Bob"):
            assert speaker in everything, f"{speaker} missing from the prompt: {everything}"
        assert "love the colours" in everything  # another member's comment on the photo
        assert "our new logo" in everything  # the reply parent
        assert "invoice" not in everything and "Dave" not in everything  # topic 9 is another conversation
        resolved = [m for m in messages if m["role"] == "system" and "points at media.image" in m["content"]]
        assert resolved and "501:media.image" in resolved[0]["content"], messages
        assert messages[-1]["role"] == "user" and "what do you think of this?" in messages[-1]["content"]

        # The bot's answer is in chatctx's history, as the bot's own message, in the topic.
        async with chatctx.AsyncClient(server.url) as c:

            async def answered() -> Any:
                items = (await c.history(FORUM["id"], topic_id=7)).items
                return next((i for i in items if i.kind == "outbound_agent"), None)

            mine = await wait_for(answered, "the bot's answer in chatctx's history")
            assert mine.text == "Clean shapes; the teal works."
            assert mine.sender.user_id == str(BOT["id"]) and mine.reply_to_message_id == "504"
            other_topic = (await c.history(FORUM["id"], topic_id=9)).items
            assert [i.message_id for i in other_topic] == ["503"]
    finally:
        bot.terminate()
        try:
            out, _ = bot.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            bot.kill()
            out, _ = bot.communicate()
        await api.stop()
        await model.stop()
    assert b"Traceback" not in out, out.decode(errors="replace")[-3000:]
