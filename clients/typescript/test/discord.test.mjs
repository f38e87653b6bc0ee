// chatctx/discord with a real discord.js Client, fed the repository's Gateway dispatches through its own `raw`
// event (no network): each mapped dispatch reaches chatctx in order, the bot's own message is its reply, presence
// and typing are not sent, and a stopped or silent chatctx delays nothing past the timeout.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { Client as DiscordClient, GatewayIntentBits } from "discord.js";

import { Client } from "../dist/index.js";
import { setup } from "../dist/discord.js";
import { fakeServer, freePort, neverAnswering, startServer, timed } from "./support.mjs";

export const PACKETS = readFileSync(new URL("../../../crates/chatctx-platforms/tests/data/discord/guild_conversation.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l));
export const BOT_ID = "700000000000000999";
export const READY = { op: 0, t: "READY", s: 1, d: { v: 10, user: { id: BOT_ID, username: "helper", bot: true }, guilds: [], session_id: "s" } };
const CHANNEL = "900000000000000001";

let server;
before(async () => (server = await startServer({ args: ["--preset", "group-bot"] })));
after(() => server.stop());

const discord = () => new DiscordClient({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages] });

test("the guild's dispatches reach chatctx in order, the bot's message as its reply", async () => {
  const client = new Client({ baseUrl: server.url });
  const d = discord();
  const forwarding = setup(d, client);
  for (const p of [READY, ...PACKETS]) d.emit("raw", p);
  await forwarding.flush();
  const items = (await client.history(CHANNEL, { channel: "discord" })).items;
  const bot = items.find((i) => i.sender.user_id === BOT_ID);
  assert.equal(bot.kind, "outbound_agent", "the bot's own message, known by the READY's user id");
  assert.ok(items.some((i) => i.message_id === "1100000000000000002" && /what do you think/.test(i.text)));
  assert.ok(!items.some((i) => i.message_id === "1100000000000000004"), "the deleted message is gone");
  const thread = (await client.history(CHANNEL, { channel: "discord", topic_id: "1200000000000000001" })).items;
  assert.deepEqual(thread.map((i) => i.message_id), ["1200000000000000002"], "the thread is a topic of its channel");
  assert.match(thread[0].text, /can we try a darker blue\?/);
  forwarding.close();
});

test("presence and typing are not sent; a stopped or silent chatctx delays nothing past the timeout", async () => {
  const seen = await fakeServer(() => ({ status: 200, body: { accepted: 1, rejected: [], decisions: [] } }));
  const hang = await neverAnswering();
  try {
    const d = discord();
    const forwarding = setup(d, new Client({ baseUrl: seen.url }));
    d.emit("raw", { op: 0, t: "PRESENCE_UPDATE", d: {} });
    d.emit("raw", { op: 0, t: "TYPING_START", d: {} });
    d.emit("raw", { op: 11 });
    await forwarding.flush();
    assert.equal(seen.requests.length, 0);
    for (const url of [`http://127.0.0.1:${await freePort()}`, hang.url]) {
      const slow = discord();
      const warnings = [];
      const silent = setup(slow, new Client({ baseUrl: url, timeoutMs: 30_000 }), { timeoutMs: 200, onError: (_, what) => warnings.push(what) });
      for (const p of PACKETS.slice(0, 3)) slow.emit("raw", p);
      const { ms } = await timed(() => silent.flush());
      assert.ok(ms < 3 * 200 + 400, `${ms} ms for three dispatches to ${url}`);
      assert.equal(warnings.length, 3, url);
    }
  } finally {
    await seen.stop();
    await hang.stop();
  }
});

test("the dispatch types forwarded are the ones the server maps", async () => {
  const { FORWARDED } = await import("../dist/discord.js");
  const rust = readFileSync(new URL("../../../crates/chatctx-platforms/src/discord/mod.rs", import.meta.url), "utf8");
  const known = /pub const KNOWN: &\[&str\] = &\[([^\]]*)\]/.exec(rust)[1].match(/"([A-Z_]+)"/g).map((s) => s.slice(1, -1));
  assert.deepEqual([...FORWARDED].sort(), known.sort(), "chatctx/discord's FORWARDED and the Discord mapping's KNOWN differ");
});
