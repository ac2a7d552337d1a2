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
import type { About } from "./types.js";

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

  /** The names of the profiles that hold anything. */
  async profiles(options: RequestOptions = {}): Promise<string[]> {
    const { profiles } = await this.http.json<{ profiles: string[] }>("GET", "/v1/profiles", options);
    return profiles;
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
