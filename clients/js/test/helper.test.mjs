// @hiccup/test-helper against a real `hiccup serve` (ctest clients.vitest-helper): the agent loop of
// examples/vitest/agent.mjs on the official openai SDK passes; its retry bug fails with
// at-most-once, and the message and diff a vitest user sees are asserted on an inner vitest run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { HiccupError, VerdictError, formatVerdict, useHiccup } from '../index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const modules = process.env.HICCUP_EXAMPLE_MODULES || join(root, '.cache', 'examples-vitest', 'node_modules');
const agentPath = join(root, 'examples', 'vitest', 'agent.mjs');
const scenario = join(root, 'examples', 'scenarios', 'deploy-disconnect-after-call.json');
const { OpenAI } = createRequire(join(modules, 'noop.js'))('openai');
const { AgentFailed, runAgent } = await import(pathToFileURL(agentPath).href);

const hiccup = useHiccup();

async function play(session, retryBug) {
  const tools = { deploy: async (callId, args) => { await session.recordExecution('deploy', args, callId); return `deployed ${args.env}`; } };
  try {
    await session.completed(await runAgent(OpenAI, { baseURL: session.baseURL, prompt: 'Deploy the staging build.', tools, retryBug }));
  } catch (e) {
    if (!(e instanceof AgentFailed)) throw e;
    await session.failed();
  }
}

test('a correct loop passes (judged in afterEach)', async () => {
  const session = await hiccup.session(scenario);
  expect(session.openaiBaseURL).toBe(`${session.baseURL}/v1`);
  expect(session.baseURLs.anthropic).toBe(session.baseURL);
  await play(session, false);
});

test('the retry bug fails with at-most-once, the harm first', async () => {
  const session = await hiccup.session(JSON.parse(readFileSync(scenario, 'utf8')));
  session.checkVerdict = false;
  await play(session, true);
  const error = await session.check().then(() => null, (e) => e);
  expect(error).toBeInstanceOf(VerdictError);
  const lines = error.message.split('\n');
  expect(lines[0]).toBe(`hiccup verdict: fail: at-most-once (+4 more) (session ${session.id}, scenario deploy-disconnect-after-call)`);
  expect(lines[1]).toMatch(/^ {2}at-most-once: tool "deploy" \{"env":"staging"\} ran 2 times for one intended call: .* \[request 1, turn 0, attempt 1\]$/);
  expect(error.expected).toEqual([]);
  expect(error.actual).toEqual(['at-most-once', 'pairing', 'no-rejected-request', 'outcome-agreement', 'expect.executions']);
  expect(formatVerdict(error.verdict)).toBe(error.message);
});

test('expectViolations pins the bug (afterEach fails if hiccup stops catching it)', async () => {
  const session = await hiccup.session(scenario);
  session.expectViolations('at-most-once', 'pairing');
  await play(session, true);
});

test('an invalid scenario is an error with the lint problems', async () => {
  const error = await hiccup.session({ provider: 'openai-chatt', turns: [] }).then(() => null, (e) => e);
  expect(error).toBeInstanceOf(HiccupError);
  expect(error.code).toBe('invalid_scenario');
  expect(error.message).toMatch(/\n {2}\/provider: unknown provider "openai-chatt"/);
});

test('what a vitest user sees when the verdict fails', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hiccup-vitest-'));
  try {
    writeFileSync(join(dir, 'vitest.config.mjs'), `export default { cacheDir: ${JSON.stringify(join(dir, 'vite'))}, test: { globals: true } };\n`);
    writeFileSync(join(dir, 'buggy.test.mjs'), `
import { createRequire } from 'node:module';
import { useHiccup } from ${JSON.stringify(pathToFileURL(join(root, 'clients', 'js', 'index.js')).href)};
import { AgentFailed, runAgent } from ${JSON.stringify(pathToFileURL(agentPath).href)};
const { OpenAI } = createRequire(${JSON.stringify(join(modules, 'noop.js'))})('openai');
const hiccup = useHiccup();
test('the buggy loop', async () => {
  const session = await hiccup.session(${JSON.stringify(scenario)});
  const tools = { deploy: async (id, args) => { await session.recordExecution('deploy', args, id); return 'deployed'; } };
  try { await session.completed(await runAgent(OpenAI, { baseURL: session.baseURL, prompt: 'Deploy the staging build.', tools, retryBug: true })); }
  catch (e) { if (!(e instanceof AgentFailed)) throw e; await session.failed(); }
});
`);
    const r = spawnSync(process.execPath, [join(modules, 'vitest', 'vitest.mjs'), 'run', '--root', dir],
      { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', CI: '1' } });
    const out = r.stdout + r.stderr;
    expect(r.status, out).toBe(1);
    expect(out).toContain('AssertionError: hiccup verdict: fail: at-most-once (+4 more) (session s1, scenario deploy-disconnect-after-call)');
    expect(out).toMatch(/\n {2}at-most-once: tool "deploy" \{"env":"staging"\} ran 2 times for one intended call/);
    expect(out).toMatch(/- Expected\n\+ Received\n\n- \[\]\n\+ \[\n\+ {3}"at-most-once",\n\+ {3}"pairing",/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
