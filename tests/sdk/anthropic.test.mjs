// @anthropic-ai/sdk (pinned in package.json) against hiccup's Anthropic Messages wire format
// (POST /v1/messages). See README.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { answerTurn, causeCodes, describeError, fullText, loadSdk, nestedArgs, scenario, textPieces, turn, withServer } from './common.mjs';

const sdk = loadSdk('@anthropic-ai/sdk');
const { Anthropic, APIError, APIConnectionError, OverloadedError, RateLimitError, InternalServerError, ServiceUnavailableError, AnthropicError } = sdk;
const MODEL = 'claude-opus-5-5';
const T = { timeout: 60_000 };

const tools = [
  { name: 'shell', description: 'Run a command', input_schema: { type: 'object' } },
  { name: 'read_file', description: 'Read a file', input_schema: { type: 'object' } },
];
const params = { model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'hello' }], tools };

function client(url, maxRetries = 0) {
  return new Anthropic({ apiKey: 'hiccup', baseURL: url, maxRetries });
}

/**
 * Streams one request with the raw event iterator and collects text, tool_use blocks (with their
 * input_json_delta fragments), the stop reason and whether message_stop arrived. On a throw, the
 * partial result is attached to the error as `.partial`.
 */
async function stream(url, maxRetries = 0) {
  const out = { text: '', blocks: [], stopReason: null, messageStop: false, types: [] };
  try {
    const it = await client(url, maxRetries).messages.create({ ...params, stream: true });
    for await (const ev of it) {
      out.types.push(ev.type);
      if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use') {
        out.blocks[ev.index] = { id: ev.content_block.id, name: ev.content_block.name, json: '', fragments: 0 };
      } else if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') {
        out.text += ev.delta.text;
      } else if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') {
        out.blocks[ev.index].json += ev.delta.partial_json;
        out.blocks[ev.index].fragments++;
      } else if (ev.type === 'message_delta') {
        out.stopReason = ev.delta.stop_reason;
      } else if (ev.type === 'message_stop') {
        out.messageStop = true;
      }
    }
  } catch (e) {
    if (e && typeof e === 'object') e.partial = out;
    throw e;
  }
  out.calls = out.blocks.filter(Boolean).map((b) => ({ id: b.id, name: b.name, input: JSON.parse(b.json || '{}'), fragments: b.fragments }));
  return out;
}

async function expectError(scn, body) {
  const r = await withServer(scn, body);
  assert.ok(r.error, `expected the SDK to throw, but it returned ${JSON.stringify(r.result)}`);
  return r;
}

const sc = (name, ...turns) => scenario('anthropic', name, turns);
const callTurn = (fault) => turn({
  events: [{ text: 'Running it.' }, { call: { name: 'shell', args: nestedArgs, fragments: 3 } }, { finish: 'stop' }],
  ...(fault ? { fault } : {}),
});

test('text: a streamed reply arrives intact', T, async () => {
  const r = await withServer(sc('anthropic-text', turn({ events: [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }] })),
                             (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, fullText);
  assert.equal(r.result.stopReason, 'end_turn');
  assert.equal(r.result.messageStop, true);
  assert.equal(r.journal.length, 1);
  assert.equal(r.journal[0].completed, true);
});

// A run of text events is one text block, as the API streams it (issue 41): a reader of the
// Message's content blocks (langchain-anthropic returns a string for one text block, a list for
// several) gets the whole text in one block.
test('text: a run of text is one text block, in finalMessage() and in messages.create', T, async () => {
  const events = [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }];
  const r = await withServer(sc('anthropic-text-block', turn({ events })), async (url) => client(url).messages.stream(params).finalMessage());
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.content.map((b) => [b.type, b.text]), [['text', fullText]]);
  const u = await withServer(sc('anthropic-text-block-unary', turn({ events })), async (url) => client(url).messages.create(params));
  assert.equal(u.error, undefined, describeError(u.error));
  assert.deepEqual(u.result.content.map((b) => [b.type, b.text]), [['text', fullText]]);
});

