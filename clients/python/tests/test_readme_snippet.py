"""The fail-open handler the READMEs show, run as written (only the server address is replaced): with chatctx
stopped, and with a chatctx that accepts connections and never answers, a direct mention is still answered,
within the client's timeouts."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import pytest
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from conftest import REPO, free_port
from fakes import FakeBotApi, FakeModel, never_answering

MARKER = "<!-- run as written"
GROUP = {"id": -1001234500077, "type": "supergroup", "title": "Ops"}
BOB = {"id": 43, "is_bot": False, "first_name": "Bob", "username": "bob"}


def snippet(readme: str) -> str:
    """The Python block right after the marker comment."""
    text = (REPO / readme).read_text()
    after = text[text.index(MARKER) :]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, f"no code block after the marker in {readme}"
    return match.group(1)


async def answer_with(readme: str, chatctx_url: str) -> tuple[dict[str, Any], float]:
    api, model = FakeBotApi(), FakeModel(reply="Prod is back.")
    await api.start()
    await model.start()
    bot = Bot(api.token, session=AiohttpSession(api=TelegramAPIServer.from_base(api.url)))
    dp = Dispatcher()
    http = httpx.AsyncClient()

    async def ask_model(messages: list[dict[str, str]]) -> str:
        r = await http.post(f"{model.url}/chat/completions", json={"model": "stub", "messages": messages})
        return str(r.json()["choices"][0]["message"]["content"])

    code = snippet(readme).replace("http://127.0.0.1:7878", chatctx_url)
    exec(compile(code, readme, "exec"), {"dp": dp, "bot": bot, "ask_model": ask_model})
    polling = asyncio.create_task(dp.start_polling(bot, handle_signals=False))
    try:
        started = time.monotonic()
        text = "@helper_bot is prod back?"
        api.push(
            {
                "message": {
                    "message_id": 700,
                    "date": int(time.time()),
                    "chat": GROUP,
                    "from": BOB,
                    "text": text,
                    "entities": [{"type": "mention", "offset": 0, "length": 11}],
                }
            }
        )
        await asyncio.wait_for(api.sent_event.wait(), 30)
        return api.sent[0][1], time.monotonic() - started
    finally:
        await dp.stop_polling()
        polling.cancel()
        await http.aclose()
        await bot.session.close()
        await api.stop()
        await model.stop()


@pytest.mark.parametrize("readme", ["clients/python/README.md", "README.md"])
async def test_the_readme_handler_answers_a_mention_with_chatctx_stopped(readme: str) -> None:
    sent, took = await answer_with(readme, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    assert sent["text"] == "Prod is back."
    assert sent["reply_to_message"]["message_id"] == 700
    assert took < 10, f"the bot waited {took:.1f} s"


async def test_the_readme_handler_answers_a_mention_when_chatctx_never_answers() -> None:
    runner, url = await never_answering()
    try:
        sent, took = await answer_with("clients/python/README.md", url)
    finally:
        await runner.cleanup()
    assert sent["text"] == "Prod is back."
    assert took < 20, f"the bot waited {took:.1f} s: the timeouts bound it"


def test_every_python_block_of_the_readmes_is_valid_python() -> None:
    """The examples people copy compile (top-level `await` allowed, as in a handler's body)."""
    import ast
    import textwrap

    for readme in ["clients/python/README.md", "README.md"]:
        blocks = re.findall(r"```python\n(.*?)```", (REPO / readme).read_text(), re.S)
        assert blocks, readme
        for block in blocks:
            compile(textwrap.dedent(block), readme, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
