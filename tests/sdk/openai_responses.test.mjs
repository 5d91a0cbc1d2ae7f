// openai (pinned in package.json), Responses API, against hiccup's openai-responses wire format
// (POST /v1/responses). See README.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { answerTurn, causeCodes, describeError, fullText, loadSdk, nestedArgs, scenario, textPieces, turn, withServer } from './common.mjs';

const { OpenAI, APIError, APIConnectionError, RateLimitError, InternalServerError } = loadSdk('openai');
const MODEL = 'gpt-5.5';
const T = { timeout: 60_000 };

const tools = [
  { type: 'function', name: 'shell', description: 'Run a command', parameters: { type: 'object' }, strict: false },
  { type: 'function', name: 'read_file', description: 'Read a file', parameters: { type: 'object' }, strict: false },
];
const params = { model: MODEL, input: 'hello', tools };

function client(url, maxRetries = 0) {
  return new OpenAI({ apiKey: 'hiccup', baseURL: url + '/v1', maxRetries });
}

/**
 * Streams one request with the raw event iterator and collects text deltas, function_call items
 * (arguments as streamed, the number of argument deltas, and the item the done event carries), the
 * event types, and the terminal response (response.completed / failed / incomplete). On a throw,
 * the partial result is attached to the error as `.partial`.
 */
async function stream(url, maxRetries = 0) {
  const out = { text: '', items: {}, types: [], seq: [], terminal: null };
  try {
    const it = await client(url, maxRetries).responses.create({ ...params, stream: true });
    for await (const ev of it) {
      out.types.push(ev.type);
      out.seq.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') out.text += ev.delta;
      else if (ev.type === 'response.output_item.added' && ev.item.type === 'function_call') {
        out.items[ev.item.id ?? ev.output_index] = { call_id: ev.item.call_id, name: ev.item.name, args: ev.item.arguments ?? '', fragments: 0, done: null };
      } else if (ev.type === 'response.function_call_arguments.delta') {
        const item = out.items[ev.item_id ?? ev.output_index];
        item.args += ev.delta;
        item.fragments++;
      } else if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') {
        out.items[ev.item.id ?? ev.output_index].done = ev.item;
      } else if (['response.completed', 'response.failed', 'response.incomplete'].includes(ev.type)) {
        out.terminal = ev;
      } else if (ev.type === 'error') {
        out.errorEvent = ev;
      }
    }
  } catch (e) {
    if (e && typeof e === 'object') e.partial = out;
    throw e;
  }
  out.calls = Object.values(out.items).map((c) => ({ ...c, args: JSON.parse(c.args) }));
  return out;
}

async function expectError(scn, body) {
  const r = await withServer(scn, body);
  assert.ok(r.error, `expected the SDK to throw, but it returned ${JSON.stringify(r.result)}`);
  return r;
}

const sc = (name, ...turns) => scenario('openai-responses', name, turns);
const callTurn = (fault) => turn({
  events: [{ text: 'Running it.' }, { call: { name: 'shell', args: nestedArgs, fragments: 3 } }, { finish: 'stop' }],
  ...(fault ? { fault } : {}),
});

test('text: a streamed reply arrives intact', T, async () => {
  const r = await withServer(sc('responses-text', turn({ events: [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }] })),
                             (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, fullText);
  assert.equal(r.result.terminal?.type, 'response.completed');
  assert.equal(r.result.terminal.response.status, 'completed');
  // The wire response has no `output_text` (the SDK adds it only to non-streamed results): join the
  // output_text parts of its message items.
  const finalText = r.result.terminal.response.output.filter((o) => o.type === 'message')
    .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');
  assert.equal(finalText, fullText);
  assert.equal(r.result.types[0], 'response.created');
  assert.deepEqual(r.result.seq, r.result.seq.map((_, i) => i), 'sequence_number counts 0, 1, 2, … in stream order');
  assert.equal(r.journal.length, 1);
  assert.equal(r.journal[0].completed, true);
});

// A run of text events is one message item, as the API streams it (issue 41): a reader of the last
// message item (openai-agents' final output, codex's last agent message) gets the whole text.
test('text: a run of text is one message item, in finalResponse() and in responses.create', T, async () => {
  const events = [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }];
  const lastMessageText = (resp) => resp.output.filter((o) => o.type === 'message').at(-1)
    .content.filter((c) => c.type === 'output_text').map((c) => c.text).join('');
  const r = await withServer(sc('responses-text-item', turn({ events })), async (url) => client(url).responses.stream(params).finalResponse());
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.output.length, 1, JSON.stringify(r.result.output));
  assert.equal(lastMessageText(r.result), fullText);
  const u = await withServer(sc('responses-text-item-unary', turn({ events })), async (url) => client(url).responses.create(params));
  assert.equal(u.error, undefined, describeError(u.error));
  assert.equal(u.result.output.length, 1, JSON.stringify(u.result.output));
  assert.equal(lastMessageText(u.result), fullText);
});

