// @modelcontextprotocol/sdk (pinned in package.json): the official TypeScript SDK's Client over its
// StreamableHTTPClientTransport against hiccup's MCP mock (POST /mcp of the default session,
// /s/{id}/mcp of a named one), a scenario's `tools` section scripting each call. Each scripted
// behaviour is checked twice: as the SDK reports it, and in the session's tool-call journal
// (GET /_hiccup/sessions/{id}/tool_calls), which counts every execution. The SDK's
// StdioClientTransport does the same through `hiccup mcp URL`, the stdio bridge. See README.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { describeError, hiccupBin, loadSdkPath, serve } from './common.mjs';

const { Client } = loadSdkPath('@modelcontextprotocol/sdk', 'client/index.js');
const { StreamableHTTPClientTransport } = loadSdkPath('@modelcontextprotocol/sdk', 'client/streamableHttp.js');
const { StdioClientTransport } = loadSdkPath('@modelcontextprotocol/sdk', 'client/stdio.js');
const { McpError } = loadSdkPath('@modelcontextprotocol/sdk', 'types.js');
const T = { timeout: 60_000 };

const tools = [
  { name: 'read_file', description: 'Reads a file', idempotent: true,
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    annotations: { readOnlyHint: true, idempotentHint: true },
    calls: [{ duration_s: 2, progress: 2, result: 'contents of a.txt: grüße 🚀' }] },
  { name: 'deploy', description: 'Deploys', calls: [{ is_error: true, result: 'deploy failed: quota exceeded' }] },
  { name: 'lookup', calls: [{ jsonrpc_error: { code: -32603, message: 'backend down' } }] },
  { name: 'write_file', calls: [{ duration_s: 1, reply_lost: true }, { result: 'written' }] },
  { name: 'wait', calls: [{ hang: true }] },
];
const scn = {
  schema: 1, name: 'mcp-sdk', prompt: 'hello', tools,
  turns: [{ attempts: [{ events: [{ text: 'hi' }, { finish: 'stop' }] }] }],
};

