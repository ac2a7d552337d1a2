/**
 * A scripted stand-in for a model (the AI SDK's mock), so the example runs with no model
 * server: a request asking to remember calls `remember`, a question calls `recall`, and
 * after a tool result it answers with what the tool returned.
 */
import type { LanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 0, text: 0, reasoning: undefined },
};

export function scriptedModel(): LanguageModel {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last?.role === "tool") {
        const output = last.content.map((part) => (part.type === "tool-result" ? JSON.stringify(part.output) : "")).join(" ");
        return {
          content: [{ type: "text", text: `From memory: ${output}` }],
          finishReason: { unified: "stop", raw: undefined },
          usage,
          warnings: [],
        };
      }
      const words = last?.role === "user" ? last.content.map((p) => (p.type === "text" ? p.text : "")).join(" ") : "";
      const call = /remember/i.test(words) && !words.includes("?")
        ? { toolName: "remember", input: { content: words.replace(/^please remember that /i, "The user says: ") } }
        : { toolName: "recall", input: { query: words } };
      return {
        content: [{ type: "tool-call", toolCallId: crypto.randomUUID(), toolName: call.toolName, input: JSON.stringify(call.input) }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}
