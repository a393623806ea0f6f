// oe serve's dashboard (docs/serve.md, "Dashboard"): the runs list, a run's page (graph coloured
// live, timeline, node detail, state, approvals), the start form and the approvals waiting.
// Plain JavaScript, no framework, nothing fetched but this origin's API. Every value from the
// server reaches the page through textContent or an attribute set one by one, never as HTML;
// the graph's SVG is copied element by element through an allow-list.

const TOKEN_KEY = "oe.token";
const SVG_NS = "http://www.w3.org/2000/svg";
const RUN_STATUSES = ["queued", "running", "waiting", "succeeded", "partial", "failed", "cancelled", "interrupted", "resumed"];
const FINISHED = new Set(["succeeded", "failed", "partial", "cancelled", "interrupted", "waiting", "resumed"]);

// ---------------------------------------------------------------- DOM

// h("div", {class: "x", text: "y", onclick: fn}, child, ...): an element; string children become
// text nodes, null/false are skipped, arrays are flattened.
function h(tag, props, ...children) {
  const element = document.createElement(tag);
  setProps(element, props);
  append(element, children);
  return element;
}

// The same in the SVG namespace (the fallback graph).
function s(tag, attrs, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") {
      element.textContent = value;
    } else if (key === "class") {
      element.setAttribute("class", value);
    } else if (value !== undefined && value !== null) {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

function setProps(element, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key === "text") {
      element.textContent = String(value);
    } else if (key === "class") {
      element.className = value;
    } else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else if (key === "href") {
      element.setAttribute("href", safeHref(value));
    } else if (key === "value") {
      element.value = value;
    } else if (key === "checked" || key === "disabled" || key === "selected" || key === "hidden" || key === "required") {
      element[key] = true;
    } else {
      element.setAttribute(key, String(value));
    }
  }
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Links are built by this script only: a hash route or a path of this origin.
function safeHref(href) {
  const text = String(href);
  return text.startsWith("#") || (text.startsWith("/") && !text.startsWith("//")) ? text : "#/";
}

function clear(element) {
  element.replaceChildren();
  return element;
}

function badge(status) {
  const norm = normStatus(status);
  return h("span", { class: `badge st-${norm}`, text: norm || "unknown", "data-status": norm });
}

// ---------------------------------------------------------------- values

// The first of `keys` that `object` has (not undefined/null): the API's shapes are read
// tolerantly, so a renamed member shows as missing, not as a broken page.
function pick(object, ...keys) {
  if (!object || typeof object !== "object") {
    return undefined;
  }
  for (const key of keys) {
    if (object[key] !== undefined && object[key] !== null) {
      return object[key];
    }
  }
  return undefined;
}

function normStatus(status) {
  const text = String(status || "").toLowerCase();
  if (text === "success" || text === "ok" || text === "done" || text === "finished") {
    return "succeeded";
  }
  return text;
}

function toMs(value) {
  if (value === undefined || value === null || value === "") {
    return undefined;
  }
  if (typeof value === "number") {
    return value < 1e11 ? value * 1000 : value;  // seconds or milliseconds since the epoch
  }
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

function pad(n) {
  return String(n).padStart(2, "0");
}

function fmtTime(value) {
  const ms = toMs(value);
  if (ms === undefined) {
    return "–";
  }
  const d = new Date(ms);
  const today = new Date();
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return d.toDateString() === today.toDateString()
    ? time
    : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) {
    return "–";
  }
  if (ms < 1000) {
    return `${Math.max(0, Math.round(ms))} ms`;
  }
  const seconds = ms / 1000;
  if (seconds < 60) {
    return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return `${minutes} m ${Math.floor(seconds % 60)} s`;
  }
  return `${Math.floor(minutes / 60)} h ${minutes % 60} m`;
}

function fmtInt(n) {
  return n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US");
}

function fmtCost(usd) {
  if (usd === undefined || usd === null || Number(usd) === 0) {
    return usd === undefined || usd === null ? "–" : "$0";
  }
  const value = Number(usd);
  return `$${value < 0.01 ? value.toFixed(4) : value.toFixed(2)}`;
}

