// chatctx/grammy with a real grammY Bot against a fake Bot API: each update is forwarded before the handlers and
// `ctx.chatctx` carries its report; what the bot sends, edits and copies is recorded as its own; with chatctx
// stopped or never answering, the bot still answers, within the timeout.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Bot } from "grammy";

import { Client } from "../dist/index.js";
import { setup } from "../dist/grammy.js";
import { BOT_USER, fakeBotApi, serverAnd, freePort, neverAnswering, timed, topicUpdate } from "./support.mjs";

const ALICE = { id: 42, is_bot: false, first_name: "Alice", username: "alice" };
const BOB = { id: 43, is_bot: false, first_name: "Bob", username: "bob" };
const PHOTO = [{ file_id: "AgAD-logo", file_unique_id: "logo-1", width: 800, height: 600 }];

const env = serverAnd(fakeBotApi);

function bot(client, options) {
  const b = new Bot("123:TEST", { botInfo: { ...BOT_USER, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false }, client: { apiRoot: env.api.url } });
  setup(b, client, options);
  b.on("message", async (ctx) => {
    seen.push(ctx.chatctx);
    if (ctx.chatctx.report?.decisions[0]?.triggered_agent ?? ctx.msg.text?.includes("@helper_bot")) {
      const sent = await ctx.reply("all green", { reply_parameters: { message_id: ctx.msg.message_id } });
      await ctx.api.editMessageText(ctx.chat.id, sent.message_id, "all green, checked");
      await ctx.api.copyMessage(ctx.chat.id, ctx.chat.id, 501, { message_thread_id: 7 });
    }
  });
  return b;
}
let seen = [];

test("updates are forwarded first, and the bot's replies, edits and copies are its own", async () => {
  const chat = -1001000000001;
  const client = new Client({ baseUrl: env.server.url });
  const b = bot(client);
  seen = [];
  await b.handleUpdate(topicUpdate(chat, 501, ALICE, { photo: PHOTO, caption: "our new logo" }));
  await b.handleUpdate(topicUpdate(chat, 502, BOB, { text: "@helper_bot is prod back?", entities: [{ type: "mention", offset: 0, length: 11 }] }));
  assert.equal(seen[1].report.decisions[0].triggered_agent, true, "the handler sees chatctx's report");
  const items = (await client.history(chat, { topic_id: 7 })).items;
  const mine = items.filter((i) => i.kind === "outbound_agent");
  assert.deepEqual(mine.map((i) => i.text), ["all green, checked", "[media.image] our new logo"], "the reply (edited) and the copied photo");
  assert.equal(mine[0].reply_to_message_id, "502");
  assert.ok(mine.every((i) => i.sender.user_id === String(BOT_USER.id)));
  // `ctx.chatctx.scoped()`: a client pinned to the update's chat, topic and message.
  const scoped = await seen[1].scoped();
  assert.equal((await scoped.getChatHistoryContext({ chat_id: chat })).prompt.at(-1).content.includes("is prod back?"), true);
  await assert.rejects(scoped.getChatHistoryContext({ chat_id: -1001000000009 }), { code: "forbidden_scope" });
});

test("with chatctx stopped or never answering, the bot answers within the timeout", async () => {
  const hang = await neverAnswering();
  try {
    for (const url of [`http://127.0.0.1:${await freePort()}`, hang.url]) {
      const warnings = [];
      const b = bot(new Client({ baseUrl: url, timeoutMs: 30_000 }), { timeoutMs: 300, onError: (e, what) => warnings.push(what) });
      seen = [];
      const before = env.api.calls.length;
      const { error, ms } = await timed(() => b.handleUpdate(topicUpdate(-1001000000002, 600, BOB, { text: "@helper_bot ping", entities: [{ type: "mention", offset: 0, length: 11 }] })));
      assert.equal(error, undefined);
      assert.equal(seen[0].report, undefined, "no report: the handler decides alone");
      assert.deepEqual(env.api.calls.slice(before).map((c) => c[0]), ["sendMessage", "editMessageText", "copyMessage"], url);
      // One bounded wait for the update and one for each recorded message (the copy is of a message never seen).
      assert.ok(ms < 4 * 300 + 500, `${ms} ms for ${url}`);
      assert.ok(warnings.includes("forward a Telegram update"), warnings.join());
    }
  } finally {
    await hang.stop();
  }
});

test("the Bot API methods recorded are the Python integrations' own", async () => {
  const { SENDS, EDITS } = await import("../dist/telegram.js");
  const { readFileSync } = await import("node:fs");
  const py = readFileSync(new URL("../../python/python/chatctx/_forward.py", import.meta.url), "utf8");
  const set = (name) => new Set([...new RegExp(`${name} = frozenset\\(\\s*\\{([^}]*)\\}`).exec(py)[1].matchAll(/"(\w+)"/g)].map((m) => m[1]));
  assert.deepEqual([...SENDS].sort(), [...set("SENDS")].sort());
  assert.deepEqual([...EDITS].sort(), [...set("EDITS")].sort());
});
