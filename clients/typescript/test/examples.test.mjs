// The examples, run: examples/grammy-bot.ts end to end (a fake Bot API it polls, a chat-completions stub, this
// build's `chatctx serve --preset group-bot`); the discord.js and Bolt examples fed the repository's payloads
// through the libraries' own entry points (`client.emit("raw", …)`, `app.processEvent`), no network. The examples
// are compiled by `tsc -p tsconfig.examples.json` into build/examples first (cargo test and .ci/run do it).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";

import { readFileSync } from "node:fs";

import { Client as DiscordClient, GatewayIntentBits } from "discord.js";

import { Client } from "../dist/index.js";
import { fakeBotApi, fakeModel, fakeSlackApi, SLACK_BOT, startServer, topicUpdate } from "./support.mjs";

const data = (path) =>
  readFileSync(new URL(`../../../crates/chatctx-platforms/tests/data/${path}`, import.meta.url), "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));

const EXAMPLES = new URL("../build/examples/", import.meta.url);
const FORUM = -1001234500001;
const ALICE = { id: 42, is_bot: false, first_name: "Alice", username: "alice" };
const BOB = { id: 43, is_bot: false, first_name: "Bob", username: "bob" };
const CAROL = { id: 44, is_bot: false, first_name: "Carol" };
const DAVE = { id: 45, is_bot: false, first_name: "Dave" };

let server;
before(async () => (server = await startServer({ args: ["--preset", "group-bot"] })));
after(() => server.stop());

async function until(what, f, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("grammy-bot: the model gets the room's context, the resolved photo and the bot's own answer; the answer is recorded", async () => {
  const api = await fakeBotApi();
  const model = await fakeModel("Clean shapes; the teal works.");
  let output = "";
  const bot = spawn(process.execPath, [new URL("grammy-bot.js", EXAMPLES).pathname], {
    env: { ...process.env, BOT_TOKEN: "123:TEST", TELEGRAM_API_URL: api.url, CHATCTX_URL: server.url, LLM_BASE_URL: model.url, LLM_MODEL: "stub" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  bot.stdout.on("data", (d) => (output += d));
  bot.stderr.on("data", (d) => (output += d));
  try {
    const now = Math.floor(Date.now() / 1000) - 60;
    const photo = [{ file_id: "AgAD-logo", file_unique_id: "logo-1", width: 800, height: 600 }];
    const chat = { id: FORUM, type: "supergroup", title: "Design team", is_forum: true };
    const parent = { message_id: 501, date: now, chat, from: ALICE, photo, caption: "our new logo" };
    const at = (u, date) => ((u.message.date = date), u);
    const mention = [{ type: "mention", offset: 0, length: 11 }];
    api.push(at(topicUpdate(FORUM, 501, ALICE, { photo, caption: "our new logo" }), now));
    api.push(at(topicUpdate(FORUM, 502, CAROL, { text: "love the colours, the teal especially", reply_to_message: parent }), now + 10));
    api.push(at(topicUpdate(FORUM, 503, DAVE, { text: "the invoice is overdue" }, 9), now + 15));
    api.push(at(topicUpdate(FORUM, 504, BOB, { text: "@helper_bot what do you think of this?", entities: mention, reply_to_message: parent }), now + 20));
    const sends = () => api.calls.filter(([m]) => m === "sendMessage");
    await until("the bot's answer", () => sends().length >= 1).catch((e) => assert.fail(`${e.message}; the bot said: ${output.slice(-3000)}`));
    const [, sent] = sends()[0];
    assert.equal(sent.text, "Clean shapes; the teal works.");
    assert.equal(sent.reply_parameters.message_id, 504);
    assert.equal(sent.message_thread_id, 7, "in the topic");

    // What the model was sent: the bot's instructions, the speakers, the reply parent, the resolved photo and the
    // question last; nothing from the other topic.
    const [first] = model.bodies();
    const messages = first.messages;
    assert.ok(messages[0].role === "system" && messages[0].content.startsWith("You are Helper"));
    const everything = JSON.stringify(messages);
    for (const speaker of ["Alice", "Carol", "Bob"]) assert.ok(everything.includes(speaker), `${speaker} in ${everything}`);
    assert.ok(everything.includes("love the colours") && everything.includes("our new logo"));
    assert.ok(!everything.includes("invoice") && !everything.includes("Dave"), "topic 9 is another conversation");
    const note = messages.find((m) => m.role === "system" && m.content.includes("points at media.image"));
    assert.ok(note && note.content.includes("501:media.image"), everything);
    assert.ok(messages.at(-1).role === "user" && messages.at(-1).content.includes("what do you think of this?"));

    // The bot's answer is in chatctx's history as its own, and the next question's prompt carries it.
    const context = new Client({ baseUrl: server.url });
    const mine = await until("the answer in chatctx", async () => (await context.history(FORUM, { topic_id: 7 })).items.find((i) => i.kind === "outbound_agent"));
    assert.equal(mine.text, "Clean shapes; the teal works.");
    assert.equal(mine.reply_to_message_id, "504");
    // The next question, after the answer (which Telegram dated when it was sent).
    api.push(at(topicUpdate(FORUM, 505, BOB, { text: "@helper_bot and the font?", entities: mention }), Math.floor(Date.now() / 1000) + 1));
    await until("the second answer", () => sends().length >= 2);
    const second = JSON.stringify(model.bodies()[1].messages);
    assert.ok(second.includes("Clean shapes; the teal works."), "the bot's own earlier answer is in the next prompt");
  } finally {
    bot.kill();
    await new Promise((r) => (bot.exitCode !== null ? r() : bot.once("exit", r)));
    await api.stop();
    await model.stop();
  }
  assert.ok(!/Error|Unhandled/.test(output.replace(/chatctx: \w+:/g, "")), output.slice(-3000));
});

test("discord-bot: the guild's dispatches, fed to the client's raw event, are in chatctx with the bot's reply as its own", async () => {
  const { build } = await import(new URL("discord-bot.js", EXAMPLES).href);
  const context = new Client({ baseUrl: server.url });
  const discord = new DiscordClient({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages] });
  const forwarding = build(discord, context);
  const ready = { op: 0, t: "READY", s: 1, d: { user: { id: "700000000000000999", username: "helper", bot: true } } };
  for (const packet of [ready, ...data("discord/guild_conversation.jsonl")]) discord.emit("raw", packet);
  await forwarding.flush();
  const items = (await context.history("900000000000000001", { channel: "discord" })).items;
  const reply = items.find((i) => i.sender.user_id === "700000000000000999");
  assert.equal(reply?.kind, "outbound_agent");
  assert.match(reply.text, /the kerning needs a/);
  forwarding.close();
});

test("bolt-app: an app_mention through app.processEvent is answered with the model and chatctx's context, and the reply is recorded", async () => {
  const api = await fakeSlackApi();
  const model = await fakeModel("It is, and then some.");
  Object.assign(process.env, { SLACK_BOT_TOKEN: "xoxb-test", SLACK_SIGNING_SECRET: "not-checked", SLACK_API_URL: `${api.url}/api/`, LLM_BASE_URL: model.url, LLM_MODEL: "stub" });
  try {
    const { build } = await import(new URL("bolt-app.js", EXAMPLES).href);
    const context = new Client({ baseUrl: server.url });
    const app = build(context);
    const envelopes = data("slack/docs_examples.jsonl");
    for (const body of envelopes.filter((e) => e.event?.type === "message" && !e.event.subtype)) await app.processEvent({ body, ack: async () => {} });
    const mention = envelopes.find((e) => e.event?.type === "app_mention");
    await app.processEvent({ body: mention, ack: async () => {} });
    assert.deepEqual(api.posted.map(([m, p]) => [m, p.text, p.thread_ts]), [["chat.postMessage", "It is, and then some.", mention.event.ts]]);
    const prompt = JSON.stringify(model.bodies()[0].messages);
    assert.ok(prompt.includes("is it everything a river should be?") && prompt.includes("Hello world"), prompt);
    const thread = (await context.history(mention.event.channel, { channel: "slack", topic_id: mention.event.ts })).items;
    assert.deepEqual(thread.map((i) => [i.kind, i.sender.user_id, i.text]), [["outbound_agent", SLACK_BOT.user_id, "It is, and then some."]]);
  } finally {
    await api.stop();
    await model.stop();
  }
});
