// The examples' chat-completions call: any OpenAI-compatible endpoint (LLM_BASE_URL, LLM_MODEL, LLM_API_KEY).
import type { ChatMessage } from "chatctx";

/** The model's answer to `messages`. */
export async function askModel(messages: ChatMessage[]): Promise<string> {
  const base = (process.env.LLM_BASE_URL ?? "http://127.0.0.1:11434/v1").replace(/\/+$/, "");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (process.env.LLM_API_KEY) headers.authorization = `Bearer ${process.env.LLM_API_KEY}`;
  const r = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: process.env.LLM_MODEL ?? "qwen2.5:7b", messages }),
    signal: AbortSignal.timeout(60_000),
  });
  if (!r.ok) throw new Error(`the model answered HTTP ${r.status}`);
  const answer = (await r.json()) as { choices: { message: { content: string } }[] };
  return answer.choices[0]?.message.content ?? "";
}
