/**
 * The front page's TypeScript block that shows the profile in the prompt, run as written
 * against a real `memory serve` (the README's agent loop needs a model: `examples/typescript-agent`
 * runs it, see example.test.ts).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { MemoryClient } from "../src/index.js";
import { serve } from "./harness.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

type Block = (memory: MemoryClient) => Promise<string>;

test("the README's profile-in-the-prompt block runs as written", async () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  const block = blocks.find((b) => b.includes("freezeSystemPrompt()).includes"));
  assert.ok(block !== undefined, "README.md has the block");
  const deployment = await serve({ config: '[memory]\nembedder = "none"\n' });
  try {
    const memory = new MemoryClient({ baseUrl: deployment.baseUrl });
    // The block is plain JavaScript; it runs with `memory` in scope and hands back the
    // fresh session's frozen prompt.
    const prototype = Object.getPrototypeOf(async function () {
      /* only its constructor is used */
    }) as { constructor: new (parameter: string, body: string) => Block };
    const AsyncFunction = prototype.constructor;
    const run = new AsyncFunction("memory", `${block}\nreturn await fresh.freezeSystemPrompt();`);
    const prompt = await run(memory);
    assert.ok(prompt.includes("diet: Vegetarian, no mushrooms"), prompt);
  } finally {
    await deployment.stop();
  }
});