function fmtJson(value) {
  if (value === undefined) {
    return "";
  }
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function shortId(id) {
  return String(id || "").slice(0, 8);
}

function asList(value, ...keys) {
  if (Array.isArray(value)) {
    return value;
  }
  const inner = pick(value, ...keys);
  return Array.isArray(inner) ? inner : [];
}

// ---------------------------------------------------------------- token, banner, API

function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

function authHeaders() {
  const value = token();
  return value ? { Authorization: `Bearer ${value}` } : {};
}

function showBanner(text, bad = false) {
  const banner = document.getElementById("banner");
  if (!text) {
    banner.hidden = true;
    return;
  }
  banner.className = bad ? "banner bad" : "banner";
  banner.textContent = text;
  banner.hidden = false;
}

class ApiError extends Error {
  constructor(status, title, detail) {
    super(detail || title || `HTTP ${status}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

// A JSON request to the API; throws ApiError with the problem's detail (RFC 9457) on failure.
async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json", ...authHeaders() };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (err) {
    showBanner("Cannot reach the server: is `oe serve` still running?", true);
    throw new ApiError(0, "network", String(err.message || err));
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (response.status === 401 || response.status === 403) {
    showBanner(
      response.status === 401
        ? "This server wants a token: set one under “Token” (top right)."
        : "Your token does not allow this (it is read-only?).",
      true,
    );
  } else if (response.ok) {
    const banner = document.getElementById("banner");
    if (!banner.hidden && banner.classList.contains("bad")) {
      showBanner("");
    }
  }
  if (!response.ok) {
    const detail = pick(data, "detail", "message", "error") || (typeof data === "string" ? data : "");
    throw new ApiError(response.status, pick(data, "title") || response.statusText, detail);
  }
  return data;
}

// ---------------------------------------------------------------- live events (SSE over fetch)

// Server-Sent Events read with fetch() rather than EventSource, which cannot send the
// Authorization header. Reconnects with Last-Event-ID (so nothing is missed) and backs off while
// the server is away.
class EventStream {
  constructor(url, onEvent, { lastId = null, onStatus = setLive } = {}) {
    this.url = url;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.lastId = lastId;
    this.stopped = false;
    this.controller = null;
    this.delay = 500;
  }

  start() {
    this.loop();
    return this;
  }

  stop() {
    this.stopped = true;
    if (this.controller) {
      this.controller.abort();
    }
  }

  async loop() {
    while (!this.stopped) {
      this.controller = new AbortController();
      let denied = false;
      let notYet = false;  // 404: a queued run has no log yet; ask again soon, not later and later
      try {
        const headers = { Accept: "text/event-stream", ...authHeaders() };
        if (this.lastId !== null && this.lastId !== undefined) {
          headers["Last-Event-ID"] = String(this.lastId);
        }
        this.onStatus(this.delay > 500 ? "retry" : "connecting");
        const response = await fetch(this.url, {
          headers,
          signal: this.controller.signal,
          cache: "no-store",
        });
        if (response.status === 401 || response.status === 403) {
          denied = true;
          this.onStatus("denied");
          showBanner("This server wants a token: set one under “Token” (top right).", true);
        } else if (response.ok && response.body) {
          this.onStatus("on");
          await this.read(response.body);
        } else if (response.status === 404) {
          notYet = true;
        }
      } catch {
        // aborted, or the connection dropped: reconnect below
      }
      if (this.stopped) {
        return;
      }
      if (!denied) {
        this.onStatus(notYet ? "connecting" : "retry");
      }
      await new Promise((resolve) => setTimeout(resolve, denied ? 15000 : notYet ? 1000 : this.delay));
      if (!notYet) {
        this.delay = Math.min(this.delay * 2, 15000);
      }
    }
  }

  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let data = [];
    let id = null;
    let type = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done || this.stopped) {
        return;
      }
      buffer += value;
      for (;;) {
        const cut = buffer.search(/\r\n|\r|\n/);
        // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
        if (cut < 0 || (buffer[cut] === "\r" && cut === buffer.length - 1)) {
          break;
        }
        const line = buffer.slice(0, cut);
        buffer = buffer.slice(cut + (buffer.startsWith("\r\n", cut) ? 2 : 1));
        if (line === "") {
          if (id !== null) {
            this.lastId = id;
          }
          if (data.length > 0) {
            this.delay = 500;
            const frame = { id: this.lastId, event: type || "message", data: data.join("\n") };
            try {
              this.onEvent(frame);
            } catch (err) {
              console.error("event handler", err);
            }
          }
          data = [];
          id = null;
          type = "";
          continue;
        }
        if (line.startsWith(":")) {
          continue;  // a comment: the server's keep-alive
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) {
          text = text.slice(1);
        }
        if (field === "data") {
          data.push(text);
        } else if (field === "id" && !text.includes("\0")) {
          id = text;
        } else if (field === "event") {
          type = text;
        } else if (field === "retry" && /^\d+$/.test(text)) {
          this.delay = Number(text);
        }
      }
    }
  }
}

function setLive(state) {
  const live = document.getElementById("live");
  const names = { on: "live", connecting: "connecting…", retry: "reconnecting…", denied: "no access", off: "" };
  live.textContent = names[state] ?? state;
  live.className = `live ${state}`;
  live.hidden = state === "off";
}

// ---------------------------------------------------------------- routing

// Hash routes, so the server serves one page: #/ (runs), #/runs/<id>, #/start[/<experience>],
// #/approvals. The query after `?` holds the runs list's filters.
function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  return { parts, query: new URLSearchParams(query) };
}

let cleanup = [];

function onLeave(fn) {
  cleanup.push(fn);
}

function render() {
  for (const fn of cleanup.splice(0)) {
    try {
      fn();
    } catch (err) {
      console.error(err);
    }
  }
  setLive("off");
  const { parts, query } = parseHash();
  const main = clear(document.getElementById("main"));
  const section = parts[0] || "runs";
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("current", link.dataset.nav === section);
  }
  if (section === "runs" && parts[1]) {
    runView(main, parts[1]);
  } else if (section === "start") {
    startView(main, parts[1] || query.get("experience") || "");
  } else if (section === "approvals") {
    approvalsView(main);
  } else {
    runsView(main, query);
  }
  main.focus({ preventScroll: true });
}

function go(hash) {
  if (location.hash === hash) {
    render();
  } else {
    location.hash = hash;
  }
}

// Calls fn at most once per `ms`, the last call always landing.
function throttle(fn, ms) {
  let timer = null;
  let again = false;
  return () => {
    if (timer) {
      again = true;
      return;
    }
    fn();
    timer = setTimeout(function tick() {
      timer = null;
      if (again) {
        again = false;
        fn();
        timer = setTimeout(tick, ms);
      }
    }, ms);
  };
}

function every(ms, fn) {
  const timer = setInterval(fn, ms);
  onLeave(() => clearInterval(timer));
}

function errorBox(err) {
  return h("div", { class: "notice bad", role: "alert", text: err instanceof ApiError ? err.message : String(err) });
}

// ---------------------------------------------------------------- the server's figures

// Prometheus text (GET /metrics) as [{name, labels, value}]; comments and bad lines skipped.
function parseMetrics(text) {
  const samples = [];
  for (const line of String(text).split("\n")) {
    const found = line.match(/^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!found || line.startsWith("#")) {
      continue;
    }
    const labels = {};
    for (const pair of (found[2] || "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    samples.push({ name: found[1], labels, value: Number(found[3]) });
  }
  return samples;
}

// The figures /metrics gives, as a strip of facts: runs by status, the queue, tokens and cost,
// and on PostgreSQL the workers and the attempts waiting for one.
async function loadOverview(box) {
  let response;
  try {
    response = await fetch("/metrics", { headers: { Accept: "text/plain", ...authHeaders() }, cache: "no-store" });
  } catch {
    return;
  }
  if (!response.ok) {
    box.hidden = true;
    return;
  }
  const samples = parseMetrics(await response.text());
  const sum = (name, test = () => true) => samples.filter((x) => x.name === name && test(x.labels)).reduce((total, x) => total + x.value, 0);
  const has = (name) => samples.some((x) => x.name === name);
  const byStatus = new Map();
  for (const sample of samples.filter((x) => x.name === "oe_runs")) {
    const status = normStatus(sample.labels.status);
    byStatus.set(status, (byStatus.get(status) || 0) + sample.value);
  }
  const facts = [];
  for (const status of RUN_STATUSES) {
    if (byStatus.get(status)) {
      facts.push(h("div", { class: "figure" }, h("dt", null, badge(status)), h("dd", { text: fmtInt(byStatus.get(status)) })));
    }
  }
  if (has("oe_queue_depth")) {
    facts.push(fact("Queue", fmtInt(sum("oe_queue_depth"))));
  }
  if (has("oe_llm_tokens_total")) {
    facts.push(fact("LLM tokens", fmtInt(sum("oe_llm_tokens_total"))));
  }
  if (has("oe_llm_cost_usd_total")) {
    facts.push(fact("LLM cost", fmtCost(sum("oe_llm_cost_usd_total"))));
  }
  if (has("oe_worker_up")) {
    facts.push(fact("Workers up", `${fmtInt(sum("oe_worker_up"))} of ${fmtInt(samples.filter((x) => x.name === "oe_worker_up").length)}`));
    facts.push(fact("Leases", fmtInt(sum("oe_worker_leases"))));
    facts.push(fact("Attempts waiting", fmtInt(sum("oe_attempts_waiting"))));
  }
  clear(box).append(...facts);
  box.hidden = facts.length === 0;
}

// ---------------------------------------------------------------- the runs list

function runFields(run) {
  const started = toMs(pick(run, "started_at", "started", "created_at", "queued_at"));
  const finished = toMs(pick(run, "finished_at", "finished", "ended_at"));
  // oe's "partial" (some node failed, the run went on) is the API's "partial" too; the engine's
  // word is read as well, so a failure is never painted green.
  const engine = normStatus(pick(run, "engine_status"));
  const api = normStatus(pick(run, "status"));
  const status = engine === "partial" && api !== "resumed" ? "partial" : api;
  let duration = pick(run, "duration_ms");
  if (duration === undefined && started !== undefined) {
    duration = (finished ?? (FINISHED.has(status) ? undefined : Date.now())) - started;
  }
  const tokens = pick(run, "usage", "tokens") || {};
  const input = pick(tokens, "tokens_in", "input", "input_tokens") ?? pick(run, "tokens_in", "input_tokens");
  const output = pick(tokens, "tokens_out", "output", "output_tokens") ?? pick(run, "tokens_out", "output_tokens");
  const total = pick(tokens, "total") ?? (input !== undefined || output !== undefined ? (input || 0) + (output || 0) : undefined);
  return {
    id: String(pick(run, "id", "run_id") || ""),
    experience: String(pick(run, "experience", "experience_name") || ""),
    status,
    started,
    finished,
    duration,
    tokens: total,
    cost: pick(run, "cost_usd", "cost") ?? pick(tokens, "cost_usd"),
    nodes: pick(run, "counts", "nodes"),
    priority: pick(run, "priority"),
  };
}

function runsView(main, query) {
  const status = query.get("status") || "";
  const experience = query.get("experience") || "";
  const statusSelect = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "", text: "any" }),
    RUN_STATUSES.map((name) => h("option", { value: name, text: name, selected: name === status })));
  const experienceSelect = h("select", { id: "filter-experience", name: "experience" },
    h("option", { value: "", text: "any" }),
    experience ? h("option", { value: experience, text: experience, selected: true }) : null);
  const applyFilters = () => {
    const params = new URLSearchParams();
    if (statusSelect.value) {
      params.set("status", statusSelect.value);
    }
    if (experienceSelect.value) {
      params.set("experience", experienceSelect.value);
    }
    const text = params.toString();
    go(text ? `#/?${text}` : "#/");
  };
  statusSelect.addEventListener("change", applyFilters);
  experienceSelect.addEventListener("change", applyFilters);
  const body = h("tbody");
  const more = h("button", { class: "secondary", hidden: true, text: "Load more" });
  const message = h("div");
  const overview = h("dl", { class: "facts overview", id: "overview", hidden: true });
  main.append(
    h("div", { class: "run-head" },
      h("h1", { text: "Runs" }),
      h("div", { class: "actions" }, h("a", { class: "button", href: "#/start", text: "Start a run" }))),
    overview,
    h("div", { class: "filters" },
      h("div", null, h("label", { for: "filter-status", text: "Status" }), statusSelect),
      h("div", null, h("label", { for: "filter-experience", text: "Experience" }), experienceSelect)),
    message,
    h("div", { class: "table-wrap" },
      h("table", { class: "runs", id: "runs" },
        h("thead", null, h("tr", null,
          h("th", { text: "Status" }), h("th", { text: "Run" }), h("th", { text: "Experience" }),
          h("th", { class: "opt", text: "Started" }), h("th", { class: "num", text: "Duration" }),
          h("th", { class: "opt", text: "Nodes" }), h("th", { class: "num opt", text: "Tokens" }),
          h("th", { class: "num opt", text: "Cost" }))),
        body)),
    h("div", { class: "row" }, more));

  api("/api/experiences").then((data) => {
    for (const item of asList(data, "experiences")) {
      const name = String(pick(item, "name") || item);
      if (name !== experience) {
        experienceSelect.append(h("option", { value: name, text: name }));
      }
    }
  }).catch(() => {});

  let shown = 50;
  let rows = [];
  const load = async () => {
    const params = new URLSearchParams();
    if (status) {
      params.set("status", status);
    }
    if (experience) {
      params.set("experience", experience);
    }
    params.set("limit", String(Math.min(shown, 500)));
    try {
      const data = await api(`/api/runs?${params}`);
      rows = asList(data, "runs").map(runFields);
      clear(message);
      drawRows();
      more.hidden = !pick(data, "next_cursor") || shown >= 500;
    } catch (err) {
      clear(message).append(errorBox(err));
    }
  };
  const drawRows = () => {
    clear(body);
    if (rows.length === 0) {
      body.append(h("tr", null, h("td", { colspan: "8", class: "empty", text: status || experience ? "No run matches these filters." : "No run yet: start one." })));
      return;
    }
    for (const run of rows) {
      const nodes = run.nodes && typeof run.nodes === "object"
        ? `${run.nodes.ran ?? 0} ran · ${run.nodes.failed ?? 0} failed${run.nodes.skipped ? ` · ${run.nodes.skipped} skipped` : ""}`
        : "–";
      const duration = h("td", { class: "num", text: fmtDuration(run.duration) });
      if (!FINISHED.has(run.status) && run.started !== undefined) {
        duration.dataset.since = String(run.started);
      }
      const row = h("tr", { "data-run": run.id, "data-status": run.status },
        h("td", null, badge(run.status)),
        h("td", null, h("a", { class: "mono", href: `#/runs/${encodeURIComponent(run.id)}`, text: shortId(run.id), title: run.id })),
        h("td", { text: run.experience }),
        h("td", { class: "opt", text: fmtTime(run.started) }),
        duration,
        h("td", { class: "opt", text: nodes }),
        h("td", { class: "num opt", text: fmtInt(run.tokens) }),
        h("td", { class: "num opt", text: fmtCost(run.cost) }));
      row.addEventListener("click", (event) => {
        if (!(event.target instanceof HTMLAnchorElement)) {
          go(`#/runs/${encodeURIComponent(run.id)}`);
        }
      });
      body.append(row);
    }
  };
  more.addEventListener("click", () => {
    shown += 50;
    load();
  });
  load();
  loadOverview(overview);
  const figures = throttle(() => loadOverview(overview), 5000);
  const refresh = throttle(() => {
    load();
    figures();
  }, 700);
  const stream = new EventStream("/api/events/stream", (frame) => {
    let event;
    try {
      event = JSON.parse(frame.data);
    } catch {
      return;
    }
    const type = String(pick(event, "type") || frame.event);
    if (/^(run\.|node\.(started|finished|failed)|approval\.|queue\.)/.test(type) || frame.event !== "message") {
      refresh();
    }
  }).start();
  onLeave(() => stream.stop());
  // Durations of running runs tick; the list itself is refreshed by the stream, and every 15 s in
  // case a run left the queue without a line (a cancelled queued run).
  every(1000, () => {
    for (const cell of body.querySelectorAll("[data-since]")) {
      cell.textContent = fmtDuration(Date.now() - Number(cell.dataset.since));
    }
  });
  every(15000, load);
}

// ---------------------------------------------------------------- a run's page

// What a run's log says so far, folded event by event: each node's status, times, attempts,
// error, logs and tokens; the run's status; the approvals it waits for.
class RunModel {
  constructor() {
    this.nodes = new Map();
    this.status = "";
    this.started = undefined;
    this.finished = undefined;
    this.waiting = new Map();
    this.tokensIn = 0;
    this.tokensOut = 0;
    this.cost = 0;
    this.maxSeq = -1;
    this.events = [];
  }

  node(id) {
    let node = this.nodes.get(id);
    if (!node) {
      node = { id, status: "pending", start: undefined, end: undefined, calls: 0, retries: [], error: "", logs: [], tokensIn: 0, tokensOut: 0, cost: 0, diffs: [], items: undefined };
      this.nodes.set(id, node);
    }
    return node;
  }

  // Applies one event; false when its seq was seen already (a replay after a reconnect).
  apply(event, seq) {
    if (seq !== undefined && seq !== null && seq !== "" && !Number.isNaN(Number(seq))) {
      const n = Number(seq);
      if (n <= this.maxSeq) {
        return false;
      }
      this.maxSeq = n;
    }
    this.events.push(event);
    if (this.events.length > 2000) {
      this.events.splice(0, this.events.length - 2000);
    }
    const type = String(event.type || "");
    const ts = toMs(event.ts);
    const id = event.node_id;
    if (type === "run.started") {
      this.status = "running";
      this.started = ts;
      return true;
    }
    if (type === "run.finished") {
      this.status = normStatus(event.status);
      this.finished = ts;
      for (const node of this.nodes.values()) {
        if (node.status === "running" || node.status === "ready") {
          node.status = "cancelled";
          node.end = node.end ?? ts;
        }
      }
      return true;
    }
    if (!id) {
      return true;
    }
    const node = this.node(String(id));
    switch (type) {
      case "node.ready":
        if (node.status === "pending") {
          node.status = "ready";
        }
        break;
      case "node.started":
        node.calls += 1;
        node.start = node.start ?? ts;
        node.status = "running";
        break;
      case "node.finished":
        node.end = ts;
        node.start = node.start ?? ts;
        node.status = event.cached ? "cached" : "succeeded";
        break;
      case "node.failed":
        node.end = ts;
        node.start = node.start ?? ts;
        node.status = event.cancelled ? "cancelled" : "failed";
        node.error = String(event.error || "");
        break;
      case "node.skipped":
        node.status = "skipped";
        node.error = event.reason ? `skipped: ${event.reason}` : "skipped";
        break;
      case "node.retry":
        node.retries.push({ attempt: event.attempt, error: event.error, delay: event.delay_ms, ts });
        break;
      case "node.log":
        node.logs.push({ ts, level: event.level, message: pick(event, "message", "line", "text") });
        break;
      case "node.activity":
        node.logs.push({ ts, level: "activity", message: event.activity });
        break;
      case "node.tokens":
        node.tokensIn += Number(event.input_tokens || 0);
        node.tokensOut += Number(event.output_tokens || 0);
        node.cost += Number(event.cost_usd || 0);
        this.tokensIn += Number(event.input_tokens || 0);
        this.tokensOut += Number(event.output_tokens || 0);
        this.cost += Number(event.cost_usd || 0);
        break;
      case "node.diff":
        node.diffs.push(event);
        break;
      case "node.items":
        node.items = event.count;
        break;
      case "approval.waiting":
        node.status = "waiting";
        this.waiting.set(node.id, event);
        break;
      case "approval.decided":
        this.waiting.delete(node.id);
        break;
      default:
        break;
    }
    return true;
  }
}

function runView(main, runId) {
  const enc = encodeURIComponent(runId);
  const model = new RunModel();
  let summary = null;
  let graphNodes = new Map();  // node id -> its <g> in the graph
  let selected = "";
  let graphFor = "";
  let finishedHandled = false;
  const opened = Date.now();

  const title = h("h1", { text: `Run ${shortId(runId)}` });
  const statusSlot = h("span");
  const actions = h("div", { class: "actions" });
  const facts = h("dl", { class: "facts" });
  const notices = h("div");
  const approvalBox = h("div");
  const graphBox = h("div", { class: "graph-box", id: "graph" }, h("p", { class: "muted", text: "Loading the graph…" }));
  const legend = h("div", { class: "legend" },
    ["pending", "running", "succeeded", "cached", "failed", "skipped", "waiting"].map((name) => badge(name)));
  const gantt = h("div", { class: "gantt", id: "timeline" });
  const axis = h("div", { class: "gantt-axis" });
  const detail = h("div", { id: "node-detail" }, h("p", { class: "muted", text: "Select a node in the graph or the timeline to see its inputs, output, logs and error." }));
  const stateBox = h("div", { id: "state" }, h("p", { class: "muted", text: "Loading…" }));
  const eventsList = h("ol", { class: "logs", id: "events" });

  main.append(
    h("p", null, h("a", { href: "#/", text: "← Runs" })),
    h("div", { class: "run-head" },
      h("div", null, title, h("div", { class: "row" }, statusSlot, h("span", { class: "mono muted", text: runId }))),
      actions),
    facts,
    notices,
    approvalBox,
    h("div", { class: "run-grid" },
      h("div", null,
        h("section", { class: "panel" }, h("h2", { text: "Graph" }), graphBox, legend),
        h("section", { class: "panel" }, h("h2", { text: "Timeline" }), gantt, axis)),
      h("div", null,
        h("section", { class: "panel" }, h("h2", { text: "Node" }), detail),
        h("section", { class: "panel" }, h("h2", { text: "State" }), stateBox),
        h("section", { class: "panel" },
          h("details", null, h("summary", null, h("strong", { text: "Events" })), eventsList)))));

  // The log's last word, unless the server says a later run of the chain resumed this one (a
  // parked run whose question was answered and continued): then `resumed`.
  const status = () => {
    const listed = normStatus(pick(summary, "status") || "");
    return listed === "resumed" ? listed : normStatus(model.status || listed);
  };

  const drawHead = () => {
    const current = status();
    clear(statusSlot).append(badge(current));
    const fields = summary ? runFields(summary) : {};
    const experience = fields.experience || "";
    title.textContent = experience ? `${experience} · ${shortId(runId)}` : `Run ${shortId(runId)}`;
    document.title = `${title.textContent} · oe`;
    const started = model.started ?? fields.started;
    const finished = model.finished ?? fields.finished;
    const end = finished ?? (FINISHED.has(current) ? undefined : Date.now());
    const duration = started !== undefined && end !== undefined ? end - started : fields.duration;
    const counts = { succeeded: 0, failed: 0, skipped: 0, cached: 0, running: 0 };
    for (const node of model.nodes.values()) {
      if (counts[node.status] !== undefined) {
        counts[node.status] += 1;
      }
    }
    const tokensIn = model.tokensIn;
    const tokensOut = model.tokensOut;
    const tokens = tokensIn + tokensOut > 0 ? tokensIn + tokensOut : fields.tokens;
    const cost = model.cost > 0 ? model.cost : fields.cost;
    clear(facts).append(
      fact("Status", current || "–"),
      fact("Experience", experience || "–"),
      fact("Started", fmtTime(started)),
      fact("Duration", fmtDuration(duration)),
      fact("Nodes", `${counts.succeeded + counts.cached} done, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ""}`),
      fact("Tokens", tokensIn + tokensOut > 0 ? `${fmtInt(tokens)} (${fmtInt(tokensIn)} in, ${fmtInt(tokensOut)} out)` : fmtInt(tokens)),
      fact("Cost", fmtCost(cost)),
      fact("Priority", String(pick(summary, "priority") ?? "–")));
    drawActions(current);
  };

  const drawActions = (current) => {
    clear(actions);
    if (current === "queued" || current === "running") {
      actions.append(h("button", { class: "danger", id: "cancel", text: "Cancel", onclick: () => act("cancel", "Cancel this run?") }));
    }
    // A run cancelled while queued never started: there is nothing to resume (start a new one).
    const started = model.started ?? (summary ? pick(summary, "started_at") : undefined);
    if (["failed", "partial", "cancelled", "interrupted"].includes(current) && started) {
      actions.append(h("button", { id: "resume", text: "Resume", onclick: () => act("resume") }));
    }
    if (FINISHED.has(current) && current !== "waiting") {
      actions.append(h("button", { class: "secondary", id: "delete", text: "Delete", onclick: () => remove() }));
    }
    actions.append(h("button", { class: "secondary", id: "report", text: "Report", onclick: () => openReport(runId) }));
  };

  const act = async (what, confirmText) => {
    if (confirmText && !window.confirm(confirmText)) {
      return;
    }
    try {
      const result = await api(`/api/runs/${enc}/${what}`, { method: "POST" });
      const next = pick(result, "id", "run_id");
      if (what === "resume" && next && next !== runId) {
        go(`#/runs/${encodeURIComponent(next)}`);
        return;
      }
      notice(what === "cancel" ? "Cancelled." : "Queued.", "good");
      loadSummary();
    } catch (err) {
      notice(err.message, "bad");
    }
  };

  const remove = async () => {
    if (!window.confirm("Delete this run's log and records?")) {
      return;
    }
    try {
      await api(`/api/runs/${enc}`, { method: "DELETE" });
      go("#/");
    } catch (err) {
      notice(err.message, "bad");
    }
  };

  const notice = (text, kind = "") => {
    clear(notices).append(h("div", { class: `notice ${kind}`, role: kind === "bad" ? "alert" : "status", text }));
  };

  // ---- graph
  const loadGraph = async (experience) => {
    if (!experience || graphFor === experience) {
      return;
    }
    graphFor = experience;
    try {
      const graph = await api(`/api/experiences/${encodeURIComponent(experience)}/graph`);
      const ids = asList(pick(graph, "nodes"), "nodes").map((node) => String(typeof node === "object" ? pick(node, "id") : node));
      const edges = asList(pick(graph, "edges"), "edges").map((edge) => ({ from: String(pick(edge, "from", "source")), to: String(pick(edge, "to", "target")) }));
      for (const id of ids) {
        model.node(id);
      }
      const svg = typeof graph.svg === "string" ? copySvg(graph.svg) : null;
      drawGraph(svg || layoutGraph(ids, edges), ids);
    } catch (err) {
      graphFor = "";
      drawGraph(layoutGraph([...model.nodes.keys()], []), [...model.nodes.keys()]);
      graphBox.prepend(h("p", { class: "muted", text: `The experience's graph could not be read (${err.message}); the nodes are drawn from the run's log.` }));
    }
  };

  const drawGraph = (svg, ids) => {
    graphNodes = new Map();
    const groups = [...svg.querySelectorAll("g.node")];
    groups.forEach((group, index) => {
      const titleText = group.querySelector("title")?.textContent || "";
      // The report's SVG draws nodes in experience order, each titled "<id> (<kind>)...".
      let id = ids[index];
      if (id === undefined || !titleText.startsWith(`${id} (`)) {
        id = ids.filter((candidate) => titleText.startsWith(`${candidate} (`)).sort((a, b) => b.length - a.length)[0];
      }
      if (id === undefined) {
        return;
      }
      group.dataset.node = id;
      group.setAttribute("tabindex", "0");
      group.setAttribute("role", "button");
      group.setAttribute("aria-label", `node ${id}`);
      group.addEventListener("click", () => select(id));
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          select(id);
        }
      });
      graphNodes.set(id, group);
    });
    clear(graphBox).append(svg);
    paint();
  };

  const paint = () => {
    for (const [id, group] of graphNodes) {
      const node = model.nodes.get(id);
      const state = node ? node.status : "pending";
      const classes = ["node", `st-${state}`];
      if (id === selected) {
        classes.push("selected");
      }
      group.setAttribute("class", classes.join(" "));
      group.dataset.status = state;
    }
  };

  // ---- timeline
  const drawTimeline = () => {
    const started = [...model.nodes.values()].filter((node) => node.start !== undefined)
      .sort((a, b) => a.start - b.start || a.id.localeCompare(b.id));
    clear(gantt);
    clear(axis);
    if (started.length === 0) {
      gantt.append(h("p", { class: "muted", text: status() === "queued" ? "Queued: nothing has started yet." : "No node has started yet." }));
      return;
    }
    const t0 = model.started ?? started[0].start;
    const live = !FINISHED.has(status());
    let t1 = model.finished ?? (live ? Date.now() : undefined);
    for (const node of started) {
      t1 = Math.max(t1 ?? 0, node.end ?? (live ? Date.now() : node.start));
    }
    const span = Math.max(1, t1 - t0);
    for (const node of started) {
      const end = node.end ?? (live && node.status === "running" ? Date.now() : node.start);
      const bar = h("div", {
        class: `bar st-${node.status}`,
        title: `${node.id}: ${node.status}, ${fmtDuration(end - node.start)}`,
        "data-node": node.id,
        onclick: () => select(node.id),
      });
      bar.style.left = `${((node.start - t0) / span) * 100}%`;
      bar.style.width = `${Math.max(0.4, ((end - node.start) / span) * 100)}%`;
      gantt.append(
        h("div", { class: "name", title: node.id, text: node.id, onclick: () => select(node.id) }),
        h("div", { class: "track" }, bar));
    }
    axis.append(h("span", { text: "0" }), h("span", { text: fmtDuration(span) }));
  };

  // ---- node detail
  const select = (id) => {
    selected = id;
    paint();
    drawDetail(true);
    // On a phone the detail is below the graph: bring it into view.
    if (window.matchMedia("(max-width: 760px)").matches) {
      detail.scrollIntoView({ block: "start", behavior: "smooth" });
    }
  };

  let detailFetched = null;
  const drawDetail = async (fetchMore) => {
    if (!selected) {
      return;
    }
    const node = model.node(selected);
    const body = h("div");
    const kv = h("dl", { class: "kv" },
      kvRow("Node", node.id),
      kvRow("Status", badge(node.status)),
      kvRow("Started", fmtTime(node.start)),
      kvRow("Duration", node.start !== undefined && node.end !== undefined ? fmtDuration(node.end - node.start) : "–"),
      kvRow("Calls", String(node.calls)),
      node.items !== undefined ? kvRow("Items", String(node.items)) : null,
      kvRow("Retries", String(node.retries.length)),
      node.tokensIn + node.tokensOut > 0 ? kvRow("Tokens", `${fmtInt(node.tokensIn)} in, ${fmtInt(node.tokensOut)} out, ${fmtCost(node.cost)}`) : null);
    body.append(kv);
    if (node.error) {
      body.append(h("h3", { text: node.status === "skipped" ? "Why" : "Error" }), h("pre", { class: "error", id: "node-error", text: node.error }));
    }
    if (node.retries.length > 0) {
      body.append(h("h3", { text: "Retries" }), h("ol", { class: "logs" },
        node.retries.map((retry) => h("li", null,
          h("span", { class: "ts", text: fmtTime(retry.ts) }),
          h("span", { class: "type", text: `attempt ${retry.attempt ?? "?"}` }),
          String(retry.error || "")))));
    }
    const more = detailFetched && detailFetched.id === node.id ? detailFetched.data : null;
    if (more) {
      const inputs = pick(more, "inputs", "input", "args", "request");
      // The API gives the node's args as declared (their $.paths unresolved) when it has no
      // resolved inputs: say which.
      const inputsTitle = pick(more, "inputs", "input") !== undefined ? "Inputs" : "Args (as declared)";
      const output = pick(more, "output", "edge_output", "result", "state_delta");
      const errors = pick(more, "errors", "error");
      const errorText = Array.isArray(errors) ? errors.map(String).join("\n") : errors ? fmtJson(errors) : "";
      if (errorText && !node.error) {
        body.append(h("h3", { text: "Error" }), h("pre", { class: "error", id: "node-error", text: errorText }));
      }
      if (pick(more, "kind")) {
        kv.append(...kvRow("Kind", String(pick(more, "kind"))));
      }
      if (inputs !== undefined) {
        body.append(h("h3", { text: inputsTitle }), h("pre", { text: fmtJson(inputs) }));
      }
      if (output !== undefined) {
        body.append(h("h3", { text: "Output" }), h("pre", { text: fmtJson(output) }));
      }
      const logs = asList(pick(more, "logs", "log"), "lines");
      if (logs.length > 0) {
        body.append(h("h3", { text: "Logs" }), h("ol", { class: "logs" }, logs.map((line) => typeof line === "object"
          ? h("li", null, h("span", { class: "ts", text: fmtTime(pick(line, "ts", "at", "time")) }), String(pick(line, "message", "line", "text") ?? JSON.stringify(line)))
          : h("li", { text: String(line) }))));
      }
      const writes = asList(pick(more, "state_writes"));
      if (writes.length > 0) {
        body.append(h("h3", { text: "Wrote" }), h("ol", { class: "logs" }, writes.map((write) => h("li", null,
          h("span", { class: "ts", text: fmtTime(pick(write, "ts")) }),
          h("span", { class: "type", text: String(pick(write, "field") ?? "") }),
          fmtJson(pick(write, "value"))))));
      }
      const diffs = pick(more, "diffs") ?? pick(more, "diff", "worktree_diff", "patch");
      for (const diff of diffs === undefined ? [] : Array.isArray(diffs) ? diffs : [diffs]) {
        const text = typeof diff === "string" ? diff : pick(diff, "text", "diff", "patch") ?? fmtJson(diff);
        const heading = typeof diff === "object" && pick(diff, "files_changed", "files") !== undefined
          ? `Worktree diff (${fmtJson(pick(diff, "files_changed", "files"))} files)` : "Worktree diff";
        body.append(h("h3", { text: heading }), diffView(String(text)));
      }
      for (const note of asList(pick(more, "notes"))) {
        body.append(h("p", { class: "muted", text: String(note) }));
      }
    }
    if (node.logs.length > 0 && !(more && asList(pick(more, "logs", "log"), "lines").length > 0)) {
      body.append(h("h3", { text: "Logs" }), h("ol", { class: "logs" }, node.logs.slice(-200).map((line) =>
        h("li", null, h("span", { class: "ts", text: fmtTime(line.ts) }), String(line.message ?? "")))));
    }
    if (node.diffs.length > 0 && !(more && asList(pick(more, "diffs")).length > 0)) {
      body.append(h("h3", { text: "Worktree changes" }), h("pre", { text: node.diffs.map((d) => fmtJson(d)).join("\n") }));
    }
    clear(detail).append(body);
    if (fetchMore) {
      const wanted = node.id;
      try {
        const data = await api(`/api/runs/${enc}/nodes/${encodeURIComponent(wanted)}`);
        if (selected === wanted) {
          detailFetched = { id: wanted, data };
          drawDetail(false);
        }
      } catch (err) {
        if (selected === wanted && err.status !== 404) {
          detail.append(h("p", { class: "muted", text: `More detail could not be read: ${err.message}` }));
        }
      }
    }
  };

  // ---- state
  const loadState = async () => {
    try {
      const data = await api(`/api/runs/${enc}/state`);
      const fields = pick(data, "state", "fields", "values") ?? data;
      drawState(fields && typeof fields === "object" ? fields : {});
    } catch (err) {
      clear(stateBox).append(h("p", { class: "muted", text: err.status === 404 ? "No state yet." : `The state could not be read: ${err.message}` }));
    }
  };

  const drawState = (fields) => {
    const names = Object.keys(fields).sort();
    clear(stateBox);
    if (names.length === 0) {
      stateBox.append(h("p", { class: "muted", text: "No field has a value yet." }));
      return;
    }
    const history = h("div", { id: "state-history" });
    const rows = names.map((name) => {
      const text = fmtJson(fields[name]);
      return h("tr", { "data-field": name },
        h("td", { text: name }),
        h("td", { class: "value", text: text.length > 400 ? `${text.slice(0, 400)}…` : text, title: text.length > 400 ? "shortened: see History" : null }),
        h("td", null, h("button", { class: "secondary small", text: "History", onclick: () => loadHistory(name, history) })));
    });
    stateBox.append(
      h("table", { class: "state" },
        h("thead", null, h("tr", null, h("th", { text: "Field" }), h("th", { text: "Value" }), h("th"))),
        h("tbody", null, rows)),
      history);
  };

  const loadHistory = async (field, box) => {
    clear(box).append(h("p", { class: "muted", text: `Loading the history of ${field}…` }));
    try {
      const data = await api(`/api/runs/${enc}/state/${encodeURIComponent(field)}/history`);
      const entries = asList(data, "rows", "history", "entries", "writes");
      clear(box).append(h("h3", { text: `History of ${field}` }));
      if (entries.length === 0) {
        box.append(h("p", { class: "muted", text: "No write recorded." }));
        return;
      }
      box.append(h("ol", { class: "logs" }, entries.map((entry) => h("li", null,
        h("span", { class: "ts", text: fmtTime(pick(entry, "ts", "at", "time", "written_at")) }),
        h("span", { class: "type", text: String(pick(entry, "node", "node_id", "by", "writer") ?? "") }),
        fmtJson(pick(entry, "value_new", "value", "new", "appended", "delta") ?? entry)))));
      if (pick(data, "truncated")) {
        box.append(h("p", { class: "muted", text: "Older writes are left out." }));
      }
    } catch (err) {
      clear(box).append(errorBox(err));
    }
  };

  // ---- approvals
  // One card per node asked about, kept across redraws so what a person types stays put.
  const approvalCards = new Map();
  const decided = new Set();  // answered here: not asked again while the summary catches up
  // What GET /api/approvals says is still undecided for this run: null until read (or when it
  // cannot be read: then every question the log asked is offered).
  let pending = null;
  let pendingAsked = false;
  const loadPending = async () => {
    pendingAsked = true;
    try {
      const data = await api("/api/approvals");
      pending = new Set(asList(data, "approvals", "waiting")
        .filter((item) => String(pick(item, "run_id", "run") ?? "") === runId)
        .map((item) => String(pick(item, "node_id", "node") ?? "")));
    } catch {
      pending = null;
    }
    drawApprovals();
  };
  const drawApprovals = () => {
    const wanted = new Map();
    if (status() === "waiting" && !pendingAsked) {
      loadPending();
    }
    if (status() === "waiting") {
      for (const [node, question] of model.waiting) {
        wanted.set(node, question);
      }
      for (const id of asList(pick(summary, "waiting"), "nodes")) {
        if (!wanted.has(String(id))) {
          wanted.set(String(id), { node_id: String(id) });
        }
      }
    }
    // A parked run that a later run continued: its questions were answered.
    if (status() === "resumed" && normStatus(pick(summary, "engine_status") || "") === "waiting" &&
        !notices.textContent) {
      const next = pick(summary, "resumed_by");
      notice(`Decided: this run's question no longer waits; run ${next ? shortId(String(next)) : "a later run"} of its chain continued it.`);
    }
    // A parked run stays `waiting` after someone decided and before the continuation starts:
    // its question is no longer asked.
    const answered = pending ? [...wanted.keys()].filter((node) => !pending.has(node)) : [];
    for (const node of answered) {
      wanted.delete(node);
    }
    if (answered.length > 0 && wanted.size === 0 && !notices.textContent) {
      notice(`Decided: ${answered.join(", ")} no longer waits; a later run of its chain continued it (see the runs list).`);
    }
    for (const [node, card] of approvalCards) {
      if (!wanted.has(node)) {
        card.remove();
        approvalCards.delete(node);
      }
    }
    for (const [node, question] of wanted) {
      if (decided.has(node)) {
        continue;
      }
      if (approvalCards.has(node)) {
        if (pick(question, "prompt") !== undefined) {
          approvalCards.get(node).fillQuestion(question);
        }
        continue;
      }
      const card = approvalCard(runId, node, question, (result) => {
        const next = pick(pick(result, "continued"), "id") ?? pick(result, "id", "run_id");
        if (next && next !== runId) {
          go(`#/runs/${encodeURIComponent(next)}`);
        } else {
          notice("Decision recorded: the run is continued through the queue.", "good");
          model.waiting.delete(node);
          decided.add(node);
          card.remove();
          approvalCards.delete(node);
          loadSummary();
        }
      });
      approvalCards.set(node, card);
      approvalBox.append(card);
    }
  };

  // ---- data flow: the summary, the log so far, then the live stream
  let stream = null;
  const loadSummary = async () => {
    try {
      summary = await api(`/api/runs/${enc}`);
      if (notices.textContent === "Waiting for the run to appear…") {
        clear(notices);
      }
      const fields = runFields(summary);
      // The server's word on a finished run is final (it maps the log's "partial" and says
      // "cancelled" of a queued run that never started); until then the log is fresher.
      if (!model.status || FINISHED.has(fields.status)) {
        model.status = fields.status;
      }
      for (const entry of asList(pick(summary, "timeline"), "nodes")) {
        const id = pick(entry, "node", "node_id", "id");
        if (id !== undefined) {
          model.node(String(id));
        }
      }
      loadGraph(fields.experience);
      redraw();
    } catch (err) {
      if (err.status === 404 && Date.now() - opened < 10000) {
        // Just started: the queue or the launcher may not show it for a moment.
        notice("Waiting for the run to appear…");
        await new Promise((resolve) => setTimeout(resolve, 1000));
        return loadSummary();
      }
      if (err.status === 404) {
        clear(main).append(h("p", null, h("a", { href: "#/", text: "← Runs" })), errorBox(err));
        stopAll();
      } else {
        notice(err.message, "bad");
      }
    }
  };

  const onEvent = (event, seq) => {
    if (!model.apply(event, seq)) {
      return;
    }
    eventsList.append(eventLine(event));
    while (eventsList.childElementCount > 500) {
      eventsList.firstElementChild.remove();
    }
    scheduleRedraw();
    if (event.type === "run.finished" && !finishedHandled) {
      finishedHandled = true;
      // The log is complete: read the final summary and state, stop listening.
      setTimeout(() => {
        loadSummary();
        loadState();
        if (stream) {
          stream.stop();
          setLive("off");
        }
      }, 0);
    } else if (event.type === "state.write") {
      scheduleState();
    }
  };

  const redraw = () => {
    drawHead();
    paint();
    drawTimeline();
    drawApprovals();
    if (selected) {
      drawDetail(false);
    }
  };
  const scheduleRedraw = throttle(redraw, 150);
  const scheduleState = throttle(loadState, 1000);

  const loadLog = async () => {
    let after = null;
    for (let page = 0; page < 200; page += 1) {
      const params = new URLSearchParams({ limit: "500" });
      if (after !== null) {
        params.set("after", String(after));
      }
      let data;
      try {
        data = await api(`/api/runs/${enc}/events?${params}`);
      } catch (err) {
        return err.status === 404 ? model.maxSeq : null;
      }
      const events = asList(data, "events");
      for (const event of events) {
        onEvent(event, pick(event, "seq"));
      }
      const next = pick(data, "next_after");
      if (next === undefined || events.length === 0) {
        break;
      }
      after = next;
    }
    return model.maxSeq;
  };

  const stopAll = () => {
    if (stream) {
      stream.stop();
    }
  };
  onLeave(stopAll);

  (async () => {
    await loadSummary();
    await loadLog();
    loadState();
    redraw();
    if (!finishedHandled) {
      stream = new EventStream(`/api/runs/${enc}/events/stream`, (frame) => {
        let event;
        try {
          event = JSON.parse(frame.data);
        } catch {
          return;
        }
        onEvent(event, frame.id ?? pick(event, "seq"));
      }, { lastId: model.maxSeq >= 0 ? String(model.maxSeq) : null }).start();
    }
  })();

  // A running run's clock and bars move between events; a queued one is asked about now and
  // then, since it writes no line until it starts.
  every(1000, () => {
    if (!FINISHED.has(status())) {
      drawHead();
      drawTimeline();
    }
  });
  every(2000, () => {
    if (status() === "queued" || (!model.status && !finishedHandled)) {
      loadSummary();
    }
  });
}

