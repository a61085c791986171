// The server's API as the page uses it: the bearer token (kept in this
// browser tab's sessionStorage, sent only in the Authorization header, never
// in a URL), JSON requests, and live streams read with fetch (EventSource
// cannot send a header) that reconnect with their cursor.

const TOKEN_KEY = 'cairn.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** @param {string | null} value */
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** @param {string} text */
export function seg(text) {
  return encodeURIComponent(text);
}

/**
 * A JSON request. Rejects with ApiError (the server's code and message, or
 * `network` when the server could not be reached).
 * @param {string} method @param {string} path @param {object} [body]
 * @returns {Promise<any>}
 */
export async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${token() ?? ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new ApiError(0, 'network', `the server cannot be reached (${String(error)})`);
  }
  const text = await response.text();
  /** @type {any} */
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, 'invalid_response', `the server answered ${response.status} with something that is not JSON`);
  }
  if (!response.ok) {
    const error = json && json.error ? json.error : { code: String(response.status), message: response.statusText };
    throw new ApiError(response.status, error.code, error.message);
  }
  return json;
}

/**
 * A live stream (text/event-stream) that reconnects with its cursor: after a
 * drop it asks for the records after the last id it saw, so the frames with
 * an id reach `onFrame` each once, in order, however often it reconnects.
 * `onState` hears 'live', 'reconnecting' and 'ended'.
 */
export class LiveStream {
  /**
   * @param {string} path
   * @param {{onFrame: (frame: any, id: number | null) => void, onState: (state: string, detail?: string) => void}} handlers
   * @param {number | null} [after] start after this seq instead of with a snapshot
   */
  constructor(path, handlers, after = null) {
    this.path = path;
    this.handlers = handlers;
    /** @type {number | null} */
    this.cursor = after;
    this.controller = new AbortController();
    this.closed = false;
    this.attempt = 0;
    void this.run();
  }

  close() {
    this.closed = true;
    this.controller.abort();
  }

  async run() {
    while (!this.closed) {
      const ended = await this.once();
      if (this.closed) return;
      if (ended) {
        this.handlers.onState('ended', ended);
        return;
      }
      this.attempt += 1;
      this.handlers.onState('reconnecting');
      await new Promise((done) => setTimeout(done, Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5))));
    }
  }

  /** One connection. @returns {Promise<string | null>} why the stream ended for good, or null to reconnect */
  async once() {
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${token() ?? ''}`, Accept: 'text/event-stream' };
    if (this.cursor !== null) headers['Last-Event-ID'] = String(this.cursor);
    let response;
    try {
      response = await fetch(this.path, { headers, signal: this.controller.signal, cache: 'no-store' });
    } catch {
      return null;
    }
    if (!response.ok || !response.body) {
      if (response.status === 401 || response.status === 403 || response.status === 404) {
        const body = await response.json().catch(() => null);
        return body && body.error ? body.error.message : `the server answered ${response.status}`;
      }
      return null;
    }
    this.attempt = 0;
    this.handlers.onState('live');
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    // Where the search for a frame's end goes on from: a snapshot of a long
    // session is megabytes in many chunks, and is scanned once.
    let scanned = 0;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return null;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n', scanned)) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          scanned = 0;
          const why = this.frame(block);
          if (why) return why;
        }
        scanned = Math.max(0, buffer.length - 1);
      }
    } catch {
      return null;
    }
  }

  /** @param {string} block @returns {string | null} */
  frame(block) {
    /** @type {number | null} */
    let id = null;
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = Number(line.slice(3).trim());
      else if (line.startsWith('data:')) data += line.slice(5).trimStart();
    }
    if (!data) return null;
    /** @type {any} */
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return null;
    }
    // A frame whose record this stream already passed (never expected: the
    // server sends each once) is dropped rather than shown twice.
    if (id !== null && this.cursor !== null && id <= this.cursor && frame.type !== 'snapshot') return null;
    if (frame.type === 'stream_overflow' || frame.type === 'server_shutdown') {
      if (typeof frame.cursor === 'number') this.cursor = frame.cursor;
      return null;  // reconnect from the cursor
    }
    if (frame.type === 'stream_error') return frame.message ?? 'the stream ended with an error';
    this.handlers.onFrame(frame, id);
    if (id !== null) this.cursor = id;
    return null;
  }
}
