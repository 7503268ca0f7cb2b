// A test client on the MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// tests/mcp/ts_clients.py): several tool calls on ONE connection, so state kept
// across calls is seen the way a desktop or IDE host sees it.
//
//   node ts_client.mjs SDK_DIR STEPS_JSON -- COMMAND ARGS...
//
// STEPS_JSON is a list of {"tool": name, "arguments": {...}}; a string argument
// "$N.field" is replaced by field of step N's structured content. Prints one
// JSON line per step: {"result": CallToolResult} or {"protocolError": message}
// (what the SDK's own client raised, e.g. an output-schema mismatch).
import { createRequire } from "node:module";
import path from "node:path";

const [sdkDir, stepsJson, sep, command, ...args] = process.argv.slice(2);
if (sep !== "--" || !command) {
  console.error("usage: ts_client.mjs SDK_DIR STEPS_JSON -- COMMAND ARGS...");
  process.exit(2);
}
const require = createRequire(path.join(sdkDir, "package.json"));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport, getDefaultEnvironment } = await import(
  require.resolve("@modelcontextprotocol/sdk/client/stdio.js")
);

const transport = new StdioClientTransport({
  command,
  args,
  env: { ...getDefaultEnvironment(), ...JSON.parse(process.env.MCP_TEST_SERVER_ENV || "{}") },
  stderr: "inherit",
});
const client = new Client({ name: "ts sdk test", version: "0" });
await client.connect(transport);
await client.listTools(); // the client keeps the output schemas it validates against

const results = [];
const fill = (value) => {
  if (typeof value === "string") {
    const m = /^\$(\d+)\.(\w+)$/.exec(value);
    if (m) return results[Number(m[1])]?.structuredContent?.[m[2]];
    return value;
  }
  if (Array.isArray(value)) return value.map(fill);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
  }
  return value;
};
for (const step of JSON.parse(stepsJson)) {
  let line;
  try {
    const result = await client.callTool({ name: step.tool, arguments: fill(step.arguments ?? {}) });
    results.push(result);
    line = { result };
  } catch (e) {
    results.push(null);
    line = { protocolError: String(e?.message ?? e), code: e?.code ?? null };
  }
  process.stdout.write(JSON.stringify(line) + "\n");
}
await client.close();
