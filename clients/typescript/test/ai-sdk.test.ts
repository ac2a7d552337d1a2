/**
 * The AI SDK itself against a real server: `generateText` with the SDK's mock model, handed
 * `session.tools()`, calls `set_context`, `recall` and `remember`, and their results land
 * on the server; the `UIMessage`s of a streamed turn, and one with every part type and an
 * unknown field, append and read back equal.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { convertToModelMessages, generateText, readUIMessageStream, stepCountIs, streamText, type UIMessage } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { withDesignServer } from "./harness.js";


const context = withDesignServer();

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** Byte-for-byte comparison: the same JSON text once keys are in one order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

test("generateText runs set_context, recall and remember through session.tools()", async () => {
  const bob = context.memory.profile("bob");
  await bob.remember("Bob's favourite city is Lyon", { kind: "fact", key: "favourite city" });
  const session = await context.memory.sessions.create({ profile: "bob" });
  const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "Where should I travel?" }] };
  await session.appendMessage(user);

  const mock = new MockLanguageModelV3({
    doGenerate: [
      {
        content: [
          {
            type: "tool-call",
            toolCallId: "call-set",
            toolName: "set_context",
            input: JSON.stringify({ label: "memory", content: "Bob likes trains." }),
          },
          { type: "tool-call", toolCallId: "call-recall", toolName: "recall", input: JSON.stringify({ query: "favourite city" }) },
          {
            type: "tool-call",
            toolCallId: "call-remember",
            toolName: "remember",
            input: JSON.stringify({ content: "Bob is allergic to peanuts", kind: "fact" }),
          },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      },
      {
        content: [{ type: "text", text: "Lyon, by train." }],
        finishReason: { unified: "stop", raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });

  const system = await session.freezeSystemPrompt();
  const result = await generateText({
    model: mock,
    system,
    messages: await convertToModelMessages(await session.getHistory()),
    tools: await session.tools(),
    stopWhen: stepCountIs(3),
  });
  assert.equal(result.text, "Lyon, by train.");
  const step = result.steps[0];
  assert.ok(step !== undefined);
  const outputs = Object.fromEntries(step.toolResults.map((r) => [r.toolName, String(r.output)]));
  assert.deepEqual(Object.keys(outputs).sort(), ["recall", "remember", "set_context"]);
  assert.match(outputs.recall ?? "", /Lyon/);

  // The results landed on the server.
  assert.equal((await session.getContextBlock("memory")).content, "Bob likes trains.");
  const remembered = [];
  for await (const m of bob.list()) remembered.push(m);
  const peanuts = remembered.find((m) => m.content === "Bob is allergic to peanuts");
  assert.ok(peanuts !== undefined, JSON.stringify(remembered));
  assert.equal(peanuts.session_id, session.id, "remember keeps the session as provenance");
  // The model's second call saw the tool results, and the frozen prompt both times.
  const second = JSON.stringify(mock.doGenerateCalls[1]?.prompt);
  assert.match(second, /Lyon/);
  assert.equal(await session.freezeSystemPrompt(), system);
});

test("a streamed turn's UIMessages append and read back equal", async () => {
  const session = await context.memory.sessions.create();
  const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "Remember that I like jazz." }] };
  await session.appendMessage(user);
  const mock = new MockLanguageModelV3({
    doStream: [
      {
        stream: convertArrayToReadableStream([
          { type: "stream-start", warnings: [] },
          { type: "reasoning-start", id: "r1" },
          { type: "reasoning-delta", id: "r1", delta: "The user states a preference." },
          { type: "reasoning-end", id: "r1" },
          {
            type: "tool-call",
            toolCallId: "call-1",
            toolName: "set_context",
            input: JSON.stringify({ label: "memory", content: "Likes jazz." }),
          },
          { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage },
        ]),
      },
      {
        stream: convertArrayToReadableStream([
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "t1" },
          { type: "text-delta", id: "t1", delta: "Noted: " },
          { type: "text-delta", id: "t1", delta: "you like jazz." },
          { type: "text-end", id: "t1" },
          { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
        ]),
      },
    ],
  });
  const result = streamText({
    model: mock,
    system: await session.freezeSystemPrompt(),
    messages: await convertToModelMessages(await session.getHistory()),
    tools: await session.tools(),
    stopWhen: stepCountIs(2),
  });
  let assistant: UIMessage | undefined;
  const stream = result.toUIMessageStream({ generateMessageId: () => "a1" });
  for await (const message of readUIMessageStream({ stream })) assistant = message;
  assert.ok(assistant !== undefined);
  const types = assistant.parts.map((p) => p.type);
  assert.ok(types.includes("tool-set_context") && types.includes("text") && types.includes("reasoning"), types.join(","));
  assert.equal((await session.getContextBlock("memory")).content, "Likes jazz.");

  await session.appendMessage(assistant);
  const history = await session.getHistory();
  assert.equal(history.length, 2);
  assert.equal(canonical(history[0]), canonical(user));
  assert.equal(canonical(history[1]), canonical(assistant));
});

test("a UIMessage with every part type and unknown fields round-trips", async () => {
  const session = await context.memory.sessions.create();
  const message = {
    id: "every-part",
    role: "assistant",
    metadata: { model: "gpt-x", latencyMs: 812, nested: { ok: true } },
    customTopLevel: ["kept", 1, null],
    parts: [
      { type: "step-start" },
      { type: "text", text: "Hello", state: "done", providerMetadata: { openai: { itemId: "i1" } } },
      { type: "reasoning", text: "Think first.", state: "done" },
      { type: "tool-weather", toolCallId: "c1", state: "input-streaming", input: { city: "Ly" } },
      { type: "tool-weather", toolCallId: "c2", state: "input-available", input: { city: "Lyon" } },
      {
        type: "tool-weather",
        toolCallId: "c3",
        state: "output-available",
        input: { city: "Lyon" },
        output: { celsius: 21 },
        providerExecuted: false,
      },
      { type: "tool-weather", toolCallId: "c4", state: "output-error", input: { city: "?" }, errorText: "unknown city" },
      {
        type: "dynamic-tool",
        toolName: "lookup",
        toolCallId: "c5",
        state: "output-available",
        input: { q: "x" },
        output: "y",
      },
      { type: "source-url", sourceId: "s1", url: "https://example.com/a", title: "A" },
      { type: "source-document", sourceId: "s2", mediaType: "application/pdf", title: "Doc", filename: "doc.pdf" },
      { type: "file", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=", filename: "dot.png" },
      { type: "data-weather", id: "d1", data: { city: "Lyon", celsius: 21 } },
      { type: "text", text: "Unknown fields stay.", someFutureField: { a: [1, 2, 3] } },
      { type: "x-future-part", payload: { anything: true } },
    ],
  } as unknown as UIMessage;
  await session.appendMessage(message);
  const [stored] = await session.getHistory();
  assert.equal(canonical(stored), canonical(message));
  assert.equal((await session.getLatestLeaf())?.id, "every-part");
  // An update keeps unknown fields as well.
  const updated = { ...message, customTopLevel: "changed" } as unknown as UIMessage;
  await session.updateMessage(updated);
  assert.equal(canonical((await session.getHistory())[0]), canonical(updated));
});
