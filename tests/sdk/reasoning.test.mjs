// Reasoning round trips through the official SDKs (issue 41): each pinned SDK streams an answer
// whose call comes after reasoning (an Anthropic thinking block, a Responses reasoning item, a
// Gemini thought part with its thoughtSignature on the call), yields the reasoning with its
// signature as its own types (ThinkingBlock, ResponseReasoningItem, a Part with `thought`), and
// then sends it back with the tool result the way the SDK's own users do (the message content, the
// output items, the candidate's parts). hiccup accepts the unchanged round trip and answers the
// provider's own 400 to a changed or dropped one, which the SDK surfaces as its 400 error class.
// Wire shapes and the 400s: docs/WIRE-FORMATS.md, "Reasoning".
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { describeError, loadSdk, scenario, turn, withServer } from './common.mjs';

const { Anthropic, BadRequestError: AnthropicBadRequest } = loadSdk('@anthropic-ai/sdk');
const { OpenAI, BadRequestError: OpenAIBadRequest } = loadSdk('openai');
const { GoogleGenAI, ApiError } = loadSdk('@google/genai');
const T = { timeout: 60_000 };

const THOUGHT = 'The log mentions a missing header; look at the include paths first.';
const ARGS = { command: 'grep -rn include CMakeLists.txt' };
const ANSWER = 'The include path lacks third_party/.';

/** Turn 0 streams reasoning then a call (an optional scripted signature); turn 1 answers. */
function reasoningScenario(provider, name, signature) {
  const reasoning = { text: THOUGHT, ...(signature ? { signature } : {}) };
  return scenario(provider, name, [
    turn({ events: [{ reasoning }, { call: { name: 'shell', args: ARGS } }, { finish: 'stop' }] }),
    turn({ events: [{ text: ANSWER }, { finish: 'stop' }] }),
  ]);
}

/** Flips the last base64 character of a signature: the same length, another value. */
const tamper = (s) => s.slice(0, -2) + (s.at(-2) === 'A' ? 'B' : 'A') + s.at(-1);

// ---- Anthropic Messages -------------------------------------------------------------------------

const anthropicParams = {
  model: 'claude-opus-5-5',
  max_tokens: 2048,
  thinking: { type: 'enabled', budget_tokens: 1024 },
  tools: [{ name: 'shell', description: 'Run a command', input_schema: { type: 'object' } }],
};
const anthropicClient = (url) => new Anthropic({ apiKey: 'hiccup', baseURL: url, maxRetries: 0 });

/**
 * Streams turn 0 with the SDK's MessageStream, then (unless `edit` returns null) sends the final
 * message's content back, as `edit` leaves it, with a tool_result, streamed too. Returns the first
 * message and the second's text.
 */
async function anthropicRoundTrip(url, edit = (content) => content) {
  const client = anthropicClient(url);
  const user = { role: 'user', content: 'Find why the build fails.' };
  const first = await client.messages.stream({ ...anthropicParams, messages: [user] }).finalMessage();
  const use = first.content.find((b) => b.type === 'tool_use');
  const content = edit(structuredClone(first.content));
  const second = await client.messages.stream({
    ...anthropicParams,
    messages: [user, { role: 'assistant', content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'CMakeLists.txt:3: include(foo)' }] }],
  }).finalMessage();
  return { first, text: second.content.filter((b) => b.type === 'text').map((b) => b.text).join('') };
}

test('anthropic: a thinking block streams whole (ThinkingBlock with its signature) and its round trip is accepted', T, async () => {
  const r = await withServer(reasoningScenario('anthropic', 'sdk-reasoning-anthropic'), (url) => anthropicRoundTrip(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const [thinking, use] = r.result.first.content;
  assert.equal(thinking.type, 'thinking');
  assert.equal(thinking.thinking, THOUGHT);
  // Unscripted: the server's per-request signature, base64("hiccup-thought-0-0").
  assert.equal(thinking.signature, Buffer.from('hiccup-thought-0-0').toString('base64'));
  assert.equal(use.type, 'tool_use');
  assert.deepEqual(use.input, ARGS);
  assert.equal(r.result.text, ANSWER);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 200]);
  assert.equal(r.journal[0].delivered_reasoning?.[0]?.signature, thinking.signature);
});

