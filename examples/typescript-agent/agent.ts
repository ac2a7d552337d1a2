/**
 * An agent loop on the AI SDK whose memory is `memory serve`: each turn the model gets the
 * session's frozen system prompt, its history and its tools (context blocks, `recall`,
 * `remember`); the turn is stored; at the end the session ships to the long-term profile,
 * and a new session recalls what the first one learned.
 *
 *   memory serve                                  # in another terminal (or MEMORY_URL=...)
 *   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npm start
 *   npm start                                     # without OPENAI_BASE_URL: a scripted model
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { MemoryClient, type Session } from "@agent-memory/client";
import { convertToModelMessages, generateText, type LanguageModel, stepCountIs } from "ai";
import { scriptedModel } from "./scripted-model.js";

const memory = new MemoryClient({
  baseUrl: process.env.MEMORY_URL ?? "http://127.0.0.1:8787",
  apiKey: process.env.MEMORY_API_KEY,
});
const profile = process.env.MEMORY_PROFILE ?? "example-user";

function model(): LanguageModel {
  const baseURL = process.env.OPENAI_BASE_URL;
  if (baseURL === undefined || baseURL === "") return scriptedModel();
  const provider = createOpenAICompatible({ name: "openai-compatible", baseURL, apiKey: process.env.OPENAI_API_KEY });
  return provider.chatModel(process.env.OPENAI_MODEL ?? "gpt-4o-mini");
}

/** One turn: the user's words in, the model's answer (after any tool calls) out. */
async function turn(session: Session, words: string, llm: LanguageModel): Promise<string> {
  await session.appendMessage({ id: crypto.randomUUID(), role: "user", parts: [{ type: "text", text: words }] });
  const { text } = await generateText({
    model: llm,
    system: await session.freezeSystemPrompt(),
    messages: await convertToModelMessages(await session.getHistory()),
    tools: await session.tools(),
    stopWhen: stepCountIs(5),
  });
  await session.appendMessage({ id: crypto.randomUUID(), role: "assistant", parts: [{ type: "text", text }] });
  return text;
}

const llm = model();
const first = await memory.sessions.create({ profile });
console.log(`> ${await turn(first, "Please remember that I am vegetarian and live in Lyon.", llm)}`);
const ended = await first.end({ reason: "conversation over" });
if (ended.shipped?.job) await memory.profile(profile).waitForJob(ended.shipped.job.id);

const second = await memory.sessions.create({ profile });
console.log(`> ${await turn(second, "Where do I live?", llm)}`);
