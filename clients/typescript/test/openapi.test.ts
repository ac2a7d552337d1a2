/**
 * The client and the server's OpenAPI document agree: a tour calls every client method
 * against a real server while a recording `fetch` notes each request; then every request
 * must match a documented operation (method and path, query parameters the operation
 * declares, body fields its schema has, required fields present), and every documented
 * operation must have been called. A route added to the server without a client method,
 * or a client call the server does not document, fails here.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryClient } from "../src/index.js";
import { text, withDesignServer } from "./harness.js";

interface Recorded {
  method: string;
  pathname: string;
  query: string[];
  body: unknown;
}

const recorded: Recorded[] = [];

const recording: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const headers = new Headers(init?.headers);
  const json = headers.get("content-type") === "application/json" && typeof init?.body === "string";
  recorded.push({
    method: init?.method ?? "GET",
    pathname: url.pathname,
    query: [...url.searchParams.keys()],
    body: json ? (JSON.parse(init.body as string) as unknown) : undefined,
  });
  return fetch(input, init);
};

const context = withDesignServer();

/** Calls every method of the client once (their results are checked by the other tests). */
async function tour(memory: MemoryClient): Promise<void> {
  await memory.health();
  await memory.ready();
  const about = await memory.about();
  assert.equal(about.embedder, "none");
  assert.equal(about.roles.sessions, "sqlite");
  const session = await memory.sessions.create({ id: "tour", name: "tour", model: "m", source: "t", profile: "tour" });
  await memory.sessions.get("tour");
  await session.info();
  await session.appendMessage(text("m0", "user", "hello there"));
  const chain = [];
  for (let i = 1; i < 8; i++) chain.push(text(`m${i}`, i % 2 === 0 ? "user" : "assistant", `turn ${i} of the tour`));
  await session.appendMessages(chain, { parentId: "m0" });
  await session.getHistory();
  await session.getHistory("m3");
  assert.equal((await session.getHistory("m7", { raw: true })).length, 8);
  await session.getLatestLeaf();
  await session.getBranches("m0");
  await session.updateMessage(text("m7", "assistant", "the last turn"));
  await session.search("tour", { limit: 5, mode: "any_words" });
  await memory.sessions.search("tour", { limit: 5, mode: "phrase" });
  await session.compact({ leafId: "m7" });
  await session.getCompactions();
  await session.getContextBlocks();
  await session.getContextBlock("memory");
  await session.replaceContextBlock("memory", "a fact");
  await session.appendContextBlock("memory", "another fact");
  await session.freezeSystemPrompt();
  await session.refreshSystemPrompt();
  await session.toolDefinitions();
  await session.executeTool("set_context", { label: "todos", content: "- [ ] tour" });
  await session.tools();
  await session.rename("tour renamed");
  await session.bind("tour");
  const fork = await memory.sessions.fork("tour", "m3", { name: "fork" });
  await fork.deleteMessage("m3");
  await fork.deleteMessages(["m2"]);
  await memory.sessions.listPage({ limit: 10, offset: 0 });
  const listed: string[] = [];
  for await (const info of memory.sessions.list()) listed.push(info.id);
  assert.ok(listed.includes("tour") && listed.includes(fork.id), listed.join(","));
  const exported: string[] = [];
  for await (const line of fork.exportLines()) exported.push(line);
  await fork.delete();
  await memory.sessions.import(exported);
  await memory.sessions.delete(fork.id);
  const ended = await session.end({ reason: "tour over" });

  const profile = memory.profile("tour");
  if (ended.shipped?.job) await profile.waitForJob(ended.shipped.job.id);
  const remembered = await profile.remember("The tour visits Lyon", { kind: "event", key: "tour stop", sessionId: "tour" });
  const accepted = await profile.ingest({ session: "side", messages: [{ role: "user", content: "A side trip to Annecy", created_at: 1 }] });
  if (accepted.job) await profile.waitForJob(accepted.job.id);
  await profile.ingest({ session: "tour", leaf: "m7", from: "m0", to: "m7" });
  await profile.recall("Lyon", { limit: 3, answer: false, explain: true, metadata: { stop: { $exists: false } } });
  const since = await profile.listPage({ kind: "event", key: "tour stop", session: "tour", all: true, since: 0, until: Date.now() + 60_000, limit: 5 });
  assert.deepEqual(since.memories.map((m) => m.id), [remembered.id]);
  const memories: string[] = [];
  for await (const m of profile.list()) memories.push(m.id);
  assert.ok(memories.includes(remembered.id), memories.join(","));
  await profile.jobs();
  const expiresAt = Date.now() + 3_600_000;
  const other = await profile.remember("Temporary", { kind: "fact", expiresAt });
  assert.equal(other.expires_at, expiresAt);
  await profile.forget(other.id, { reason: "tour" });
  await profile.purge(other.id, { withSources: true });
  await profile.consolidate({ dryRun: true });
  await profile.consolidate();
  await profile.merged(remembered.id);
  await profile.contradictions();
  await profile.block({ tokens: 200, top: 5 });
  await profile.refreshDigest({ force: true });
  await profile.digest();
  const lines: string[] = [];
  for await (const line of profile.exportLines({ vectors: false })) lines.push(line);
  const settings = { instructions: "Keep the stops", categories: [{ name: "stop", description: "A stop" }], language: "English" };
  assert.deepEqual((await profile.setSettings(settings)).settings, settings);
  assert.deepEqual((await profile.settings()).effective, settings);
  await memory.profiles();
  await profile.delete();
  await memory.profile("tour-copy").import(lines);
  await memory.profile("tour-copy").forget(remembered.id);
  await session.delete();
}

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  query: Set<string>;
  schema: { properties?: Record<string, unknown>; required?: string[] } | undefined;
}

