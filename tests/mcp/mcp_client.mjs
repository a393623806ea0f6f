// What the MCP end-to-end tests share: an official SDK client of the flavour asked for, which
// spawns `oe mcp` itself, and the checks' bookkeeping. Prints nothing of its own.
import { rmSync } from "node:fs";

export async function connect(oe, flavour, { cwd, env } = {}) {
  let client;
  let transport;
  const spawn = { command: oe, args: ["mcp"], cwd, stderr: "pipe", ...(env ? { env } : {}) };
  if (flavour === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    client = new Client({ name: "oe-mcp-test", version: "1.0.0" });
    transport = new StdioClientTransport(spawn);
  } else {
    const { Client } = await import("@modelcontextprotocol/client");
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    const options = flavour === "v2-auto" ? { versionNegotiation: { mode: "auto" } } : {};
    client = new Client({ name: "oe-mcp-test", version: "2.0.0" }, options);
    transport = new StdioClientTransport(spawn);
  }
  const session = { client, transport, stderr: "" };
  transport.stderr?.on("data", (chunk) => { session.stderr += chunk; });
  // The two lines differ in where callTool takes its options.
  session.call = (name, args, options = {}) =>
    flavour === "v1" ? client.callTool({ name, arguments: args }, undefined, options)
                     : client.callTool({ name, arguments: args }, options);
  await client.connect(transport);
  return session;
}

export function structured(result) {
  if (result.isError) {
    throw new Error(`tool error: ${result.content?.[0]?.text}`);
  }
  return result.structuredContent;
}

export function expect(condition, what) {
  if (!condition) {
    throw new Error(`expected ${what}`);
  }
}

// check(name, body) runs one check and counts it; summary() is the closing line.
export function checks(flavour) {
  const counts = { passed: 0, failed: 0 };
  return {
    counts,
    async check(name, body) {
      try {
        await body();
        counts.passed += 1;
        console.log(`ok   ${flavour}: ${name}`);
      } catch (error) {
        counts.failed += 1;
        console.log(`FAIL ${flavour}: ${name}: ${error?.stack ?? error}`);
      }
    },
    summary: () => `${counts.passed} passed, ${counts.failed} failed`,
    // The end of a test script: the server's stderr when something failed, the folders
    // removed, the closing line, the exit code.
    finish(session, folders) {
      if (counts.failed > 0) {
        console.log(`--- oe mcp stderr ---\n${session?.stderr ?? ""}`);
      }
      for (const folder of folders) {
        rmSync(folder, { recursive: true, force: true });
      }
      console.log(`${counts.passed} passed, ${counts.failed} failed`);
      process.exit(counts.failed > 0 ? 1 : 0);
    },
  };
}