function fact(name, value) {
  return h("div", null, h("dt", { text: name }), h("dd", null, value));
}

function kvRow(name, value) {
  return [h("dt", { text: name }), h("dd", null, value)];
}

function eventLine(event) {
  const rest = { ...event };
  for (const key of ["type", "run_id", "node_id", "ts"]) {
    delete rest[key];
  }
  const extra = Object.keys(rest).length > 0 ? JSON.stringify(rest) : "";
  return h("li", null,
    h("span", { class: "ts", text: fmtTime(event.ts) }),
    h("span", { class: "type", text: String(event.type || "") }),
    event.node_id ? `${event.node_id} ` : "",
    extra.length > 300 ? `${extra.slice(0, 300)}…` : extra);
}

function diffView(text) {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const kind = line.startsWith("+") && !line.startsWith("+++") ? "add"
      : line.startsWith("-") && !line.startsWith("---") ? "del"
        : line.startsWith("@@") ? "hunk" : "";
    pre.append(kind ? h("span", { class: kind, text: line }) : `${line}\n`);
  }
  return pre;
}

// The report's HTML, in a tab of its own. With a token the link cannot carry it, so the page is
// fetched and saved as a file instead.
async function openReport(runId) {
  const url = `/api/runs/${encodeURIComponent(runId)}/report`;
  if (!token()) {
    window.open(url, "_blank", "noopener");
    return;
  }
  try {
    const response = await fetch(url, { headers: authHeaders(), cache: "no-store" });
    if (!response.ok) {
      throw new Error(`HTTP ${response.status}`);
    }
    const blob = new Blob([await response.text()], { type: "text/html" });
    const link = h("a", { download: `oe-report-${shortId(runId)}.html` });
    link.href = URL.createObjectURL(blob);
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } catch (err) {
    showBanner(`The report could not be read: ${err.message}`, true);
  }
}

