// The memory inspector: views over the REST API, rendered with DOM nodes and textContent
// only (stored text never becomes markup). Routes are URL hashes: #/sessions,
// #/session/ID?leaf=M&raw=1, #/profiles, #/profile/NAME?..., #/recall, #/jobs, #/health.

const view = document.getElementById("view");
const PAGE = 50;

// ---- HTTP ----------------------------------------------------------------------------

function apiKey() {
  return sessionStorage.getItem("memory-api-key") || "";
}

class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, { query, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const headers = { accept: "application/json" };
  if (apiKey()) headers.authorization = `Bearer ${apiKey()}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new HttpError(response.status, error.code || "error", error.message || `HTTP ${response.status}`);
  }
  return data;
}

// ---- DOM helpers -----------------------------------------------------------------------

/** An element with attributes and children (strings become text nodes, never markup). */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...nodes) {
  view.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

function time(ms) {
  return ms === null || ms === undefined ? "" : new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

function json(value) {
  return h("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, rows));
}

function failure(error) {
  const node = h("p", { class: "error", role: "alert" }, `${error.message}`);
  if (error.status === 401) node.append(" — enter an API key above.");
  return node;
}

function link(hash, text) {
  return h("a", { href: hash }, text);
}

function params() {
  const [, query = ""] = location.hash.split("?");
  return new URLSearchParams(query);
}

function go(hash) {
  location.hash = hash;
}

// ---- Messages ------------------------------------------------------------------------

function renderPart(part) {
  const type = String(part.type || "unknown");
  const box = (label, ...body) => h("div", { class: "part" }, h("div", { class: "kind" }, label), ...body);
  if (type === "text") return box("text", h("div", {}, part.text));
  if (type === "reasoning") return box("reasoning", h("div", { class: "meta" }, part.text));
  if (type === "step-start") return box("step start");
  if (type.startsWith("tool-") || type === "dynamic-tool") {
    const name = type === "dynamic-tool" ? part.toolName : type.slice(5);
    return box(
      `tool ${name} · ${part.state || ""} · ${part.toolCallId || ""}`,
      part.input !== undefined ? h("div", {}, "input", json(part.input)) : null,
      part.output !== undefined ? h("div", {}, "output", json(part.output)) : null,
      part.errorText ? h("div", { class: "error" }, part.errorText) : null,
    );
  }
  if (type === "file") return box(`file ${part.mediaType || ""}`, h("div", {}, part.filename || part.url || ""));
  if (type === "source-url") return box("source", h("a", { href: part.url, rel: "noreferrer noopener" }, part.title || part.url));
  if (type === "source-document") return box("source document", h("div", {}, `${part.title || ""} ${part.filename || ""}`));
  if (type.startsWith("data-")) return box(type, json(part.data));
  return box(type, json(part));
}

function renderMessage(message, { overlay = false, leaf = false, extra = [] } = {}) {
  const classes = ["message", overlay ? "overlay" : "", leaf ? "leaf" : ""].join(" ");
  return h(
    "article",
    { class: classes, "data-id": message.id },
    h("div", { class: "meta" }, `${message.role} · ${message.id}`, overlay ? " · compaction summary" : "", leaf ? " · latest leaf" : ""),
    (message.parts || []).map(renderPart),
    extra,
  );
}

// ---- Sessions ------------------------------------------------------------------------

async function sessionsView() {
  const p = params();
  const offset = Number(p.get("offset") || 0);
  const q = p.get("q") || "";
  const search = h(
    "form",
    { class: "controls", role: "search", onsubmit: (e) => { e.preventDefault(); go(`#/sessions?q=${encodeURIComponent(e.target.q.value)}`); } },
    h("label", {}, "Search messages", h("input", { name: "q", value: q, type: "search" })),
    h("button", { type: "submit" }, "Search"),
  );
  if (q) {
    const { hits } = await api("GET", "/v1/search", { query: { q, limit: 100 } });
    return show(
      h("h2", {}, `Messages matching “${q}”`),
      search,
      table(["Session", "Message", "Role", "Text"], hits.map((hit) =>
        h("tr", {}, h("td", {}, link(`#/session/${encodeURIComponent(hit.session_id)}?leaf=${encodeURIComponent(hit.message_id)}`, hit.session_id)), h("td", {}, hit.message_id), h("td", {}, hit.role), h("td", {}, hit.content)))),
    );
  }
  const { sessions } = await api("GET", "/v1/sessions", { query: { limit: PAGE, offset } });
  show(
    h("h2", {}, "Sessions"),
    search,
    table(["Session", "Name", "Profile", "Tokens (in/out)", "Updated", "Ended"], sessions.map((s) =>
      h("tr", {},
        h("td", {}, link(`#/session/${encodeURIComponent(s.id)}`, s.id)),
        h("td", {}, s.name || ""),
        h("td", {}, s.profile ? link(`#/profile/${encodeURIComponent(s.profile)}`, s.profile) : "unbound"),
        h("td", {}, `${s.usage.input_tokens} / ${s.usage.output_tokens}`),
        h("td", {}, time(s.updated_at)),
        h("td", {}, s.end_reason || "")))),
    h("div", { class: "controls" },
      offset > 0 ? link(`#/sessions?offset=${Math.max(0, offset - PAGE)}`, "Newer") : null,
      sessions.length === PAGE ? link(`#/sessions?offset=${offset + PAGE}`, "Older") : null),
  );
}

