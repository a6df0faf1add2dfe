// drive.mjs connects the official MCP TypeScript SDK client to a server and
// runs a scenario given as JSON in argv[2]:
//
//   {"transport": "stdio", "command": "...", "args": [...], "env": {...}}
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp"}
//   "calls":  [{"name": "tool", "arguments": {...}}, ...]
//   "elicit": "accept" | "decline" | absent (absent: no elicitation capability)
//
// It prints one JSON object: the negotiated protocol version, the tools, the
// result (or error) of each call, and the elicitation messages it answered.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const scenario = JSON.parse(process.argv[2]);
const capabilities = scenario.elicit ? { elicitation: { form: {} } } : {};
const client = new Client({ name: 'sdk-driver', version: '1.0.0' }, { capabilities });
const elicitations = [];
if (scenario.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req.params.message);
    if (scenario.elicit === 'accept') return { action: 'accept', content: { confirm: true } };
    return { action: 'decline' };
  });
}

let transport;
if (scenario.transport === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(scenario.url));
} else {
  transport = new StdioClientTransport({
    command: scenario.command, args: scenario.args || [],
    env: { ...process.env, ...(scenario.env || {}) }, stderr: 'inherit',
  });
}

// The SDK keeps the negotiated version only inside HTTP transports; record it.
let negotiated = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => { negotiated = v; setVersion?.(v); };

const out = { calls: [] };
try {
  await client.connect(transport);
  out.protocolVersion = negotiated;
  out.serverInfo = client.getServerVersion();
  const { tools } = await client.listTools();
  out.tools = tools;
  for (const call of scenario.calls || []) {
    try {
      out.calls.push(await client.callTool({ name: call.name, arguments: call.arguments || {} }));
    } catch (err) {
      out.calls.push({ error: String(err && err.message || err) });
    }
  }
} catch (err) {
  out.error = String(err && err.stack || err);
}
out.elicitations = elicitations;
process.stdout.write(JSON.stringify(out) + '\n');
await client.close().catch(() => {});
process.exit(0);
