// null-server.mjs is the benchmark's floor: an MCP server over stdio that
// does no work per call. At start it reads the file and lists the
// directory it is given and serialises each answer once; a tools/call of
// "read" then writes the file's text, a call of "list" the directory's
// entries one a line (directories end in "/"), each as the result's one
// text block, with nothing else in it. What a client spends on a call to
// it is the least any server makes it spend for the same text.
//
// Usage: node null-server.mjs FILE DIR [PREFIX]
// PREFIX (default: none) goes before each entry's name, as the paths of a
// listing relative to a root read.
import { readFileSync, readdirSync } from 'node:fs';

const [file, dir, prefix = ''] = process.argv.slice(2);
if (!file || !dir) {
  process.stderr.write('usage: node null-server.mjs FILE DIR [PREFIX]\n');
  process.exit(2);
}
const text = readFileSync(file, 'utf8');
const listing = readdirSync(dir, { withFileTypes: true })
  .map((e) => prefix + e.name + (e.isDirectory() ? '/' : ''))
  .sort()
  .join('\n');
// Everything after the id of a response, ready to write.
const tail = (result) => ',"result":' + JSON.stringify(result) + '}\n';
const answers = {
  read: tail({ content: [{ type: 'text', text }] }),
  list: tail({ content: [{ type: 'text', text: listing }] }),
};
const open = { type: 'object', properties: {}, additionalProperties: true };
const tools = [
  { name: 'read', description: 'the file, serialised at start', inputSchema: open, annotations: { readOnlyHint: true } },
  { name: 'list', description: 'the directory, serialised at start', inputSchema: open, annotations: { readOnlyHint: true } },
];

function answer(msg) {
  const id = JSON.stringify(msg.id);
  switch (msg.method) {
    case 'tools/call': {
      const a = answers[msg.params?.name];
      if (a) return '{"jsonrpc":"2.0","id":' + id + a;
      return '{"jsonrpc":"2.0","id":' + id + ',"error":{"code":-32602,"message":"unknown tool"}}\n';
    }
    case 'initialize':
      return JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: {
        protocolVersion: msg.params?.protocolVersion ?? '2025-11-25',
        capabilities: { tools: {} }, serverInfo: { name: 'null', version: '1.0.0' },
      } }) + '\n';
    case 'tools/list':
      return JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools } }) + '\n';
    case 'ping':
      return '{"jsonrpc":"2.0","id":' + id + ',"result":{}}\n';
  }
  return '{"jsonrpc":"2.0","id":' + id + ',"error":{"code":-32601,"message":"method not found"}}\n';
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    if (!line.trim()) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      process.stdout.write('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n');
      continue;
    }
    if (msg.id === undefined || msg.id === null || !msg.method) continue; // notifications, answers
    process.stdout.write(answer(msg));
  }
});
process.stdin.on('end', () => process.exit(0));
