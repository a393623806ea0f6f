// End-to-end test of `oe mcp` driven by an official MCP TypeScript SDK client (pinned in
// package.json), which spawns the server itself: no hand-written client.
// Usage: node mcp_server_test.mjs <path of oe> <v1|v2|v2-auto>
// Prints "N passed, N failed" last; exits 1 when anything failed.
import { cpSync, mkdtempSync, readdirSync, readFileSync, readlinkSync,
         symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { checks, connect, expect, structured } from "./mcp_client.mjs";

const [oe, flavour] = process.argv.slice(2);
if (!oe || !["v1", "v2", "v2-auto"].includes(flavour)) {
  console.error("usage: node mcp_server_test.mjs <oe> <v1|v2|v2-auto>");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "..", "..");

// The work folder: the server's root and working directory, with the experiences copied in.
const work = mkdtempSync(join(tmpdir(), `oe-mcp-${flavour}-`));
// Not a .openexpertise/ left by someone who ran the example in place (README's first command).
cpSync(join(source, "examples", "hello-tool"), join(work, "hello-tool"),
       { recursive: true, filter: (path) => !path.split("/").includes(".openexpertise") });
for (const name of ["slow", "noisy", "broken", "gated"]) {
  cpSync(join(here, "fixtures", name), join(work, name), { recursive: true });
}
const outside = mkdtempSync(join(tmpdir(), "oe-mcp-outside-"));
symlinkSync(outside, join(work, "escape"));

const { check, counts, finish } = checks(flavour);
let session;
let client;
let call;

// Waits for a condition that another process brings about, with a deadline (not a timing
// assertion: the deadline only turns a hang into a failure).
async function eventually(what, probe, deadline_ms = 60000) {
  const end = Date.now() + deadline_ms;
  for (;;) {
    const value = await probe();
    if (value) {
      return value;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// Processes that a run left behind: any descendant of the server, or any process whose working
// directory or command line is in the work folder (a tool's worker reparented after its oe
// exited), the server itself excepted.
function leftovers(server_pid) {
  const parents = new Map();
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") {
        continue;
      }
      parents.set(Number(entry), Number(fields[1]));
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      let cwd = "";
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
      } catch {}
      if (Number(entry) !== server_pid && (cmdline.includes(work) || cwd.startsWith(work))) {
        found.push(Number(entry));
      }
    } catch {}  // gone meanwhile
  }
  for (const [pid] of parents) {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) {
      if (p === server_pid) {
        found.push(pid);
        break;
      }
    }
  }
  return [...new Set(found)];
}

