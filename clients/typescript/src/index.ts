// chatctx for TypeScript and JavaScript: the typed client, its error, and the prompt helpers. The framework
// integrations are entry points of their own: `chatctx/grammy`, `chatctx/telegraf`, `chatctx/discord`,
// `chatctx/slack`.
export { Client, DEFAULT_BASE_URL } from "./client.js";
export type {
  AnswerOf,
  CallOptions,
  ClientOptions,
  EventInput,
  Id,
  QueryOf,
  RequestOf,
  Schemas,
  ToolArgs,
  ToolName,
  WithIds,
} from "./client.js";
export { ChatctxError } from "./errors.js";
export { describeResolution, openaiMessages } from "./helpers.js";
export type { ChatMessage } from "./helpers.js";
export type { components, operations, paths } from "./openapi.js";
