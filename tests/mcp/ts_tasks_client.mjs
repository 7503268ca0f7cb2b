// A tasks client on the MCP TypeScript SDK v2 (@modelcontextprotocol/client)
// and the tasks extension's own client (@modelcontextprotocol/ext-tasks),
// both pinned in tests/mcp/ts_clients.py, on protocol 2026-07-28.
//
//   node ts_tasks_client.mjs SDK_DIR COMMAND_JSON SECRET -- SERVER ARGS...
//
// Runs bash_exec COMMAND_JSON's command as a task (wait_ms 100) through the
// extension's session, which polls tasks/get and answers input requests with
// tasks/update. Its elicitation handler plays the person: it opens the link,
// posts SECRET there, and accepts. Then runs `echo next` on the same
// terminal. Prints one JSON line: the task states seen, the requests the
// person got, both results.
//
// A client's restart, as the extension recovers from one: with
// MCP_TEST_TASK_MODE=handoff it starts the task, hands it off (the
// extension's serialized reference) and exits, printing {kind, reference};
// with MCP_TEST_TASK_MODE=resume and the reference in MCP_TEST_TASK_REFERENCE
// (another process, another server) it resumes that task and prints its
// outcome and result.
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, commandJson, secret, sep, command, ...args] = process.argv.slice(2);
if (sep !== "--" || !command) {
  console.error("usage: ts_tasks_client.mjs SDK_DIR COMMAND_JSON SECRET -- SERVER ARGS...");
  process.exit(2);
}
const mod = (rel) => import(pathToFileURL(path.join(sdkDir, "node_modules", "@modelcontextprotocol", rel)).href);
const { Client } = await mod("client/dist/index.mjs");
const { StdioClientTransport, getDefaultEnvironment } = await mod("client/dist/stdio.mjs");
const { createTaskSessionFromClient, createApplicationInputHandler, resultFromTaskOutcome } = await mod(
  "ext-tasks/dist/client/index.js",
);

const PROTOCOL = "2026-07-28";
const clientInfo = { name: "ts tasks test", version: "0" };
const capabilities = { elicitation: { url: {} } };
const transport = new StdioClientTransport({
  command,
  args,
  env: { ...getDefaultEnvironment(), ...JSON.parse(process.env.MCP_TEST_SERVER_ENV || "{}") },
  stderr: "inherit",
});
const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: "auto" } });
await client.connect(transport);
if (client.getProtocolVersion?.() !== undefined && client.getProtocolVersion() !== PROTOCOL) {
  throw new Error(`negotiated ${client.getProtocolVersion()}, not ${PROTOCOL}`);
}

// The raw request path the extension needs for tools/call and tasks/* on
// 2026-07-28 (the SDK's codecs refuse a task result): requests with ids of
// their own, whose responses are taken off the transport before the SDK.
const pending = new Map();
let next = 0;
const sdkOnMessage = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (message && !("method" in message) && pending.has(message.id)) {
    const resolve = pending.get(message.id);
    pending.delete(message.id);
    resolve(message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result });
    return;
  }
  sdkOnMessage?.call(transport, message, extra);
};
const rawDispatch = (request) =>
  new Promise((resolve, reject) => {
    const id = `raw-${++next}`;
    pending.set(id, resolve);
    transport.send({ ...request, jsonrpc: "2.0", id }).catch((e) => {
      pending.delete(id);
      reject(e);
    });
  });

function post(url, body, origin) {
  return new Promise((resolve, reject) => {
    const data = new URLSearchParams(body).toString();
    const req = http.request(
      url,
      {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "Content-Length": Buffer.byteLength(data),
          Origin: origin,
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode, text }));
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

const asked = [];
const onInputRequest = createApplicationInputHandler({
  elicitation: async (request, context) => {
    const params = request.params;
    asked.push({ mode: params.mode, message: params.message, delivery: context.delivery, scope: context.scope });
    if (params.mode !== "url") return { action: "decline" };
    const page = await (await fetch(params.url)).text();
    if (!page.includes("Password for deploy: ")) throw new Error(`not the answer page: ${page.slice(0, 200)}`);
    const sent = await post(params.url, { secret }, new URL(params.url).origin);
    if (sent.status !== 200) throw new Error(`the page refused the answer: ${sent.status}`);
    return { action: "accept" };
  },
  sampling: async () => {
    throw new Error("no sampling here");
  },
  roots: async () => ({ roots: [] }),
});

const session = createTaskSessionFromClient(client, {
  endpointId: "dsh-magics-test",
  rawDispatch,
  v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities: capabilities },
  tools: { currentTool: () => undefined },
  onInputRequest,
});
const states = [];
const mode = process.env.MCP_TEST_TASK_MODE || "";
if (mode === "handoff" || mode === "resume") {
  let execution;
  let reference = null;
  if (mode === "handoff") {
    execution = await session.callTool("bash_exec", { ...JSON.parse(commandJson), wait_ms: 100 });
    if (execution.kind === "task") await execution.handoff((ref) => (reference = ref));
    process.stdout.write(JSON.stringify({ kind: execution.kind, reference }) + "\n");
  } else {
    execution = await session.resumeTask(JSON.parse(process.env.MCP_TEST_TASK_REFERENCE));
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        if (event.type === "task") states.push({ status: event.task.status });
      },
    });
    const result = resultFromTaskOutcome(outcome);
    process.stdout.write(JSON.stringify({ kind: execution.kind, states, outcome: outcome.status, result }) + "\n");
  }
  // (not session.close() after a handoff: in ext-tasks 0.2.2 it still
  // closes the handed-off execution, and closing an unsettled one sends
  // tasks/cancel, a Ctrl-C to the job a later process means to resume)
  if (mode === "resume") await session.close();
  await client.close();
  process.exit(0);
}
const execution = await session.callTool("bash_exec", { ...JSON.parse(commandJson), wait_ms: 100 });
const { outcome } = await execution.settle({
  onEvent: (event) => {
    if (event.type === "task") states.push({ status: event.task.status, message: event.task.statusMessage ?? null });
  },
});
const result = resultFromTaskOutcome(outcome);
const after = await session.callTool("bash_exec", { command: "echo next", wait_ms: 30000 });
const afterResult = resultFromTaskOutcome((await after.settle()).outcome);
process.stdout.write(
  JSON.stringify({ kind: execution.kind, states, asked, outcome: outcome.status, result, after: afterResult }) + "\n",
);
await session.close();
await client.close();
