// An MCP server (stdio, newline-delimited JSON-RPC) that misbehaves on
// request, for cairn's tests. No dependencies: it speaks the protocol by hand
// so that it can break it.
//
// Environment:
//   MARKER   a file each tool call appends a line to: "called NAME ID" when a
//            call starts, "cancelled ID" when notifications/cancelled comes,
//            "started PID" when the process starts.
//   GARBAGE_AT_START=1   writes lines that are not JSON-RPC before anything.
//
// Tools:
//   slow_never  {ms, until_gone}  no annotations (cairn: replay never); answers
//                      after ms, or once the file until_gone names is gone
//   slow_safe   {ms, until_gone}  readOnlyHint (cairn: replay safe); the same
//   garbage            writes garbage lines, then answers
//   big         {mb}   answers with mb megabytes of text
//   hang               never answers
//   exit               the process exits mid-call
//   change_tools       announces tools/list_changed; `added` appears
//   progress    {steps} sends a progress notification per step, then answers
//   fail               answers with isError
import { appendFileSync, existsSync } from "node:fs";
import { createInterface } from "node:readline";

const marker = process.env.MARKER;
const mark = (line) => { if (marker) appendFileSync(marker, line + "\n"); };
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const ms = { type: "object", properties: { ms: { type: "number" }, until_gone: { type: "string" } } };

let toolsChanged = false;
const tools = () => {
  const list = [
    { name: "slow_never", description: "waits, then answers", inputSchema: ms },
    { name: "slow_safe", description: "waits, then answers", inputSchema: ms, annotations: { readOnlyHint: true } },
    { name: "garbage", description: "writes garbage", inputSchema: { type: "object" } },
    { name: "big", description: "a big answer", inputSchema: { type: "object", properties: { mb: { type: "number" } } } },
    { name: "hang", description: "never answers", inputSchema: { type: "object" } },
    { name: "exit", description: "exits mid-call", inputSchema: { type: "object" } },
    { name: "change_tools", description: "changes the tool list", inputSchema: { type: "object" } },
    { name: "progress", description: "reports progress", inputSchema: { type: "object", properties: { steps: { type: "number" } } } },
    { name: "fail", description: "fails", inputSchema: { type: "object" } },
  ];
  if (toolsChanged) list.push({ name: "added", description: "appeared later", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } });
  return list;
};

const timers = new Map();  // request id → timer of a slow call
const text = (t) => ({ content: [{ type: "text", text: t }] });

function call(id, name, args, progressToken) {
  mark(`called ${name} ${id}`);
  const answer = (result) => { timers.delete(id); send({ jsonrpc: "2.0", id, result }); };
  switch (name) {
    case "slow_never":
    case "slow_safe": {
      // Answers after ms, or as soon as the file `until_gone` names is gone.
      const started = Date.now();
      const poll = () => {
        if (Date.now() - started >= (args.ms ?? 60000) || (args.until_gone && !existsSync(args.until_gone))) {
          answer(text(`${name} done`));
        } else {
          timers.set(id, setTimeout(poll, 10));
        }
      };
      poll();
      return;
    }
    case "garbage":
      process.stdout.write("this is not json\n{\"half\": \n[1,2,3]\n");
      return answer(text("after garbage"));
    case "big":
      return answer(text("x".repeat((args.mb ?? 10) * 1024 * 1024)));
    case "hang":
      return;
    case "exit":
      process.exit(3);
    case "change_tools":
      toolsChanged = true;
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      return answer(text("changed"));
    case "progress": {
      const steps = args.steps ?? 3;
      for (let i = 1; i <= steps; i++) {
        if (progressToken !== undefined)
          send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken, progress: i, total: steps, message: `step ${i}` } });
      }
      return answer(text(`${steps} steps`));
    }
    case "fail":
      return answer({ content: [{ type: "text", text: "it failed" }], isError: true });
    case "added":
      return answer(text("added answers"));
    default:
      send({ jsonrpc: "2.0", id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
}

mark(`started ${process.pid}`);
if (process.env.GARBAGE_AT_START) process.stdout.write("garbage before the handshake\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try { message = JSON.parse(line); } catch { return; }
  const { id, method, params = {} } = message;
  if (method === "initialize") {
    send({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: "misbehaving", version: "1" } } });
  } else if (method === "tools/list") {
    send({ jsonrpc: "2.0", id, result: { tools: tools() } });
  } else if (method === "tools/call") {
    call(id, params.name, params.arguments ?? {}, params._meta?.progressToken);
  } else if (method === "ping") {
    send({ jsonrpc: "2.0", id, result: {} });
  } else if (method === "notifications/cancelled") {
    mark(`cancelled ${params.requestId}`);
    const timer = timers.get(params.requestId);
    if (timer) { clearTimeout(timer); timers.delete(params.requestId); }
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
});