function operations(doc: Record<string, unknown>): Operation[] {
  const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
  const schemas = ((doc.components as Record<string, unknown> | undefined)?.schemas ?? {}) as Record<
    string,
    Operation["schema"]
  >;
  const out: Operation[] = [];
  for (const [template, item] of Object.entries(paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    for (const [method, operation] of Object.entries(item)) {
      const parameters = (operation.parameters ?? []) as { in: string; name: string }[];
      const content = (operation.requestBody as { content?: Record<string, { schema?: { $ref?: string } }> } | undefined)
        ?.content;
      const ref = content?.["application/json"]?.schema?.$ref;
      out.push({
        method: method.toUpperCase(),
        template,
        pattern,
        query: new Set(parameters.filter((p) => p.in === "query").map((p) => p.name)),
        schema: ref === undefined ? undefined : schemas[ref.replace("#/components/schemas/", "")],
      });
    }
  }
  return out;
}

test("every client request matches the OpenAPI document, and every operation has a client method", async () => {
  const memory = new MemoryClient({ baseUrl: context.server.baseUrl, fetch: recording });
  await tour(memory);
  const doc = await context.memory.openapi();
  const documented = operations(doc);
  const called = new Set<string>();
  for (const request of recorded) {
    const candidates = documented.filter((o) => o.method === request.method && o.pattern.test(request.pathname));
    // The most specific template (fewest parameters) wins, as in the server's router.
    candidates.sort((a, b) => (a.template.match(/\{/g) ?? []).length - (b.template.match(/\{/g) ?? []).length);
    const operation = candidates[0];
    assert.ok(operation !== undefined, `${request.method} ${request.pathname} is not in the document`);
    called.add(`${operation.method} ${operation.template}`);
    for (const name of request.query) {
      assert.ok(operation.query.has(name), `${operation.method} ${operation.template} declares no query parameter ${name}`);
    }
    if (operation.schema?.properties !== undefined && request.body !== undefined) {
      const body = request.body as Record<string, unknown>;
      for (const field of Object.keys(body)) {
        assert.ok(field in operation.schema.properties, `${operation.method} ${operation.template} has no body field ${field}`);
      }
      for (const field of operation.schema.required ?? []) {
        assert.ok(field in body, `${operation.method} ${operation.template} requires ${field}`);
      }
    }
  }
  const missing = documented.map((o) => `${o.method} ${o.template}`).filter((o) => !called.has(o));
  assert.deepEqual(missing, [], "documented operations without a client call");
});