/** The latest leaf under `messageId` (the server finds it in one request, whatever the depth). */
async function leafUnder(session, messageId) {
  const { message } = await api("GET", `/v1/sessions/${encodeURIComponent(session)}/latest-leaf`, { query: { under: messageId } });
  return message ? message.id : messageId;
}

async function sessionView(id) {
  const p = params();
  const raw = p.get("raw") === "1";
  const tab = p.get("tab") || "history";
  const base = `/v1/sessions/${encodeURIComponent(id)}`;
  const [info, latest] = await Promise.all([api("GET", base), api("GET", `${base}/latest-leaf`)]);
  const leaf = p.get("leaf") || (latest.message && latest.message.id) || "";
  const here = (changes) => {
    const next = new URLSearchParams({ leaf, raw: raw ? "1" : "0", tab, ...changes });
    return `#/session/${encodeURIComponent(id)}?${next}`;
  };
  const header = [
    h("h2", {}, `Session ${id}`, info.name ? ` — ${info.name}` : ""),
    h("p", { class: "meta" },
      "Profile: ", info.profile ? link(`#/profile/${encodeURIComponent(info.profile)}`, info.profile) : "unbound",
      ` · tokens in ${info.usage.input_tokens}, out ${info.usage.output_tokens} · created ${time(info.created_at)}`,
      info.end_reason ? ` · ended: ${info.end_reason}` : ""),
    h("nav", { class: "controls", "aria-label": "Session views" },
      link(here({ tab: "history" }), "History"), link(here({ tab: "context" }), "Context")),
  ];
  if (tab === "context") return show(...header, await contextPanel(base));
  const [history, compactions] = await Promise.all([
    api("GET", `${base}/history`, { query: { leaf, raw: raw ? "true" : undefined, limit: 200, branches: "true" } }),
    api("GET", `${base}/compactions`),
  ]);
  // The path's last 200 messages: a session of 100,000 messages stays quick to show.
  const shown = history.messages;
  const total = history.total ?? shown.length;
  // Branch points among the shown messages (the server names their children).
  const forks = history.branches || {};
  const onPath = new Set(shown.map((m) => m.id));
  const firstMessage = shown.find((m) => !m.id.startsWith("compaction_"));
  const cards = shown.map((message) => {
    const kids = forks[message.id] || [];
    const extra = kids.length > 1
      ? h("div", { class: "branches" }, `${kids.length} branches:`, kids.map((kid) =>
          h("button", {
            type: "button",
            "aria-pressed": onPath.has(kid) ? "true" : "false",
            "data-branch": kid,
            onclick: async () => go(here({ leaf: await leafUnder(id, kid) })),
          }, kid)))
      : null;
    return renderMessage(message, {
      overlay: message.id.startsWith("compaction_"),
      leaf: latest.message && message.id === latest.message.id,
      extra,
    });
  });
  show(
    ...header,
    h("div", { class: "controls" },
      h("label", {}, h("span", {}, "Show"),
        h("select", { id: "raw-toggle", onchange: (e) => go(here({ raw: e.target.value })) },
          h("option", { value: "0", selected: !raw }, "with compaction summaries"),
          h("option", { value: "1", selected: raw }, "raw originals"))),
      h("span", { class: "meta" }, `${total} stored messages on this path${history.truncated ? `, the last ${shown.length} entries shown` : ""} · leaf ${leaf}`)),
    compactions.compactions.length
      ? h("details", {}, h("summary", {}, `${compactions.compactions.length} compaction overlay(s)`),
          table(["Overlay", "Covers", "Summary", "Superseded by"], compactions.compactions.map((c) =>
            h("tr", {}, h("td", {}, c.overlay.id), h("td", {}, `${c.overlay.from_message_id} → ${c.overlay.to_message_id}`), h("td", {}, c.overlay.summary), h("td", {}, c.superseded_by || "")))))
      : null,
    // Earlier entries: the page of the path that ends at the first message shown here.
    history.truncated && firstMessage
      ? h("p", { class: "controls" }, link(here({ leaf: firstMessage.id }), "Earlier messages"))
      : null,
    h("section", { "aria-label": "History" }, cards),
  );
}

