// chatctx console: plain JavaScript, no build step. Reads the HTTP API the bot uses (GET routes only) and
// polls it every 2 seconds, redrawing only what changed. Message text is always inserted as text, never as HTML.
"use strict";

const POLL_MS = 2000;
// Past this many topics a chat is read whole, once per refresh, and only the selected topic's state is read,
// so a chat with thousands of topics costs a few requests, not thousands.
const MANY_TOPICS = 8;
// After a failed or slow refresh the next waits longer, up to this.
const MAX_POLL_MS = 30000;
const state = { chats: [], chat: null, tab: "calls", calls: [], call: null, topic: "all", timer: null, view: "" };

// ---------- small helpers ----------
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v; // CSSOM, which the page's CSP allows (a style attribute it would not)
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
const $ = (id) => document.getElementById(id);
const when = (t) => (t ? new Date(t).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" }) : "");
const clock = (t) => (t ? new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "");
function ago(t) {
  if (!t) return "";
  const s = Math.round((Date.now() - new Date(t)) / 1000);
  if (s < 90) return "just now";
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}
function span(secs) {
  const s = Math.abs(secs);
  const t = s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
  return secs < 0 ? `-${t}` : t;
}
const chip = (label, value) => h("span", { class: "chip" }, label, " ", h("b", {}, value));
// Names the platform told (title events), else ids.
const chatName = (c) => c.title || c.chat_id;
const topicName = (c, t) => (c && c.topic_titles && c.topic_titles[t]) || `Topic ${t}`;

// ---------- the API ----------
const token = () => sessionStorage.getItem("chatctx-token") || "";
class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}
async function api(path) {
  const headers = { accept: "application/json" };
  if (token()) headers.authorization = `Bearer ${token()}`;
  const r = await fetch(path, { headers });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}
const chatPath = (c, rest) => `/v1/chats/${encodeURIComponent(c.chat_id)}${rest}${rest.includes("?") ? "&" : "?"}channel=${encodeURIComponent(c.channel)}`;

function askToken(message) {
  const dialog = $("token-dialog");
  if (dialog.open) return;
  if (message) dialog.querySelector("p").textContent = message;
  $("token-input").value = "";
  dialog.showModal();
}
$("token-form").addEventListener("submit", (e) => {
  if (e.submitter && e.submitter.value === "ok") {
    sessionStorage.setItem("chatctx-token", $("token-input").value.trim());
    refresh(true);
  }
});
$("token-button").addEventListener("click", () => askToken());
$("menu").addEventListener("click", () => $("chats").classList.toggle("open"));

// ---------- chats ----------
// What each list last drew: a refresh that finds the same redraws nothing (a click never lands on a list that was
// replaced under it, and nothing flickers).
const drawn = { chats: "", calls: "", history: "" };

function renderChats() {
  const list = $("chat-list");
  const sig = JSON.stringify([state.chats, state.chat && [state.chat.channel, state.chat.chat_id]]);
  if (sig === drawn.chats) return;
  drawn.chats = sig;
  list.replaceChildren(
    ...state.chats.map((c) => {
      const active = state.chat && c.chat_id === state.chat.chat_id && c.channel === state.chat.channel;
      return h("li", { class: active ? "active" : "", "data-chat": c.chat_id, onclick: () => pickChat(c) },
        h("div", { class: "name" }, chatName(c)),
        h("div", { class: "sub muted" }, `${c.title ? c.chat_id + " · " : ""}${c.channel}${c.chat_type ? " · " + c.chat_type : ""} · ${c.items} items`,
          c.topics.length ? ` · ${c.topics.length} topics` : "", c.last_at ? ` · ${ago(c.last_at)}` : ""));
    }),
  );
  $("no-chats").hidden = state.chats.length > 0;
}

function pickChat(c) {
  state.chat = c;
  state.call = null;
  state.topic = "all";
  $("chats").classList.remove("open");
  $("welcome").hidden = true;
  $("chat").hidden = false;
  $("chat-title").textContent = chatName(c);
  renderChats();
  link();
  return refresh(true);
}

function showTab(tab) {
  state.tab = tab;
  document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t.dataset.tab === tab));
  for (const t of ["calls", "history", "objects", "state"]) $(`tab-${t}`).hidden = t !== state.tab;
}

document.querySelectorAll(".tab").forEach((b) =>
  b.addEventListener("click", () => {
    showTab(b.dataset.tab);
    link();
    refresh(true);
  }),
);

