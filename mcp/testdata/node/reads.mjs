// reads.mjs starts `harness mcp` on a workspace holding a 64 KiB file and
// a directory of 1,000 files (those bench.mjs reads and lists) and has it
// answer N calls, one at a time, over the stdio Node.js gives a child (a
// socket pair), without the SDK: reads of the file, or with --call
// listings of the directory (`list`: with workspace_list_files' defaults;
// `details`: with details: true). It is for counting what a call costs the
// server under a tool that wraps the process, such as cachegrind or
// /usr/bin/time: run it for two counts and take the difference, so that
// start-up falls out.
//
// Usage: node reads.mjs --harness PATH --reads N [--call read|list|details] [-- WRAPPER ARGS...]
// For example, per read, with the difference of N = 600 and N = 100 over
// 500:
//   node reads.mjs --harness bin/harness --reads 600 -- env GOMAXPROCS=1 GOGC=off \
//     valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=cg.600
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { benchRoot, harnessCalls, writeHarnessConfig } from './files.mjs';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const wrapper = dash >= 0 ? argv.slice(dash + 1) : [];
const opts = Object.fromEntries((dash >= 0 ? argv.slice(0, dash) : argv).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const reads = Number(opts.reads);
const listed = (res) => res.content[0].text.split('\n').length === 1000;
const calls = {
  read: { ...harnessCalls.read, check: (res) => res.content[0].text.length === 65536 },
  list: { ...harnessCalls.list, check: listed },
  details: { ...harnessCalls.details, check: listed },
};
const kind = calls[opts.call ?? 'read'];
if (!opts.harness || !(reads > 0) || !kind) {
  console.error('usage: node reads.mjs --harness PATH --reads N [--call read|list|details] [-- WRAPPER ARGS...]');
  process.exit(2);
}

const { work, root } = benchRoot('harness-mcp-reads-');
const config = join(work, 'harness.yaml');
writeHarnessConfig(config, { audit: join(work, 'audit.jsonl'), key: join(work, 'hmac.key') });
const command = [...wrapper, opts.harness, 'mcp', '--config', config, '--root', root];
const child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
async function call(id, method, params) {
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  const { value, done } = await lines.next();
  if (done) throw new Error('harness mcp ended');
  const msg = JSON.parse(value);
  if (msg.id !== id || msg.error || msg.result?.isError) throw new Error(`bad answer: ${value.slice(0, 300)}`);
  return msg.result;
}

try {
  await call(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'reads', version: '1' } });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  const t0 = performance.now();
  for (let i = 1; i <= reads; i++) {
    const res = await call(i, 'tools/call', { name: kind.name, arguments: kind.arguments });
    if (!kind.check(res)) throw new Error(`unexpected answer: ${res.content[0].text.slice(0, 300)}`);
  }
  console.log(`${reads} calls (${opts.call ?? 'read'}) in ${(performance.now() - t0).toFixed(0)} ms`);
  child.stdin.end();
  await new Promise((resolve) => child.on('exit', resolve));
} finally {
  rmSync(work, { recursive: true, force: true });
}