async function contextPanel(base) {
  const format = params().get("format") || "openai";
  const [{ blocks, loaded_skills: loaded }, prompt, tools] = await Promise.all([
    api("GET", `${base}/context`),
    api("GET", `${base}/prompt`, { query: { check_stale: "true" } }),
    api("GET", `${base}/tools`, { query: { format } }),
  ]);
  return h("section", {},
    h("h3", {}, "Blocks"),
    table(["Label", "Kind", "Scope", "Tokens used / allowed", "Content"], blocks.map((b) =>
      h("tr", {}, h("td", {}, b.label), h("td", {}, b.kind), h("td", {}, b.scope),
        h("td", {}, `${b.tokens} / ${b.max_tokens ?? "∞"}`), h("td", {}, h("pre", {}, b.content))))),
    h("p", { id: "loaded-skills" }, "Skills loaded: ", loaded.length ? loaded.join(", ") : "none"),
    h("h3", {}, "The frozen system prompt, exactly as sent"),
    h("p", { id: "prompt-state", class: prompt.stale ? "warning" : "meta" },
      prompt.stale ? "Stale: the blocks changed since it was frozen; a refresh would change it." : "Current: a refresh would not change it."),
    h("pre", { id: "frozen-prompt" }, prompt.prompt),
    h("h3", {}, "Generated tools"),
    h("div", { class: "controls" }, ["openai", "anthropic", "mcp"].map((f) =>
      link(`${location.hash.split("?")[0]}?${new URLSearchParams({ ...Object.fromEntries(params()), format: f })}`, f === format ? `[${f}]` : f))),
    json(tools));
}

// ---- Profiles ------------------------------------------------------------------------

async function profilesView() {
  // A page at a time, in name order: a deployment may hold 100,000 profiles.
  const after = params().get("after") || undefined;
  const { profiles, next } = await api("GET", "/v1/profiles", { query: { after, limit: PAGE } });
  show(h("h2", {}, "Profiles"),
    h("form", {
      class: "controls",
      onsubmit: (e) => { e.preventDefault(); go(`#/profile/${encodeURIComponent(e.target.name.value)}`); },
    }, h("label", {}, "Open profile", h("input", { name: "name", required: true })), h("button", { type: "submit" }, "Open")),
    h("ul", { id: "profile-list" }, profiles.map((p) => h("li", {}, link(`#/profile/${encodeURIComponent(p)}`, p)))),
    h("p", { class: "controls" },
      after ? link("#/profiles", "First page") : null,
      next ? link(`#/profiles?${new URLSearchParams({ after: next })}`, "Next page") : null));
}

