/**
 * A long-term memory profile: ingest conversations, remember, recall, list, forget, the
 * ingest jobs that extract typed memories in the background, and the settings extraction
 * follows.
 *
 * ```ts
 * const alice = memory.profile("alice");
 * await alice.remember("Prefers window seats", { kind: "fact", key: "seat" });
 * const { hits } = await alice.recall("which seat does she like?");
 * ```
 */
import { MemoryError, TimeoutError } from "./errors.js";
import { path, type RequestOptions, sleep, type Transport } from "./http.js";
import { type Body, IMPORT_TIMEOUT_MS, lines, uploadBody } from "./streams.js";
import type {
  BlockChoice,
  ConsolidationReport,
  Contradiction,
  DigestReport,
  IngestAccepted,
  IngestJob,
  IngestLine,
  Memory,
  MemoryKind,
  MemoryPage,
  Metadata,
  MetadataFilter,
  ProfileDigest,
  ProfileImport,
  Purged,
  RecallResult,
  Settings,
  SettingsView,
} from "./types.js";

/** What to remember. */
export interface RememberOptions extends RequestOptions {
  /** `fact` (default), `event`, `instruction` or `task`. */
  kind?: MemoryKind;
  /** The slot it fills: a later memory with the same key supersedes this one. */
  key?: string;
  /** The session it came from (provenance). */
  sessionId?: string;
  /** Your own metadata: a flat object of strings, numbers, booleans and lists of strings
   * (at most 32 keys, 8 KiB as JSON), kept and exported with the memory. */
  metadata?: Metadata;
  /** When it stops being current: an RFC 3339 string (`"2027-01-31T00:00:00Z"`), milliseconds
   * since the epoch, or a `Date` (sent as its ISO string); it must be in the future. From then
   * on recall and the default list leave it out (`list({ all: true })` still shows it).
   * Default: its kind's lifetime in the server's `[memory.lifetimes]`, if any. */
  expiresAt?: string | number | Date;
}

/** A recall's options. */
export interface RecallOptions extends RequestOptions {
  /** At most this many hits. */
  limit?: number;
  /** Also synthesize an answer from the hits (needs the server's `[llm]`). */
  answer?: boolean;
  /** Include each channel's ranks and the fusion's workings. */
  explain?: boolean;
  /** Only memories whose metadata satisfies this filter (the grammar of `ListOptions.metadata`),
   * applied inside every channel. Raw messages, which carry no metadata, come only when the
   * filter admits an empty object; a filter the server refuses names its fault. */
  metadata?: MetadataFilter;
}

/** Which memories to list. */
export interface ListOptions extends RequestOptions {
  kind?: MemoryKind;
  key?: string;
  /** Only memories from this session. */
  session?: string;
  /** Include superseded, forgotten and expired memories. */
  all?: boolean;
  /** Only memories recorded at or after this time (milliseconds since the epoch). */
  since?: number;
  /** Only memories recorded before this time (milliseconds since the epoch). */
  until?: number;
  /** Only memories whose metadata satisfies this filter: `{ project: "atlas", priority:
   * { $gte: 2 } }` (operators `$eq`, `$in`, `$gt`, `$gte`, `$lt`, `$lte`, `$exists`,
   * combined with `$and`, `$or`, `$not`). */
  metadata?: MetadataFilter;
  /** Page size (the server's default when absent). */
  limit?: number;
  /** Start after this cursor (from an earlier page). */
  cursor?: string;
}

/** What to ingest: lines given here, or a range of a session the server stores. */
export type IngestInput =
  | { session: string; messages: IngestLine[] }
  | { session: string; leaf?: string; from?: string; to?: string };

/** How long `waitForJob` waits. */
export interface WaitOptions extends RequestOptions {
  /** Give up after this many milliseconds (default 120 000). */
  waitMs?: number;
  /** Milliseconds between looks (default 250). */
  intervalMs?: number;
}

const FINISHED = new Set<string>(["done", "done_with_errors", "failed"]);

/** A profile on the server (it exists once something is stored in it). */
export class Profile {
  /** The profile's name. */
  readonly name: string;
  private readonly http: Transport;

