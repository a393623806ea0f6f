// `oe serve`'s MCP over Streamable HTTP (docs/serve.md), driven by the official TypeScript SDK's
// StreamableHTTPClientTransport (1.x or 2.x client): a session is initialized, tools are listed
// and called (with progress), the session is ended; tokens and scopes apply.
// Usage: node mcp_http_test.mjs <oe_test_mcp_http_server> <v1|v2>
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { checks, expect, structured } from "./mcp_client.mjs";

const [program, flavour] = process.argv.slice(2);
const { check, summary, counts } = checks(`http-${flavour}`);
const READ = "read-token-0123456789abcdef";
const ADMIN = "admin-token-0123456789abcdef";

async function startServer(args = []) {
  const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url, stop: () => child.stdin.end(), child };
}

async function connect(url, token) {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  let client;
  let transport;
  if (flavour === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js");
    client = new Client({ name: "oe-mcp-http-test", version: "1.0.0" });
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  } else {
    const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    client = new Client({ name: "oe-mcp-http-test", version: "2.0.0" });
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  }
  await client.connect(transport);
  const call = (name, args, options = {}) =>
    flavour === "v1" ? client.callTool({ name, arguments: args }, undefined, options)
                     : client.callTool({ name, arguments: args }, options);
  return { client, transport, call };
}

const open = await startServer();
let sessionId;
await check("initialize gives a session", async () => {
  const { client, transport, call } = await connect(open.url);
  sessionId = transport.sessionId;
  expect(typeof sessionId === "string" && sessionId.length === 32, `a session id, got ${sessionId}`);
  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name).sort();
  expect(JSON.stringify(names) === JSON.stringify(["count", "echo", "start_run"]), `tools, got ${names}`);
  const echoed = structured(await call("echo", { text: "héllo" }));
  expect(echoed.echo.text === "héllo", `the echo, got ${JSON.stringify(echoed)}`);
  const progress = [];
  const counted = structured(await call("count", { n: 4 }, { onprogress: (p) => progress.push(p.progress) }));
  expect(counted.counted === 4, `counted 4, got ${JSON.stringify(counted)}`);
  expect(progress.length >= 1 && progress[progress.length - 1] === 4, `progress up to 4, got ${progress}`);
  // Calls in parallel on one session each get their own answer.
  const many = await Promise.all([1, 2, 3, 4, 5].map((n) => call("echo", { n })));
  many.forEach((result, i) => expect(structured(result).echo.n === i + 1, `answer ${i + 1}`));
  await transport.terminateSession();
  await client.close();
});

await check("an ended session is 404, GET is 405, garbage is 400", async () => {
  const post = (headers, body) => fetch(open.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
  const ended = await post({ "mcp-session-id": sessionId },
                           JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }));
  expect(ended.status === 404, `404 for the ended session, got ${ended.status}`);
  const none = await post({}, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }));
  expect(none.status === 400, `400 without a session, got ${none.status}`);
  const garbage = await post({}, "[1,2");
  expect(garbage.status === 400, `400 for garbage, got ${garbage.status}`);
  const get = await fetch(open.url, { headers: { accept: "text/event-stream" } });
  expect(get.status === 405, `405 for GET, got ${get.status}`);
});
open.stop();

const dir = mkdtempSync(join(tmpdir(), "oe-mcp-http-"));
const tokens = join(dir, "tokens");
writeFileSync(tokens, `read ci ${READ}\nadmin ops ${ADMIN}\n`, { mode: 0o600 });
const guarded = await startServer([tokens]);
await check("tokens: none is refused, read cannot call an admin tool, admin can", async () => {
  let refused = false;
  try {
    await connect(guarded.url);
  } catch (error) {
    refused = /401/.test(String(error?.message ?? error));
  }
  expect(refused, "initialize without a token refused with 401");
  const reader = await connect(guarded.url, READ);
  expect(structured(await reader.call("echo", { a: 1 })).echo.a === 1, "read token calls echo");
  let forbidden = false;
  try {
    await reader.call("start_run", {});
  } catch (error) {
    forbidden = /403/.test(String(error?.message ?? error));
  }
  expect(forbidden, "read token refused start_run with 403");
  const admin = await connect(guarded.url, ADMIN);
  expect(structured(await admin.call("start_run", {})).started === true, "admin token calls start_run");
  // A session is bound to the token that opened it.
  const stolen = await fetch(guarded.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
               authorization: `Bearer ${ADMIN}`, "mcp-session-id": reader.transport.sessionId },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(stolen.status === 404, `another token's session is 404, got ${stolen.status}`);
  await reader.client.close();
  await admin.client.close();
});
guarded.stop();
rmSync(dir, { recursive: true, force: true });

console.log(summary());
process.exit(counts.failed === 0 ? 0 : 1);
