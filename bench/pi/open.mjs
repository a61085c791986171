// pi's own figure for cairn_bench_open: opens a pi session file with pi's
// SessionManager (as `pi --session FILE` does on resume) and builds the
// context it would send, timing itself in this process.
//
//   node bench/pi/open.mjs FILE
// prints "MS MESSAGES PEAK_KIB": the open + build-context time, how many
// messages the context holds, and this process's peak RSS so far.
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { performance } from "node:perf_hooks";
// The package's index pulls in its package manager, which needs node 22's
// fs.globSync; the session manager itself does not, so it is imported alone
// (the node here is 20). It is the same module the index re-exports.
import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js";

const file = process.argv[2];
if (!file) {
  process.stderr.write("usage: node open.mjs FILE\n");
  process.exit(2);
}
// The session directory is the file's own, so pi looks nowhere else.
const start = performance.now();
const session = SessionManager.open(file, dirname(file));
const context = session.buildSessionContext();
const ms = performance.now() - start;
// VmHWM, as the C++ side reads its own: process.resourceUsage().maxRSS is
// the same figure in KiB, but this keeps both sides on one source.
const status = readFileSync("/proc/self/status", "utf8");
const peak = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
process.stdout.write(`${ms.toFixed(3)} ${context.messages.length} ${peak}\n`);