test('anthropic: a thinking block sent back with a changed signature gets the API 400 as BadRequestError', T, async () => {
  const r = await withServer(reasoningScenario('anthropic', 'sdk-reasoning-anthropic-tampered'), (url) =>
    anthropicRoundTrip(url, (content) => content.map((b) => (b.type === 'thinking' ? { ...b, signature: tamper(b.signature) } : b))));
  assert.ok(r.error instanceof AnthropicBadRequest, describeError(r.error));
  assert.equal(r.error.status, 400);
  assert.match(r.error.message, /messages\.1\.content\.0: Invalid `signature` in `thinking` block/);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 400]);
});

test('anthropic: an assistant turn sent back without its thinking block gets the API 400', T, async () => {
  const r = await withServer(reasoningScenario('anthropic', 'sdk-reasoning-anthropic-dropped'), (url) =>
    anthropicRoundTrip(url, (content) => content.filter((b) => b.type !== 'thinking')));
  assert.ok(r.error instanceof AnthropicBadRequest, describeError(r.error));
  assert.match(r.error.message, /Expected `thinking` or `redacted_thinking`, but found `tool_use`/);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 400]);
});

// ---- OpenAI Responses ---------------------------------------------------------------------------

const responsesParams = {
  model: 'gpt-5.5',
  store: false,
  include: ['reasoning.encrypted_content'],
  reasoning: { effort: 'medium', summary: 'auto' },
  tools: [{ type: 'function', name: 'shell', description: 'Run a command', parameters: { type: 'object' }, strict: false }],
};
const openaiClient = (url) => new OpenAI({ apiKey: 'hiccup', baseURL: url + '/v1', maxRetries: 0 });

/** Streams a Responses request and returns the terminal response (response.completed's). */
async function responsesStream(client, input) {
  let completed = null;
  const it = await client.responses.create({ ...responsesParams, input, stream: true });
  for await (const ev of it) if (ev.type === 'response.completed') completed = ev.response;
  assert.ok(completed, 'no response.completed event');
  return completed;
}

async function responsesRoundTrip(url, edit = (items) => items) {
  const client = openaiClient(url);
  const user = { role: 'user', content: 'Find why the build fails.' };
  const first = await responsesStream(client, [user]);
  const call = first.output.find((i) => i.type === 'function_call');
  const items = edit(structuredClone(first.output));
  const second = await responsesStream(client, [user, ...items, { type: 'function_call_output', call_id: call.call_id, output: 'CMakeLists.txt:3: include(foo)' }]);
  return { first, text: second.output_text ?? second.output.filter((i) => i.type === 'message').flatMap((m) => m.content).map((c) => c.text).join('') };
}

test('openai responses: a reasoning item streams whole (summary, encrypted_content) and its round trip is accepted', T, async () => {
  const r = await withServer(reasoningScenario('openai-responses', 'sdk-reasoning-responses', 'c2NyaXB0ZWQtc2lnbmF0dXJl'),
                             (url) => responsesRoundTrip(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const [reasoning, call] = r.result.first.output;
  assert.equal(reasoning.type, 'reasoning');
  assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: THOUGHT }]);
  assert.equal(reasoning.encrypted_content, 'c2NyaXB0ZWQtc2lnbmF0dXJl');  // the scripted signature
  assert.equal(call.type, 'function_call');
  assert.deepEqual(JSON.parse(call.arguments), ARGS);
  assert.equal(r.result.text, ANSWER);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 200]);
});

