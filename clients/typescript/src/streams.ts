/**
 * NDJSON streams for export and import: exports arrive as byte streams and read as lines;
 * imports take a string, lines, bytes, a byte stream or any (async) iterable of lines.
 */

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
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
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
    reader.releaseLock();
  }
}

/** An import body as something `fetch` sends. */
export function uploadBody(body: Body): BodyInit {
  if (typeof body === "string" || body instanceof Uint8Array || body instanceof ReadableStream) {
    return body as BodyInit;
  }
  if (Symbol.iterator in body) {
    return [...body].map((line) => (line.endsWith("\n") ? line : `${line}\n`)).join("");
  }
  const iterator = body[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done === true) {
        controller.close();
        return;
      }
      const line = next.value;
      controller.enqueue(encoder.encode(line.endsWith("\n") ? line : `${line}\n`));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}
