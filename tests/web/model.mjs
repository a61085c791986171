// The local test model for the browser tests: an HTTP server speaking the
// openai-completions wire format (streamed chat completions), answering each
// request from the conversation it carries. The last user message says what
// to do:
//   "say TEXT"       answer TEXT, streamed in pieces 40 ms apart
//   "slowly TEXT"    answer TEXT, streamed over ~4 s (time to reload or abort mid-run)
//   "touch NAME"     call bash once (`echo NAME >> ran.txt`, in the workspace: the sandbox lets
//                    nothing write beside it), then answer "touched NAME"
//   "ask"            call ask_user once, then answer "got " and the answer
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

/** @param {any} body */
function answer(body) {
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
  if (prompt === 'ask') {
    if (resultsSince === 0) return toolReply(callId, 'ask_user', { question: 'Which colour?' });
    return textReply(`got ${lastResult}`, 2, 20);
  }
  return textReply('ok', 1, 1);
}

/** Starts the model on a free loopback port. @returns {Promise<{url: string, close: () => Promise<void>}>} */
export async function startModel() {
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
      const { events, gapMs } = answer(body);
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
