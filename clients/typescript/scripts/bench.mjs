// What the TypeScript client adds to a call: latency of the same requests through `Client` and through bare
// `fetch`, against a running server, in turn (A B A B), one connection, no concurrency.
//
//     chatctx serve --store memory --preset group-bot &
//     npm run build && node scripts/bench.mjs [BASE_URL] [CALLS]
//
// Feeds one chat 200 messages, then times CALLS `get_chat_history_context` and `resolve_reference_target` calls.
import { availableParallelism } from "node:os";

import { Client } from "../dist/index.js";

const base = (process.argv[2] ?? "http://127.0.0.1:7878").replace(/\/+$/, "");
const calls = Number(process.argv[3] ?? 2000);
const CHAT = -1009999000002;
const client = new Client({ baseUrl: base });

const group = { id: CHAT, type: "supergroup", title: "Bench" };
for (let i = 1; i <= 200; i++) {
  const message = { message_id: i, date: 1770970800 + i * 30, chat: group, from: { id: 40 + (i % 5), is_bot: false, first_name: `User${i % 5}` }, text: `message ${i} about the release plan` };
  if (i % 20 === 0) message.photo = [{ file_id: `p${i}`, file_unique_id: `u${i}`, width: 10, height: 10 }];
  await client.telegramUpdate({ update_id: i, message }, { bot_username: "bench_bot" });
}

const history = { chat_id: String(CHAT), current_message_id: "200", now: 1770976900 };
const resolve = { chat_id: String(CHAT), current_message_id: "200", sender_user_id: "40", raw_user_text: "what about this photo?", now: 1770976900 };
const bare = async (tool, body) => {
  const r = await fetch(`${base}/v1/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(body) });
  return r.json();
};
const cases = [
  ["get_chat_history_context", () => client.getChatHistoryContext(history), () => bare("get_chat_history_context", history)],
  ["resolve_reference_target", () => client.resolveReferenceTarget(resolve), () => bare("resolve_reference_target", resolve)],
];

const pct = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];
console.log(`${calls} calls each, in turn, against ${base}; ${availableParallelism()} cores, Node ${process.version}`);
for (const [name, viaClient, viaFetch] of cases) {
  for (let i = 0; i < 200; i++) await viaClient(), await viaFetch(); // warm both
  const a = [];
  const b = [];
  for (let i = 0; i < calls; i++) {
    let t = performance.now();
    await viaClient();
    a.push(performance.now() - t);
    t = performance.now();
    await viaFetch();
    b.push(performance.now() - t);
  }
  a.sort((x, y) => x - y);
  b.sort((x, y) => x - y);
  const us = (ms) => `${(ms * 1000).toFixed(0).padStart(5)} µs`;
  console.log(`${name.padEnd(26)} client p50 ${us(pct(a, 0.5))} p99 ${us(pct(a, 0.99))} | bare fetch p50 ${us(pct(b, 0.5))} p99 ${us(pct(b, 0.99))} | client - fetch at p50 ${us(pct(a, 0.5) - pct(b, 0.5))}`);
}