function status(memory) {
  if (memory.forgotten) return h("span", { class: "badge forgotten" }, "forgotten");
  if (memory.merged) return h("span", { class: "badge superseded" }, "merged");
  if (memory.superseded_by) return h("span", { class: "badge superseded" }, "superseded");
  return h("span", { class: "badge current" }, "current");
}

async function profileView(name) {
  const p = params();
  const base = `/v1/profiles/${encodeURIComponent(name)}`;
  const filters = { kind: p.get("kind") || "", key: p.get("key") || "", session: p.get("session") || "", all: p.get("all") === "true" ? "true" : "", cursor: p.get("cursor") || "" };
  const since = p.get("since") ? Date.parse(p.get("since")) : undefined;
  const page = await api("GET", `${base}/memories`, { query: { ...filters, since, limit: PAGE } });
  const memories = page.memories;
  const form = h("form", {
    class: "controls",
    onsubmit: (e) => {
      e.preventDefault();
      const f = e.target;
      const next = new URLSearchParams({ kind: f.kind.value, key: f.key.value, session: f.session.value, all: f.all.checked ? "true" : "", since: f.since.value });
      go(`#/profile/${encodeURIComponent(name)}?${next}`);
    },
  },
    h("label", {}, "Kind", h("select", { name: "kind" }, ["", "fact", "event", "instruction", "task"].map((k) => h("option", { value: k, selected: k === filters.kind }, k || "any")))),
    h("label", {}, "Key", h("input", { name: "key", value: filters.key })),
    h("label", {}, "Session", h("input", { name: "session", value: filters.session })),
    h("label", {}, "Recorded since", h("input", { name: "since", type: "date", value: p.get("since") || "" })),
    h("label", {}, "Superseded and forgotten too", h("input", { name: "all", type: "checkbox", checked: filters.all === "true" })),
    h("button", { type: "submit" }, "Filter"));
  const detail = h("section", { id: "memory-detail", "aria-live": "polite" });
  show(
    h("h2", {}, `Profile ${name}`),
    h("p", {}, link(`#/recall?profile=${encodeURIComponent(name)}`, "Recall in this profile"), " · ", link(`#/jobs?profile=${encodeURIComponent(name)}`, "Its jobs"),
      " · ", link(`#/block/${encodeURIComponent(name)}`, "Its prompt block"), " · ", link(`#/consolidate/${encodeURIComponent(name)}`, "Consolidation")),
    form,
    table(["Status", "Kind", "Key", "Content", "Recorded", ""], memories.map((m) =>
      h("tr", { "data-memory": m.id },
        h("td", {}, status(m)), h("td", {}, m.kind), h("td", {}, m.key || ""), h("td", { class: "content" }, m.content),
        h("td", { class: "optional" }, time(m.recorded_at)),
        h("td", {},
          h("button", { type: "button", onclick: () => memoryDetail(name, m, detail) }, "Chain and provenance"), " ",
          m.forgotten ? null : h("button", { type: "button", "data-action": "forget", onclick: () => forget(name, m) }, "Forget"), " ",
          h("button", { type: "button", "data-action": "purge", onclick: () => purge(name, m) }, "Purge"))))),
    page.next_cursor ? link(`#/profile/${encodeURIComponent(name)}?${new URLSearchParams({ ...Object.fromEntries(p), cursor: page.next_cursor })}`, "Next page") : null,
    detail,
  );
}