  /** A handle on profile `name` (no request is made). */
  constructor(http: Transport, name: string) {
    this.http = http;
    this.name = name;
  }

  private path(suffix = ""): string {
    return path`/v1/profiles/${this.name}` + suffix;
  }

  /**
   * Queues an ingest job: the lines given, or the unshipped messages of a stored session
   * (`{ session, leaf?, from?, to? }`). Extraction runs in the background; `waitForJob`
   * waits for it. `job` is `null` when a stored session had nothing new.
   */
  ingest(input: IngestInput, options: RequestOptions = {}): Promise<IngestAccepted> {
    return this.http.json("POST", this.path("/ingest"), { ...options, json: input });
  }

  /** Stores one memory now (no extraction), superseding the memory with the same key. */
  remember(content: string, options: RememberOptions = {}): Promise<Memory> {
    return this.http.json("POST", this.path("/memories"), {
      ...options,
      json: {
        content,
        kind: options.kind,
        key: options.key,
        session_id: options.sessionId,
        metadata: options.metadata,
        expires_at: options.expiresAt instanceof Date ? options.expiresAt.toISOString() : options.expiresAt,
      },
    });
  }

  /** Hybrid recall (full-text, vector, keys, dates; fused by reciprocal rank). */
  recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    return this.http.json("POST", this.path("/recall"), {
      ...options,
      json: {
        query,
        limit: options.limit,
        answer: options.answer,
        explain: options.explain,
        metadata: options.metadata,
      },
    });
  }

  /** One page of memories, in the order they were recorded. */
  listPage(options: ListOptions = {}): Promise<MemoryPage> {
    return this.http.json("GET", this.path("/memories"), {
      ...options,
      query: {
        kind: options.kind,
        key: options.key,
        session: options.session,
        all: options.all,
        since: options.since,
        until: options.until,
        metadata: options.metadata === undefined ? undefined : JSON.stringify(options.metadata),
        limit: options.limit,
        cursor: options.cursor,
      },
    });
  }

  /** Every matching memory, page by page: `for await (const m of profile.list()) ...`. */
  async *list(options: ListOptions = {}): AsyncGenerator<Memory> {
    let cursor = options.cursor;
    for (;;) {
      const page = await this.listPage({ ...options, cursor });
      yield* page.memories;
      if (page.next_cursor === null || page.memories.length === 0) return;
      cursor = page.next_cursor;
    }
  }

  /** Forgets a memory (it stays, marked, for audit; recall no longer returns it). */
  async forget(memoryId: string, options: RequestOptions & { reason?: string } = {}): Promise<void> {
    await this.http.json("DELETE", this.path(path`/memories/${memoryId}`), {
      ...options,
      query: { reason: options.reason },
    });
  }

  /** Erases a memory for good, with its vectors, and with `withSources` its raw messages. */
  purge(memoryId: string, options: RequestOptions & { withSources?: boolean } = {}): Promise<Purged> {
    return this.http.json("POST", this.path(path`/memories/${memoryId}/purge`), {
      ...options,
      query: { with_sources: options.withSources },
    });
  }

  /**
   * Merges memories that say the same thing: each group into one survivor that keeps the
   * union of their sources; the others are superseded by it with the reason (nothing is
   * deleted). With `dryRun`, only lists the planned merges.
   */
  consolidate(options: RequestOptions & { dryRun?: boolean } = {}): Promise<ConsolidationReport> {
    return this.http.json("POST", this.path("/consolidate"), {
      ...options,
      json: { dry_run: options.dryRun ?? false },
    });
  }

  /** The memories consolidation merged into `memoryId`, oldest first, each with its reason. */
  async merged(memoryId: string, options: RequestOptions = {}): Promise<Memory[]> {
    const { memories } = await this.http.json<{ memories: Memory[] }>(
      "GET",
      this.path(path`/memories/${memoryId}/merged`),
      options,
    );
    return memories;
  }

  /**
   * Pairs of current memories that contradict each other, flagged by the LLM during
   * consolidation runs, newest first; a pair leaves when either memory stops being current.
   */
  async contradictions(options: RequestOptions = {}): Promise<Contradiction[]> {
    const { contradictions } = await this.http.json<{ contradictions: Contradiction[] }>(
      "GET",
      this.path("/contradictions"),
      options,
    );
    return contradictions;
  }

  /** The profile's digest (`null` when none is kept). */
  async digest(options: RequestOptions = {}): Promise<ProfileDigest | null> {
    const { digest } = await this.http.json<{ digest: ProfileDigest | null }>("GET", this.path("/digest"), options);
    return digest;
  }

  /** Writes the digest again when enough has changed (always with `force`); needs an `[llm]`. */
  refreshDigest(options: RequestOptions & { force?: boolean } = {}): Promise<DigestReport> {
    return this.http.json("POST", this.path("/digest"), { ...options, json: { force: options.force ?? false } });
  }

  /** What a bound session's profile block shows, and the scores it chose by. */
  block(options: RequestOptions & { tokens?: number; top?: number } = {}): Promise<BlockChoice> {
    return this.http.json("GET", this.path("/block"), {
      ...options,
      query: { tokens: options.tokens, top: options.top },
    });
  }

  /** One ingest job. */
  job(jobId: string, options: RequestOptions = {}): Promise<IngestJob> {
    return this.http.json("GET", this.path(path`/jobs/${jobId}`), options);
  }

  /** The profile's ingest jobs. */
  async jobs(options: RequestOptions = {}): Promise<IngestJob[]> {
    const { jobs } = await this.http.json<{ jobs: IngestJob[] }>("GET", this.path("/jobs"), options);
    return jobs;
  }

  /** Polls a job until it is final (`done`, `done_with_errors`, `failed`; a `TimeoutError` after `waitMs`). */
  async waitForJob(jobId: string, options: WaitOptions = {}): Promise<IngestJob> {
    const deadline = Date.now() + (options.waitMs ?? 120_000);
    for (;;) {
      const job = await this.job(jobId, options);
      if (FINISHED.has(job.status)) return job;
      if (Date.now() >= deadline) {
        throw new TimeoutError(`job ${jobId} is still ${job.status} after ${options.waitMs ?? 120_000} ms`);
      }
      await sleep(options.intervalMs ?? 250, options.signal);
    }
  }

  /** The profile's own extraction settings and the effective ones (a `NotFoundError` when
   * the profile does not exist). */
  settings(options: RequestOptions = {}): Promise<SettingsView> {
    return this.http.json("GET", this.path("/settings"), options);
  }

  /**
   * Replaces the profile's own extraction settings (`{}` removes them), creating the profile
   * if needed; ingest jobs use them from their next stage on. Invalid settings (a category
   * name not of 1 to 40 `a-z 0-9 _ -`, instructions over 4,000 characters, over 32 or
   * duplicate categories, a language that is not a plain name) throw `InvalidInputError`
   * and change nothing.
   */
  setSettings(settings: Settings, options: RequestOptions = {}): Promise<SettingsView> {
    return this.http.json("PUT", this.path("/settings"), { ...options, json: settings });
  }

  /** Deletes the profile with everything in it. */
  async delete(options: RequestOptions = {}): Promise<void> {
    await this.http.json("DELETE", this.path(), options);
  }

  /** The profile as a stream of NDJSON bytes (with `vectors`, its embeddings too). */
  async export(options: RequestOptions & { vectors?: boolean } = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.stream("GET", this.path("/export"), {
      ...options,
      query: { vectors: options.vectors },
    });
    if (response.body === null) throw new MemoryError("the export has no body");
    return response.body;
  }

  /** The profile's export, one JSON line at a time. */
  async *exportLines(options: RequestOptions & { vectors?: boolean } = {}): AsyncGenerator<string> {
    yield* lines(await this.export(options));
  }

  /** Imports export lines (idempotent: what is there already is counted, not doubled). */
  async import(body: Body, options: RequestOptions = {}): Promise<ProfileImport> {
    return this.http.json("POST", this.path("/import"), {
      timeoutMs: IMPORT_TIMEOUT_MS,
      ...options,
      body: await uploadBody(body),
      contentType: "application/x-ndjson",
    });
  }
}
