/**
 * `examples/typescript-agent` runs its loop against a real server with its scripted model:
 * the first session remembers, ends and ships; the second recalls what the first learned.
 * (`scripts/test.sh` builds the example before these tests.)
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { withDesignServer } from "./harness.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
const agent = join(root, "examples", "typescript-agent", "dist", "agent.js");


const context = withDesignServer();

test("the example agent remembers in one session and recalls in the next", async () => {
  assert.ok(existsSync(agent), `${agent} is missing: run npm ci && npm run build in examples/typescript-agent`);
  const env = { ...process.env, MEMORY_URL: context.server.baseUrl, MEMORY_PROFILE: "example-user", OPENAI_BASE_URL: "" };
  const { stdout } = await promisify(execFile)(process.execPath, [agent], { env, timeout: 120_000 });
  const [first, second] = stdout.trim().split("\n");
  assert.ok(first !== undefined && !first.includes("Error:"), stdout);
  assert.match(second ?? "", /Lyon/, stdout);
  const sessions = await context.memory.sessions.listPage();
  assert.equal(sessions.length, 2);
  assert.ok(sessions.every((s) => s.profile === "example-user"));
  // The first turn's `remember` stored the fact in the profile.
  const stored: string[] = [];
  for await (const m of context.memory.profile("example-user").list()) stored.push(m.content);
  assert.ok(stored.some((c) => c.includes("vegetarian")), stored.join("|"));
});