try {
  session = await connect(oe, flavour, { cwd: work });
  ({ client, call } = session);

  await check("the server names itself and offers tools and resources", async () => {
    expect(client.getServerVersion()?.name === "oe", "serverInfo.name oe");
    expect(client.getServerCapabilities()?.tools, "the tools capability");
    expect(client.getServerCapabilities()?.resources, "the resources capability");
  });

  // The flavours differ in what they negotiate: the 2.x client in "auto" mode probes
  // server/discover and must settle on the 2026-07-28 revision, the default 2.x client runs the
  // legacy initialize handshake. (The 1.x client does not say what it negotiated.)
  await check("the negotiated protocol revision is the flavour's", async () => {
    if (flavour === "v1") {
      return;
    }
    const era = client.getProtocolEra();
    const version = client.getNegotiatedProtocolVersion();
    if (flavour === "v2-auto") {
      expect(era === "modern" && version === "2026-07-28",
             `the modern era at 2026-07-28, got ${era} ${version}`);
    } else {
      expect(era === "legacy" && version === "2025-11-25",
             `the legacy era at 2025-11-25, got ${era} ${version}`);
    }
  });

  await check("tools/list lists upstream's tools and oe's own", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ["oe_validate", "oe_state", "oe_inspect", "oe_run", "oe_evolve",
                        "oe_ultra", "oe_ultra_revise", "oe_graph", "oe_resume", "oe_runs",
                        "oe_init", "oe_diff", "oe_approvals", "oe_decide"]) {
      expect(names.includes(name), `${name} in ${names}`);
    }
    const run = tools.find((t) => t.name === "oe_run");
    expect(run.inputSchema.required.includes("experience_path"), "oe_run requires experience_path");
  });

  await check("oe_validate: a valid experience", async () => {
    const out = structured(await call("oe_validate", { experience_path: "hello-tool" }));
    expect(out.valid === true && out.nodes === 1, `valid with 1 node: ${JSON.stringify(out)}`);
  });

  await check("oe_validate: an experience without a graph", async () => {
    const out = structured(await call("oe_validate", { experience_path: "broken" }));
    expect(out.valid === false && out.errors.length > 0, `errors: ${JSON.stringify(out)}`);
    expect(out.errors.some((e) => /graph/.test(e)), "an error about the graph");
  });

  await check("oe_state before any run", async () => {
    const out = structured(await call("oe_state", { experience_path: "hello-tool" }));
    expect(/no runs/i.test(out.note), `a note: ${JSON.stringify(out)}`);
  });

  let run_id;
  await check("oe_run runs hello-tool with progress notifications", async () => {
    const progress = [];
    const result = await call("oe_run", { experience_path: "hello-tool" },
                              { onprogress: (p) => progress.push(p) });
    const out = structured(result);
    expect(out.status === "success", `success: ${JSON.stringify(out)}`);
    expect(out.final_state.greeting === "hello, World", "greeting hello, World");
    expect(/^[0-9A-Za-z_-]+$/.test(out.run_id), `a run id: ${out.run_id}`);
    expect(JSON.parse(result.content[0].text).run_id === out.run_id, "the text form too");
    expect(progress.length >= 1, "at least one progress notification");
    const last = progress[progress.length - 1];
    expect(last.progress === 1 && last.total === 1, `1/1: ${JSON.stringify(last)}`);
    expect(/node greet finished \(1\/1\)/.test(last.message), `the message: ${last.message}`);
    run_id = out.run_id;
  });

  await check("oe_state after the run", async () => {
    const all = structured(await call("oe_state", { experience_path: "hello-tool" }));
    expect(all.snapshot.greeting === "hello, World", `snapshot: ${JSON.stringify(all)}`);
    const one = structured(await call("oe_state", { experience_path: "hello-tool",
                                                     field: "greeting" }));
    expect(one.field === "greeting" && one.value === "hello, World", JSON.stringify(one));
  });

  await check("oe_inspect returns the run's events", async () => {
    const out = structured(await call("oe_inspect", { experience_path: "hello-tool", run_id }));
    expect(out.events[0].type === "run.started", "run.started first");
    expect(out.events.some((e) => e.type === "state.write" && e.field === "greeting"),
           "state.write greeting");
    expect(out.events.at(-1).type === "run.finished" && out.events.at(-1).status === "success",
           "run.finished success last");
  });

  await check("oe_runs lists the run", async () => {
    const out = structured(await call("oe_runs", { experience_path: "hello-tool" }));
    expect(out.runs.length === 1 && out.runs[0].run_id === run_id, JSON.stringify(out));
  });

  await check("a parked run is listed by oe_approvals and continued by oe_decide", async () => {
    const parked = structured(await call("oe_run", { experience_path: "gated" }));
    expect(parked.status === "waiting", JSON.stringify(parked));
    const listed = structured(await call("oe_approvals", { experience_path: "gated" }));
    expect(listed.waiting.length === 1 && listed.waiting[0].run_id === parked.run_id &&
           listed.waiting[0].approvals[0].node_id === "review" &&
           listed.waiting[0].approvals[0].prompt === "Ship it", JSON.stringify(listed));
    const decided = structured(await call("oe_decide", {
      experience_path: "gated", run_id: parked.run_id, node: "review", decision: "approve",
      as: "ana", comment: "fine" }));
    expect(decided.recorded === true && decided.run.status === "success" &&
           decided.run.final_state.shipped === true &&
           decided.run.final_state.decision.by === "ana", JSON.stringify(decided));
    const late = structured(await call("oe_decide", {
      experience_path: "gated", run_id: parked.run_id, node: "review", decision: "reject",
      as: "bob" }));
    expect(late.recorded === false && late.message.includes("was already approved by ana"),
           JSON.stringify(late));
    const none = structured(await call("oe_approvals", { experience_path: "gated" }));
    expect(none.waiting.length === 0, JSON.stringify(none));
  });

  await check("oe_graph draws the graph", async () => {
    const out = structured(await call("oe_graph", { experience_path: "hello-tool",
                                                    direction: "LR" }));
    expect(out.mermaid.startsWith("flowchart LR"), out.mermaid);
  });

  await check("oe_evolve without an API key is an error naming the keys", async () => {
    // The SDKs pass the server only a safe environment (HOME, PATH, ...): no API key.
    const result = await call("oe_evolve", { experience_path: "hello-tool", run_id });
    expect(result.isError === true, `an error: ${JSON.stringify(result)}`);
    expect(/ANTHROPIC_API_KEY|OPENAI_API_KEY/.test(result.content[0].text),
           result.content[0].text);
    expect(result.content[0].text.startsWith("error in oe_evolve: "), result.content[0].text);
  });

  await check("the run's log and the state are resources", async () => {
    const { resources } = await client.listResources();
    const log = resources.find((r) => r.uri.startsWith("oe://runs/") && r.uri.endsWith(run_id));
    expect(log, `a resource for run ${run_id} in ${resources.map((r) => r.uri)}`);
    const read = await client.readResource({ uri: log.uri });
    expect(read.contents[0].text.split("\n")[0].includes("run.started"), "the JSONL log");
    const state = resources.find((r) => r.uri.startsWith("oe://state/"));
    const snapshot = JSON.parse((await client.readResource({ uri: state.uri })).contents[0].text);
    expect(snapshot.greeting === "hello, World", JSON.stringify(snapshot));
  });

  await check("a cancelled run is interrupted, leaves no process, and oe_resume completes it",
              async () => {
    const controller = new AbortController();
    const progress = [];
    // Cancelled once `wait` is running (its node.started is in the run's log): a SIGINT in the
    // instant between two nodes is the engine's to order, not what this test is about.
    const runs_dir = join(work, "slow", ".openexpertise", "runs");
    const waitStarted = () => readdirSync(runs_dir).filter((f) => f.endsWith(".jsonl")).some(
        (f) => readFileSync(join(runs_dir, f), "utf8").split("\n").some(
            (line) => line.includes('"node.started"') && line.includes('"node_id":"wait"')));
    let aborting = false;
    const pending = call("oe_run", { experience_path: "slow" }, {
      signal: controller.signal,
      onprogress: (p) => {
        progress.push(p);
        if (/node quick/.test(p.message ?? "") && !aborting) {
          aborting = true;
          eventually("the wait node to start", async () => waitStarted())
              .then(() => controller.abort("the test cancels"));
        }
      },
    });
    let rejected = false;
    try {
      await pending;
    } catch {
      rejected = true;
    }
    expect(rejected, "the aborted call rejects");
    expect(progress[0]?.total === 2, `progress of 2 nodes: ${JSON.stringify(progress)}`);
    const runs = await eventually("the run to be recorded as interrupted", async () => {
      const out = structured(await call("oe_runs", { experience_path: "slow" }));
      return out.runs.length === 1 && out.runs[0].status !== "unfinished" ? out.runs : null;
    });
    expect(runs[0].status === "interrupted", `interrupted: ${JSON.stringify(runs[0])}`);
    await eventually("no process left by the cancelled run",
                     async () => leftovers(session.transport.pid).length === 0, 30000)
        .catch(() => { throw new Error(`left running: ${leftovers(session.transport.pid)}`); });
    writeFileSync(join(work, "slow", "release"), "");
    const out = structured(await call("oe_resume", { experience_path: "slow",
                                                      run_id: runs[0].run_id }));
    expect(out.status === "success", `resumed to success: ${JSON.stringify(out)}`);
    expect(out.final_state.first === "quick done" && out.final_state.second === "released",
           JSON.stringify(out.final_state));
    expect(out.nodes.cached >= 1, `quick replayed from the cache: ${JSON.stringify(out.nodes)}`);
  });

  await check("an unknown tool is an error result", async () => {
    const result = await call("oe_nope", {});
    expect(result.isError === true && result.content[0].text === "unknown tool: oe_nope",
           JSON.stringify(result));
  });

  await check("paths outside the roots are refused", async () => {
    for (const path of ["/", "../..", "escape", join(work, "hello-tool", "..", "..")]) {
      const result = await call("oe_state", { experience_path: path });
      expect(result.isError === true && /outside the allowed roots/.test(result.content[0].text),
             `${path} refused: ${JSON.stringify(result)}`);
    }
    const init = await call("oe_init", { path: "escape/new-flow" });
    expect(init.isError === true, "oe_init through a symlink out of the roots is refused");
    expect(readdirSync(outside).length === 0, "nothing written outside");
  });

  await check("a tool printing to stdout does not corrupt the stream", async () => {
    const out = structured(await call("oe_run", { experience_path: "noisy" }));
    expect(out.status === "success" && out.final_state.said === "shouted", JSON.stringify(out));
    const { tools } = await client.listTools();
    expect(tools.length >= 10, "the session still works");
  });

  await check("oe_init creates an experience that validates", async () => {
    const out = structured(await call("oe_init", { path: "fresh-flow" }));
    expect(out.files.includes("experience.yaml"), JSON.stringify(out));
    const valid = structured(await call("oe_validate", { experience_path: "fresh-flow" }));
    expect(valid.valid === true, JSON.stringify(valid));
    const diff = structured(await call("oe_diff", { experience_path: "fresh-flow" }));
    expect(Array.isArray(diff.proposals) && diff.proposals.length === 0, JSON.stringify(diff));
  });
} catch (error) {
  counts.failed += 1;
  console.log(`FAIL ${flavour}: session: ${error?.stack ?? error}`);
} finally {
  await client?.close().catch(() => {});
}

finish(session, [work, outside]);