// A card that asks a person: the prompt, what it shows, a comment, who decides, approve/reject.
function approvalCard(runId, node, question, done) {
  const comment = h("textarea", { id: `comment-${node}`, placeholder: "Why (optional)", rows: "2" });
  const as = h("input", { type: "text", id: `as-${node}`, placeholder: "your name (optional)" });
  const message = h("div");
  const decide = async (verdict, button) => {
    button.disabled = true;
    const body = {};
    if (comment.value.trim()) {
      body.comment = comment.value.trim();
    }
    if (as.value.trim()) {
      body.as = as.value.trim();
    }
    try {
      const result = await api(`/api/approvals/${encodeURIComponent(runId)}/${encodeURIComponent(node)}/${verdict}`, { method: "POST", body });
      done(result, verdict);
    } catch (err) {
      clear(message).append(errorBox(err));
      button.disabled = false;
    }
  };
  const approve = h("button", { class: "approve", "data-node": node, text: "Approve" });
  const reject = h("button", { class: "danger reject", "data-node": node, text: "Reject" });
  approve.addEventListener("click", () => decide("approve", approve));
  reject.addEventListener("click", () => decide("reject", reject));
  // The question can arrive after the card (the run's summary names the node before its log's
  // approval.waiting is read): filled, and refilled, in place.
  const questionSlot = h("div");
  const fill = (asked) => {
    const show = pick(asked, "show");
    const deadline = pick(asked, "deadline");
    append(clear(questionSlot), [
      pick(asked, "prompt") ? h("p", { class: "prompt", text: String(pick(asked, "prompt")) }) : null,
      show && typeof show === "object" && Object.keys(show).length > 0 ? [h("h3", { text: "It shows" }), h("pre", { text: fmtJson(show) })] : null,
      deadline ? h("p", { class: "muted", text: `Decided by its timeout (${pick(asked, "on_timeout") || "fail"}) at ${fmtTime(deadline)} unless someone decides first.` }) : null]);
  };
  fill(question);
  const card = h("section", { class: "approval", "data-node": node },
    h("h2", { text: `Waiting for a decision on “${node}”` }),
    questionSlot,
    h("div", { class: "field" }, h("label", { for: `comment-${node}`, text: "Comment" }), comment),
    h("div", { class: "field" }, h("label", { for: `as-${node}`, text: "Decided by" }), as),
    h("div", { class: "row" }, approve, reject),
    message);
  card.fillQuestion = fill;
  return card;
}

