// openai (pinned in package.json), Chat Completions, against hiccup's openai-chat wire format
// (POST /v1/chat/completions). See README.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { answerTurn, causeCodes, describeError, fullText, loadSdk, nestedArgs, scenario, textPieces, turn, withServer } from './common.mjs';

const { OpenAI, APIError, APIConnectionError, RateLimitError, InternalServerError, OpenAIError } = loadSdk('openai');
const MODEL = 'gpt-5.5';
const T = { timeout: 60_000 };

const tools = [
  { type: 'function', function: { name: 'shell', description: 'Run a command', parameters: { type: 'object' } } },
  { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object' } } },
];
const params = { model: MODEL, messages: [{ role: 'user', content: 'hello' }], tools };

function client(url, maxRetries = 0) {
  return new OpenAI({ apiKey: 'hiccup', baseURL: url + '/v1', maxRetries });
}

/**
 * Streams one request with the raw chunk iterator and collects text, tool calls by index (with the
 * number of argument fragments), finish reasons and the chunk count. On a throw, the partial result
 * is attached to the error as `.partial`.
 */
async function stream(url, maxRetries = 0) {
  const out = { text: '', byIndex: [], finishReasons: [], chunks: 0 };
  try {
    const it = await client(url, maxRetries).chat.completions.create({ ...params, stream: true });
    for await (const chunk of it) {
      out.chunks++;
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      if (typeof choice.delta?.content === 'string') out.text += choice.delta.content;
      for (const tc of choice.delta?.tool_calls ?? []) {
        const c = (out.byIndex[tc.index] ??= { id: '', name: '', args: '', fragments: 0 });
        if (tc.id) c.id += tc.id;
        if (tc.function?.name) c.name += tc.function.name;
        if (tc.function?.arguments) { c.args += tc.function.arguments; c.fragments++; }
      }
      if (choice.finish_reason) out.finishReasons.push(choice.finish_reason);
    }
  } catch (e) {
    if (e && typeof e === 'object') e.partial = out;
    throw e;
  }
  out.calls = out.byIndex.filter(Boolean).map((c) => ({ ...c, args: JSON.parse(c.args) }));
  return out;
}

async function expectError(scn, body) {
  const r = await withServer(scn, body);
  assert.ok(r.error, `expected the SDK to throw, but it returned ${JSON.stringify(r.result)}`);
  return r;
}

const sc = (name, ...turns) => scenario('openai-chat', name, turns);
const callTurn = (fault) => turn({
  events: [{ text: 'Running it.' }, { call: { name: 'shell', args: nestedArgs, fragments: 3 } }, { finish: 'stop' }],
  ...(fault ? { fault } : {}),
});

test('text: a streamed reply arrives intact', T, async () => {
  const r = await withServer(sc('chat-text', turn({ events: [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }] })),
                             (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, fullText);
  assert.deepEqual(r.result.finishReasons, ['stop']);
  assert.equal(r.journal.length, 1);
  assert.equal(r.journal[0].completed, true);
});

test('tool call: args in 3 fragments arrive exactly as scripted', T, async () => {
  const r = await withServer(sc('chat-call', callTurn(), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'Running it.');
  assert.equal(r.result.calls.length, 1);
  const [call] = r.result.calls;
  assert.equal(call.name, 'shell');
  assert.match(call.id, /^call_/);
  assert.equal(call.fragments, 3, 'the arguments should arrive in 3 delta.tool_calls[].function.arguments pieces');
  assert.deepEqual(call.args, nestedArgs);
  assert.deepEqual(r.result.finishReasons, ['tool_calls']);
});

test('tool call via the ChatCompletionStream helper: finalChatCompletion() holds the arguments', T, async () => {
  const r = await withServer(sc('chat-call-helper', callTurn(), answerTurn), async (url) =>
    client(url).chat.completions.stream(params).finalChatCompletion());
  assert.equal(r.error, undefined, describeError(r.error));
  const msg = r.result.choices[0].message;
  assert.equal(msg.content, 'Running it.');
  assert.equal(msg.tool_calls.length, 1);
  assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), nestedArgs);
  assert.equal(r.result.choices[0].finish_reason, 'tool_calls');
});

