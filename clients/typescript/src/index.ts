/**
 * `@agent-memory/client`: agent-memory's `memory serve` from TypeScript, with the design's
 * Session API and AI SDK tools.
 */
export { MemoryClient } from "./client.js";
export { SessionManager, type CreateSessionOptions, type ListSessionsOptions } from "./sessions.js";
export { Session, type AppendOptions, type SearchOptions } from "./session.js";
export {
  Profile,
  type IngestInput,
  type ListOptions,
  type RecallOptions,
  type RememberOptions,
  type WaitOptions,
} from "./profile.js";
export { aiSdkTools, type ToolRunner } from "./tools.js";
export { type Body, lines } from "./streams.js";
export { type ClientOptions, type RequestOptions, retryAfterMs } from "./http.js";
export * from "./errors.js";
export type * from "./types.js";