// ---------- deep links: /console#chat=ID&channel=telegram&tab=calls&call=REQUEST ----------
// What is on screen is in the address, so a bookmark or a plain headless screenshot opens the same view. A
// `token=` in it (for a screenshot of a server with tokens) is moved to this tab's session storage and dropped
// from the address at once; the hash never reaches the server.
function link() {
  const p = new URLSearchParams();
  if (state.chat) {
    p.set("chat", state.chat.chat_id);
    p.set("channel", state.chat.channel);
    p.set("tab", state.tab);
    if (state.call && state.tab === "calls") p.set("call", state.call);
  }
  const hash = p.toString();
  if (location.hash.slice(1) !== hash) history.replaceState(null, "", hash ? `#${hash}` : location.pathname);
}

function linked() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get("token")) {
    sessionStorage.setItem("chatctx-token", p.get("token"));
    p.delete("token");
    history.replaceState(null, "", p.toString() ? `#${p}` : location.pathname);
  }
  return { chat: p.get("chat"), channel: p.get("channel") || "telegram", tab: p.get("tab"), call: p.get("call") };
}

async function openLinked(want) {
  const c = state.chats.find((x) => x.chat_id === want.chat && x.channel === want.channel);
  if (!c) return;
  if (want.tab && ["calls", "history", "objects", "state"].includes(want.tab)) showTab(want.tab);
  await pickChat(c);
  if (want.call && state.tab === "calls" && state.calls.some((r) => r.request_id === want.call)) pickCall(want.call);
}

// ---------- tool calls ----------
function callSummary(r) {
  if (r.history) return [`${r.history.method}`, `${r.history.items.filter((i) => i.kept).length} of ${r.history.items.length} kept`];
  if (r.resolve) return [r.resolve.status, `${r.resolve.candidates.length} candidates`];
  if (r.list) return [`${r.list.objects.filter((o) => o.returned).length} live objects`];
  if (r.scenario) return [`revision ${r.scenario.revision}`, r.scenario.changed ? "changed" : "unchanged"];
  return [];
}

// Where a call was and what it answered: its topic, and the message being handled (author and first words) as the
// store holds it now.
function callPlace(r) {
  const m = r.stored && r.stored.message;
  const topic = r.topic_id || (m && m.topic_id);
  return {
    topic: topic ? (r.stored && r.stored.topic_title) || `Topic ${topic}` : "General",
    who: m && m.who,
    text: m ? m.text : r.current_message_id ? `(message ${r.current_message_id} is no longer stored)` : null,
  };
}

// "who: words" of a glance (a message, a candidate), or nothing when it says neither.
function said(g, tag, ...after) {
  return g && (g.text || g.who) ? h(tag, { class: "said" }, g.who ? h("b", {}, g.who, ": ") : null, g.text || "", ...after) : null;
}

function renderCalls() {
  const list = $("call-list");
  const sig = JSON.stringify([state.chat && [state.chat.channel, state.chat.chat_id], state.calls.map((c) => [c.request_id, c.stored]), state.call]);
  if (sig === drawn.calls) return;
  drawn.calls = sig;
  if (!state.calls.length) {
    list.replaceChildren(h("li", { class: "empty" }, "No tool calls yet. Records appear as the bot calls tools."));
    return;
  }
  list.replaceChildren(
    ...state.calls.map((r) => {
      const place = callPlace(r);
      return h("li", { class: state.call === r.request_id ? "active" : "", "data-request": r.request_id, "data-tool": r.tool, onclick: () => pickCall(r.request_id) },
        h("div", { class: "tool" }, r.tool),
        h("div", { class: "line2 muted" }, h("span", { class: "topic" }, place.topic), h("span", {}, `· ${when(r.now)}`)),
        said(place, "div"),
        h("div", { class: "line2" }, ...callSummary(r).map((s) => h("span", { class: "badge plain" }, s))));
    }),
  );
}

function pickCall(id) {
  state.call = id;
  link();
  renderCalls();
  renderDetail();
}

const KEPT_WHY = {
  recent_window: "one of the newest items, always kept",
  reply_parent: "the message being answered replies to it",
  lexical_score: "ranked relevant by the lexical selector",
  model_triage: "chosen by model triage",
  always_include: "everything considered was kept",
  mode_cap: "among the newest under the mode's cap",
  previous_task: "one of the latest scheduled outputs",
  not_recorded_by_mode: "not recorded for prompts in this mode",
  background: "background output, left out of chat context",
  outside_recency_window: "too old for the recency window",
  not_chosen: "not chosen among the older items",
  token_budget: "the token budget ran out",
};