test('openai responses: a reasoning item sent back with changed encrypted_content gets the API 400 as BadRequestError', T, async () => {
  const r = await withServer(reasoningScenario('openai-responses', 'sdk-reasoning-responses-tampered', 'c2NyaXB0ZWQtc2lnbmF0dXJl'), (url) =>
    responsesRoundTrip(url, (items) => items.map((i) => (i.type === 'reasoning' ? { ...i, encrypted_content: tamper(i.encrypted_content) } : i))));
  assert.ok(r.error instanceof OpenAIBadRequest, describeError(r.error));
  assert.equal(r.error.status, 400);
  assert.equal(r.error.code, 'invalid_encrypted_content');
  const sent = tamper('c2NyaXB0ZWQtc2lnbmF0dXJl');
  assert.ok(r.error.message.includes(`The encrypted content ${sent.slice(0, 4)}...${sent.slice(-4)} could not be verified`), r.error.message);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 400]);
});

// ---- Gemini -------------------------------------------------------------------------------------

const geminiConfig = {
  thinkingConfig: { includeThoughts: true },
  tools: [{ functionDeclarations: [{ name: 'shell', description: 'Run a command', parametersJsonSchema: { type: 'object' } }] }],
};

/** Streams turn 0, collects the candidate's parts as the stream gave them, sends them back. */
async function geminiRoundTrip(url, edit = (parts) => parts) {
  const ai = new GoogleGenAI({ apiKey: 'hiccup', httpOptions: { baseUrl: url } });
  const user = { role: 'user', parts: [{ text: 'Find why the build fails.' }] };
  const parts = [];
  const first = await ai.models.generateContentStream({ model: 'gemini-2.5-pro', contents: [user], config: geminiConfig });
  for await (const chunk of first) parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
  const call = parts.find((p) => p.functionCall)?.functionCall;
  let text = '';
  const second = await ai.models.generateContentStream({
    model: 'gemini-2.5-pro',
    contents: [user, { role: 'model', parts: edit(structuredClone(parts)) },
               { role: 'user', parts: [{ functionResponse: { name: call.name, response: { output: 'CMakeLists.txt:3: include(foo)' } } }] }],
    config: geminiConfig,
  });
  for await (const chunk of second) {
    for (const p of chunk.candidates?.[0]?.content?.parts ?? []) if (typeof p.text === 'string' && !p.thought) text += p.text;
  }
  return { parts, text };
}

test('gemini: a thought part streams and the call carries its thoughtSignature, and the round trip is accepted', T, async () => {
  const r = await withServer(reasoningScenario('gemini', 'sdk-reasoning-gemini'), (url) => geminiRoundTrip(url));
  assert.equal(r.error, undefined, describeError(r.error));
  const thought = r.result.parts.find((p) => p.thought);
  const call = r.result.parts.find((p) => p.functionCall);
  assert.equal(thought?.text, THOUGHT);
  assert.equal(call.thoughtSignature, Buffer.from('hiccup-thought-0-0').toString('base64'));
  assert.deepEqual(call.functionCall.args, ARGS);
  assert.equal(r.result.text, ANSWER);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 200]);
});

test('gemini: a call sent back without its thoughtSignature gets the API 400 (INVALID_ARGUMENT) as ApiError', T, async () => {
  const r = await withServer(reasoningScenario('gemini', 'sdk-reasoning-gemini-dropped'), (url) =>
    geminiRoundTrip(url, (parts) => parts.map(({ thoughtSignature, ...p }) => p)));
  assert.ok(r.error instanceof ApiError, describeError(r.error));
  assert.equal(r.error.status, 400);
  assert.match(r.error.message, /Function call is missing a thought_signature in functionCall parts/);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 400]);
});

test('gemini: a call sent back with a changed thoughtSignature gets the API 400 (Corrupted thought signature)', T, async () => {
  const r = await withServer(reasoningScenario('gemini', 'sdk-reasoning-gemini-tampered'), (url) =>
    geminiRoundTrip(url, (parts) => parts.map((p) => (p.thoughtSignature ? { ...p, thoughtSignature: tamper(p.thoughtSignature) } : p))));
  assert.ok(r.error instanceof ApiError, describeError(r.error));
  assert.equal(r.error.status, 400);
  assert.match(r.error.message, /Corrupted thought signature\./);
  assert.deepEqual(r.journal.map((e) => e.response_status), [200, 400]);
});
