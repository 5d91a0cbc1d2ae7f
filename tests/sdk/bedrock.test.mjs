// @aws-sdk/client-bedrock-runtime (pinned in package.json), the official AWS SDK's Bedrock runtime
// client, against hiccup's Bedrock path (POST /model/{modelId}/invoke-with-response-stream, AWS
// event-stream frames; docs/WIRE-FORMATS.md "Cloud paths"). Dummy credentials, endpoint 127.0.0.1.
// See README.md.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';

import { answerTurn, fullText, loadSdk, nestedArgs, scenario, sdkModules, textPieces, turn, withServer } from './common.mjs';

const sdk = loadSdk('@aws-sdk/client-bedrock-runtime');
const { BedrockRuntimeClient, InvokeModelWithResponseStreamCommand } = sdk;
// The client streams over HTTP/2 by default (NodeHttp2Handler); hiccup serves HTTP/1.1, as an
// HTTPS-terminating proxy in front of Bedrock would: the SDK's own HTTP/1.1 handler, which it
// installs with itself (@smithy/node-http-handler, a dependency of the pinned client).
const { NodeHttpHandler } = createRequire(join(sdkModules, 'noop.js'))('@smithy/node-http-handler');
const MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const T = { timeout: 60_000 };

const body = JSON.stringify({
  anthropic_version: 'bedrock-2023-05-31',
  max_tokens: 1024,
  messages: [{ role: 'user', content: 'hello' }],
  tools: [{ name: 'shell', description: 'Run a command', input_schema: { type: 'object' } }],
});

function client(url) {
  return new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: { accessKeyId: 'AKIDHICCUP', secretAccessKey: 'hiccup-dummy-secret' },
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler(),
  });
}

/** Streams one invocation and collects the Anthropic events the chunks carry. */
async function stream(url) {
  const out = { text: '', calls: [], types: [], stopReason: null };
  try {
    const res = await client(url).send(new InvokeModelWithResponseStreamCommand({
      modelId: MODEL, contentType: 'application/json', accept: 'application/json', body,
    }));
    out.contentType = res.contentType;
    let call = null;
    for await (const ev of res.body) {
      assert.ok(ev.chunk, `expected only chunk events, got ${JSON.stringify(Object.keys(ev))}`);
      const e = JSON.parse(Buffer.from(ev.chunk.bytes).toString('utf8'));
      out.types.push(e.type);
      if (e.type === 'content_block_start' && e.content_block.type === 'tool_use') {
        call = { id: e.content_block.id, name: e.content_block.name, json: '', fragments: 0 };
      } else if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') {
        out.text += e.delta.text;
      } else if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') {
        call.json += e.delta.partial_json;
        call.fragments++;
      } else if (e.type === 'content_block_stop' && call) {
        out.calls.push({ id: call.id, name: call.name, input: JSON.parse(call.json || '{}'), fragments: call.fragments });
        call = null;
      } else if (e.type === 'message_delta') {
        out.stopReason = e.delta.stop_reason;
      }
    }
  } catch (e) {
    if (e && typeof e === 'object') e.partial = out;
    throw e;
  }
  return out;
}

const sc = (name, ...turns) => scenario('anthropic', name, turns);

test('text and a tool_use in 3 fragments arrive intact through the event stream', T, async () => {
  const r = await withServer(sc('bedrock-text-call',
    turn({ events: [...textPieces.map((text) => ({ text })), { call: { name: 'shell', args: nestedArgs, fragments: 3 } }, { finish: 'stop' }] }),
    answerTurn), (url) => stream(url));
  assert.equal(r.error, undefined, String(r.error?.stack ?? r.error));
  assert.equal(r.result.text, fullText);
  assert.equal(r.result.calls.length, 1);
  assert.equal(r.result.calls[0].name, 'shell');
  assert.deepEqual(r.result.calls[0].input, nestedArgs);
  assert.equal(r.result.calls[0].fragments, 3);
  assert.match(r.result.calls[0].id, /^toolu_/);
  assert.equal(r.result.stopReason, 'tool_use');
  assert.equal(r.result.types.at(0), 'message_start');
  assert.equal(r.result.types.at(-1), 'message_stop');
  assert.equal(r.journal[0].target, '/v1/messages');  // journaled as the Anthropic request it stands for
  assert.equal(r.journal[0].completed, true);
});

// Each in-stream error is an exception event the SDK throws as its typed exception, after the
// chunks before it were read.
for (const [status, name] of [[429, 'ThrottlingException'], [529, 'ServiceUnavailableException'],
                              [500, 'InternalServerException'], [400, 'ValidationException'],
                              [504, 'ModelTimeoutException'], [403, 'ModelStreamErrorException']]) {
  test(`error_event ${status} mid-stream: the SDK throws ${name}`, T, async () => {
    const r = await withServer(sc(`bedrock-error-${status}`,
      turn({ events: [{ text: 'partial ' }, { text: 'answer' }, { finish: 'stop' }], fault: { kind: 'error_event', after_event: 1, status } })),
    (url) => stream(url));
    assert.ok(r.error, `expected a throw, got ${JSON.stringify(r.result)}`);
    assert.equal(r.error.name, name, String(r.error.stack ?? r.error));
    assert.ok(r.error instanceof sdk[name], `not an instance of the SDK's ${name}`);
    assert.equal(r.error.partial.text, 'partial ');
    if (name === 'ModelStreamErrorException') assert.equal(r.error.originalStatusCode, 403);
  });
}

test('HTTP 429 before the stream: the SDK throws ThrottlingException with status 429', T, async () => {
  const r = await withServer(sc('bedrock-http-429', turn({ status: 429, retry_after_s: 2 })), (url) => stream(url));
  assert.ok(r.error);
  assert.equal(r.error.name, 'ThrottlingException', String(r.error.stack ?? r.error));
  assert.ok(r.error instanceof sdk.ThrottlingException);
  assert.equal(r.error.$metadata.httpStatusCode, 429);
  assert.equal(r.error.message, 'Rate limited');
});

test('a cut inside a message: the SDK fails on the truncated frame, not silently', T, async () => {
  const r = await withServer(sc('bedrock-cut',
    turn({ events: [{ text: 'one ' }, { text: 'two' }, { finish: 'stop' }], fault: { kind: 'cut', after_event: 1, bytes: 20 } })),
  (url) => stream(url));
  assert.ok(r.error, `expected a throw, got ${JSON.stringify(r.result)}`);
  assert.equal(r.error.partial.text, 'one ');
  assert.ok(!r.error.partial.types.includes('message_stop'));
});