// ---------------------------------------------------------------- the graph's SVG

const SVG_ELEMENTS = new Set(["svg", "g", "defs", "marker", "path", "line", "polyline", "polygon", "rect", "circle", "ellipse", "text", "tspan", "title", "desc"]);
const SVG_ATTRIBUTES = new Set(["class", "x", "y", "x1", "y1", "x2", "y2", "dx", "dy", "width", "height", "viewBox", "rx", "ry", "r", "cx", "cy", "d", "points", "fill", "stroke", "stroke-width", "stroke-dasharray", "stroke-linecap", "stroke-linejoin", "opacity", "fill-opacity", "marker-end", "marker-start", "refX", "refY", "markerWidth", "markerHeight", "markerUnits", "orient", "role", "aria-label", "text-anchor", "dominant-baseline", "font-size", "font-weight", "font-family", "id", "transform", "preserveAspectRatio"]);

// The report's SVG, rebuilt element by element from an allow-list (no script, no foreign
// content, no event attribute, no link but a local url(#id)), or null when it does not parse.
function copySvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (!root || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length > 0) {
    return null;
  }
  const copy = (source) => {
    if (!SVG_ELEMENTS.has(source.localName)) {
      return null;
    }
    const target = document.createElementNS(SVG_NS, source.localName);
    for (const attr of source.attributes) {
      const value = attr.value;
      if (!SVG_ATTRIBUTES.has(attr.name) || /javascript:|data:/i.test(value)) {
        continue;
      }
      if (value.includes("url(") && !/^url\(#[A-Za-z0-9_-]+\)$/.test(value.trim())) {
        continue;
      }
      target.setAttribute(attr.name, value);
    }
    for (const child of source.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        target.append(document.createTextNode(child.data));
      } else if (child.nodeType === Node.ELEMENT_NODE) {
        const inner = copy(child);
        if (inner) {
          target.append(inner);
        }
      }
    }
    return target;
  };
  const svg = copy(root);
  if (svg) {
    svg.setAttribute("class", "graph");
  }
  return svg;
}

