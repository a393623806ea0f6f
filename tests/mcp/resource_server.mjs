// A real MCP server over stdio, built with the official SDK (McpServer), that the dataset
// plugin's mcp-resource tests read from. `node resource_server.mjs [mode]`:
//   (none)          serve the resources below
//   exit-at-start   print a reason on stderr and exit 3 before reading anything
//   stubborn        serve, but ignore SIGTERM and stdin EOF and keep a child `sleep` in the
//                   process group (its pid in $OE_TEST_PID_FILE): only SIGKILL ends it
// Resources: test://rows (a JSON array), test://object (a JSON object), test://text (plain
// text), test://blob (a blob), test://mixed (several contents), test://env (the server's env
// and cwd), test://probe (talks back to the client first), test://broken (the callback throws),
// test://hang (never answers).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const mode = process.argv[2] ?? '';
if (mode === 'exit-at-start') {
  process.stderr.write('resource_server: cannot open the catalogue (exit-at-start mode)\n');
  process.exit(3);
}
if (mode === 'stubborn') {
  process.on('SIGTERM', () => {});
  const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
  if (process.env.OE_TEST_PID_FILE) {
    writeFileSync(process.env.OE_TEST_PID_FILE, `${process.pid} ${child.pid}\n`);
  }
}

const server = new McpServer({ name: 'oe-test-resources', version: '1.0.0' },
  { capabilities: { logging: {} } });
const text = (uri, body, mimeType) => ({
  contents: [{ uri: uri.href, text: body, ...(mimeType ? { mimeType } : {}) }],
});

server.registerResource('rows', 'test://rows', { mimeType: 'application/json' }, (uri) =>
  text(uri, '  [{"id":1,"name":"ada"},{"id":2,"name":"grace"}]\n', 'application/json'));
server.registerResource('object', 'test://object', {}, (uri) =>
  text(uri, '{"total":3,"unit":"kg"}'));
server.registerResource('text', 'test://text', {}, (uri) =>
  text(uri, 'hello, plain text\n', 'text/plain'));
server.registerResource('blob', 'test://blob', {}, (uri) => ({
  contents: [{ uri: uri.href, blob: Buffer.from('\x00\x01binary').toString('base64'),
    mimeType: 'application/octet-stream' }],
}));
server.registerResource('mixed', 'test://mixed', {}, (uri) => ({
  contents: [
    { uri: uri.href, text: '[1, 2]' },
    { uri: uri.href, text: '[not json' },
    { uri: uri.href, blob: 'AAE=' },
  ],
}));
server.registerResource('env', 'test://env', {}, (uri) =>
  text(uri, JSON.stringify({ greeting: process.env.OE_TEST_GREETING ?? null, cwd: process.cwd(),
    path_set: Boolean(process.env.PATH) })));
server.registerResource('probe', 'test://probe', {}, async (uri) => {
  // What a client meets in the wild: a notification, a stray line on stdout, a ping from the
  // server, and a request for a method the client does not serve.
  await server.server.sendLoggingMessage({ level: 'info', data: 'probing the client' });
  process.stdout.write('this line is not JSON-RPC\n');
  await server.server.ping();
  let unknownCode = null;
  try {
    await server.server.request({ method: 'oe-test/unknown', params: {} },
      z.object({}).passthrough());
  } catch (error) {
    unknownCode = error.code ?? String(error);
  }
  return text(uri, JSON.stringify({ ping: 'ok', unknown_code: unknownCode }));
});
server.registerResource('broken', 'test://broken', {}, () => {
  throw new Error('the catalogue database is locked');
});
server.registerResource('hang', 'test://hang', {}, () => new Promise(() => {}));

await server.connect(new StdioServerTransport());
