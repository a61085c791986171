// The local test model for the browser tests: an HTTP server speaking the
// openai-completions wire format (streamed chat completions), answering each
// request from the conversation it carries. The last user message says what
// to do:
//   "say TEXT"       answer TEXT, streamed in pieces 40 ms apart
//   "slowly TEXT"    answer TEXT, streamed over ~4 s (time to reload or abort mid-run)
//   "touch NAME"     call bash once (`echo NAME >> ran.txt`, in the workspace: the sandbox lets
//                    nothing write beside it), then answer "touched NAME"
//   "ask"            call ask_user once, then answer "got " and the answer
//   "markdown"       answer MARKDOWN: a code block, a table, a list and a link
//   "hostile"        answer HOSTILE: raw HTML and Markdown that would build script
//   "edit NAME"      call edit once on NAME (its "line two" becomes "line 2 changed"), then answer "edited NAME"
//   "steps N"        call ls N - 1 times, one call a step, then answer "walked N steps": a run of N steps,
//                    each request answered STEP_MS after it arrives
//   "flaky TEXT"     the first request for this prompt fails, STEP_MS after it arrives, with an HTTP 500
//                    (a provider's transient error: cairn retries it, RETRY_AFTER_MS later as the
//                    response's retry-after-ms header asks); the next one answers TEXT
//   anything else    answer "ok"
import http from 'node:http';

/** @param {unknown} content */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part && part.type === 'text' ? String(part.text) : '')).join('');
}

/** @param {object} delta @param {string | null} [finish] */
function chunk(delta, finish = null) {
  const body = {
    id: 'chatcmpl-web',
    object: 'chat.completion.chunk',
    model: 'test',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

export const MARKDOWN = [
  'Here is **the plan**:',
  '',
  '1. read the file',
  '2. change it',
  '',
  '```js',
  'const answer = 42; // the answer',
  'function ask() { return "why"; }',
  '```',
  '',
  '| name | value |',
  '|------|-------|',
  '| alpha | 1 |',
  '| beta | 2 |',
  '',
  'See [the docs](https://example.com/docs) for more.',
].join('\n');

// Each would run script if it became markup: the page must show it as text.
export const HOSTILE = [
  'Raw: <img src="x" onerror="window.__pwned = 1"> and <script>window.__pwned = 2</script>',
  '',
  '<a href="javascript:window.__pwned = 3">a raw javascript link</a>',
  '',
  '<div onmouseover="window.__pwned = 4">a raw div</div>',
  '',
  'Built by Markdown: [click me](javascript:window.__pwned=5) and ![pic](x "onerror=window.__pwned=6")',
  'and ![scripted](javascript:window.__pwned=7) and <javascript:window.__pwned=8> the end.',
].join('\n');

export const STEP_MS = 60;
export const RETRY_AFTER_MS = 400;

/** @param {string} text @param {number} pieces @param {number} gapMs */
function textReply(text, pieces, gapMs) {
  const out = [chunk({ role: 'assistant', content: '' })];
  const size = Math.max(1, Math.ceil(text.length / pieces));
  for (let i = 0; i < text.length; i += size) out.push(chunk({ content: text.slice(i, i + size) }));
  out.push(chunk({}, 'stop'));
  return { events: out, gapMs };
}

/** @param {string} id @param {string} name @param {object} args */
function toolReply(id, name, args) {
  const call = { index: 0, id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
  return { events: [chunk({ role: 'assistant', content: null, tool_calls: [call] }), chunk({}, 'tool_calls')], gapMs: 5 };
}

/**
 * What to answer: a stream of events, or an HTTP failure.
 * @typedef {{events: string[], gapMs: number, delayMs?: number} | {status: number, error: object, retryAfterMs: number, delayMs: number}} Reply
 */

/** @param {any} body @param {Set<string>} failed the flaky prompts failed once already @returns {Reply} */
function answer(body, failed) {
  let prompt = '';
  let resultsSince = 0;
  let lastResult = '';
  for (const message of body.messages ?? []) {
    if (message.role === 'user') {
      prompt = textOf(message.content);
      resultsSince = 0;
    } else if (message.role === 'tool') {
      resultsSince += 1;
      lastResult = textOf(message.content);
    }
  }
  const callId = `call_${prompt.length}_${resultsSince}`;
  if (prompt.startsWith('say ')) return textReply(prompt.slice(4), 4, 40);
  if (prompt.startsWith('slowly ')) return textReply(prompt.slice(7), 20, 200);
  if (prompt.startsWith('touch ')) {
    const name = prompt.slice(6);
    if (resultsSince === 0) return toolReply(callId, 'bash', { command: `echo ${name} >> ran.txt` });
    return textReply(`touched ${name}`, 2, 20);
  }
  if (prompt === 'markdown') return textReply(MARKDOWN, 6, 20);
  if (prompt === 'hostile') return textReply(HOSTILE, 4, 20);
  if (prompt.startsWith('edit ')) {
    const name = prompt.slice(5);
    if (resultsSince === 0) return toolReply(callId, 'edit', { path: name, oldText: 'line two\n', newText: 'line 2 changed\n' });
    return textReply(`edited ${name}`, 2, 20);
  }
  const steps = /^steps (\d+)$/.exec(prompt);
  if (steps) {
    if (resultsSince < Number(steps[1]) - 1) return { ...toolReply(callId, 'ls', { path: '.' }), delayMs: STEP_MS };
    return { ...textReply(`walked ${steps[1]} steps`, 2, 20), delayMs: STEP_MS };
  }
  if (prompt.startsWith('flaky ')) {
    if (resultsSince === 0 && !failed.has(prompt)) {
      failed.add(prompt);
      return { status: 500, error: { error: { message: 'the model is overloaded', type: 'server_error' } }, retryAfterMs: RETRY_AFTER_MS, delayMs: STEP_MS };
    }
    return textReply(prompt.slice(6), 2, 20);
  }
  if (prompt === 'ask') {
    if (resultsSince === 0) return toolReply(callId, 'ask_user', { question: 'Which colour?' });
    return textReply(`got ${lastResult}`, 2, 20);
  }
  return textReply('ok', 1, 1);
}

/** Starts the model on a free loopback port. @returns {Promise<{url: string, close: () => Promise<void>}>} */
export async function startModel() {
  /** @type {Set<string>} */
  const failed = new Set();
  const server = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (data) => (raw += data));
    request.on('end', async () => {
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        response.writeHead(400).end();
        return;
      }
      const reply = answer(body, failed);
      if (reply.delayMs) await new Promise((done) => setTimeout(done, reply.delayMs));
      if ('status' in reply) {
        response.writeHead(reply.status, { 'Content-Type': 'application/json', 'retry-after-ms': String(reply.retryAfterMs) });
        response.end(JSON.stringify(reply.error));
        return;
      }
      const { events, gapMs } = reply;
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for (const event of [...events, 'data: [DONE]\n\n']) {
        if (response.destroyed) return;
        response.write(event);
        await new Promise((done) => setTimeout(done, gapMs));
      }
      response.end();
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', () => done(undefined)));
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    close: () => new Promise((done) => { server.closeAllConnections(); server.close(() => done()); }),
  };
}
