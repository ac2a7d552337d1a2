/**
 * The session manager: create, get, list, fork, import and delete sessions, and search
 * across all of them.
 *
 * ```ts
 * const session = await memory.sessions.create({ name: "Trip planning", profile: "alice" });
 * for await (const info of memory.sessions.list()) console.log(info.id, info.name);
 * ```
 */
import { path, type RequestOptions, type Transport } from "./http.js";
import { Session, type SearchOptions } from "./session.js";
import { type Body, IMPORT_TIMEOUT_MS, uploadBody } from "./streams.js";
import type { SearchHit, SessionImport, SessionInfo } from "./types.js";

/** A session to create; every field is optional. */
export interface CreateSessionOptions extends RequestOptions {
  /** The id (1 to 256 bytes, no control characters); generated when absent. */
  id?: string;
  name?: string;
  model?: string;
  source?: string;
  /** The session it was forked from. */
  parentSessionId?: string;
  /** The long-term profile to bind it to (the server's `[sessions] profile` when absent). */
  profile?: string;
}

/** A page of the session list. */
export interface ListSessionsOptions extends RequestOptions {
  /** Page size (default 50, at most 1 000). */
  limit?: number;
  /** Skip this many. */
  offset?: number;
}

/** The sessions of one server (one tenant, with API keys). */
export class SessionManager {
  private readonly http: Transport;

  /** The manager over `http`. */
  constructor(http: Transport) {
    this.http = http;
  }

  /** Creates a session and returns its handle (`ConflictError` when the id is taken). */
  async create(options: CreateSessionOptions = {}): Promise<Session> {
    const info = await this.http.json<SessionInfo>("POST", "/v1/sessions", {
      ...options,
      json: {
        id: options.id,
        name: options.name,
        model: options.model,
        source: options.source,
        parent_session_id: options.parentSessionId,
        profile: options.profile,
      },
    });
    return new Session(this.http, info.id);
  }

  /** The session `id`, checked to exist (`NotFoundError` otherwise). */
  async get(id: string, options: RequestOptions = {}): Promise<Session> {
    const info = await this.http.json<SessionInfo>("GET", path`/v1/sessions/${id}`, options);
    return new Session(this.http, info.id);
  }

  /** A handle on session `id` without a request (calls fail with `NotFoundError` if absent). */
  session(id: string): Session {
    return new Session(this.http, id);
  }

  /** One page of sessions, most recently updated first. */
  async listPage(options: ListSessionsOptions = {}): Promise<SessionInfo[]> {
    const { sessions } = await this.http.json<{ sessions: SessionInfo[] }>("GET", "/v1/sessions", {
      ...options,
      query: { limit: options.limit, offset: options.offset },
    });
    return sessions;
  }

  /**
   * Every session, page by page: `for await (const info of sessions.list()) ...`. Pages
   * follow the server's order (most recently updated first), so a session updated during
   * the walk may move between pages.
   */
  async *list(options: ListSessionsOptions = {}): AsyncGenerator<SessionInfo> {
    const limit = options.limit ?? 100;
    let offset = options.offset ?? 0;
    for (;;) {
      const page = await this.listPage({ ...options, limit, offset });
      yield* page;
      if (page.length < limit) return;
      offset += page.length;
    }
  }

  /** Forks session `id` at message `at` into a new linked session holding the path up to it. */
  async fork(id: string, at: string, options: RequestOptions & { name?: string } = {}): Promise<Session> {
    const info = await this.http.json<SessionInfo>("POST", path`/v1/sessions/${id}/fork`, {
      ...options,
      json: { at, name: options.name },
    });
    return new Session(this.http, info.id);
  }

  /** Deletes session `id` with its messages, overlays and index entries. */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.http.json("DELETE", path`/v1/sessions/${id}`, options);
  }

  /** Full-text search across every session, best first. */
  async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    const { hits } = await this.http.json<{ hits: SearchHit[] }>("GET", "/v1/search", {
      ...options,
      query: { q: query, limit: options.limit, mode: options.mode },
    });
    return hits;
  }

  /**
   * Imports session export lines (`Session.export`, `memory export`): validated first, so
   * a bad line writes nothing; stored messages are counted, not doubled.
   */
  async import(body: Body, options: RequestOptions = {}): Promise<SessionImport> {
    return this.http.json("POST", "/v1/sessions/import", {
      timeoutMs: IMPORT_TIMEOUT_MS,
      ...options,
      body: await uploadBody(body),
      contentType: "application/x-ndjson",
    });
  }
}
