/**
 * The JSON shapes the server returns, as it writes them (snake_case fields). Messages are
 * the AI SDK's `UIMessage`, stored and returned as given: every part type, unknown fields
 * kept.
 */
import type { UIMessage } from "ai";

export type { UIMessage };

/** Milliseconds since the epoch. */
export type Timestamp = number;

/** A session record. */
export interface SessionInfo {
  id: string;
  /** Display name; `null` until named. */
  name: string | null;
  /** The session this one was forked or split from. */
  parent_session_id: string | null;
  model: string | null;
  source: string | null;
  usage: { input_tokens: number; output_tokens: number; cost: number };
  /** Why the session ended; `null` while open. */
  end_reason: string | null;
  /** The long-term profile the session is bound to; `null`: unbound. */
  profile: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** What an append did with one message. */
export type AppendOutcome =
  | { outcome: "inserted"; parent_id: string | null }
  | { outcome: "already_exists" };

/** One full-text search hit. */
export interface SearchHit {
  session_id: string;
  message_id: string;
  role: "system" | "user" | "assistant";
  /** The message's searchable text. */
  content: string;
  /** Higher is better. */
  score: number;
}

/** How the words of a search match. */
export type SearchMode = "all_words" | "any_words" | "phrase";

/** A context block as the prompt shows it. */
export interface ContextBlock {
  label: string;
  description: string | null;
  content: string;
  /** Tokens of `content`. */
  tokens: number;
  /** The block's budget (writes over it are refused). */
  max_tokens: number | null;
  /** `readonly` (a profile block too), `writable`, `searchable` or `skill`. */
  kind: string;
  /** `session` or `shared`. */
  scope: string;
}

/** What a compaction did. */
export interface CompactResult {
  /** `false` when the history was too short to compact. */
  compacted: boolean;
  from_message_id: string | null;
  to_message_id: string | null;
  summary: string | null;
  /** The summarizing call's tokens; `null` when nothing was compacted. */
  usage: { input_tokens: number; output_tokens: number } | null;
}

/** A compaction overlay and the overlay that replaced it, if any. */
export interface Compaction {
  overlay: {
    id: string;
    summary: string;
    from_message_id: string;
    to_message_id: string;
    created_at: Timestamp;
    seq: number;
  };
  superseded_by: string | null;
}

/** A tool's definition in the MCP shape the client turns into AI SDK tools. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The result of running a tool on the server. */
export interface ToolResult {
  /** What the model reads. */
  result: string;
  /** The tool refused (the model reads why in `result`). */
  is_error: boolean;
}

/** The four kinds of long-term memory. */
export type MemoryKind = "fact" | "event" | "instruction" | "task";

/** Your own metadata on a memory: flat, of strings, numbers, booleans and string lists. */
export type Metadata = Record<string, string | number | boolean | string[]>;

/** A filter over metadata: keys with a value (equality) or a condition, combined with
 * `$and`, `$or` and `$not`. The server checks it and names what it refuses. */
export type MetadataFilter = { [key: string]: unknown };

/** A typed long-term memory with its provenance. */
export interface Memory {
  id: string;
  kind: MemoryKind;
  content: string;
  /** The slot it fills (a later memory with the same key supersedes it). */
  key: string | null;
  /** Questions it answers (they are searched too). */
  questions: string[];
  session_id: string | null;
  source_message_ids: string[];
  recorded_at: Timestamp;
  /** When what it says became true, when known. */
  valid_at: Timestamp | null;
  /** The memory that replaced it. */
  superseded_by: string | null;
  /** Set once forgotten: when and why. */
  forgotten: { at: Timestamp; reason: string } | null;
  /** Your own metadata (absent when none was given). */
  metadata?: Metadata;
  /** When it stops being current (absent when never): from then on recall and the default
   * list leave it out; a list with `all` still shows it. */
  expires_at?: Timestamp;
  /** Set when consolidation merged it into `superseded_by`: why and when. */
  merged?: { reason: string; at: Timestamp };
  /** The latest time the same thing was said again (a paraphrase merged into it). */
  confirmed_at?: Timestamp;
  /** The latest time recall returned it (written at most once an hour). */
  recalled_at?: Timestamp;
  /** Fields this client does not model. */
  [field: string]: unknown;
}

/** A memory of a planned merge, with its evidence against the survivor. */
export interface MergeMember {
  id: string;
  content: string;
  /** Share of rarity-weighted content words in common with the survivor (absent for it). */
  overlap?: number;
  /** Cosine of its vector and the survivor's, when both have one. */
  cosine?: number;
}

/** One consolidation group: what stays, what is merged into it, and why. */
export interface PlannedMerge {
  kind: MemoryKind;
  survivor: MergeMember;
  absorbed: MergeMember[];
  reason: string;
}

/** What a consolidation run merged (or, in a dry run, would merge). */
export interface ConsolidationReport {
  /** The run's job (absent for a dry run). */
  job_id?: string;
  dry_run: boolean;
  considered: number;
  truncated: boolean;
  pairs_judged: number;
  merges: PlannedMerge[];
  absorbed: number;
  /** Groups the LLM said do not say the same thing. */
  rejected: PlannedMerge[];
  /** Merges skipped because a memory changed meanwhile. */
  stale: number;
  /** Contradictions the LLM flagged in this run (none without an LLM or in a dry run). */
  contradictions: Contradiction[];
  degraded: Degradation[];
  usage: Usage;
}

/** One memory of a flagged contradiction, as it reads now. */
export interface ContradictionMember {
  id: string;
  content: string;
}

/** Two current memories the verification model said cannot both be true. */
export interface Contradiction {
  /** The older of the two. */
  first: ContradictionMember;
  /** The newer. */
  second: ContradictionMember;
  reason: string;
  flagged_at: Timestamp;
}

/** A memory's score in the profile block: `kind × (0.6 × said + 0.4 × used)`. */
export interface BlockScore {
  score: number;
  kind: number;
  /** Recency of recording or confirmation (half-life 30 days). */
  said: number;
  /** Recency of use in recall (half-life 7 days), 0 if never. */
  used: number;
}

/** A profile's digest: a short summary the LLM wrote from its memories. */
export interface ProfileDigest {
  text: string;
  /** The memories it draws on. */
  sources: string[];
  generated_at: Timestamp;
  /** How many memories it was written from. */
  read: number;
}

/** What a digest run did. */
export interface DigestReport {
  digest: ProfileDigest | null;
  /** Whether this call wrote it. */
  written: boolean;
  reason: string;
  usage: Usage;
}

/** What the profile block shows, and why. */
export interface BlockChoice {
  /** The block's text (`null` when the profile holds nothing it shows). */
  text: string | null;
  /** The instant the scores are of. */
  at: Timestamp;
  instructions: Memory[];
  /** The digest, when the block shows it (the memories did not all fit). */
  digest: ProfileDigest | null;
  /** Facts and open tasks, best score first. */
  candidates: { memory: Memory; score: BlockScore; chosen: boolean }[];
}

/** A page of memories. */
export interface MemoryPage {
  memories: Memory[];
  /** Pass back to get the next page; `null` on the last. */
  next_cursor: string | null;
}

/** A page of profile names, in name order. */
export interface ProfilePage {
  profiles: string[];
  /** Pass as `after` to get the next page; absent on the last. */
  next?: string;
}

/** A stored message as long-term memory keeps it (what ingest stored, before extraction). */
export interface RawMessage {
  id: string;
  session_id: string;
  role: string;
  content: string;
  created_at: Timestamp;
}

/** What a recall hit is: a typed memory, or a raw message. */
export type RecallItem = ({ type: "memory" } & Memory) | ({ type: "raw" } & RawMessage);

/** One recall hit: what matched, its fused score and its rank in each channel. */
export interface RecallHit {
  item: RecallItem;
  score: number;
  /** The channels that found it (with `explain`). */
  ranks: { channel: string; rank: number; score: number }[];
}

/** A feature that could not run, and why (a missing model, an embedder, a backend). */
export interface Degradation {
  feature: string;
  reason: string;
}

/** LLM calls and tokens of one stage (extraction, verification, synthesis, ...). */
export interface StageUsage {
  calls: number;
  requests: number;
  repairs: number;
  input_tokens: number;
  output_tokens: number;
}

/** LLM usage per stage. */
export interface Usage {
  stages: Record<string, StageUsage>;
}

/** What a recall found. */
export interface RecallResult {
  hits: RecallHit[];
  /** The synthesized answer with the ids of the memories it cites, when asked for and a
   * model is configured. */
  answer: { answer: string; citations: string[] } | null;
  /** Date arithmetic the query needed, computed (never guessed by a model). */
  temporal_facts: unknown[];
  /** The model's analysis of the query (keys, terms, HyDE), when one ran. */
  analysis: Record<string, unknown> | null;
  /** The query's search terms. */
  terms: string[];
  /** Channels that could not run, and why. */
  degraded: Degradation[];
  /** LLM calls and tokens this recall spent. */
  usage: Usage;
}

/** The stages of an ingest job; `done`, `done_with_errors` and `failed` are final. */
export type JobStatus =
  | "queued"
  | "extracting"
  | "verifying"
  | "storing"
  | "vectorizing"
  | "done"
  | "done_with_errors"
  | "failed";

/** An ingest job. */
export interface IngestJob {
  id: string;
  session_id: string;
  status: JobStatus;
  failed_stage: JobStatus | null;
  error: string | null;
  new_messages: number;
  known_messages: number;
  /** The memories the job stored. */
  memory_ids: string[];
  /** Counts of each extraction step. */
  extraction: Record<string, unknown>;
  /** Embeddings written. */
  vectorized: number;
  /** Features that could not run, and why. */
  degraded: Degradation[];
  /** LLM calls and tokens per stage. */
  usage: Usage;
  /** A failed job that was cancelled (its status is `failed`). */
  cancelled: boolean;
  /** Failed runs so far. */
  attempts: number;
  /** Fields this client does not model (messages, candidates, drafts, ...). */
  [field: string]: unknown;
}

/** An accepted ingest. */
export interface IngestAccepted {
  job: IngestJob | null;
  /** Where the job's status is read. */
  status_url: string | null;
  /** Messages this ingest sent (an ingest from a stored session). */
  shipped?: number;
  /** Messages the profile already had from this session. */
  already_shipped?: number;
  [field: string]: unknown;
}

/** A line of an ingest: a message's role, text and time. */
export interface IngestLine {
  role: string;
  content: string;
  /** Milliseconds since the epoch. */
  created_at?: number;
}

/** What ending a session shipped to its profile. */
export interface Ended {
  session: SessionInfo;
  /** `null` for an unbound session. */
  shipped: {
    profile: string;
    session: string;
    shipped: number;
    already_shipped: number;
    job: IngestJob | null;
    queued: boolean;
  } | null;
}

/** What a session import stored. */
export interface SessionImport {
  messages: number;
  inserted: number;
  already_present: number;
  sessions_created: number;
}

/** What a profile import stored. */
export interface ProfileImport {
  raw_new: number;
  raw_known: number;
  memories_new: number;
  memories_known: number;
  superseded: number;
  vectors: number;
  /** Whether the export's extraction settings became the profile's (it had none). */
  settings: boolean;
}

/** What a purge erased. */
export interface Purged {
  memory: boolean;
  vectors: number;
  raw_messages: number;
  /** Memories consolidation had merged into it, erased with it. */
  absorbed: number;
}

/** A category the server's classifier may give a profile's memories. */
export interface Category {
  /** 1 to 40 of `a-z 0-9 _ -`. */
  name: string;
  /** What belongs in it (at most 200 characters); the server returns `""` when none was given. */
  description?: string;
}

/** A profile's extraction settings (every part optional; the server refuses unknown fields).
 * The categories the classifier chooses for a memory are stored in its metadata under
 * `categories`, so `{ categories: "travel" }` filters by them. */
export interface Settings {
  /** What to keep and what to ignore (at most 4,000 characters), added to the extraction and
   * verification prompts. */
  instructions?: string;
  /** Labels the classifier chooses from (at most 32, names distinct). */
  categories?: Category[];
  /** The language memories are written in (`"English"`, `"fr"`); absent: the language of the
   * messages they come from. */
  language?: string;
}

/** A profile's own settings and what extraction uses. */
export interface SettingsView {
  /** The profile's own (`{}` when it has none). */
  settings: Settings;
  /** What extraction uses: the deployment's instructions then the profile's (joined by a
   * newline); the profile's categories and language where set, else the deployment's. */
  effective: Settings;
}

/** What a deployment is made of. */
export interface About {
  /** The backend serving each storage role (`records`, `sessions`, `text`, ...). */
  roles: Record<string, string>;
  embedder: string | null;
  /** The chat model (`null` without `[llm]`). */
  llm_model: string | null;
  /** What is off or weaker than it could be. */
  warnings: string[];
  /** Whether the server runs accepted ingest jobs itself. */
  run_jobs: boolean;
  /** The profile `/mcp` serves by default. */
  mcp_profile: string;
}
