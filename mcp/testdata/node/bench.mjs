// bench.mjs measures `harness mcp` with the official TypeScript SDK client
// against two other stdio servers, on the same files in the same run:
//
//   null               null-server.mjs: answers with the text serialised
//                      once at start; what the client itself can take
//   server-filesystem  @modelcontextprotocol/server-filesystem, the
//                      reference server
//   harness            harness mcp (and, with --baseline, a second build
//                      of it, to compare two versions in one run)
//
// and reports, for each:
//
//   start-up:  spawn the server, connect, first tools/list complete
//   read:      reads of a 64 KiB file (workspace_read_file / read_text_file)
//   list:      listings of a 1,000-entry directory: workspace_list_files
//              with its defaults (names and types, in the text block), with
//              details: false (the same, asked for), and with details: true
//              (each entry's size and mod_time too, beside the reference's
//              list_directory_with_sizes); list_directory for the
//              reference. The directory does not change between calls,
//              so Harness answers from its listing cache (see
//              workspace/listcache_linux.go); BenchmarkBridgeList* in Go
//              measure a listing with the cache off and after a change.
//
// with each server process's CPU time per call (from /proc) and the
// client's own, which a loaded machine disturbs much less than rates.
// Servers take turns in rounds, so that a change in the machine's load
// falls on all of them alike.
//
// Usage: node bench.mjs --harness PATH [--baseline PATH] [--starts 20]
//                       [--reads 4000] [--lists 1000] [--rounds 40]
//                       [--audit PATH] [--concurrency 1]
// --concurrency keeps that many calls in flight (default 1: one at a time).
// --audit puts Harness's audit log at PATH instead of the work dir.
// Prints a table to stderr and the numbers as JSON to stdout, with the
// ratios the project's targets name: reads >= 80% of the null server's
// rate, listings (both) >= 3x the reference's, start-up <= 1/5 of its.
// The targets are judged on each server's calls over the whole run; the
// spread of the reads' ratio round by round (harness against the null
// server in the same round) is printed beside them, since on a shared
// machine a few slow rounds move a short run: many short rounds keep
// that noise from falling on one server more than another.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { rmSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { benchRoot, harnessCalls, writeHarnessConfig } from './files.mjs';

// A full collection of the client's heap before each timed turn, so that
// no server's turn pays for the garbage of the turn before it.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
if (!args.harness) {
  console.error('usage: node bench.mjs --harness PATH [--baseline PATH] [--starts N] [--reads N] [--lists N] [--rounds N]');
  process.exit(2);
}
const starts = Number(args.starts ?? 20);
const reads = Number(args.reads ?? 4000);
const lists = Number(args.lists ?? 1000);
const rounds = Math.max(1, Number(args.rounds ?? 40));
const concurrency = Math.max(1, Number(args.concurrency ?? 1));

const here = dirname(fileURLToPath(import.meta.url));
const fsServer = join(here, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

// The same files for every server.
const { work, root } = benchRoot('harness-mcp-bench-');

function harnessServer(bin, name) {
  const config = join(work, `${name}.yaml`);
  writeHarnessConfig(config, {
    audit: args.audit ? `${args.audit}.${name}` : join(work, `${name}-audit.jsonl`),
    key: join(work, `${name}-hmac.key`),
  });
  return { command: bin, args: ['mcp', '--config', config, '--root', root], ...harnessCalls };
}
const listDirectory = { name: 'list_directory', arguments: { path: join(root, 'many') } };
const servers = {
  null: {
    command: process.execPath, args: [join(here, 'null-server.mjs'), join(root, 'big.txt'), join(root, 'many'), 'many/'],
    read: { name: 'read', arguments: {} }, list: { name: 'list', arguments: {} }, names: { name: 'list', arguments: {} },
    details: { name: 'list', arguments: {} },
  },
  'server-filesystem': {
    command: process.execPath, args: [fsServer, root],
    read: { name: 'read_text_file', arguments: { path: join(root, 'big.txt') } }, list: listDirectory, names: listDirectory,
    details: { name: 'list_directory_with_sizes', arguments: { path: join(root, 'many') } },
  },
  harness: harnessServer(args.harness, 'harness'),
};
if (args.baseline) servers.baseline = harnessServer(args.baseline, 'baseline');
const names = Object.keys(servers);

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

// A tally adds up one measurement over the rounds.
const tally = () => ({ samples: [], ms: 0, serverCpu: 0, clientCpu: 0, rounds: [] }); // rounds: ops/s of each round
function summary(t) {
  const sorted = [...t.samples].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  const n = t.samples.length;
  return {
    n, ops_per_s: n / (t.ms / 1000), p50_ms: q(0.5), p99_ms: q(0.99),
    server_cpu_ms_per_op: t.serverCpu / n, client_cpu_ms_per_op: t.clientCpu / n, rounds: t.rounds,
  };
}

async function startupRound(s, n, t) {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const client = await connect(s);
    const { tools } = await client.listTools();
    t.samples.push(performance.now() - t0);
    t.ms += performance.now() - t0;
    if (!tools.length) throw new Error('no tools');
    await client.close();
  }
}

async function callRound(client, call, n, t, check) {
  collect();
  const cpu0 = cpuMs(client.pid);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const s = performance.now();
      const res = await client.callTool(call);
      t.samples.push(performance.now() - s);
      if (i === 0) check(res);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = performance.now() - t0;
  t.ms += ms;
  t.rounds.push(n / (ms / 1000));
  t.serverCpu += cpuMs(client.pid) - cpu0;
  const own = process.cpuUsage(own0);
  t.clientCpu += (own.user + own.system) / 1000;
}

