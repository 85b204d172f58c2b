// A client written with the official TypeScript SDK, for TestMCPTypeScriptSDK.
// usage: node tsclient.mjs SDKDIR TOOL ARGS_JSON -- COMMAND ARGS...   (stdio)
//        node tsclient.mjs SDKDIR TOOL ARGS_JSON http URL TOKEN
// It lists the tools, calls TOOL plainly, then as a task if the tool
// supports tasks (the SDK decides, from tools/list), and prints one JSON
// object with what it saw.
import path from 'node:path';

const [sdk, tool, argsJSON, mode, ...rest] = process.argv.slice(2);
const dist = path.join(sdk, 'node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(path.join(dist, 'client/index.js'));

let transport;
if (mode === 'http') {
  const { StreamableHTTPClientTransport } = await import(path.join(dist, 'client/streamableHttp.js'));
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), {
    requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } },
  });
} else {
  const { StdioClientTransport } = await import(path.join(dist, 'client/stdio.js'));
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'ignore' });
}
const client = new Client({ name: 'agentgw-ts-test', version: '1.0.0' });
const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.protocolVersion = transport.protocolVersion ?? null;
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name);
  const args = JSON.parse(argsJSON);
  out.call = await client.callTool({ name: tool, arguments: args });
  out.stream = [];
  for await (const m of client.experimental.tasks.callToolStream({ name: tool, arguments: args })) {
    out.stream.push(m.type);
    if (m.type === 'result') out.streamResult = m.result;
    if (m.type === 'error') out.streamError = String(m.error);
  }
} catch (e) {
  out.error = String(e && e.stack || e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