async function connect(endpoint) {
  const client = new Client({ name: 'hiccup-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint)));
  return client;
}

async function toolCalls(url, session = 'default') {
  const r = await fetch(`${url}/_hiccup/sessions/${session}/tool_calls`);
  assert.equal(r.status, 200);
  return r.json();
}

test('the SDK lists the scenario tools and calls one that succeeds, with progress', T, async () => {
  const server = await serve(scn);
  try {
    const client = await connect(`${server.url}/mcp`);
    assert.equal(client.getServerVersion().name, 'hiccup');
    assert.ok(client.getServerCapabilities().tools, 'the server announces tools');
    const { tools: listed } = await client.listTools();
    assert.deepEqual(listed.map((t) => t.name), ['read_file', 'deploy', 'lookup', 'write_file', 'wait']);
    assert.deepEqual(listed[0].inputSchema.required, ['path']);
    assert.deepEqual(listed[0].annotations, { readOnlyHint: true, idempotentHint: true });

    const progress = [];
    const result = await client.callTool({ name: 'read_file', arguments: { path: 'a.txt' } }, undefined,
                                         { onprogress: (p) => progress.push(p.progress) });
    assert.equal(result.isError, false);
    assert.deepEqual(result.content, [{ type: 'text', text: 'contents of a.txt: grüße 🚀' }]);
    assert.deepEqual(progress, [1, 2]);
    await client.close();

    const j = await toolCalls(server.url);
    assert.deepEqual(j.executions, { read_file: 1 });
    const [call] = j.tool_calls;
    assert.equal(call.tool, 'read_file');
    assert.deepEqual(call.arguments, { path: 'a.txt' });
    assert.equal(call.behaviour, 'result');
    assert.equal(call.framing, 'sse');
    assert.equal(call.reply_sent, true);
    assert.equal(call.progress_sent, 2);
    // Two virtual seconds at 20 ms each, at least.
    assert.ok(call.ended_ms - call.arrived_ms >= 35, `the call took ${call.ended_ms - call.arrived_ms} ms`);
  } finally {
    await server.stop();
  }
});

test('an error result arrives as isError and a JSON-RPC error as an McpError', T, async () => {
  const server = await serve(scn);
  try {
    const client = await connect(`${server.url}/mcp`);
    const failed = await client.callTool({ name: 'deploy', arguments: { env: 'staging' } });
    assert.equal(failed.isError, true);
    assert.deepEqual(failed.content, [{ type: 'text', text: 'deploy failed: quota exceeded' }]);

    let error;
    try {
      await client.callTool({ name: 'lookup', arguments: {} });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof McpError, `expected an McpError, got ${describeError(error)}`);
    assert.equal(error.code, -32603);
    assert.match(error.message, /backend down/);
    await client.close();

    const j = await toolCalls(server.url);
    assert.deepEqual(j.executions, { deploy: 1, lookup: 1 });
    assert.deepEqual(j.tool_calls.map((c) => [c.behaviour, c.reply_sent]), [['is_error', true], ['jsonrpc_error', true]]);
  } finally {
    await server.stop();
  }
});

test('a lost reply fails the call in the SDK while the journal counts its execution', T, async () => {
  const server = await serve(scn);
  try {
    // A named session: its own endpoint, its own counts.
    const created = await fetch(`${server.url}/_hiccup/sessions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'lost', scenario: scn }),
    });
    assert.equal(created.status, 201);
    const client = await connect(`${server.url}/s/lost/mcp`);
    let error;
    try {
      await client.callTool({ name: 'write_file', arguments: { path: 'out.txt' } }, undefined, { timeout: 3000 });
    } catch (e) {
      error = e;
    }
    assert.ok(error, 'the call whose reply was lost must not succeed');
    // The retry (call 1) gets its result: the tool ran twice, which the journal says exactly.
    const again = await client.callTool({ name: 'write_file', arguments: { path: 'out.txt' } });
    assert.deepEqual(again.content, [{ type: 'text', text: 'written' }]);
    await client.close();

    const j = await toolCalls(server.url, 'lost');
    assert.deepEqual(j.executions, { write_file: 2 });
    assert.deepEqual(j.tool_calls.map((c) => [c.call_index, c.behaviour, c.executed, c.reply_sent]),
                     [[0, 'reply_lost', true, false], [1, 'result', true, true]]);
    const def = await toolCalls(server.url);
    assert.deepEqual(def.executions, {}, 'the default session saw none of it');
  } finally {
    await server.stop();
  }
});

test('a hung call times out in the SDK, which cancels it', T, async () => {
  const server = await serve(scn);
  try {
    const client = await connect(`${server.url}/mcp`);
    let error;
    try {
      await client.callTool({ name: 'wait', arguments: {} }, undefined, { timeout: 1000 });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof McpError, `expected the SDK's timeout, got ${describeError(error)}`);
    assert.match(error.message, /timed out/i);
    // The next request on the same session still works.
    assert.deepEqual(await client.ping(), {});
    await client.close();

    const deadline = Date.now() + 5000;
    let call;
    while (Date.now() < deadline) {
      [call] = (await toolCalls(server.url)).tool_calls;
      if (call?.cancelled && call?.settled) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(call.behaviour, 'hang');
    assert.equal(call.executed, true);
    assert.equal(call.reply_sent, false);
    assert.equal(call.cancelled, true, 'the SDK sent notifications/cancelled for the timed-out request');
  } finally {
    await server.stop();
  }
});

test('the endpoint answers 404 for an unknown MCP session and 405 for GET', T, async () => {
  const server = await serve(scn);
  try {
    const r = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'nope' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.code, -32001);
    const g = await fetch(`${server.url}/mcp`, { headers: { accept: 'text/event-stream' } });
    assert.equal(g.status, 405);
    const bad = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { accept: 'application/json' }, body: '{"jsonrpc":' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, -32700);
  } finally {
    await server.stop();
  }
});

test('over stdio through hiccup mcp: the same tools, results, errors and counts', T, async () => {
  const server = await serve(scn);
  try {
    const transport = new StdioClientTransport({ command: hiccupBin, args: ['mcp', `${server.url}/mcp`], stderr: 'pipe' });
    let bridgeLog = '';
    transport.stderr?.on('data', (d) => { bridgeLog += d; });
    const client = new Client({ name: 'hiccup-mcp-stdio-test', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(client.getServerVersion().name, 'hiccup');
    const { tools: listed } = await client.listTools();
    assert.equal(listed.length, 5);
    const progress = [];
    const ok = await client.callTool({ name: 'read_file', arguments: { path: 'a.txt' } }, undefined,
                                     { onprogress: (p) => progress.push(p.progress) });
    assert.deepEqual(ok.content, [{ type: 'text', text: 'contents of a.txt: grüße 🚀' }]);
    assert.deepEqual(progress, [1, 2]);
    assert.equal((await client.callTool({ name: 'deploy', arguments: {} })).isError, true);
    await assert.rejects(client.callTool({ name: 'lookup', arguments: {} }), (e) => e instanceof McpError && e.code === -32603);
    let error;
    try {
      await client.callTool({ name: 'write_file', arguments: { path: 'out.txt' } }, undefined, { timeout: 3000 });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof McpError, `expected the SDK's timeout, got ${describeError(error)}`);
    await client.close();
    assert.match(bridgeLog, /the connection ended before the reply/);

    const j = await toolCalls(server.url);
    assert.deepEqual(j.executions, { read_file: 1, deploy: 1, lookup: 1, write_file: 1 });
    assert.deepEqual(j.tool_calls.map((c) => [c.tool, c.behaviour, c.reply_sent]),
                     [['read_file', 'result', true], ['deploy', 'is_error', true], ['lookup', 'jsonrpc_error', true],
                      ['write_file', 'reply_lost', false]]);
  } finally {
    await server.stop();
  }
});

test('hiccup mcp with stdin closed right after a call still writes its answer, then exits 0', T, async () => {
  // A script that pipes its messages in closes stdin at once; the call takes 2 s (duration_s).
  const server = await serve(scn);
  try {
    const { spawn } = await import('node:child_process');
    const child = spawn(hiccupBin, ['mcp', `${server.url}/mcp`], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    child.stdin.end([
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'a.txt' } } },
    ].map((m) => JSON.stringify(m)).join('\n') + '\n');
    assert.equal(await exited, 0, err);
    const answers = out.trim().split('\n').map((l) => JSON.parse(l));
    const call = answers.find((m) => m.id === 1);
    assert.ok(call, `no answer to the call in ${out} (stderr: ${err})`);
    assert.deepEqual(call.result.content, [{ type: 'text', text: 'contents of a.txt: grüße 🚀' }]);
  } finally {
    await server.stop();
  }
});

test('an expired session fails the call with 404, a new session gets the next scripted call', T, async () => {
  const expiring = { ...scn, name: 'mcp-sdk-expiry',
                     tools: [{ name: 'flaky', calls: [{ session_expired: true }, { result: 'ok after initialize' }] }] };
  const server = await serve(expiring);
  try {
    const first = await connect(`${server.url}/mcp`);
    let error;
    try {
      await first.callTool({ name: 'flaky', arguments: {} });
    } catch (e) {
      error = e;
    }
    assert.ok(error, 'the call on an expired session must fail');
    assert.match(String(error.message), /404|Session not found/, describeError(error));
    await first.close();
    // The client that initializes again (as the spec says it must) gets the next call's result.
    const second = await connect(`${server.url}/mcp`);
    const r = await second.callTool({ name: 'flaky', arguments: {} });
    assert.deepEqual(r.content, [{ type: 'text', text: 'ok after initialize' }]);
    await second.close();

    const j = await toolCalls(server.url);
    assert.deepEqual(j.executions, { flaky: 1 }, 'the refused call did not run');
    assert.deepEqual(j.tool_calls.map((c) => [c.session, c.behaviour, c.executed]),
                     [['hiccup-mcp-1', 'session_expired', false], ['hiccup-mcp-2', 'result', true]]);
  } finally {
    await server.stop();
  }
});
