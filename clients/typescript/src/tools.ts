/**
 * Server tool definitions as AI SDK tools: the JSON input schema goes through `jsonSchema`,
 * and `execute` runs the tool on the server and returns the text the model reads (a
 * refusal included: the model reads why, as the server's tool executor intends).
 */
import { jsonSchema, tool, type ToolSet } from "ai";
import type { ToolDefinition, ToolResult } from "./types.js";

/** Runs a tool on the server. */
export type ToolRunner = (name: string, input: unknown, signal: AbortSignal | undefined) => Promise<ToolResult>;

/** The definitions as a `ToolSet` whose tools run through `run`. */
export function aiSdkTools(definitions: ToolDefinition[], run: ToolRunner): ToolSet {
  const tools: ToolSet = {};
  for (const definition of definitions) {
    tools[definition.name] = tool({
      description: definition.description,
      inputSchema: jsonSchema<Record<string, unknown>>(definition.inputSchema),
      execute: async (input, { abortSignal }) => (await run(definition.name, input, abortSignal)).result,
    });
  }
  return tools;
}
