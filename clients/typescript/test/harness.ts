/**
 * What the tests run against: a real `memory serve` (the binary cargo built) over a fresh
 * data dir, and a fake OpenAI-compatible endpoint standing in for the model.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { MemoryClient } from "../src/index.js";

/** The `memory` binary: `MEMORY_BIN`, else cargo's debug build in `CARGO_TARGET_DIR`. */
export function memoryBinary(): string {
  const explicit = process.env.MEMORY_BIN;
  if (explicit !== undefined && explicit !== "") return explicit;
  const target = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "memory-target");
  const binary = join(target, "debug", "memory");
  if (!existsSync(binary)) {
    throw new Error(`no memory binary at ${binary}: run \`cargo build -p memory-cli\` or set MEMORY_BIN`);
  }
  return binary;
}

/** A running `memory serve`. */
export interface Served {
  /** `http://127.0.0.1:PORT`. */
  baseUrl: string;
  /** The data dir. */
  dir: string;
  /** Stops the server and removes its data dir. */
  stop(): Promise<void>;
}

/** How to start a server. */
export interface ServeOptions {
  /** `memory.toml`'s text. */
  config?: string;
  /** `keys.toml`'s text: the server requires API keys. */
  keys?: string;
  /** More `memory serve` arguments. */
  args?: string[];
}

/** Starts `memory serve` on a free loopback port over a fresh data dir. */
export async function serve(options: ServeOptions = {}): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), "memory-ts-"));
  writeFileSync(join(dir, "memory.toml"), options.config ?? "");
  const args = ["--data-dir", dir, "serve", "--bind", "127.0.0.1:0", ...(options.args ?? [])];
  if (options.keys !== undefined) {
    writeFileSync(join(dir, "keys.toml"), options.keys);
    args.push("--keys", join(dir, "keys.toml"));
  }
  const child = spawn(memoryBinary(), args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, RUST_LOG: "warn" } });
  const baseUrl = await boundAddress(child);
  return {
    baseUrl,
    dir,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGINT");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Reads the server's stderr until it says where it listens. */
function boundAddress(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`memory serve did not start within 60 s:\n${seen}`));
    }, 60_000);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      seen += chunk;
      const match = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`memory serve exited with ${String(code)}:\n${seen}`));
    });
  });
}

/** A `keys.toml` entry for `key`, with the fields the server reads. */
export function keyEntry(tenant: string, key: string, extra = ""): string {
  const sha256 = createHash("sha256").update(key).digest("hex");
  return `[[keys]]\ntenant = "${tenant}"\nsha256 = "${sha256}"\nlabel = "${tenant}-test"\n${extra}\n`;
}

