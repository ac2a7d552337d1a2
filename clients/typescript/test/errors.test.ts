/**
 * Errors, API keys and retries: typed errors from a real server (keys, tenants, bad input,
 * a 429 retried after its `Retry-After`), and the transport's timeouts, cancellation,
 * connection failures and 503 handling against small local stubs.
 */
import assert from "node:assert/strict";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import {
  AbortedError,
  ApiError,
  ConflictError,
  ConnectionError,
  InvalidInputError,
  MemoryClient,
  NotFoundError,
  RateLimitedError,
  retryAfterMs,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
} from "../src/index.js";
import { keyEntry, serve, type Served } from "./harness.js";

let server: Served;
const acmeKey = "mk_test_acme_0123456789abcdef";
const zenKey = "mk_test_zen_0123456789abcdef";
const slowKey = "mk_test_slow_0123456789abcdef";

before(async () => {
  server = await serve({
    config: "[memory]\nembedder = \"none\"\n",
    keys:
      keyEntry("acme", acmeKey) +
      keyEntry("zen", zenKey) +
      keyEntry("slow", slowKey, "requests_per_second = 1\nburst = 1"),
  });
});

after(async () => {
  await server.stop();
});

test("a missing or unknown key is refused with UnauthorizedError", async () => {
  const anonymous = new MemoryClient({ baseUrl: server.baseUrl });
  await assert.rejects(anonymous.sessions.create(), (e: unknown) => {
    assert.ok(e instanceof UnauthorizedError);
    assert.equal(e.status, 401);
    assert.equal(e.code, "unauthorized");
    assert.ok(e.message.length > 0);
    return true;
  });
  const wrong = new MemoryClient({ baseUrl: server.baseUrl, apiKey: "mk_wrong" });
  await assert.rejects(wrong.profiles(), UnauthorizedError);
  // Health needs no key.
  await anonymous.health();
});

test("each key reaches only its tenant's sessions", async () => {
  const acme = new MemoryClient({ baseUrl: server.baseUrl, apiKey: acmeKey });
  const zen = new MemoryClient({ baseUrl: server.baseUrl, apiKey: zenKey });
  const session = await acme.sessions.create({ id: "shared-name" });
  assert.equal((await acme.sessions.get("shared-name")).id, session.id);
  await assert.rejects(zen.sessions.get("shared-name"), (e: unknown) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.code, "not_found");
    assert.ok(e.requestId !== undefined, "the server's request id is kept");
    return true;
  });
  await assert.rejects(acme.sessions.create({ id: "shared-name" }), ConflictError);
  await assert.rejects(acme.sessions.create({ id: "a\tcontrol character" }), (e: unknown) => {
    assert.ok(e instanceof InvalidInputError);
    assert.equal(e.status, 400);
    return true;
  });
});

test("a 429 is retried after Retry-After; without retries it is a RateLimitedError", async () => {
  let statuses: number[] = [];
  const counting: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };
  const strict = new MemoryClient({ baseUrl: server.baseUrl, apiKey: slowKey, maxRetries: 0, fetch: counting });
  await strict.profiles();
  await assert.rejects(strict.profiles(), (e: unknown) => {
    assert.ok(e instanceof RateLimitedError);
    assert.equal(e.status, 429);
    assert.equal(e.code, "rate_limited");
    assert.ok(e.retryAfterMs !== undefined && e.retryAfterMs > 0, `Retry-After: ${String(e.retryAfterMs)}`);
    return true;
  });

  statuses = [];
  const patient = new MemoryClient({ baseUrl: server.baseUrl, apiKey: slowKey, maxRetries: 5, fetch: counting });
  for (let i = 0; i < 3; i++) assert.ok(Array.isArray(await patient.profiles()));
  assert.ok(statuses.includes(429), `some attempts were limited: ${statuses.join(",")}`);
  assert.equal(statuses.filter((s) => s === 200).length, 3);

  // The retries are bounded: a caller's signal stops the wait between attempts.
  const controller = new AbortController();
  await patient.profiles();
  const pending = patient.profiles({ signal: controller.signal });
  setTimeout(() => {
    controller.abort();
  }, 50);
  await assert.rejects(pending, AbortedError);
});

/** A local HTTP stub answering with `handler`. */
async function stub(
  handler: (hit: number, respond: (status: number, body: string, headers?: Record<string, string>) => void) => void,
): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const http: HttpServer = createServer((_request, response) => {
    hits += 1;
    handler(hits, (status, body, headers = {}) => {
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => {
          resolve();
        });
      }),
  };
}