test('text: an error event after text falls inside the open text block (no content_block_stop)', T, async () => {
  const r = await expectError(sc('anthropic-text-block-error', turn({ events: [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }],
                                                                      fault: { kind: 'error_event', after_event: 2, status: 529 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof APIError, describeError(r.error));
  assert.equal(r.error.partial.text, textPieces[0] + textPieces[1]);
  assert.deepEqual(r.error.partial.types.filter((t) => t.startsWith('content_block')),
                   ['content_block_start', 'content_block_delta', 'content_block_delta']);
});

test('tool call: args in 3 input_json_delta fragments arrive exactly as scripted', T, async () => {
  const r = await withServer(sc('anthropic-call', callTurn(), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'Running it.');
  assert.equal(r.result.calls.length, 1);
  const [call] = r.result.calls;
  assert.equal(call.name, 'shell');
  assert.match(call.id, /^toolu_/);
  assert.equal(call.fragments, 3, 'the arguments should arrive in 3 input_json_delta events');
  assert.deepEqual(call.input, nestedArgs);
  assert.equal(r.result.stopReason, 'tool_use');
});

test('tool call via the MessageStream helper: finalMessage() holds the parsed input', T, async () => {
  const r = await withServer(sc('anthropic-call-helper', callTurn(), answerTurn), async (url) =>
    client(url).messages.stream(params).finalMessage());
  assert.equal(r.error, undefined, describeError(r.error));
  const uses = r.result.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.deepEqual(uses[0].input, nestedArgs);
  assert.equal(r.result.stop_reason, 'tool_use');
});

test('parallel calls: two calls keep their own args and ids', T, async () => {
  const a = { path: 'src/ä.txt', range: { from: 1, to: 20 } };
  const b = { command: 'ls -la', env: { LANG: 'de_DE.UTF-8' } };
  const r = await withServer(sc('anthropic-parallel',
    turn({ events: [{ call: { name: 'read_file', args: a, fragments: 2 } }, { call: { name: 'shell', args: b, fragments: 2 } }, { finish: 'stop' }] }),
    answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const calls = r.result.calls;
  assert.deepEqual(calls.map((c) => [c.name, c.input]), [['read_file', a], ['shell', b]]);
  assert.ok(calls[0].id && calls[1].id && calls[0].id !== calls[1].id, `ids must differ: ${calls.map((c) => c.id)}`);
});

test('non-streaming: messages.create returns text and the tool_use block', T, async () => {
  const r = await withServer(sc('anthropic-unary', callTurn(), answerTurn), async (url) => client(url).messages.create(params));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.content.filter((b) => b.type === 'text').map((b) => b.text), ['Running it.']);
  const uses = r.result.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, 'shell');
  assert.deepEqual(uses[0].input, nestedArgs);
  assert.equal(r.result.stop_reason, 'tool_use');
});

test('reset after the call: the stream iterator throws ECONNRESET', T, async () => {
  const r = await expectError(sc('anthropic-reset', callTurn({ kind: 'reset', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('ECONNRESET'), `expected ECONNRESET in the cause chain: ${describeError(r.error)}`);
  assert.equal(r.error.partial.messageStop, false);
});

test('disconnect mid-arguments (after 1 of 3 fragments): the iterator throws, no complete call', T, async () => {
  const r = await expectError(sc('anthropic-disconnect', callTurn({ kind: 'disconnect', after_event: 1, after_fragment: 1 }), answerTurn),
                              (url) => stream(url));
  assert.ok(!(r.error instanceof APIError) || r.error instanceof APIConnectionError, describeError(r.error));
  assert.ok(causeCodes(r.error).includes('UND_ERR_SOCKET'), `expected UND_ERR_SOCKET in the cause chain: ${describeError(r.error)}`);
  const block = r.error.partial.blocks.filter(Boolean)[0];
  assert.equal(block?.fragments, 1, 'exactly one argument fragment before the cut');
  assert.throws(() => JSON.parse(block.json), SyntaxError, 'a cut argument string must not parse');
});

test('HTTP 529: OverloadedError status 529, type overloaded_error', T, async () => {
  const r = await expectError(sc('anthropic-529', turn({ status: 529 })), (url) => stream(url));
  assert.ok(r.error instanceof OverloadedError, describeError(r.error));
  assert.equal(r.error.status, 529);
  assert.equal(r.error.type, 'overloaded_error');
  assert.equal(r.error.error?.type, 'error');
});

test('HTTP 503: ServiceUnavailableError (an InternalServerError) status 503', T, async () => {
  const r = await expectError(sc('anthropic-503', turn({ status: 503 })), (url) => stream(url));
  assert.ok(r.error instanceof ServiceUnavailableError && r.error instanceof InternalServerError, describeError(r.error));
  assert.equal(r.error.status, 503);
});

test('HTTP 429 with retry_after_s 2: RateLimitError whose headers carry retry-after', T, async () => {
  const r = await expectError(sc('anthropic-429', turn({ status: 429, retry_after_s: 2 })), (url) => stream(url));
  assert.ok(r.error instanceof RateLimitError, describeError(r.error));
  assert.equal(r.error.status, 429);
  assert.equal(r.error.type, 'rate_limit_error');
  assert.equal(r.error.headers.get('retry-after'), '2');
});

test('HTTP 429 with maxRetries 1: the SDK waits the retry-after delay, then succeeds', T, async () => {
  const r = await withServer(sc('anthropic-429-retry', turn({ status: 429, retry_after_s: 2 }, { events: [{ text: 'ok' }, { finish: 'stop' }] })),
                             (url) => stream(url, 1));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'ok');
  assert.deepEqual(r.journal.map((e) => e.response_status), [429, 200]);
  assert.ok(r.ms >= 1500, `retried after ${r.ms.toFixed(0)} ms, expected about 2000 (retry-after)`);
});

test('error_event 529 mid-stream: the iterator throws APIError type overloaded_error', T, async () => {
  const r = await expectError(sc('anthropic-error-event', turn({ events: [{ text: 'partial ' }, { text: 'never' }, { finish: 'stop' }],
                                                                  fault: { kind: 'error_event', after_event: 1, status: 529 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof APIError && !(r.error instanceof APIConnectionError), describeError(r.error));
  assert.equal(r.error.type, 'overloaded_error');
  assert.equal(r.error.error?.error?.message, 'Overloaded');
  assert.equal(r.error.partial.text, 'partial ');
});

test('end without message_stop after a call: the raw iterator ends silently, stop_reason absent', T, async () => {
  const r = await withServer(sc('anthropic-end', callTurn({ kind: 'end', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.calls.map((c) => c.input), [nestedArgs]);
  assert.equal(r.result.stopReason, null);
  assert.equal(r.result.messageStop, false);
});

test('end without message_stop: the MessageStream helper rejects finalMessage()', T, async () => {
  const r = await expectError(sc('anthropic-end-helper', callTurn({ kind: 'end', after_event: 2 }), answerTurn),
                              async (url) => client(url).messages.stream(params).finalMessage());
  assert.ok(r.error instanceof AnthropicError, describeError(r.error));
  assert.match(r.error.message, /stream ended without producing a Message/);
});

test('content_filter finish: stop_reason refusal', T, async () => {
  const r = await withServer(sc('anthropic-refusal', turn({ events: [{ finish: 'content_filter' }] }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.stopReason, 'refusal');
  assert.equal(r.result.messageStop, true);
});
