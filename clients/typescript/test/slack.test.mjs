// chatctx/slack with a real Bolt App and its defaults (the bot's own message events dropped before any
// middleware): an app_mention through `app.processEvent`, its listener answering with `say`, a fake Slack Web API;
// the mention and the bot's reply are both in chatctx, and with chatctx stopped or silent the app still answers.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import bolt from "@slack/bolt";

import { Client } from "../dist/index.js";
import { setup } from "../dist/slack.js";
import { fakeSlackApi, serverAnd, freePort, neverAnswering, SLACK_BOT, timed } from "./support.mjs";

export const ENVELOPES = readFileSync(new URL("../../../crates/chatctx-platforms/tests/data/slack/docs_examples.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l));
const MENTION = ENVELOPES.find((e) => e.event?.type === "app_mention");

const env = serverAnd(fakeSlackApi);

function app(client, options) {
  const a = new bolt.App({ token: "xoxb-test", signingSecret: "not-checked", clientOptions: { slackApiUrl: `${env.api.url}/api/` }, logLevel: bolt.LogLevel.ERROR });
  setup(a, client, options);
  a.event("app_mention", async ({ event, say }) => {
    await say({ text: "all green", thread_ts: event.thread_ts ?? event.ts });
  });
  return a;
}

const process = (a, body) => a.processEvent({ body, ack: async () => {} });

test("with Bolt's defaults, the mention and the bot's reply are both recorded", async () => {
  const client = new Client({ baseUrl: env.server.url });
  const a = app(client);
  await process(a, MENTION);
  assert.deepEqual(env.api.posted.map(([m, p]) => [m, p.text]), [["chat.postMessage", "all green"]]);
  const channel = MENTION.event.channel;
  const thread = (await client.history(channel, { channel: "slack", topic_id: MENTION.event.ts })).items;
  assert.deepEqual(thread.map((i) => [i.kind, i.sender.user_id, i.text]), [["outbound_agent", SLACK_BOT.user_id, "all green"]]);
  const general = (await client.history(channel, { channel: "slack" })).items;
  assert.ok(general.some((i) => i.kind === "inbound_user" && /is it everything a river should be\?/.test(i.text)), JSON.stringify(general));
});

test("with chatctx stopped or never answering, the app answers within the timeout", async () => {
  const hang = await neverAnswering();
  try {
    for (const url of [`http://127.0.0.1:${await freePort()}`, hang.url]) {
      const before = env.api.posted.length;
      const a = app(new Client({ baseUrl: url, timeoutMs: 30_000 }), { timeoutMs: 300, onError: () => {} });
      const { error, ms } = await timed(() => process(a, MENTION));
      assert.equal(error, undefined);
      assert.equal(env.api.posted.length, before + 1, url);
      assert.ok(ms < 2 * 300 + 700, `${ms} ms for ${url}`);
    }
  } finally {
    await hang.stop();
  }
});
