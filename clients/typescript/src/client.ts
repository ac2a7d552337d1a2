/**
 * The client of one `memory serve`: `sessions` for session memory, `profile(name)` for
 * long-term memory.
 *
 * ```ts
 * import { MemoryClient } from "@agent-memory/client";
 * const memory = new MemoryClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.MEMORY_API_KEY });
 * ```
 */
import { type ClientOptions, type RequestOptions, Transport } from "./http.js";
import { Profile } from "./profile.js";
import { SessionManager } from "./sessions.js";
import type { About, ProfilePage } from "./types.js";

/** A client of one server (one tenant, with API keys). */
export class MemoryClient {
  /** The transport every call goes through. */
  readonly http: Transport;
  /** Sessions: create, list, fork, delete, search. */
  readonly sessions: SessionManager;

  /** A client with `options` (the defaults reach a local `memory serve`). */
  constructor(options: ClientOptions = {}) {
    this.http = new Transport(options);
    this.sessions = new SessionManager(this.http);
  }

  /** The long-term profile `name` (no request is made). */
  profile(name: string): Profile {
    return new Profile(this.http, name);
  }

  /** The names of the profiles that hold anything, in name order (every page read). */
  async profiles(options: RequestOptions = {}): Promise<string[]> {
    const names: string[] = [];
    for await (const name of this.profileNames({}, options)) names.push(name);
    return names;
  }

  /** One page of profile names, in name order: at most `limit` (the server's default 1,000) after `after`. */
  profilesPage(page: { after?: string; limit?: number } = {}, options: RequestOptions = {}): Promise<ProfilePage> {
    return this.http.json<ProfilePage>("GET", "/v1/profiles", { ...options, query: { after: page.after, limit: page.limit } });
  }

  /** Every profile name, in name order, read a page at a time (for 100,000 profiles, a hundred requests). */
  async *profileNames(page: { after?: string; limit?: number } = {}, options: RequestOptions = {}): AsyncGenerator<string> {
    let after = page.after;
    for (;;) {
      const { profiles, next } = await this.profilesPage({ after, limit: page.limit }, options);
      yield* profiles;
      if (next === undefined) return;
      after = next;
    }
  }

  /** Liveness: resolves when the server answers. */
  async health(options: RequestOptions = {}): Promise<void> {
    await this.http.json("GET", "/healthz", options);
  }

  /** Readiness: what each backend reported (throws `UnavailableError` when one is down). */
  ready(options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.http.json("GET", "/readyz", options);
  }

  /** What the deployment is made of: each storage role's backend, the models, warnings. */
  about(options: RequestOptions = {}): Promise<About> {
    return this.http.json("GET", "/v1/about", options);
  }

  /** The server's OpenAPI document. */
  openapi(options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.http.json("GET", "/openapi.json", options);
  }
}