async function memoryDetail(name, memory, target) {
  const base = `/v1/profiles/${encodeURIComponent(name)}`;
  const { memories: absorbed } = await api("GET", `${base}/memories/${encodeURIComponent(memory.id)}/merged`);
  let chain = [memory];
  if (memory.key) {
    const all = [];
    let cursor;
    do {
      const page = await api("GET", `${base}/memories`, { query: { key: memory.key, all: "true", limit: 1000, cursor } });
      all.push(...page.memories);
      cursor = page.next_cursor;
    } while (cursor && all.length < 5000);
    chain = all.sort((a, b) => a.recorded_at - b.recorded_at);
  }
  target.replaceChildren(
    h("h3", {}, `Memory ${memory.id}`),
    h("p", {}, h("strong", {}, "Version chain"), memory.key ? ` (key ${memory.key}, oldest first)` : " (no key: no chain)"),
    h("ol", { class: "chain" }, chain.map((m) => h("li", {}, status(m), m.content,
      h("span", { class: "meta" }, ` · recorded ${time(m.recorded_at)}${m.valid_at ? ` · valid ${time(m.valid_at)}` : ""}${m.superseded_by ? ` · superseded by ${m.superseded_by}` : ""}${m.forgotten ? ` · forgotten: ${m.forgotten.reason}` : ""}`)))),
    h("p", {}, h("strong", {}, "Provenance")),
    memory.session_id
      ? h("p", {}, "Session ", link(`#/session/${encodeURIComponent(memory.session_id)}`, memory.session_id),
          memory.source_message_ids.length ? [" · messages: ", memory.source_message_ids.map((id) => [link(`#/session/${encodeURIComponent(memory.session_id)}?leaf=${encodeURIComponent(id)}`, id), " "])] : " · remembered directly")
      : h("p", {}, "No session recorded (remembered directly)."),
    h("p", {}, h("strong", {}, "Search questions")),
    memory.questions.length ? h("ul", {}, memory.questions.map((q) => h("li", {}, q))) : h("p", { class: "meta" }, "none"),
    h("p", {}, h("strong", {}, "Consolidation")),
    memory.merged
      ? h("p", { class: "merged-into" }, `Merged into ${memory.superseded_by} on ${time(memory.merged.at)}: ${memory.merged.reason}`)
      : "",
    absorbed.length
      ? h("ul", { class: "absorbed" }, absorbed.map((m) => h("li", {}, m.content, h("span", { class: "meta" }, ` · ${m.id} · merged ${time(m.merged.at)}: ${m.merged.reason}`))))
      : h("p", { class: "meta" }, memory.merged ? "" : "Nothing was merged into it."),
  );
  target.focus?.();
}

// ---- The prompt block and consolidation -----------------------------------------------

async function blockView(name) {
  const p = params();
  const tokens = p.get("tokens") || undefined;
  const choice = await api("GET", `/v1/profiles/${encodeURIComponent(name)}/block`, { query: { tokens, top: 100 } });
  const { digest } = await api("GET", `/v1/profiles/${encodeURIComponent(name)}/digest`);
  show(
    h("h2", {}, `Prompt block of ${name}`),
    h("p", {}, link(`#/profile/${encodeURIComponent(name)}`, "Back to the profile"), " · scores at ", time(choice.at),
      " · score = kind × (0.6 × said + 0.4 × used); said halves in 30 days, used in 7"),
    h("form", {
      class: "controls",
      onsubmit: (e) => { e.preventDefault(); go(`#/block/${encodeURIComponent(name)}?${new URLSearchParams({ tokens: e.target.tokens.value })}`); },
    }, h("label", {}, "Budget (tokens)", h("input", { name: "tokens", type: "number", min: "1", value: tokens || "" })), h("button", { type: "submit" }, "Choose")),
    h("pre", { id: "block-text" }, choice.text ?? "(empty: nothing the block shows)"),
    h("h3", {}, "Digest"),
    digest
      ? h("div", { id: "digest" }, h("p", {}, digest.text),
          h("p", { class: "meta" }, `written ${time(digest.generated_at)} from ${digest.read} memories · ${choice.digest ? "shown: the memories do not all fit" : "not shown: the memories fit"} · draws on `,
            digest.sources.flatMap((id) => [h("code", {}, id), " "])))
      : h("p", { class: "meta", id: "digest" }, "No digest (written by the [llm] once the profile has memories; shown when they do not fit)."),
    h("h3", {}, `Instructions shown: ${choice.instructions.length}`),
    h("h3", {}, "Facts and open tasks, best first"),
    table(["Shown", "Score", "Kind weight", "Said", "Used", "Kind", "Content"], choice.candidates.map((c) =>
      h("tr", { "data-candidate": c.memory.id, class: c.chosen ? "chosen" : "" },
        h("td", {}, c.chosen ? "yes" : "no"), h("td", {}, c.score.score.toFixed(3)), h("td", {}, c.score.kind.toFixed(1)),
        h("td", {}, c.score.said.toFixed(2)), h("td", {}, c.score.used.toFixed(2)), h("td", {}, c.memory.kind),
        h("td", { class: "content" }, c.memory.content)))),
  );
}

