// `oe mcp`'s oe_ultra and oe_ultra_revise end to end: an official MCP SDK client drives the
// server, whose `oe ultra` talks to a real local HTTP server speaking the OpenAI protocol (port
// 0) that answers each phase from a script, told apart by its system prompt.
// Usage: node mcp_ultra_test.mjs <path of oe> <v1|v2|v2-auto>
// Prints "N passed, N failed" last; exits 1 when anything failed.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { checks, connect, expect, structured } from "./mcp_client.mjs";

const [oe, flavour] = process.argv.slice(2);
if (!oe || !["v1", "v2", "v2-auto"].includes(flavour)) {
  console.error("usage: node mcp_ultra_test.mjs <oe> <v1|v2|v2-auto>");
  process.exit(2);
}

const analysis = {
  name: "greeter",
  description: "Greets the world",
  phases: [{ id: "greet" }],
  state_fields: [{ name: "greeting", type: "string" }],
  node_sketches: [{ id: "greet", kind: "tool", purpose: "greet" }],
};
const synthesis = (greeting) => ({
  experience_yaml: [
    "name: greeter", `description: says ${greeting}`, "version: 0.1.0",
    "state:", "  schema:", "    greeting: { type: string }",
    "graph:", "  nodes:",
    "    - { id: greet, kind: tool, impl: ./tools/greet.mjs, writes: [greeting] }",
    "  edges: []", "",
  ].join("\n"),
  files: [{
    path: "tools/greet.mjs",
    content: "export default async function greet() {\n" +
             `  return { state_delta: { greeting: ${JSON.stringify(greeting)} } };\n}\n`,
  }],
  next_steps: ["oe run the draft"],
});

// The provider: phase by system prompt; a task containing HANG-ME-7Q is never answered.
const requests = [];
const hanging = [];
const phaseOf = (body) => {
  const system = body.messages?.find((m) => m.role === "system")?.content ?? "";
  return system.includes("SOP architect") ? "analyze"
       : system.includes("SOP critic") ? "critique"
       : system.includes("synthesizer of oe") ? "synthesize"
       : system.includes("reviser of oe") ? "revise" : "other";
};
const answers = {
  analyze: analysis,
  synthesize: synthesis("hello from mcp"),
  critique: { score: 95, findings: [] },
  revise: synthesis("hello twice"),
};
const provider = createServer((req, res) => {
  let text = "";
  req.on("data", (chunk) => { text += chunk; });
  req.on("end", () => {
    const body = JSON.parse(text);
    const phase = phaseOf(body);
    requests.push({ phase, body: text });
    if (text.includes("HANG-ME-7Q")) {
      const pending = { closed: false };
      res.on("close", () => { pending.closed = true; });
      hanging.push(pending);
      return;  // never answered: the call is cancelled from the MCP side
    }
    const input = answers[phase] ?? {};
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({
      id: "chatcmpl-1", object: "chat.completion", created: 0, model: "gpt-4o-2024-11-20",
      choices: [{ index: 0, finish_reason: "tool_calls", message: {
        role: "assistant", content: null,
        tool_calls: [{ id: "call_1", type: "function",
                       function: { name: "structured_output", arguments: JSON.stringify(input) } }],
      } }],
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
    }));
  });
});
await new Promise((resolve) => provider.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${provider.address().port}/v1`;

const work = mkdtempSync(join(tmpdir(), `oe-mcp-ultra-${flavour}-`));
const outside = mkdtempSync(join(tmpdir(), "oe-mcp-ultra-outside-"));
const env = { ...process.env, OPENAI_API_KEY: "test-key", OPENAI_BASE_URL: base,
              ANTHROPIC_API_KEY: "" };
const { check, counts, finish } = checks(flavour);
let session;
try {
  session = await connect(oe, flavour, { cwd: work, env });
  const { call } = session;
  let draft_dir;

  await check("oe_ultra drafts an experience that validates, with progress per phase", async () => {
    const progress = [];
    const out = structured(await call("oe_ultra", { task: "Greet the world" },
                                      { onprogress: (p) => progress.push(p) }));
    expect(out.slug === "greeter", `slug greeter in ${JSON.stringify(out)}`);
    expect(out.validation?.valid === true, `a valid draft: ${JSON.stringify(out.validation)}`);
    expect(out.files_written.includes("experience.yaml") &&
           out.files_written.includes("tools/greet.mjs"), JSON.stringify(out.files_written));
    expect(out.draft_dir === join(work, ".openexpertise", "drafts", "greeter"), out.draft_dir);
    expect(out.synthesis?.file_paths?.includes("tools/greet.mjs"), JSON.stringify(out.synthesis));
    expect(!JSON.stringify(out.synthesis).includes("state_delta"), "no file contents in the result");
    draft_dir = out.draft_dir;
    // Progress is throttled (a few a second): fast phases share one notification.
    expect(progress.length > 0 && progress.every((p) => /^ultra \w+ \w+ \(round \d+\)$/.test(p.message)),
           `phase progress: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; ++i) {
      expect(progress[i].progress > progress[i - 1].progress, "increasing progress");
    }
    expect(requests.some((r) => r.phase === "analyze") &&
           requests.some((r) => r.phase === "synthesize"), "the phases reached the provider");
  });

  await check("the draft validates through oe_validate", async () => {
    const out = structured(await call("oe_validate", { experience_path: draft_dir }));
    expect(out.valid === true, JSON.stringify(out));
  });

  await check("oe_ultra_revise applies the feedback and keeps a valid revision", async () => {
    const out = structured(await call("oe_ultra_revise",
                                      { draft_dir, feedback: "say hello twice", max_rounds: 1 }));
    expect(out.validation?.valid === true, JSON.stringify(out.validation));
    expect(out.loop && typeof out.loop.rounds_run === "number", `loop: ${JSON.stringify(out)}`);
    const revise = requests.filter((r) => r.phase === "revise");
    expect(revise.some((r) => r.body.includes("say hello twice")), "the feedback reached the reviser");
    const yaml = readFileSync(join(draft_dir, "experience.yaml"), "utf8");
    expect(yaml.includes("says hello twice"), `the revision was written: ${yaml}`);
  });

  await check("a draft_root outside the roots is refused", async () => {
    const result = await call("oe_ultra", { task: "Greet", draft_root: outside });
    expect(result.isError === true, JSON.stringify(result));
    expect(!existsSync(join(outside, "greeter")), "nothing written outside");
  });

  await check("a cancelled oe_ultra stops its oe ultra and writes no draft", async () => {
    const controller = new AbortController();
    const pending = call("oe_ultra", { task: "HANG-ME-7Q", draft_root: "hung" },
                         { signal: controller.signal });
    const end = Date.now() + 60000;
    while (hanging.length === 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(hanging.length === 1, "the analyze request reached the provider");
    controller.abort();
    await pending.then(() => { throw new Error("the call resolved"); }, () => {});
    // The child oe ultra is gone when its connection to the provider closes.
    while (!hanging[0].closed && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(hanging[0].closed, "the child's request was closed");
    expect(!existsSync(join(work, "hung", "greeter")), "no draft written");
  });
} catch (error) {
  counts.failed += 1;
  console.log(`FAIL ${flavour}: session: ${error?.stack ?? error}`);
} finally {
  await session?.client.close().catch(() => {});
  provider.close();
}
finish(session, [work, outside]);
