// chatctx/telegraf with a real Telegraf against a fake Bot API: updates forwarded before the handlers, what the
// handlers send recorded as the bot's own (telegraf gives each update its own `Telegram`), fail-open when chatctx
// is stopped or never answers.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Telegraf } from "telegraf";

import { Client } from "../dist/index.js";
import { setup } from "../dist/telegraf.js";
import { BOT_USER, fakeBotApi, serverAnd, freePort, neverAnswering, timed, topicUpdate } from "./support.mjs";

const BOB = { id: 43, is_bot: false, first_name: "Bob", username: "bob" };
const mention = (id, chat) => topicUpdate(chat, id, BOB, { text: "@helper_bot is prod back?", entities: [{ type: "mention", offset: 0, length: 11 }] });

const env = serverAnd(fakeBotApi);

function bot(client, options, seen) {
  const b = new Telegraf("123:TEST", { telegram: { apiRoot: env.api.url } });
  b.botInfo = { ...BOT_USER, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false };
  setup(b, client, options);
  b.on("message", async (ctx) => {
    seen.push(ctx.chatctx);
    await ctx.reply("all green", { reply_parameters: { message_id: ctx.message.message_id }, message_thread_id: 7 });
  });
  return b;
}

test("updates are forwarded first and the handlers' replies are the bot's own", async () => {
  const chat = -1001000000011;
  const client = new Client({ baseUrl: env.server.url });
  const seen = [];
  await bot(client, {}, seen).handleUpdate(mention(701, chat));
  assert.equal(seen[0].report.decisions[0].triggered_agent, true);
  const items = (await client.history(chat, { topic_id: 7 })).items;
  assert.deepEqual(items.map((i) => [i.kind, i.text]), [["inbound_user", "[Helper](tg:@helper_bot) is prod back?"], ["outbound_agent", "all green"]]);
  assert.equal(items[1].reply_to_message_id, "701");
  // A call outside any handler, on bot.telegram, is recorded too.
  const b = bot(client, {}, seen);
  await b.telegram.sendMessage(chat, "good morning", { message_thread_id: 7 });
  const again = (await client.history(chat, { topic_id: 7 })).items;
  assert.equal(again.at(-1).text, "good morning");
});

test("with chatctx stopped or never answering, the bot answers within the timeout", async () => {
  const hang = await neverAnswering();
  try {
    for (const url of [`http://127.0.0.1:${await freePort()}`, hang.url]) {
      const seen = [];
      const before = env.api.calls.length;
      const b = bot(new Client({ baseUrl: url, timeoutMs: 30_000 }), { timeoutMs: 300, onError: () => {} }, seen);
      const { error, ms } = await timed(() => b.handleUpdate(mention(702, -1001000000012)));
      assert.equal(error, undefined);
      assert.equal(seen[0].report, undefined);
      assert.deepEqual(env.api.calls.slice(before).map((c) => c[0]), ["sendMessage"]);
      assert.ok(ms < 2 * 300 + 500, `${ms} ms for ${url}`);
    }
  } finally {
    await hang.stop();
  }
});
