// The client against this build's server: every operation has a method, the committed types are the server's,
// ids of every kind round-trip, every tool and route answers, errors are ChatctxError with the documented codes,
// retries only where they are safe, and a call never waits past its timeout or its signal.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { ChatctxError, Client, describeResolution, openaiMessages } from "../dist/index.js";
import { generate, TARGET } from "../scripts/generate.mjs";
import { fakeServer, freePort, neverAnswering, startServer, timed } from "./support.mjs";

const BIG_CHAT = -1001234567890123n; // a supergroup id, as a bigint
const WIDE = "9007199254740993"; // 2^53 + 1: a number would lose it
const BOT = { user_id: "999", username: "helper_bot" };
const NOW = 1_770_000_600; // a minute after the messages: the photo is still live

const camel = (id) => id.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
// Not client methods: MCP clients speak to /mcp with an MCP SDK, and /console is a web page.
const NOT_CLIENT = new Set(["mcp", "console"]);

function update(id, from, fields) {
  const chat = { id: Number(BIG_CHAT), type: "supergroup", title: "Design team", is_forum: true };
  return { update_id: id, message: { message_id: id, date: 1_770_000_000 + id, chat, from, message_thread_id: 7, is_topic_message: true, ...fields } };
}

let server;
let client;
before(async () => {
  server = await startServer();
  client = new Client({ baseUrl: server.url });
});
after(() => server.stop());

describe("the contract", () => {
  test("every operation of /openapi.json has a method named by its operationId in camelCase", async () => {
    const doc = await client.openapi();
    const missing = [];
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        if (NOT_CLIENT.has(op.operationId)) continue;
        if (typeof client[camel(op.operationId)] !== "function") missing.push(op.operationId);
      }
    }
    assert.deepEqual(missing, [], "operations without a method");
  });

  test("the committed types are what openapi-typescript makes of the server's document", async () => {
    const fresh = await generate(await client.openapi());
    const committed = readFileSync(TARGET, "utf8");
    assert.ok(fresh === committed, "src/openapi.ts is stale: run `npm run generate -- URL` and commit it");
  });

  test("the raw platform bodies are open objects, so a library's own update type is accepted", async () => {
    const doc = await client.openapi();
    for (const path of ["/v1/telegram/updates", "/v1/discord/events", "/v1/slack/events", "/v1/slack/users"]) {
      const schema = doc.paths[path].post.requestBody.content["application/json"].schema;
      assert.equal(schema.additionalProperties, true, path);
    }
  });

  test("the package's version is the workspace's", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const cargo = readFileSync(new URL("../../../Cargo.toml", import.meta.url), "utf8");
    assert.equal(pkg.version, /^version = "([^"]+)"/m.exec(cargo)[1]);
  });
});

