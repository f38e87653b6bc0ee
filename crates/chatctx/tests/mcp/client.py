"""Drives chatctx's MCP server through the official MCP Python SDK client (`mcp` on PyPI).

    python client.py stdio /path/to/chatctx     # starts `chatctx mcp --store memory` itself
    python client.py http http://127.0.0.1:PORT/mcp
    python client.py http-tokens http://127.0.0.1:PORT/mcp TOKEN SCOPED_TOKEN

Over HTTP the caller (tests/it/mcp.rs) has already posted two messages to chat -7 through the REST API; the
script reads them back through MCP. Prints "ok" and exits 0 when every check holds; any failure raises.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters

TOOLS = [
    "resolve_reference_target",
    "list_active_context_objects",
    "get_chat_history_context",
    "get_chat_history_range",
    "get_scenario",
    "update_scenario",
    "revert_scenario",
    "update_summary",
]


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def check(server, transport):
    async with Client(server) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names == TOOLS, names
        for tool in listed.tools:
            assert "chat_id" in tool.input_schema["properties"], tool.name

        # State round trip: a patch, then a read of the same state.
        chat = "-7"
        r = await client.call_tool("update_scenario", {"chat_id": chat, "patch": {"plan": {"step": 1}}})
        assert not r.is_error, r
        assert structured(r)["revision"] == 1, structured(r)
        r = await client.call_tool("get_scenario", {"chat_id": chat})
        assert structured(r)["state"] == {"plan": {"step": 1}}, structured(r)

        # A tool error reaches the model as a tool result with the documented code, not a protocol failure.
        r = await client.call_tool("update_scenario", {"chat_id": chat, "patch": {"x": 1}, "expected_revision": 0})
        assert r.is_error and structured(r)["code"] == "revision_conflict", r
        r = await client.call_tool("get_chat_history_context", {"chat_id": "-404"})
        assert r.is_error and structured(r)["code"] == "unknown_chat", r

        if transport == "http":
            # The messages the test posted over REST are the history before message 2.
            r = await client.call_tool("get_chat_history_context", {"chat_id": chat, "current_message_id": "2"})
            assert not r.is_error, r
            items = structured(r)["items"]
            assert [i["message_id"] for i in items] == ["1"], items
            r = await client.call_tool(
                "resolve_reference_target",
                {"chat_id": chat, "current_message_id": "2", "sender_user_id": "5",
                 "normalized_reference_hints": {"positional_hint": "replied_message"}},
            )
            answer = structured(r)
            assert answer["status"] == "resolved", answer
            assert answer["best_match"]["source_message_id"] == "1", answer
    print("ok")


async def check_tokens(url, token, scoped):
    """A token limited to chat -7, then a scope bound to chat -7 and message 2 (issued over REST)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    def with_token(t):
        return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {t}"}))

    async with Client(with_token(token)) as client:
        r = await client.call_tool("get_scenario", {"chat_id": "-7"})
        assert not r.is_error, r
        r = await client.call_tool("get_scenario", {"chat_id": "-8"})
        assert r.is_error and structured(r)["code"] == "forbidden_scope", r
    async with Client(with_token(scoped)) as client:
        # No chat, no current message: the scope supplies both.
        r = await client.call_tool("get_chat_history_context", {})
        assert not r.is_error, r
        assert [i["message_id"] for i in structured(r)["items"]] == ["1"], structured(r)
        r = await client.call_tool("get_chat_history_context", {"chat_id": "-8"})
        assert r.is_error and structured(r)["code"] == "forbidden_scope", r
    print("ok")


def main():
    transport, target = sys.argv[1], sys.argv[2]
    if transport == "http-tokens":
        asyncio.run(check_tokens(target, sys.argv[3], sys.argv[4]))
        return
    if transport == "stdio":
        server = StdioServerParameters(command=target, args=["mcp", "--store", "memory"])
    else:
        server = target
    asyncio.run(check(server, transport))


if __name__ == "__main__":
    main()
