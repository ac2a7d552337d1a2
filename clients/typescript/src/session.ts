/**
 * One session: its tree of messages, search, compaction, context blocks, the frozen system
 * prompt and the tools an agent hands to the AI SDK, with the design's method names.
 *
 * ```ts
 * const session = await memory.sessions.create({ profile: "alice" });
 * await session.appendMessage({ id: "m1", role: "user", parts: [{ type: "text", text: "Hi" }] });
 * const { text } = await generateText({
 *   model,
 *   system: await session.freezeSystemPrompt(),
 *   messages: await convertToModelMessages(await session.getHistory()),
 *   tools: await session.tools(),
 * });
 * ```
 */
import type { ToolSet } from "ai";
import { MemoryError } from "./errors.js";
import { path, type RequestOptions, type Transport } from "./http.js";
import { lines } from "./streams.js";
import { aiSdkTools } from "./tools.js";
import type {
  AppendOutcome,
  Compaction,
  CompactResult,
  ContextBlock,
  Ended,
  SearchHit,
  SearchMode,
  SessionInfo,
  ToolDefinition,
  ToolResult,
  UIMessage,
} from "./types.js";

/** Where an append attaches. */
export interface AppendOptions extends RequestOptions {
  /** The parent message; the latest leaf when absent (or `null`), as in the design. */
  parentId?: string | null;
  /** Start a new root instead (a second tree in the same session). */
  root?: boolean;
}

/** A search's options. */
export interface SearchOptions extends RequestOptions {
  /** At most this many hits (default 20, at most 1 000). */
  limit?: number;
  /** How the words match (default `all_words`). */
  mode?: SearchMode;
}

/** A session on the server. Cheap to create: it holds only the id and the transport. */
export class Session {
  /** The session id. */
  readonly id: string;
  private readonly http: Transport;

  /** A handle on session `id` (no request is made; see `SessionManager.get` to check it). */
  constructor(http: Transport, id: string) {
    this.http = http;
    this.id = id;
  }

  private path(suffix = ""): string {
    return path`/v1/sessions/${this.id}` + suffix;
  }

  /** The session's record: name, model, usage, profile, end reason, times. */
  info(options: RequestOptions = {}): Promise<SessionInfo> {
    return this.http.json("GET", this.path(), options);
  }

  /**
   * Appends a message (insert-if-absent: a stored id changes nothing and answers
   * `already_exists`). It attaches to `parentId`, or to the latest leaf.
   */
  async appendMessage(message: UIMessage, options: AppendOptions = {}): Promise<AppendOutcome> {
    const { outcomes } = await this.http.json<{ outcomes: AppendOutcome[] }>("POST", this.path("/messages"), {
      ...options,
      json: { message, parent: parent(options) },
    });
    const [outcome] = outcomes;
    if (outcome === undefined) throw new MemoryError("the server answered no outcome");
    return outcome;
  }

  /** Appends a chain (each message the parent of the next) in one request, atomically. */
  async appendMessages(messages: UIMessage[], options: AppendOptions = {}): Promise<AppendOutcome[]> {
    const { outcomes } = await this.http.json<{ outcomes: AppendOutcome[] }>("POST", this.path("/messages"), {
      ...options,
      json: { messages, parent: parent(options) },
    });
    return outcomes;
  }

  /**
   * The root-to-leaf history of `leafId` (the latest leaf by default), compactions applied;
   * with `raw`, the stored messages the compaction summaries stand in for.
   */
  async getHistory(leafId?: string, options: RequestOptions & { raw?: boolean } = {}): Promise<UIMessage[]> {
    const { messages } = await this.http.json<{ messages: UIMessage[] }>("GET", this.path("/history"), {
      ...options,
      query: { leaf: leafId, raw: options.raw },
    });
    return messages;
  }

  /** The most recent message with no children (in the subtree under a message, with `under`), or `null` for an empty session. */
  async getLatestLeaf(options: RequestOptions & { under?: string } = {}): Promise<UIMessage | null> {
    const { message } = await this.http.json<{ message: UIMessage | null }>("GET", this.path("/latest-leaf"), {
      ...options,
      query: { under: options.under },
    });
    return message;
  }

  /** The children of a message (its branches), in insertion order. */
  async getBranches(messageId: string, options: RequestOptions = {}): Promise<UIMessage[]> {
    const { messages } = await this.http.json<{ messages: UIMessage[] }>(
      "GET",
      this.path(path`/messages/${messageId}/children`),
      options,
    );
    return messages;
  }

  /** Replaces a stored message's content (same id; its parent and role stay). */
  async updateMessage(message: UIMessage, options: RequestOptions = {}): Promise<void> {
    await this.http.json("PUT", this.path(path`/messages/${message.id}`), { ...options, json: message });
  }

  /** Deletes one message (its children re-link to its parent); `NotFoundError` when absent. */
  async deleteMessage(messageId: string, options: RequestOptions = {}): Promise<void> {
    await this.http.json("DELETE", this.path(path`/messages/${messageId}`), options);
  }

  /** Deletes messages (their children re-link to their parents); how many were deleted. */
  async deleteMessages(messageIds: string[], options: RequestOptions = {}): Promise<number> {
    const { deleted } = await this.http.json<{ deleted: number }>("DELETE", this.path("/messages"), {
      ...options,
      json: { ids: messageIds },
    });
    return deleted;
  }

