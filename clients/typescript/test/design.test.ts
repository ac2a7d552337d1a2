/**
 * The design's README examples (the Session API docs), translated to the client, against a
 * real `memory serve`: branching history, search, compaction through a model endpoint,
 * context blocks and the frozen prompt, the session manager, and a profile round trip.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  InvalidInputError,
  MemoryClient,
  type MetadataFilter,
  NotFoundError,
  type RecallHit,
  RefusedError,
  type Settings,
  type UIMessage,
} from "../src/index.js";
import { serve, text, withDesignServer } from "./harness.js";


const context = withDesignServer();

test("conversation history: append, read, branch and walk any path", async () => {
  const session = await context.memory.sessions.create({ name: "Deployments" });
  // The design: append messages as the conversation progresses, read the full history.
  await session.appendMessage({
    id: `user-${crypto.randomUUID()}`,
    role: "user",
    parts: [{ type: "text", text: "What's the status of the deployment?" }],
  });
  const history = await session.getHistory();
  assert.equal(history.length, 1);
  assert.equal(history[0]?.role, "user");

  // A branch: a second answer to the same question (response regeneration).
  const question = history[0].id;
  assert.deepEqual(await session.appendMessage(text("a1", "assistant", "It shipped on Friday.")), {
    outcome: "inserted",
    parent_id: question,
  });
  await session.appendMessage(text("a2", "assistant", "It is rolling out now."), { parentId: question });
  const branches = await session.getBranches(question);
  assert.deepEqual(
    branches.map((m) => m.id),
    ["a1", "a2"],
  );
  assert.equal((await session.getLatestLeaf())?.id, "a2");
  assert.equal((await session.getLatestLeaf({ under: "a1" }))?.id, "a1");
  assert.equal((await session.getLatestLeaf({ under: question }))?.id, "a2");
  assert.deepEqual(
    (await session.getHistory("a1")).map((m) => m.id),
    [question, "a1"],
  );
  assert.deepEqual(
    (await session.getHistory()).map((m) => m.id),
    [question, "a2"],
  );
  // Insert-if-absent: the same id again changes nothing.
  assert.deepEqual(await session.appendMessage(text("a1", "assistant", "other")), { outcome: "already_exists" });
  // A new root, and a chain in one call.
  const outcomes = await session.appendMessages([text("r1", "user", "new topic"), text("r2", "assistant", "sure")], {
    root: true,
  });
  assert.deepEqual(outcomes, [
    { outcome: "inserted", parent_id: null },
    { outcome: "inserted", parent_id: "r1" },
  ]);
  assert.deepEqual(
    (await session.getHistory("r2")).map((m) => m.id),
    ["r1", "r2"],
  );
});

test("full-text search in a session and across sessions", async () => {
  const session = await context.memory.sessions.create();
  await session.appendMessage(text("s1", "user", "The deployment is planned for Friday afternoon."));
  await session.appendMessage(text("s2", "assistant", "Noted: Friday it is."));
  const other = await context.memory.sessions.create();
  await other.appendMessage(text("o1", "user", "A deployment on Friday again?"));

  // The design: session.search("deployment Friday", { limit: 10 }).
  const results = await session.search("deployment Friday", { limit: 10 });
  assert.deepEqual(
    results.map((h) => h.message_id),
    ["s1"],
  );
  assert.equal(results[0]?.session_id, session.id);
  const everywhere = await context.memory.sessions.search("deployment Friday", { limit: 10 });
  assert.deepEqual(new Set(everywhere.map((h) => h.message_id)), new Set(["s1", "o1"]));
  const anyWord = await session.search("Friday afternoon", { mode: "any_words" });
  assert.deepEqual(new Set(anyWord.map((h) => h.message_id)), new Set(["s1", "s2"]));
});

test("compaction summarizes older turns through the model; the originals stay", async () => {
  const session = await context.memory.sessions.create();
  const messages: UIMessage[] = [];
  for (let i = 0; i < 8; i++) {
    messages.push(text(`m${i}`, i % 2 === 0 ? "user" : "assistant", `turn ${i} about the trip`));
  }
  await session.appendMessages(messages);
  const before = context.model.requests.length;
  const result = await session.compact();
  assert.equal(result.compacted, true);
  assert.equal(result.from_message_id, "m1");
  assert.equal(result.summary, "## Goal\nPlan a trip to Lyon by train.");
  assert.deepEqual(result.usage, { input_tokens: 300, output_tokens: 12 });
  assert.ok(context.model.requests.length > before, "the summary came from the model endpoint");

  const visible = await session.getHistory();
  assert.ok(visible.length < 8);
  assert.equal(visible[0]?.id, "m0", "the protected head stays");
  const summary = visible[1];
  assert.ok(summary !== undefined && summary.id.startsWith("compaction_"));
  assert.deepEqual(summary.parts[0], { type: "text", text: "## Goal\nPlan a trip to Lyon by train." });

  const compactions = await session.getCompactions();
  assert.equal(compactions.length, 1);
  assert.equal(compactions[0]?.overlay.from_message_id, "m1");
  assert.equal(compactions[0].superseded_by, null);
  // Non-destructive: the compacted turns are still searchable.
  assert.equal((await session.search("turn 3")).length, 1);
});

test("context blocks, the generated tools and the frozen system prompt", async () => {
  const session = await context.memory.sessions.create();
  const blocks = await session.getContextBlocks();
  assert.deepEqual(
    blocks.map((b) => [b.label, b.kind]),
    [
      ["soul", "readonly"],
      ["memory", "writable"],
      ["todos", "writable"],
      ["knowledge", "searchable"],
      ["profile", "readonly"],
    ],
  );

  // The design: during a turn the prompt is frozen; the agent writes through set_context.
  const system = await session.freezeSystemPrompt();
  assert.match(system, /SOUL \(Identity\)/);
  assert.match(system, /You are a helpful assistant\./);
  const tools = await session.tools();
  assert.ok("set_context" in tools && "search_context" in tools, Object.keys(tools).join(","));
  const setContext = tools.set_context;
  assert.ok(setContext.execute !== undefined);
  const written: unknown = await setContext.execute(
    { label: "memory", content: "User prefers dark mode." },
    { toolCallId: "call-1", messages: [] },
  );
  assert.ok(typeof written === "string" && !written.startsWith("Error:"), String(written));
  assert.equal(await session.freezeSystemPrompt(), system, "the frozen prompt survives a write");
  const refreshed = await session.refreshSystemPrompt();
  assert.match(refreshed, /User prefers dark mode\./);

  // The blocks directly.
  assert.equal((await session.getContextBlock("memory")).content, "User prefers dark mode.");
  const appended = await session.appendContextBlock("memory", "Project uses React and TypeScript.");
  assert.equal(appended.content, "User prefers dark mode.\nProject uses React and TypeScript.");
  const replaced = await session.replaceContextBlock("todos", "- [ ] Add authentication middleware");
  assert.equal(replaced.max_tokens, 2000);
  assert.ok(replaced.tokens > 0);
  await assert.rejects(session.replaceContextBlock("soul", "nope"), RefusedError);
  await assert.rejects(session.appendContextBlock("memory", "word ".repeat(2000)), RefusedError);
  await assert.rejects(session.getContextBlock("nope"), NotFoundError);
  // A refused write changes nothing.
  assert.equal(
    (await session.getContextBlock("memory")).content,
    "User prefers dark mode.\nProject uses React and TypeScript.",
  );
});

test("the session manager: list, fork, rename, update and delete", async () => {
  const session = await context.memory.sessions.create({ id: "manager-1", name: "first", model: "gpt-x", source: "tests" });
  await assert.rejects(context.memory.sessions.create({ id: "manager-1" }), (e: unknown) => {
    assert.equal((e as { code?: string }).code, "already_exists");
    return true;
  });
  await session.appendMessages([text("u1", "user", "hello"), text("a1", "assistant", "hi"), text("u2", "user", "bye")]);
  const info = await session.info();
  assert.equal(info.name, "first");
  assert.equal(info.model, "gpt-x");
  assert.equal(info.profile, null);

  const fork = await context.memory.sessions.fork(session.id, "a1", { name: "the fork" });
  assert.deepEqual(
    (await fork.getHistory()).map((m) => m.id),
    ["u1", "a1"],
  );
  assert.equal((await fork.info()).parent_session_id, session.id);
  assert.equal((await session.rename("renamed")).name, "renamed");

  await session.updateMessage(text("a1", "assistant", "hi there"));
  assert.deepEqual((await session.getHistory())[1]?.parts, [{ type: "text", text: "hi there" }]);
  assert.equal(await session.deleteMessages(["u2", "unknown"]), 1);
  assert.deepEqual(
    (await session.getHistory()).map((m) => m.id),
    ["u1", "a1"],
  );

  const ids: string[] = [];
  for await (const listed of context.memory.sessions.list({ limit: 2 })) ids.push(listed.id);
  assert.ok(ids.includes(session.id) && ids.includes(fork.id), ids.join(","));
  assert.equal(new Set(ids).size, ids.length, "pages do not repeat sessions");

  await context.memory.sessions.delete(fork.id);
  await assert.rejects(context.memory.sessions.get(fork.id), NotFoundError);
  await assert.rejects(fork.getHistory(), NotFoundError);
  assert.equal((await context.memory.sessions.get(session.id)).id, session.id);
});

test("a profile: remember, recall, list, ingest, forget, and a bound session's end", async () => {
  const alice = context.memory.profile("alice");
  const trip = { trip: "alps", day: 2, paid: true, tags: ["train", "lake"] };
  const seat = await alice.remember("Prefers window seats on trains", {
    kind: "fact",
    key: "seat",
    metadata: trip,
  });
  assert.equal(seat.kind, "fact");
  assert.equal(seat.key, "seat");
  assert.deepEqual(seat.metadata, trip);
  await assert.rejects(
    alice.remember("Nested", { metadata: { owner: ["ok"], bad: null as unknown as string } }),
    (error: unknown) => error instanceof InvalidInputError && /metadata "bad"/.test(error.message),
  );
  await alice.remember("Book the Lyon train for March", { kind: "task" });
  const recalled = await alice.recall("window seats");
  const top = recalled.hits[0]?.item;
  assert.ok(top?.type === "memory", JSON.stringify(recalled));
  assert.equal(top.content, "Prefers window seats on trains");
  assert.equal(top.id, seat.id);
  assert.ok(Array.isArray(recalled.degraded) && typeof recalled.usage.stages === "object");

  // A later memory with the same key supersedes the first.
  const aisle = await alice.remember("Prefers aisle seats on trains", { kind: "fact", key: "seat" });
  const current: string[] = [];
  for await (const m of alice.list({ limit: 1 })) current.push(m.content);
  assert.deepEqual(current.sort(), ["Book the Lyon train for March", "Prefers aisle seats on trains"]);
  const all: string[] = [];
  for await (const m of alice.list({ all: true })) {
    all.push(m.id);
    if (m.id === seat.id) assert.deepEqual(m.metadata, trip);
  }
  assert.ok(all.includes(seat.id) && all.includes(aisle.id));
  const chosen: string[] = [];
  const filter = { trip: "alps", day: { $gte: 2 }, tags: { $in: ["lake"] } };
  for await (const m of alice.list({ all: true, metadata: filter })) chosen.push(m.id);
  assert.deepEqual(chosen, [seat.id]);
  await assert.rejects(
    alice.listPage({ metadata: { day: { $near: 2 } } }),
    (error: unknown) => error instanceof InvalidInputError && /\$near/.test(error.message),
  );

  // Ingest lines: a background job stores them; recall finds the raw message.
  const accepted = await alice.ingest({
    session: "chat-1",
    messages: [
      { role: "user", content: "My sister Clara lives in Marseille." },
      { role: "assistant", content: "Noted." },
    ],
  });
  assert.ok(accepted.job !== null);
  const job = await alice.waitForJob(accepted.job.id);
  assert.equal(job.status, "done", JSON.stringify(job));
  assert.ok((await alice.jobs()).some((j) => j.id === job.id));
  const sister = await alice.recall("Where does Clara live?");
  assert.ok(JSON.stringify(sister.hits).includes("Marseille"), JSON.stringify(sister.hits));

  const ids = (hits: { item: { id: string } }[]): string[] => hits.map((h) => h.item.id);
  assert.ok(ids((await alice.recall("aisle seats")).hits).includes(aisle.id));
  await alice.forget(aisle.id, { reason: "the user asked" });
  assert.ok(!ids((await alice.recall("aisle seats")).hits).includes(aisle.id), "a forgotten memory is not recalled");
  const forgotten = [];
  for await (const m of alice.list({ all: true })) if (m.id === aisle.id) forgotten.push(m);
  assert.equal(forgotten[0]?.forgotten?.reason, "the user asked");

  // A synthesized answer through the model, with the stage's usage.
  const answered = await alice.recall("Where does Clara live?", { answer: true });
  assert.ok(answered.answer !== null, JSON.stringify(answered));
  assert.equal(typeof answered.answer.answer, "string");
  assert.ok(Array.isArray(answered.answer.citations));
  const calls = Object.values(answered.usage.stages).reduce((n, stage) => n + stage.calls, 0);
  assert.ok(calls >= 1, JSON.stringify(answered.usage));
  assert.ok((await context.memory.profiles()).includes("alice"));
  // Paged in name order: a page of one at a time gives every name, each once.
  const first = await context.memory.profilesPage({ limit: 1 });
  assert.equal(first.profiles.length, 1);
  const paged: string[] = [];
  for await (const name of context.memory.profileNames({ limit: 1 })) paged.push(name);
  assert.ok(paged.includes("alice"));
  assert.deepEqual(paged, [...new Set(paged)].sort());

  // A bound session: its tools include recall and remember; its end ships the history.
  const session = await context.memory.sessions.create({ profile: "alice" });
  assert.equal((await session.info()).profile, "alice");
  const names = (await session.toolDefinitions()).map((t) => t.name);
  assert.ok(names.includes("recall") && names.includes("remember"), names.join(","));
  await session.appendMessages([text("b1", "user", "I moved to Grenoble last week."), text("b2", "assistant", "Congratulations!")]);
  const ended = await session.end({ reason: "done" });
  assert.equal(ended.session.end_reason, "done");
  assert.equal(ended.shipped?.shipped, 2);
  const shipped = ended.shipped.job;
  assert.ok(shipped !== null);
  assert.equal((await alice.waitForJob(shipped.id)).status, "done");
  assert.ok(JSON.stringify((await alice.recall("Grenoble")).hits).includes("Grenoble"));
  // Nothing new to ship the second time.
  const again = await alice.ingest({ session: session.id });
  assert.equal(again.job, null);
  assert.equal(again.already_shipped, 2);

  assert.equal((await session.bind(null)).profile, null);
  const purged = await alice.purge(seat.id);
  assert.equal(purged.memory, true);
  await assert.rejects(alice.forget(seat.id), NotFoundError);
});

test("consolidation merges paraphrases into one survivor, and the block shows what matters", async () => {
  const tidy = context.memory.profile("tidy");
  const said = [
    "The user likes green tea.",
    "the user likes green tea",
    "The user likes GREEN tea!",
  ];
  const ids: string[] = [];
  for (const content of said) ids.push((await tidy.remember(content)).id);
  const negated = await tidy.remember("The user does not like green tea at night.");
  await tidy.remember("Book the dentist appointment", { kind: "task" });

  const planned = await tidy.consolidate({ dryRun: true });
  assert.equal(planned.dry_run, true);
  assert.equal(planned.merges.length, 1, JSON.stringify(planned));
  assert.equal(planned.absorbed, 2);
  assert.equal((await tidy.listPage()).memories.length, 5, "a dry run writes nothing");

  assert.deepEqual(planned.contradictions, [], "a dry run asks nothing about contradictions");
  const done = await tidy.consolidate();
  assert.equal(done.dry_run, false);
  assert.ok(done.job_id);
  const merge = done.merges[0];
  assert.ok(merge !== undefined);
  // The fake model flags every pair it is asked about: the negation against the survivor.
  assert.deepEqual(
    done.contradictions.map((c) => [c.first.id, c.second.id]),
    [[merge.survivor.id, negated.id]],
  );
  assert.deepEqual(await tidy.contradictions(), done.contradictions);
  assert.deepEqual(
    [merge.survivor.id, ...merge.absorbed.map((m) => m.id)].sort(),
    [...ids].sort(),
  );
  const merged = await tidy.merged(merge.survivor.id);
  assert.equal(merged.length, 2);
  for (const m of merged) {
    assert.equal(m.superseded_by, merge.survivor.id);
    assert.equal(m.merged?.reason, merge.reason);
  }
  const current = (await tidy.listPage()).memories.map((m) => m.content);
  assert.equal(current.length, 3, current.join(" | "));

  const block = await tidy.block({ tokens: 200 });
  assert.ok(block.text?.includes("Open tasks:\n- Book the dentist appointment"), block.text ?? "");
  assert.equal(block.candidates.length, 3);
  for (const c of block.candidates) {
    assert.equal(c.chosen, true);
    assert.ok(c.score.score > 0 && c.score.said > 0.99, JSON.stringify(c.score));
  }

  // The digest, written by the model (the fake confirms the first record), then shown by
  // a block too small for every memory.
  const refreshed = await tidy.refreshDigest({ force: true });
  assert.equal(refreshed.written, true, JSON.stringify(refreshed));
  const digest = await tidy.digest();
  assert.ok(digest !== null);
  assert.equal(digest.text, "The user's profile in brief.");
  assert.equal(digest.sources.length, 1);
  const tight = await tidy.block({ tokens: 15 });
  assert.ok(tight.text?.startsWith("Summary:\nThe user's profile in brief."), tight.text ?? "");
  assert.equal(tight.digest?.text, digest.text);

  const purged = await tidy.purge(merge.survivor.id);
  assert.equal(purged.absorbed, 2, "a purge of the survivor reaches what it absorbed");
  assert.deepEqual(await tidy.contradictions(), [], "an erased memory takes its contradictions with it");
  await tidy.delete();
});

test("recall with a metadata filter returns only the memories it admits", async () => {
  const team = context.memory.profile("launches");
  const atlas = await team.remember("The Atlas launch is in May", { metadata: { project: "atlas", priority: 2 } });
  const borealis = await team.remember("The Borealis launch is in June", {
    metadata: { project: "borealis", priority: 1 },
  });
  const cygnus = await team.remember("The Cygnus launch is in July", { metadata: { project: "cygnus" } });
  const accepted = await team.ingest({
    session: "launch-chat",
    messages: [{ role: "user", content: "The Dorado launch is in August." }],
  });
  assert.ok(accepted.job !== null);
  assert.equal((await team.waitForJob(accepted.job.id)).status, "done");
  const recalled = async (metadata?: MetadataFilter): Promise<RecallHit[]> =>
    (await team.recall("when is the launch?", { metadata })).hits;
  const memories = (hits: RecallHit[]): string[] =>
    hits.flatMap((h) => (h.item.type === "memory" ? [h.item.id] : [])).sort();

  const unfiltered = await recalled();
  assert.deepEqual(memories(unfiltered), [atlas.id, borealis.id, cygnus.id].sort());
  assert.ok(unfiltered.some((h) => h.item.type === "raw"), JSON.stringify(unfiltered));
  // Raw messages carry no metadata: a filter on a value leaves them out.
  const one = await recalled({ project: "atlas" });
  assert.deepEqual(one.map((h) => h.item.id), [atlas.id]);
  const either = await recalled({ $or: [{ project: "cygnus" }, { priority: { $lt: 2 } }] });
  assert.deepEqual(either.map((h) => h.item.id).sort(), [borealis.id, cygnus.id].sort());
  assert.deepEqual(await recalled({ priority: { $gte: 3 } }), []);
  // A filter an empty object passes lets them in.
  const unlabelled = await recalled({ project: { $exists: false } });
  assert.ok(unlabelled.length > 0 && unlabelled.every((h) => h.item.type === "raw"), JSON.stringify(unlabelled));
  assert.ok(JSON.stringify(unlabelled).includes("Dorado"), JSON.stringify(unlabelled));
  await assert.rejects(
    team.recall("when is the launch?", { metadata: { priority: { $near: 1 } } }),
    (error: unknown) => error instanceof InvalidInputError && /\$near/.test(error.message),
  );
});

test("a memory with expiresAt leaves recall and the default list when it expires; all still lists it", async () => {
  const desk = context.memory.profile("expiry");
  const soon = new Date(Date.now() + 1500);
  const gate = await desk.remember("The flight boards at gate B12 today", { kind: "event", expiresAt: soon });
  const far = "2999-01-01T00:00:00Z";
  const passport = await desk.remember("The passport is valid for years", { expiresAt: far });
  const plain = await desk.remember("The hotel is near the station");
  assert.equal(gate.expires_at, soon.getTime(), "a Date is sent as its ISO string, kept to the millisecond");
  assert.equal(passport.expires_at, Date.parse(far));
  assert.equal(plain.expires_at, undefined, "no expiry: the field is absent");
  const listed = async (all?: boolean): Promise<string[]> => {
    const ids: string[] = [];
    for await (const m of desk.list({ all })) ids.push(m.id);
    return ids.sort();
  };
  const recalled = async (query: string): Promise<string[]> =>
    (await desk.recall(query)).hits.map((h) => h.item.id);
  assert.deepEqual(await listed(), [gate.id, passport.id, plain.id].sort(), "not expired yet");
  assert.ok((await recalled("gate B12")).includes(gate.id));

  await delay(Math.max(0, soon.getTime() + 100 - Date.now()));
  assert.deepEqual(await listed(), [passport.id, plain.id].sort(), "the default list leaves out what expired");
  assert.ok(!(await recalled("gate B12")).includes(gate.id), "recall leaves out what expired");
  assert.ok((await recalled("passport valid")).includes(passport.id));
  assert.deepEqual(await listed(true), [gate.id, passport.id, plain.id].sort(), "all still lists it, for audit");
  for await (const m of desk.list({ all: true })) if (m.id === gate.id) assert.equal(m.expires_at, soon.getTime());

  await assert.rejects(
    desk.remember("Too late", { expiresAt: Date.now() - 60_000 }),
    (error: unknown) => error instanceof InvalidInputError && error.status === 400 && /not in the future/.test(error.message),
  );
  await assert.rejects(
    desk.remember("Unreadable", { expiresAt: "next tuesday" }),
    (error: unknown) => error instanceof InvalidInputError && /RFC 3339/.test(error.message),
  );
});

test("profile settings: the profile's own, the effective ones, refused when invalid, cleared with {}", async () => {
  // A deployment with its own instructions and categories, beneath every profile's.
  const deployment = await serve({
    config: `
[memory]
embedder = "none"
instructions = "Ignore small talk."

[[memory.categories]]
name = "work"
description = "The job"
`,
  });
  try {
    const memory = new MemoryClient({ baseUrl: deployment.baseUrl });
    const nina = memory.profile("nina");
    await assert.rejects(nina.settings(), NotFoundError, "no such profile yet");

    const own: Settings = {
      instructions: "Keep travel plans; ignore the weather.",
      categories: [{ name: "travel", description: "Trips, bookings and places" }, { name: "food-2" }],
      language: "French",
    };
    const stored = await nina.setSettings(own);
    // A category given without a description comes back with an empty one.
    const expected: Settings = {
      instructions: own.instructions,
      categories: [{ name: "travel", description: "Trips, bookings and places" }, { name: "food-2", description: "" }],
      language: "French",
    };
    assert.deepEqual(stored.settings, expected);
    assert.deepEqual(stored.effective, {
      instructions: "Ignore small talk.\nKeep travel plans; ignore the weather.",
      categories: expected.categories,
      language: "French",
    });
    assert.deepEqual(await nina.settings(), stored, "read back as stored");
    assert.ok((await memory.profiles()).includes("nina"), "setting them created the profile");

    await assert.rejects(
      nina.setSettings({ categories: [{ name: "Not Valid" }] }),
      (error: unknown) =>
        error instanceof InvalidInputError && error.status === 400 && error.code === "invalid_input" && /Not Valid/.test(error.message),
    );
    await assert.rejects(nina.setSettings({ language: "French!!" }), InvalidInputError);
    assert.deepEqual(await nina.settings(), stored, "a refused update changes nothing");

    const cleared = await nina.setSettings({});
    assert.deepEqual(cleared.settings, {}, "unset parts are absent");
    assert.deepEqual(cleared.effective, {
      instructions: "Ignore small talk.",
      categories: [{ name: "work", description: "The job" }],
    });
    assert.deepEqual(await nina.settings(), cleared);
  } finally {
    await deployment.stop();
  }
});

test("export and import stream sessions and profiles as JSON lines", async () => {
  const session = await context.memory.sessions.create({ id: "streamed" });
  await session.appendMessages([text("x1", "user", "pack the bags"), text("x2", "assistant", "done")]);
  // The export's byte stream goes straight back in as the import's body, after a delete.
  const lines: string[] = [];
  for await (const line of session.exportLines()) lines.push(line);
  assert.ok(lines.length >= 3, lines.join("\n"));
  const exported = await session.export();
  await session.delete();
  const imported = await context.memory.sessions.import(exported);
  assert.equal(imported.sessions_created, 1);
  assert.equal(imported.inserted, 2);
  assert.deepEqual(
    (await session.getHistory()).map((m) => m.id),
    ["x1", "x2"],
  );
  // Again, from an async iterable of lines: everything is there already.
  async function* again(): AsyncGenerator<string> {
    for (const line of lines) yield await Promise.resolve(line);
  }
  const repeated = await context.memory.sessions.import(again());
  assert.equal(repeated.inserted, 0);
  assert.equal(repeated.already_present, 2);

  const carol = context.memory.profile("carol");
  await carol.remember("Carol keeps bees", { kind: "fact", key: "hobby" });
  const copy = context.memory.profile("carol-copy");
  const report = await copy.import(await carol.export());
  assert.equal(report.memories_new, 1);
  const copied: string[] = [];
  for await (const m of copy.list()) copied.push(m.content);
  assert.deepEqual(copied, ["Carol keeps bees"]);
  await assert.rejects(context.memory.sessions.import("not json\n"), InvalidInputError);
});

test("a bound session shows its profile in the prompt with no block declared", async () => {
  const deployment = await serve({ config: '[memory]\nembedder = "none"\n' });
  try {
    const memory = new MemoryClient({ baseUrl: deployment.baseUrl });
    await memory.profile("gus").remember("Vegetarian, no mushrooms", { kind: "fact", key: "diet" });
    const bound = await memory.sessions.create({ profile: "gus" });
    const prompt = await bound.freezeSystemPrompt();
    assert.ok(prompt.includes("diet: Vegetarian, no mushrooms"), prompt);
    await memory.profile("gus").remember("Lives in Porto", { kind: "fact", key: "city" });
    assert.equal(await bound.freezeSystemPrompt(), prompt, "frozen until a refresh");
    assert.ok((await bound.refreshSystemPrompt()).includes("city: Lives in Porto"));
    const unbound = await memory.sessions.create({});
    assert.ok(!(await unbound.freezeSystemPrompt()).includes("Vegetarian"));
  } finally {
    await deployment.stop();
  }
});