function mergeList(merges, caption) {
  return h("section", {},
    h("h3", {}, caption),
    merges.length ? h("ol", { class: "merges" }, merges.map((m) => h("li", { "data-survivor": m.survivor.id },
      h("strong", {}, "keeps "), m.survivor.content, h("span", { class: "meta" }, ` · ${m.kind} · ${m.survivor.id}`),
      h("ul", {}, m.absorbed.map((a) => h("li", {}, "absorbs ", a.content,
        h("span", { class: "meta" }, ` · ${a.id}${a.overlap === undefined ? "" : ` · words ${a.overlap.toFixed(2)}`}${a.cosine === undefined ? "" : ` · vectors ${a.cosine.toFixed(2)}`}`)))),
      h("p", { class: "meta" }, `why: ${m.reason}`))))
      : h("p", { class: "meta" }, "none"));
}

function contradictionList(list, caption, id) {
  return h("section", { id },
    h("h3", {}, caption),
    list.length ? h("ol", { class: "contradictions" }, list.map((c) => h("li", { "data-first": c.first.id, "data-second": c.second.id },
      c.first.content, h("span", { class: "meta" }, ` · ${c.first.id}`),
      h("strong", {}, " contradicts "),
      c.second.content, h("span", { class: "meta" }, ` · ${c.second.id}`),
      h("p", { class: "meta" }, `why: ${c.reason} · flagged ${time(c.flagged_at)}`))))
      : h("p", { class: "meta" }, "none"));
}

async function consolidateView(name) {
  const base = `/v1/profiles/${encodeURIComponent(name)}`;
  const plan = await api("POST", `${base}/consolidate`, { body: { dry_run: true } });
  const { contradictions } = await api("GET", `${base}/contradictions`);
  const result = h("section", { id: "consolidation-result", "aria-live": "polite" });
  show(
    h("h2", {}, `Consolidation of ${name}`),
    h("p", {}, link(`#/profile/${encodeURIComponent(name)}`, "Back to the profile"),
      ` · ${plan.considered} memories read, ${plan.pairs_judged} pairs judged; ${plan.absorbed} would be merged into ${plan.merges.length} survivor(s) (nothing is deleted: each stays, superseded, with its reason)`),
    plan.degraded.length ? h("ul", { class: "meta" }, plan.degraded.map((d) => h("li", {}, `${d.feature}: ${d.reason}`))) : null,
    mergeList(plan.merges, "Planned merges"),
    plan.rejected.length ? mergeList(plan.rejected, "Not merged: the LLM disagreed") : null,
    plan.merges.length ? h("button", {
      type: "button",
      "data-action": "consolidate",
      onclick: async () => {
        const done = await api("POST", `${base}/consolidate`, { body: { dry_run: false } });
        result.replaceChildren(h("p", {}, `Merged ${done.absorbed} memories into ${done.merges.length} survivor(s)${done.stale ? `; ${done.stale} skipped (changed meanwhile)` : ""}.`),
          mergeList(done.merges, "Written"),
          contradictionList(done.contradictions, "Contradictions flagged by this run", "flagged-now"));
      },
    }, "Merge these") : null,
    result,
    contradictionList(contradictions, "Contradictions flagged by earlier runs (both memories still current)", "contradictions"),
  );
}