test('tool call: args in 3 function_call_arguments.delta events arrive exactly as scripted', T, async () => {
  const r = await withServer(sc('responses-call', callTurn(), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'Running it.');
  assert.equal(r.result.calls.length, 1);
  const [call] = r.result.calls;
  assert.equal(call.name, 'shell');
  assert.match(call.call_id, /^call_/);
  assert.equal(call.fragments, 3, 'the arguments should arrive in 3 response.function_call_arguments.delta events');
  assert.deepEqual(call.args, nestedArgs);
  assert.deepEqual(JSON.parse(call.done.arguments), nestedArgs, 'response.output_item.done carries the whole arguments');
  assert.deepEqual(r.result.seq, r.result.seq.map((_, i) => i), 'sequence_number counts 0, 1, 2, … in stream order');
  assert.equal(r.result.terminal?.type, 'response.completed');
});

test('tool call via the ResponseStream helper: finalResponse() holds the function_call item', T, async () => {
  const r = await withServer(sc('responses-call-helper', callTurn(), answerTurn), async (url) =>
    client(url).responses.stream(params).finalResponse());
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.status, 'completed');
  assert.equal(r.result.output_text, 'Running it.');
  const calls = r.result.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.deepEqual(JSON.parse(calls[0].arguments), nestedArgs);
});

test('parallel calls: two calls keep their own args and ids', T, async () => {
  const a = { path: 'src/ä.txt', range: { from: 1, to: 20 } };
  const b = { command: 'ls -la', env: { LANG: 'de_DE.UTF-8' } };
  const r = await withServer(sc('responses-parallel',
    turn({ events: [{ call: { name: 'read_file', args: a, fragments: 2 } }, { call: { name: 'shell', args: b, fragments: 2 } }, { finish: 'stop' }] }),
    answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const calls = r.result.calls;
  assert.deepEqual(calls.map((c) => [c.name, c.args]), [['read_file', a], ['shell', b]]);
  assert.ok(calls[0].call_id && calls[1].call_id && calls[0].call_id !== calls[1].call_id, `call_ids must differ: ${calls.map((c) => c.call_id)}`);
});

test('non-streaming: responses.create returns text and the function_call item', T, async () => {
  const r = await withServer(sc('responses-unary', callTurn(), answerTurn), async (url) => client(url).responses.create(params));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.status, 'completed');
  assert.equal(r.result.output_text, 'Running it.');
  const calls = r.result.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'shell');
  assert.deepEqual(JSON.parse(calls[0].arguments), nestedArgs);
});