/** A fake OpenAI-compatible chat endpoint. */
export interface FakeModel {
  /** The `[llm] base_url` to configure. */
  baseUrl: string;
  /** The chat requests it received, in order. */
  requests: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** The fake model's verdict on consolidation's groups: every group it is shown is the same. */
function confirmEveryGroup(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as { content?: unknown }[];
  const last = messages.at(-1)?.content;
  const shown = (typeof last === "string" ? last : "").match(/^Group \d+:/gm) ?? [];
  return JSON.stringify({
    groups: shown.map((_, i) => ({ group: i + 1, same: true, reason: "the same fact" })),
  });
}

/** The fake model's verdict on contradiction candidates: every pair it is shown contradicts. */
function flagEveryPair(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as { content?: unknown }[];
  const last = messages.at(-1)?.content;
  const shown = (typeof last === "string" ? last : "").match(/^Pair \d+:/gm) ?? [];
  return JSON.stringify({
    pairs: shown.map((_, i) => ({ pair: i + 1, contradicts: true, reason: "cannot both hold" })),
  });
}

/**
 * Starts the fake model: a structured request (a `response_format` with a JSON schema)
 * gets the schema's smallest valid instance (no memories extracted, empty query analysis),
 * except consolidation's, whose every group it confirms, contradiction's, whose every pair
 * it flags, and the digest's, a fixed summary
 * drawing on the first record; any other request (a compaction)
 * gets `summary` as the summary.
 */
export async function fakeModel(summary = "## Goal\nPlan a trip to Lyon by train."): Promise<FakeModel> {
  const requests: Record<string, unknown>[] = [];
  const server: HttpServer = createServer((request, response) => {
    void readJson(request).then((body) => {
      requests.push(body);
      const format = body.response_format as { json_schema?: { name?: string; schema?: unknown } } | undefined;
      const content =
        format?.json_schema?.name === "consolidation"
          ? confirmEveryGroup(body)
          : format?.json_schema?.name === "contradiction"
            ? flagEveryPair(body)
          : format?.json_schema?.name === "digest"
            ? JSON.stringify({ summary: "The user's profile in brief.", sources: [1] })
            : format?.json_schema?.schema !== undefined
            ? JSON.stringify(smallest(format.json_schema.schema))
            : summary;
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: "chat.completion",
          model: typeof body.model === "string" ? body.model : "fake",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
          usage: { prompt_tokens: 300, completion_tokens: 12, total_tokens: 312 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  let text = "";
  for await (const chunk of request) text += String(chunk);
  return JSON.parse(text) as Record<string, unknown>;
}

/** The smallest instance of a strict-mode JSON schema. */
function smallest(schema: unknown): unknown {
  const s = schema as { type?: string | string[]; properties?: Record<string, unknown>; enum?: unknown[] };
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const type = Array.isArray(s.type) ? (s.type.includes("null") ? "null" : s.type[0]) : s.type;
  switch (type) {
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, smallest(v)]));
    case "array":
      return [];
    case "string":
      return "";
    case "integer":
    case "number":
      return 0;
    case "boolean":
      return false;
    default:
      return null;
  }
}

/**
 * The deployment most tests use: the design's four kinds of block (a soul, two writable
 * blocks, a searchable knowledge base), the bound profile's block, the memory tools, the
 * fake model for compaction, and no embedder (recall runs on its text and key channels).
 */
export function designConfig(model: FakeModel): string {
  return `
[[blocks]]
label = "soul"
kind = "readonly"
description = "Identity"
text = "You are a helpful assistant."

[[blocks]]
label = "memory"
kind = "writable"
description = "Important facts learned during conversation"
max_tokens = 1100

[[blocks]]
label = "todos"
kind = "writable"
description = "Task list, track what needs to be done and what is complete"
max_tokens = 2000

[[blocks]]
label = "knowledge"
kind = "searchable"
description = "Searchable knowledge base"

[[blocks]]
label = "profile"
kind = "profile"
max_tokens = 400

[sessions]
memory_tools = ["recall", "remember", "forget"]

[llm]
base_url = "${model.baseUrl}"
model = "fake"
structured_output = "json_schema"
max_retries = 0

[compaction]
protect_head = 1
tail_token_budget = 10

[memory]
embedder = "none"
`;
}

/** A UIMessage with one text part. */
export function text(id: string, role: "user" | "assistant" | "system", body: string) {
  return { id, role, parts: [{ type: "text" as const, text: body }] };
}

/** What `withDesignServer` starts: set in its `before` hook, stopped in its `after` hook. */
export interface DesignServer {
  server: Served;
  model: FakeModel;
  memory: MemoryClient;
}

/**
 * Registers hooks that start the fake model and a server over `designConfig` before the
 * file's tests and stop both after them; the returned object holds them meanwhile.
 */
export function withDesignServer(): DesignServer {
  const context = {} as DesignServer;
  before(async () => {
    context.model = await fakeModel();
    context.server = await serve({ config: designConfig(context.model) });
    context.memory = new MemoryClient({ baseUrl: context.server.baseUrl });
  });
  after(async () => {
    await context.server.stop();
    await context.model.stop();
  });
  return context;
}
