// The agent loop of agent.mjs against hiccup sessions: a clean run passes; the retry bug is caught.
// Run by ctest (label examples, examples/CMakeLists.txt); `test` and `expect` are vitest globals
// (vitest.config.mjs).
import { join } from 'node:path';

import { AgentFailed, runAgent } from './agent.mjs';
import { createSession, load, repoRoot, startHiccup } from './hiccup.mjs';

const { OpenAI } = load('openai');
const scenario = join(repoRoot, 'examples', 'scenarios', 'deploy-disconnect-after-call.json');
let server;
beforeAll(async () => { server = await startHiccup(); });
afterAll(async () => { await server?.stop(); });

async function play(retryBug) {
  const session = await createSession(server, scenario);
  const tools = {
    deploy: async (callId, args) => {
      await session.recordExecution('deploy', args, callId); // the side effect, in hiccup's ledger
      return `deployed ${args.env}`;
    },
  };
  try {
    const text = await runAgent(OpenAI, { baseURL: session.baseURL, prompt: 'Deploy the staging build.', tools, retryBug });
    await session.recordOutcome('completed', text);
  } catch (e) {
    if (!(e instanceof AgentFailed)) throw e;
    await session.recordOutcome('failed');
  }
  const verdict = await session.verdict();
  await session.delete();
  return verdict;
}

test('the agent survives a disconnect after a call', async () => {
  const verdict = await play(false);
  expect(verdict.violations).toEqual([]);
  expect(verdict.verdict).toBe('pass');
  expect(verdict.executions).toBe(1);
});

test('hiccup catches the retry bug', async () => {
  const verdict = await play(true);
  const caught = verdict.violations.map((v) => v.invariant);
  expect(verdict.verdict).toBe('fail');
  expect(caught).toContain('at-most-once');
  expect(caught).toContain('pairing');
});
