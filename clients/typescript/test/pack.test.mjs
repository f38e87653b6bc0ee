// The package as npm would publish it: `npm pack` installs into a fresh project (no network: it has no runtime
// dependency) and every entry point imports there; the exports map passes publint and "Are the types wrong?";
// `npm publish --dry-run` passes.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PKG = fileURLToPath(new URL("..", import.meta.url));
const npm = (args, cwd) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const bin = (name) => join(PKG, "node_modules", ".bin", name);

test("npm pack installs into a fresh project and every entry point imports there", () => {
  const dir = mkdtempSync(join(tmpdir(), "chatctx-pack-"));
  try {
    npm(["pack", "--pack-destination", dir, "--silent"], PKG);
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
    assert.ok(tarball, "a tarball");
    const project = join(dir, "project");
    execFileSync("mkdir", [project]);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user-bot", version: "1.0.0", type: "module", private: true }));
    npm(["install", "--offline", "--no-audit", "--no-fund", "--silent", join(dir, tarball)], project);
    const script = `
      import { Client, ChatctxError, openaiMessages, describeResolution } from "chatctx";
      import * as grammy from "chatctx/grammy";
      import * as telegraf from "chatctx/telegraf";
      import * as discord from "chatctx/discord";
      import * as slack from "chatctx/slack";
      const c = new Client({ baseUrl: "http://127.0.0.1:1" });
      console.log(JSON.stringify([typeof c.getChatHistoryContext, typeof ChatctxError, typeof openaiMessages, typeof describeResolution,
        typeof grammy.setup, typeof telegraf.setup, typeof discord.setup, typeof slack.setup]));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: project, encoding: "utf8" });
    assert.deepEqual(JSON.parse(out), ["function", "function", "function", "function", "function", "function", "function", "function"]);
    const files = npm(["pack", "--dry-run", "--json"], PKG);
    const listed = JSON.parse(files)[0].files.map((f) => f.path);
    assert.ok(listed.every((p) => p.startsWith("dist/") || ["package.json", "README.md"].includes(p)), listed.join());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the exports map passes publint and Are the Types Wrong (ESM only), and a publish dry run passes", () => {
  execFileSync(bin("publint"), ["--strict"], { cwd: PKG, encoding: "utf8" });
  execFileSync(bin("attw"), ["--pack", ".", "--profile", "esm-only", "--format", "table-flipped"], { cwd: PKG, encoding: "utf8" });
  npm(["publish", "--dry-run", "--silent"], PKG);
});
