// @google/genai (pinned in package.json) against hiccup's Gemini wire format
// (/v1beta/models/{model}:streamGenerateContent?alt=sse and :generateContent). See README.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { answerTurn, causeCodes, describeError, fullText, loadSdk, nestedArgs, scenario, textPieces, turn, withServer } from './common.mjs';

const { GoogleGenAI, ApiError } = loadSdk('@google/genai');
const MODEL = 'gemini-2.5-pro';
const T = { timeout: 60_000 };

const tools = [{
  functionDeclarations: [
    { name: 'shell', description: 'Run a command', parametersJsonSchema: { type: 'object' } },
    { name: 'read_file', description: 'Read a file', parametersJsonSchema: { type: 'object' } },
  ],
}];

function client(url, retryOptions) {
  return new GoogleGenAI({ apiKey: 'hiccup', httpOptions: { baseUrl: url, ...(retryOptions ? { retryOptions } : {}) } });
}

/** Streams one request and collects text, calls, finish reasons and the chunks themselves. */
async function stream(url, retryOptions) {
  const out = { text: '', calls: [], finishReasons: [], chunks: 0 };
  const it = await client(url, retryOptions).models.generateContentStream({ model: MODEL, contents: 'hello', config: { tools } });
  for await (const chunk of it) {
    out.chunks++;
    const cand = chunk.candidates?.[0];
    for (const part of cand?.content?.parts ?? []) {
      if (typeof part.text === 'string') out.text += part.text;
      if (part.functionCall) out.calls.push(part.functionCall);
    }
    if (cand?.finishReason) out.finishReasons.push(cand.finishReason);
  }
  return out;
}

/** Runs `body` against `scn`, returning its error (and asserting there is one). */
async function expectError(scn, body) {
  const r = await withServer(scn, body);
  assert.ok(r.error, `expected the SDK to throw, but it returned ${JSON.stringify(r.result)}`);
  return r;
}

const sc = (name, ...turns) => scenario('gemini', name, turns);
const callTurn = (fault) => turn({
  events: [{ text: 'Running it.' }, { call: { name: 'shell', args: nestedArgs, fragments: 3 } }, { finish: 'stop' }],
  ...(fault ? { fault } : {}),
});