test('parallel calls: two calls keep their own args and ids', T, async () => {
  const a = { path: 'src/ä.txt', range: { from: 1, to: 20 } };
  const b = { command: 'ls -la', env: { LANG: 'de_DE.UTF-8' } };
  const r = await withServer(sc('chat-parallel',
    turn({ events: [{ call: { name: 'read_file', args: a, fragments: 2 } }, { call: { name: 'shell', args: b, fragments: 2 } }, { finish: 'stop' }] }),
    answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const calls = r.result.calls;
  assert.deepEqual(calls.map((c) => [c.name, c.args]), [['read_file', a], ['shell', b]]);
  assert.ok(calls[0].id && calls[1].id && calls[0].id !== calls[1].id, `ids must differ: ${calls.map((c) => c.id)}`);
});

test('non-streaming: chat.completions.create returns text and the tool call', T, async () => {
  const r = await withServer(sc('chat-unary', callTurn(), answerTurn), async (url) => client(url).chat.completions.create(params));
  assert.equal(r.error, undefined, describeError(r.error));
  const choice = r.result.choices[0];
  assert.equal(choice.message.content, 'Running it.');
  assert.equal(choice.message.tool_calls.length, 1);
  assert.equal(choice.message.tool_calls[0].function.name, 'shell');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), nestedArgs);
  assert.equal(choice.finish_reason, 'tool_calls');
});

test('reset after the call: the stream iterator throws ECONNRESET', T, async () => {
  const r = await expectError(sc('chat-reset', callTurn({ kind: 'reset', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('ECONNRESET'), `expected ECONNRESET in the cause chain: ${describeError(r.error)}`);
  assert.deepEqual(r.error.partial.finishReasons, []);
});

test('disconnect mid-arguments (after 1 of 3 fragments): the iterator throws, no complete call', T, async () => {
  const r = await expectError(sc('chat-disconnect', callTurn({ kind: 'disconnect', after_event: 1, after_fragment: 1 }), answerTurn),
                              (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('UND_ERR_SOCKET'), `expected UND_ERR_SOCKET in the cause chain: ${describeError(r.error)}`);
  const call = r.error.partial.byIndex.filter(Boolean)[0];
  assert.equal(call?.fragments, 1, 'exactly one argument fragment before the cut');
  assert.throws(() => JSON.parse(call.args), SyntaxError, 'a cut argument string must not parse');
});

test('HTTP 503: InternalServerError status 503', T, async () => {
  const r = await expectError(sc('chat-503', turn({ status: 503 })), (url) => stream(url));
  assert.ok(r.error instanceof InternalServerError, describeError(r.error));
  assert.equal(r.error.status, 503);
});

test('HTTP 429 with retry_after_s 2: RateLimitError whose headers carry retry-after and retry-after-ms', T, async () => {
  const r = await expectError(sc('chat-429', turn({ status: 429, retry_after_s: 2 })), (url) => stream(url));
  assert.ok(r.error instanceof RateLimitError, describeError(r.error));
  assert.equal(r.error.status, 429);
  assert.equal(r.error.headers.get('retry-after'), '2');
  assert.equal(r.error.headers.get('retry-after-ms'), '2000');
  assert.ok(r.error.error?.message, `the error envelope's message: ${JSON.stringify(r.error.error)}`);
});

test('HTTP 429 with maxRetries 1: the SDK waits the retry-after delay, then succeeds', T, async () => {
  const r = await withServer(sc('chat-429-retry', turn({ status: 429, retry_after_s: 2 }, { events: [{ text: 'ok' }, { finish: 'stop' }] })),
                             (url) => stream(url, 1));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'ok');
  assert.deepEqual(r.journal.map((e) => e.response_status), [429, 200]);
  assert.ok(r.ms >= 1500, `retried after ${r.ms.toFixed(0)} ms, expected about 2000 (retry-after-ms / retry-after)`);
});

test('error_event 503 mid-stream: the iterator throws APIError', T, async () => {
  const r = await expectError(sc('chat-error-event', turn({ events: [{ text: 'partial ' }, { text: 'never' }, { finish: 'stop' }],
                                                             fault: { kind: 'error_event', after_event: 1, status: 503 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof APIError && !(r.error instanceof APIConnectionError), describeError(r.error));
  assert.ok(r.error.error?.message, `the in-stream error object: ${JSON.stringify(r.error.error)}`);
  assert.equal(r.error.partial.text, 'partial ');
});

test('end without [DONE] or finish_reason after a call: the raw iterator ends silently, no finish_reason', T, async () => {
  const r = await withServer(sc('chat-end', callTurn({ kind: 'end', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.calls.map((c) => c.args), [nestedArgs]);
  assert.deepEqual(r.result.finishReasons, []);
});

test('end without finish_reason: the ChatCompletionStream helper rejects finalChatCompletion()', T, async () => {
  const r = await expectError(sc('chat-end-helper', callTurn({ kind: 'end', after_event: 2 }), answerTurn),
                              async (url) => client(url).chat.completions.stream(params).finalChatCompletion());
  assert.ok(r.error instanceof OpenAIError, describeError(r.error));
  assert.match(r.error.message, /missing finish_reason/);
});

test('content_filter finish: finish_reason content_filter', T, async () => {
  const r = await withServer(sc('chat-content-filter', turn({ events: [{ finish: 'content_filter' }] }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.finishReasons, ['content_filter']);
  assert.equal(r.result.text, '');
});