  /** Full-text search over this session's messages, best first. */
  async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    const { hits } = await this.http.json<{ hits: SearchHit[] }>("GET", "/v1/search", {
      ...options,
      query: { q: query, session: this.id, limit: options.limit, mode: options.mode },
    });
    return hits;
  }

  /**
   * Compacts the history of `leafId` (the latest leaf by default) into a summary overlay
   * through the server's configured model; the original messages stay. A session bound to
   * a profile ships the compacted range there.
   */
  compact(options: RequestOptions & { leafId?: string } = {}): Promise<CompactResult> {
    return this.http.json("POST", this.path("/compact"), { ...options, json: { leaf: options.leafId } });
  }

  /** The compaction overlays, oldest first. */
  async getCompactions(options: RequestOptions = {}): Promise<Compaction[]> {
    const { compactions } = await this.http.json<{ compactions: Compaction[] }>(
      "GET",
      this.path("/compactions"),
      options,
    );
    return compactions;
  }

  /** Every context block, in prompt order. */
  async getContextBlocks(options: RequestOptions = {}): Promise<ContextBlock[]> {
    const { blocks } = await this.http.json<{ blocks: ContextBlock[] }>("GET", this.path("/context"), options);
    return blocks;
  }

  /** One context block. */
  getContextBlock(label: string, options: RequestOptions = {}): Promise<ContextBlock> {
    return this.http.json("GET", this.path(path`/context/${label}`), options);
  }

  /** Replaces a writable block's content (refused over its budget: `RefusedError`). */
  replaceContextBlock(label: string, content: string, options: RequestOptions = {}): Promise<ContextBlock> {
    return this.http.json("PUT", this.path(path`/context/${label}`), { ...options, json: { content } });
  }

  /** Appends to a writable block, on a new line (refused over its budget). */
  appendContextBlock(label: string, content: string, options: RequestOptions = {}): Promise<ContextBlock> {
    return this.http.json("POST", this.path(path`/context/${label}/append`), { ...options, json: { content } });
  }

  /**
   * The system prompt, frozen at its first render: writes to blocks do not change it until
   * `refreshSystemPrompt`, so the model provider's prompt cache keeps hitting.
   */
  async freezeSystemPrompt(options: RequestOptions = {}): Promise<string> {
    const { prompt } = await this.http.json<{ prompt: string }>("GET", this.path("/prompt"), options);
    return prompt;
  }

  /** Renders the prompt again from the blocks as they are now, and freezes that. */
  async refreshSystemPrompt(options: RequestOptions = {}): Promise<string> {
    const { prompt } = await this.http.json<{ prompt: string }>("GET", this.path("/prompt"), {
      ...options,
      query: { refresh: true },
    });
    return prompt;
  }

  /** The session's tool definitions (context tools, search, and `recall` / `remember` when bound). */
  toolDefinitions(options: RequestOptions = {}): Promise<ToolDefinition[]> {
    return this.http.json("GET", this.path("/tools"), { ...options, query: { format: "mcp" } });
  }

  /** Runs one of the session's tools on the server (a refusal is a result: `is_error`). */
  executeTool(name: string, input: unknown, options: RequestOptions = {}): Promise<ToolResult> {
    return this.http.json("POST", this.path(path`/tools/${name}`), { ...options, json: input ?? {} });
  }

  /**
   * The session's tools as AI SDK tools, for `generateText` / `streamText`: each has its
   * JSON input schema, and its `execute` runs the server's executor and returns what the
   * model reads.
   */
  async tools(options: RequestOptions = {}): Promise<ToolSet> {
    return aiSdkTools(await this.toolDefinitions(options), (name, input, signal) =>
      this.executeTool(name, input, { signal }),
    );
  }

  /** Renames the session. */
  rename(name: string, options: RequestOptions = {}): Promise<SessionInfo> {
    return this.http.json("PATCH", this.path(), { ...options, json: { name } });
  }

  /** Binds the session to a long-term profile, or unbinds it with `null`. */
  bind(profile: string | null, options: RequestOptions = {}): Promise<SessionInfo> {
    return this.http.json("PATCH", this.path(), { ...options, json: { profile } });
  }

  /** Ends the session; a bound session ships what was not shipped yet to its profile. */
  end(options: RequestOptions & { reason?: string } = {}): Promise<Ended> {
    return this.http.json("POST", this.path("/end"), { ...options, json: { reason: options.reason } });
  }

  /** Deletes the session with its messages, overlays and index entries. */
  async delete(options: RequestOptions = {}): Promise<void> {
    await this.http.json("DELETE", this.path(), options);
  }

  /** The session as a stream of NDJSON bytes (`memory import` and `SessionManager.import` read it). */
  async export(options: RequestOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.stream("GET", this.path("/export"), options);
    if (response.body === null) throw new MemoryError("the export has no body");
    return response.body;
  }

  /** The session's export, one JSON line at a time. */
  async *exportLines(options: RequestOptions = {}): AsyncGenerator<string> {
    yield* lines(await this.export(options));
  }
}

function parent(options: AppendOptions): unknown {
  if (options.root === true) return { kind: "root" };
  if (options.parentId !== undefined && options.parentId !== null) {
    return { kind: "message", id: options.parentId };
  }
  return { kind: "latest_leaf" };
}
