// cairn serve's A2A v1.0 binding driven by the official JavaScript client
// (@a2a-js/sdk, pinned in package-lock.json). Run by the C++ suite
// (ServeTest.A2a*) against a server whose scripted model answers:
//   "say TEXT" -> TEXT; "loop N" -> N ls calls, then "looped";
//   "wait" -> "waited" after a second; "steer:X" -> "steered X";
//   "touch NAME" -> a bash call (which asks), then "touched";
//   "ask" -> an ask_user question, then "got ANSWER".
// usage: node conformance.mjs PORT TOKEN JSONRPC|HTTP+JSON
// Exits 0 when every check holds; prints what failed otherwise.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';

const [port, token, binding] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;

const authFetch = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${token}` }),
  shouldRetryWithHeaders: async () => undefined,
});

// The client takes the SDK's internal objects: numeric roles, {$case, value} parts.
function message(text, extra = {}) {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}
const textOf = (parts) => (parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const dataOf = (parts) => (parts ?? []).find((p) => p.content?.$case === 'data')?.content.value;
const stateName = (state) => Object.keys(TaskState).find((k) => TaskState[k] === state);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function expectError(promise, name) {
  try {
    await promise;
  } catch (error) {
    assert.equal(error.name, name, `expected ${name}, got ${error.name}: ${error.message}`);
    return;
  }
  assert.fail(`expected ${name}, got success`);
}

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch }), new RestTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
    preferredTransports: [binding],
  }),
);

const checks = [];
const check = (name, fn) => checks.push([name, fn]);
let client;

check('discovery: the card names both bindings and the bearer scheme', async () => {
  client = await factory.createFromUrl(base);
  assert.equal(client.transport.protocolName, binding);
  const card = await (await authFetch(`${base}/.well-known/agent-card.json`)).json();
  const bindings = card.supportedInterfaces.map((i) => i.protocolBinding).sort();
  assert.deepEqual(bindings, ['HTTP+JSON', 'JSONRPC']);
  assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
  assert.equal(card.capabilities.streaming, true);
  const unauthorized = await fetch(`${base}/.well-known/agent-card.json`);
  assert.equal(unauthorized.status, 401);
});

let completed;
check('blocking send: the task comes back completed with its answer', async () => {
  const task = await client.sendMessage({ message: message('say hello there') });
  assert.ok(!('messageId' in task), 'a task, not a message');
  assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
  assert.equal(textOf(task.status.message.parts), 'hello there');
  assert.equal(textOf(task.artifacts[0].parts), 'hello there');
  assert.match(task.contextId, /^[^/]+\/main$/);
  assert.ok(task.id.startsWith(`${task.contextId}/`));
  completed = task;
});

check('a second message in the context continues its session', async () => {
  const task = await client.sendMessage({ message: message('say again', { contextId: completed.contextId }) });
  assert.equal(task.contextId, completed.contextId);
  assert.notEqual(task.id, completed.id);
  assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
});

check('streaming send: the task first, then updates in order, ending completed', async () => {
  const events = [];
  for await (const event of client.sendMessageStream({ message: message('loop 2') })) events.push(event.payload);
  assert.equal(events[0].$case, 'task');
  const last = events.at(-1);
  assert.equal(last.$case, 'statusUpdate');
  assert.equal(stateName(last.value.status.state), 'TASK_STATE_COMPLETED');
  assert.ok(events.some((e) => e.$case === 'artifactUpdate' && textOf(e.value.artifact.parts) === 'looped'));
  const seqs = events.slice(1).map((e) => e.value.metadata?.['cairn.seq']);
  assert.ok(seqs.every((s) => Number.isInteger(s)), `every update carries cairn.seq: ${JSON.stringify(seqs)}`);
  for (let i = 1; i < seqs.length; ++i) assert.ok(seqs[i] >= seqs[i - 1], `seqs in order: ${seqs}`);
  for (const e of events.slice(1, -1)) {
    if (e.$case === 'statusUpdate') assert.equal(stateName(e.value.status.state), 'TASK_STATE_WORKING');
  }
});

check('steer: a message to a working task reaches its run', async () => {
  const task = await client.sendMessage({ message: message('wait'), configuration: { returnImmediately: true } });
  assert.equal(stateName(task.status.state), 'TASK_STATE_WORKING');
  const steered = await client.sendMessage({
    message: message('steer:faster', { taskId: task.id, contextId: task.contextId }),
    configuration: { returnImmediately: true },
  });
  assert.equal(steered.id, task.id);
  let done = steered;
  for (let i = 0; i < 300 && stateName(done.status.state) === 'TASK_STATE_WORKING'; ++i) {
    await sleep(50);
    done = await client.getTask({ id: task.id });
  }
  assert.equal(stateName(done.status.state), 'TASK_STATE_COMPLETED');
  assert.equal(textOf(done.artifacts[0].parts), 'steered faster');
});

check('cancel: a working task is cancelled; a finished one is not cancelable', async () => {
  const task = await client.sendMessage({ message: message('wait'), configuration: { returnImmediately: true } });
  const cancelled = await client.cancelTask({ id: task.id });
  assert.equal(stateName(cancelled.status.state), 'TASK_STATE_CANCELED');
  await expectError(client.cancelTask({ id: completed.id }), 'TaskNotCancelableError');
});

check('input required: an approval and a question, each answered by a message', async () => {
  let task = await client.sendMessage({ message: message('touch a2a') });
  assert.equal(stateName(task.status.state), 'TASK_STATE_INPUT_REQUIRED');
  const request = dataOf(task.status.message.parts).inputRequest;
  assert.equal(request.toolName, 'bash');
  assert.equal(request.kind, 'approval');
  task = await client.sendMessage({ message: message('allow', { taskId: task.id, contextId: task.contextId }) });
  assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
  assert.equal(textOf(task.artifacts[0].parts), 'touched');

  // A streaming send ends at the question; the answer goes on to the end.
  const events = [];
  for await (const event of client.sendMessageStream({ message: message('ask') })) events.push(event.payload);
  const asked = events.at(-1);
  assert.equal(stateName(asked.value.status.state), 'TASK_STATE_INPUT_REQUIRED');
  assert.equal(dataOf(asked.value.status.message.parts).inputRequest.question, 'which colour?');
  task = await client.sendMessage({ message: message('green', { taskId: asked.value.taskId, contextId: asked.value.contextId }) });
  assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
  assert.match(textOf(task.artifacts[0].parts), /green/);
});

check('get and list: tasks are read from the log', async () => {
  const task = await client.getTask({ id: completed.id, historyLength: 1 });
  assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
  assert.equal(task.history.length, 1);
  await expectError(client.getTask({ id: 'no/such/task' }), 'TaskNotFoundError');
  const listed = await client.listTasks({ contextId: completed.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10 });
  const ids = listed.tasks.map((t) => t.id);
  assert.ok(ids.includes(completed.id), `${completed.id} in ${ids}`);
  assert.equal(listed.tasks.length, 2);
  const done = await client.listTasks({ contextId: completed.contextId, status: TaskState.TASK_STATE_COMPLETED, pageSize: 1 });
  assert.equal(done.tasks.length, 1);
  assert.equal(done.totalSize, 2);
  assert.notEqual(done.nextPageToken, '');
});

check('subscribe: a working task streams from now to its end', async () => {
  const task = await client.sendMessage({ message: message('wait'), configuration: { returnImmediately: true } });
  const events = [];
  for await (const event of client.resubscribeTask({ id: task.id }, { signal: AbortSignal.timeout(20000) })) {
    events.push(event.payload);
  }
  assert.equal(events[0].$case, 'task');
  assert.equal(events[0].value.id, task.id);
  assert.equal(stateName(events.at(-1).value.status.state), 'TASK_STATE_COMPLETED');
  await expectError(
    (async () => {
      for await (const _ of client.resubscribeTask({ id: completed.id })) { /* nothing */ }
    })(),
    'UnsupportedOperationError',
  );
});

// A client whose every request carries Last-Event-ID: SEQ (the cursor extension).
async function clientWithCursor(seq) {
  const withCursor = createAuthenticatingFetchWithRetry(fetch, {
    headers: async () => ({ Authorization: `Bearer ${token}`, 'Last-Event-ID': String(seq) }),
    shouldRetryWithHeaders: async () => undefined,
  });
  const cursorFactory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: withCursor }), new RestTransportFactory({ fetchImpl: withCursor })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
      preferredTransports: [binding],
    }),
  );
  return cursorFactory.createFromUrl(base);
}

async function resubscribe(id, seq) {
  const resumed = await clientWithCursor(seq);
  const events = [];
  for await (const event of resumed.resubscribeTask({ id }, { signal: AbortSignal.timeout(20000) })) events.push(event.payload);
  return events;
}

const seqOf = (payload) => payload.value?.metadata?.['cairn.seq'];
const json = (value) => JSON.stringify(value, (key, v) => (typeof v === 'bigint' ? v.toString() : v));

let looped;
check('cut points: a stream cut between any two of its events and resubscribed with its cursor goes on exactly', async () => {
  const full = [];
  for await (const event of client.sendMessageStream({ message: message('loop 3') })) full.push(event.payload);
  assert.equal(full[0].$case, 'task');
  const updates = full.slice(1);
  const seqs = updates.map(seqOf);
  assert.ok(seqs.every(Number.isInteger), `every update announces a record: ${json(seqs)}`);
  for (let i = 1; i < seqs.length; ++i) assert.ok(seqs[i] > seqs[i - 1], `one record per seq, in order: ${seqs}`);
  assert.equal(updates.at(-2).$case, 'artifactUpdate');
  assert.equal(stateName(updates.at(-1).value.status.state), 'TASK_STATE_COMPLETED');
  looped = { id: full[0].value.id, start: full[0].value.metadata['cairn.snapshotSeq'], updates };
  // The client got full[0..cut], then the connection broke: it comes back
  // with the last cursor it saw (the task's own when it saw no update).
  for (let cut = 0; cut < full.length; ++cut) {
    const cursor = cut === 0 ? looped.start : seqOf(full[cut]);
    const rest = await resubscribe(looped.id, cursor);
    assert.equal(rest[0].$case, 'task', `cut after event ${cut}: the task first`);
    assert.equal(rest[0].value.metadata['cairn.snapshotSeq'], cursor, `cut after event ${cut}: the snapshot is at the cursor`);
    assert.equal(json(rest.slice(1)), json(full.slice(cut + 1)), `cut after event ${cut} (cursor ${cursor})`);
  }
});

check('every seq of an ended task: the task as the log says there, then exactly what follows, then the end', async () => {
  const { id, start, updates } = looped;
  const last = seqOf(updates.at(-1));
  for (let seq = start; seq <= last; ++seq) {
    const rest = await resubscribe(id, seq);
    assert.equal(rest[0].$case, 'task', `at ${seq}: the task first`);
    const after = rest.slice(1);
    if (seq >= last) {
      assert.equal(after.length, 0, `at ${seq}: the ended task alone: ${json(after)}`);
      assert.equal(stateName(rest[0].value.status.state), 'TASK_STATE_COMPLETED');
      continue;
    }
    // Exactly the updates whose records follow the cursor.
    assert.equal(json(after), json(updates.filter((u) => seqOf(u) > seq)), `at ${seq}`);
    assert.notEqual(stateName(rest[0].value.status.state), 'TASK_STATE_COMPLETED', `at ${seq}: not yet ended there`);
  }
});

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok   ${binding}: ${name}`);
  } catch (error) {
    ++failed;
    console.log(`FAIL ${binding}: ${name}\n     ${error.stack ?? error}`);
    if (!client) break;
  }
}
process.exit(failed === 0 ? 0 : 1);