test('reset after the call: the stream iterator throws ECONNRESET', T, async () => {
  const r = await expectError(sc('responses-reset', callTurn({ kind: 'reset', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('ECONNRESET'), `expected ECONNRESET in the cause chain: ${describeError(r.error)}`);
  assert.equal(r.error.partial.terminal, null);
});

test('disconnect mid-arguments (after 1 of 3 fragments): the iterator throws, no complete call', T, async () => {
  const r = await expectError(sc('responses-disconnect', callTurn({ kind: 'disconnect', after_event: 1, after_fragment: 1 }), answerTurn),
                              (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('UND_ERR_SOCKET'), `expected UND_ERR_SOCKET in the cause chain: ${describeError(r.error)}`);
  const item = Object.values(r.error.partial.items)[0];
  assert.equal(item?.fragments, 1, 'exactly one argument fragment before the cut');
  assert.equal(item.done, null, 'no output_item.done for a cut call');
  assert.throws(() => JSON.parse(item.args), SyntaxError, 'a cut argument string must not parse');
});

test('HTTP 503: InternalServerError status 503', T, async () => {
  const r = await expectError(sc('responses-503', turn({ status: 503 })), (url) => stream(url));
  assert.ok(r.error instanceof InternalServerError, describeError(r.error));
  assert.equal(r.error.status, 503);
});

test('HTTP 429 with retry_after_s 2: RateLimitError whose headers carry retry-after and retry-after-ms', T, async () => {
  const r = await expectError(sc('responses-429', turn({ status: 429, retry_after_s: 2 })), (url) => stream(url));
  assert.ok(r.error instanceof RateLimitError, describeError(r.error));
  assert.equal(r.error.status, 429);
  assert.equal(r.error.headers.get('retry-after'), '2');
  assert.equal(r.error.headers.get('retry-after-ms'), '2000');
});

test('HTTP 429 with maxRetries 1: the SDK waits the retry-after delay, then succeeds', T, async () => {
  const r = await withServer(sc('responses-429-retry', turn({ status: 429, retry_after_s: 2 }, { events: [{ text: 'ok' }, { finish: 'stop' }] })),
                             (url) => stream(url, 1));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'ok');
  assert.deepEqual(r.journal.map((e) => e.response_status), [429, 200]);
  assert.ok(r.ms >= 1500, `retried after ${r.ms.toFixed(0)} ms, expected about 2000 (retry-after-ms / retry-after)`);
});

// As the live API does, an in-stream failure is `event: error` (the error nested under `error`)
// then `response.failed`. The SDK's stream iterator throws APIError on the first (any event whose
// data has `error`), so the text before it is all the caller gets and response.completed never comes.
test('error_event 503 mid-stream: the iterator throws APIError at the error event, before response.failed', T, async () => {
  const r = await expectError(sc('responses-error-event', turn({ events: [{ text: 'partial ' }, { text: 'never' }, { finish: 'stop' }],
                                                                 fault: { kind: 'error_event', after_event: 1, status: 503 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof APIError, describeError(r.error));
  assert.equal(r.error.status, undefined);
  assert.equal(r.error.type, 'server_error');
  assert.equal(r.error.code, 'server_error');
  assert.match(r.error.message, /An error occurred while processing your request/);
  assert.equal(r.error.partial.text, 'partial ');
  assert.ok(!r.error.partial.types.includes('response.completed'), `events: ${r.error.partial.types}`);
  assert.equal(r.error.partial.terminal, null, 'the iterator throws before response.failed');
  assert.deepEqual(r.error.partial.seq, r.error.partial.seq.map((_, i) => i));
});

test('error_event 429 mid-stream: the error event says rate_limit_exceeded', T, async () => {
  const r = await expectError(sc('responses-error-event-429', turn({ events: [{ text: 'partial ' }, { finish: 'stop' }],
                                                                     fault: { kind: 'error_event', after_event: 1, status: 429 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof APIError, describeError(r.error));
  assert.equal(r.error.code, 'rate_limit_exceeded');
});

test('error_event 503 mid-stream: the ResponseStream helper rejects finalResponse() with the APIError', T, async () => {
  const r = await expectError(sc('responses-error-event-helper', turn({ events: [{ text: 'partial ' }, { finish: 'stop' }],
                                                                        fault: { kind: 'error_event', after_event: 1, status: 503 } })),
                              async (url) => client(url).responses.stream(params).finalResponse());
  assert.ok(r.error instanceof APIError, describeError(r.error));
  assert.equal(r.error.code, 'server_error');
});

test('end without response.completed after a call: the raw iterator ends silently, no terminal event', T, async () => {
  const r = await withServer(sc('responses-end', callTurn({ kind: 'end', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.calls.map((c) => c.args), [nestedArgs]);
  assert.equal(r.result.terminal, null);
});

test('end without response.completed: the ResponseStream helper resolves with the in_progress snapshot', T, async () => {
  const r = await withServer(sc('responses-end-helper', callTurn({ kind: 'end', after_event: 2 }), answerTurn),
                             async (url) => client(url).responses.stream(params).finalResponse());
  assert.equal(r.error, undefined, describeError(r.error));
  assert.notEqual(r.result.status, 'completed');
  assert.equal(r.result.status, 'in_progress');
});

test('content_filter finish: response.incomplete with incomplete_details.reason content_filter', T, async () => {
  const r = await withServer(sc('responses-content-filter', turn({ events: [{ finish: 'content_filter' }] }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.terminal?.type, 'response.incomplete', `events: ${r.result.types}`);
  assert.equal(r.result.terminal.response.status, 'incomplete');
  assert.equal(r.result.terminal.response.incomplete_details?.reason, 'content_filter');
});

test('previous_response_id over HTTP: a continuation with only the call output plays the next turn; an unknown id is the 400', T, async () => {
  const r = await withServer(sc('responses-previous-response-id', turn({ events: [{ call: { name: 'shell', args: { command: 'ls' } } }, { finish: 'stop' }] }),
                                answerTurn), async (url) => {
    const c = client(url);
    const first = await c.responses.create({ ...params, store: true });
    const call = first.output.find((o) => o.type === 'function_call');
    const second = await c.responses.create({ model: MODEL, tools, previous_response_id: first.id,
                                              input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a.txt' }] });
    const unknown = await c.responses.create({ model: MODEL, previous_response_id: 'resp_unknown', input: 'hi' }).catch((e) => e);
    return { second, unknown };
  });
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.second.output_text, 'Done.');
  assert.ok(r.result.unknown instanceof APIError, describeError(r.result.unknown));
  assert.equal(r.result.unknown.status, 400);
  assert.equal(r.result.unknown.code, 'previous_response_not_found');
  assert.equal(r.result.unknown.param, 'previous_response_id');
});