describe("the tools and routes", () => {
  const alice = { id: 42, is_bot: false, first_name: "Alice", username: "alice" };
  const bob = { id: 43, is_bot: false, first_name: "Bob", username: "bob" };
  const photo = [{ file_id: "AgAD-logo", file_unique_id: "logo-1", width: 800, height: 600 }];

  before(async () => {
    const parent = { message_id: 501, date: 1_770_000_501, chat: { id: Number(BIG_CHAT), type: "supergroup" }, from: alice, photo, caption: "our new logo" };
    let r = await client.telegramUpdate(update(501, alice, { photo, caption: "our new logo" }), { bot_username: BOT.username, bot_user_id: BOT.user_id });
    assert.equal(r.accepted, 1);
    r = await client.telegramUpdate(update(502, bob, { text: "@helper_bot what do you think of this?", entities: [{ type: "mention", offset: 0, length: 11 }], reply_to_message: parent }), { bot_username: BOT.username });
    assert.equal(r.decisions[0].triggered_agent, true);
  });

  test("a -100… chat id as a bigint and a 64-bit id as a string round-trip", async () => {
    const page = await client.history(BIG_CHAT, { topic_id: 7 });
    assert.deepEqual(page.items.map((i) => [i.chat_id, i.message_id]), [[String(BIG_CHAT), "501"], [String(BIG_CHAT), "502"]]);
    await client.ingest({ type: "message", channel: "slack", chat_id: WIDE, message_id: WIDE, kind: "inbound_user", sent_at: 1_770_000_000, sender: { user_id: 1n, username: "ann" }, text: "wide" });
    const wide = await client.history(WIDE, { channel: "slack" });
    assert.deepEqual(wide.items.map((i) => [i.chat_id, i.message_id, i.sender.user_id]), [[WIDE, WIDE, "1"]]);
  });

  test("history, resolution, objects, state, summary, range, records, chats", async () => {
    const ctx = await client.getChatHistoryContext({ chat_id: BIG_CHAT, current_message_id: 502n });
    assert.match(ctx.prompt.at(-1).content, /what do you think of this\?/);
    const res = await client.resolveReferenceTarget({
      chat_id: BIG_CHAT, current_message_id: 502, sender_user_id: 43, raw_user_text: "what do you think of this?", now: NOW,
    });
    assert.equal(res.status, "resolved");
    assert.equal(res.best_match.object_id, "501:media.image");
    assert.match(describeResolution(res), /^The user's reference points at media.image `501:media.image`/);
    const messages = openaiMessages(ctx, { system: "You are Helper.", notes: [describeResolution(res)] });
    assert.deepEqual(messages.map((m) => m.role).slice(0, 1), ["system"]);
    assert.match(messages.at(-2).content, /points at media.image/, "the note sits just before the current message");
    const live = await client.listActiveContextObjects({ chat_id: BIG_CHAT, current_message_id: 502, now: NOW });
    assert.ok(live.objects.some((o) => o.object_id === "501:media.image"));
    assert.ok((await client.objects(BIG_CHAT)).some((o) => o.object_id === "501:media.image"));
    const s1 = await client.updateScenario({ chat_id: BIG_CHAT, topic_id: 7, patch: { color: "teal" } });
    const s2 = await client.updateScenario({ chat_id: BIG_CHAT, topic_id: 7, patch: { color: "navy" }, expected_revision: s1.revision });
    assert.equal(s2.state.color, "navy");
    const back = await client.revertScenario({ chat_id: BIG_CHAT, topic_id: 7, to_revision: s1.revision });
    assert.equal(back.state.color, "teal");
    assert.equal((await client.getScenario({ chat_id: BIG_CHAT, topic_id: 7 })).state.color, "teal");
    assert.equal((await client.scenario(BIG_CHAT, { topic_id: 7 })).revisions.length, 3);
    const summary = await client.updateSummary({ chat_id: BIG_CHAT, topic_id: 7, text: "Alice posted the logo.", covers_until_message_id: 501 });
    assert.equal(summary.changed, true);
    const range = await client.getChatHistoryRange({ chat_id: BIG_CHAT, topic_id: 7, limit: 1 });
    assert.equal(range.items.length, 1);
    assert.ok(range.next, "a next page");
    const pages = [];
    for await (const page of client.historyPages(BIG_CHAT, { topic_id: 7, limit: 1 })) pages.push(page.items.map((i) => i.message_id));
    assert.deepEqual(pages, [["501"], ["502"]], "the iterator follows next");
    const records = await client.decisions(BIG_CHAT);
    assert.ok(records.decisions.length >= 3 && records.keep > 0);
    const one = await client.decision(BIG_CHAT, records.decisions[0].request_id);
    assert.equal(one.request_id, records.decisions[0].request_id);
    assert.equal(await client.callTool("get_scenario", { chat_id: String(BIG_CHAT), topic_id: "7" }).then((s) => s.state.color), "teal");
    const chats = await client.chats();
    assert.ok(chats.chats.some((c) => c.chat_id === String(BIG_CHAT) && c.title === "Design team"));
    assert.equal(await client.health(), true);
    assert.equal(await client.ready(), true);
    assert.match(await client.metrics(), /chatctx_/);
  });

  test("a server error is a ChatctxError with its code, message and status", async () => {
    await assert.rejects(client.getChatHistoryContext({ chat_id: "no-such-chat" }), (e) => {
      assert.ok(e instanceof ChatctxError);
      assert.equal(e.code, "unknown_chat");
      assert.equal(e.status, 404);
      assert.match(e.message, /no-such-chat/);
      return true;
    });
    await assert.rejects(client.ingest({ type: "nonsense" }).then((r) => (r.rejected.length ? Promise.reject(new ChatctxError(r.rejected[0].code, r.rejected[0].message)) : r)), { code: "unsupported_event" });
    const deleted = await client.deleteChat(WIDE, { channel: "slack" });
    assert.equal(deleted.deleted, true);
  });
});

describe("scopes", () => {
  test("a scoped client reaches its chat only", async () => {
    const admin = "ts-admin-token-0123456789";
    const guarded = await startServer({ env: { CHATCTX_SERVER__TOKENS: `["${admin}"]` } });
    try {
      const c = new Client({ baseUrl: guarded.url, token: admin });
      await c.ingest({ type: "message", chat_id: "-100", message_id: "1", kind: "inbound_user", sent_at: 1_770_000_000, sender: { user_id: "1", username: "ann" }, text: "hi", triggered_agent: true });
      await c.ingest({ type: "message", chat_id: "-200", message_id: "1", kind: "inbound_user", sent_at: 1_770_000_000, sender: { user_id: "1", username: "ann" }, text: "other" });
      const scoped = await c.scoped({ chat_id: -100, ttl_seconds: 60 });
      assert.equal((await scoped.getChatHistoryContext({ chat_id: -100 })).items.length, 1);
      await assert.rejects(scoped.getChatHistoryContext({ chat_id: -200 }), { code: "forbidden_scope", status: 403 });
      await assert.rejects(new Client({ baseUrl: guarded.url }).chats(), { code: "unauthorized", status: 401 });
      const scope = await c.createScope({ chat_id: "-100" });
      assert.equal((await c.revokeScope(scope.token)).revoked, true);
      await assert.rejects(new Client({ baseUrl: guarded.url, token: scope.token }).chats(), { status: 401 });
    } finally {
      await guarded.stop();
    }
  });
});

describe("failures", () => {
  test("a server that cannot be reached: connection_error, after the retries", async () => {
    const port = await freePort();
    const c = new Client({ baseUrl: `http://127.0.0.1:${port}`, retries: 2, backoffMs: 10 });
    const { error, ms } = await timed(() => c.health());
    assert.equal(error.code, "connection_error");
    assert.ok(ms < 2_000, `${ms} ms`);
  });

  test("a server that never answers: timeout, within the call's timeout, never sent again", async () => {
    const hang = await neverAnswering();
    try {
      const c = new Client({ baseUrl: hang.url, timeoutMs: 300, retries: 2 });
      const { error, ms } = await timed(() => c.getChatHistoryContext({ chat_id: 1 }));
      assert.equal(error.code, "timeout");
      assert.ok(ms >= 280 && ms < 1_500, `${ms} ms`);
      assert.equal(hang.requests.length, 1);
      const short = await timed(() => c.getChatHistoryContext({ chat_id: 1 }, { timeoutMs: 100 }));
      assert.ok(short.error.code === "timeout" && short.ms < 600, `${short.ms} ms`);
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 50);
      const aborted = await timed(() => c.getChatHistoryContext({ chat_id: 1 }, { signal: abort.signal }));
      assert.ok(aborted.error.code === "aborted" && aborted.ms < 250, `${aborted.ms} ms`);
    } finally {
      await hang.stop();
    }
  });

  test("a 503 is sent again for a read and an ingest, never for a state change", async () => {
    let n = 0;
    const flaky = await fakeServer(() => (++n % 2 === 1 ? { status: 503, body: "busy" } : { status: 200, body: { accepted: 1, rejected: [], decisions: [] } }));
    try {
      const c = new Client({ baseUrl: flaky.url, backoffMs: 1 });
      assert.equal((await c.ingest({ type: "message" })).accepted, 1);
      assert.equal(flaky.requests.length, 2, "the ingest was sent again");
      await assert.rejects(c.updateScenario({ chat_id: 1, patch: {} }), { code: "bad_response", status: 503 });
      assert.equal(flaky.requests.length, 3, "the state change was not");
    } finally {
      await flaky.stop();
    }
  });

  test("an answer that is not chatctx's: bad_response", async () => {
    const html = await fakeServer(() => ({ status: 200, type: "text/html", body: "<html>proxy</html>" }));
    try {
      await assert.rejects(new Client({ baseUrl: html.url }).chats(), { code: "bad_response", status: 200 });
    } finally {
      await html.stop();
    }
  });
});
