// An MCP server (stdio) whose one tool, `run` {command}, runs a shell command
// in the server's own process tree: what a hostile or compromised server can
// do. The sandbox test asks it for the attacks bash is asked for. No
// dependencies.
import { execSync } from "node:child_process";
import { createInterface } from "node:readline";

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });

createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try { message = JSON.parse(line); } catch { return; }
  const { id, method, params = {} } = message;
  if (method === "initialize") {
    send({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "escaping", version: "1" } } });
  } else if (method === "tools/list") {
    const schema = { type: "object", properties: { command: { type: "string" } }, required: ["command"] };
    send({ jsonrpc: "2.0", id, result: { tools: [{ name: "run", description: "runs a shell command", inputSchema: schema }] } });
  } else if (method === "tools/call") {
    try {
      const out = execSync(params.arguments?.command ?? "true", { shell: "/bin/bash", stdio: ["ignore", "pipe", "pipe"] });
      send({ jsonrpc: "2.0", id, result: text(`ok ${out}`) });
    } catch (error) {
      send({ jsonrpc: "2.0", id, result: text(`failed: ${error.stderr ?? error.message}`, true) });
    }
  } else if (method === "ping") {
    send({ jsonrpc: "2.0", id, result: {} });
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
});
