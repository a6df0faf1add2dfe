// bench.mjs measures `harness mcp` against the reference MCP filesystem
// server with the official TypeScript SDK client, on the same files in the
// same run:
//
//   start-up: spawn the server, connect, first tools/list complete
//   read:     N reads of a 64 KiB file (workspace_read_file / read_text_file)
//   list:     M listings of a 1,000-entry directory, names and types
//             (workspace_list_files with details: false / list_directory)
//
// Usage: node bench.mjs --harness PATH [--starts 20] [--reads 2000] [--lists 500]
//                       [--audit PATH] [--concurrency 1]
// --concurrency keeps that many calls in flight (default 1: one at a time).
// --audit puts Harness's audit log (fsynced before and after every trusted
// action, auto-approved reads included) at PATH instead of the work dir.
// Prints a table to stderr and the numbers as JSON to stdout. Besides wall
// time it reports each server process's CPU time per call (from /proc),
// which a loaded machine disturbs much less than latency.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
if (!args.harness) {
  console.error('usage: node bench.mjs --harness PATH [--starts N] [--reads N] [--lists N]');
  process.exit(2);
}
const starts = Number(args.starts ?? 20);
const reads = Number(args.reads ?? 2000);
const lists = Number(args.lists ?? 500);
const concurrency = Math.max(1, Number(args.concurrency ?? 1));

const here = dirname(fileURLToPath(import.meta.url));
const fsServer = join(here, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

// The same files for both servers.
const work = mkdtempSync(join(tmpdir(), 'harness-mcp-bench-'));
const root = join(work, 'root');
mkdirSync(join(root, 'many'), { recursive: true });
const line = 'x'.repeat(63) + '\n';
writeFileSync(join(root, 'big.txt'), line.repeat(1024)); // 64 KiB
for (let i = 0; i < 1000; i++) writeFileSync(join(root, 'many', `f${String(i).padStart(4, '0')}.txt`), 'x');
const config = join(work, 'harness.yaml');
writeFileSync(config, `harness:
  auto-approved-actions: [workspace_read_file, workspace_list_files]
  workspace:
    max-file-bytes: 1048576
    max-list-entries: 5000
  audit:
    path: ${args.audit ?? join(work, 'audit.jsonl')}
  sanitize:
    key-path: ${join(work, 'hmac.key')}
`);

const servers = {
  harness: {
    command: args.harness, args: ['mcp', '--config', config, '--root', root],
    read: { name: 'workspace_read_file', arguments: { path: 'big.txt' } },
    // details: false lists names and types, what list_directory gives;
    // the default also stats every entry for its size and mod_time.
    list: { name: 'workspace_list_files', arguments: { path: 'many', details: false } },
  },
  'server-filesystem': {
    command: process.execPath, args: [fsServer, root],
    read: { name: 'read_text_file', arguments: { path: join(root, 'big.txt') } },
    list: { name: 'list_directory', arguments: { path: join(root, 'many') } },
  },
};

async function connect(s) {
  const client = new Client({ name: 'harness-bench', version: '1.0.0' });
  const transport = new StdioClientTransport({ command: s.command, args: s.args, stderr: 'ignore' });
  await client.connect(transport);
  client.pid = transport.pid;
  return client;
}

// cpuMs is the user+system CPU time a process has used, in milliseconds.
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // utime, stime in 10 ms ticks
  } catch {
    return NaN;
  }
}

function stats(samples, totalMs) {
  const sorted = [...samples].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { n: samples.length, ops_per_s: samples.length / (totalMs / 1000), p50_ms: q(0.5), p99_ms: q(0.99) };
}

async function startup(s) {
  const samples = [];
  const t0 = performance.now();
  for (let i = 0; i < starts; i++) {
    const t = performance.now();
    const client = await connect(s);
    const { tools } = await client.listTools();
    samples.push(performance.now() - t);
    if (!tools.length) throw new Error('no tools');
    await client.close();
  }
  return stats(samples, performance.now() - t0);
}

async function calls(client, call, n, check) {
  for (let i = 0; i < 20; i++) await client.callTool(call); // warm up
  const samples = [];
  const cpu0 = cpuMs(client.pid);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const t = performance.now();
      const res = await client.callTool(call);
      samples.push(performance.now() - t);
      if (i === 0) check(res);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const out = stats(samples, performance.now() - t0);
  out.server_cpu_ms_per_op = (cpuMs(client.pid) - cpu0) / n;
  const own = process.cpuUsage(own0);
  out.client_cpu_ms_per_op = (own.user + own.system) / 1000 / n;
  return out;
}

const results = {};
try {
  for (const [name, s] of Object.entries(servers)) {
    results[name] = { startup: await startup(s) };
    const client = await connect(s);
    results[name].read = await calls(client, s.read, reads, (res) => {
      if (res.isError || !res.content[0].text.startsWith('xxxx') || res.content[0].text.length < 65536) {
        throw new Error(`${name}: bad read: ${JSON.stringify(res).slice(0, 300)}`);
      }
    });
    results[name].list = await calls(client, s.list, lists, (res) => {
      const text = res.content[0].text;
      if (res.isError || (text.match(/f0999/g) || []).length !== 1) {
        throw new Error(`${name}: bad listing: ${text.slice(0, 300)}`);
      }
    });
    await client.close();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const h = results.harness, r = results['server-filesystem'];
const ratio = {
  startup_p50: r.startup.p50_ms / h.startup.p50_ms,
  read_throughput: h.read.ops_per_s / r.read.ops_per_s,
  list_throughput: h.list.ops_per_s / r.list.ops_per_s,
  read_server_cpu: r.read.server_cpu_ms_per_op / h.read.server_cpu_ms_per_op,
  list_server_cpu: r.list.server_cpu_ms_per_op / h.list.server_cpu_ms_per_op,
};
const fmt = (x) => x.toFixed(x < 10 ? 2 : 0).padStart(8);
console.error(`                      ${'harness'.padStart(28)}   ${'server-filesystem'.padStart(28)}   ratio`);
console.error(`                      ${'ops/s   p50 ms   p99 ms'.padStart(28)}   ${'ops/s   p50 ms   p99 ms'.padStart(28)}`);
for (const [k, label] of [['startup', `start-up to tools/list x${starts}`], ['read', `read 64 KiB x${reads}`], ['list', `list 1,000 entries x${lists}`]]) {
  const row = (s) => `${fmt(s.ops_per_s)} ${fmt(s.p50_ms)} ${fmt(s.p99_ms)}`;
  const rt = k === 'startup' ? `${ratio.startup_p50.toFixed(1)}x faster start` : `${(k === 'read' ? ratio.read_throughput : ratio.list_throughput).toFixed(1)}x throughput`;
  console.error(`${label.padEnd(30)} ${row(h[k])}   ${row(r[k])}   ${rt}`);
}
for (const k of ['read', 'list']) {
  console.error(`${('server CPU ms per ' + k).padEnd(30)} ${fmt(h[k].server_cpu_ms_per_op).padStart(26)}   ${fmt(r[k].server_cpu_ms_per_op).padStart(26)}   ${ratio[k + '_server_cpu'].toFixed(1)}x less CPU`);
}
for (const k of ['read', 'list']) {
  console.error(`${('client CPU ms per ' + k).padEnd(30)} ${fmt(h[k].client_cpu_ms_per_op).padStart(26)}   ${fmt(r[k].client_cpu_ms_per_op).padStart(26)}`);
}
console.error(`(calls in flight: ${concurrency})`);
process.stdout.write(JSON.stringify({ concurrency, harness: h, 'server-filesystem': r, ratio }, null, 2) + '\n');