test("timeouts, cancellation and an unreachable server are typed", async () => {
  const hang = await stub(() => {
    // never answers
  });
  try {
    const client = new MemoryClient({ baseUrl: hang.url, timeoutMs: 200, maxRetries: 0 });
    await assert.rejects(client.profiles(), TimeoutError);
    const controller = new AbortController();
    const pending = client.profiles({ signal: controller.signal, timeoutMs: 10_000 });
    controller.abort();
    await assert.rejects(pending, AbortedError);
    await assert.rejects(client.profiles({ signal: AbortSignal.abort() }), AbortedError);
  } finally {
    await hang.close();
  }
  const closed = await stub(() => undefined);
  const url = closed.url;
  await closed.close();
  await assert.rejects(new MemoryClient({ baseUrl: url, maxRetries: 0 }).profiles(), ConnectionError);
});

test("a busy 503 is retried for any method; a timed-out POST is not repeated", async () => {
  const busy = await stub((hit, respond) => {
    if (hit === 1) {
      respond(503, JSON.stringify({ error: { code: "busy", message: "too many requests at once" } }), {
        "retry-after": "0",
      });
    } else {
      respond(201, JSON.stringify({ id: "s1" }));
    }
  });
  try {
    const client = new MemoryClient({ baseUrl: busy.url });
    assert.equal((await client.sessions.create()).id, "s1");
    assert.equal(busy.hits(), 2);
  } finally {
    await busy.close();
  }
  const slow = await stub((_hit, respond) => {
    respond(503, JSON.stringify({ error: { code: "timeout", message: "the request took too long" } }), {
      "retry-after": "0",
    });
  });
  try {
    const client = new MemoryClient({ baseUrl: slow.url, maxRetries: 2 });
    await assert.rejects(client.sessions.create(), (e: unknown) => {
      assert.ok(e instanceof UnavailableError);
      assert.equal(e.code, "timeout");
      return true;
    });
    assert.equal(slow.hits(), 1, "a POST that may have run is not sent again");
    await assert.rejects(client.sessions.delete("s1"), UnavailableError);
    assert.equal(slow.hits(), 2, "nor is a DELETE (a repeat would answer 404 for a delete that worked)");
    await assert.rejects(client.profiles(), UnavailableError);
    assert.equal(slow.hits(), 5, "a GET is retried twice");
  } finally {
    await slow.close();
  }
  const proxy = await stub((_hit, respond) => {
    respond(502, "<html>bad gateway</html>");
  });
  try {
    await assert.rejects(new MemoryClient({ baseUrl: proxy.url }).profiles(), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 502);
      assert.equal(e.code, "internal");
      assert.match(e.message, /bad gateway/);
      return true;
    });
  } finally {
    await proxy.close();
  }
});

test("Retry-After reads seconds and HTTP dates", () => {
  assert.equal(retryAfterMs("2"), 2000);
  assert.equal(retryAfterMs("0.5"), 500);
  assert.equal(retryAfterMs(null), undefined);
  assert.equal(retryAfterMs("soon"), undefined);
  const later = retryAfterMs(new Date(Date.now() + 5000).toUTCString());
  assert.ok(later !== undefined && later > 3000 && later <= 5000, String(later));
});

test("waitForJob stops at every final status", async () => {
  const statuses = ["queued", "extracting", "done_with_errors"];
  const jobs = await stub((hit, respond) => {
    respond(200, JSON.stringify({ id: "j1", status: statuses[Math.min(hit, statuses.length) - 1] }));
  });
  try {
    const job = await new MemoryClient({ baseUrl: jobs.url }).profile("p").waitForJob("j1", { intervalMs: 10 });
    assert.equal(job.status, "done_with_errors");
    assert.equal(jobs.hits(), 3);
  } finally {
    await jobs.close();
  }
});

test("leaving an export early closes its connection", async () => {
  const state = { closed: false };
  const endless: HttpServer = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/x-ndjson" });
    const timer = setInterval(() => response.write('{"kind":"line"}\n'), 5);
    request.socket.on("close", () => {
      state.closed = true;
      clearInterval(timer);
    });
  });
  await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
  const { port } = endless.address() as AddressInfo;
  try {
    const session = new MemoryClient({ baseUrl: `http://127.0.0.1:${port}` }).sessions.session("s");
    let seen = 0;
    for await (const line of session.exportLines()) {
      assert.equal(line, '{"kind":"line"}');
      if (++seen === 3) break;
    }
    for (let i = 0; i < 100 && !state.closed; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(state.closed, "the client closed the connection");
  } finally {
    endless.closeAllConnections();
    await new Promise<void>((resolve) => {
      endless.close(() => {
        resolve();
      });
    });
  }
});

test("a Retry-After over maxRetryDelayMs is thrown at once", async () => {
  const limited = await stub((_hit, respond) => {
    respond(429, JSON.stringify({ error: { code: "rate_limited", message: "slow down" } }), { "retry-after": "120" });
  });
  try {
    const client = new MemoryClient({ baseUrl: limited.url, maxRetryDelayMs: 5_000 });
    await assert.rejects(client.profiles(), (e: unknown) => {
      assert.ok(e instanceof RateLimitedError);
      assert.equal(e.retryAfterMs, 120_000);
      return true;
    });
    assert.equal(limited.hits(), 1);
  } finally {
    await limited.close();
  }
});
