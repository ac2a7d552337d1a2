/**
 * NDJSON streams for export and import: exports arrive as byte streams and read as lines;
 * imports take a string, lines, bytes, a byte stream or any (async) iterable of lines.
 */

/** An import's default per-attempt timeout: the server gives imports ten times its request
 * time limit (300 s by default). */
export const IMPORT_TIMEOUT_MS = 300_000;

/** What an import accepts: NDJSON text, its lines, its bytes, or a stream of either. */
export type Body =
  | string
  | Uint8Array
  | ReadableStream<Uint8Array>
  | Iterable<string>
  | AsyncIterable<string>;

/** The lines of an NDJSON byte stream, without their newlines (blank lines skipped). */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let pending = "";
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        break;
      }
      pending += decoder.decode(value, { stream: true });
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline).replace(/\r$/, "");
        pending = pending.slice(newline + 1);
        if (line.length > 0) yield line;
        newline = pending.indexOf("\n");
      }
    }
    pending += decoder.decode();
    if (pending.trim().length > 0) yield pending;
  } finally {
    // A caller that stops early (a `break`) closes the connection, and the server's export.
    if (!finished) await reader.cancel();
    reader.releaseLock();
  }
}

/**
 * An import body, read into memory: request streams are not sent by every `fetch` runtime
 * (browsers among them), the server reads the whole body before it writes anything, and a
 * buffered body can be sent again when a retry is due.
 */
export async function uploadBody(body: Body): Promise<BodyInit> {
  if (typeof body === "string") return body;
  // Any Uint8Array is sendable; the DOM typings ask for one over an ArrayBuffer.
  if (body instanceof Uint8Array) return body as Uint8Array<ArrayBuffer>;
  if (body instanceof ReadableStream) return new Response(body).blob();
  const parts: string[] = [];
  const add = (line: string): void => {
    parts.push(line.endsWith("\n") ? line : `${line}\n`);
  };
  if (Symbol.iterator in body) {
    for (const line of body) add(line);
  } else {
    for await (const line of body) add(line);
  }
  return parts.join("");
}