test('text: a streamed reply arrives intact', T, async () => {
  const r = await withServer(sc('genai-text', turn({ events: [...textPieces.map((t) => ({ text: t })), { finish: 'stop' }] })),
                             (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, fullText);
  assert.deepEqual(r.result.finishReasons, ['STOP']);
  assert.equal(r.journal.length, 1);
  assert.equal(r.journal[0].completed, true);
});

test('tool call: nested non-ASCII args arrive exactly as scripted (Gemini sends a call whole)', T, async () => {
  const r = await withServer(sc('genai-call', callTurn(), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'Running it.');
  assert.equal(r.result.calls.length, 1);
  assert.equal(r.result.calls[0].name, 'shell');
  assert.deepEqual(r.result.calls[0].args, nestedArgs);
  assert.deepEqual(r.result.finishReasons, ['STOP']);
});

test('parallel calls: two calls keep their own args and ids', T, async () => {
  const a = { path: 'src/ä.txt', range: { from: 1, to: 20 } };
  const b = { command: 'ls -la', env: { LANG: 'de_DE.UTF-8' } };
  const r = await withServer(sc('genai-parallel',
    turn({ events: [{ call: { name: 'read_file', args: a, id: 'call-a' } }, { call: { name: 'shell', args: b, id: 'call-b' } }, { finish: 'stop' }] }),
    answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.calls.map((c) => [c.id, c.name, c.args]), [['call-a', 'read_file', a], ['call-b', 'shell', b]]);
});

test('non-streaming: generateContent returns text and the call', T, async () => {
  const r = await withServer(sc('genai-unary', callTurn(), answerTurn), async (url) =>
    client(url).models.generateContent({ model: MODEL, contents: 'hello', config: { tools } }));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'Running it.');
  assert.equal(r.result.functionCalls.length, 1);
  assert.deepEqual(r.result.functionCalls[0].args, nestedArgs);
  assert.equal(r.result.candidates[0].finishReason, 'STOP');
});

test('reset after the call: the stream iterator throws ECONNRESET', T, async () => {
  const r = await expectError(sc('genai-reset', callTurn({ kind: 'reset', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.ok(!(r.error instanceof ApiError), describeError(r.error));
  assert.ok(causeCodes(r.error).includes('ECONNRESET'), `expected ECONNRESET in the cause chain: ${describeError(r.error)}`);
});

test('disconnect after the call: the stream iterator throws (undici "other side closed")', T, async () => {
  const r = await expectError(sc('genai-disconnect', callTurn({ kind: 'disconnect', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.ok(!(r.error instanceof ApiError), describeError(r.error));
  assert.ok(causeCodes(r.error).includes('UND_ERR_SOCKET'), `expected UND_ERR_SOCKET in the cause chain: ${describeError(r.error)}`);
});

// Google answers an error status on streamGenerateContent?alt=sse with the envelope pretty-printed
// under `Content-Type: text/event-stream` (a recorded live 404: js-genai
// test/system/recordings/Chats_Tests_sendMessage_Send_message_stream_with_error.json), so the SDK's
// throwErrorIfNotOK takes its non-JSON branch and the ApiError message wraps the pretty text:
// `{"error":{"message":"{\n  \"error\": {…}\n}\n","code":503,"status":"Service Unavailable"}}`, as
// users of gemini-cli see it (gemini-cli #2020, #15745). generateContent answers
// `application/json; charset=UTF-8`, which the SDK parses (js-genai #1840).
/** The envelope inside a streaming ApiError: the message's wrapper and the pretty text it holds. */
function wrapped(err) {
  const outer = JSON.parse(err.message);
  assert.equal(typeof outer.error.message, 'string', err.message);
  assert.ok(outer.error.message.startsWith('{\n  "error": {\n    "code": '), `not Google's pretty-printed text: ${err.message}`);
  return { outer, inner: JSON.parse(outer.error.message) };
}

test('HTTP 503 streaming: ApiError 503 whose message wraps the pretty-printed envelope, as live', T, async () => {
  const r = await expectError(sc('genai-503', turn({ status: 503 })), (url) => stream(url));
  assert.ok(r.error instanceof ApiError, describeError(r.error));
  assert.equal(r.error.status, 503);
  const { outer, inner } = wrapped(r.error);
  assert.deepEqual([outer.error.code, outer.error.status], [503, 'Service Unavailable']);
  assert.equal(inner.error.status, 'UNAVAILABLE');
  assert.equal(inner.error.message, 'The model is overloaded. Please try again later.');
});

test('HTTP 503 non-streaming: ApiError 503 whose message is the parsed envelope', T, async () => {
  const r = await expectError(sc('genai-503-unary', turn({ status: 503 })),
                              async (url) => client(url).models.generateContent({ model: MODEL, contents: 'hello' }));
  assert.ok(r.error instanceof ApiError, describeError(r.error));
  assert.equal(r.error.status, 503);
  assert.deepEqual(JSON.parse(r.error.message),
                   { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } });
});

test('HTTP 429 with retry_after_s: ApiError 429 carrying RetryInfo.retryDelay "2s"', T, async () => {
  const r = await expectError(sc('genai-429', turn({ status: 429, retry_after_s: 2 })), (url) => stream(url));
  assert.ok(r.error instanceof ApiError, describeError(r.error));
  assert.equal(r.error.status, 429);
  const { outer, inner: body } = wrapped(r.error);
  assert.equal(outer.error.status, 'Too Many Requests');
  assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
  const info = body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
  assert.equal(info?.retryDelay, '2s');
});

test('HTTP 429 with SDK retries on: it recovers on its own backoff (the SDK does not read RetryInfo)', T, async () => {
  const r = await withServer(sc('genai-429-retry', turn({ status: 429, retry_after_s: 2 }, { events: [{ text: 'ok' }, { finish: 'stop' }] })),
                             (url) => stream(url, { attempts: 2, initialDelay: 0.1, maxDelay: 0.1, jitter: 0 }));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.equal(r.result.text, 'ok');
  assert.deepEqual(r.journal.map((e) => e.response_status), [429, 200]);
  assert.ok(r.ms < 1800, `waited ${r.ms.toFixed(0)} ms: the SDK's own 0.1 s backoff, not RetryInfo's 2 s, is expected`);
});

test('error_event 503 mid-stream: the iterator throws (never a silent success), after the partial text', T, async () => {
  let text = '';
  const r = await expectError(sc('genai-error-event-throws', turn({ events: [{ text: 'partial ' }, { text: 'never' }, { finish: 'stop' }],
                                                                    fault: { kind: 'error_event', after_event: 1, status: 503 } })),
                              async (url) => {
                                const it = await client(url).models.generateContentStream({ model: MODEL, contents: 'hello' });
                                for await (const chunk of it) text += chunk.text ?? '';
                              });
  assert.equal(text, 'partial ', describeError(r.error));
});

// The SDK recognises an in-band error only when a network read holds the bare `{"error":{…}}`
// object alone (googleapis/js-genai#1342). The mock therefore waits until the frames before it
// were received and 50 ms more, as a real backend does, before writing it (issue 12). Before that
// fix, one read held both and the stream ended with `Error: Incomplete JSON segment at the end`.
test('error_event 503 mid-stream: the iterator throws ApiError 503', T, async () => {
  const r = await expectError(sc('genai-error-event', turn({ events: [{ text: 'partial ' }, { text: 'never' }, { finish: 'stop' }],
                                                              fault: { kind: 'error_event', after_event: 1, status: 503 } })),
                              (url) => stream(url));
  assert.ok(r.error instanceof ApiError, `expected ApiError, got ${describeError(r.error)}`);
  assert.equal(r.error.status, 503);
});

test('end without finishReason after a call: the SDK finishes silently, no finishReason is the only evidence', T, async () => {
  const r = await withServer(sc('genai-end', callTurn({ kind: 'end', after_event: 2 }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.calls.map((c) => c.args), [nestedArgs]);
  assert.deepEqual(r.result.finishReasons, []);
});

test('content_filter finish: finishReason SAFETY, no content', T, async () => {
  const r = await withServer(sc('genai-safety', turn({ events: [{ finish: 'content_filter' }] }), answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, describeError(r.error));
  assert.deepEqual(r.result.finishReasons, ['SAFETY']);
  assert.equal(r.result.text, '');
  assert.equal(r.result.calls.length, 0);
});