async function forget(name, memory) {
  if (!confirm(`Forget this memory?\n\n${memory.content}\n\nIt stays stored, marked forgotten, for audit; recall and the current list no longer show it.`)) return;
  await api("DELETE", `/v1/profiles/${encodeURIComponent(name)}/memories/${encodeURIComponent(memory.id)}`, { query: { reason: "forgotten in the inspector" } });
  route();
}

async function purge(name, memory) {
  const withSources = confirm(`Purge this memory for good?\n\n${memory.content}\n\nPurge erases the memory record and its vectors; it cannot be undone.\nOK also erases the raw messages it came from; Cancel asks once more without them.`);
  if (!withSources && !confirm("Purge the memory and its vectors only (keeping its raw messages)?")) return;
  await api("POST", `/v1/profiles/${encodeURIComponent(name)}/memories/${encodeURIComponent(memory.id)}/purge`, { query: { with_sources: withSources ? "true" : "false" } });
  route();
}

// ---- Recall playground ---------------------------------------------------------------

async function profileChooser(selected, hashBase) {
  // The first names only (a deployment may hold 100,000): others are reached from the
  // profiles page or by name in the address.
  const { profiles } = await api("GET", "/v1/profiles", { query: { limit: 500 } });
  if (selected && !profiles.includes(selected)) profiles.unshift(selected);
  return h("label", {}, "Profile", h("select", {
    name: "profile",
    onchange: (e) => go(`${hashBase}?profile=${encodeURIComponent(e.target.value)}`),
  }, h("option", { value: "" }, "choose"), profiles.map((p) => h("option", { value: p, selected: p === selected }, p))));
}

async function recallView() {
  const p = params();
  const profile = p.get("profile") || "";
  const query = p.get("q") || "";
  const form = h("form", {
    class: "controls",
    role: "search",
    onsubmit: (e) => { e.preventDefault(); go(`#/recall?${new URLSearchParams({ profile: e.target.profile.value, q: e.target.q.value })}`); },
  }, await profileChooser(profile, "#/recall"), h("label", {}, "Query", h("input", { name: "q", value: query, size: 50 })), h("button", { type: "submit" }, "Recall"));
  if (!profile || !query) return show(h("h2", {}, "Recall playground"), form);
  const result = await api("POST", `/v1/profiles/${encodeURIComponent(profile)}/recall`, { body: { query, explain: true, answer: true } });
  const channels = [...new Set(result.hits.flatMap((hit) => hit.ranks.map((r) => r.channel)))];
  show(
    h("h2", {}, "Recall playground"),
    form,
    result.answer ? h("section", {}, h("h3", {}, "Answer"), h("p", {}, result.answer.answer), h("p", { class: "meta" }, `cites ${result.answer.citations.join(", ")}`)) : null,
    h("h3", {}, "Fused order"),
    table(["#", "Fused score", "Type", "Content", ...channels.map((c) => `${c} rank (score)`)], result.hits.map((hit, i) => {
      const byChannel = Object.fromEntries(hit.ranks.map((r) => [r.channel, r]));
      return h("tr", { "data-hit": hit.item.id },
        h("td", {}, i + 1), h("td", {}, hit.score.toFixed(4)), h("td", {}, hit.item.type === "memory" ? `memory · ${hit.item.kind}` : `message · ${hit.item.role}`),
        h("td", {}, hit.item.content),
        channels.map((c) => h("td", { "data-channel": c }, byChannel[c] ? `${byChannel[c].rank} (${byChannel[c].score.toPrecision(3)})` : "—")));
    })),
    h("h3", {}, "Date facts"),
    result.temporal_facts.length ? json(result.temporal_facts) : h("p", { class: "meta" }, "none"),
    h("h3", {}, "Degraded"),
    result.degraded.length ? h("ul", {}, result.degraded.map((d) => h("li", { class: "warning" }, `${d.feature}: ${d.reason}`))) : h("p", { class: "meta" }, "nothing"),
    h("h3", {}, "Model usage"),
    json(result.usage),
  );
}