// A graph drawn here when the server gives nodes and edges but no SVG: layers by depth, boxes
// as the report draws them, so the colouring above works the same.
function layoutGraph(ids, edges) {
  const depth = new Map(ids.map((id) => [id, 0]));
  for (let pass = 0; pass < ids.length; pass += 1) {
    let changed = false;
    for (const edge of edges) {
      if (depth.has(edge.from) && depth.has(edge.to) && depth.get(edge.to) < depth.get(edge.from) + 1) {
        depth.set(edge.to, depth.get(edge.from) + 1);
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
  }
  const layers = [];
  for (const id of ids) {
    (layers[depth.get(id)] ||= []).push(id);
  }
  const boxW = 150;
  const boxH = 46;
  const gapX = 24;
  const gapY = 44;
  const widest = Math.max(1, ...layers.map((layer) => (layer || []).length));
  const width = widest * (boxW + gapX) - gapX + 32;
  const height = Math.max(1, layers.length) * (boxH + gapY) - gapY + 32;
  const position = new Map();
  layers.forEach((layer, row) => {
    const offset = 16 + ((widest - layer.length) * (boxW + gapX)) / 2;
    layer.forEach((id, column) => position.set(id, { x: offset + column * (boxW + gapX), y: 16 + row * (boxH + gapY) }));
  });
  const svg = s("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "graph" },
    s("defs", null, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#555" }))));
  for (const edge of edges) {
    const a = position.get(edge.from);
    const b = position.get(edge.to);
    if (a && b) {
      svg.append(s("line", { class: "edge", x1: a.x + boxW / 2, y1: a.y + boxH, x2: b.x + boxW / 2, y2: b.y, "marker-end": "url(#arrow)" }));
    }
  }
  for (const id of ids) {
    const p = position.get(id);
    const label = id.length > 20 ? `${id.slice(0, 19)}…` : id;
    svg.append(s("g", { class: "node" },
      s("title", { text: `${id} ()` }),
      s("rect", { x: p.x, y: p.y, width: boxW, height: boxH, rx: 6, fill: "#f6f8fa", stroke: "#afb8c1" }),
      s("text", { class: "label", x: p.x + boxW / 2, y: p.y + 28, text: label })));
  }
  return svg;
}

// ---------------------------------------------------------------- start a run

function startView(main, experience) {
  const select = h("select", { id: "start-experience", name: "experience" }, h("option", { value: "", text: "Choose…" }));
  const formSlot = h("div");
  main.append(
    h("h1", { text: "Start a run" }),
    h("div", { class: "field form" }, h("label", { for: "start-experience", text: "Experience" }), select),
    formSlot);
  select.addEventListener("change", () => go(select.value ? `#/start/${encodeURIComponent(select.value)}` : "#/start"));
  api("/api/experiences").then((data) => {
    const items = asList(data, "experiences");
    for (const item of items) {
      const name = String(pick(item, "name") || item);
      const description = pick(item, "description");
      select.append(h("option", { value: name, text: description ? `${name} — ${description}` : name, selected: name === experience }));
    }
    if (items.length === 0) {
      formSlot.append(h("p", { class: "muted", text: "No experience under the server's --root." }));
    }
  }).catch((err) => formSlot.append(errorBox(err)));
  if (experience) {
    api(`/api/experiences/${encodeURIComponent(experience)}/schema`)
      .then((schema) => formSlot.append(startForm(experience, schema || {})))
      .catch((err) => {
        formSlot.append(errorBox(err));
        if (err.status !== 401 && err.status !== 403) {
          formSlot.append(startForm(experience, {}));  // free-form args still work
        }
      });
  }
}

// Fields for the args schema's properties (strings, numbers, booleans, enums; objects and arrays
// as JSON), a JSON box for the rest, and the queue's options.
function startForm(experience, schema) {
  const argsSchema = pick(schema, "args", "args_schema", "arguments") ?? (schema.properties ? schema : {});
  const stateSchema = pick(schema, "state", "state_schema");
  const properties = (argsSchema && typeof argsSchema.properties === "object" && argsSchema.properties) || {};
  const required = new Set(Array.isArray(argsSchema.required) ? argsSchema.required : []);
  const inputs = [];
  const form = h("form", { class: "form", id: "start-form", novalidate: "" });
  const argFields = h("fieldset", null, h("legend", { text: "Args" }));
  for (const [name, prop] of Object.entries(properties)) {
    const id = `arg-${name}`;
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    let input;
    let read;
    if (Array.isArray(prop.enum)) {
      input = h("select", { id, name },
        required.has(name) ? null : h("option", { value: "", text: "–" }),
        prop.enum.map((value) => h("option", { value: JSON.stringify(value), text: String(value), selected: prop.default !== undefined && JSON.stringify(prop.default) === JSON.stringify(value) })));
      read = () => (input.value === "" ? undefined : JSON.parse(input.value));
    } else if (type === "boolean") {
      input = h("input", { id, name, type: "checkbox", checked: prop.default === true });
      read = () => input.checked;
    } else if (type === "integer" || type === "number") {
      input = h("input", { id, name, type: "number", step: type === "integer" ? "1" : "any", value: prop.default ?? "", min: prop.minimum, max: prop.maximum });
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else if (type === "object" || type === "array") {
      input = h("textarea", { id, name, rows: "3", value: prop.default !== undefined ? JSON.stringify(prop.default, null, 2) : "" });
      read = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
    } else {
      input = h("input", { id, name, type: "text", value: prop.default ?? "", placeholder: prop.examples?.[0] ?? "" });
      read = () => (input.value === "" ? undefined : input.value);
    }
    const bad = h("div", { class: "bad", role: "alert" });
    inputs.push({ name, read, bad, required: required.has(name), input });
    const label = h("label", { for: id, text: `${prop.title || name}${required.has(name) ? " *" : ""}` });
    argFields.append(type === "boolean"
      ? h("div", { class: "field check" }, input, label, prop.description ? h("div", { class: "help", text: prop.description }) : null, bad)
      : h("div", { class: "field" }, label, input, prop.description ? h("div", { class: "help", text: prop.description }) : null, bad));
  }
  const free = argsSchema.additionalProperties !== false || Object.keys(properties).length === 0;
  // The last run's args (the schema's first example) prefill the box: a rerun is one click.
  const example = Array.isArray(argsSchema.examples) ? argsSchema.examples[0] : undefined;
  const extra = h("textarea", {
    id: "args-json",
    name: "args_json",
    rows: "4",
    placeholder: "{\"key\": \"value\"}",
    spellcheck: "false",
    value: example && typeof example === "object" && Object.keys(properties).length === 0 ? JSON.stringify(example, null, 2) : "",
  });
  const extraBad = h("div", { class: "bad", role: "alert" });
  if (free) {
    argFields.append(h("div", { class: "field" },
      h("label", { for: "args-json", text: Object.keys(properties).length > 0 ? "More args (a JSON object)" : "Args (a JSON object; they reach every node)" }),
      extra,
      argsSchema.description ? h("div", { class: "help", text: String(argsSchema.description) }) : null,
      extraBad));
  }
  const priority = h("input", { id: "opt-priority", type: "number", min: "1", max: "10", step: "1", value: "5" });
  const concurrency = h("input", { id: "opt-concurrency", type: "number", min: "1", step: "1", placeholder: "default" });
  const llm = h("input", { id: "opt-llm", type: "text", placeholder: "default" });
  const noCache = h("input", { id: "opt-no-cache", type: "checkbox" });
  const message = h("div");
  const submit = h("button", { type: "submit", id: "start-submit", text: `Start ${experience}` });
  form.append(
    argFields,
    h("fieldset", null, h("legend", { text: "Options" }),
      h("div", { class: "grid2" },
        h("div", { class: "field" }, h("label", { for: "opt-priority", text: "Priority (1–10)" }), priority),
        h("div", { class: "field" }, h("label", { for: "opt-concurrency", text: "Concurrency" }), concurrency),
        h("div", { class: "field" }, h("label", { for: "opt-llm", text: "LLM" }), llm)),
      h("div", { class: "field check" }, noCache, h("label", { for: "opt-no-cache", text: "Run every node (no cache)" }))),
    message,
    h("div", { class: "row" }, submit));
  if (stateSchema && typeof stateSchema === "object") {
    const fields = stateSchema.properties && typeof stateSchema.properties === "object" ? stateSchema.properties : stateSchema;
    const names = Object.keys(fields);
    if (names.length > 0) {
      form.append(h("h3", { text: "The run's state" }), h("table", { class: "state" },
        h("tbody", null, names.map((name) => h("tr", null,
          h("td", { text: name }),
          h("td", { class: "value", text: String(pick(fields[name], "type") ?? "") }),
          h("td", { class: "muted", text: String(pick(fields[name], "description") ?? "") }))))));
    }
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let ok = true;
    let args = {};
    extraBad.textContent = "";
    if (free && extra.value.trim() !== "") {
      try {
        args = JSON.parse(extra.value);
        if (!args || typeof args !== "object" || Array.isArray(args)) {
          throw new Error("not an object");
        }
      } catch (err) {
        extraBad.textContent = `Not a JSON object: ${err.message}`;
        ok = false;
      }
    }
    for (const field of inputs) {
      field.bad.textContent = "";
      try {
        const value = field.read();
        if (value === undefined) {
          if (field.required) {
            field.bad.textContent = "Required.";
            ok = false;
          }
        } else {
          args[field.name] = value;
        }
      } catch (err) {
        field.bad.textContent = `Not valid JSON: ${err.message}`;
        ok = false;
      }
    }
    const p = Number(priority.value || 5);
    if (!Number.isInteger(p) || p < 1 || p > 10) {
      clear(message).append(errorBox("The priority is a whole number from 1 to 10."));
      ok = false;
    }
    if (!ok) {
      return;
    }
    const options = {};
    if (concurrency.value) {
      options.concurrency = Number(concurrency.value);
    }
    if (noCache.checked) {
      options.no_cache = true;
    }
    if (llm.value.trim()) {
      options.llm = llm.value.trim();
    }
    const body = { experience, args, priority: p };
    if (Object.keys(options).length > 0) {
      body.options = options;
    }
    submit.disabled = true;
    clear(message);
    try {
      const result = await api("/api/runs", { method: "POST", body });
      const id = pick(result, "id", "run_id");
      if (id) {
        go(`#/runs/${encodeURIComponent(id)}`);
      } else {
        go(`#/?experience=${encodeURIComponent(experience)}`);
      }
    } catch (err) {
      message.append(errorBox(err));
      submit.disabled = false;
    }
  });
  return form;
}

// ---------------------------------------------------------------- approvals waiting

function approvalsView(main) {
  const list = h("div", { class: "cards", id: "approvals" });
  const message = h("div");
  main.append(h("h1", { text: "Approvals waiting" }), message, list);
  const load = async () => {
    try {
      const data = await api("/api/approvals");
      const items = asList(data, "approvals", "waiting");
      clear(message);
      clear(list);
      if (items.length === 0) {
        list.append(h("p", { class: "muted", text: "Nothing waits for a decision." }));
        return;
      }
      for (const item of items) {
        const run = String(pick(item, "run", "run_id", "id") || "");
        const nodes = pick(item, "node", "node_id") !== undefined
          ? [{ node: String(pick(item, "node", "node_id")), question: item }]
          : asList(pick(item, "questions", "nodes")).map((q) => ({ node: String(pick(q, "node", "node_id") ?? q), question: q }));
        for (const { node, question } of nodes) {
          const card = approvalCard(run, node, question, (result) => {
            const next = pick(pick(result, "continued"), "id") ?? pick(result, "id", "run_id");
            go(next ? `#/runs/${encodeURIComponent(next)}` : `#/runs/${encodeURIComponent(run)}`);
          });
          card.prepend(h("p", null,
            h("a", { class: "mono", href: `#/runs/${encodeURIComponent(run)}`, text: shortId(run) }),
            ` · ${String(pick(item, "experience") ?? "")}`,
            pick(question, "requested_at") ? ` · asked ${fmtTime(pick(question, "requested_at"))}` : ""));
          list.append(card);
        }
      }
    } catch (err) {
      clear(message).append(errorBox(err));
    }
  };
  load();
  const refresh = throttle(load, 1000);
  const stream = new EventStream("/api/events/stream", (frame) => {
    if (/approval\.|run\.finished/.test(frame.data)) {
      refresh();
    }
  }).start();
  onLeave(() => stream.stop());
}

// ---------------------------------------------------------------- start

function setupToken() {
  const box = document.getElementById("token-box");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  const summary = document.getElementById("token-summary");
  const show = () => {
    const set = token() !== "";
    box.classList.toggle("set", set);
    summary.textContent = set ? "Token ✓" : "Token";
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      if (input.value.trim()) {
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      } else {
        sessionStorage.removeItem(TOKEN_KEY);
      }
    } catch {
      showBanner("This browser keeps no session storage: the token cannot be kept.", true);
    }
    input.value = "";
    box.open = false;
    showBanner("");
    show();
    render();
  });
  document.getElementById("token-clear").addEventListener("click", () => {
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // nothing kept
    }
    input.value = "";
    box.open = false;
    show();
    render();
  });
  show();
}

setupToken();
window.addEventListener("hashchange", render);
render();
