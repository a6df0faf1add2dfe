// files.mjs is what bench.mjs and reads.mjs give `harness mcp` alike: the
// workspace (a 64 KiB file and a directory of 1,000 files), its
// configuration, and the calls that read and list them.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// benchRoot makes a new temporary directory holding root/big.txt (1,024
// lines of 64 bytes) and root/many/ (f0000.txt ... f0999.txt), and returns
// both paths.
export function benchRoot(prefix) {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const root = join(work, 'root');
  mkdirSync(join(root, 'many'), { recursive: true });
  writeFileSync(join(root, 'big.txt'), ('x'.repeat(63) + '\n').repeat(1024)); // 64 KiB
  for (let i = 0; i < 1000; i++) writeFileSync(join(root, 'many', `f${String(i).padStart(4, '0')}.txt`), 'x');
  return { work, root };
}

// writeHarnessConfig writes to path a configuration of `harness mcp` that
// auto-approves reads and listings, allows them the files above, and keeps
// its audit log and HMAC key where it is told.
export function writeHarnessConfig(path, { audit, key }) {
  writeFileSync(path, `harness:
  auto-approved-actions: [workspace_read_file, workspace_list_files]
  workspace:
    max-file-bytes: 1048576
    max-list-entries: 5000
  audit:
    path: ${audit}
  sanitize:
    key-path: ${key}
`);
}

// harnessCalls are the tool calls of a read of big.txt and of listings of
// many/: with the defaults, with details: false asked for, and with
// details: true.
export const harnessCalls = {
  read: { name: 'workspace_read_file', arguments: { path: 'big.txt' } },
  list: { name: 'workspace_list_files', arguments: { path: 'many' } },
  names: { name: 'workspace_list_files', arguments: { path: 'many', details: false } },
  details: { name: 'workspace_list_files', arguments: { path: 'many', details: true } },
};