async function renderDetail() {
  const box = $("call-detail");
  const r = state.calls.find((c) => c.request_id === state.call);
  if (!r) {
    box.replaceChildren(h("p", { class: "empty" }, "Pick a tool call to see how its answer was reached."));
    return;
  }
  const place = callPlace(r);
  const head = [h("h3", {}, r.tool), h("div", { class: "muted mono" }, `request ${r.request_id} · ${when(r.now)} · ${place.topic}`),
    said(place, "p", r.current_message_id ? h("span", { class: "muted mono" }, ` #${r.current_message_id}`) : null)];
  if (r.history) box.replaceChildren(...head, ...(await historyDetail(r)));
  else if (r.resolve) box.replaceChildren(...head, ...resolveDetail(r.resolve, (r.stored && r.stored.candidates) || {}));
  else if (r.list) box.replaceChildren(...head, ...listDetail(r.list));
  else if (r.scenario) box.replaceChildren(...head, h("div", { class: "chips" }, chip("revision", r.scenario.revision), chip("changed", r.scenario.changed ? "yes" : "no"), chip("keys", r.scenario.keys_changed.join(", ") || "none")));
}

let historyCache = { key: "", items: new Map() };
async function messagesOf(c) {
  const many = c.topics.length > MANY_TOPICS;
  const picked = state.topic === "all" || state.topic === "general" ? null : state.topic;
  const key = `${c.channel}/${c.chat_id}/${c.items}/${c.last_at}${many ? "/" + picked : ""}`;
  if (historyCache.key === key) return historyCache.items;
  // Each topic's items first, then the whole chat (a read without a topic reads every topic): what only the
  // whole-chat read holds is the general thread's.
  // A chat with many topics: the selected topic's items, then the whole chat once.
  const topics = many ? (picked === null ? [null] : [picked, null]) : [...c.topics, null];
  // Each topic's items, page after page (at most 2,000 each: the console shows the recent ones).
  const readAll = async (t) => {
    const out = [];
    let cursor = null;
    while (out.length < 2000) {
      const q = [`limit=500`, t === null ? null : `topic_id=${encodeURIComponent(t)}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : null].filter(Boolean);
      const page = await api(chatPath(c, `/history?${q.join("&")}`));
      out.push(...page.items);
      if (!page.next) break;
      cursor = page.next;
    }
    return out;
  };
  const lists = await Promise.all(topics.map((t) => readAll(t).catch(() => [])));
  const items = new Map();
  lists.forEach((list, i) => list.forEach((m) => m.message_id && !items.has(m.message_id) && items.set(m.message_id, { ...m, topic: topics[i] })));
  historyCache = { key, items };
  return items;
}

async function historyDetail(r) {
  const d = r.history;
  const known = await messagesOf(state.chat);
  const keptText = new Map(d.kept_items.map((i) => [i.message_id, i]));
  const kept = d.items.filter((i) => i.kept).length;
  const b = d.budget;
  const chips = h("div", { class: "chips" },
    chip("method", d.method), chip("kept", `${kept} of ${d.items.length}`),
    chip("tokens", b.max_tokens ? `${b.used_tokens} / ${b.max_tokens}` : `${b.used_tokens}`),
    d.outside_lookback ? chip("older, not looked at", d.outside_lookback) : null,
    d.in_other_topics ? chip("in other topics, not considered", d.in_other_topics) : null,
    d.triage ? chip("triage", `${d.triage.model}: ${d.triage.outcome}${d.triage.error ? " (" + d.triage.error + ")" : ""}`) : null);
  const rows = d.items.map((i) => {
    const m = keptText.get(i.message_id) || known.get(i.message_id);
    return h("tr", { class: i.kept ? "kept" : "dropped", "data-message": i.message_id || "" },
      h("td", { "data-label": "" }, h("span", { class: `badge ${i.kept ? "kept" : "drop"}` }, i.kept ? "in" : "out")),
      h("td", { "data-label": "why", title: KEPT_WHY[i.reason] || "" }, h("span", { class: "badge plain reason" }, i.reason.replaceAll("_", " ")),
        i.score !== undefined ? h("span", { class: "muted" }, ` ${i.score.toFixed(2)}`) : null),
      h("td", { "data-label": "", class: "text" },
        m ? h("span", { class: "speaker" }, m.sender.nickname || m.sender.username || m.sender.user_id || "?", ": ") : null,
        m ? m.text : h("span", { class: "muted" }, `(message ${i.message_id || i.kind} is no longer stored)`)),
      h("td", { "data-label": "msg", class: "num muted mono" }, i.message_id || ""),
      h("td", { "data-label": "tokens", class: "num muted" }, i.tokens));
  });
  const table = h("table", { class: "cards verdicts" },
    h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "Reason"), h("th", {}, "Message"), h("th", { class: "num" }, "Id"), h("th", { class: "num" }, "Tokens"))),
    h("tbody", {}, rows));
  const prompt = h("div", { class: "prompt" }, ...d.prompt.map((p) => h("div", { class: "msg" }, h("div", { class: "role" }, p.role), h("pre", {}, p.content))));
  const others = d.in_other_topics
    ? h("p", { class: "muted other-topics" }, `${d.in_other_topics} ${d.in_other_topics === 1 ? "item" : "items"} in other topics ${d.in_other_topics === 1 ? "was" : "were"} not considered: history is kept per topic (history.scope = "topic").`)
    : null;
  return [chips, h("h4", {}, "Every message considered, oldest first"), h("div", { class: "scroll-x" }, table), others,
    h("h4", {}, "chatctx's part of the prompt (the bot adds its own system prompt and notes)"), prompt];
}

function resolveDetail(d, seen) {
  const max = Math.max(1, ...d.candidates.map((c) => Math.abs(c.score)));
  const rows = d.candidates.map((c) =>
    h("tr", { class: c.rank === 1 && d.status === "resolved" ? "kept" : c.rank ? "" : "dropped" },
      h("td", { "data-label": "rank", class: "num" }, c.rank ? `#${c.rank}` : "—"),
      h("td", { "data-label": "", class: "object" }, h("div", { class: "mono" }, c.object_id),
        seen[c.object_id] ? said(seen[c.object_id], "div") : h("div", { class: "muted" }, "(no longer stored)"),
        h("div", { class: "muted" }, `${c.kind} · ${c.tier}`)),
      h("td", { "data-label": "score", class: "num" }, c.score.toFixed(2),
        h("div", { class: "bar-track" }, h("div", { class: "bar-fill", style: `width:${Math.max(0, (c.score / max) * 100)}%` }))),
      h("td", { "data-label": "parts" }, h("div", { class: "parts" }, ...c.parts.map((p) => h("span", { class: `part ${p.points < 0 ? "neg" : ""}` }, `${p.points > 0 ? "+" : ""}${p.points} ${p.part.replaceAll("_", " ")}`))))));
  const verdict = { resolved: "kept", ambiguous: "warn", not_found: "drop" }[d.status] || "plain";
  return [
    h("div", { class: "chips" }, h("span", { class: `badge ${verdict}` }, d.status), chip("why", d.why.replaceAll("_", " ")), chip("lead", d.top_score_gap),
      chip("needs", `≥ ${d.min_score} and a lead of ${d.ambiguity_gap}`)),
    h("h4", {}, "Candidates, best first"),
    h("div", { class: "scroll-x" }, h("table", { class: "cards candidates" },
      h("thead", {}, h("tr", {}, h("th", {}, "Rank"), h("th", {}, "Object"), h("th", { class: "num" }, "Score"), h("th", {}, "Score parts"))), h("tbody", {}, rows))),
  ];
}

function listDetail(d) {
  if (!d.objects.length) return [h("p", { class: "empty" }, "No live objects at this time.")];
  return [h("h4", {}, "Live objects at " + when(d.now)), timeline(d.objects.map((o) => ({ ...o, label: o.object_id })), new Date(d.now))];
}

// ---------- history, objects, state ----------
async function renderHistory() {
  const c = state.chat;
  const items = [...(await messagesOf(c)).values()].sort((a, b) => (a.sent_at < b.sent_at ? -1 : 1));
  const objects = await api(chatPath(c, "/objects")).catch(() => []);
  const bySource = new Map();
  objects.forEach((o) => o.source_message_id && bySource.set(o.source_message_id, [...(bySource.get(o.source_message_id) || []), o]));
  const topics = ["all", "general", ...c.topics];
  const shown = items.filter((m) => state.topic === "all" || (state.topic === "general" ? m.topic === null : m.topic === state.topic)).slice(-300);
  // A refresh that finds the same redraws nothing (the reader's scroll and selection stay).
  const sig = JSON.stringify([c.channel, c.chat_id, c.topic_titles, state.topic, shown, objects]);
  if (sig === drawn.history) return;
  drawn.history = sig;
  const filters = h("div", { class: "filters" }, ...topics.map((t) =>
    h("button", { class: state.topic === t ? "" : "ghost", onclick: () => { state.topic = t; renderHistory(); } }, t === "all" ? "All topics" : t === "general" ? "General" : topicName(c, t))));
  const list = h("div", { class: "hist" }, ...shown.map((m) =>
    h("div", { class: `hist-item ${m.kind === "outbound_agent" ? "out" : ""}`, "data-message": m.message_id },
      h("div", { class: "meta" }, h("span", { class: "speaker" }, m.sender.nickname || m.sender.username || "?"),
        h("span", { class: "badge plain" }, m.kind.replace("_", " ")), m.topic ? h("span", { class: "badge plain" }, topicName(c, m.topic)) : null,
        m.reply_to_message_id ? h("span", { class: "muted" }, `↩ ${m.reply_to_message_id}`) : null,
        ...(bySource.get(m.message_id) || []).map((o) => h("span", { class: "badge kept" }, o.kind)),
        h("span", { class: "spacer" }), h("span", { class: "muted mono" }, `#${m.message_id} · ${clock(m.sent_at)}`)),
      h("div", { class: "body" }, m.text))));
  $("tab-history").replaceChildren(filters, shown.length ? list : h("p", { class: "empty" }, "Nothing stored here."));
}

function timeline(rows, now) {
  const start = Math.min(...rows.map((o) => new Date(o.activated_at)));
  const end = Math.max(now.getTime(), ...rows.map((o) => new Date(o.expires_at)));
  const pos = (t) => `${((new Date(t) - start) / Math.max(1, end - start)) * 100}%`;
  return h("div", { class: "timeline" }, ...rows.map((o) => {
    const left = Math.round((new Date(o.expires_at) - now) / 1000);
    return h("div", { class: "tl-row" },
      h("div", {}, h("div", { class: "mono" }, o.label), h("div", { class: "muted" }, `${o.kind} · ${o.activation || "created"}${o.tier ? " · " + o.tier : ""}`)),
      h("div", { class: "tl-track", title: `${when(o.activated_at)} → ${when(o.expires_at)}` },
        h("div", { class: "tl-live", style: `left:${pos(o.activated_at)};width:calc(${pos(o.expires_at)} - ${pos(o.activated_at)})` }),
        h("div", { class: "tl-now", style: `left:${pos(now)}` })),
      h("div", { class: "num" }, left > 0 ? h("span", { class: "badge kept" }, `${span(left)} left`) : h("span", { class: "badge drop" }, "expired")));
  }));
}

async function renderObjects() {
  const c = state.chat;
  const objects = await api(chatPath(c, "/objects"));
  const live = state.calls.find((r) => r.list);
  const rows = objects.filter((o) => o.activated_at).map((o) => {
    const found = live && live.list.objects.find((l) => l.object_id === o.object_id);
    return { ...o, label: o.title_or_label ? `${o.object_id} · ${o.title_or_label}` : o.object_id, expires_at: found ? found.expires_at : o.activated_at };
  });
  const now = live ? new Date(live.list.now) : new Date();
  const note = h("p", { class: "muted" }, live ? `Live at the last list_active_context_objects call (${when(live.list.now)}); TTLs as that call judged them.` : "TTLs show once the bot calls list_active_context_objects.");
  const all = h("table", { class: "cards" }, h("thead", {}, h("tr", {}, h("th", {}, "Object"), h("th", {}, "Kind"), h("th", {}, "From"), h("th", {}, "Activation"), h("th", {}, "Created"))),
    h("tbody", {}, ...objects.map((o) => h("tr", {}, h("td", { class: "mono" }, o.object_id, o.title_or_label ? h("div", { class: "muted" }, o.title_or_label) : null),
      h("td", { "data-label": "kind" }, o.kind), h("td", { "data-label": "from", class: "mono" }, o.source_message_id || ""),
      h("td", { "data-label": "activation" }, o.activation ? `${o.activation} ${clock(o.activated_at)}` : "—"), h("td", { "data-label": "created" }, when(o.created_at))))));
  $("tab-objects").replaceChildren(note, rows.length && live ? timeline(rows.filter((r) => r.expires_at !== r.activated_at), now) : h("span"), h("h4", {}, `All objects (${objects.length})`), h("div", { class: "scroll-x" }, all));
}

function diff(before, patch) {
  const out = [];
  for (const [k, v] of Object.entries(patch || {})) {
    if (v === null) out.push(h("li", { class: "del" }, `− ${k}`));
    else if (before && k in before) out.push(h("li", { class: "chg" }, `~ ${k}: ${JSON.stringify(before[k])} → ${JSON.stringify(v)}`));
    else out.push(h("li", { class: "add" }, `+ ${k}: ${JSON.stringify(v)}`));
  }
  return h("ul", { class: "diff" }, out);
}

async function renderState() {
  const c = state.chat;
  const selected = state.topic === "all" || state.topic === "general" ? null : state.topic;
  const topics = c.topics.length > MANY_TOPICS ? [selected] : [null, ...c.topics];
  const states = await Promise.all(topics.map((t) => api(chatPath(c, `/scenario${t === null ? "" : "?topic_id=" + encodeURIComponent(t)}`)).catch(() => null)));
  const blocks = [];
  states.forEach((s, i) => {
    if (!s || !s.revision) return;
    const revs = [...(s.revisions || [])].reverse();
    let acc = {};
    const rendered = revs.map((r) => {
      const el = h("div", { class: "rev" }, h("div", {}, h("b", {}, `revision ${r.revision}`), h("span", { class: "muted" }, ` · ${when(r.at)}`)), diff(acc, r.patch));
      for (const [k, v] of Object.entries(r.patch || {})) v === null ? delete acc[k] : (acc[k] = v);
      return el;
    });
    blocks.push(h("h4", {}, topics[i] === null ? "General" : topicName(c, topics[i])),
      h("div", { class: "msg" }, h("div", { class: "role" }, `current state · revision ${s.revision}`), h("pre", {}, JSON.stringify(s.state, null, 2))),
      h("h4", {}, "Revisions, newest last"), ...rendered);
  });
  $("tab-state").replaceChildren(...(blocks.length ? blocks : [h("p", { class: "empty" }, "No conversation state written yet (update_scenario).")]));
}

// ---------- polling ----------
async function refresh(force) {
  try {
    state.chats = (await api("/v1/chats?limit=1000")).chats;
    $("live").classList.remove("off");
    renderChats();
    if (!state.chat) return true;
    const fresh = state.chats.find((c) => c.chat_id === state.chat.chat_id && c.channel === state.chat.channel);
    if (!fresh) return true;
    const changed = JSON.stringify(fresh) !== JSON.stringify(state.chat);
    state.chat = fresh;
    $("chat-title").textContent = chatName(fresh);
    $("chat-meta").textContent = `${fresh.title ? fresh.chat_id + " · " : ""}${fresh.channel}${fresh.chat_type ? " · " + fresh.chat_type : ""} · ${fresh.items} items · ${fresh.objects} objects · ${fresh.people} people`;
    const calls = (await api(chatPath(fresh, "/decisions?limit=1000"))).decisions;
    const callsChanged = JSON.stringify(calls.map((c) => c.request_id)) !== JSON.stringify(state.calls.map((c) => c.request_id));
    state.calls = calls;
    if (!force && !changed && !callsChanged) return true;
    if (state.tab === "calls") {
      renderCalls();
      if (force || changed) renderDetail();
    } else if (state.tab === "history") await renderHistory();
    else if (state.tab === "objects") await renderObjects();
    else if (state.tab === "state") await renderState();
    return true;
  } catch (e) {
    $("live").classList.add("off");
    if (e.status === 401) askToken("This server wants a bearer token. It is kept in this browser tab only (session storage).");
    else if (e.status === 403) askToken("This token may not read that. Enter another one.");
    return false;
  }
}

// Polling: one refresh at a time; a failed or slow one makes the next wait longer (up to MAX_POLL_MS), a quick
// success brings it back to POLL_MS.
let pollMs = POLL_MS;
async function poll() {
  const started = Date.now();
  const ok = await refresh(false);
  const took = Date.now() - started;
  pollMs = ok && took < POLL_MS / 2 ? POLL_MS : Math.min(MAX_POLL_MS, pollMs * 2);
  state.timer = setTimeout(poll, pollMs);
}
const wanted = linked();
refresh(true)
  .then(() => (wanted.chat ? openLinked(wanted) : null))
  .then(() => { state.timer = setTimeout(poll, POLL_MS); });
