// The HTTP client: one method per operation of the server's OpenAPI document, named by its operationId in
// camelCase, typed by the generated `openapi.ts`. Only `fetch`: no runtime dependency.
import { ChatctxError } from "./errors.js";
import type { components, operations } from "./openapi.js";

/** The server's schemas, by name (`Schemas["HistoryContext"]`, …). */
export type Schemas = components["schemas"];
/** An id: Telegram's are numbers (chat ids past 2^53 as strings or bigints), Slack's and Discord's strings. */
export type Id = string | number | bigint;
/** Where a local `chatctx serve` listens by default. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:7878";

type JsonOf<T> = T extends { content: { "application/json": infer B } } ? B : never;
/** The JSON body an operation takes. */
export type RequestOf<K extends keyof operations> = JsonOf<NonNullable<operations[K]["requestBody"]>>;
/** The JSON an operation answers with (its 200). */
export type AnswerOf<K extends keyof operations> = operations[K]["responses"] extends { 200: infer R } ? JsonOf<R> : never;
/** An operation's query parameters. */
export type QueryOf<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>;
/** Fields that take an id (`…_id`, or `string | number`) take any {@link Id}. */
export type WithIds<T> = {
  [F in keyof T]: string extends NonNullable<T[F]>
    ? F extends `${string}_id`
      ? T[F] | number | bigint
      : number extends NonNullable<T[F]>
        ? T[F] | bigint
        : T[F]
    : T[F];
};
/** A tool's arguments, with the wire field names (`{ chat_id, current_message_id, … }`). */
export type ToolArgs<K extends ToolName> = WithIds<RequestOf<K>>;
/** The tools (docs/protocol.md §6). */
export type ToolName =
  | "get_chat_history_context"
  | "get_chat_history_range"
  | "resolve_reference_target"
  | "list_active_context_objects"
  | "get_scenario"
  | "update_scenario"
  | "revert_scenario"
  | "update_summary";

/** One event of `POST /v1/events` (docs/protocol.md §3), ids as any {@link Id}. */
export type EventInput = WithIds<Schemas["Event"]> | Record<string, unknown>;

export interface ClientOptions {
  /** Where chatctx listens; default {@link DEFAULT_BASE_URL}. */
  baseUrl?: string;
  /** A bearer token: one of the server's `server.tokens`, or a scope's token. */
  token?: string;
  /** Milliseconds each attempt may take (default 10,000); a call that times out is not sent again. */
  timeoutMs?: number;
  /** How many times a call is sent again after a failure that allows it (default 2; see the README). */
  retries?: number;
  /** The first wait before sending again, doubled each time up to 2 s (default 100 ms). */
  backoffMs?: number;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
}

/** What every method takes last. */
export interface CallOptions {
  /** Cancels the call (the method throws `ChatctxError` with code `aborted`). */
  signal?: AbortSignal;
  /** This call's timeout per attempt, in place of the client's. */
  timeoutMs?: number;
}

type Place = { topic_id?: Id | null; channel?: string | null };

interface Call {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  /** Whether the call may be sent again after a failure in flight (reads and ingests). */
  idempotent: boolean;
  /** What to read of the answer: JSON (default), the text, or only whether it was 200. */
  read?: "json" | "text" | "status";
}

// Failures where the request never reached the server: always safe to send again.
const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

const RETRY = Symbol("retry");

