// What the tests share: this build's `chatctx serve` on a free loopback port (CHATCTX_BIN, which `cargo test`
// sets), and servers that misbehave (one that never answers, one that answers what it is told).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";

export const BIN = process.env.CHATCTX_BIN;
if (!BIN) throw new Error("CHATCTX_BIN must name the chatctx binary to test (cargo test sets it)");

/** A free port on loopback. */
export async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** Starts `chatctx serve` with `args` and `env`; `{ url, stop }`. */
export async function startServer({ args = [], env = {} } = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "chatctx-ts-"));
  const proc = spawn(BIN, ["serve", "--listen", `127.0.0.1:${port}`, "--store", `sqlite://${dir}/chatctx.db`, ...args], {
    env: { ...process.env, CHATCTX_LOG: "warn", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  proc.stderr.on("data", (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`chatctx serve exited: ${log}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`chatctx serve did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    stop: async () => {
      proc.kill();
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once("exit", r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A server that takes requests and answers with `handle(req, body)` → `{ status, body }` (or a promise of it), or
 * never when it gives `null`; `{ url, requests, stop }`. */
export async function fakeServer(handle) {
  const requests = [];
  const open = new Set();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      void Promise.resolve(handle(req, body)).then((answer) => {
        if (answer === null) return open.add(res); // never answers
        res.writeHead(answer.status, { "content-type": answer.type ?? "application/json" });
        res.end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
      });
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A chatctx that accepts every connection and never answers. */
export const neverAnswering = () => fakeServer(() => null);

/** Milliseconds `f` took, with its outcome. */
export async function timed(f) {
  const started = performance.now();
  try {
    return { value: await f(), ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

/** A Telegram Bot API that answers `send*` and `copyMessage` as Telegram does (the bot is `BOT_USER`); `{ url,
 * calls, stop }`, `calls` as `[method, params]`. */
export const BOT_USER = { id: 999, is_bot: true, first_name: "Helper", username: "helper_bot" };
export async function fakeBotApi() {
  let next = 9000;
  const calls = [];
  const sent = new Map();
  const queue = [];
  let waiting = [];
  const api = await fakeServer(async (req, body) => {
    const method = req.url.split("/").pop();
    const params = body ? JSON.parse(body) : {};
    if (method === "getUpdates") {
      // Long polling: what was pushed after `offset`, else wait (up to the poll's timeout) for a push.
      const fresh = () => queue.filter((u) => u.update_id >= (params.offset ?? 0));
      if (!fresh().length) await new Promise((r) => { waiting.push(r); setTimeout(r, (params.timeout ?? 0) * 1000); });
      return { status: 200, body: { ok: true, result: fresh() } };
    }
    calls.push([method, params]);
    const chat = { id: Number(params.chat_id), type: "supergroup", title: "Design team", is_forum: true };
    const base = { message_id: ++next, date: Math.floor(Date.now() / 1000), chat, from: BOT_USER };
    if (params.message_thread_id !== undefined) Object.assign(base, { message_thread_id: params.message_thread_id, is_topic_message: true });
    if (method === "getMe") return { status: 200, body: { ok: true, result: BOT_USER } };
    const replied = params.reply_parameters?.message_id ?? params.reply_to_message_id;
    if (replied !== undefined) base.reply_to_message = { message_id: replied, date: base.date - 1, chat };
    if (method === "sendMessage") {
      sent.set(base.message_id, { ...base, text: params.text });
      return { status: 200, body: { ok: true, result: sent.get(base.message_id) } };
    }
    if (method === "copyMessage") return { status: 200, body: { ok: true, result: { message_id: base.message_id } } };
    if (method === "editMessageText") {
      // As Telegram answers an edit: the whole message, changed.
      const edited = { ...(sent.get(params.message_id) ?? base), text: params.text, edit_date: base.date };
      return { status: 200, body: { ok: true, result: edited } };
    }
    return { status: 200, body: { ok: true, result: true } };
  });
  const push = (update) => {
    queue.push(update);
    for (const w of waiting) w();
    waiting = [];
  };
  return { ...api, calls, push };
}

/** A Telegram forum-topic message update of chat `chat`. */
export function topicUpdate(chat, id, from, fields, topic = 7) {
  const c = { id: chat, type: "supergroup", title: "Design team", is_forum: true };
  return { update_id: id, message: { message_id: id, date: 1_770_000_000 + id, chat: c, from, message_thread_id: topic, is_topic_message: true, ...fields } };
}

/** A Slack Web API answering `auth.test` and `chat.postMessage` / `chat.update` as Slack does, the bot being
 * `SLACK_BOT`; `{ url, posted, stop }`. */
export const SLACK_BOT = { user_id: "U0LAN0Z89", bot_id: "B0HELPER", team_id: "T123ABC456" };
export async function fakeSlackApi() {
  const posted = [];
  const api = await fakeServer((req, body) => {
    const method = req.url.split("/").pop().split("?")[0];
    const params = req.headers["content-type"]?.includes("json") ? JSON.parse(body || "{}") : Object.fromEntries(new URLSearchParams(body));
    if (method === "auth.test") return { status: 200, body: { ok: true, user_id: SLACK_BOT.user_id, bot_id: SLACK_BOT.bot_id, team_id: SLACK_BOT.team_id, user: "helper" } };
    if (method === "chat.postMessage" || method === "chat.update") {
      posted.push([method, params]);
      const ts = method === "chat.update" ? params.ts : `1770970900.${String(posted.length).padStart(6, "0")}`;
      const message = { type: "message", user: SLACK_BOT.user_id, bot_id: SLACK_BOT.bot_id, text: params.text, ts, team: SLACK_BOT.team_id,
        bot_profile: { id: SLACK_BOT.bot_id, name: "Helper", team_id: SLACK_BOT.team_id }, ...(params.thread_ts ? { thread_ts: params.thread_ts } : {}) };
      return { status: 200, body: { ok: true, channel: params.channel, ts, message } };
    }
    return { status: 200, body: { ok: false, error: "unknown_method" } };
  });
  return { ...api, posted };
}

/** A chat-completions endpoint answering `reply`; `{ url, requests, stop }` (`url` ends in /v1). */
export async function fakeModel(reply) {
  const model = await fakeServer((req, body) => ({ status: 200, body: { choices: [{ message: { role: "assistant", content: reply } }], _seen: JSON.parse(body).messages.length } }));
  return { ...model, url: `${model.url}/v1`, bodies: () => model.requests.map((r) => JSON.parse(r.body)) };
}

/** A chatctx server and a fake platform API (`fake`: `fakeBotApi` or `fakeSlackApi`) for one test file: started
 * before its tests and stopped after them. Read `.server` and `.api` inside a test. */
export function serverAnd(fake) {
  const env = {};
  before(async () => {
    env.server = await startServer();
    env.api = await fake();
  });
  after(async () => {
    await env.server.stop();
    await env.api.stop();
  });
  return env;
}
