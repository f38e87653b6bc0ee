// Every TypeScript block of clients/typescript/README.md and of the repository README's "From TypeScript"
// section compiles in strict mode as written (only `askModel`, "your chat-completions call", is declared).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const blocks = (text) => [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
const PRELUDE = 'declare function askModel(messages: import("chatctx").ChatMessage[]): Promise<string>;\n';

test("the READMEs' TypeScript blocks compile as written", () => {
  const own = blocks(readFileSync(new URL("../README.md", import.meta.url), "utf8"));
  const main = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const section = main.slice(main.indexOf("## From TypeScript"), main.indexOf("\n## ", main.indexOf("## From TypeScript") + 3));
  const all = [...own, ...blocks(section)];
  assert.ok(own.length >= 5 && all.length > own.length, `found ${own.length} + ${all.length - own.length} blocks`);
  const dir = `${PKG}typecheck/readme`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    all.forEach((code, i) => writeFileSync(`${dir}/block${i}.ts`, PRELUDE + code + "\nexport {};\n"));
    writeFileSync(`${dir}/tsconfig.json`, JSON.stringify({ extends: "../../tsconfig.check.json", include: ["./*.ts"] }));
    try {
      execFileSync(process.execPath, [`${PKG}node_modules/typescript/bin/tsc`, "-p", `${dir}/tsconfig.json`], { encoding: "utf8" });
    } catch (e) {
      assert.fail(`a README block does not compile:\n${e.stdout}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