/** A client for a chatctx server. Every method throws {@link ChatctxError} on failure. */
export class Client {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #backoffMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#retries = options.retries ?? 2;
    this.#backoffMs = options.backoffMs ?? 100;
    this.#fetch = options.fetch ?? globalThis.fetch;
    if (!Number.isInteger(this.#retries) || this.#retries < 0) throw new RangeError("retries must be 0 or more");
    if (!(this.#timeoutMs > 0)) throw new RangeError("timeoutMs must be more than 0");
  }

  /** The options this client was made with, for a copy with another token. */
  #options(token: string): ClientOptions {
    return { baseUrl: this.baseUrl, token, timeoutMs: this.#timeoutMs, retries: this.#retries, backoffMs: this.#backoffMs, fetch: this.#fetch };
  }

  // --- the tools (docs/protocol.md §6) ---

  /** The selected history and the whole prompt for answering `current_message_id`. */
  getChatHistoryContext(args: ToolArgs<"get_chat_history_context">, options?: CallOptions): Promise<Schemas["HistoryContext"]> {
    return this.#tool("get_chat_history_context", args, options);
  }

  /** Every stored message of a range, a page at a time (follow `next` as `cursor`). */
  getChatHistoryRange(args: ToolArgs<"get_chat_history_range">, options?: CallOptions): Promise<Schemas["HistoryPage"]> {
    return this.#tool("get_chat_history_range", args, options);
  }

  /** What the user's reference ("this", "the poll above") points at: `resolved`, `ambiguous` or `not_found`. */
  resolveReferenceTarget(args: ToolArgs<"resolve_reference_target">, options?: CallOptions): Promise<Schemas["Resolution"]> {
    return this.#tool("resolve_reference_target", args, options);
  }

  /** The conversational objects (photos, links, polls, …) active right now. */
  listActiveContextObjects(args: ToolArgs<"list_active_context_objects">, options?: CallOptions): Promise<Schemas["ActiveObjects"]> {
    return this.#tool("list_active_context_objects", args, options);
  }

  /** The conversation's structured state (and its kept revisions with `revisions: true`). */
  getScenario(args: ToolArgs<"get_scenario">, options?: CallOptions): Promise<Schemas["ScenarioState"]> {
    return this.#tool("get_scenario", args, options);
  }

  /** Applies an RFC 7396 merge patch to the state; `expected_revision` makes it optimistic. Not sent again. */
  updateScenario(args: ToolArgs<"update_scenario">, options?: CallOptions): Promise<Schemas["ScenarioState"]> {
    return this.#tool("update_scenario", args, options);
  }

  /** Makes an earlier revision of the state the current one (as a new revision). Not sent again. */
  revertScenario(args: ToolArgs<"revert_scenario">, options?: CallOptions): Promise<Schemas["ScenarioState"]> {
    return this.#tool("revert_scenario", args, options);
  }

  /** Writes the conversation's summary up to a message; history selection then starts after it. */
  updateSummary(args: ToolArgs<"update_summary">, options?: CallOptions): Promise<Schemas["SummaryWritten"]> {
    return this.#tool("update_summary", args, options);
  }

  /** Calls a tool by name with a model's arguments as they came (a tool loop). */
  callTool(name: string, args: object, options?: CallOptions): Promise<unknown> {
    return this.#tool(name, args, options);
  }

  #tool<T>(name: string, args: object, options?: CallOptions): Promise<T> {
    // Reads may be sent again; state changes may not.
    const idempotent = /^(get_|list_|resolve_)/.test(name);
    return this.#send({ method: "POST", path: `/v1/tools/${segment(name)}`, body: args, idempotent }, options) as Promise<T>;
  }

  // --- events in ---

  /** Ingests one event or a list of them (docs/protocol.md §3); each is durable before the answer. */
  ingest(events: EventInput | readonly EventInput[], options?: CallOptions): Promise<Schemas["IngestReport"]> {
    // A resent message is an edit of the same message, never a duplicate: safe to send again.
    return this.#post("/v1/events", events, undefined, options);
  }

  /** Ingests one raw Bot API update (a grammY or telegraf `Update` as it is). Give the bot's username or id so
   * its own messages become `outbound_agent`. */
  telegramUpdate(update: object, params: WithIds<QueryOf<"telegram_update">> = {}, options?: CallOptions): Promise<Schemas["IngestReport"]> {
    return this.#post("/v1/telegram/updates", update, params, options);
  }

  /** Ingests one Discord Gateway dispatch as the bot received it (discord.js's `raw` packet). */
  discordEvent(payload: object, params: WithIds<QueryOf<"discord_event">> = {}, options?: CallOptions): Promise<Schemas["IngestReport"]> {
    return this.#post("/v1/discord/events", payload, params, options);
  }

  /** Ingests one Slack Events API envelope (Bolt's `body`); without `bot_user_id`, its `authorizations` name the bot. */
  slackEvent(envelope: object, params: WithIds<QueryOf<"slack_event">> = {}, options?: CallOptions): Promise<Schemas["IngestReport"]> {
    return this.#post("/v1/slack/events", envelope, params, options);
  }

  /** Ingests a Slack Web API `users.list` or `users.info` answer: each member becomes a person of their team. */
  slackUsers(answer: object, options?: CallOptions): Promise<Schemas["IngestReport"]> {
    return this.#post("/v1/slack/users", answer, undefined, options);
  }

  #post<T>(path: string, body: unknown, query: object | undefined, options?: CallOptions): Promise<T> {
    return this.#send({ method: "POST", path, body, query: query as Record<string, unknown>, idempotent: true }, options) as Promise<T>;
  }

  // --- what is stored ---

  /** A page of the stored items of a range, oldest first; pass its `next` as `cursor` for the next page
   * ({@link Client.historyPages} follows them). Without `topic_id`, every topic of the chat. */
  history(chatId: Id, query: WithIds<QueryOf<"history">> = {}, options?: CallOptions): Promise<Schemas["HistoryPage"]> {
    return this.#get(`/v1/chats/${segment(chatId)}/history`, query, options);
  }

  /** Every page of a range, one after another: `for await (const page of client.historyPages(chat)) …`. */
  async *historyPages(chatId: Id, query: WithIds<QueryOf<"history">> = {}, options?: CallOptions): AsyncGenerator<Schemas["HistoryPage"], void, undefined> {
    let cursor = query.cursor ?? undefined;
    for (;;) {
      const page = await this.history(chatId, { ...query, cursor }, options);
      yield page;
      if (!page.next) return;
      cursor = page.next;
    }
  }

  /** Every object the chat holds, active or not. */
  objects(chatId: Id, query: Place = {}, options?: CallOptions): Promise<Schemas["Object"][]> {
    return this.#get(`/v1/chats/${segment(chatId)}/objects`, query, options);
  }

  /** The conversation state with its kept revisions. */
  scenario(chatId: Id, query: Place = {}, options?: CallOptions): Promise<Schemas["ScenarioState"]> {
    return this.#get(`/v1/chats/${segment(chatId)}/scenario`, query, options);
  }

  /** A page of the chats this credential may read; `next` is the `after` of the next page. */
  chats(query: QueryOf<"chats"> = {}, options?: CallOptions): Promise<AnswerOf<"chats">> {
    return this.#get("/v1/chats", query, options);
  }

  /** The chat's newest decision records, newest first: how each tool answer was reached. */
  decisions(chatId: Id, query: WithIds<QueryOf<"decisions">> = {}, options?: CallOptions): Promise<AnswerOf<"decisions">> {
    return this.#get(`/v1/chats/${segment(chatId)}/decisions`, query, options);
  }

  /** One decision record, by the request id its tool call was logged under (`x-request-id`). */
  decision(chatId: Id, requestId: string, query: Place = {}, options?: CallOptions): Promise<Schemas["Record"]> {
    return this.#get(`/v1/chats/${segment(chatId)}/decisions/${segment(requestId)}`, query, options);
  }

  /** Forgets a chat completely, in memory and in the store. */
  deleteChat(chatId: Id, query: Place = {}, options?: CallOptions): Promise<AnswerOf<"delete_chat">> {
    const path = `/v1/chats/${segment(chatId)}`;
    return this.#send({ method: "DELETE", path, query, idempotent: true }, options) as Promise<AnswerOf<"delete_chat">>;
  }

  #get<T>(path: string, query: object, options?: CallOptions): Promise<T> {
    return this.#send({ method: "GET", path, query: query as Record<string, unknown>, idempotent: true }, options) as Promise<T>;
  }