// ---- Jobs ----------------------------------------------------------------------------

let refresh;

async function jobsView() {
  const profile = params().get("profile") || "";
  const chooser = h("div", { class: "controls" }, await profileChooser(profile, "#/jobs"));
  if (!profile) return show(h("h2", {}, "Ingest jobs"), chooser);
  const { jobs } = await api("GET", `/v1/profiles/${encodeURIComponent(profile)}/jobs`);
  const final = new Set(["done", "done_with_errors", "failed"]);
  show(
    h("h2", {}, `Ingest jobs of ${profile}`),
    chooser,
    table(["Job", "Session", "State", "Failed runs", "Failed stage", "Error", "Messages (new / known)", "Memories", "LLM calls · tokens in/out"], jobs.map((job) => {
      const total = Object.values(job.usage.stages).reduce((t, s) => ({ calls: t.calls + s.calls, input: t.input + s.input_tokens, output: t.output + s.output_tokens }), { calls: 0, input: 0, output: 0 });
      return h("tr", { "data-job": job.id },
        h("td", {}, job.id), h("td", {}, link(`#/session/${encodeURIComponent(job.session_id)}`, job.session_id)),
        h("td", {}, job.status, job.cancelled ? " (cancelled)" : ""), h("td", { "data-attempts": "" }, job.attempts ?? ""), h("td", {}, job.failed_stage || ""), h("td", { class: "error" }, job.error || ""),
        h("td", {}, `${job.new_messages} / ${job.known_messages}`), h("td", {}, job.memory_ids.length),
        h("td", {}, `${total.calls} · ${total.input}/${total.output}`, h("details", {}, h("summary", {}, "per stage"), json(job.usage.stages))));
    })),
  );
  if (jobs.some((job) => !final.has(job.status))) {
    refresh = setTimeout(() => { if (location.hash.startsWith("#/jobs")) route(); }, 2000);
  }
}

// ---- Health --------------------------------------------------------------------------

async function healthView() {
  const [ready, about] = await Promise.all([api("GET", "/readyz").catch((e) => ({ status: e.message })), api("GET", "/v1/about")]);
  show(
    h("h2", {}, "Health"),
    h("p", {}, `Readiness: ${ready.status}`),
    table(["Role", "Backend"], Object.entries(about.roles).map(([role, backend]) => h("tr", {}, h("td", {}, role), h("td", {}, backend)))),
    h("p", {}, `Embedder: ${about.embedder || "unknown"} · model: ${about.llm_model || "none"} · ingest jobs run ${about.run_jobs ? "in this server" : "in memory worker processes"} · MCP profile ${about.mcp_profile}`),
    about.warnings.length ? h("ul", {}, about.warnings.map((w) => h("li", { class: "warning" }, w))) : h("p", {}, "No warnings."),
  );
}

// ---- Routing -------------------------------------------------------------------------

async function route() {
  clearTimeout(refresh);
  const [path] = location.hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) {
    a.toggleAttribute("aria-current", path.startsWith(a.getAttribute("href").slice(1).replace(/s$/, "")));
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  try {
    if (parts[0] === "session" && parts[1]) await sessionView(parts[1]);
    else if (parts[0] === "profile" && parts[1]) await profileView(parts[1]);
    else if (parts[0] === "profiles") await profilesView();
    else if (parts[0] === "block" && parts[1]) await blockView(parts[1]);
    else if (parts[0] === "consolidate" && parts[1]) await consolidateView(parts[1]);
    else if (parts[0] === "recall") await recallView();
    else if (parts[0] === "jobs") await jobsView();
    else if (parts[0] === "health") await healthView();
    else await sessionsView();
  } catch (error) {
    show(failure(error));
  }
}

document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("memory-api-key", document.getElementById("api-key").value.trim());
  route();
});
document.getElementById("api-key").value = apiKey();
window.addEventListener("hashchange", route);
route();
