// The ES-module source the persistent Node.js tool worker runs (`node --input-type=module
// --eval <this>`). Protocol (docs/tools.md): requests arrive on fd 3, one JSON object a line,
//   {"id": N, "path": "/abs/tool.mjs", "input": {...}}   or   {"ping": N};
// replies leave on fd 4 as "<N> <json>\n", where <json> is {"ok": true, "result": <value>},
// {"ok": false, "code": "...", "name"?, "message"?, "stack"?, "location"?} or {"pong": true}.
// fds 1 and 2 both go to the log pipe, so a tool's console.log can never corrupt a reply.
#pragma once

namespace oe::tool {

inline constexpr const char* kNodeShimSource = R"JS(
import { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { execFile } from 'node:child_process';

const REQUEST_FD = 3;
const REPLY_FD = 4;

// Tools print with console.log as they would in any Node program; that goes to the log.
console.log = console.error;
console.info = console.error;
console.debug = console.error;

const modules = new Map();  // absolute path -> Promise of the module namespace

function reply(id, body) {
  const bytes = Buffer.from(`${id} ${body}\n`);
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(REPLY_FD, bytes, offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
    }
  }
}

function errorInfo(error) {
  if (error instanceof Error) {
    return {
      name: String(error.name ?? 'Error'),
      message: String(error.message ?? ''),
      stack: typeof error.stack === 'string' ? error.stack : '',
    };
  }
  let message;
  try {
    message = typeof error === 'string' ? error : JSON.stringify(error) ?? String(error);
  } catch {
    message = Object.prototype.toString.call(error);
  }
  return { name: '', message, stack: '' };
}

// Node does not say where a syntax error is when a module is imported dynamically;
// `node --check` does (first stderr line "<path>:<line>").
function syntaxLocation(path) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--check', path], { timeout: 10000 }, (_error, _out, stderr) => {
      const first = String(stderr ?? '').split('\n')[0];
      resolve(first.startsWith(`${path}:`) ? first : '');
    });
  });
}

function load(path) {
  let module = modules.get(path);
  if (module === undefined) {
    module = import(pathToFileURL(path).href);
    modules.set(path, module);
  }
  return module;
}

async function handle(request) {
  const { id, path, input } = request;
  let module;
  try {
    module = await load(path);
  } catch (error) {
    const info = errorInfo(error);
    if (info.name === 'SyntaxError') info.location = await syntaxLocation(path);
    reply(id, JSON.stringify({ ok: false, code: 'import', ...info }));
    return;
  }
  const run = module.default;
  if (typeof run !== 'function') {
    reply(id, '{"ok":false,"code":"no_default"}');
    return;
  }
  let result;
  try {
    result = await run(input);
  } catch (error) {
    reply(id, JSON.stringify({ ok: false, code: 'threw', ...errorInfo(error) }));
    return;
  }
  if (result === null || typeof result !== 'object') {
    reply(id, '{"ok":false,"code":"not_object"}');
    return;
  }
  let text;
  try {
    text = JSON.stringify(result);
  } catch (error) {
    reply(id, JSON.stringify({ ok: false, code: 'not_json', ...errorInfo(error) }));
    return;
  }
  if (text === undefined) {
    reply(id, '{"ok":false,"code":"not_object"}');
    return;
  }
  reply(id, `{"ok":true,"result":${text}}`);
}

const requests = createInterface({
  input: new Socket({ fd: REQUEST_FD, readable: true, writable: false }),
  crlfDelay: Infinity,
});
requests.on('line', (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    process.stderr.write(`oe tool worker: unreadable request: ${error.message}\n`);
    return;
  }
  if (request.ping !== undefined) {
    reply(request.ping, '{"pong":true}');
    return;
  }
  handle(request).catch((error) => {
    reply(request.id, JSON.stringify({ ok: false, code: 'internal', ...errorInfo(error) }));
  });
});
// The plugin closed the request pipe: it is shutting down.
requests.on('close', () => process.exit(0));
)JS";

}  // namespace oe::tool