  // --- scopes ---

  /** Issues a short-lived token bound to one chat (and topic, message, sender), for a model's tool loop. */
  createScope(args: WithIds<RequestOf<"create_scope">>, options?: CallOptions): Promise<AnswerOf<"create_scope">> {
    return this.#send({ method: "POST", path: "/v1/scopes", body: args, idempotent: false }, options) as Promise<AnswerOf<"create_scope">>;
  }

  /** Revokes a scope token before it expires, on every instance. */
  revokeScope(token: string, options?: CallOptions): Promise<AnswerOf<"revoke_scope">> {
    return this.#send({ method: "DELETE", path: `/v1/scopes/${segment(token)}`, idempotent: true }, options) as Promise<AnswerOf<"revoke_scope">>;
  }

  /** A client holding a fresh bound scope: hand it to a model's tool loop. Every call it makes is pinned to this
   * chat (and topic, message, sender); any other chat is refused (`forbidden_scope`). */
  async scoped(args: WithIds<RequestOf<"create_scope">>, options?: CallOptions): Promise<Client> {
    const scope = await this.createScope(args, options);
    return new Client(this.#options(scope.token));
  }

  // --- the service ---

  /** Whether the server is up (`/healthz`); one that cannot be reached throws `connection_error`. */
  health(options?: CallOptions): Promise<boolean> {
    return this.#send({ method: "GET", path: "/healthz", idempotent: true, read: "status" }, options) as Promise<boolean>;
  }

  /** Whether the server has rebuilt its state and its store answers (`/readyz`). */
  ready(options?: CallOptions): Promise<boolean> {
    return this.#send({ method: "GET", path: "/readyz", idempotent: true, read: "status" }, options) as Promise<boolean>;
  }

  /** The Prometheus exposition (`/metrics`). */
  metrics(options?: CallOptions): Promise<string> {
    return this.#send({ method: "GET", path: "/metrics", idempotent: true, read: "text" }, options) as Promise<string>;
  }

  /** The server's OpenAPI 3.1 document. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.#send({ method: "GET", path: "/openapi.json", idempotent: true }, options) as Promise<Record<string, unknown>>;
  }

  // --- sending ---

  async #send(call: Call, options: CallOptions = {}): Promise<unknown> {
    const url = new URL(this.baseUrl + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { accept: "application/json", "user-agent": "chatctx-typescript" };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.body, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    }
    for (let attempt = 0; ; attempt++) {
      const answer = await this.#attempt(call, url, { method: call.method, headers, body }, attempt, options);
      if (answer !== RETRY) return answer;
      await sleep(Math.min(this.#backoffMs * 2 ** attempt, 2_000), options.signal);
    }
  }

  async #attempt(call: Call, url: URL, init: RequestInit, attempt: number, options: CallOptions): Promise<unknown> {
    const left = attempt < this.#retries;
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await this.#fetch(url, { ...init, signal });
    } catch (e) {
      if (options.signal?.aborted) throw new ChatctxError("aborted", "the call was aborted", undefined, { cause: e });
      if (timeout.aborted) {
        throw new ChatctxError("timeout", `no answer from chatctx at ${this.baseUrl} within ${options.timeoutMs ?? this.#timeoutMs} ms`, undefined, { cause: e });
      }
      const code = errorCode(e);
      // A request that never reached the server is always safe to send again; one that may have, only when the
      // call is idempotent.
      if (left && (CONNECT_CODES.has(code) || call.idempotent)) return RETRY;
      throw new ChatctxError("connection_error", `cannot reach chatctx at ${this.baseUrl}: ${code || String(e)}`, undefined, { cause: e });
    }
    if (left && call.idempotent && [502, 503, 504].includes(response.status)) {
      await response.body?.cancel();
      return RETRY;
    }
    return read(call, response);
  }
}

async function read(call: Call, response: Response): Promise<unknown> {
  if (call.read === "status") {
    await response.body?.cancel();
    return response.status === 200;
  }
  const text = await response.text();
  if (response.status >= 400) {
    let err: { code?: unknown; message?: unknown } | undefined;
    try {
      err = JSON.parse(text) as { code?: unknown; message?: unknown };
    } catch {
      err = undefined;
    }
    if (err && typeof err.code === "string" && typeof err.message === "string") {
      throw new ChatctxError(err.code, err.message, response.status);
    }
    throw new ChatctxError("bad_response", `HTTP ${response.status}: ${text.slice(0, 200)}`, response.status);
  }
  if (call.read === "text") return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new ChatctxError("bad_response", `not JSON: ${text.slice(0, 200)}`, response.status);
  }
}

/** The system error code of a failed `fetch` (undici puts it on the cause). */
function errorCode(e: unknown): string {
  const cause = (e as { cause?: { code?: unknown; cause?: { code?: unknown } } } | undefined)?.cause;
  const code = cause?.code ?? cause?.cause?.code;
  return typeof code === "string" ? code : "";
}

function segment(id: Id): string {
  return encodeURIComponent(String(id));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ChatctxError("aborted", "the call was aborted"));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new ChatctxError("aborted", "the call was aborted"));
      },
      { once: true },
    );
  });
}