const checks = {
  read: (name) => (res) => {
    if (res.isError || !res.content[0].text.startsWith('xxxx') || res.content[0].text.length < 65536) {
      throw new Error(`${name}: bad read: ${JSON.stringify(res).slice(0, 300)}`);
    }
  },
  list: (name) => (res) => {
    const text = res.content[0].text;
    if (res.isError || (text.match(/f0999/g) || []).length !== 1) {
      throw new Error(`${name}: bad listing: ${text.slice(0, 300)}`);
    }
  },
};
checks.names = checks.list;
checks.details = checks.list;

const results = Object.fromEntries(names.map((n) => [n, { startup: tally(), read: tally(), list: tally(), names: tally(), details: tally() }]));
try {
  // Start-up first, each server in turn.
  const startRounds = Math.min(rounds, starts);
  const per = Math.max(1, Math.round(starts / startRounds));
  for (let r = 0; r < startRounds; r++) {
    for (const name of r % 2 ? [...names].reverse() : names) await startupRound(servers[name], per, results[name].startup);
  }
  const clients = {};
  for (const name of names) {
    clients[name] = await connect(servers[name]);
    for (const k of ['read', 'list', 'names', 'details']) {
      for (let i = 0; i < 20; i++) await clients[name].callTool(servers[name][k]); // warm up
    }
  }
  for (const [k, total] of [['read', reads], ['list', lists], ['names', lists], ['details', lists]]) {
    const n = Math.max(1, Math.round(total / rounds));
    for (let r = 0; r < rounds; r++) {
      for (const name of r % 2 ? [...names].reverse() : names) {
        await callRound(clients[name], servers[name][k], n, results[name][k], checks[k](name));
      }
    }
  }
  for (const name of names) await clients[name].close();
} finally {
  rmSync(work, { recursive: true, force: true });
}

const out = Object.fromEntries(names.map((n) => [n, Object.fromEntries(Object.entries(results[n]).map(([k, t]) => [k, summary(t)]))]));
const h = out.harness, r = out['server-filesystem'], z = out.null;
const ratio = {
  read_vs_null: h.read.ops_per_s / z.read.ops_per_s,
  list_vs_reference: h.list.ops_per_s / r.list.ops_per_s,
  names_vs_reference: h.names.ops_per_s / r.names.ops_per_s,
  details_vs_reference: h.details.ops_per_s / r.details.ops_per_s, // list_directory_with_sizes: no target
  startup_vs_reference: r.startup.p50_ms / h.startup.p50_ms,
  read_vs_reference: h.read.ops_per_s / r.read.ops_per_s,
};
if (out.baseline) {
  ratio.read_vs_baseline = h.read.ops_per_s / out.baseline.read.ops_per_s;
  ratio.list_vs_baseline = h.list.ops_per_s / out.baseline.list.ops_per_s;
  ratio.names_vs_baseline = h.names.ops_per_s / out.baseline.names.ops_per_s;
}
// The reads' ratio round by round: harness's rate over the null server's
// in the same round.
const perRound = h.read.rounds.map((x, i) => x / z.read.rounds[i]).sort((a, b) => a - b);
const spread = {
  read_vs_null_by_round: {
    rounds: perRound.length, min: perRound[0], median: perRound[Math.floor(perRound.length / 2)], max: perRound[perRound.length - 1],
  },
};
const targets = [
  ['64 KiB reads >= 80% of the null server', ratio.read_vs_null, 0.8],
  ['listings (defaults) >= 3x the reference', ratio.list_vs_reference, 3],
  ['listings (details: false) >= 3x the reference', ratio.names_vs_reference, 3],
  ['start-up <= 1/5 of the reference', ratio.startup_vs_reference, 5],
];

const num = (x, w = 8) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 0) : '-').padStart(w);
const rows = [
  ['startup', `start-up to tools/list x${starts}`],
  ['read', `read 64 KiB x${reads}`],
  ['list', `list 1,000 (defaults) x${lists}`],
  ['names', `list 1,000 (names) x${lists}`],
  ['details', `list 1,000 (sizes) x${lists}`],
];
const col = (s) => s.padStart(34);
console.error(`${''.padEnd(32)}${names.map((n) => col(n)).join('')}`);
console.error(`${''.padEnd(32)}${names.map(() => col('ops/s  p50 ms  srv ms  cli ms')).join('')}`);
for (const [k, label] of rows) {
  const cells = names.map((n) => {
    const s = out[n][k];
    const cpu = k === 'startup' ? ['', ''] : [num(s.server_cpu_ms_per_op, 7), num(s.client_cpu_ms_per_op, 7)];
    return col(`${num(s.ops_per_s, 7)} ${num(s.p50_ms, 7)} ${cpu[0].padStart(7)} ${cpu[1].padStart(7)}`);
  });
  console.error(`${label.padEnd(32)}${cells.join('')}`);
}
console.error('(ops/s; p50 latency; server and client CPU ms per call; calls in flight: ' + concurrency + ')');
for (const [label, got, want] of targets) {
  console.error(`${label.padEnd(48)} ${got.toFixed(2).padStart(6)}  ${got >= want ? 'met' : 'NOT MET'}`);
}
{
  const r = spread.read_vs_null_by_round;
  console.error(`64 KiB reads against the null server, round by round: min ${r.min.toFixed(2)}, median ${r.median.toFixed(2)}, max ${r.max.toFixed(2)} (${r.rounds} rounds)`);
}
if (out.baseline) {
  console.error(`against --baseline: reads ${ratio.read_vs_baseline.toFixed(2)}x, listings ${ratio.list_vs_baseline.toFixed(2)}x, names ${ratio.names_vs_baseline.toFixed(2)}x`);
}
process.stdout.write(JSON.stringify({ concurrency, ...out, ratio, spread }, null, 2) + '\n');
